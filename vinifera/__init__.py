"""Vinifera: content-based publish/subscribe over a subscription-aware overlay."""

import os as _os

__version__ = "0.1.0"


def _refuse_a_stale_build() -> None:
    """The optional compiled build (scripts/build_compiled.sh) is imported
    instead of the .py files beside it: one made from other sources would
    run other code, silently. Costs nothing without a build."""
    import glob
    import hashlib

    here = _os.path.dirname(__file__)
    if not glob.glob(_os.path.join(here, "_native__mypyc*")):
        return
    root = _os.path.dirname(here)
    try:
        with open(_os.path.join(here, "_native_sources.txt")) as f:
            record = [line.split(" ", 1) for line in f.read().splitlines()]
        stale = []
        for digest, path in record:
            with open(_os.path.join(root, path), "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() != digest:
                    stale.append(path)
    except (OSError, ValueError) as e:
        stale = [f"({e})"]
    if stale:
        raise ImportError(
            f"the compiled build of vinifera is stale ({', '.join(stale)} changed since): "
            "rebuild it with scripts/build_compiled.sh, or remove it with "
            "scripts/build_compiled.sh --clean"
        )


_refuse_a_stale_build()


def __getattr__(name: str):
    # The daemon API pulls in trio; load it only when asked for.
    if name == "Node":
        from vinifera.daemon.api import Node

        return Node
    raise AttributeError(f"module 'vinifera' has no attribute {name!r}")
