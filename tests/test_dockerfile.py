"""The Dockerfile, .dockerignore and compose file: linted and checked for
structure on every run (no container engine needed)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from dockerfile_parse import DockerfileParser

ROOT = Path(__file__).resolve().parents[1]


def test_hadolint_passes():
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).with_name("hadolint"))
    out = subprocess.run([hadolint, str(ROOT / "Dockerfile")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.fixture(scope="module")
def dockerfile() -> DockerfileParser:
    parser = DockerfileParser(path=str(ROOT / "Dockerfile"))
    return parser


def test_base_image_is_a_build_argument_defaulting_to_python_slim(dockerfile):
    first = next(i for i in dockerfile.structure if i["instruction"] != "COMMENT")
    assert first["instruction"] == "ARG" and first["value"] == "BASE=python:3.11-slim"
    assert dockerfile.baseimage == "python:3.11-slim"  # ARG substituted


def test_image_installs_the_package_and_runs_unprivileged(dockerfile):
    instructions = [(i["instruction"], i["value"]) for i in dockerfile.structure]
    copied = {v.split()[0] for k, v in instructions if k == "COPY"}
    # every folder pyproject installs from must be in the image
    folders = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for source in ("pyproject.toml", *folders["package-dir"].values()):
        assert source in copied, source
    runs = " ".join(v for k, v in instructions if k == "RUN")
    assert "pip install --no-cache-dir ." in runs
    users = [v for k, v in instructions if k == "USER"]
    assert users and users[-1] not in ("0", "root")
    assert ("EXPOSE", "7000/udp") in instructions
    assert "vinifera-node" in dockerfile.cmd


def test_dockerignore_keeps_local_state_out():
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", "runs"} <= ignored


def test_compose_swarm_is_three_nodes_on_one_network():
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert len(services) == 3
    seeds = [s for s in services.values() if "--bootstrap" not in s["command"]]
    assert len(seeds) == 1, "exactly one node starts the overlay"
    for svc in services.values():
        cmd = svc["command"]
        assert cmd[:2] == ["vinifera-node", "run"]
        ip = next(iter(svc["networks"].values()))["ipv4_address"]
        assert cmd[cmd.index("--advertise") + 1] == f"{ip}:7000"
    assert (ROOT / "compose" / "schema.toml").exists()
