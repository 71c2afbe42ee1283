"""The metrics computed from log records: the reference implementation of
docs/metrics.md (which defines each one in full).

The simulator feeds every record it writes into a Ledger, so its summary is
computed from exactly what the logs say (the PySpark analysis computes the
same numbers from the files). Definitions:

- expected pair (e, s): s alive when e is published, its subscription at
  that moment matches e, and s stays alive for the deadline after it;
- hit ratio: expected pairs delivered within the deadline / expected pairs;
- false positives: deliveries of events the subscription in force at
  delivery does not match; duplicates: deliveries beyond the first of an
  event to one node;
- traffic overhead: event messages received (every copy, dropped ones too)
  by nodes not interested in the event / all event messages received;
- node-based overhead: per event, the nodes that handled a copy without
  being interested / all nodes that handled one, averaged over events;
- redundancy: event messages received by a node that already had the
  event / all event messages received;
- route to the rendezvous: hops of the first up copy to reach a node that
  took its key for its own (0: the publisher did), per (event, attribute);
- path length: hops of the first delivery, over delivered expected pairs;
- load of a node: events it forwarded to at least one node / events
  published; over nodes alive at some time in the window.

Only events published inside the measurement window count. Records are fed
in time order, except that an event's publish record must come before the
records of its copies (the simulator's single clock guarantees it; logs of
several machines need not, so callers feed publishes first).
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Iterable, Iterator

from vinifera.matching import satisfies
from vinifera.schema import Schema
from vinifera.subscription import Event, Subscription

INF = math.inf

# What is counted of one counted event's messages (its recv and drop
# records), index by index; Receipts sums the same lists.
COPIES, UNINTERESTED, DROPPED, REDUNDANT = 0, 1, 2, 3
# ... recv records of a node's first copy (had false): node-based overhead
FIRST, FIRST_UNINTERESTED = 4, 5
# ... drops by what they were: an up copy, a down copy, a push; redundant ones
DROPPED_UP, DROPPED_DOWN, DROPPED_PUSH, DROPPED_REDUNDANT = 6, 7, 8, 9
N_COUNTS = 10


def count_message(counts: list[int], rec: dict) -> None:
    """One recv or drop record into its event's counts. `had` and `up`
    are missing from logs written before they existed: not redundant, and
    a dropped tree copy counts as a down copy."""
    counts[COPIES] += 1
    interested = rec["match"]
    had = rec.get("had", False)
    if not interested:
        counts[UNINTERESTED] += 1
    if had:
        counts[REDUNDANT] += 1
    if rec["ev"] == "drop":
        counts[DROPPED] += 1
        if had:
            counts[DROPPED_REDUNDANT] += 1
        if rec.get("attr") is None:
            counts[DROPPED_PUSH] += 1
        elif rec.get("up", False):
            counts[DROPPED_UP] += 1
        else:
            counts[DROPPED_DOWN] += 1
    elif not had:
        counts[FIRST] += 1
        if not interested:
            counts[FIRST_UNINTERESTED] += 1


def node_overhead(per_event: Iterable[tuple[int, int]]) -> float | None:
    """The mean, over events that reached any node, of the share of the
    nodes it reached that were not interested, from (nodes, uninterested)
    per event in ascending event id (so that every implementation adds the
    same floats in the same order)."""
    total = 0.0
    n = 0
    for nodes, uninterested in per_event:
        if nodes:
            total += uninterested / nodes
            n += 1
    return round(total / n, 6) if n else None


class Ledger:
    def __init__(self, schema: Schema, window_start: float, window_end: float, deadline: float):
        self.schema = schema
        self.window_start = window_start
        self.window_end = window_end
        self.deadline = deadline
        self.lives: dict[str, list[list[float]]] = defaultdict(list)  # node -> [[join, death]]
        self.subs: dict[str, list[tuple[float, Subscription | None]]] = defaultdict(list)
        self.events: dict[int, tuple[float, Event]] = {}
        # (eid, node) -> (time, hops) of the first delivery; later ones, which
        # should not happen, apart. Tuples, not a list per pair: the month-long
        # replay delivers 7.5 million pairs, and every list would be one more
        # object for each garbage collection to walk (gcpolicy).
        self.delivered: dict[tuple[int, str], tuple[float, int]] = {}
        self.repeats: dict[tuple[int, str], list[tuple[float, int]]] = defaultdict(list)
        # eid -> its message counts (COPIES ...), for the counted events
        self.messages: dict[int, list[int]] = {}
        # (eid, attr) -> (time, hops, node) of the first rendezvous record
        self.rendezvous: dict[tuple[int, str], tuple[float, int, str]] = {}
        self.publishers: dict[int, str] = {}  # eid -> its publisher, counted events
        self.forwarded: dict[str, set] = defaultdict(set)
        self._sub_cache: dict[tuple, Subscription | None] = {}

    # ----------------------------------------------------------------- feeding

    def _sub(self, plain) -> Subscription | None:
        if plain is None:
            return None
        key = tuple(tuple(c) for c in plain)
        sub = self._sub_cache.get(key)
        if sub is None:
            sub = Subscription.from_plain(self.schema, plain)
            self._sub_cache[key] = sub
        return sub

    def feed(self, rec: dict) -> None:
        ev = rec["ev"]
        t = rec["t"]
        node = rec["node"]
        if ev == "recv" or ev == "drop":
            counts = self.messages.get(rec["eid"])
            if counts is not None:
                count_message(counts, rec)
                if ev == "recv" and rec["fwd"] > 0:
                    self.forwarded[node].add(rec["eid"])
        elif ev == "deliver":
            if rec["eid"] in self.events:
                pair = (rec["eid"], node)
                if pair in self.delivered:
                    self.repeats[pair].append((t, rec["hops"]))
                else:
                    self.delivered[pair] = (t, rec["hops"])
        elif ev == "publish":
            if self.window_start <= t < self.window_end:
                self.events[rec["eid"]] = (t, Event.from_plain(self.schema, rec["values"]))
                self.messages.setdefault(rec["eid"], [0] * N_COUNTS)
                self.publishers[rec["eid"]] = node
        elif ev == "rendezvous":
            if rec["eid"] in self.events:
                self.rendezvous.setdefault((rec["eid"], rec["attr"]), (t, rec["hops"], node))
        elif ev == "join":
            self.lives[node].append([t, INF])
            self.subs[node].append((t, self._sub(rec.get("sub"))))
        elif ev == "subscribe":
            self.subs[node].append((t, self._sub(rec.get("sub"))))
        elif ev in ("leave", "crash"):
            lives = self.lives.get(node)
            if lives and lives[-1][1] == INF:
                lives[-1][1] = t

    def add_receipts(self, receipts: Receipts) -> None:
        """What feeding the records `receipts` summed would have counted:
        the same, once this ledger has been fed every publish record up to
        the last of them (a copy never comes before its publish)."""
        events = self.events
        messages = self.messages
        for eid, summed in receipts.by_event.items():
            counts = messages.get(eid)
            if counts is not None:
                for i, n in enumerate(summed):
                    counts[i] += n
        forwarded = self.forwarded
        for node, eid in receipts.forwarded:
            if eid in events:
                forwarded[node].add(eid)

    # ----------------------------------------------------------------- queries

    def message_totals(self) -> list[int]:
        """The message counts (COPIES ...) summed over the counted events."""
        totals = [0] * N_COUNTS
        for counts in self.messages.values():
            for i, n in enumerate(counts):
                totals[i] += n
        return totals

    @property
    def received(self) -> int:
        return self.message_totals()[COPIES]

    @property
    def received_uninterested(self) -> int:
        return self.message_totals()[UNINTERESTED]

    @property
    def dropped(self) -> int:
        return self.message_totals()[DROPPED]

    def deliveries(self) -> Iterator[tuple[tuple[int, str], list[tuple[float, int]]]]:
        """Every delivered (eid, node) pair with all its (time, hops), the
        first first."""
        repeats = self.repeats
        for pair, first in self.delivered.items():
            yield pair, [first, *repeats.get(pair, ())]

    def summary(self) -> dict:
        expected = delivered = hops_total = 0
        # Events in publication order; a node's expected pairs are, per life
        # and per subscription it held, the events of one stretch of that
        # order (bisect), each tested on its first constraint from a column
        # of that attribute's values before the rest: the month-long Skype
        # replay spans some 70 million (life, event) pairs.
        timeline = sorted((t, eid) for eid, (t, _) in self.events.items())
        times = [t for t, _ in timeline]
        eids = [eid for _, eid in timeline]
        event_values = [self.events[eid][1].values for eid in eids]
        columns: dict[str, list] = {}
        deadline = self.deadline
        delivered_at = self.delivered
        # per node, when each subscription it held took effect
        held_since = {node: [h[0] for h in history] for node, history in self.subs.items()}

        def by_deadline(t: float) -> float:
            return t + deadline

        for node, lives in self.lives.items():
            history = self.subs[node]
            since = held_since[node]
            for join, death in lives:
                first = bisect.bisect_left(times, join)
                # past the last event whose deadline falls within the life
                end = bisect.bisect_right(times, death, first, key=by_deadline)
                for k, (held_from, sub) in enumerate(history):
                    if sub is None:
                        continue
                    until = since[k + 1] if k + 1 < len(since) else INF
                    lo_i = max(first, bisect.bisect_left(times, held_from))
                    hi_i = min(end, bisect.bisect_left(times, until))
                    if lo_i >= hi_i:
                        continue
                    name, lo, hi = sub.constraints[0]
                    column = columns.get(name)
                    if column is None:
                        column = columns[name] = [v.get(name) for v in event_values]
                    more = len(sub.constraints) > 1
                    for i in range(lo_i, hi_i):
                        v = column[i]
                        if v is None or not lo <= v <= hi:
                            continue
                        if more and not satisfies(sub.constraints, event_values[i]):
                            continue
                        expected += 1
                        got = delivered_at.get((eids[i], node))
                        if got is not None and got[0] <= times[i] + deadline:
                            delivered += 1
                            hops_total += got[1]
        false_positives = duplicates = 0
        for (eid, node), deliveries in self.deliveries():
            duplicates += len(deliveries) - 1
            values = self.events[eid][1].values
            history = self.subs.get(node, [])
            since = held_since.get(node, [])
            for t, _ in deliveries:
                k = bisect.bisect_right(since, t) - 1
                sub = history[k][1] if k >= 0 else None
                if sub is None or not satisfies(sub.constraints, values):
                    false_positives += 1
        n_events = len(self.events)
        in_window = [
            n
            for n, lives in self.lives.items()
            if any(j < self.window_end and d > self.window_start for j, d in lives)
        ]
        loads = (
            sorted(len(self.forwarded.get(n, ())) / n_events for n in in_window) if n_events else []
        )
        totals = self.message_totals()
        received = totals[COPIES]
        routes = [hops for _t, hops, _node in self.rendezvous.values()]
        return {
            "events_published": n_events,
            "expected_pairs": expected,
            "delivered_pairs": delivered,
            "hit_ratio": round(delivered / expected, 6) if expected else None,
            "false_positives": false_positives,
            "duplicates": duplicates,
            "traffic_overhead": (round(totals[UNINTERESTED] / received, 6) if received else None),
            "node_overhead": node_overhead(
                (c[FIRST], c[FIRST_UNINTERESTED]) for _, c in sorted(self.messages.items())
            ),
            "event_messages": received,
            "event_messages_dropped": totals[DROPPED],
            "event_messages_redundant": totals[REDUNDANT],
            "redundancy": round(totals[REDUNDANT] / received, 6) if received else None,
            "dropped_up": totals[DROPPED_UP],
            "dropped_down": totals[DROPPED_DOWN],
            "dropped_push": totals[DROPPED_PUSH],
            "dropped_redundant": totals[DROPPED_REDUNDANT],
            # cost (docs/metrics.md): comparable across systems, unlike the overhead ratio
            "cost": round(received / delivered, 6) if delivered else None,
            "path_length": round(hops_total / delivered, 6) if delivered else None,
            "route_hops": round(sum(routes) / len(routes), 6) if routes else None,
            "load_max": round(loads[-1], 6) if loads else None,
            "load_p95": round(_percentile(loads, 0.95), 6) if loads else None,
        }


class Receipts:
    """What the ledger takes from recv and drop records, summed where they
    are made (sim/parallel.py's workers, when no log is written), so that
    they need not travel and be merged one by one: their order does not
    matter to the ledger, only whether each event turns out to be one of
    the window's (Ledger.add_receipts)."""

    def __init__(
        self,
        by_event: dict[int, list[int]] | None = None,
        forwarded: list[tuple[str, int]] | None = None,
    ) -> None:
        # eid -> its message counts (COPIES ...), as the ledger keeps them
        self.by_event: dict[int, list[int]] = {} if by_event is None else by_event
        self.forwarded: list[tuple[str, int]] = [] if forwarded is None else forwarded

    def add(self, rec: dict) -> None:
        """A recv or drop record, as Ledger.feed reads it."""
        eid = rec["eid"]
        counts = self.by_event.get(eid)
        if counts is None:
            counts = self.by_event[eid] = [0] * N_COUNTS
        count_message(counts, rec)
        if rec["ev"] == "recv" and rec["fwd"] > 0:
            self.forwarded.append((rec["node"], eid))


def _percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (the value below which a fraction q lies)."""
    k = max(0, math.ceil(q * len(sorted_values)) - 1)
    return sorted_values[k]
