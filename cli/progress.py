"""Progress of a long run on stderr: a bar with the rate and an ETA on a
terminal; elsewhere (a log file, CI, a pipe) a line now and then, so that a
long run is never silent and a short one prints nothing."""

from __future__ import annotations

import sys
import time

import click

# Without a terminal: the first line after this many seconds, then one per EVERY.
FIRST = 10.0
EVERY = 30.0


class RoundProgress:
    """Call `update(done)` with the rounds done so far; `close()` at the end."""

    def __init__(self, total: int, label: str = "simulating", unit: str = "rounds",
                 clock=time.monotonic, out=None, tty: bool | None = None) -> None:  # fmt: skip
        self.total, self.label, self.unit = total, label, unit
        self.clock = clock
        self.out = out if out is not None else sys.stderr
        self.start = clock()
        self.next_line = self.start + FIRST
        self.done = 0
        self.bar = None
        if tty if tty is not None else self.out.isatty():
            self.bar = click.progressbar(
                length=total, label=label, file=self.out, show_eta=True,
                item_show_func=lambda _x: self._rate(),
            )  # fmt: skip
            self.bar.__enter__()

    def _rate(self) -> str | None:
        spent = self.clock() - self.start
        if self.done == 0 or spent <= 0:
            return None
        return f"{self.done / spent:.2f} {self.unit}/s"

    def update(self, done: int) -> None:
        step, self.done = done - self.done, done
        if self.bar is not None:
            self.bar.update(step, current_item=done)
            return
        now = self.clock()
        if now < self.next_line or done >= self.total:
            return
        self.next_line = now + EVERY
        rate = done / (now - self.start)
        left = (self.total - done) / rate if rate > 0 else float("inf")
        click.echo(
            f"{self.label}: {done}/{self.total} {self.unit}, {self._rate()}, "
            f"about {_duration(left)} left",
            file=self.out,
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _duration(seconds: float) -> str:
    if seconds == float("inf"):
        return "an unknown time"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
