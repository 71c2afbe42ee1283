"""Short memories with a horizon: what the content layer remembers for a
while and then forgets (duplicate suppression, deliveries, recent events
for catch-up, load windows). Time comes in as an argument, like everywhere
in the core; forgetting costs one step per forgotten item.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterator
from typing import Any


class ExpiringMap:
    """Keys remembered from the moment they are first set until the
    horizon passes that moment (setting a key again keeps its time)."""

    __slots__ = ("items", "_times")

    def __init__(self) -> None:
        self.items: dict[Any, Any] = {}
        self._times: deque[tuple[float, Hashable]] = deque()

    def set(self, now: float, key: Hashable, value: Any = None) -> None:
        if key not in self.items:
            self._times.append((now, key))
        self.items[key] = value

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self.items.get(key, default)

    def forget_before(self, horizon: float) -> None:
        times, items = self._times, self.items
        while times and times[0][0] < horizon:
            items.pop(times.popleft()[1], None)

    def times(self) -> tuple[tuple[float, Hashable], ...]:
        """(time first set, key), oldest first."""
        return tuple(self._times)

    def __contains__(self, key: Hashable) -> bool:
        return key in self.items

    def __len__(self) -> int:
        return len(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)


class Window:
    """Items noted over the last stretch of time, duplicates included."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: deque[tuple[float, Any]] = deque()

    def note(self, now: float, item: Any) -> None:
        self._items.append((now, item))

    def forget_before(self, horizon: float) -> None:
        items = self._items
        while items and items[0][0] < horizon:
            items.popleft()

    def keep(self, predicate) -> None:
        """Forget the items `predicate` refuses (order kept)."""
        self._items = deque(p for p in self._items if predicate(p[1]))

    def __iter__(self) -> Iterator[Any]:
        return (item for _, item in self._items)

    def __len__(self) -> int:
        return len(self._items)
