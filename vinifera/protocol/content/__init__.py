"""The content layer: subscription installation (showering, aggregated CRT
rows), event delivery down a per-attribute forest, and Karger-Ruhl
identifier balancing. Pure state, like the overlay; `Content` (layer.py) is
what a node talks to."""

from vinifera.protocol.content.layer import Content, attribute_key, subscription_identifier

__all__ = ["Content", "attribute_key", "subscription_identifier"]
