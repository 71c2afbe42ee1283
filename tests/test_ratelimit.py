"""Per-peer token buckets, table-driven (the clock is an argument)."""

from __future__ import annotations

import pytest

from vinifera.daemon.ratelimit import PeerRateLimiter


@pytest.mark.parametrize(
    "rate,burst,times,expected",
    [
        # a full bucket allows `burst` at once, then nothing
        (1.0, 3, [0, 0, 0, 0], [True, True, True, False]),
        # tokens come back at `rate` per second
        (2.0, 1, [0, 0, 0.25, 0.5, 0.5], [True, False, False, True, False]),
        # never more than `burst` saved up, however long the silence
        (10.0, 2, [0, 100, 100, 100], [True, True, True, False]),
        # a clock that goes backwards grants nothing
        (1.0, 1, [5, 4, 4.5], [True, False, False]),
    ],
)
def test_bucket_arithmetic(rate, burst, times, expected):
    limiter = PeerRateLimiter(rate, burst)
    assert [limiter.allow("p", t) for t in times] == expected


def test_peers_have_separate_buckets():
    limiter = PeerRateLimiter(1.0, 1)
    assert limiter.allow("a", 0) and not limiter.allow("a", 0)
    assert limiter.allow("b", 0)


def test_the_peer_table_is_capped_least_recently_seen_first():
    limiter = PeerRateLimiter(1.0, 1, max_peers=2)
    limiter.allow("a", 0)
    limiter.allow("b", 0)
    limiter.allow("a", 0)  # a is now the most recently seen
    limiter.allow("c", 0)  # evicts b
    assert len(limiter) == 2
    assert limiter.allow("b", 0)  # b starts again with a full bucket
    assert not limiter.allow("c", 0)


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        PeerRateLimiter(0, 1)
    with pytest.raises(ValueError):
        PeerRateLimiter(1, 0.5)
