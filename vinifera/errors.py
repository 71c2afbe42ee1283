"""The library's error types.

Everything that rejects bad user or schema input raises a ViniferaError, a
ValueError, so callers can catch one type and the CLI can print the message
as is.
"""

from __future__ import annotations


class ViniferaError(ValueError):
    """Base class of all errors raised by the library for bad input."""


class SchemaError(ViniferaError):
    """A schema, attribute, value or range does not satisfy the schema."""


class ExprError(SchemaError):
    """A subscription or event expression could not be parsed.

    ``position`` is the 0-based character offset of the offending part of
    ``text`` and ``length`` its extent (at least 1), so that str(err) can
    underline it::

        unknown attribute 'tmp' (known: city, temp)
          tmp in [-10, 0] and city == "Stockholm"
          ^^^
    """

    def __init__(self, reason: str, text: str, position: int, length: int = 1) -> None:
        self.reason = reason
        self.text = text
        self.position = max(0, min(position, len(text)))
        self.length = max(1, length)
        super().__init__(_render(reason, text, self.position, self.length))

    def __reduce__(self):
        # The default reduce would call __init__ with the rendered message only.
        return (type(self), (self.reason, self.text, self.position, self.length))


def _render(reason: str, text: str, position: int, length: int) -> str:
    # Show only the line holding the position so the caret lines up even when
    # the text spans several lines; tabs become spaces for the same reason.
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    if end < 0:
        end = len(text)
    line = text[start:end].replace("\t", " ").replace("\r", " ")
    column = position - start
    width = max(1, min(length, len(line) - column))
    return f"{reason}\n  {line}\n  {' ' * column}{'^' * width}"


def brief(value: object, limit: int = 40) -> str:
    """A short description of a value for an error message, in bounded
    time: the value may come from the network, so a container is described
    by its type and length (its repr could be huge or nested 1,000 deep)
    and a long string is cut before it is quoted."""
    t = type(value)
    if value is None or t is bool or t is float:
        return repr(value)
    if t is int:
        # int -> str is quadratic in the digits, and refused past 4,300 of them
        return (
            repr(value)
            if -(10**limit) < value < 10**limit
            else f"an int of {value.bit_length()} bits"
        )
    if t is str:
        return repr(value[:limit]) + ("..." if len(value) > limit else "")
    if t in (tuple, list, dict, set, frozenset, bytes, bytearray):
        return f"a {t.__name__} of {len(value)} items"
    return f"a {t.__name__}"
