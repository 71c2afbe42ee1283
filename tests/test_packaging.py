"""The package list in pyproject.toml is explicit (cli/ and churn_traces/
are mapped into the vinifera namespace): every package folder must be in it,
or a regular install (the Docker image) silently lacks it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(tool["packages"])
    for name, folder in tool["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            package = ".".join([name, *rel.parts])
            assert package in listed, f"{package} ({init.parent}) is not in pyproject's packages"
