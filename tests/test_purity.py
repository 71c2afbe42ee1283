"""The one rule: the protocol core does no I/O. Import it in a fresh
interpreter and check that nothing forbidden came in with it, and scan its
source for forbidden names."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import vinifera

ROOT = Path(vinifera.__file__).parent
# The pure part of the library: the protocol core (with its subpackages) and
# the data model it imports.
CORE_FILES = sorted((ROOT / "protocol").rglob("*.py")) + [
    ROOT / f"{n}.py" for n in ("ring", "ranges", "subscription", "expr", "errors", "schema")
]
PURE_MODULES = sorted(
    ".".join(("vinifera",) + p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for p in CORE_FILES
)
FORBIDDEN_MODULES = {
    "trio",
    "socket",
    "time",
    "logging",
    "structlog",
    "asyncio",
    "selectors",
    "threading",
    "subprocess",
    "secrets",
    "ssl",
}
# Imported in a fresh interpreter they may be pulled in by the standard
# library; in the core's own source even `os` is out (os.urandom, os.environ).
FORBIDDEN_IN_SOURCE = FORBIDDEN_MODULES | {"os"}


def purity_violations(source: str, name: str = "<source>") -> list[str]:
    """What in `source` breaks the core's rule: an import of an I/O, clock or
    entropy module, or any use of the `random` module's global generator
    (`random.Random(seed)`, a generator the caller seeds, is allowed)."""
    offences = []
    tree = ast.parse(source, filename=name)
    # Names bound to the random module here (`import random as rnd` too).
    random_names = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name == "random"
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            mod = node.module if isinstance(node, ast.ImportFrom) else None
            roots = {(mod or a.name).split(".")[0] for a in node.names}
            if roots & FORBIDDEN_IN_SOURCE:
                offences.append(f"{name}:{node.lineno} imports {sorted(roots)}")
            if mod == "random" and any(a.name != "Random" for a in node.names):
                offences.append(f"{name}:{node.lineno} from random import ...")
        # random.random(), random.choice(...): the global generator.
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in random_names
            and node.attr != "Random"
        ):
            offences.append(f"{name}:{node.lineno} uses random.{node.attr}")
    return offences


def test_importing_the_core_pulls_in_no_io_modules():
    code = (
        "import sys, json\n"
        "before = set(sys.modules)\n"
        f"for name in {PURE_MODULES!r}:\n"
        "    __import__(name)\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {name.split(".")[0] for name in json.loads(out.stdout)}
    assert not loaded & FORBIDDEN_MODULES, loaded & FORBIDDEN_MODULES


def test_the_scan_covers_the_subpackages_and_the_schema():
    scanned = {p.relative_to(ROOT).as_posix() for p in CORE_FILES}
    assert {"protocol/node.py", "protocol/content/forest.py", "schema.py"} <= scanned
    assert "vinifera.protocol.content" in PURE_MODULES


def test_core_source_uses_no_clock_global_random_or_os_entropy():
    offences = []
    for path in CORE_FILES:
        offences += purity_violations(path.read_text(), path.relative_to(ROOT).as_posix())
    assert offences == []


@pytest.mark.parametrize(
    "bad",
    [
        "import random\nx = random.random()\n",
        "import random\nrandom.shuffle([1, 2])\n",
        "import random as rnd\nx = rnd.choice([1, 2])\n",
        "from random import choice\n",
        "import time\n",
        "from time import monotonic\n",
        "import socket\n",
        "import trio\n",
        "from trio import sleep\n",
        "import os\n",
        "import os.path\n",
        "from os import urandom\n",
        "import secrets\n",
        "def f():\n    import logging\n",
    ],
)
def test_the_checker_catches_a_violation(bad):
    # Guard against a checker that can never fail: the same function the
    # real scan uses must report each planted violation.
    assert purity_violations(bad), bad


def test_the_checker_allows_a_seeded_generator():
    # ...and against one that reports everything: what the core does is fine.
    ok = "import random\nfrom random import Random\nrng = random.Random(7)\nx = rng.random()\n"
    assert purity_violations(ok) == []
