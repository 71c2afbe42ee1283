"""Builders for log records: the contract between nodes and the analysis
(docs/logs.md). Every record has `v` (schema version), `t` (the `now` of the
step that produced it), `node` (the node's address as a string) and `ev`.
Identifiers are 16-digit hex strings: JSON readers (and Spark's LongType)
cannot hold unsigned 64-bit integers."""

from __future__ import annotations

LOG_SCHEMA_VERSION = 1


def hex_id(ident: int) -> str:
    return f"{ident:016x}"


def node_name(address) -> str:
    if isinstance(address, tuple):
        host, port = address
        return f"{host}:{port}"
    return str(address)


def record(now: float, node: str, ev: str, **fields) -> dict:
    rec = {"v": LOG_SCHEMA_VERSION, "t": now, "node": node, "ev": ev}
    rec.update(fields)
    return rec
