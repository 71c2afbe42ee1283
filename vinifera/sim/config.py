"""Configuration of one simulation run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from vinifera.protocol.config import SYSTEMS, ContentConfig, OverlayConfig, profile
from vinifera.sim.network import NetworkModel
from vinifera.sim.replay import TraceReplay


@dataclass(frozen=True, slots=True)
class ChurnStep:
    """At the start of `round`: kill (crash, no goodbye) a fraction of the
    alive nodes, make them leave gracefully, or join `count` new nodes."""

    round: int
    kind: str  # "kill" | "leave" | "join"
    fraction: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ("kill", "leave", "join"):
            raise ValueError(f"unknown churn kind {self.kind!r}")
        if self.round < 0:
            raise ValueError("churn round must be >= 0")
        if self.kind in ("kill", "leave") and not 0.0 < self.fraction < 1.0:
            raise ValueError(f"{self.kind} fraction must be in (0, 1)")
        if self.kind == "join" and self.count < 1:
            raise ValueError("join count must be >= 1")


NODES = 1000  # SimConfig's default network size


@dataclass(frozen=True, slots=True)
class SimConfig:
    nodes: int = NODES
    rounds: int = 50
    seed: int = 1
    # Workload of docs/experiments.md: "random" or "skewed" subscriptions
    # over `attributes` numeric attributes with domain [0, 1000].
    subscriptions: str = "skewed"
    attributes: int = 1
    # "vinifera" or "baseline": a label; the difference is in overlay and
    # content, which SimConfig.for_system takes from the system's profile.
    system: str = "vinifera"
    overlay: OverlayConfig = field(default_factory=OverlayConfig)
    content: ContentConfig = field(default_factory=ContentConfig)
    network: NetworkModel = field(default_factory=NetworkModel)
    # Events published per round by uniformly chosen alive nodes.
    events_per_round: float = 0.0
    # Metrics count events published from this round on (default: half the
    # run, at most 50) until `deadline_rounds` before the end.
    warmup_rounds: int | None = None
    # Delivery deadline of the hit ratio (rounds).
    deadline_rounds: float = 5.0
    # Bootstrap nodes a joining node is given (random alive nodes).
    bootstrap_size: int = 3
    # The initial nodes join at times spread uniformly over this many rounds.
    join_spread_rounds: float = 1.0
    churn: tuple[ChurnStep, ...] = ()
    # Random pairs sampled for random_pair_utility.
    utility_pairs: int = 20000
    # Trace-driven churn (vinifera/sim/replay.py): nodes join and depart as
    # the trace says instead of `nodes` joining at the start. Build with
    # SimConfig.for_trace, which derives nodes, rounds and the warm-up from it.
    replay: TraceReplay | None = None

    def __post_init__(self) -> None:
        if self.nodes < 1:
            raise ValueError("nodes must be >= 1")
        if self.rounds < 1:
            raise ValueError("rounds must be >= 1")
        if self.attributes < 1:
            raise ValueError("attributes must be >= 1")
        if self.bootstrap_size < 1:
            raise ValueError("bootstrap_size must be >= 1")
        if self.join_spread_rounds <= 0:
            raise ValueError("join_spread_rounds must be positive")
        if self.system not in SYSTEMS:
            raise ValueError(f"system must be one of {', '.join(SYSTEMS)}")
        if self.events_per_round < 0:
            raise ValueError("events_per_round must be >= 0")
        if self.replay is not None:
            if self.nodes != len(self.replay.trace) or self.rounds != self.replay.rounds:
                raise ValueError("with a trace, nodes and rounds come from it (use for_trace)")
            if self.churn:
                raise ValueError("churn steps and a trace replay do not mix")

    @property
    def warmup(self) -> int:
        return min(50, self.rounds // 2) if self.warmup_rounds is None else self.warmup_rounds

    def to_dict(self) -> dict:
        if self.replay is None:
            return asdict(self)
        # The trace itself is too big for a manifest: record what describes it.
        d = asdict(replace(self, replay=None))
        d["replay"] = self.replay.to_dict()
        return d

    @staticmethod
    def for_system(system: str, **kw) -> SimConfig:
        """A run of one profile (protocol/config.py PROFILES, by name): its
        overlay and content unless `overlay` or `content` are given, which
        replace them whole (start from `profile(name)` to change a part)."""
        p = profile(system).for_size(kw.get("nodes", NODES))
        kw.setdefault("overlay", p.overlay)
        kw.setdefault("content", p.content)
        return SimConfig(system=p.system, **kw)

    @staticmethod
    def for_trace(replay: TraceReplay, system: str = "vinifera", **kw) -> SimConfig:
        """A replay of `replay.trace`: one node per trace node, rounds covering
        the trace, metrics from `replay.measure_from` (if given)."""
        kw.setdefault("warmup_rounds", replay.warmup_rounds)
        return SimConfig.for_system(
            system, nodes=len(replay.trace), rounds=replay.rounds, replay=replay, **kw
        )
