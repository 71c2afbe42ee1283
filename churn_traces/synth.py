"""A seeded synthetic churn generator calibrated to the Skype superpeer trace.

Model (docs/traces.md has the calibration table):

- Each node has a latent "stickiness" z ~ N(0, 1). Its sessions are lognormal
  with log-median ``on_log_median + on_node_sd * z`` and spread ``on_sd``; its
  off periods are lognormal with log-median ``off_log_median - off_node_sd * z``
  and spread ``off_sd``. Sticky nodes stay long and come back soon, as in Skype,
  where a node's mean session and its availability correlate strongly.
- Returns follow a daily cycle: off periods elapse on a clock that runs at
  ``1 + daily_amplitude * cos(2 pi (t - peak) / 1 day)``, so more nodes come
  back around `peak`; the online population swings by about +-12%.
- The process starts `warmup_days` before time 0 so that time 0 is in steady
  state. A monitor probes every `probe_seconds`: a node is up at a probe if it
  is online at that instant, and a session runs from the first probe that sees
  it to the first that does not (short absences between probes go unseen, as
  in the measured trace). ``probe_seconds=0`` keeps exact times instead.
- Only nodes seen up at least once are listed; an unseen node is redrawn, so
  the trace has exactly `nodes` nodes.
- Optional flash crowd: before `flash_hours`, only a `flash_visible` share of
  the nodes is reported; the others' sessions start when the crowd arrives.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from .formats import Session, Trace

DAY = 86400


@dataclass(frozen=True)
class SynthModel:
    """Parameters of the generator; the defaults are fitted to the Skype trace."""

    # Fitted by trial runs over seeds 1-8 (docs/traces.md, "Calibration").
    on_log_median: float = math.log(4.3 * 3600)
    on_sd: float = 1.35
    on_node_sd: float = 0.8
    # A share of very short sessions: Skype has 13% one-probe sessions, which a
    # single lognormal cannot give together with its median and mean.
    short_share: float = 0.1
    short_log_median: float = math.log(0.5 * 3600)
    short_sd: float = 0.5
    off_log_median: float = math.log(16.5 * 3600)
    off_sd: float = 1.2
    off_node_sd: float = 1.3
    # Return-rate swing; the population, smoothed by long sessions, swings ~+-12%.
    daily_amplitude: float = 0.65
    peak_hour: float = 9.0
    warmup_days: float = 10.0
    flash_hours: float = 3.9
    flash_visible: float = 0.2


SKYPE = SynthModel()
SKYPE_DAYS = 2478200 / DAY  # the measured trace: 28.7 days
SKYPE_NODES = 2081
# The Skype monitor's usual gap between probes (median 1,843 s); with it a
# session of 10 probes is 5.11 h, Skype's median.
SKYPE_PROBE_SECONDS = 1840


class _DailyClock:
    """Warped time for returns: Λ(t) = t + A·D/2π · sin(2π(t − peak)/D), increasing for A < 1."""

    def __init__(self, amplitude: float, peak: float):
        self.a = amplitude
        self.peak = peak
        self.w = 2 * math.pi / DAY

    def warp(self, t: float) -> float:
        return t + self.a / self.w * math.sin(self.w * (t - self.peak))

    def after(self, t: float, d: float) -> float:
        """The real time at which `d` warped seconds have elapsed since t."""
        if self.a == 0:
            return t + d
        target = self.warp(t) + d
        x = t + d
        for _ in range(50):
            fx = self.warp(x) - target
            x -= fx / (1 + self.a * math.cos(self.w * (x - self.peak)))
            if abs(fx) < 0.5:
                break
        return x


def _node_sessions(
    rng: random.Random, model: SynthModel, clock: _DailyClock, end: int
) -> list[tuple[float, float]]:
    """Continuous-time on periods of one node over [-warmup, end)."""
    z = rng.gauss(0, 1)
    mu_on = model.on_log_median + model.on_node_sd * z
    mu_off = model.off_log_median - model.off_node_sd * z
    mean_on = math.exp(mu_on + model.on_sd**2 / 2)
    mean_off = math.exp(mu_off + model.off_sd**2 / 2)
    t = -model.warmup_days * DAY
    up = rng.random() < mean_on / (mean_on + mean_off)
    first = True
    out = []
    while t < end:
        if up:
            if rng.random() < model.short_share:
                d = rng.lognormvariate(model.short_log_median, model.short_sd)
            else:
                d = rng.lognormvariate(mu_on, model.on_sd)
            if first:
                d *= rng.random()  # residual life of the period in progress
            out.append((t, t + d))
            t += d
        else:
            d = rng.lognormvariate(mu_off, model.off_sd)
            if first:
                d *= rng.random()
            t = clock.after(t, d)
        up = not up
        first = False
    return out


def _observe(periods: list[tuple[float, float]], end: int, probe: int) -> list[Session]:
    """What a monitor records: exact clipped times, or runs of probes that saw the node."""
    out: list[Session] = []
    for s, e in periods:
        if probe:
            # probes k*probe with s <= k*probe < e see the node
            first = max(math.ceil(s / probe), 0)
            after = math.ceil(e / probe)
            s2, e2 = first * probe, min(after * probe, end)
        else:
            s2, e2 = max(round(s), 0), min(round(e), end)
        if e2 <= s2:
            continue
        if out and s2 <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e2))  # unseen gap: one session
        else:
            out.append((s2, e2))
    return out


def synthesize(
    seed: int,
    nodes: int = SKYPE_NODES,
    days: float = SKYPE_DAYS,
    flash_crowd: bool = True,
    probe_seconds: int = SKYPE_PROBE_SECONDS,
    model: SynthModel = SKYPE,
) -> Trace:
    """A Skype-like trace: same seed and arguments, same trace."""
    if nodes < 1:
        raise ValueError("nodes must be at least 1")
    if not days > 0:
        raise ValueError("days must be positive")
    if probe_seconds < 0:
        raise ValueError("probe_seconds must be 0 (exact times) or positive")
    rng = random.Random(seed)
    end = int(round(days * DAY))
    clock = _DailyClock(model.daily_amplitude, model.peak_hour * 3600)
    flash = 0
    if flash_crowd:
        flash = int(model.flash_hours * 3600)
        if probe_seconds:
            flash = round(flash / probe_seconds) * probe_seconds
        flash = min(flash, end)
    out: dict[str, list[Session]] = {}
    width = len(str(nodes - 1))
    for i in range(nodes):
        for _attempt in range(1000):
            sessions = _observe(_node_sessions(rng, model, clock, end), end, probe_seconds)
            if flash and rng.random() >= model.flash_visible:
                sessions = [(max(s, flash), e) for s, e in sessions if e > flash]
            if sessions:
                break
        else:
            raise ValueError("model too sparse: a node was never seen up in 1000 draws")
        out[f"syn{i:0{width}d}"] = sessions
    return Trace(out, end)
