"""The optional compiled build (scripts/build_compiled.sh): mypyc compiles
the simulator's hot modules from their own source, and Python imports the
compiled module instead of the .py file beside it. Here: whether the build
is in use, a refusal of a stale one, and VINIFERA_PURE=1, which runs the
.py files despite it (to compare the two)."""

from __future__ import annotations

import glob
import hashlib
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec, PathFinder
from importlib.util import spec_from_file_location

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = os.path.join(HERE, "_native_sources.txt")  # written by setup.py


def built() -> bool:
    """Whether compiled modules sit beside the sources."""
    return bool(glob.glob(os.path.join(HERE, "_native__mypyc*")))


def in_use() -> bool:
    """Whether this process runs the compiled modules."""
    from vinifera.protocol import node

    return node.__file__ is not None and node.__file__.endswith(tuple(EXTENSION_SUFFIXES))


class PreferSource:
    """A meta path finder that imports a vinifera module's .py file where a
    compiled module stands beside it."""

    @staticmethod
    def find_spec(name: str, path=None, target=None) -> ModuleSpec | None:
        if not name.startswith("vinifera."):
            return None
        spec = PathFinder.find_spec(name, path)
        origin = spec.origin if spec is not None else None
        if origin is None or not origin.endswith(tuple(EXTENSION_SUFFIXES)):
            return None  # the usual finders take it
        source = os.path.join(os.path.dirname(origin), name.rpartition(".")[2] + ".py")
        return spec_from_file_location(name, source)


def stale_sources() -> list[str]:
    """The compiled modules' sources that changed since the build."""
    root = os.path.dirname(HERE)
    try:
        with open(RECORD) as f:
            record = [line.split(" ", 1) for line in f.read().splitlines()]
        stale = []
        for digest, path in record:
            with open(os.path.join(root, path), "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() != digest:
                    stale.append(path)
        return stale
    except (OSError, ValueError) as e:
        return [f"({e})"]


def setup() -> None:
    """At import of vinifera: nothing without a build; with one, the .py
    files under VINIFERA_PURE=1, else refuse a stale build (it would run
    other code than the source says, silently)."""
    if not built():
        return
    if os.environ.get("VINIFERA_PURE", "") not in ("", "0"):
        sys.meta_path.insert(0, PreferSource)
        return
    stale = stale_sources()
    if stale:
        sys.excepthook = _one_line(sys.excepthook)
        raise StaleBuildError(
            f"the compiled build of vinifera is stale ({', '.join(stale)} changed since): "
            "rebuild it with scripts/build_compiled.sh, or remove it with "
            "scripts/build_compiled.sh --clean (VINIFERA_PURE=1 runs the source meanwhile)"
        )


class StaleBuildError(ImportError):
    """The compiled modules were built from other sources than these."""


def _one_line(previous):
    """An excepthook that says a stale build in one line and exits 2 (the
    `vinifera` commands import the package before any handler of theirs);
    everything else goes to the previous hook. Importers that catch the
    error never reach it."""

    def hook(kind, value, tb) -> None:
        if not issubclass(kind, StaleBuildError):
            return previous(kind, value, tb)
        sys.stderr.write(f"Error: {value}\n")
        sys.stderr.flush()
        os._exit(2)

    return hook
