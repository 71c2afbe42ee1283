"""Parameter types the commands share.

click's FloatRange lets "nan" through every bound (every comparison with NaN
is false) and "inf" through every lower bound, so a period, rate or skew of
NaN or infinity reached trio or int() as a traceback: refuse them here.
"""

from __future__ import annotations

import math

import click


class FiniteRange(click.FloatRange):
    """A FloatRange that also refuses NaN and infinities."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        if self.min is None and self.max is None:
            self.name = "float"  # not "FLOAT RANGE [x<=None]" in --help

    def _describe_range(self) -> str:
        if self.min is None and self.max is None:
            return ""
        return super()._describe_range()

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{rv} is not a finite number.", param, ctx)
        return rv


FINITE = FiniteRange()
"""Any finite float (for options with no bounds)."""
