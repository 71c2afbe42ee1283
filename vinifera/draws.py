"""`random.Random.sample` and `choice` on lists, draw for draw, compiled.

Cyclon samples its view twice per node per period. In the compiled build
`rng.sample` is the one stdlib routine on that path that runs in the
interpreter (its type check alone goes through the abc machinery): 3.85%
of a simulation's instructions (docs/decisions/simulator-speed.md, "Gossip
buffers flat, sampling compiled, generic calls out of hot paths"). These
functions make the same `getrandbits` calls in the same order as CPython
3.11's `Random.sample` and `Random.choice` (Lib/random.py), so they return the
same items and leave the generator in the same state; tests/test_draws.py
holds them to the running interpreter's stdlib over many seeds, sizes and
both of `sample`'s methods, and fails if a later Python draws otherwise.
"""

from __future__ import annotations

import math
from random import Random
from typing import Any


def below(rng: Random, n: int) -> int:
    """Random._randbelow_with_getrandbits: a uniform int in [0, n), n > 0."""
    bits = n.bit_length()
    r: int = rng.getrandbits(bits)
    while r >= n:
        r = rng.getrandbits(bits)
    return r


def choice(rng: Random, seq: list[Any]) -> Any:
    """rng.choice(seq) for a non-empty list."""
    if not seq:
        raise IndexError("Cannot choose from an empty sequence")
    return seq[below(rng, len(seq))]


def sample(rng: Random, population: list[Any], k: int) -> list[Any]:
    """rng.sample(population, k) for a list."""
    n = len(population)
    if not 0 <= k <= n:
        raise ValueError("Sample larger than population or is negative")
    result: list[Any] = []
    setsize = 21  # as the stdlib: the smaller of an n-list and a k-set
    if k > 5:
        setsize += 4 ** math.ceil(math.log(k * 3, 4))
    if n <= setsize:
        pool = list(population)  # not yet chosen: pool[0 : n - i]
        for i in range(k):
            j = below(rng, n - i)
            result.append(pool[j])
            pool[j] = pool[n - i - 1]
    else:
        selected: set[int] = set()
        for _ in range(k):
            j = below(rng, n)
            while j in selected:
                j = below(rng, n)
            selected.add(j)
            result.append(population[j])
    return result
