"""Address-proof cookies, table-driven (the clock is an argument)."""

from __future__ import annotations

import pytest

from vinifera.daemon.cookies import CURRENT, PREVIOUS, CookieIssuer, PeerCookies
from vinifera.daemon.gate import Gate
from vinifera.protocol import messages as m
from vinifera.protocol.profile import Profile
from vinifera.wire import Challenge, Header, Hello, body, encode_handshake

SECRET = b"sixteen bytes or more of secret"
A, B = "127.0.0.1:7000", "127.0.0.2:7000"
PING = body(m.Ping(Profile(A, 1, None)))


def test_cookies_are_per_address_and_live_two_epochs():
    iss = CookieIssuer(SECRET, epoch=100.0)
    c = iss.issue(B, 50.0)
    assert c != iss.issue("127.0.0.3:7000", 50.0)
    assert c != CookieIssuer(b"another secret of some length", 100.0).issue(B, 50.0)
    assert [iss.check(B, c, t) for t in (0.0, 99.9, 100.0, 199.9, 200.0)] == [
        CURRENT, CURRENT, PREVIOUS, PREVIOUS, None,
    ]  # fmt: skip
    assert iss.check(B, 0, 50.0) is None and iss.check(B, c ^ 1, 50.0) is None
    assert c >> 63 == 1  # always 9 bytes packed: a Hello and its Challenge weigh the same
    assert len(encode_handshake(Hello(c))) == len(encode_handshake(Challenge(c))) == 12


def test_first_contact_holds_then_releases_with_the_cookie():
    a = PeerCookies(CookieIssuer(SECRET, 100.0), hold_for=2.0)
    assert a.header_for(B, 0.0) is None  # no cookie of B's yet
    assert a.hold(B, [PING, PING], 0.0)  # a Hello is due
    assert not a.hold(B, [PING], 0.1)  # not again so soon
    released = a.on_challenge(B, 42 | 1 << 63, 0.2)
    assert [b for _, b in released] == [PING] * 3
    assert all(h.cookie == 42 | 1 << 63 and h.offer for h, _ in released)
    assert a.header_for(B, 0.3).cookie == 42 | 1 << 63
    assert a.held_bytes == 0


def test_a_challenge_nobody_asked_for_changes_nothing():
    a = PeerCookies(CookieIssuer(SECRET, 100.0), hold_for=2.0)
    assert a.on_challenge(B, 7, 0.0) == []
    assert a.counters["unsolicited_challenges"] == 1
    a.header_for(B, 0.0)  # we sent B something (held): now B may answer
    a.hold(B, [PING], 0.0)
    assert a.on_challenge(B, 7, 10.0) == []  # ... but not long after
    assert a.header_for(B, 10.0) is None


def test_a_hello_releases_nothing_and_gives_no_cookie():
    """Issue 75 item 7: a forged Hello released what we held for its
    (claimed) source, to an address that never proved itself."""
    gate = Gate(None, 0.0, 30.0, 100.0, hold_for=2.0)
    held = gate.outbound(B, [PING, PING], 0.0)
    assert len(held) == 1 and len(held[0]) == 12  # just our Hello to B
    forged = Hello(1 << 63 | 5)
    verdict = gate.inbound(forged, B, 12, 0.1)
    assert not verdict.passes
    assert [len(r) for r in verdict.replies] == [12]  # a Challenge, nothing else
    assert gate.cookies.header_for(B, 0.2) is None  # still holding
    assert gate.cookies.held_bytes == 2 * len(PING.data)


def test_a_proven_datagram_hands_over_its_offer_releases_what_was_held_and_stops_ours():
    ia, ib = CookieIssuer(SECRET, 100.0), CookieIssuer(b"b's own secret, long enough", 100.0)
    a = PeerCookies(ia, hold_for=2.0)
    a.header_for(B, 0.0)
    a.hold(B, [PING], 0.0)
    unproven = Header(cookie=123, offer=999)
    assert a.check(B, unproven, 1.0) is None
    assert a.header_for(B, 1.0) is None  # an unproven offer is ignored
    assert a.released_to_proven(B, 1.0) == []
    proven = Header(cookie=ia.issue(B, 1.0), offer=ib.issue(A, 1.0))
    assert a.check(B, proven, 1.0) == CURRENT
    released = a.released_to_proven(B, 1.0)
    assert [b for _, b in released] == [PING] and released[0][0].cookie == ib.issue(A, 1.0)
    h = a.header_for(B, 1.0)
    assert h.cookie == ib.issue(A, 1.0) and h.offer == 0
    assert a.check(B, proven, 150.0) == PREVIOUS
    assert a.renewal_due(B, 150.0) and not a.renewal_due(B, 160.0)
    assert a.header_for(B, 150.0).offer == ia.issue(B, 150.0)  # offered again


def test_held_datagrams_are_bounded_and_expire():
    a = PeerCookies(CookieIssuer(SECRET, 100.0), hold_for=2.0, held_per_peer=3, held_bytes=10_000)
    a.hold(B, [PING] * 5, 0.0)
    assert a.held_bytes == 3 * len(PING.data) and a.counters["held_dropped"] == 2
    a.prune(3.0)
    assert a.held_bytes == 0 and a.counters["held_dropped"] == 5
    big = PING._replace(data=b"x" * 6_000)
    a.hold("127.0.0.3:1", [big, big], 4.0)
    assert a.held_bytes == 6_000


def test_the_peer_table_is_bounded():
    a = PeerCookies(CookieIssuer(SECRET, 100.0), hold_for=2.0, max_peers=2)
    for i in range(5):
        a.hold(f"127.0.0.{i + 1}:1", [PING], 0.0)
    assert len(a) == 2 and a.held_bytes == 2 * len(PING.data)


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        CookieIssuer(b"short", 10.0)
    with pytest.raises(ValueError):
        CookieIssuer(SECRET, 0.0)
