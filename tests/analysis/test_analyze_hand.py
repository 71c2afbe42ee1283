"""`vinifera analyze` on a hand-built swarm log whose answers are known.

One attribute a0 in [0, 1000]; events count from t = 10 until t = 40; the
deadline is 5 s; time windows of 10 s. Nodes (one log file each, as the
daemon writes them; some gzipped, one in a sub-folder):

  p  publisher of E1..E5, subscribes [0, 100]: its own E1 is an expected pair
  a  [0, 600]: gets E1, gets E2 twice (one duplicate)
  b  [0, 1000], leaves at 15: gone before E1's deadline (12 + 5), not expected
  c  [0, 600], joins at 23: after E2 (22) was published, not expected
  d  [400, 600], switches to [0, 100] at 20 and to [900, 1000] at 32: E2 (500)
     reaches it after the switch (a false positive); E3 (950) is published at
     the very instant of the second switch, and counts
  r  [40, 60], a relay that is also a subscriber: forwards E1, E2 (twice),
     E3, E5; wants and gets E1
  x  [0, 1000], crashes at 27: E1 delivered late (17.5 > 17); E2 (22) is
     expected because it lives exactly until 22 + 5, and it never arrives
  y  [0, 1000], leaves at 10, rejoins at 30 with [900, 1000]: gets E3
  z  [0, 1000], gone at 5: before the window, not a node of the window
  w  [600, 700], lives only from 36 to 42.5 (a short life, which the
     expected-pairs join slices by time): wants and gets E6

Events: E0 (t 5) and E4 (t 41) lie outside the window; E1 (12, 50), E2 (22,
500), E3 (32, 950), E6 (37, 650); E5 (35, 700) is wanted by nobody.

Expected pairs: E1 {p, a, r, x}, E2 {a, x}, E3 {d, y}, E5 {}, E6 {w} = 9.
Delivered in time: p (0 hops), a (2), r (1) for E1; a (3) for E2; d (2) and
y (1) for E3; w (1) for E6 = 7, 10 hops. Event messages of counted events:
18, of which 8 to uninterested nodes and 1 dropped. Load: r forwarded 4 of
the 5 events, d 2; 9 nodes alive in the window (z is not), 7 with load 0.
A file of malformed lines rides along: counted, reported, skipped.
Every node still alive at the end leaves at 45 (a daemon logs its leave;
a log that stops without one is an inferred crash: test_analyze_swarm.py).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

EIDS = {"E0": 100, "E1": 101, "E2": 102, "E3": 103, "E4": 104, "E5": 105, "E6": 106}
VALUES = {"E0": 50.0, "E1": 50.0, "E2": 500.0, "E3": 950.0, "E4": 50.0, "E5": 700.0, "E6": 650.0}
GHOSTS = 2000
SCHEMA_TOML = '[attributes.a0]\ntype = "float"\nmin = 0\nmax = 1000\n'


def rec(t, node, ev, **kw):
    return {"v": 1, "t": t, "node": node, "ev": ev, **kw}


def sub(lo, hi):
    return [["a0", lo, hi]]


def join(t, node, lo, hi):
    return rec(t, node, "join", id="00000000000000ff", sub=sub(lo, hi))


def publish(t, name):
    return rec(t, "p", "publish", eid=EIDS[name], values=[["a0", VALUES[name]]])


def deliver(t, node, name, hops):
    return rec(t, node, "deliver", eid=EIDS[name], hops=hops)


def recv(t, node, name, match, fwd, dup=False):
    return rec(t, node, "recv", eid=EIDS[name], attr="a0", hops=1, match=match, fwd=fwd, dup=dup,
               rv=False)  # fmt: skip


def drop(t, node, name, match):
    return rec(t, node, "drop", eid=EIDS[name], attr="a0", hops=1, match=match)


NODES = {
    "p": [
        join(0.0, "p", 0, 100),
        publish(5.0, "E0"),
        deliver(5.0, "p", "E0", 0),
        publish(12.0, "E1"),
        deliver(12.0, "p", "E1", 0),
        publish(22.0, "E2"),
        publish(32.0, "E3"),
        publish(35.0, "E5"),
        publish(37.0, "E6"),
        publish(41.0, "E4"),
        deliver(41.0, "p", "E4", 0),
        rec(45.0, "p", "leave"),
    ],
    "a": [
        join(0.0, "a", 0, 600),
        recv(12.9, "a", "E1", True, 0),
        deliver(13.0, "a", "E1", 2),
        recv(23.4, "a", "E2", True, 0),
        deliver(23.5, "a", "E2", 3),
        recv(23.9, "a", "E2", True, 0, dup=True),
        deliver(24.0, "a", "E2", 4),
        drop(35.5, "a", "E5", False),
        deliver(41.5, "a", "E4", 1),
        rec(45.0, "a", "leave"),
    ],
    "b": [
        join(0.0, "b", 0, 1000),
        recv(12.4, "b", "E1", True, 0),
        deliver(12.5, "b", "E1", 1),
        rec(15.0, "b", "leave"),
    ],
    "c": [
        join(23.0, "c", 0, 600),
        recv(24.0, "c", "E2", True, 0),
        deliver(24.0, "c", "E2", 2),
        rec(45.0, "c", "leave"),
    ],
    "d": [
        join(0.0, "d", 400, 600),
        recv(12.3, "d", "E1", False, 1),
        rec(20.0, "d", "subscribe", sub=sub(0, 100)),
        recv(22.4, "d", "E2", False, 0),
        deliver(22.5, "d", "E2", 2),
        rec(32.0, "d", "subscribe", sub=sub(900, 1000)),
        recv(32.9, "d", "E3", True, 1),
        deliver(33.0, "d", "E3", 2),
        recv(35.4, "d", "E5", False, 0),
        rec(45.0, "d", "leave"),
    ],
    "r": [
        join(0.0, "r", 40, 60),
        recv(4.0, "r", "E0", False, 3),
        recv(12.2, "r", "E1", True, 2),
        deliver(12.8, "r", "E1", 1),
        recv(22.2, "r", "E2", False, 1),
        recv(22.3, "r", "E2", False, 2),
        recv(32.2, "r", "E3", False, 1),
        recv(35.2, "r", "E5", False, 1),
        recv(41.2, "r", "E4", False, 5),
        rec(45.0, "r", "leave"),
    ],
    "x": [
        join(0.0, "x", 0, 1000),
        recv(13.0, "x", "E1", True, 0),
        deliver(17.5, "x", "E1", 3),
        rec(27.0, "x", "crash"),
    ],
    "y": [
        join(0.0, "y", 0, 1000),
        rec(10.0, "y", "leave"),
        join(30.0, "y", 900, 1000),
        recv(32.4, "y", "E3", True, 0),
        deliver(32.5, "y", "E3", 1),
        rec(45.0, "y", "leave"),
    ],
    "z": [join(0.0, "z", 0, 1000), rec(5.0, "z", "leave")],
    "w": [
        join(36.0, "w", 600, 700),
        recv(37.1, "w", "E6", True, 0),
        deliver(37.2, "w", "E6", 1),
        rec(42.5, "w", "leave"),
    ],
}

# Malformed lines, by the problem they should be counted under.
BAD = [
    ("bad_json", "garbage"),
    ("bad_json", '{"v":1,"t":3.0,"node":"q","ev":"re'),
    ("bad_json", '{"v":1,"t":"x","node":"q","ev":"join"}'),
    ("bad_json", "[1,2]"),
    ("missing_field", '{"v":1,"node":"q","ev":"join"}'),
    ("missing_field", '{"v":1,"t":13.0,"node":"q","ev":"recv","eid":101}'),
    ("unsupported_version", '{"v":2,"t":13.0,"node":"q","ev":"join","sub":null}'),
    ("bad_time", '{"v":1,"t":NaN,"node":"q","ev":"leave"}'),
    ("invalid_event", json.dumps(rec(14.0, "q", "publish", eid=99, values=[["zz", 1]]))),
    # Read as a join with no subscription: q2 is a node of the window.
    ("invalid_subscription", json.dumps(join(1.0, "q2", 700, 600))),
]


Q2_END = rec(45.0, "q2", "leave")


def build(folder: Path, write_log) -> None:
    for name, records in NODES.items():
        if name == "z":
            write_log(folder / "old" / f"{name}.jsonl", records)
        else:
            write_log(folder / f"{name}.jsonl.gz" if name in "ax" else folder / f"{name}.jsonl",
                      records, gz=name in "ax")  # fmt: skip
    write_log(
        folder / "bad.jsonl",
        [line for _, line in BAD[:5]] + [""] + [line for _, line in BAD[5:]] + [json.dumps(Q2_END)],
    )
    (folder / "notes.txt").write_text("not a log\n")  # ignored: not *.jsonl
    # A node killed while writing: a truncated gzip file, read up to the damage.
    # Its records (leaves of nodes that never joined) change no metric.
    ghosts = "".join(json.dumps(rec(0.0, f"ghost{i}", "leave")) + "\n" for i in range(GHOSTS))
    packed = gzip.compress(ghosts.encode())
    (folder / "killed.jsonl.gz").write_bytes(packed[: len(packed) // 2])


@pytest.fixture(scope="module")
def analyzed(spark, tmp_path_factory, log_writer):
    from vinifera.analysis import inputs, job

    root = tmp_path_factory.mktemp("hand")
    logs = root / "logs"
    build(logs, log_writer)
    schema = root / "schema.toml"
    schema.write_text(SCHEMA_TOML)
    spec = inputs.resolve(str(logs), schema_path=schema, start=10.0, end=40.0, deadline=5.0,
                          window=10.0)  # fmt: skip
    report, results = job.analyze(spark, [spec], root / "out")
    return root, report, results[0], spec


def test_store_reused_and_node_names_as_keys_give_the_same(analyzed, spark, monkeypatch):
    """Again on the same logs: the store (and its per-file counts) is read
    instead of the JSON, and keying nodes by name (what happens when two
    names' hashes collide) changes nothing."""
    from vinifera.analysis import job, metrics

    root, _, first, spec = analyzed
    monkeypatch.setattr(metrics, "_node_key", lambda node_ids: "node")
    _, (again,) = job.analyze(spark, [spec], root / "out")
    assert again.inputs["store_reused"] and not first.inputs["store_reused"]
    assert again.summary == first.summary
    assert again.windows == first.windows
    assert again.inputs["files"] == first.inputs["files"]


def test_metrics_are_the_known_answers(analyzed):
    _, _, result, _ = analyzed
    s = result.summary
    assert {k: s[k] for k in s if k in EXPECTED} == EXPECTED


EXPECTED = {
    "events_published": 5,
    "expected_pairs": 9,
    "delivered_pairs": 7,
    "hit_ratio": round(7 / 9, 6),
    "false_positives": 1,
    "duplicates": 1,
    "traffic_overhead": round(8 / 18, 6),
    "event_messages": 18,
    "event_messages_dropped": 1,
    "path_length": round(10 / 7, 6),
    "load_max": 0.8,
    "load_p95": 0.8,
    "nodes_in_window": 10,  # the 9 above and q2 (its invalid subscription read as none)
    "malformed_lines": 10,
}


def test_reference_ledger_agrees(analyzed):
    """The simulator's Ledger, fed the same records in time order, says the same."""
    from vinifera.analysis.metrics import LEDGER_KEYS
    from vinifera.ledger import Ledger
    from vinifera.schema import Schema

    _, _, result, _ = analyzed
    ledger = Ledger(Schema.from_toml(SCHEMA_TOML), 10.0, 40.0, 5.0)
    records = [r for rs in NODES.values() for r in rs] + [rec(1.0, "q2", "join", sub=None), Q2_END]
    for r in sorted(records, key=lambda r: r["t"]):
        ledger.feed(r)
    expected = ledger.summary()
    assert {k: result.summary[k] for k in LEDGER_KEYS} == {k: expected[k] for k in LEDGER_KEYS}


def test_per_window(analyzed):
    _, _, result, _ = analyzed
    cols = ("events_published", "expected_pairs", "delivered_pairs", "hit_ratio",
            "false_positives", "duplicates", "event_messages", "event_messages_uninterested",
            "event_messages_dropped", "path_length", "load_max", "alive_nodes", "joins",
            "departures")  # fmt: skip
    got = [tuple(w[c] for c in cols) for w in result.windows]
    assert got == [
        # [10, 20): E1. Alive at 10: p a b d r x, q2 (y left at 10). b leaves; y's leave at 10.
        (1, 4, 3, 0.75, 0, 0, 5, 1, 0, 1.0, 1.0, 7, 0, 2),
        # [20, 30): E2. Alive at 20: p a d r x q2; c joins, x crashes.
        (1, 2, 1, 0.5, 1, 1, 6, 3, 0, 3.0, 1.0, 6, 1, 1),
        # [30, 40): E3, E5, E6. Alive at 30: p a c d r q2 y (joined at 30); w joins.
        (3, 3, 3, 1.0, 0, 0, 7, 4, 1, round(4 / 3, 6), round(2 / 3, 6), 7, 2, 0),
    ]
    assert [(w["start"], w["end"]) for w in result.windows] == [(10, 20), (20, 30), (30, 40)]


def test_malformed_lines_are_counted_by_problem(analyzed):
    _, report, result, _ = analyzed
    want: dict[str, int] = {}
    for problem, _ in BAD:
        want[problem] = want.get(problem, 0) + 1
    assert result.inputs["problems"] == want
    assert result.inputs["examples"]  # a few shown in the report
    text = report.read_text()
    assert "Malformed lines (10" in text and "unsupported_version" in text


def test_reads_plain_gzip_and_nested_files_only(analyzed):
    _, _, result, _ = analyzed
    names = sorted(Path(f["file"]).name for f in result.inputs["files"])
    assert names == sorted(["bad.jsonl", "a.jsonl.gz", "x.jsonl.gz", "z.jsonl", "killed.jsonl.gz"]
                           + [f"{n}.jsonl" for n in "bcdprwy"])  # fmt: skip
    lines = sum(len(r) for r in NODES.values()) + len(BAD) + 1  # and q2's leave
    ghosts = result.inputs["records"] - lines  # the blank line is not a record
    assert 0 < ghosts < GHOSTS  # part of the truncated file


def test_outputs(analyzed, spark):
    root, report, result, _ = analyzed
    out = root / "out"
    assert report == out / "report.md"
    text = report.read_text()
    for png in ("hit_ratio", "overhead", "path_length", "load_cdf"):
        path = out / "plots" / f"{png}.png"
        assert path.read_bytes()[:4] == b"\x89PNG"
        assert f"plots/{png}.png" in text
    assert str(root / "logs") in text  # the report states its inputs
    windows = spark.read.parquet(str(out / "logs" / "tables" / "windows.parquet"))
    assert windows.count() == 3
    loads = spark.read.parquet(str(out / "logs" / "tables" / "node_load.parquet"))
    got = {r["node"]: (r["forwarded"], r["load"]) for r in loads.collect()}
    assert got["r"] == (4, 0.8) and got["d"] == (2, 0.4) and got["p"] == (0, 0.0)
    assert "z" not in got and len(got) == 10
    csv = (out / "logs" / "tables" / "path_length.csv").read_text().splitlines()
    assert csv == ["hops,pairs,fraction", f"0,1,{1 / 7}", f"1,3,{3 / 7}", f"2,2,{2 / 7}",
                   f"3,1,{1 / 7}"]  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert summary["logs"]["hit_ratio"] == round(7 / 9, 6)


def test_a_schema_that_fits_none_of_the_events_is_an_error(analyzed, spark, tmp_path):
    """Before: 0 events, exit 0, a progress line saying 0 malformed."""
    from vinifera.analysis import inputs, job

    root = analyzed[0]
    other = tmp_path / "other.toml"
    other.write_text('[attributes.temp]\ntype = "float"\nmin = -50\nmax = 50\n')
    spec = inputs.resolve(str(root / "logs"), schema_path=other, start=10.0, end=40.0,
                          deadline=5.0, window=10.0)  # fmt: skip
    with pytest.raises(inputs.InputError, match="the schema fits none of the 8 published events"):
        job.analyze(spark, [spec], tmp_path / "out")
