"""Protocol configuration: every knob of the overlay, and why it exists.

Every duration is in gossip periods (one period: one Cyclon shuffle and one
T-Man exchange; one round of the simulator). `OverlayConfig.period` is the
length of a period in the unit of the `now` the driver passes in (seconds
for the daemon, 1 for the simulator, whose clock counts rounds); the protocol
turns periods into that unit in one place, `OverlayConfig.durations()`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import NamedTuple


class Durations(NamedTuple):
    """The overlay's durations in the driver's time unit (periods x period)."""

    probe_after: float
    stale_after: float
    transit: float
    departed_memory: float
    verify_memory: float
    answer_within: float
    silent_memory: float
    young_for: float


@dataclass(frozen=True, slots=True)
class OverlayConfig:
    # Length of a gossip period in the driver's time unit (the daemon: seconds).
    period: float = 1.0
    # Cyclon view size: big enough that the random graph stays connected under
    # heavy churn (Cyclon's paper uses 20 for 10^4-10^5 nodes).
    view_size: int = 20
    # Cyclon shuffle length: descriptors swapped per shuffle.
    shuffle_length: int = 8
    # Routing links (paper Sec. IV-B): 2 ring links plus these. The defaults
    # are Vinifera's mix (PROFILES["vinifera"]), so a driver built from
    # OverlayConfig() runs what the tools and the daemon run; the paper's
    # final configuration is small_world=0, friends=ceil(log2 N)-2, which
    # over identifiers inside subscriptions routes at ~28 hops
    # (docs/decisions/links.md, "The link mix").
    small_world: int = 4
    friends: int = 4
    # Friend slots left empty (no candidate overlaps us) are lent to
    # small-world links so that the link budget is always used.
    lend_unused_friend_slots: bool = True
    # Once the identifier sample is full, a small-world slot keeps the point
    # it aims at while the sample ranks it within this many octaves of the
    # rank it was drawn for (tman.SmallWorldAims); 0 aims every period
    # afresh at the sample's member of that rank (docs/decisions/links.md,
    # "Small-world aims").
    small_world_aim_octaves: int = 2
    # Small-world links shorter than the rank sample can see: the sample's
    # nearest member clockwise is about N / RANK_SAMPLE_SIZE nodes away, so
    # without this no small-world link is shorter than that, and the last
    # stretch of every route walks ring links (tman.extended_rank_targets).
    # N = 10,000, skewed: path 10.36 -> 6.8 (docs/decisions/delivery-
    # efficiency.md). The baseline keeps it off (PROFILES["baseline"]).
    small_world_below_sample: bool = True
    # Ring neighbours remembered beyond the two ring links (Chord's successor
    # list): candidates, not links, so they cost no traffic, but when a ring
    # neighbour dies its replacement is already known.
    ring_backups: int = 3
    # Descriptors sent in one T-Man exchange (routing table first, then Cyclon view).
    tman_message_size: int = 24
    # T-Man's active exchange backs off while the links hold (Trickle, RFC
    # 6206): each exchange after which the ring and friend links did not
    # change doubles the wait before the next, up to this many periods; a
    # change of them brings it back to every period (small-world links are
    # random draws, not converged). 1: every period (T-Man as published).
    tman_backoff_max: int = 1
    # A link not heard from for this long is probed with a ping each period
    # (twice before failure_timeout with the defaults).
    probe_after: float = 3.0
    # The longest a node keeps a neighbour it has no evidence of life from
    # (directly or through fresher gossip); older gossip is never believed.
    # Checked once per period, so links go when silence exceeds
    # failure_timeout - 1 period: nobody keeps a dead neighbour longer than this.
    failure_timeout: float = 5.0
    # Assumed upper bound on one-way delay (periods; the daemon sets it from
    # seconds: min(0.1 s, period / 4)). Evidence is back-dated by it, so
    # a message in flight when its sender died never makes the sender look
    # alive after its death, however many gossip hops the news takes.
    transit_allowance: float = 0.1
    # Algorithm 1 hysteresis: another attribute becomes primary only when its
    # overlap count beats the current one by this factor ...
    primary_margin: float = 1.25
    # ... for this many consecutive periods.
    primary_patience: int = 3
    # How long a gracefully departed node is refused as a candidate, unless it
    # is heard from again.
    departed_memory: float = 10.0
    # Bootstrap addresses contacted per join attempt.
    join_fanout: int = 3
    # A bootstrap node we never heard from (its process was not listening
    # yet, or the datagram was lost) gets our Join again every period for
    # this many periods, even once others have let us in: otherwise a node
    # that knows nobody itself (the first of a swarm) can stay alone.
    join_retries: int = 10
    # Log a `links` record whenever the routing table changes (the simulator
    # turns this off for speed when no logs are written).
    log_links: bool = True
    # Gossip is believed only so far (vinifera/protocol/vetting.py): anyone can
    # gossip made-up profiles. Routing links go only to nodes that answered
    # us directly within verify_memory; a better candidate that has not is
    # pinged first (64 fakes pushed at one node took 9 of its 10 links).
    vet_links: bool = True
    verify_memory: float = 30.0
    # For this long after it starts, a node does not hold the small-world
    # link that stood in for an untried choice: its few vetted candidates
    # make poor stand-ins, and held (the octave rule) they stayed. On Fig.
    # 3's skewed run, where every node starts at once, 5% less overhead over
    # six seeds; not holding them at any age cost 1% (docs/decisions/links.md,
    # "Young nodes let their stand-ins go").
    young_for: float = 50.0
    # A node asked (shuffle, trial ping) that never answered us, not within
    # answer_within, is ignored in gossip for silent_memory.
    answer_within: float = 2.0
    silent_memory: float = 30.0
    # Entries one source host's gossip may hold at once in the Cyclon view
    # (the fakes above took 15 of 20 entries).
    gossip_per_source: int = 4

    def __post_init__(self) -> None:
        if self.period <= 0:
            raise ValueError("period must be positive")
        if self.view_size < 1 or self.shuffle_length < 1:
            raise ValueError("view_size and shuffle_length must be >= 1")
        if self.shuffle_length > self.view_size:
            raise ValueError("shuffle_length cannot exceed view_size")
        if self.small_world < 0 or self.friends < 0:
            raise ValueError("small_world and friends must be >= 0")
        if not 0 <= self.small_world_aim_octaves <= 8:
            raise ValueError("small_world_aim_octaves must be between 0 and 8")
        if self.failure_timeout < self.probe_after + 1:
            raise ValueError("failure_timeout must be at least probe_after + 1 period")
        if self.transit_allowance < 0:
            raise ValueError("transit_allowance must be >= 0")
        if self.primary_margin < 1.0 or self.primary_patience < 1:
            raise ValueError("primary_margin must be >= 1 and primary_patience >= 1")
        if min(self.verify_memory, self.answer_within, self.silent_memory) <= 0:
            raise ValueError("verify_memory, answer_within and silent_memory must be positive")
        if self.young_for < 0:
            raise ValueError("young_for must be >= 0")
        if self.gossip_per_source < 1:
            raise ValueError("gossip_per_source must be >= 1")
        if self.tman_backoff_max < 1:
            raise ValueError("tman_backoff_max must be >= 1")

    @property
    def stale_after(self) -> float:
        """Silence after which evidence no longer counts (see
        failure_timeout), in periods."""
        return self.failure_timeout - 1

    def durations(self) -> Durations:
        """The durations above in the driver's time unit."""
        p = self.period
        return Durations(
            probe_after=self.probe_after * p,
            stale_after=self.stale_after * p,
            transit=self.transit_allowance * p,
            departed_memory=self.departed_memory * p,
            verify_memory=self.verify_memory * p,
            answer_within=self.answer_within * p,
            silent_memory=self.silent_memory * p,
            young_for=self.young_for * p,
        )

    @property
    def max_links(self) -> int:
        """The degree bound: distinct outgoing routing links."""
        return 2 + self.small_world + self.friends

    def with_(self, **changes) -> OverlayConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return asdict(self)


# The most node tokens an event copy carries per covered list
# (ContentConfig.covered is at most this; the decoder refuses longer lists).
MAX_COVERED = 64


@dataclass(frozen=True, slots=True)
class ContentConfig:
    # "value": one rendezvous per attribute value, the successor of its
    # order-preserving key (Vinifera). "attribute": one rendezvous per
    # attribute, at hash(attribute name) (the baseline).
    rendezvous: str = "value"
    # "subscription": a node places its identifier inside its own range on
    # its primary attribute, so it is a rendezvous for what it wants itself
    # (subscription awareness). "random": uniform (the baseline).
    identifier: str = "subscription"
    # Install in the primary attribute's tree (Algorithm 1); otherwise in
    # the first attribute the subscription constrains (the baseline).
    use_primary: bool = True
    # Where a row's keys outside (pred, succ] go next (routing.py,
    # `RouteView.split`): to the known node before each key (clockwise,
    # Chord's closest preceding node), unless the known node after it is
    # this many times nearer the key: then there, to come back
    # counterclockwise. 0: never (clockwise, Chord); 1: the nearest either
    # side. Clockwise sends the keys just before a subscriber (its identifier
    # lies inside its range) the long way round the ring, through nodes that
    # want none of its events; nearest keeps the rows among the nodes around
    # their keys, but approaches a key from the side the events' clockwise
    # up copies do not, so they meet later and paths grow. 16 keeps most of
    # nearest's lower overhead with clockwise's paths on Fig. 3's runs: a
    # third of the overhead, 7-10% less cost, 4% fewer messages
    # (docs/decisions/rows-and-routing.md, "Rows that overshoot a key only
    # to a node sixteen times nearer"); under churn (48 h, four seeds) it
    # misses 3% more pairs than clockwise. The baseline: 0, its long links
    # all point clockwise.
    rows_overshoot: int = 16
    # A node keeps its rows at each next hop alive with one digest per row
    # this often (periods), desynchronized between nodes. The keep-alive
    # also repairs a lost or stale row (the receiver asks for it again), so
    # this is also how long such a repair can take.
    keep_alive_every: float = 3.0
    # A CRT row not kept alive for this long expires (periods): a crashed
    # neighbour's rows go after it. Tolerates one lost keep-alive.
    crt_expiry: float = 7.0
    # Content a row's replacement drops stays matchable this long (periods):
    # make-before-break while a route that moved is being built.
    dropped_expiry: float = 3.0
    # Rows that arrive within this long (periods) of the last re-route an
    # arrival caused wait for the next re-route after it (a later arrival,
    # or the tick): a burst of Installs is re-routed once. 0: every
    # arrival re-routes at once. 0.5 rather than 0: over three seeds it
    # cut the CPU of a flash-crowd start by a fifth and the 48 h replay's
    # missed pairs by a tenth, for under 2% of Fig. 3's overhead; 1.0 cost
    # 5% of the skewed overhead for no more (docs/decisions/rows-and-routing.md,
    # "Arrivals re-routed at most twice a period").
    arrival_route_gap: float = 0.5
    # A new node installs its own subscription once its routing view has held
    # still for one period, but no sooner than `install_min_delay` and no
    # later than `install_max_delay` periods after it started: installing
    # while T-Man is still reshuffling the links re-routes everything each
    # period (and cascades down every path) for no gain. 4 rather than 8:
    # under the Skype trace's churn a newcomer's view rarely holds still,
    # and waiting 8 periods lost its first events (48 h: hit ratio 0.9941
    # -> 0.9969; docs/decisions/rows-and-routing.md, "A newcomer installs
    # within four periods").
    install_min_delay: float = 2.0
    install_max_delay: float = 4.0
    # Filters per CRT row: the cap that keeps a node's state and traffic
    # independent of the number of subscribers behind a link. With one
    # attribute every row folds into one filter exactly; past the cap,
    # filters merge approximately (more traffic, never a missed event).
    max_filters_per_row: int = 32
    # Intervals per key set in a filter (the smallest gaps are filled past it).
    max_intervals: int = 16
    # A filter that has come this many hops from any subscriber is not
    # passed on: the loop breaker of aggregated soft state (a route loop
    # between stale views cannot feed itself forever). Far above real
    # installation paths, which follow the ring's routing (O(log N) hops).
    max_install_hops: int = 64
    # Rows per attribute (neighbours that may ask something of us).
    max_rows_per_attribute: int = 4096
    # An event copy that has travelled this far is dropped: a loop guard, set
    # far above real paths (a mix without long links can need dozens of hops).
    max_event_hops: int = 255
    # How long event ids are remembered for duplicate suppression (periods).
    dedupe_memory: float = 30.0
    # `Up` copies are acknowledged (the receiver answers with a pong); one
    # not acknowledged by the sender's next tick went to a node that is
    # probably dead, and is sent once more to the next hop of a routing view
    # without that node (a silent ring neighbour's heir). Without this a
    # crashed relay swallows events until failure_timeout (a trace replay
    # lost ~5% of deliveries that way, most on the way up).
    event_retry: bool = True
    # How many times one up copy is retried, each time around every hop
    # tried so far. A mass departure (the Skype trace's at 18 h) leaves
    # several dead links per node until failure_timeout, where one retry
    # can meet a second dead node: 3 instead of 1 missed 17% fewer pairs
    # over the first 24 h on five seeds (docs/decisions/churn.md, "Up copies
    # retried until one is acknowledged"). Fig. 3's static runs never retry
    # twice (the same runs to the message).
    event_retries: int = 3
    # Catch-up: a node keeps the events it handled for this many periods
    # (0: off), and when a neighbour's CRT row changes, sends it those
    # recent events the row now matches, unless that neighbour already had
    # them. A newcomer's subscription (or one re-routed
    # after a crash) reaches the tree a few periods after it joined; without
    # this it misses what was published meanwhile (a trace replay at 240 s
    # per round lost 73% of the pairs of subscribers younger than 5 rounds).
    # Matches the delivery deadline of docs/experiments.md (5 rounds).
    # The same memory hands a new predecessor found inside our arc the
    # recent events we were the rendezvous of for its keys (Forest.hand_over),
    # and sends a row that merely moved to us the events we took for ours
    # while no row wanted them (Forest.catch_up).
    catch_up: float = 5.0
    # An event published before the node's first tick or without a ring
    # neighbour (its ring then is what its join reply offered, or nothing)
    # could take its key as the node's own and go nowhere: it waits, up to
    # this many periods, for the first tick with a predecessor (0: no
    # wait). The first 12 h of the Skype trace lost two events whole that
    # way, 386 of 725 missed pairs (docs/decisions/churn.md, "An event waits
    # for the ring"). Up copies received then wait the same way: a node back
    # at once under its old address gets them from neighbours that still
    # know its old self ("Up copies that reach a node without a ring").
    publish_hold: float = 5.0
    # Subscription awareness in delivery: a node that handles an event sends
    # it straight to its links whose subscription (known from their
    # profile) matches (`EventPush`), besides the tree copies, once per
    # event; the tree still delivers to everyone, so pushes only make a
    # delivery earlier. The baseline has no subscription awareness.
    push: bool = True
    # ... to at most this many of the matching links (None: all), drawn at
    # random. Past 5 a push mostly races a copy another branch brings:
    # N = 1,000, skewed, seed 1, all against 5: redundancy 0.210 -> 0.182,
    # path 4.81 -> 4.94; 3: 0.116 but 5.48 (delivery-efficiency.md).
    push_fanout: int | None = 5
    # ... also on the route up (else only nodes off the route draw, and the
    # route's nodes push to every matching link: seeds 1-3, skewed path
    # 4.94 / 5.11 / 4.98 -> 4.91 / 4.95 / 4.92, redundancy at most 0.199).
    push_fanout_up: bool = False
    # A push also does the tree's work at its receiver: the first copy of an
    # event to reach a node, pushed or not, sends it down the node's matching
    # CRT rows, so the subscribers below a pushed node get it from there
    # instead of waiting for the tree copy to come down to it.
    push_tree_work: bool = True
    # A node that handles a tree copy of an event does the down work of
    # every attribute's tree at once, not only of the copy's (as a pushed
    # node does). A pushed node skips its sender in every tree, which is
    # sound only if every pusher has done every tree's work: without this,
    # at d = 2 (N = 1,000, skewed, seed 1) a subscriber whose a0 branch
    # hung below a node that pushed from an a1 copy missed an event
    # (docs/decisions/delivery-efficiency.md). No effect at d = 1.
    every_tree_at_once: bool = True
    # A node that gets an event tells each next hop whose row from it
    # matches the event, but the copy's sender, that it has it (`Have`);
    # that parent then sends it no copy. Sound with push_tree_work and
    # every_tree_at_once: whoever has an event has done every tree's work.
    have_notices: bool = False
    # Each event copy carries the nodes its senders sent the event to (and
    # the senders themselves), and those they pushed it to: at most this
    # many tokens per list, the latest kept (0: none; content/cover.py). A
    # node sends no copy, tree or push, to a node in them. Sound like
    # have_notices: whoever is sent an event does every tree's work.
    covered: int = 16
    # ... nor pushes to a link of a covered node whose links we know
    # (Overlay.next_hops): that node pushed to its matching links.
    push_skip_covered_links: bool = True
    # A pushed node is covered for tree copies too (else for pushes only).
    covered_pushes_stop_tree: bool = True
    # Under congestion a node's first copy of an event, if a push, gives way
    # past capacity_push_share like any push (True), or takes its slot
    # (False): with covered pushes stopping the tree, a dropped first push
    # may be the only copy the node was going to get.
    capacity_new_pushes_give_way: bool = False
    # Who pushes: "any" node the first time it handles an event; "up": the
    # publisher and the nodes that handle an up copy (the route to the
    # rendezvous), and others only as push_max_hops allows. With "up" and 3,
    # N = 1,000, skewed, seed 1: cost 1.61 and path 4.75 against "any" with
    # fanout 3: 3.87 and 6.62 (docs/decisions/delivery-efficiency.md).
    push_from: str = "up"
    # Push (besides "up"'s route) only copies that have come fewer hops
    # than this; None: any ("any"), none ("up").
    push_max_hops: int | None = 3
    # Whatever push_from and push_max_hops say, a node that handles an event
    # pushes it to matching links that became links less than this many
    # periods ago (0: no): a newcomer's subscription is not in the tree for
    # its first periods, and the nodes that just took it as a link know it.
    # Skype trace, first 48 h: hit 0.9976 (0) -> 0.9987 (10) -> 0.9992 (30),
    # cost 1.92 -> 2.52 -> 3.21; N = 1,000 without churn, cost +1.5%
    # (docs/decisions/delivery-efficiency.md).
    push_new_links: float = 30.0
    # Whether a small-world link counts as new for push_new_links. Off (the
    # default), only new ring and friend links do: with
    # small_world_below_sample, small-world links move among old nodes often
    # enough to make those pushes redundant copies (N = 1,000, skewed, seed
    # 1: cost 1.83 -> 1.68; Skype 48 h hit ratio 0.999102).
    push_new_small_world: bool = False
    # Do not push to a link that is also a link of the node the copy came
    # from (its links we know with look-ahead): that node pushed to its
    # matching links itself.
    push_skip_senders_links: bool = True
    # Congestion model: at most this many event messages handled per period
    # (None: unlimited); the excess is dropped and logged.
    capacity: int | None = None
    # Priorities under congestion: a push (an extra, never the only way an
    # event reaches a subscriber) is dropped once this share of `capacity`
    # is used in the period, so that tree copies keep the rest (None: every
    # copy counts alike). Fig. 4f, seed 1, skewed: hit 0.991 / 0.872 / 0.718
    # at 1X / 3X / 5X without, 1.000 / 0.927 / 0.776 with 0.5; random 5X
    # 0.960 -> 0.984 (docs/decisions/delivery-efficiency.md).
    capacity_push_share: float | None = 0.5
    # ... and so does, past the same share, a down copy of an event we have
    # and whose down work in its tree is done (a redundant copy: handling it
    # would do nothing). Up copies always take their slot (routing work).
    capacity_duplicates_give_way: bool = True
    # Up copies choose their next hop by two-hop progress: the link through
    # which some link of that link lies nearest before the key, or the link
    # whose successor is the key's rendezvous; without a link's links, the
    # link itself. Never past the key, so routing still ends.
    route_lookahead: bool = True
    # The rows of installation route by two-hop progress too: a range is cut
    # also at our links' links, each part going to the link that reaches its
    # point, so that trees are shallower. Off: skewed path 5.01 against
    # 5.24 (seed 1), but 2.4x the Installs and 1.6x the CPU under the Skype
    # trace's churn (docs/decisions/delivery-efficiency.md).
    rows_lookahead: bool = False
    # Up copies may also jump to a node we know but do not link to
    # (Overlay.shortcuts), when it lies nearer before the key than any link
    # (or look-ahead two-hop point) does ...
    route_shortcuts: bool = True
    # ... also to one that has not answered us yet (fresh gossip): an up
    # copy to a node that is not there is retried around it at the next
    # tick (event_retry). N = 1,000: route 6.0 -> 5.5 hops.
    shortcuts_unverified: bool = True
    # An up copy at a node that does not want the event goes straight to a
    # node we know (link or shortcut) that wants it and lies between us and
    # the key, the one nearest the key: it enters the subscribers' cluster
    # at once, and there the route's pushes start.
    route_to_interest: bool = True
    # Karger-Ruhl identifier balancing.
    balancing: bool = True
    # What counts as rendezvous load: "uninterested" (events we are the
    # rendezvous of but do not want) or "all" events we are the rendezvous of.
    # With subscription-placed identifiers almost every rendezvous wants its
    # events, so only "all" sees the hot spots of a skewed workload.
    balance_load: str = "all"
    # Move when the successor's rendezvous load exceeds ours by more than
    # this many events per period (and is more than twice ours).
    balance_beta: float = 0.2
    # Load is measured over this many periods.
    balance_window: float = 10.0
    # After a move, wait this long before the next (loads must re-settle).
    balance_cooldown: float = 10.0
    # Part of balancing: a node whose forwarding load exceeds its
    # successor's by more than balance_beta and by more than this factor
    # skips pushes that would be its only forwarding of an event.
    shed_pushes: bool = True
    shed_ratio: float = 2.0
    # ... but never the push of an event that has already travelled this many
    # hops: it is late, and the push may be its short cut to a subscriber.
    # Without it one pair of 24,402 missed its deadline (N = 1,000, random,
    # K_f = 8: ring-following trees of up to 82 hops). With the default
    # mix it keeps 0 pushes per run at N = 300 and 6-18 at N = 1,000
    # (docs/decisions/pushes-and-balancing.md, "Far-travelled pushes are
    # never shed"); at 16 it also fired at N = 300.
    shed_max_hops: int = 24

    def __post_init__(self) -> None:
        if self.rendezvous not in ("value", "attribute"):
            raise ValueError("rendezvous must be 'value' or 'attribute'")
        if self.identifier not in ("subscription", "random"):
            raise ValueError("identifier must be 'subscription' or 'random'")
        if self.keep_alive_every < 1.0 or self.crt_expiry <= self.keep_alive_every:
            raise ValueError("keep_alive_every must be >= 1 and crt_expiry must exceed it")
        if self.dropped_expiry < 0:
            raise ValueError("dropped_expiry must be >= 0")
        if not 0 <= self.arrival_route_gap <= 1:
            raise ValueError("arrival_route_gap must be between 0 and 1 (periods)")
        if self.max_filters_per_row < 1 or self.max_intervals < 1:
            raise ValueError("max_filters_per_row and max_intervals must be >= 1")
        if self.max_install_hops < 1:
            raise ValueError("max_install_hops must be >= 1")
        if self.event_retries < 0:
            raise ValueError("event_retries must be >= 0")
        if self.rows_overshoot < 0:
            raise ValueError("rows_overshoot must be >= 0 (0: clockwise, 1: nearest)")
        if self.catch_up < 0:
            raise ValueError("catch_up must be >= 0")
        if self.publish_hold < 0:
            raise ValueError("publish_hold must be >= 0")
        if self.push_fanout is not None and self.push_fanout < 1:
            raise ValueError("push_fanout must be >= 1 (or None for every matching link)")
        if self.push_from not in ("any", "up"):
            raise ValueError("push_from must be 'any' or 'up'")
        if not 0 <= self.covered <= MAX_COVERED:
            raise ValueError(f"covered must be between 0 and {MAX_COVERED}")
        if self.push_new_links < 0:
            raise ValueError("push_new_links must be >= 0")
        if self.push_max_hops is not None and self.push_max_hops < 1:
            raise ValueError("push_max_hops must be >= 1 (or None)")
        if self.capacity_push_share is not None and not 0 < self.capacity_push_share <= 1:
            raise ValueError("capacity_push_share must be in (0, 1] (or None)")
        if self.capacity is not None and self.capacity < 1:
            raise ValueError("capacity must be >= 1")
        if self.balance_load not in ("uninterested", "all"):
            raise ValueError("balance_load must be 'uninterested' or 'all'")
        if self.shed_ratio < 1:
            raise ValueError("shed_ratio must be >= 1")
        if self.shed_max_hops < 0:
            raise ValueError("shed_max_hops must be >= 0")
        if self.balance_beta < 0 or self.balance_window <= 0:
            raise ValueError("balance_beta must be >= 0 and balance_window > 0")

    def to_dict(self) -> dict:
        return asdict(self)


BASELINE_CONTENT = ContentConfig(
    rendezvous="attribute",
    identifier="random",
    use_primary=False,
    balancing=False,
    push=False,
    every_tree_at_once=False,
    rows_overshoot=0,
    route_lookahead=False,
    rows_lookahead=False,
    route_shortcuts=False,
    route_to_interest=False,
    covered=0,
)


@dataclass(frozen=True, slots=True)
class SystemProfile:
    """A system as values: its links and its delivery (memberlist's
    DefaultLANConfig and DefaultWANConfig are the model). Every entry point
    (the CLI, the daemon, the experiments, the benchmarks) starts from
    `profile(name)` and applies its own overrides with `with_`; none
    assembles a system by hand."""

    name: str
    # What runs of it are labelled: "vinifera" or "baseline" (SimConfig.system).
    system: str
    about: str
    overlay: OverlayConfig
    content: ContentConfig
    # The paper's link rule: K_f = ceil(log2 N) - 2 friends (at least 1) and
    # no small-world links, at N nodes (`for_size`).
    links_by_size: bool = False

    @property
    def friends(self) -> int:
        return self.overlay.friends

    @property
    def small_world(self) -> int:
        return self.overlay.small_world

    def with_(self, overlay: dict | None = None, content: dict | None = None) -> SystemProfile:
        """This profile with some fields of its overlay and content changed."""
        return replace(
            self,
            overlay=replace(self.overlay, **(overlay or {})),
            content=replace(self.content, **(content or {})),
        )

    def for_size(self, nodes: float) -> SystemProfile:
        """The profile for a network of `nodes` (only links_by_size depends on it)."""
        if not self.links_by_size:
            return self
        friends = max(1, math.ceil(math.log2(max(nodes, 2))) - 2)
        return self.with_(overlay={"friends": friends, "small_world": 0})


PROFILES: dict[str, SystemProfile] = {
    p.name: p
    for p in (
        SystemProfile(
            "vinifera",
            "vinifera",
            "Vinifera as this repository runs it: identifiers inside the node's "
            "subscription, K_f = 4 friends and K_sw = 4 small-world links, "
            "showering range routing, pushes and balancing.",
            OverlayConfig(),
            ContentConfig(),
        ),
        SystemProfile(
            "baseline",
            "baseline",
            "The paper's comparison system: 2 ring + 8 small-world links, no "
            "friends, random identifiers, one rendezvous per attribute, no "
            "pushes, no balancing.",
            # Its small-world links are drawn over the rank sample only, as
            # before small_world_below_sample: given the change, its route to
            # its one rendezvous shortens (7.34 -> 5.57 hops) but its cost
            # rises (1.78 -> 1.95) and its path barely moves (8.27 -> 8.02;
            # N = 1,000, skewed, seed 1), so the baseline stays what it was.
            OverlayConfig(friends=0, small_world=8, small_world_below_sample=False),
            BASELINE_CONTENT,
        ),
        SystemProfile(
            "paper",
            "vinifera",
            "Vinifera as the paper evaluates it after Fig. 3: identifiers drawn "
            "uniformly, K_sw = 0, K_f = ceil(log2 N) - 2; delivery as ours "
            "(its runs are labelled vinifera).",
            OverlayConfig(),
            ContentConfig(identifier="random"),
            links_by_size=True,
        ),
    )
}
# The systems runs are labelled with (the command line's --system).
SYSTEMS = tuple(dict.fromkeys(p.system for p in PROFILES.values()))


def profile(system: str) -> SystemProfile:
    """The named profile (ValueError names the known ones)."""
    try:
        return PROFILES[system]
    except KeyError:
        raise ValueError(f"unknown profile {system!r} ({', '.join(PROFILES)})") from None


def settings_of(config, pairs, also: Sequence[str] = ()) -> dict:
    """NAME=VALUE strings (`vinifera sim run --set`) -> fields of a config
    dataclass, each value of its field's kind: true/false for a flag, none,
    a number, else the word. Unknown names and non-flags for flags raise
    ValueError (naming `also` beside the config's fields: names another
    config takes); the config's own checks judge the values."""
    known = {f.name: getattr(config, f.name) for f in fields(config)}
    out = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or name not in known:
            names = ", ".join(sorted([*known, *also]))
            raise ValueError(f"{pair!r}: expected NAME=VALUE with NAME one of {names}")
        word = text.lower()
        old = known[name]
        value: object
        if word in ("none", "null"):
            value = None
        elif isinstance(old, bool):
            if word not in ("true", "false"):
                raise ValueError(f"{pair!r}: {name} is true or false")
            value = word == "true"
        elif isinstance(old, str):
            value = text
        else:
            try:
                value = int(word)
            except ValueError:
                try:
                    value = float(word)
                except ValueError:
                    value = text
        out[name] = value
    return out
