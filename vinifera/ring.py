"""The identifier space: a ring of 64-bit integers.

Pure arithmetic; every distance is an exact integer so that results never
depend on floating-point rounding.
"""

RING_BITS = 64
RING_SIZE = 1 << RING_BITS
RING_MAX = RING_SIZE - 1


def cw_distance(a: int, b: int) -> int:
    """Clockwise distance from a to b (0 when a == b)."""
    return (b - a) % RING_SIZE


def ring_distance(a: int, b: int) -> int:
    """Shortest distance between a and b in either direction."""
    d = (b - a) % RING_SIZE
    return d if d <= RING_SIZE - d else RING_SIZE - d


def in_arc(x: int, a: int, b: int) -> bool:
    """True when x lies in the clockwise half-open arc (a, b].

    When a == b the arc is the whole ring.
    """
    if a == b:
        return True
    return 0 < (x - a) % RING_SIZE <= (b - a) % RING_SIZE
