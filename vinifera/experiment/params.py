"""The parameters a figure's grid can sweep or fix, with their types and
limits, so that `--set key=value` is checked before anything runs."""

from __future__ import annotations

import math
from dataclasses import dataclass

from vinifera.protocol.config import SYSTEMS


class GridError(ValueError):
    """A grid the user asked for cannot be built (the CLI: a usage error)."""


@dataclass(frozen=True)
class Param:
    name: str
    kind: type  # int, float or str
    help: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    # Accepts "none" (e.g. "the whole trace").
    optional: bool = False

    def parse(self, text: str):
        """One value from the command line; raises GridError."""
        text = text.strip()
        if self.optional and text.lower() in ("none", "all"):
            return None
        if self.kind is str:
            value = text
        else:
            try:
                value = self.kind(text)
            except ValueError:
                raise GridError(f"{self.name}={text!r}: not {_article(self.kind)}") from None
        self.check(value)
        return value

    def check(self, value) -> None:
        if value is None:
            if not self.optional:
                raise GridError(f"{self.name} needs a value")
            return
        if self.choices and value not in self.choices:
            raise GridError(f"{self.name}={value!r}: choose from {', '.join(self.choices)}")
        if self.kind is float and not math.isfinite(value):
            raise GridError(f"{self.name}={value}: not a finite number")
        if self.minimum is not None and value < self.minimum:
            raise GridError(f"{self.name}={value}: must be >= {self.minimum:g}")
        if self.maximum is not None and value > self.maximum:
            raise GridError(f"{self.name}={value}: must be <= {self.maximum:g}")


def _article(kind: type) -> str:
    return {int: "an integer", float: "a number"}.get(kind, kind.__name__)


_PARAMS = (
    Param("system", str, "vinifera or the baseline", choices=SYSTEMS),
    Param(
        "profile",
        str,
        "Vinifera's configuration: ours (identifiers inside subscriptions, K_f = 4, K_sw = 4) "
        "or the paper's (uniform identifiers, K_sw = 0, K_f = ceil(log2 N) - 2)",
        choices=("ours", "paper"),
    ),
    Param("subscriptions", str, "subscription workload", choices=("random", "skewed")),
    Param("nodes", int, "N: nodes that join at the start", minimum=2),
    Param("rounds", int, "gossip rounds simulated", minimum=2),
    Param(
        "warmup",
        int,
        "rounds before the measurement window (none: half, <= 50)",
        minimum=0,
        optional=True,
    ),
    Param("events_per_round", float, "events published per round", minimum=0),
    Param("attributes", int, "d: numeric attributes", minimum=1, maximum=16),
    Param("friends", int, "K_f friend links (K_sw = 8 - K_f)", minimum=0, maximum=8),
    Param("capacity", int, "X: event messages a node handles per round", minimum=1),
    Param("rate", float, "publication rate in multiples of X per round", minimum=0),
    Param("trace", str, "churn trace file (.avt or .evt)"),
    Param(
        "end_hours", float, "replay the trace up to this hour (none: all)", minimum=0, optional=True
    ),
    Param("round_seconds", float, "trace seconds per round", minimum=1e-3),
    Param("window_hours", float, "width of a time window of the series", minimum=1e-3),
    Param("glitches", str, "one-probe mass departures of the trace", choices=("keep", "filter")),
    Param("seed", int, "seed of the simulation"),
)

PARAMS: dict[str, Param] = {p.name: p for p in _PARAMS}


def parse_values(name: str, text: str) -> tuple:
    """`--set name=a,b,c` -> (a, b, c) parsed with the parameter's type."""
    param = PARAMS[name]
    parts = text.split(",")
    if not text.strip() or any(not t.strip() for t in parts):
        raise GridError(f"{name}={text!r}: empty value")
    values = tuple(param.parse(t) for t in parts)
    if len(set(values)) != len(values):
        raise GridError(f"{name}={text!r}: a value is repeated")
    return values


def parse_seeds(text: str) -> tuple[int, ...]:
    """`--seeds 3` -> seeds 1, 2, 3; `--seeds 4,9` -> those seeds."""
    text = text.strip()
    if "," not in text:
        try:
            count = int(text)
        except ValueError:
            raise GridError(f"--seeds {text!r}: a count or a comma-separated list") from None
        if count < 1:
            raise GridError(f"--seeds {count}: at least one seed")
        return tuple(range(1, count + 1))
    return parse_values("seed", text)
