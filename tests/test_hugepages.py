"""A simulation restarts itself once with huge pages for its heap
(vinifera/hugepages.py), and nothing it computes changes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vinifera import hugepages
from vinifera.hugepages import (
    MIMALLOC_OPT_OUT,
    OPT_OUT,
    TUNABLE,
    environment,
    in_effect,
    mimalloc_library,
    thp_mode,
)

BIN = Path(sys.executable).parent
HAS_THEM = environment({}, thp_mode(), hugepages.glibc_has_tunable()) is not None
needs_huge_pages = pytest.mark.skipif(
    not HAS_THEM, reason="no transparent huge pages or no glibc malloc tunable here"
)


@pytest.mark.parametrize(
    ("base", "mode", "glibc", "expected"),
    [
        ({}, "madvise", True, {"PYTHONMALLOC": "malloc", "GLIBC_TUNABLES": TUNABLE}),
        ({}, "always", True, {"PYTHONMALLOC": "malloc", "GLIBC_TUNABLES": TUNABLE}),
        (
            {"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=4096", "HOME": "/h"},
            "madvise",
            True,
            {
                "GLIBC_TUNABLES": f"glibc.rtld.optional_static_tls=4096:{TUNABLE}",
                "PYTHONMALLOC": "malloc",
                "HOME": "/h",
            },
        ),
        ({OPT_OUT: "0"}, "madvise", True, None),  # the user said no
        ({"PYTHONMALLOC": "pymalloc_debug"}, "madvise", True, None),  # the user chose
        ({"GLIBC_TUNABLES": TUNABLE, "PYTHONMALLOC": "malloc"}, "madvise", True, None),  # done
        ({"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}, "madvise", True, None),
        ({}, "never", True, None),
        ({}, None, True, None),  # no such kernel knob (not Linux)
        ({}, "madvise", False, None),  # musl, or glibc before 2.35
    ],
)
def test_the_environment_asks_for_huge_pages_only_where_it_should(base, mode, glibc, expected):
    assert environment(base, mode, glibc) == expected


def test_mimalloc_is_preloaded_beside_the_huge_pages_unless_declined():
    lib = "libmimalloc.so.2"
    env = environment({"HOME": "/h"}, "madvise", True, lib)
    assert env == {"HOME": "/h", "PYTHONMALLOC": "malloc", "GLIBC_TUNABLES": TUNABLE,
                   "LD_PRELOAD": lib, "MIMALLOC_LARGE_OS_PAGES": "1"}  # fmt: skip
    # a preload the user set stays, after ours
    assert environment({"LD_PRELOAD": "libx.so"}, "madvise", True, lib)["LD_PRELOAD"] == (
        f"{lib}:libx.so"
    )
    assert hugepages.preloads_mimalloc(env)
    # the user's own mimalloc options stay theirs
    mine = environment({"MIMALLOC_LARGE_OS_PAGES": "0"}, "madvise", True, lib)
    assert mine["MIMALLOC_LARGE_OS_PAGES"] == "0"
    declined = environment({MIMALLOC_OPT_OUT: "0"}, "madvise", True, lib)
    assert "LD_PRELOAD" not in declined and declined["PYTHONMALLOC"] == "malloc"
    assert not hugepages.preloads_mimalloc(declined)
    # no huge pages to be had, or none wanted: no allocator swap either
    assert environment({}, "never", True, lib) is None
    assert environment({OPT_OUT: "0"}, "madvise", True, lib) is None


def test_in_effect_needs_both_malloc_and_the_tunable():
    assert in_effect({"PYTHONMALLOC": "malloc", "GLIBC_TUNABLES": TUNABLE})
    assert in_effect({"PYTHONMALLOC": "malloc", "GLIBC_TUNABLES": "a=1:glibc.malloc.hugetlb=1"})
    assert not in_effect({"GLIBC_TUNABLES": TUNABLE})  # pymalloc never asks
    assert not in_effect({"PYTHONMALLOC": "malloc", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"})
    assert not in_effect({})


def test_the_kernel_mode_is_the_bracketed_word(tmp_path):
    knob = tmp_path / "enabled"
    knob.write_text("always [madvise] never\n")
    assert thp_mode(knob) == "madvise"
    knob.write_text("[always] madvise never\n")
    assert thp_mode(knob) == "always"
    assert thp_mode(tmp_path / "missing") is None


def _clean_env() -> dict:
    """This environment without the user's allocator choices."""
    drop = ("PYTHONMALLOC", "GLIBC_TUNABLES", OPT_OUT, "LD_PRELOAD", MIMALLOC_OPT_OUT)
    return {k: v for k, v in os.environ.items() if k not in drop}


@needs_huge_pages
def test_the_process_restarts_once_from_the_top_with_huge_pages():
    code = (
        "import os\n"
        "from vinifera.hugepages import restart_with_huge_pages\n"
        "print('start', flush=True)\n"
        "restart_with_huge_pages()\n"
        "print(os.environ['PYTHONMALLOC'], os.environ['GLIBC_TUNABLES'])\n"
        "print('mimalloc mapped:', 'libmimalloc' in open('/proc/self/maps').read())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=_clean_env(), capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[:2] == ["start", "start"]  # restarted, and only once
    assert out[2].split() == ["malloc", TUNABLE]
    # the allocator is mimalloc exactly where the machine has it
    assert out[3] == f"mimalloc mapped: {mimalloc_library() is not None}"


def test_a_simulation_writes_the_same_bytes_with_and_without_huge_pages(tmp_path):
    logs = {}
    variants = (("with", {}), ("glibc", {MIMALLOC_OPT_OUT: "0"}), ("without", {OPT_OUT: "0"}))
    for name, extra in variants:
        log_dir = tmp_path / name
        args = [str(BIN / "vinifera"), "sim", "run", "--nodes", "60", "--rounds", "12",
                "--events-per-round", "5", "--kill-fraction", "0.1", "--kill-at", "8",
                "--log-dir", str(log_dir), "--json"]  # fmt: skip
        subprocess.run(args, env={**_clean_env(), **extra}, capture_output=True, check=True)
        logs[name] = ((log_dir / "sim.jsonl").read_bytes(), (log_dir / "summary.json").read_bytes())
    assert logs["with"] == logs["glibc"] == logs["without"]
    assert b'"ev":"deliver"' in logs["with"][0]
