"""How the simulator's queue entries travel between its worker processes
(sim/parallel.py): pickled, with a reducer for each protocol class the
optional compiled build turns into a native class, which pickle cannot
rebuild by itself (it is built through its constructor, never through
object.__new__ and its slots). The reducers name the constructor and its
arguments, so the pure build pickles the same way."""

from __future__ import annotations

import copyreg
import operator
from collections.abc import Callable, Hashable

from vinifera.protocol import messages as m
from vinifera.protocol.profile import Profile
from vinifera.ranges import IntervalSet
from vinifera.subscription import Subscription


def fields(cls: type) -> list[str]:
    """A message class's fields in constructor order: its slots, base first
    (tests/test_wire.py checks that constructors take them so); a compiled
    class has no __slots__ but lists its own attributes, then its bases'."""
    slots = [s for k in reversed(cls.__mro__) for s in getattr(k, "__slots__", ())]
    if slots:
        return slots
    own: list[str] = []
    for k in reversed(cls.__mro__):  # base first, as the constructors take them
        own.extend(a for a in getattr(k, "__mypyc_attrs__", ()) if a not in own)
    return ["profile", *(a for a in own if a not in ("kind", "profile"))]


def _message_classes() -> list[type]:
    found, todo = [], [m.Message]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


# message class -> its fields' values as a tuple, in constructor order
_ARGS: dict[type, Callable[[m.Message], tuple]] = {}


def _args_of(names: list[str]) -> Callable[[m.Message], tuple]:
    """One C call per message (attrgetter), not a getattr per field."""
    if len(names) == 1:
        name = names[0]
        return lambda msg: (getattr(msg, name),)
    return operator.attrgetter(*names)


def _reduce_message(msg: m.Message):
    cls = type(msg)
    return cls, _ARGS[cls](msg)


# address -> the subscription the simulation gave that node (bind()).
_subscription_of: Callable[[Hashable], Subscription | None] | None = None
# address -> the last profile of that node rebuilt here (_node_profile)
_rebuilt: dict[Hashable, Profile] = {}


def bind(subscription_of: Callable[[Hashable], Subscription | None]) -> None:
    """Send a profile's subscription as its node's address when it is the
    one the simulation gave that node: every worker drew the same ones from
    the same seed, and rebuilding a subscription is most of a profile's
    cost to unpickle."""
    global _subscription_of
    _subscription_of = subscription_of
    _rebuilt.clear()


def _reduce_profile(p: Profile):
    sub = p.subscription
    if sub is not None and _subscription_of is not None and _subscription_of(p.address) is sub:
        return _node_profile, (p.address, p.ident, p.seq)
    return Profile, (p.address, p.ident, sub, p.seq)


def _node_profile(address: Hashable, ident: int, seq: int) -> Profile:
    """The node's profile, one object per version as in one process: its
    receivers' caches compare profiles by identity first (a new object for
    each crossing made them score it again), and it is kept once."""
    assert _subscription_of is not None
    sub = _subscription_of(address)
    p = _rebuilt.get(address)
    if p is None or p.seq != seq or p.ident != ident or p.subscription is not sub:
        p = _rebuilt[address] = Profile(address, ident, sub, seq)
    return p


def _reduce_intervals(s: IntervalSet):
    return IntervalSet.from_intervals, (s.intervals,)


def register() -> None:
    """Teach pickle the protocol's classes (idempotent)."""
    for cls in _message_classes():
        if cls not in _ARGS:
            _ARGS[cls] = _args_of(fields(cls))
            copyreg.pickle(cls, _reduce_message)
    copyreg.pickle(Profile, _reduce_profile)
    copyreg.pickle(IntervalSet, _reduce_intervals)
