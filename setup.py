"""Optional compiled build. Everything else is configured in pyproject.toml;
this file only adds mypyc extension modules when VINIFERA_COMPILE=1 (run
scripts/build_compiled.sh). The default install is pure Python.

What the listed modules must keep for mypyc (the pure-Python code does not
care): they type-check with mypy (the build fails otherwise); a class has
no method aliases (`__or__ = union`) and is not built by object.__new__;
its instances take no attributes beyond those it sets, and its methods are
not patched (tests patch tables, not methods). A float-annotated value that
is an int becomes a float in compiled code: tests/test_compiled.py compares
the two builds' logs byte for byte."""

import hashlib
import os

from setuptools import setup

# The simulator's hot path, compiled from the same Python source. Left out:
# subscription.py (immutable by __setattr__ and object.__new__, which a
# compiled class refuses) and everything off the hot path.
COMPILED = [
    "vinifera/ring.py",
    "vinifera/ranges.py",
    "vinifera/ledger.py",
    "vinifera/matching.py",
    "vinifera/draws.py",
    "vinifera/protocol/actions.py",
    "vinifera/protocol/candidates.py",
    "vinifera/protocol/config.py",
    "vinifera/protocol/cyclon.py",
    "vinifera/protocol/joining.py",
    "vinifera/protocol/messages.py",
    "vinifera/protocol/node.py",
    "vinifera/protocol/overlay.py",
    "vinifera/protocol/profile.py",
    "vinifera/protocol/records.py",
    "vinifera/protocol/routing.py",
    "vinifera/protocol/selection.py",
    "vinifera/protocol/tman.py",
    "vinifera/protocol/vetting.py",
    "vinifera/protocol/content/balancing.py",
    "vinifera/protocol/content/cover.py",
    "vinifera/protocol/content/crt.py",
    "vinifera/protocol/content/filters.py",
    "vinifera/protocol/content/forest.py",
    "vinifera/protocol/content/installation.py",
    "vinifera/protocol/content/layer.py",
    "vinifera/protocol/content/memory.py",
    "vinifera/protocol/content/retry.py",
    "vinifera/sim/driver.py",
    "vinifera/sim/events.py",
    "vinifera/sim/network.py",
]
# What the build was made from: vinifera/native.py refuses a stale build.
SOURCES_RECORD = "vinifera/_native_sources.txt"


def ext_modules() -> list:
    if os.environ.get("VINIFERA_COMPILE", "0") in ("", "0"):
        return []
    from mypyc.build import mypycify

    with open(SOURCES_RECORD, "w") as out:
        for path in COMPILED:
            with open(path, "rb") as f:
                out.write(f"{hashlib.sha256(f.read()).hexdigest()} {path}\n")
    # Only the compiled modules must type-check; what they import is read
    # for its types, not judged.
    flags = ["--follow-imports=silent", "--ignore-missing-imports"]
    return mypycify([*flags, *COMPILED], opt_level="3", group_name="vinifera._native")


setup(ext_modules=ext_modules())
