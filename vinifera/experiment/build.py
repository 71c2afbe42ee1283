"""One point of a grid -> the SimConfig it runs: the system, the profile
(ours or the paper's) and the figure's parameters.

Profiles (protocol/config.py PROFILES; docs/experiments.md, "The paper's
configuration"): the paper draws identifiers uniformly at random and,
after Fig. 3, uses K_sw = 0 and K_f = ceil(log2 N) - 2 ("paper"); ours
places a node's identifier inside its own subscription and mixes K_f = 4
friends with K_sw = 4 small-world links ("vinifera").
Everything else (push, catch-up, balancing, ...) is the same in both, so the
difference between the two lines of a figure is exactly those choices. In
Fig. 3 the sweep fixes the links (K_f, K_sw = 8 - K_f) and the profile only
chooses the identifiers.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import replace
from pathlib import Path

from vinifera.protocol.config import SystemProfile, profile
from vinifera.sim.config import SimConfig

LINK_BUDGET = 8  # K_sw + K_f (docs/experiments.md: 10 links = 2 ring + 8)


def system_profile(point: dict) -> SystemProfile:
    """The profile a point runs: the baseline, or Vinifera's (ours or the paper's)."""
    if point["system"] == "baseline":
        return profile("baseline")
    return profile("paper" if point["profile"] == "paper" else "vinifera")


def links(point: dict, network_size: float) -> tuple[int, int]:
    """(K_f, K_sw) of a point."""
    if point["system"] != "baseline" and point.get("friends") is not None:  # Fig. 3's sweep
        return point["friends"], LINK_BUDGET - point["friends"]
    sized = system_profile(point).for_size(network_size)
    return sized.friends, sized.small_world


def sim_config(point: dict) -> SimConfig:
    """The simulation of one point (raises ValueError, or TraceInputError for fig5's trace)."""
    system = point["system"]
    base = system_profile(point)
    content = base.content
    events = point.get("events_per_round", 10.0)
    if point.get("capacity") is not None:  # Fig. 4f: rate in multiples of X
        content = replace(content, capacity=point["capacity"])
        events = point["rate"] * point["capacity"]
    common = dict(
        seed=point["seed"],
        system=system,
        subscriptions=point["subscriptions"],
        attributes=point.get("attributes", 1),
        content=content,
        events_per_round=events,
    )
    if "trace" in point:
        from vinifera.experiment.trace import replay, time_averaged_size

        rep = replay(point)
        friends, small_world = links(point, time_averaged_size(rep.trace))
        common.pop("system")
        overlay = base.overlay.with_(friends=friends, small_world=small_world)
        return SimConfig.for_trace(rep, system, overlay=overlay, **common)
    friends, small_world = links(point, point["nodes"])
    return SimConfig(
        nodes=point["nodes"],
        rounds=point["rounds"],
        warmup_rounds=point.get("warmup"),
        overlay=base.overlay.with_(friends=friends, small_world=small_world),
        **common,
    )


def config_digest(config: SimConfig) -> str:
    """A hash of everything that decides a simulation's result."""
    text = json.dumps(config.to_dict(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def point_key(config: SimConfig, commit: str) -> str:
    """What a finished result is stored under: its full configuration and the code's commit."""
    text = json.dumps({"config": config_digest(config), "commit": commit}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# What a simulation's result depends on: the vinifera and churn_traces
# packages, less the parts no simulation runs (the daemon, swarms, the wire
# codec, the fuzzer, and the experiment modules that only plan, store,
# tabulate and draw). A change to those keeps stored results valid; a new
# module counts until it is listed here.
SIMULATED_PACKAGES = ("vinifera", "churn_traces")
NOT_SIMULATED = (
    "vinifera/daemon/",
    "vinifera/swarm/",
    "vinifera/wire/",  # the simulator passes messages, never bytes
    "vinifera/fuzz.py",
    *(
        f"vinifera/experiment/{name}.py"
        for name in ("__init__", "claims", "compare", "figures", "params", "plots", "report",
                     "runners", "store", "sweep", "table")
    ),
)  # fmt: skip


def simulated(name: str) -> bool:
    """Whether a source file (package-relative, e.g. "vinifera/sim/driver.py") is simulated."""
    return not any(name == x or (x.endswith("/") and name.startswith(x)) for x in NOT_SIMULATED)


@functools.cache
def source_fingerprint() -> str:
    """A hash of the simulated sources as installed: a worker whose code
    differs from the driver's would compute different rows."""
    import vinifera.churn_traces

    digest = hashlib.sha256()
    for package in (Path(__file__).parent.parent, Path(vinifera.churn_traces.__file__).parent):
        root = package.resolve()
        for path in sorted(root.rglob("*.py")):
            name = f"{root.name}/{path.relative_to(root).as_posix()}"
            if simulated(name):
                digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()
