"""The `Trace` type and the `.avt` / `.evt` file formats.

`.avt` (availability trace, P. B. Godfrey's collection): one line per node,
``<node> <n> <start1> <end1> ... <startn> <endn>``, integer seconds, sessions
ordered and non-overlapping. `.evt`: one event per line, ``<time> <node> up|down``.
Both accept ``#`` comments; the optional comment ``# end: <seconds>`` records the
trace's end time, which the sessions alone cannot tell (a window may end after
the last session). Every reading error is one `TraceError` naming file and line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

Session = tuple[int, int]

_END_RE = re.compile(r"#\s*end:\s*(\S+)\s*$")

# The latest time a trace may name: ten years of seconds. Real availability
# traces span days to a year; a larger number is a typo or garbage, and
# everything that walks a trace's time line (stats' probes, replays) would
# take time and memory in proportion to it.
MAX_TRACE_SECONDS = 10 * 365 * 24 * 3600
_TOO_LATE = f"is past the latest a trace may name ({MAX_TRACE_SECONDS} s, ten years)"


class TraceError(ValueError):
    """A malformed trace: says which file and line (when known) and what is wrong."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.reason = message
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)


class Trace:
    """Node id -> ordered, non-overlapping ``(start, end)`` sessions, plus the end time.

    Times are integer seconds from the trace start (0). A session is half-open:
    the node is up for ``start <= t < end``, so ``start < end`` and touching
    sessions (``end_i == start_{i+1}``) are allowed. Nodes without sessions are
    not kept: the formats only list nodes seen up at least once.
    """

    __slots__ = ("_sessions", "end")

    def __init__(self, sessions: Mapping[str, Iterable[Session]], end: int | None = None):
        checked: dict[str, tuple[Session, ...]] = {}
        last = 0
        for node, seq in sessions.items():
            if not isinstance(node, str) or not node or any(c.isspace() for c in node):
                raise TraceError(f"bad node id {node!r}: a non-empty word is needed")
            ss = tuple((int(s), int(e)) for s, e in seq)
            _check_sessions(node, ss)
            if ss:
                checked[node] = ss
                last = max(last, ss[-1][1])
        if end is None:
            end = last
        elif int(end) != end or end < last:
            raise TraceError(f"end {end} is before the last session end {last}")
        elif end > MAX_TRACE_SECONDS:
            raise TraceError(f"end {end} {_TOO_LATE}")
        self._sessions = checked
        self.end = int(end)

    @property
    def sessions(self) -> Mapping[str, tuple[Session, ...]]:
        return MappingProxyType(self._sessions)  # read-only: transforms build new traces

    @property
    def nodes(self) -> list[str]:
        return list(self._sessions)

    @property
    def session_count(self) -> int:
        return sum(len(s) for s in self._sessions.values())

    @property
    def duration(self) -> int:
        """Seconds covered: times run from 0 to `end`."""
        return self.end

    def __len__(self) -> int:
        return len(self._sessions)

    def __getitem__(self, node: str) -> tuple[Session, ...]:
        return self._sessions[node]

    def __iter__(self):
        return iter(self._sessions)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trace):
            return NotImplemented
        return self.end == other.end and self._sessions == other._sessions

    def __repr__(self) -> str:
        return f"Trace(nodes={len(self)}, sessions={self.session_count}, end={self.end})"


def _check_sessions(node: str, ss: Sequence[Session]) -> None:
    prev_end = None
    for s, e in ss:
        if s < 0:
            raise TraceError(f"node {node}: negative time {s}")
        if e > MAX_TRACE_SECONDS:
            raise TraceError(f"node {node}: time {e} {_TOO_LATE}")
        if e <= s:
            raise TraceError(f"node {node}: empty or reversed session ({s}, {e})")
        if prev_end is not None and s < prev_end:
            raise TraceError(f"node {node}: session ({s}, {e}) overlaps or precedes the previous")
        prev_end = e


def _int(token: str, what: str, path: str, line: int, most: int | None = MAX_TRACE_SECONDS) -> int:
    try:
        value = int(token)
    except ValueError:
        raise TraceError(f"{what} {token!r} is not an integer", path, line) from None
    if value < 0:
        raise TraceError(f"{what} {value} is negative", path, line)
    if most is not None and value > most:
        raise TraceError(f"{what} {token} {_TOO_LATE}", path, line)
    return value


def _end_comment(text: str, path: str, line: int) -> int | None:
    m = _END_RE.match(text)
    if m is None:
        return None
    return _int(m.group(1), "end time", path, line)


def _lines(text: str):
    for no, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped:
            yield no, stripped


def parse_avt(text: str, name: str = "<avt>") -> Trace:
    """Parse `.avt` text; `name` is used in error messages."""
    sessions: dict[str, tuple[Session, ...]] = {}
    end: int | None = None
    end_line = 0
    for no, line in _lines(text):
        if line.startswith("#"):
            declared = _end_comment(line, name, no)
            if declared is not None:
                end, end_line = declared, no
            continue
        parts = line.split()
        node = parts[0]
        if len(parts) < 2:
            raise TraceError(f"node {node}: missing session count", name, no)
        n = _int(parts[1], "session count", name, no, most=None)  # the list must match it
        times = parts[2:]
        if n == 0:
            raise TraceError(f"node {node}: bad count 0 (list only nodes seen up)", name, no)
        if len(times) % 2:
            raise TraceError(f"node {node}: odd number of times ({len(times)})", name, no)
        if len(times) != 2 * n:
            raise TraceError(
                f"node {node}: bad count: says {n} sessions but lists {len(times) // 2}", name, no
            )
        if node in sessions:
            raise TraceError(f"node {node} listed twice", name, no)
        vals = [_int(t, "time", name, no) for t in times]
        prev = -1
        for i in range(0, len(vals), 2):
            s, e = vals[i], vals[i + 1]
            if e <= s:
                raise TraceError(
                    f"node {node}: session {i // 2 + 1} ({s}, {e}) is empty or reversed", name, no
                )
            if s < prev:
                raise TraceError(
                    f"node {node}: session {i // 2 + 1} ({s}, {e}) overlaps or "
                    "precedes the previous one",
                    name,
                    no,
                )
            prev = e
        sessions[node] = tuple(zip(vals[0::2], vals[1::2], strict=True))
    if end is not None:
        last = max((ss[-1][1] for ss in sessions.values()), default=0)
        if end < last:
            raise TraceError(f"end {end} is before the last session end {last}", name, end_line)
    return Trace(sessions, end)


def parse_evt(text: str, name: str = "<evt>") -> Trace:
    """Parse `.evt` text: events in time order; every `up` closed by a `down`."""
    sessions: dict[str, list[Session]] = {}
    up_since: dict[str, tuple[int, int]] = {}  # node -> (time, line of the up)
    end: int | None = None
    last_time = 0
    for no, line in _lines(text):
        if line.startswith("#"):
            declared = _end_comment(line, name, no)
            if declared is not None:
                end = declared
            continue
        parts = line.split()
        if len(parts) != 3:
            raise TraceError(f"expected '<time> <node> up|down', got {len(parts)} fields", name, no)
        t = _int(parts[0], "time", name, no)
        node, kind = parts[1], parts[2]
        if t < last_time:
            raise TraceError(
                f"time {t} is before the previous event ({last_time}): "
                "events must be in time order",
                name,
                no,
            )
        last_time = t
        if kind == "up":
            if node in up_since:
                raise TraceError(
                    f"node {node} is already up (since line {up_since[node][1]})", name, no
                )
            up_since[node] = (t, no)
        elif kind == "down":
            if node not in up_since:
                raise TraceError(f"node {node} goes down but is not up", name, no)
            start, _ = up_since.pop(node)
            if t == start:
                raise TraceError(f"node {node}: empty session at {t}", name, no)
            sessions.setdefault(node, []).append((start, t))
        else:
            raise TraceError(f"unknown keyword {kind!r} (expected 'up' or 'down')", name, no)
    if up_since:
        node, (t, no) = min(up_since.items(), key=lambda kv: kv[1][1])
        if end is None or end <= t:
            raise TraceError(
                f"node {node} is still up at the end of the file (no 'down', "
                "and no later '# end:' line)",
                name,
                no,
            )
        for node, (t, _) in up_since.items():
            sessions.setdefault(node, []).append((t, end))
    if end is not None and end < last_time:
        raise TraceError(f"end {end} is before the last event {last_time}", name)
    return Trace(sessions, end)


def format_avt(trace: Trace) -> str:
    """`.avt` text: a header with the end time, then one tab-separated line per node."""
    out = [
        "# vinifera churn trace (avt): node, n, then n start/end pairs in seconds",
        f"# end: {trace.end}",
    ]
    for node, ss in trace.sessions.items():
        times = "\t".join(f"{s}\t{e}" for s, e in ss)
        out.append(f"{node}\t{len(ss)}\t{times}")
    return "\n".join(out) + "\n"


def format_evt(trace: Trace) -> str:
    """`.evt` text; at equal times downs come first so touching sessions round-trip."""
    from .schedule import ChurnSchedule

    out = ["# vinifera churn trace (evt): time node up|down", f"# end: {trace.end}"]
    out.extend(f"{ev.time} {ev.node} {ev.kind}" for ev in ChurnSchedule.from_trace(trace))
    return "\n".join(out) + "\n"


_PARSERS = {".avt": parse_avt, ".evt": parse_evt}
_FORMATTERS = {".avt": format_avt, ".evt": format_evt}


def trace_format(path: str | Path) -> str:
    """'.avt' or '.evt' from the file name, else a TraceError."""
    suffix = Path(path).suffix.lower()
    if suffix not in _PARSERS:
        raise TraceError(
            f"unknown trace format {suffix or '(none)'!r}: use .avt or .evt", str(path)
        )
    return suffix


def read_trace(path: str | Path) -> Trace:
    """Read a `.avt` or `.evt` file (chosen by extension)."""
    parse = _PARSERS[trace_format(path)]
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise TraceError("not UTF-8 text", str(path), line) from None
    trace = parse(text, str(path))
    if not len(trace):
        # Nothing to replay: a wrong or truncated file, not a trace of nobody.
        raise TraceError("no node sessions in it (an empty trace)", str(path))
    return trace


def write_trace(trace: Trace, path: str | Path) -> None:
    """Write a `.avt` or `.evt` file (chosen by extension)."""
    text = _FORMATTERS[trace_format(path)](trace)
    Path(path).write_text(text, encoding="utf-8")
