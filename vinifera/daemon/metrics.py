"""Prometheus metrics of a running node (`vinifera-node run --metrics`).

The metrics are read from the node's own status at scrape time: the HTTP
server (prometheus_client's, in its own thread) asks the trio thread for a
status snapshot, so a scrape sees one consistent moment and nothing is
computed between scrapes. Only the hop and latency histograms are kept
as deliveries happen. METRICS declares every family once; the README's operator table
lists the same names (tests/test_metrics.py checks both).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import trio
from prometheus_client import CollectorRegistry, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from vinifera.errors import ViniferaError
from vinifera.wire import parse_address


@dataclass(frozen=True)
class MetricSpec:
    name: str  # without the vinifera_ prefix (and, for counters, the _total suffix)
    kind: str  # "counter", "gauge" or "histogram"
    labels: tuple[str, ...]
    help: str


METRICS = (
    MetricSpec("datagrams_sent", "counter", ("kind",), "Datagrams sent, by the message kind."),
    MetricSpec("bytes_sent", "counter", ("kind",), "Bytes sent (UDP payload), by message kind."),
    MetricSpec(
        "datagrams_received", "counter", (), "Datagrams read from the socket, before admission."
    ),
    MetricSpec(
        "messages_received",
        "counter",
        ("kind",),
        "Messages that passed admission, the decoder and the address proof, by kind.",
    ),
    MetricSpec("bytes_received", "counter", ("kind",), "Bytes of those messages, by kind."),
    MetricSpec(
        "dropped",
        "counter",
        ("reason",),
        "Datagrams dropped, by reason: rate_limit_host/_port/_ports (admission budgets), "
        "queue (inbound queue full), a decoder reason (mac, msgpack, field, kind, ...), "
        "replay_*, spoofed, send_queue_* (outbound congestion, by priority class), oversize.",
    ),
    MetricSpec("events_published", "counter", (), "Events published at this node."),
    MetricSpec("deliveries", "counter", (), "Events delivered to the application here."),
    MetricSpec(
        "event_hops",
        "histogram",
        (),
        "Copies an event took from its publisher to here, per delivery.",
    ),
    MetricSpec(
        "delivery_latency_seconds",
        "histogram",
        (),
        "From publication (the publisher's clock) to delivery here (ours), per delivery: "
        "assumes clocks in step (NTP); a negative difference counts as 0.",
    ),
    MetricSpec(
        "events_forwarded",
        "counter",
        ("what",),
        "Event copies handled: received, duplicate (already here), pushed, shed (dropped "
        "under the congestion rule).",
    ),
    MetricSpec(
        "links", "gauge", ("type",), "Routing links held now: succ, pred, friend, small_world."
    ),
    MetricSpec(
        "link_changes", "counter", (), "Routing links that appeared since start (link churn)."
    ),
    MetricSpec("view_size", "gauge", (), "Peers in the Cyclon view."),
    MetricSpec("verified_peers", "gauge", (), "Addresses that proved themselves to us."),
    MetricSpec("crt_rows", "gauge", (), "Rows of the content routing tables."),
)

_BY_NAME = {m.name: m for m in METRICS}

# protocol counter -> label of events_forwarded
_FORWARDED = {
    "events_received": "received",
    "events_duplicate": "duplicate",
    "events_pushed": "pushed",
    "pushes_shed": "shed",
}


def drop_reasons(counters: dict) -> dict[str, int]:
    """The node's drop counters under one `reason` label each."""
    out: dict[str, int] = {}
    for key, value in counters.items():
        if key.startswith("limited_"):
            reason = "rate_limit_" + key[len("limited_") :]
        elif key.startswith("bad_"):
            reason = key[len("bad_") :]
        elif key.startswith("outbox_dropped_"):
            reason = "send_queue_" + key[len("outbox_dropped_") :]
        elif key.startswith("replay_"):
            reason = key
        elif key == "queue_full":
            reason = "queue"
        elif key in ("oversize", "held_dropped"):
            reason = key
        else:
            continue
        out[reason] = out.get(reason, 0) + value
    return out


class _StatusCollector:
    """Turns a status snapshot (taken on the trio thread) into metric families."""

    def __init__(self, snapshot: Callable[[], dict | None]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        s = self._snapshot()
        if s is None:  # the node is not running (any more)
            return
        c = s["counters"]
        pc = s["protocol_counters"]
        yield _by_label("datagrams_sent", s["sent_datagrams"])
        yield _by_label("bytes_sent", s["sent_bytes"])
        yield _plain("datagrams_received", c.get("datagrams_received", 0))
        yield _by_label("messages_received", s["received_messages"])
        yield _by_label("bytes_received", s["received_bytes"])
        yield _by_label("dropped", drop_reasons(c))
        yield _plain("events_published", pc.get("events_published", 0))
        yield _plain("deliveries", c.get("delivered", 0))
        yield _by_label("events_forwarded", {v: pc.get(k, 0) for k, v in _FORWARDED.items()})
        links = s["links"]
        yield _by_label(
            "links",
            {
                "succ": int(links["succ"] is not None),
                "pred": int(links["pred"] is not None),
                "friend": len(links["friends"]),
                "small_world": len(links["small_world"]),
            },
        )
        yield _plain("link_changes", s["link_changes"])
        yield _plain("view_size", len(s["view"]))
        yield _plain("verified_peers", s["verified"])
        yield _plain("crt_rows", len(s["crt_rows"]))


def _family(spec: MetricSpec, labels: tuple[str, ...] = ()) -> Metric:
    name, text = "vinifera_" + spec.name, spec.help
    if spec.kind == "counter":
        return CounterMetricFamily(name, text, labels=list(labels))
    return GaugeMetricFamily(name, text, labels=list(labels))


def _plain(name: str, value: float) -> Metric:
    fam = _family(_BY_NAME[name])
    fam.add_metric([], value)
    return fam


def _by_label(name: str, values: dict) -> Metric:
    spec = _BY_NAME[name]
    fam = _family(spec, spec.labels)
    for label, value in sorted(values.items()):
        fam.add_metric([str(label)], value)
    return fam


class NodeMetrics:
    """One node's registry and HTTP endpoint (HOST:PORT, or PORT on 127.0.0.1)."""

    def __init__(self, status: Callable[[], dict]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self._status = status
        self._token: trio.lowlevel.TrioToken | None = None
        self._server = None
        self.registry.register(_StatusCollector(self._snapshot))
        spec = _BY_NAME["event_hops"]
        self.hops = Histogram(
            "vinifera_" + spec.name,
            spec.help,
            buckets=(0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24, 32),
            registry=self.registry,
        )
        spec = _BY_NAME["delivery_latency_seconds"]
        self.latency = Histogram(
            "vinifera_" + spec.name,
            spec.help,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=self.registry,
        )

    def delivered(self, hops: int, latency: float | None) -> None:
        self.hops.observe(hops)
        if latency is not None:
            self.latency.observe(max(0.0, latency))

    def serve(self, addr: str) -> str:
        """Start the endpoint (from the trio thread); returns HOST:PORT bound."""
        host, port = parse_metrics_address(addr)
        self._token = trio.lowlevel.current_trio_token()
        try:
            self._server, _ = start_http_server(port, addr=host, registry=self.registry)
        except OSError as err:
            raise ViniferaError(f"cannot serve metrics on {addr}: {err.strerror or err}") from None
        bound = self._server.server_address[1]
        return f"[{host}]:{bound}" if ":" in host else f"{host}:{bound}"

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _snapshot(self) -> dict | None:
        """The node's status, taken on the trio thread (from the HTTP thread)."""
        try:
            return trio.from_thread.run_sync(self._status, trio_token=self._token)
        except (trio.RunFinishedError, trio.Cancelled, RuntimeError):
            return None


def parse_metrics_address(addr: str) -> tuple[str, int]:
    """PORT (on 127.0.0.1) or HOST:PORT, HOST an IP literal (ViniferaError)."""
    if addr.isdigit():
        addr = "127.0.0.1:" + addr
    try:
        return parse_address(addr, allow_any_port=True)
    except ValueError as err:
        raise ViniferaError(f"--metrics {addr}: {err}") from None
