"""Peer addresses as they travel: IP literals with a port, never names."""

from __future__ import annotations

import ipaddress

from vinifera.errors import brief
from vinifera.wire.frames import MAX_ADDRESS_LEN


def parse_address(text: str, allow_any_port: bool = False) -> tuple[str, int]:
    """'host:port' (IPv4) or '[v6]:port' to a (host, port) socket address.
    Only IP literals: a node must never resolve names that peers send it.
    Port 0 ("any free port") only where a socket is bound, with allow_any_port."""
    if not isinstance(text, str) or not 3 <= len(text) <= MAX_ADDRESS_LEN:
        raise ValueError(f"bad address {brief(text, 80)}: expected HOST:PORT")
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isdigit() or len(port_text) > 5:
        raise ValueError(f"bad address {text!r}: expected HOST:PORT")
    port = int(port_text)
    if not (0 if allow_any_port else 1) <= port <= 65535:
        raise ValueError(f"bad address {text!r}: port must be 1-65535")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise ValueError(f"bad address {text!r}: host must be an IP address") from None
    return str(ip), port


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
