"""The one rule: the protocol core does no I/O. Import it in a fresh
interpreter and check that nothing forbidden came in with it, and scan its
source for forbidden names."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import vinifera

ROOT = Path(vinifera.__file__).parent
# The pure part of the library: the protocol core and the data model it uses.
PURE_MODULES = sorted(
    ["vinifera.protocol." + p.stem for p in (ROOT / "protocol").glob("*.py")]
    + [
        "vinifera.ring",
        "vinifera.ranges",
        "vinifera.subscription",
        "vinifera.expr",
        "vinifera.errors",
    ]
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


def _source_files():
    files = list((ROOT / "protocol").glob("*.py"))
    files += [ROOT / f"{n}.py" for n in ("ring", "ranges", "subscription", "expr", "errors")]
    return files


def test_core_source_uses_no_clock_global_random_or_os_entropy():
    offences = []
    for path in _source_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names]
                mod = node.module if isinstance(node, ast.ImportFrom) else None
                roots = {(mod or n).split(".")[0] for n in names}
                if roots & (FORBIDDEN_MODULES | {"os"}):
                    offences.append(f"{path.name}:{node.lineno} imports {roots}")
                if mod == "random":
                    offences.append(f"{path.name}:{node.lineno} from random import ...")
            # random.random(), random.choice(...): the global generator.
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "random"
                and node.attr != "Random"
            ):
                offences.append(f"{path.name}:{node.lineno} uses random.{node.attr}")
    assert offences == []


def test_the_checker_catches_a_violation(tmp_path):
    # Guard against a checker that can never fail: a file that uses the
    # global generator must be reported by the same AST walk.
    bad = "import random\nx = random.random()\n"
    tree = ast.parse(bad)
    hits = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and isinstance(n.value, ast.Name)
        and n.value.id == "random"
        and n.attr != "Random"
    ]
    assert hits
