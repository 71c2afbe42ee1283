"""Vinifera: content-based publish/subscribe over a subscription-aware overlay."""

from vinifera import native as _native

__version__ = "0.1.0"

_native.setup()  # the optional compiled build: see vinifera/native.py


def __getattr__(name: str):
    # The daemon API pulls in trio; load it only when asked for.
    if name == "Node":
        from vinifera.daemon.api import Node

        return Node
    raise AttributeError(f"module 'vinifera' has no attribute {name!r}")
