"""A small expression language for subscriptions and events.

Subscriptions::

    temp in [-10, 0] and city == "Stockholm" and rain >= 2.5

Grammar: ``clause ("and" clause)*``; a clause is ``NAME in [VALUE, VALUE]``
or ``NAME OP VALUE`` with OP one of ``== <= >= < >``. Keywords are
case-insensitive. Clauses on the same attribute intersect. Every error is an
ExprError that points at the offending part of the text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from vinifera.errors import ExprError, SchemaError
from vinifera.schema import Attribute, AttrType, Schema
from vinifera.subscription import Event, Subscription

__all__ = ["format_subscription", "format_value", "parse_event", "parse_subscription"]

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_TOKEN_RE = re.compile(
    r"(?P<ws>\s+)"
    rf"|(?P<num>{_NUMBER})(?![A-Za-z0-9_.])"
    r"|(?P<bad>[+-]?\.?[0-9][A-Za-z0-9_.]*)"
    r"|(?P<name>[+-]?[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>==|<=|>=|<|>)"
    r"|(?P<punct>[\[\],])"
    r"|(?P<quote>[\"'])"
)
_NUMBER_RE = re.compile(rf"\s*({_NUMBER})\s*\Z")
_NONFINITE = frozenset({"nan", "inf", "infinity"})
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}
_NONFINITE_MSG = "NaN and infinities are not allowed"

# Token kinds.
_NAME, _NUM, _STR, _OP, _PUNCT, _END = "name", "number", "string", "operator", "punct", "end"


class _Tok:
    __slots__ = ("kind", "text", "value", "start", "end")

    def __init__(self, kind: str, text: str, value: Any, start: int, end: int) -> None:
        self.kind = kind
        self.text = text
        self.value = value
        self.start = start
        self.end = end

    def describe(self) -> str:
        if self.kind == _END:
            return "end of input"
        return f"{self.kind} {self.text!r}"


def _read_string(text: str, start: int) -> tuple[str, int]:
    """Parse the quoted literal opening at ``start``; return (value, end)."""
    quote = text[start]
    out = []
    i = start + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == quote:
            return "".join(out), i + 1
        if c == "\\":
            if i + 1 >= n:
                break
            e = _ESCAPES.get(text[i + 1])
            if e is None:
                raise ExprError(
                    f"unknown escape \\{text[i + 1]} (use \\\" \\' \\\\ \\n \\t \\r)", text, i, 2
                )
            out.append(e)
            i += 2
            continue
        out.append(c)
        i += 1
    raise ExprError(f"unterminated string: missing closing {quote}", text, start, n - start)


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    n = len(text)
    match = _TOKEN_RE.match
    while pos < n:
        m = match(text, pos)
        if m is None:
            raise ExprError(f"unexpected character {text[pos]!r}", text, pos)
        kind = m.lastgroup
        if kind == "ws":
            pos = m.end()
            continue
        if kind == "quote":
            value, end = _read_string(text, pos)
            toks.append(_Tok(_STR, text[pos:end], value, pos, end))
            pos = end
            continue
        if kind == "bad":
            raise ExprError(f"malformed number {m.group()!r}", text, pos, m.end() - pos)
        if kind == "num":
            tok_kind = _NUM
        elif kind == "name":
            tok_kind = _NAME
        elif kind == "op":
            tok_kind = _OP
        else:
            tok_kind = _PUNCT
        toks.append(_Tok(tok_kind, m.group(), None, pos, m.end()))
        pos = m.end()
    toks.append(_Tok(_END, "", None, n, n))
    return toks


def _is_kw(tok: _Tok, word: str) -> bool:
    return tok.kind == _NAME and tok.text.lower() == word


def _number(attr: Attribute, literal: str) -> Any:
    """Convert a numeric literal for ``attr``; raises SchemaError."""
    if attr.type is AttrType.INT:
        # Decimal is exact and, unlike int()/Fraction, cheap on literals like
        # 1e999999999 or with thousands of digits.
        exact = Decimal(literal)
        if exact != exact.to_integral_value():
            raise SchemaError(f"{attr.name} is an int attribute: {literal} is not an integer")
        if not attr.min <= exact <= attr.max:
            raise SchemaError(
                f"value {literal} for {attr.name} is outside the domain [{attr.min}, {attr.max}]"
            )
        return attr.check(int(exact))
    value = float(literal)
    if math.isinf(value):
        raise SchemaError(f"{literal} overflows a float: {_NONFINITE_MSG}")
    return attr.check(value)


def _value(text: str, tok: _Tok, attr: Attribute) -> Any:
    """The checked value of the literal token ``tok`` for ``attr``."""

    def fail(reason: str) -> ExprError:
        return ExprError(reason, text, tok.start, tok.end - tok.start)

    if tok.kind == _NAME:
        word = tok.text.lstrip("+-").lower()
        if word in _NONFINITE:
            raise fail(_NONFINITE_MSG)
        if attr.type is AttrType.STRING:
            raise fail(f'string values must be quoted: {attr.name} == "{tok.text}"')
        raise fail(f"expected a number for {attr.name}, got {tok.text!r}")
    if tok.kind == _STR:
        if attr.type is not AttrType.STRING:
            raise fail(
                f"{attr.name} is a {attr.type.value} attribute: expected a number, "
                f"got the string {tok.text}"
            )
        try:
            return attr.check(tok.value)
        except SchemaError as e:
            raise fail(str(e)) from None
    if tok.kind == _NUM:
        if attr.type is AttrType.STRING:
            raise fail(f'{attr.name} is a string attribute: quote the value, e.g. "{tok.text}"')
        try:
            return _number(attr, tok.text)
        except SchemaError as e:
            raise fail(str(e)) from None
    raise fail(f"expected a value for {attr.name}, got {tok.describe()}")


class _Parser:
    __slots__ = ("text", "toks", "i", "schema")

    def __init__(self, text: str, schema: Schema) -> None:
        self.text = text
        self.schema = schema
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        if tok.kind != _END:
            self.i += 1
        return tok

    def error(self, reason: str, tok: _Tok, end: int | None = None) -> ExprError:
        stop = tok.end if end is None else end
        return ExprError(reason, self.text, tok.start, max(1, stop - tok.start))

    def expect(self, punct: str, context: str) -> _Tok:
        tok = self.take()
        if tok.kind != _PUNCT or tok.text != punct:
            raise self.error(f"expected '{punct}' {context}, got {tok.describe()}", tok)
        return tok

    def parse(self) -> Subscription:
        if self.peek().kind == _END:
            raise self.error(
                "empty subscription: expected a clause such as 'name in [lo, hi]'", self.peek()
            )
        ranges: dict[str, tuple[Any, Any]] = {}
        while True:
            self.clause(ranges)
            tok = self.peek()
            if tok.kind == _END:
                break
            if not _is_kw(tok, "and"):
                raise self.error(f"expected 'and' or end of input, got {tok.describe()}", tok)
            self.take()
        return Subscription.build(self.schema, ranges)

    def clause(self, ranges: dict[str, tuple[Any, Any]]) -> None:
        name_tok = self.take()
        if name_tok.kind != _NAME or name_tok.text[0] in "+-":
            raise self.error(f"expected an attribute name, got {name_tok.describe()}", name_tok)
        if name_tok.text.lower() in ("and", "in"):
            raise self.error(
                f"expected an attribute name, got the keyword {name_tok.text!r}", name_tok
            )
        try:
            attr = self.schema.attribute(name_tok.text)
        except SchemaError as e:
            raise self.error(str(e), name_tok) from None
        name = attr.name
        tok = self.take()
        if _is_kw(tok, "in"):
            open_tok = self.expect("[", f"after 'in' to open the range of {name}")
            lo = _value(self.text, self.take(), attr)
            self.expect(",", f"between the bounds of {name}")
            hi = _value(self.text, self.take(), attr)
            close = self.expect("]", f"to close the range of {name}")
            if lo > hi:
                raise self.error(
                    f"inverted range for {name}: [{format_value(lo)}, {format_value(hi)}]",
                    open_tok,
                    close.end,
                )
        elif tok.kind == _OP:
            lo, hi = self.comparison(attr, tok)
        else:
            raise self.error(
                f"expected 'in' or a comparison (==, <=, >=, <, >) after {name}, "
                f"got {tok.describe()}",
                tok,
            )
        clause_end = self.toks[self.i - 1].end
        prev = ranges.get(name)
        if prev is not None:
            nlo = lo if lo > prev[0] else prev[0]
            nhi = hi if hi < prev[1] else prev[1]
            if nlo > nhi:
                raise self.error(
                    f"this clause leaves nothing of {name}: earlier clauses allow "
                    f"[{format_value(prev[0])}, {format_value(prev[1])}]",
                    name_tok,
                    clause_end,
                )
            lo, hi = nlo, nhi
        ranges[name] = (lo, hi)

    def comparison(self, attr: Attribute, op_tok: _Tok) -> tuple[Any, Any]:
        op = op_tok.text
        if attr.type is AttrType.STRING and op in ("<", ">"):
            raise self.error(
                f"strict comparison {op} is not supported for string attribute {attr.name}: "
                "use <= or >=",
                op_tok,
            )
        val_tok = self.take()
        v = _value(self.text, val_tok, attr)
        dlo, dhi = attr.full_range()
        if op == "==":
            return v, v
        if op == "<=":
            return dlo, v
        if op == ">=":
            return v, dhi
        if attr.type is AttrType.INT:
            bound = v - 1 if op == "<" else v + 1
        else:
            bound = math.nextafter(v, -math.inf if op == "<" else math.inf)
        if op == "<":
            if bound < dlo:
                raise self.error(
                    f"{attr.name} < {format_value(v)} is empty: the domain starts at "
                    f"{format_value(dlo)}",
                    op_tok,
                    val_tok.end,
                )
            return dlo, bound
        if bound > dhi:
            raise self.error(
                f"{attr.name} > {format_value(v)} is empty: the domain ends at {format_value(dhi)}",
                op_tok,
                val_tok.end,
            )
        return bound, dhi


def parse_subscription(text: str, schema: Schema) -> Subscription:
    """Parse and validate a subscription expression; raises ExprError."""
    if not isinstance(text, str):
        raise TypeError(f"expected the subscription as str, got {type(text).__name__}")
    parser = _Parser(text, schema)
    try:
        return parser.parse()
    except ExprError:
        raise
    except SchemaError as e:
        # Anything the parser did not pin to a position: blame the whole text.
        raise ExprError(str(e), text, 0, len(text)) from None


def parse_event(assignments: Sequence[str], schema: Schema) -> Event:
    """Build an event from items like ``temp=3.5`` or ``city=Stockholm``.

    Values of string attributes are taken literally unless quoted (then the
    usual escapes apply). Errors are ExprErrors on the offending item.
    """
    if isinstance(assignments, str):
        raise TypeError("pass a sequence of 'name=value' strings, not one string")
    values: dict[str, Any] = {}
    for item in assignments:
        if not isinstance(item, str):
            raise TypeError(f"event assignment must be a str, got {type(item).__name__}")
        eq = item.find("=")
        if eq < 0:
            raise ExprError(f"expected name=value, got {item!r}", item, 0, len(item))
        raw_name = item[:eq]
        name = raw_name.strip()
        name_at = len(raw_name) - len(raw_name.lstrip())
        if not name:
            raise ExprError("missing attribute name before '='", item, 0)
        try:
            attr = schema.attribute(name)
        except SchemaError as e:
            raise ExprError(str(e), item, name_at, len(name)) from None
        if name in values:
            raise ExprError(f"{name} is given twice", item, name_at, len(name))
        raw = item[eq + 1 :]
        val_at = eq + 1
        try:
            values[name] = _event_value(attr, raw)
        except SchemaError as e:
            raise ExprError(str(e), item, val_at, max(1, len(raw))) from None
    if not values:
        raise SchemaError("an event needs at least one name=value")
    return Event.build(schema, values)


def _event_value(attr: Attribute, raw: str) -> Any:
    if attr.type is AttrType.STRING:
        s = raw.strip()
        if len(s) >= 2 and s[0] in "\"'" and s[-1] == s[0]:
            value, end = _read_string(s, 0)
            if end != len(s):
                raise SchemaError(f"unexpected text after the quoted value of {attr.name}")
            return attr.check(value)
        return attr.check(raw)
    m = _NUMBER_RE.match(raw)
    if m is None:
        if raw.strip().lstrip("+-").lower() in _NONFINITE:
            raise SchemaError(_NONFINITE_MSG)
        raise SchemaError(
            f"{attr.name} is a {attr.type.value} attribute: expected a number, got {raw!r}"
        )
    return _number(attr, m.group(1))


def format_value(v: Any) -> str:
    """A literal the parser reads back as ``v``."""
    if isinstance(v, str):
        return (
            '"'
            + v.replace("\\", "\\\\")
            .replace('"', '\\"')
            .replace("\n", "\\n")
            .replace("\t", "\\t")
            .replace("\r", "\\r")
            + '"'
        )
    if isinstance(v, float):
        return repr(v)
    return str(v)


def format_subscription(sub: Subscription) -> str:
    """Render ``sub`` in the expression language (round-trips through the parser)."""
    parts = []
    for name, lo, hi in sub.constraints:
        if lo == hi:
            parts.append(f"{name} == {format_value(lo)}")
        else:
            parts.append(f"{name} in [{format_value(lo)}, {format_value(hi)}]")
    return " and ".join(parts)
