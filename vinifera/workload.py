"""The reference workloads of docs/experiments.md ("Reference workload").

Shared by the simulator and the swarms (vinifera/sim, vinifera/swarm).

- random: centres (and event values) uniform over each attribute's domain;
- skewed: each domain is cut into ``buckets`` equal buckets whose popularity
  is Zipf (rank r has weight 1/r**zipf_exponent) over a random permutation of
  the buckets, drawn per attribute at construction; a centre is uniform
  inside a bucket drawn by popularity.

A subscription constrains every attribute with [c - w/2, c + w/2] clipped to
the domain, w uniform in [width_min, width_max]. All randomness comes from
the rng arguments, so a workload is reproducible from its seeds.

INT attributes are treated as the continuous domain [min, max + 1) and
floored, so every integer has the same share and a range keeps width ~w.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from typing import Any

from vinifera.schema import AttrType, Schema
from vinifera.subscription import Event, Subscription

__all__ = ["KINDS", "Workload"]

KINDS = ("random", "skewed")


class _Dim:
    """Per-attribute sampling state (plain attributes for speed)."""

    __slots__ = ("name", "is_int", "lo", "hi", "span", "ranking", "cum", "total", "bucket_w")

    def __init__(self, name: str, is_int: bool, lo: Any, hi: Any) -> None:
        self.name = name
        self.is_int = is_int
        self.lo = lo
        self.hi = hi
        # Continuous extent the centres are drawn from.
        self.span = float(hi - lo + 1) if is_int else float(hi - lo)
        self.ranking: tuple[int, ...] = ()
        self.cum: list[float] = []
        self.total = 0.0
        self.bucket_w = 0.0


class Workload:
    """Draws the subscriptions and events of one reference workload."""

    __slots__ = (
        "kind",
        "schema",
        "width_min",
        "width_max",
        "buckets",
        "zipf_exponent",
        "_dims",
        "_skewed",
    )

    def __init__(
        self,
        kind: str,
        schema: Schema,
        rng: random.Random,
        width_min: float = 10.0,
        width_max: float = 100.0,
        buckets: int = 50,
        zipf_exponent: float = 1.0,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown workload kind {kind!r} (use random or skewed)")
        if not (
            math.isfinite(width_min) and math.isfinite(width_max) and 0 <= width_min <= width_max
        ):
            raise ValueError(f"need 0 <= width_min <= width_max, got {width_min}, {width_max}")
        if isinstance(buckets, bool) or not isinstance(buckets, int) or buckets < 1:
            raise ValueError(f"buckets must be a positive integer, got {buckets!r}")
        if not math.isfinite(zipf_exponent) or zipf_exponent < 0:
            raise ValueError(f"zipf_exponent must be finite and >= 0, got {zipf_exponent!r}")
        self.kind = kind
        self.schema = schema
        self.width_min = float(width_min)
        self.width_max = float(width_max)
        self.buckets = buckets
        self.zipf_exponent = float(zipf_exponent)
        self._skewed = kind == "skewed"
        dims = []
        for attr in schema:
            if attr.type is AttrType.STRING:
                raise ValueError(
                    f"workloads need numeric attributes; {attr.name} is a string attribute"
                )
            dims.append(_Dim(attr.name, attr.type is AttrType.INT, attr.min, attr.max))
        if self._skewed:
            # Zipf weights by rank; cumulative sums for bisect draws.
            cum = []
            acc = 0.0
            for r in range(1, buckets + 1):
                acc += 1.0 / r**self.zipf_exponent
                cum.append(acc)
            for d in dims:
                order = list(range(buckets))
                rng.shuffle(order)
                d.ranking = tuple(order)  # ranking[r] = bucket of popularity rank r + 1
                d.cum = cum
                d.total = acc
                d.bucket_w = d.span / buckets
        self._dims = tuple(dims)

    def bucket_ranking(self, name: str) -> tuple[int, ...]:
        """Buckets of attribute ``name`` from most to least popular (skewed only)."""
        for d in self._dims:
            if d.name == name:
                return d.ranking
        raise KeyError(name)

    def _centre(self, d: _Dim, rng: random.Random) -> float:
        # A continuous point in [lo, lo + span).
        if self._skewed:
            r = bisect_right(d.cum, rng.random() * d.total)
            if r >= len(d.ranking):  # rounding at the top end
                r = len(d.ranking) - 1
            c = d.lo + (d.ranking[r] + rng.random()) * d.bucket_w
        else:
            c = d.lo + rng.random() * d.span
        return c

    def _value(self, d: _Dim, rng: random.Random) -> Any:
        c = self._centre(d, rng)
        if d.is_int:
            v = math.floor(c)
            return d.hi if v > d.hi else v
        return d.hi if c > d.hi else c

    def event_values(self, rng: random.Random) -> dict[str, Any]:
        """One value per attribute, drawn like a subscription centre."""
        return {d.name: self._value(d, rng) for d in self._dims}

    def event(self, rng: random.Random) -> Event:
        return Event.build(self.schema, self.event_values(rng))

    def subscription(self, rng: random.Random) -> Subscription:
        """One node's subscription: every attribute constrained around a centre."""
        ranges = {}
        wmin = self.width_min
        wspan = self.width_max - wmin
        for d in self._dims:
            c = self._centre(d, rng)
            half = (wmin + rng.random() * wspan) / 2
            lo, hi = c - half, c + half
            if d.is_int:
                lo, hi = math.floor(lo), math.floor(hi)
            if lo < d.lo:
                lo = d.lo
            if hi > d.hi:
                hi = d.hi
            if lo > hi:  # only when c rounds onto the top bound and w == 0
                lo = hi
            ranges[d.name] = (lo, hi)
        return Subscription.build(self.schema, ranges)
