"""Every message kind has all its parts (issue 74 item 2): a wire id, an
encoder, a decoder, a protocol handler, a fuzz sample and a row in
docs/protocol.md's catalogue. Forgetting one used to fail nowhere."""

from __future__ import annotations

import random
import re
from pathlib import Path

from vinifera.fuzz import sample_messages
from vinifera.protocol import messages as m
from vinifera.protocol.config import OverlayConfig
from vinifera.protocol.node import Node
from vinifera.schema import Schema
from vinifera.wire.decode import _READERS
from vinifera.wire.encode import _WRITERS
from vinifera.wire.fragments import KIND_FRAGMENT
from vinifera.wire.frames import KIND_CHALLENGE, KIND_HELLO, KINDS

DOC = Path(__file__).resolve().parents[1] / "docs" / "protocol.md"


def concrete_kinds() -> set[type]:
    """Every Message class but the bases others only extend."""
    out, todo = set(), [m.Message]
    while todo:
        cls = todo.pop()
        subs = cls.__subclasses__()
        todo.extend(subs)
        out.update(subs)
    return out - {m.WithEntries}


def test_every_message_kind_has_every_part():
    kinds = concrete_kinds()
    assert len(kinds) >= 19
    assert set(KINDS) == kinds
    assert set(_WRITERS) == kinds
    assert set(_READERS) == {KINDS[k] for k in kinds}
    ids = list(KINDS.values())
    assert len(set(ids)) == len(ids)
    assert not {KIND_HELLO, KIND_CHALLENGE, KIND_FRAGMENT} & set(ids)
    schema = Schema.numeric(1, 0.0, 1.0)
    node = Node("n:1", schema, OverlayConfig(), random.Random(1))
    assert set(node._handlers) == kinds
    assert {type(x) for x in sample_messages(schema)} == kinds
    catalogue = DOC.read_text().split("## Message catalogue", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(\w+)` \|", catalogue, re.M))
    assert {k.__name__ for k in kinds} <= documented, {k.__name__ for k in kinds} - documented
