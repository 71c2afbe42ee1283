"""How profiles cross between a simulation's workers (sim/transfer.py)."""

import pickle

from vinifera.protocol import messages as m
from vinifera.protocol.profile import Profile
from vinifera.schema import Schema
from vinifera.sim import transfer
from vinifera.subscription import Subscription

SCHEMA = Schema.numeric(1)


def _cross(obj):
    return pickle.loads(pickle.dumps(obj))


def _bound(subs: dict) -> None:
    transfer.register()
    transfer.bind(subs.get)


def test_a_node_profile_crosses_as_one_object_per_version():
    """As in one process, where a node's profile is one object until it
    changes: receivers' caches compare profiles by identity first."""
    sub = Subscription.build(SCHEMA, {"a0": (10.0, 20.0)})
    _bound({7: sub})
    p = Profile(7, 12345, sub, 3)
    first = _cross(m.Ping(p)).profile
    again = _cross(m.Pong(p)).profile
    assert first is again
    assert first == p and first.subscription is sub and first.seq == 3
    moved = _cross(m.Ping(p.changed(ident=999))).profile
    assert moved is not first and moved.ident == 999 and moved.seq == 4
    assert _cross(m.Ping(p)).profile is not moved  # an older version: rebuilt, still equal
    assert _cross(m.Ping(p)).profile == p


def test_a_changed_subscription_or_a_new_binding_is_not_taken_for_the_old_profile():
    sub = Subscription.build(SCHEMA, {"a0": (10.0, 20.0)})
    _bound({7: sub})
    p = Profile(7, 12345, sub, 0)
    first = _cross(m.Ping(p)).profile
    other = Subscription.build(SCHEMA, {"a0": (30.0, 40.0)})
    q = Profile(7, 12345, other, 0)  # not the subscription the run gave node 7
    crossed = _cross(m.Ping(q)).profile
    assert crossed is not first and crossed.subscription == other
    _bound({7: other})  # a new simulation in this process
    again = _cross(m.Ping(q)).profile
    assert again is not first and again.subscription is other
