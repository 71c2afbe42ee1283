"""The wire codec: round trips, the one untrusted decoder, the network key."""

from __future__ import annotations

import contextlib
import inspect
import math
import random

import msgpack
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vinifera import native
from vinifera.errors import ViniferaError, brief
from vinifera.fuzz import Fuzzer
from vinifera.protocol import messages as m
from vinifera.protocol.config import MAX_COVERED, OverlayConfig
from vinifera.protocol.content.filters import Filter
from vinifera.protocol.node import Node
from vinifera.protocol.profile import Profile
from vinifera.ranges import IntervalSet
from vinifera.ring import RING_MAX
from vinifera.schema import Attribute, AttrType, Schema
from vinifera.subscription import Event, Subscription
from vinifera.wire import (
    KIND_CHALLENGE,
    KIND_HELLO,
    MAC_SIZE,
    MAX_DATAGRAM,
    WIRE_VERSION,
    Decoder,
    NetworkKey,
    OversizeError,
    WireError,
    encode,
    encode_datagrams,
    format_address,
    parse_address,
)
from vinifera.wire.decode import _too_deep
from vinifera.wire.frames import KINDS

SCHEMA = Schema(
    [
        Attribute("temp", AttrType.FLOAT, -50.0, 50.0),
        Attribute("count", AttrType.INT, 0, 1000),
        Attribute("city", AttrType.STRING),
    ]
)
KEY = NetworkKey(b"correct horse battery staple")
SUB = Subscription.build(SCHEMA, {"temp": (0.0, 10.0), "city": ("A", "M")})
EVENT = Event.build(SCHEMA, {"temp": 3.5, "count": 7, "city": "Oslo"})


ROW_FILTER = Filter(
    IntervalSet.from_intervals([(0, 10), (RING_MAX - 5, RING_MAX)]),
    (("city", IntervalSet.of(7, 9)), ("count", IntervalSet.from_intervals([(1, 2), (5, 6)]))),
    3,
)


def prof(port: int = 7000, sub=SUB, ident: int = 12345) -> Profile:
    return Profile(f"127.0.0.1:{port}", ident, sub, seq=3)


def sample_messages() -> list[m.Message]:
    p = prof()
    gossip = ((prof(7001, None, RING_MAX), prof(7002)), (0.5, 12.0))
    return [
        m.Join(p),
        m.JoinReply(p, *gossip),
        m.Shuffle(p, *gossip),
        m.ShuffleReply(p, (), ()),
        m.TmanRequest(p, *gossip, (1,)),
        m.TmanReply(p, *gossip, ()),
        m.Ping(p),
        m.Pong(p),
        m.Leave(p),
        m.Install(p, "temp", (ROW_FILTER, Filter(IntervalSet.of(0, 3), (), 0))),
        m.Install(p, "city", (), True),
        m.Refresh(p, (("temp", 0), ("city", 2**64 - 1))),
        m.RowRequest(p, ("city", "temp")),
        m.Withdraw(p, ("city",)),
        m.EventMessage(p, 2**63 - 1, EVENT, "city", 99, 4, True),
        m.EventMessage(p, 3, EVENT, "city", 99, 4, False, tuple(range(MAX_COVERED)), (2**32 - 1,)),
        m.EventPush(p, 12, EVENT, 3),
        m.EventPush(p, 12, EVENT, 3, (0,), tuple(range(7, 7 + MAX_COVERED))),
        m.Have(p, 2**63 - 1),
        m.LoadReport(p, 2.5, None),
        m.LoadReport(p, 0.0, 77, 3.25),
        m.HandoverRequest(p, 5),
        m.Handover(p, 5, (("temp", "127.0.0.1:7004", 3.0, (ROW_FILTER,)),)),
    ]


def fields(msg) -> dict:
    return {s: getattr(msg, s) for c in type(msg).__mro__ for s in getattr(c, "__slots__", ())}


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "keyed"])
@pytest.mark.parametrize("msg", sample_messages(), ids=lambda x: type(x).__name__)
def test_every_kind_round_trips(msg, key):
    data = encode(msg, key)
    back = Decoder(SCHEMA, key).decode_untrusted(data)
    assert type(back) is type(msg)
    assert fields(back) == fields(msg)


def test_a_truncated_t_man_sample_keeps_the_marks_of_the_links_it_keeps():
    from vinifera.wire.encode import encode_bodies, frame
    from vinifera.wire.frames import MAX_GOSSIP_ENTRIES, NO_HEADER

    n = MAX_GOSSIP_ENTRIES + 6
    entries = tuple(prof(7001 + i) for i in range(n))
    msg = m.TmanRequest(prof(), entries, (1.0,) * n, (2, n - 1))
    (body,) = encode_bodies(msg)
    back = Decoder(SCHEMA).decode_untrusted(frame(body, NO_HEADER))
    assert len(back.profiles) == MAX_GOSSIP_ENTRIES and back.links == (2,)


def test_a_keyed_swarm_refuses_unkeyed_and_wrongly_keyed_datagrams():
    msg = m.Ping(prof())
    keyed = Decoder(SCHEMA, KEY)
    other = NetworkKey(b"another secret of enough length")
    for data in (encode(msg), encode(msg, other), encode(msg, KEY)[:MAC_SIZE]):
        with pytest.raises(WireError) as err:
            keyed.decode_untrusted(data)
        assert err.value.reason == "mac"
    # and a keyless node cannot read keyed traffic
    with pytest.raises(WireError):
        Decoder(SCHEMA).decode_untrusted(encode(msg, KEY))


def test_network_key_needs_enough_secret(tmp_path):
    with pytest.raises(ViniferaError, match="too short"):
        NetworkKey(b"short")
    f = tmp_path / "k"
    f.write_bytes(b"  a secret with whitespace around it \n")
    assert NetworkKey.load(f).tag(b"x") == NetworkKey(b"a secret with whitespace around it").tag(
        b"x"
    )
    with pytest.raises(ViniferaError, match="cannot read"):
        NetworkKey.load(tmp_path / "missing")


def payload(*items) -> bytes:
    return msgpack.packb(list(items), use_bin_type=True)


def framed(kind, *items) -> bytes:
    """A datagram of this wire version with an empty header."""
    return payload(WIRE_VERSION, kind, [0, 0, 0, 0], *items)


GOOD_PROFILE = ["127.0.0.1:7000", 1, 0, None]

BAD = {
    "empty": (b"", "size"),
    "oversized": (b"\x90" * (MAX_DATAGRAM + 1), "size"),
    "not msgpack": (b"\xc1", "msgpack"),
    "truncated": (encode(m.Ping(prof()))[:-3], "msgpack"),
    "trailing bytes": (encode(m.Ping(prof())) + b"\x00", "msgpack"),
    "a map": (msgpack.packb({"v": 1}), "msgpack"),
    # bytes are only a fragment's chunk (<= 1,400) or a seal: longer is refused unpacked,
    # shorter where no field takes it
    "binary": (framed(7, GOOD_PROFILE, b"\x00" * 1_401), "msgpack"),
    "short binary": (framed(7, GOOD_PROFILE, b"\x00"), "field"),
    "not an array": (msgpack.packb(5), "msgpack"),
    "version 1": (payload(1, 7, GOOD_PROFILE), "version"),
    "bool version": (payload(True, 7, [0, 0, 0, 0], GOOD_PROFILE), "version"),
    "no header": (payload(WIRE_VERSION, 7, GOOD_PROFILE), "field"),
    "header of 3": (payload(WIRE_VERSION, 7, [0, 0, 0], GOOD_PROFILE), "field"),
    "negative cookie": (payload(WIRE_VERSION, 7, [-1, 0, 0, 0], GOOD_PROFILE), "field"),
    "float seq in header": (payload(WIRE_VERSION, 7, [0, 0, 0, 1.5], GOOD_PROFILE), "field"),
    "no profile": (payload(WIRE_VERSION, 7, [0, 0, 0, 0]), "field"),
    "hello with cookie 0": (payload(WIRE_VERSION, KIND_HELLO, 0), "field"),
    "hello with a string": (payload(WIRE_VERSION, KIND_HELLO, "x"), "field"),
    "challenge with more": (payload(WIRE_VERSION, KIND_CHALLENGE, 5, 6), "field"),
    "challenge with a float": (payload(WIRE_VERSION, KIND_CHALLENGE, 5.0), "field"),
    "unknown kind": (framed(99, GOOD_PROFILE), "kind"),
    "string kind": (framed("ping", GOOD_PROFILE), "kind"),
    "extra field": (framed(7, GOOD_PROFILE, 1), "field"),
    "hostname": (framed(7, ["localhost:7000", 1, 0, None]), "field"),
    "empty map as address": (framed(7, [{}, 1, 0, None]), "field"),
    "empty binary as address": (framed(7, [b"", 1, 0, None]), "field"),
    "empty map in a handover row": (
        framed(KINDS[m.Handover], GOOD_PROFILE, 5, [["temp", {}, 1.0, []]]),
        "field",
    ),
    "non-canonical address": (framed(7, ["127.000.0.1:7000", 1, 0, None]), "field"),
    "port 0": (framed(7, ["127.0.0.1:0", 1, 0, None]), "field"),
    "negative ident": (framed(7, ["127.0.0.1:7000", -1, 0, None]), "field"),
    "float ident": (framed(7, ["127.0.0.1:7000", 1.0, 0, None]), "field"),
    "bool ident": (framed(7, ["127.0.0.1:7000", True, 0, None]), "field"),
    "float seq": (framed(7, ["127.0.0.1:7000", 1, 0.0, None]), "field"),
    "NaN in subscription": (
        framed(7, ["127.0.0.1:7000", 1, 0, [["temp", math.nan, 1.0]]]),
        "field",
    ),
    "unknown attribute": (framed(7, ["127.0.0.1:7000", 1, 0, [["x", 1, 2]]]), "field"),
    "inverted range": (framed(7, ["127.0.0.1:7000", 1, 0, [["temp", 5.0, 1.0]]]), "field"),
    "NaN age": (framed(3, GOOD_PROFILE, [[GOOD_PROFILE, math.nan]]), "field"),
    "infinite age": (framed(3, GOOD_PROFILE, [[GOOD_PROFILE, math.inf]]), "field"),
    "negative age": (framed(3, GOOD_PROFILE, [[GOOD_PROFILE, -1.0]]), "field"),
    "too many entries": (framed(3, GOOD_PROFILE, [[GOOD_PROFILE, 0.0]] * 65), "field"),
    "T-Man without its links": (framed(5, GOOD_PROFILE, [[GOOD_PROFILE, 0.0]]), "field"),
    "T-Man link past its entries": (framed(5, GOOD_PROFILE, [[GOOD_PROFILE, 0.0]], [1]), "field"),
    "T-Man negative link": (framed(6, GOOD_PROFILE, [[GOOD_PROFILE, 0.0]], [-1]), "field"),
    "T-Man more links than entries": (
        framed(5, GOOD_PROFILE, [[GOOD_PROFILE, 0.0]], [0, 0]),
        "field",
    ),
    "event without its attribute": (
        framed(13, GOOD_PROFILE, 1, [["temp", 1.0]], "city", 5, 0, True, b"", b""),
        "field",
    ),
    "event value out of domain": (
        framed(13, GOOD_PROFILE, 1, [["temp", 99.0]], "temp", 5, 0, True, b"", b""),
        "field",
    ),
    "int up flag": (
        framed(13, GOOD_PROFILE, 1, [["temp", 1.0]], "temp", 5, 0, 1, b"", b""),
        "field",
    ),
    "too many hops": (
        framed(13, GOOD_PROFILE, 1, [["temp", 1.0]], "temp", 5, 5000, True, b"", b""),
        "field",
    ),
    "push with a negative event id": (
        framed(17, GOOD_PROFILE, -1, [["temp", 1.0]], 2, b"", b""),
        "field",
    ),
    "covered list of 3 bytes": (
        framed(13, GOOD_PROFILE, 1, [["temp", 1.0]], "temp", 5, 0, True, b"\x00" * 3, b""),
        "field",
    ),
    "covered list as an array": (
        framed(13, GOOD_PROFILE, 1, [["temp", 1.0]], "temp", 5, 0, True, [1, 2], b""),
        "field",
    ),
    "event copy without its covered lists": (
        framed(13, GOOD_PROFILE, 1, [["temp", 1.0]], "temp", 5, 0, True),
        "field",
    ),
    "pushed list over the cap": (
        framed(17, GOOD_PROFILE, 1, [["temp", 1.0]], 2, b"", b"\x00" * 4 * (MAX_COVERED + 1)),
        "field",
    ),
    "push without hops": (framed(17, GOOD_PROFILE, 1, [["temp", 1.0]]), "field"),
    "push value out of domain": (
        framed(17, GOOD_PROFILE, 1, [["temp", 99.0]], 2, b"", b""),
        "field",
    ),
    "filter without depth": (
        framed(10, GOOD_PROFILE, "temp", [[[[0, 1]], []]], False, 0.0),
        "field",
    ),
    "filter with empty keys": (
        framed(10, GOOD_PROFILE, "temp", [[0, [], []]], False, 0.0),
        "field",
    ),
    "filter with inverted keys": (
        framed(10, GOOD_PROFILE, "temp", [[0, [[5, 1]], []]], False, 0.0),
        "field",
    ),
    "filter box unsorted": (
        framed(
            10,
            GOOD_PROFILE,
            "temp",
            [[0, [[0, 1]], [["temp", [[0, 1]]], ["city", [[0, 1]]]]]],
            False,
            0.0,
        ),
        "field",
    ),
    "filter box repeats": (
        framed(
            10,
            GOOD_PROFILE,
            "temp",
            [[0, [[0, 1]], [["city", [[0, 1]]], ["city", [[0, 1]]]]]],
            False,
            0.0,
        ),
        "field",
    ),
    "fresh not a boolean": (framed(10, GOOD_PROFILE, "temp", [], 1, 0.0), "field"),
    "install sent before the epoch": (
        framed(10, GOOD_PROFILE, "temp", [], True, -1.0),
        "field",
    ),
    "install sent at NaN": (framed(10, GOOD_PROFILE, "temp", [], True, math.nan), "field"),
    "install without fresh": (framed(10, GOOD_PROFILE, "temp", []), "field"),
    "negative filter depth": (
        framed(10, GOOD_PROFILE, "temp", [[-1, [[0, 1]], []]], False, 0.0),
        "field",
    ),
    "too many filters": (
        framed(10, GOOD_PROFILE, "temp", [[0, [[0, 1]], []]] * 65, False, 0.0),
        "field",
    ),
    "negative digest": (framed(11, GOOD_PROFILE, [["temp", -1]]), "field"),
    "refresh repeats an attribute": (
        framed(11, GOOD_PROFILE, [["temp", 1], ["temp", 2]]),
        "field",
    ),
    "withdraw of an unknown attribute": (framed(12, GOOD_PROFILE, ["x"], 0.0), "field"),
    "withdraw without a time": (framed(12, GOOD_PROFILE, ["temp"]), "field"),
    "row request repeats an attribute": (framed(18, GOOD_PROFILE, ["temp", "temp"]), "field"),
    "infinite load": (framed(14, GOOD_PROFILE, math.inf, None, 0.0), "field"),
    "negative forwarding load": (framed(14, GOOD_PROFILE, 1.0, None, -0.5), "field"),
    "NaN forwarding load": (framed(14, GOOD_PROFILE, 1.0, None, math.nan), "field"),
    "load report without forwarding load": (framed(14, GOOD_PROFILE, 1.0, None), "field"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_malformed_datagrams_raise_the_one_error_with_a_reason(name):
    data, reason = BAD[name]
    with pytest.raises(WireError) as err:
        Decoder(SCHEMA).decode_untrusted(data)
    assert err.value.reason == reason, str(err.value)


def test_decoder_refuses_what_is_not_bytes():
    with pytest.raises(WireError):
        Decoder(SCHEMA).decode_untrusted(bytearray(b"\x90"))  # type: ignore[arg-type]


@settings(max_examples=1500, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_arbitrary_bytes_decode_or_raise_wire_error(data):
    for decoder in (Decoder(SCHEMA), Decoder(SCHEMA, KEY)):
        with contextlib.suppress(WireError):
            decoder.decode_untrusted(data)


plain_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["temp", "city", "count", "127.0.0.1:7000", "[::1]:1"]),
    lambda children: st.lists(children, max_size=6),
    max_leaves=40,
)


@settings(max_examples=1500, deadline=None)
@given(st.integers(0, 20), plain_values, st.lists(plain_values, max_size=8))
def test_fuzz_structured_garbage_decodes_or_raises_wire_error(kind, profile, rest):
    for prof_value in (profile, GOOD_PROFILE):
        with contextlib.suppress(WireError):
            Decoder(SCHEMA).decode_untrusted(payload(1, kind, prof_value, *rest))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(sample_messages()))), st.data())
def test_fuzz_mutated_valid_datagrams(index, data):
    raw = bytearray(encode(sample_messages()[index]))
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["flip", "cut", "insert"]))
        pos = data.draw(st.integers(0, max(0, len(raw) - 1)))
        if op == "flip" and raw:
            raw[pos] ^= data.draw(st.integers(1, 255))
        elif op == "cut":
            del raw[pos:]
        else:
            raw[pos:pos] = data.draw(st.binary(min_size=1, max_size=4))
    with contextlib.suppress(WireError):
        Decoder(SCHEMA).decode_untrusted(bytes(raw))


# ------------------------------------------------------------- valid but hostile


def addresses():
    return st.integers(7000, 7010).map(lambda p: f"127.0.0.1:{p}")


subs = st.one_of(
    st.none(),
    st.tuples(st.floats(-50, 50), st.floats(-50, 50)).map(
        lambda t: Subscription.build(SCHEMA, {"temp": (min(t), max(t))})
    ),
)
idents = st.integers(0, RING_MAX)
ages = st.floats(0, 1e6)
# a covered list (content/cover.py): 4-byte tokens
tokens = st.lists(st.integers(0, 2**32 - 1), max_size=MAX_COVERED).map(tuple)
profiles = st.builds(Profile, addresses(), idents, subs, st.integers(0, 10))
gossip = st.lists(st.tuples(profiles, ages), max_size=5).map(
    lambda pairs: (tuple(p for p, _ in pairs), tuple(a for _, a in pairs))
)
intervals = st.lists(
    st.tuples(idents, idents).map(lambda t: (min(t), max(t))), min_size=1, max_size=3
).map(tuple)
attrs = st.sampled_from(["temp", "count", "city"])
key_sets = intervals.map(IntervalSet.from_intervals)
boxes = st.dictionaries(attrs, key_sets, max_size=3).map(lambda d: tuple(sorted(d.items())))
row_filters = st.lists(st.builds(Filter, key_sets, boxes, st.integers(0, 100)), max_size=4).map(
    tuple
)
events = st.builds(
    lambda t, c: Event.build(SCHEMA, {"temp": t, "city": c}), st.floats(-50, 50), st.text()
)
messages = st.one_of(
    st.builds(m.Join, profiles),
    st.builds(m.Ping, profiles),
    st.builds(m.Leave, profiles),
    st.builds(lambda p, g, k=m.JoinReply: k(p, *g), profiles, gossip),
    st.builds(lambda p, g, k=m.Shuffle: k(p, *g), profiles, gossip),
    st.builds(
        lambda p, g, d, k=m.TmanRequest: k(p, *g, tuple(sorted({i % len(g[0]) for i in d}))),
        profiles,
        gossip.filter(lambda g: g[0]),
        st.lists(st.integers(0, 63), max_size=10),
    ),  # fmt: skip
    st.builds(lambda p, g, k=m.TmanReply: k(p, *g), profiles, gossip),
    st.builds(m.Install, profiles, attrs, row_filters),
    st.builds(
        m.Refresh,
        profiles,
        st.lists(st.tuples(attrs, st.integers(0, 2**64 - 1)), unique_by=lambda t: t[0]).map(tuple),
    ),
    st.builds(m.RowRequest, profiles, st.lists(attrs, unique=True).map(tuple)),
    st.builds(m.Withdraw, profiles, st.lists(attrs, unique=True).map(tuple)),
    st.builds(
        m.EventMessage,
        profiles,
        st.integers(0, 2**63 - 1),
        events,
        st.sampled_from(["temp", "city"]),
        idents,
        st.integers(0, 1024),
        st.booleans(),
        tokens,
        tokens,
    ),
    st.builds(
        m.EventPush,
        profiles,
        st.integers(0, 2**63 - 1),
        events,
        st.integers(0, 1024),
        tokens,
        tokens,
    ),  # fmt: skip
    st.builds(m.Have, profiles, st.integers(0, 2**63 - 1)),
    st.builds(m.LoadReport, profiles, st.floats(0, 1e9), st.none() | idents, st.floats(0, 1e9)),
    st.builds(m.HandoverRequest, profiles, idents),
    st.builds(
        m.Handover,
        profiles,
        idents,
        st.lists(st.tuples(attrs, addresses(), ages, row_filters), max_size=3).map(tuple),
    ),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages, min_size=1, max_size=25), st.integers(0, 3))
def test_a_node_survives_any_sequence_of_valid_messages(msgs, ticks_between):
    """What the decoder lets through is type-correct but may be hostile: the
    protocol must take any of it without raising."""
    decoder = Decoder(SCHEMA)
    node = Node("127.0.0.1:7099", SCHEMA, OverlayConfig(friends=2, small_world=2),
                random.Random(1), subscription=SUB)  # fmt: skip
    node.start(0.0, ["127.0.0.1:7000"])
    now = 0.0
    for i, msg in enumerate(msgs):
        now += 0.1
        node.receive(now, decoder.decode_untrusted(encode(msg)))
        if ticks_between and i % ticks_between == 0:
            now += 1.0
            node.tick(now)
    node.tick(now + 1.0)


def test_oversized_rows_are_refused_and_gossip_is_truncated():
    p = prof()
    huge = Filter(IntervalSet.from_intervals((RING_MAX - 4 * i,) * 2 for i in range(64)), (), 0)
    with pytest.raises(OversizeError):
        encode_datagrams(m.Handover(p, 5, tuple(("temp", "127.0.0.1:1", 1.0, (huge,) * 64)
                                                for _ in range(3))))  # fmt: skip
    many = tuple(Profile(f"127.0.0.1:{1000 + i}", i, SUB) for i in range(2000))
    (one,) = encode_datagrams(m.Shuffle(p, many, (0.0,) * 2000))
    got = Decoder(SCHEMA).decode_untrusted(one)
    assert 0 < len(got.profiles) == len(got.ages) < 2000
    assert got.profiles == many[: len(got.profiles)]


@pytest.mark.parametrize(
    "text,expected",
    [("127.0.0.1:7000", ("127.0.0.1", 7000)), ("[::1]:80", ("::1", 80))],
)
def test_addresses_parse_and_format(text, expected):
    assert parse_address(text) == expected
    assert format_address(*expected) == text


@pytest.mark.parametrize(
    "text", ["", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "host:1", "1.2.3.4:x", ":5"]
)
def test_bad_addresses_are_refused(text):
    with pytest.raises(ValueError):
        parse_address(text)


def test_a_batch_encodes_each_message_once_and_keeps_destinations():
    from vinifera.protocol.actions import Send
    from vinifera.wire import encode_sends, frame

    p = prof()
    down = m.EventMessage(p, 1, EVENT, "temp", 5, 2, False)
    up = m.EventMessage(p, 1, EVENT, "temp", 5, 2, True)
    sends = [Send("127.0.0.1:1", down), Send("127.0.0.1:2", down), Send("127.0.0.1:3", up),
             Send("127.0.0.1:4", m.Ping(p))]  # fmt: skip
    out = encode_sends(sends)
    assert [d for d, _ in out] == ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4"]
    assert out[0][1] is out[1][1]  # one message to two places, encoded once
    assert out[2][1] is not out[0][1]
    decoder = Decoder(SCHEMA)
    assert [decoder.decode_untrusted(frame(b[0])).up for _, b in out[:3]] == [False, False, True]
    assert type(decoder.decode_untrusted(frame(out[3][1][0]))) is m.Ping


# ------------------------------------------------------------- hostile families


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "keyed"])
@pytest.mark.parametrize("family", Fuzzer.FAMILIES)
def test_every_fuzz_family_decodes_or_raises_the_one_error(family, key):
    """The families of vinifera.fuzz (the long run is benchmarks/fuzz_decoder.py):
    deep nesting, huge containers and mutations of every kind included."""
    fuzzer, decoder = Fuzzer(SCHEMA, key), Decoder(SCHEMA, key)
    rng = random.Random(family)
    reasons = set()
    for _ in range(1_500):
        try:
            decoder.decode_untrusted(fuzzer.datagram(rng, family))
        except WireError as err:
            reasons.add(err.reason)
    assert reasons  # the family does reach the decoder's checks


@pytest.mark.parametrize("where", ["version", "kind", "profile", "ident", "age", "event id"])
@pytest.mark.parametrize("depth", [11, 999, 1_000, 1_019])  # 1,023 levels in all at most
def test_deep_nesting_anywhere_is_refused_as_too_deep(where, depth):
    deep = b"\x91" * depth + b"\x01"
    parts = {
        "version": [deep, payload(7), payload(GOOD_PROFILE)],
        "kind": [payload(1), deep, payload(GOOD_PROFILE)],
        "profile": [payload(1), payload(7), deep],
        "ident": [payload(1), payload(7), b"\x94" + payload("127.0.0.1:7000") + deep + b"\x00\xc0"],
        "age": [payload(1), payload(3), payload(GOOD_PROFILE),
                b"\x91\x92" + payload(GOOD_PROFILE) + deep],
        "event id": [payload(1), payload(13), payload(GOOD_PROFILE), deep,
                     payload([["temp", 1.0]]), payload("temp"), payload(5), payload(0),
                     payload(True)],
    }[where]  # fmt: skip
    data = bytes([0x90 + len(parts)]) + b"".join(parts)
    with pytest.raises(WireError) as err:
        Decoder(SCHEMA).decode_untrusted(data)
    assert err.value.reason == "depth"


def test_a_profile_heard_again_is_the_same_object_and_its_look_alikes_are_still_refused():
    decoder = Decoder(SCHEMA)
    ping, pong = (
        decoder.decode_untrusted(encode(m.Ping(prof()))),
        decoder.decode_untrusted(encode(m.Pong(prof()))),
    )
    assert ping.profile is pong.profile  # decoded once, remembered
    assert fields(ping.profile) == fields(prof())
    # Equal in Python (12345.0 == 12345, True == 1) but not valid: a
    # remembered profile must not stand in for them.
    plain = ["127.0.0.1:7000", 12345, 3, prof().subscription.to_plain()]
    for bad in ([*plain[:1], 12345.0, *plain[2:]], [*plain[:2], 3.0, plain[3]]):
        with pytest.raises(WireError) as err:
            decoder.decode_untrusted(framed(KINDS[m.Ping], bad))
        assert err.value.reason == "field"
    one = ["127.0.0.1:7000", 1, 1, None]
    assert decoder.decode_untrusted(framed(KINDS[m.Ping], one)).profile.seq == 1
    with pytest.raises(WireError):
        decoder.decode_untrusted(framed(KINDS[m.Ping], ["127.0.0.1:7000", 1, True, None]))


def test_remembered_profiles_are_bounded():
    decoder = Decoder(SCHEMA)
    for port in range(1, 5_000):
        decoder.decode_untrusted(framed(KINDS[m.Ping], [f"127.0.0.1:{port}", port, 0, None]))
    assert 0 < len(decoder._reader._profiles) <= 1_024
    assert decoder._reader._profile_bytes <= 128 * 1024
    # a big profile (a long string in its subscription) is checked every time, not kept
    city = "x" * 600
    sub = Subscription.build(SCHEMA, {"city": (city, city)})
    decoder = Decoder(SCHEMA)
    got = decoder.decode_untrusted(encode(m.Ping(prof(sub=sub))))
    assert got.profile.subscription == sub
    assert len(decoder._reader._profiles) == 0


def _depth(x) -> int:
    return 1 + max(map(_depth, x), default=0) if type(x) is tuple else 0


# Scalars whose encodings hold bytes that also open arrays (0x90-0x9f, 0xdc, 0xdd).
_scalars = st.sampled_from([0x93, 0xDC, -0x6F, 0.0000001, 1e300, "\x9c", 2**40 + 0x9D, None, True])
_nests = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=17).map(tuple), max_leaves=60
)


def test_arrays_opened_by_the_32_bit_header_count_for_the_depth_check():
    # msgpack.packb uses 0xdd only past 65,535 items: built by hand
    data = b"\xdd\x00\x00\x00\x01" * 5 + b"\x01"
    top = msgpack.unpackb(data, use_list=False)
    assert _too_deep(top, data, 4)
    assert not _too_deep(top, data, 5)


@settings(max_examples=400, deadline=None)
@given(_nests.map(lambda x: x if type(x) is tuple else (x,)))
@example((((((1,),),),),) + tuple(range(15)))  # 5 deep, 16 items on top: 0xdc
@example((((((1,),),),),))  # 5 deep, nothing else
def test_the_depth_check_counts_array_bytes_only_as_a_shortcut(top):
    data = msgpack.packb(top)
    limit = 4  # low, so that both sides of the shortcut are reached
    assert _too_deep(top, data, limit) == (_depth(top) > limit)


def test_the_deepest_honest_message_is_not_too_deep():
    # gossip entry -> profile -> subscription -> constraint
    msg = m.TmanReply(prof(), (prof(7001),), (1.0,))
    assert fields(Decoder(SCHEMA).decode_untrusted(encode(msg))) == fields(msg)


@pytest.mark.parametrize(
    "value, expected",
    [
        (None, "None"),
        (1.5, "1.5"),
        (-7, "-7"),
        (10**50, "an int of 167 bits"),
        ("x" * 100, repr("x" * 40) + "..."),
        (((1,),) * 3, "a tuple of 3 items"),
        (b"ab", "a bytes of 2 items"),
        (object(), "a object"),
    ],
)
def test_brief_describes_any_value_in_bounded_space(value, expected):
    assert brief(value) == expected


def test_brief_does_not_walk_a_deep_structure():
    deep: tuple = ()
    for _ in range(100_000):
        deep = (deep,)
    assert brief(deep) == "a tuple of 1 items"


@pytest.mark.skipif(native.in_use(), reason="compiled classes have no signatures")
def test_every_message_kind_is_built_from_its_slots_in_order():
    """benchmarks/scaling.py copies messages through their constructors
    (compiled classes have no other way): parameters = slots, base first."""
    for cls in KINDS:
        slots = [s for k in reversed(cls.__mro__) for s in getattr(k, "__slots__", ())]
        assert list(inspect.signature(cls.__init__).parameters)[1:] == slots, cls.__name__
