"""Vinifera: content-based publish/subscribe over a subscription-aware overlay."""

__version__ = "0.1.0"
