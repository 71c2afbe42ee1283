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

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{rv} is not a finite number.", param, ctx)
        return rv


FINITE = FiniteRange()
"""Any finite float (for options with no bounds)."""
