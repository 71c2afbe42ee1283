"""Whether attribute values satisfy a conjunction of closed ranges: the
test behind `Subscription.matches`, in a module of its own so that it is
compiled with the protocol (setup.py). The forest runs it for every link
at every event a node handles, which from compiled code into an
interpreted method cost a Python frame each time."""

from __future__ import annotations

from typing import Any


def satisfies(constraints: tuple[tuple[str, Any, Any], ...], values: dict[str, Any]) -> bool:
    """Every (name, lo, hi) of `constraints` has lo <= values[name] <= hi;
    a name missing from `values` fails."""
    for name, lo, hi in constraints:
        v = values.get(name)
        if v is None or not lo <= v <= hi:
            return False
    return True
