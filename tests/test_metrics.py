"""The Prometheus endpoint (issue 75 item 9): real nodes, scraped over HTTP
and parsed with prometheus_client's own parser."""

from __future__ import annotations

import re
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest
import trio
from daemon_swarm import PERIOD, SCHEMA, wait_for
from prometheus_client.parser import text_string_to_metric_families
from test_daemon_processes import SCHEMA_TOML, cli

import vinifera
from vinifera.daemon.metrics import METRICS
from vinifera.errors import ViniferaError

README = Path(__file__).resolve().parents[1] / "README.md"


def scrape(address: str) -> dict[str, dict]:
    """family name -> {labels tuple: value} (histogram samples by their own name)."""
    text = urllib.request.urlopen(f"http://{address}/metrics", timeout=10).read().decode()
    out: dict[str, dict] = {}
    for fam in text_string_to_metric_families(text):
        for sample in fam.samples:
            key = tuple(sorted(sample.labels.items()))
            out.setdefault(sample.name, {})[key] = sample.value
    return out


async def test_two_nodes_scraped_show_what_their_status_shows():
    async with (
        vinifera.Node(SCHEMA, period=PERIOD, seed=1, subscription="a0 in [0, 500]") as a,
        vinifera.Node(
            SCHEMA,
            period=PERIOD,
            seed=2,
            subscription="a0 in [0, 500]",
            bootstrap=[a.runner.address],
            metrics="127.0.0.1:0",
        ) as b,
    ):
        await wait_for(lambda: b.status()["links"]["succ"] is not None, 20, "a ring link")
        await a.publish({"a0": 3, "a1": 4})
        await wait_for(lambda: b.status()["counters"].get("delivered", 0) >= 1, 20, "a delivery")
        # garbage from outside: counted under its decoder reason
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            host, port = b.runner.address.rsplit(":", 1)
            for _ in range(3):
                s.sendto(b"\xc1 not msgpack", (host, int(port)))
        await wait_for(lambda: b.status()["counters"].get("bad_msgpack", 0) >= 3, 10, "drops")
        m = await trio.to_thread.run_sync(scrape, b.runner.metrics_address)
        status = b.status()

    assert m["vinifera_deliveries_total"][()] == 1
    assert m["vinifera_event_hops_count"][()] == 1
    assert m["vinifera_event_hops_sum"][()] >= 1  # published at the other node
    # the copy carried its publication time: one latency, well under the run
    assert m["vinifera_delivery_latency_seconds_count"][()] == 1
    assert 0 <= m["vinifera_delivery_latency_seconds_sum"][()] < 20
    assert m["vinifera_dropped_total"][(("reason", "msgpack"),)] == 3
    received = {dict(k)["kind"]: v for k, v in m["vinifera_messages_received_total"].items()}
    assert received.get("EventMessage", 0) + received.get("EventPush", 0) >= 1, received
    sent = {dict(k)["kind"]: v for k, v in m["vinifera_bytes_sent_total"].items()}
    # counters only grow: the status read after the scrape is at least as far on
    assert sent and all(0 < v <= status["sent_bytes"][k] for k, v in sent.items())
    links = {dict(k)["type"]: v for k, v in m["vinifera_links"].items()}
    assert links["succ"] == 1 and links["pred"] == 1
    assert m["vinifera_link_changes_total"][()] >= 1
    # every declared family is served (histograms under their _count sample)
    for spec in METRICS:
        name = (
            "vinifera_"
            + spec.name
            + {"counter": "_total", "histogram": "_count"}.get(spec.kind, "")
        )
        assert name in m, name


def test_the_readme_table_lists_exactly_the_declared_metrics():
    text = README.read_text()
    table = text[text.index("#### Metrics for operators") :]
    rows = re.findall(r"^\| `(vinifera_\w+)` \| (\w+) \|", table, re.M)
    declared = [
        ("vinifera_" + s.name + ("_total" if s.kind == "counter" else ""), s.kind) for s in METRICS
    ]
    assert rows == declared


def test_a_bad_metrics_address_is_refused_before_anything_binds():
    with pytest.raises(ViniferaError, match="--metrics"):
        vinifera.Node(SCHEMA, metrics="nowhere:x")


def test_a_metrics_port_in_use_is_one_line_and_exit_2(tmp_path):
    schema = tmp_path / "s.toml"
    schema.write_text(SCHEMA_TOML)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        out = subprocess.run(
            [*cli(), "run", "--schema", str(schema), "--metrics", str(port)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert out.returncode == 2, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last == f"Error: cannot serve metrics on {port}: Address already in use"
    assert "Traceback" not in out.stderr


def test_an_event_copy_carries_its_publication_time_and_a_bad_one_is_refused():
    import msgpack

    from vinifera.protocol import messages as m
    from vinifera.protocol.profile import Profile
    from vinifera.subscription import Event
    from vinifera.wire import Decoder, WireError, encode

    me = Profile("127.0.0.1:7000", 5, None)
    born = Event.build(SCHEMA, {"a0": 1.0, "a1": 2.0}).carrying(None, 1_750_000_000.25)
    dec = Decoder(SCHEMA)
    for msg in (m.EventMessage(me, 9, born, "a0", 3, 2, True), m.EventPush(me, 9, born, 2)):
        got = dec.decode_untrusted(encode(msg)).event
        assert got.born == 1_750_000_000.25 and got.seal is None
        top = list(msgpack.unpackb(encode(msg)))
        for bad in ("soon", -1.0, float("nan")):
            forged = msgpack.packb([*top[:-1], bad])
            with pytest.raises(WireError, match="birth time"):
                dec.decode_untrusted(forged)
        with pytest.raises(WireError, match="nil seal"):
            dec.decode_untrusted(msgpack.packb([*top[:-1]]))
