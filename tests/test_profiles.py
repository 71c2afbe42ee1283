"""Configuration profiles (protocol/config.py PROFILES): every entry point
starts from a system's profile and changes only what it says it changes."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from vinifera.daemon.settings import DAEMON_OVERLAY, NodeSettings
from vinifera.experiment import build
from vinifera.protocol.config import PROFILES, SYSTEMS, profile
from vinifera.schema import Schema
from vinifera.sim.config import SimConfig


def differences(a, b) -> dict:
    da, db = asdict(a), asdict(b)
    return {k: (da[k], db[k]) for k in da if da[k] != db[k]}


def test_the_profiles_are_the_systems_the_paper_compares():
    assert SYSTEMS == ("vinifera", "baseline")
    base, ours = profile("baseline"), profile("vinifera")
    assert (base.friends, base.small_world) == (0, 8) and (ours.friends, ours.small_world) == (4, 4)
    assert not base.overlay.small_world_below_sample and ours.overlay.small_world_below_sample
    assert not base.content.push and base.content.identifier == "random"
    paper = profile("paper").for_size(1000)  # K_f = ceil(log2 1000) - 2
    assert (paper.friends, paper.small_world, paper.content.identifier) == (8, 0, "random")
    assert paper.system == "vinifera"
    with pytest.raises(ValueError, match="unknown profile 'ours'.*vinifera, baseline, paper"):
        profile("ours")


@pytest.mark.parametrize("system", SYSTEMS)
def test_the_simulator_and_the_command_line_run_the_profile(system):
    from vinifera.cli.main import _sim_config, sim_run

    p = profile(system)
    cfg = SimConfig.for_system(system, nodes=10, rounds=2)
    assert (cfg.overlay, cfg.content) == (p.overlay, p.content)
    ctx = sim_run.make_context("run", ["--system", system])
    cli = _sim_config(**ctx.params)
    assert differences(cli.overlay, p.overlay) == {} and differences(cli.content, p.content) == {}


@pytest.mark.parametrize("system", SYSTEMS)
def test_the_daemon_differs_from_its_profile_only_where_it_says(system):
    p = profile(system)
    overlay = NodeSettings(schema=Schema.numeric(1), system=system, period=2.0).overlay_config()
    said = {"period", "transit_allowance", *DAEMON_OVERLAY}
    assert set(differences(overlay, p.overlay)) == said
    assert overlay.probe_after == DAEMON_OVERLAY["probe_after"]
    # the duplicate memory outlives a captured datagram's admission (settings.py)
    content = NodeSettings(schema=Schema.numeric(1), system=system).content_config()
    assert set(differences(content, p.content)) == {"dedupe_memory"}
    # links asked for are kept, for the baseline too (it once ignored them)
    asked = NodeSettings(schema=Schema.numeric(1), system=system, friends=1, small_world=2)
    assert (asked.overlay_config().friends, asked.overlay_config().small_world) == (1, 2)


def test_an_experiment_point_runs_its_profile():
    point = {"seed": 1, "subscriptions": "skewed", "nodes": 1000, "rounds": 10}
    for system, prof, name in (("vinifera", "ours", "vinifera"), ("vinifera", "paper", "paper"),
                               ("baseline", None, "baseline")):  # fmt: skip
        cfg = build.sim_config({**point, "system": system, "profile": prof})
        p = PROFILES[name].for_size(1000)
        assert (cfg.overlay, cfg.content, cfg.system) == (p.overlay, p.content, p.system)


def test_the_papers_profile_runs_from_the_command_line_sized_by_n():
    from vinifera.cli.main import _sim_config, sim_run

    ctx = sim_run.make_context("run", ["--system", "paper", "--nodes", "100"])
    cfg = _sim_config(**ctx.params)  # K_f = ceil(log2 100) - 2 = 5
    assert (cfg.system, cfg.overlay.friends, cfg.overlay.small_world) == ("vinifera", 5, 0)
    assert cfg.content.identifier == "random"
    assert SimConfig.for_system("paper", nodes=100, rounds=1) == cfg.__class__(
        nodes=100, rounds=1, overlay=cfg.overlay, content=cfg.content
    )
