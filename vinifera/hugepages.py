"""Huge pages for a simulation's heap.

A simulation of thousands of nodes keeps hundreds of megabytes of small
objects that the event loop touches in no local order (each message wakes a
random node), so on 4 KiB pages much of its time goes to address
translation. Linux backs memory with 2 MiB pages only where asked
(transparent_hugepage `madvise`, the usual default); CPython's own small-
object allocator never asks, glibc's malloc does when told to by the
`glibc.malloc.hugetlb=1` tunable (glibc >= 2.35). So a process that runs a
simulation restarts itself once, at its very start, with PYTHONMALLOC=malloc
and that tunable: the same interpreter, the same arguments, the same
results byte for byte (nothing depends on addresses), x1.24-1.27
node-rounds per CPU-second at N = 1,000-10,000
(docs/decisions/simulator-speed.md, "Huge pages for a simulation's heap").

Where Debian's libmimalloc2.0 (Microsoft's mimalloc) is installed, the
restart also preloads it, with its large-page option: a faster malloc
for the same huge pages, x1.06 node-rounds per CPU-second at N = 1,000
and x1.08-1.20 on the Skype trace, side by side with glibc's
(docs/decisions/simulator-speed.md, "mimalloc under the simulator's heap").
VINIFERA_MIMALLOC=0 keeps glibc's.

Only `vinifera sim` and `vinifera experiment` do it (cli/main.py's entry);
set VINIFERA_HUGE_PAGES=0 to run without, and a PYTHONMALLOC or
glibc.malloc.hugetlb the user set is left as it is.
"""

from __future__ import annotations

import ctypes.util
import os
import platform
import sys
from collections.abc import Mapping
from pathlib import Path

# Huge pages; and a per-size cache of 256 freed blocks instead of 7, since
# every Python object now comes from malloc (x1.04 at N = 1,000, five of
# five paired runs faster: docs/decisions/simulator-speed.md, "Huge pages
# for a simulation's heap").
TUNABLE = "glibc.malloc.hugetlb=1:glibc.malloc.tcache_count=256"
OPT_OUT = "VINIFERA_HUGE_PAGES"
MIMALLOC_OPT_OUT = "VINIFERA_MIMALLOC"
THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def thp_mode(path: Path = THP_ENABLED) -> str | None:
    """The kernel's transparent huge page mode (`always`, `madvise` or
    `never`), or None where there is none."""
    try:
        text = path.read_text()
    except OSError:
        return None
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if 0 <= start < end else None


def glibc_has_tunable() -> bool:
    lib, version = platform.libc_ver()
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return False
    return lib == "glibc" and (major, minor) >= (2, 35)


def mimalloc_library() -> str | None:
    """The name the dynamic loader knows mimalloc by (libmimalloc.so.2),
    or None where it is not installed."""
    return ctypes.util.find_library("mimalloc")


def environment(
    base: Mapping[str, str], mode: str | None, glibc: bool, mimalloc: str | None = None
) -> dict[str, str] | None:
    """`base` with what gives the heap huge pages, or None when there is
    nothing to do: opted out, already set by the user (or by an earlier
    restart), no glibc tunable, or a kernel without huge pages for us.
    `mimalloc`: the library to preload as the allocator, if any."""
    if base.get(OPT_OUT) == "0" or "PYTHONMALLOC" in base:
        return None
    tunables = base.get("GLIBC_TUNABLES", "")
    if "glibc.malloc.hugetlb" in tunables or not glibc or mode not in ("madvise", "always"):
        return None
    env = dict(base)
    env["PYTHONMALLOC"] = "malloc"
    env["GLIBC_TUNABLES"] = f"{tunables}:{TUNABLE}" if tunables else TUNABLE
    if mimalloc and base.get(MIMALLOC_OPT_OUT) != "0":
        preload = base.get("LD_PRELOAD")
        env["LD_PRELOAD"] = f"{mimalloc}:{preload}" if preload else mimalloc
        env.setdefault("MIMALLOC_LARGE_OS_PAGES", "1")  # its segments on 2 MiB pages (madvise)
    return env


def environment_here() -> dict[str, str] | None:
    """`environment` for this process on this machine."""
    if "PYTHONMALLOC" in os.environ:
        return None  # restarted already, or the user chose: no library lookup
    return environment(os.environ, thp_mode(), glibc_has_tunable(), mimalloc_library())


def in_effect(env: Mapping[str, str]) -> bool:
    """Whether a process started with `env` has its heap on huge pages."""
    return env.get("PYTHONMALLOC") == "malloc" and "glibc.malloc.hugetlb=1" in env.get(
        "GLIBC_TUNABLES", ""
    )


def preloads_mimalloc(env: Mapping[str, str]) -> bool:
    """Whether a process started with `env` allocates with mimalloc."""
    return "libmimalloc" in env.get("LD_PRELOAD", "")


def restart_with_huge_pages() -> None:
    """Replace this process by itself with huge pages for its heap, if
    they are to be had and not had yet; otherwise return. Call it first
    thing, before any output or file is made: the restart runs from the top."""
    env = environment_here()
    if env is None or not sys.executable or not sys.orig_argv:
        return
    try:
        os.execve(sys.executable, sys.orig_argv, env)
    except OSError:
        return  # run on as we are
