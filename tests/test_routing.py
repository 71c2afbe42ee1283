"""Algorithm 2 as a pure function: showering and greedy routing over a
synthetic ring where the truth is known."""

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from vinifera.protocol.routing import MINE, RouteView, arc_set
from vinifera.ranges import IntervalSet
from vinifera.ring import RING_MAX, RING_SIZE, in_arc


def view_of(
    ring: list[int], me: int, links: list[int], overshoot: int = 0, links_of=None
) -> RouteView:
    """`links_of` (every node's long links): with it, the view routes rows
    with look-ahead over the true links of its links."""
    ring = sorted(ring)
    i = ring.index(me)
    pred = ring[i - 1]
    succ = ring[(i + 1) % len(ring)]
    known = {(x, x) for x in links} | {(pred, pred), (succ, succ)}
    if links_of is None:
        return RouteView(me, pred, (succ, succ), known, overshoot)

    def ring_links(y):
        j = ring.index(y)
        return {ring[j - 1], ring[(j + 1) % len(ring)]}

    hops = {y: tuple(sorted(set(links_of[y]) | ring_links(y))) for y, _ in known}
    return RouteView(me, pred, (succ, succ), known, overshoot, hops, rows_lookahead=True)


def owner(ring: list[int], key: int) -> int:
    """The true rendezvous: first node at or after key, clockwise."""
    for x in sorted(ring):
        if x >= key:
            return x
    return min(ring)


def test_arc_set_wraps():
    assert arc_set(10, 20) == IntervalSet.of(11, 20)
    assert arc_set(RING_MAX - 5, 3) == IntervalSet.from_intervals(
        [(0, 3), (RING_MAX - 4, RING_MAX)]
    )
    assert arc_set(7, 7).measure() == RING_MAX + 1


def test_split_example_showers_per_known_node():
    # ring 100..900, node 300 knows 500 and 700 inside the range [450, 800]
    ring = [100, 200, 300, 400, 500, 600, 700, 800, 900]
    v = view_of(ring, 300, [500, 700, 900])
    parts = v.split(IntervalSet.of(450, 800))
    assert parts[400] == IntervalSet.of(450, 499)  # greedy: closest preceding = succ 400
    assert parts[500] == IntervalSet.of(500, 699)
    assert parts[700] == IntervalSet.of(700, 800)
    assert MINE not in parts


def test_split_to_the_nearest_known_node():
    ring = [100, 200, 300, 400, 500, 600, 700, 800, 900]
    v = view_of(ring, 300, [500, 700, 900], overshoot=1)
    parts = v.split(IntervalSet.of(450, 800))
    assert parts[400] == IntervalSet.of(450, 450)  # half-way between 400 and 500
    assert parts[500] == IntervalSet.of(451, 600)
    assert parts[700] == IntervalSet.of(601, 800)  # half-way to 900 is 800
    assert MINE not in parts
    # keys just before our predecessor go back to it, not round the ring
    assert v.split(IntervalSet.of(150, 199)) == {200: IntervalSet.of(150, 199)}
    assert view_of(ring, 300, [500, 700, 900]).split(IntervalSet.of(150, 199)) == {
        900: IntervalSet.of(150, 199)
    }
    assert v.next_hop(150) == 900  # one key (an event's up copy): clockwise


def test_split_overshoots_only_to_a_node_that_many_times_nearer():
    ring = [100, 200, 300, 400, 500, 600, 700, 800, 900]
    v = view_of(ring, 300, [500, 700, 900], overshoot=4)
    # the gap 400..500: keys up to 400 + 100 * 4 // 5 = 480 stay with 400;
    # 500..700 (600 is not known): up to 660 with 500
    parts = v.split(IntervalSet.of(450, 800))
    assert parts[400] == IntervalSet.of(450, 480)
    assert parts[500] == IntervalSet.of(481, 660)
    assert parts[700] == IntervalSet.of(661, 800)
    # just before the predecessor: 50 back against almost the whole ring on
    assert v.split(IntervalSet.of(150, 199)) == {200: IntervalSet.of(150, 199)}


def test_split_keeps_mine_and_gives_succ_its_arc():
    ring = [100, 200, 300, 400]
    v = view_of(ring, 300, [])
    parts = v.split(IntervalSet.of(250, 350))
    assert parts[MINE] == IntervalSet.of(250, 300)
    assert parts[400] == IntervalSet.of(301, 350)


def test_next_hop_single_key():
    ring = [100, 200, 300, 400, 500, 600]
    v = view_of(ring, 200, [500])
    assert v.next_hop(150) is MINE
    assert v.next_hop(250) == 300
    assert v.next_hop(550) == 500
    assert v.next_hop(450) == 300  # closest preceding known node of 450 is the successor


def route_everywhere(ring, links_of, ranges, overshoot=0, ahead=False):
    """Route `ranges` from ring[0] through the whole synthetic overlay;
    return {rendezvous: keys it ended with} and the max hop count."""
    views = {x: view_of(ring, x, links_of[x], overshoot, links_of if ahead else None) for x in ring}
    ended: dict[int, IntervalSet] = {}
    frontier = [(ring[0], ranges, 0)]
    max_hops = 0
    while frontier:
        node, part, hops = frontier.pop()
        assert hops < 4 * len(ring), "routing loop"
        max_hops = max(max_hops, hops)
        for hop, sub in views[node].split(part).items():
            if hop is MINE:
                ended[node] = ended.get(node, IntervalSet()) | sub
            else:
                frontier.append((hop, sub, hops + 1))
    return ended, max_hops


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(2, 40),
    seed=st.integers(0, 10_000),
    lo=st.integers(0, RING_MAX),
    width=st.integers(0, RING_MAX),
    overshoot=st.sampled_from([0, 1, 2, 16, 1000]),
    ahead=st.booleans(),
)
def test_every_key_of_a_range_ends_at_its_true_rendezvous(n, seed, lo, width, overshoot, ahead):
    """With or without look-ahead over the links' links (rows_lookahead)."""
    rng = random.Random(seed)
    ring = sorted(set(rng.getrandbits(64) for _ in range(n)))
    links_of = {x: rng.sample(ring, min(3, len(ring))) for x in ring}
    hi = min(RING_MAX, lo + width)
    ended, _ = route_everywhere(ring, links_of, IntervalSet.of(lo, hi), overshoot, ahead)
    # the pieces partition the range ...
    total = IntervalSet()
    for node, keys in ended.items():
        assert not (total & keys), "a key reached two rendezvous nodes"
        total = total | keys
        # ... and each piece ended where it belongs
        for a, b in keys.intervals:
            assert owner(ring, a) == node and owner(ring, b) == node
            assert in_arc(a, ring[ring.index(node) - 1], node)
    assert total == IntervalSet.of(lo, hi)


def test_single_key_routing_reaches_the_owner_and_progresses():
    rng = random.Random(5)
    ring = sorted(rng.getrandbits(64) for _ in range(200))
    links_of = {x: rng.sample(ring, 6) for x in ring}
    views = {x: view_of(ring, x, links_of[x]) for x in ring}
    for _ in range(200):
        key = rng.getrandbits(64)
        node, hops = rng.choice(ring), 0
        while (nxt := views[node].next_hop(key)) is not MINE:
            node, hops = nxt, hops + 1
            assert hops < 200
        assert node == owner(ring, key)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32), st.integers(0, RING_MAX))
def test_successor_of_is_the_first_known_node_at_or_after_the_key(seed, key):
    rng = random.Random(seed)
    ring = sorted(rng.sample(range(0, RING_MAX, 2**50), 30))
    me = ring[seed % len(ring)]
    view = view_of(ring, me, rng.sample(ring, 8))
    known = sorted(set(view.idents))
    expect = next((x for x in known if x >= key), known[0])
    succ = view.succ
    if in_arc(key, me, succ):
        expect = succ  # the successor's arc: it is the rendezvous
    assert view.successor_of(key) == expect


def weight(x: int, key: int, overshoot: int) -> int:
    """routing.py's W: clockwise distance to the key from before it, or
    `overshoot` times the distance back to it from after it."""
    before = (key - x) % RING_SIZE
    return before if overshoot == 0 else min(before, overshoot * ((x - key) % RING_SIZE))


def least_weight_known(view: RouteView, key: int, overshoot: int) -> int:
    """The known node of least weight; on a tie the one before the key."""
    return min(view.idents, key=lambda x: (weight(x, key, overshoot), (key - x) % RING_SIZE))


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    key=st.integers(0, RING_MAX),
    width=st.integers(0, 2**40),
    overshoot=st.integers(0, 64),
)
def test_split_sends_each_key_to_the_known_node_of_least_weight(seed, key, width, overshoot):
    rng = random.Random(seed)
    ring = sorted(set(rng.getrandbits(64) for _ in range(rng.randint(2, 30))))
    me = rng.choice(ring)
    view = view_of(ring, me, rng.sample(ring, min(5, len(ring))), overshoot)
    hi = min(RING_MAX, key + width)
    for hop, keys in view.split(IntervalSet.of(key, hi)).items():
        for a, b in keys.intervals:
            for k in {a, b, (a + b) // 2}:
                if hop is MINE:
                    assert in_arc(k, view.pred, me)
                elif in_arc(k, me, view.succ):
                    assert hop == view.succ
                else:
                    assert hop == least_weight_known(view, k, overshoot)
                    # lighter than we are: the walk ends (see routing.py)
                    assert weight(hop, k, overshoot) < weight(me, k, overshoot)


# ----------------------------------------------------------------- look-ahead


def test_look_ahead_prefers_the_link_whose_link_lies_nearest_before_the_key():
    # 300 knows 400 (succ), 500 and 700; the key is 890. Plain greedy: 700.
    # Look-ahead: 500 links to 880, which 700's links (710, 720) do not beat.
    known = {(400, 400), (500, 500), (700, 700), (200, 200)}
    hops = {500: (600, 880), 700: (710, 720), 400: (500,)}
    v = RouteView(300, 200, (400, 400), known, 0, hops)
    assert RouteView(300, 200, (400, 400), known).next_hop(890) == 700
    assert v.next_hop(890) == 500
    # a link whose successor is the key's rendezvous wins at once: 700's
    # successor 710 owns 705
    assert v.next_hop(705) == 700
    # nothing is ever chosen past the key, and a link's own link past the
    # key does not count: 500's 880 is past 650
    assert v.next_hop(650) == 500  # 600 via 500 leaves 50; 500 itself 150
    assert v.next_hop(450) == 400  # 400's link 500 is past it: its successor owns it


def test_shortcuts_jump_only_nearer_than_any_link_or_its_links():
    known = {(400, 400), (500, 500), (200, 200)}
    v = RouteView(300, 200, (400, 400), known, 0, {500: (600,)})
    shortcuts = ([150, 850], [150, 850])
    assert v.up_hop(880, shortcuts) == 850  # 30 before the key; 500's 600: 280
    assert v.up_hop(620, shortcuts) == 500  # 850 is past it, 150 behind us
    assert v.up_hop(350, shortcuts) == 400  # the successor's own keys
    assert v.up_hop(250, shortcuts) is MINE


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.booleans(), st.booleans())
def test_look_ahead_and_shortcuts_always_end_at_the_owner(seed, ahead, jumps):
    """Over a random consistent ring with random long links (and random
    shortcuts), an up copy's next hops progress clockwise and end at the
    key's owner, with or without look-ahead."""
    rng = random.Random(seed)
    ring = sorted({rng.randrange(RING_SIZE) for _ in range(rng.randint(3, 40))})
    links = {x: set(rng.sample(ring, min(4, len(ring)))) - {x} for x in ring}
    views = {}
    for i, x in enumerate(ring):
        pred, succ = ring[i - 1], ring[(i + 1) % len(ring)]
        mine = links[x] | {pred, succ}
        known = {(y, y) for y in mine}
        hops = {y: tuple(sorted(links[y] | {ring[(ring.index(y) + 1) % len(ring)]}))
                for y in mine} if ahead else None  # fmt: skip
        views[x] = RouteView(x, pred, (succ, succ), known, 0, hops)
    for _ in range(20):
        key = rng.randrange(RING_SIZE)
        cur, steps = rng.choice(ring), 0
        while True:
            v = views[cur]
            if jumps:
                sc = sorted(rng.sample(ring, min(5, len(ring))))
                hop = v.up_hop(key, (sc, sc))
            else:
                hop = v.next_hop(key)
            if hop is MINE:
                break
            assert in_arc(hop, cur, key) or hop == owner(ring, key)  # never past the key
            cur, steps = hop, steps + 1
            assert steps <= len(ring)
        assert cur == owner(ring, key)
