"""Issue 75 item 3: 16 daemons on one IP took 6 of a target's 10 links,
both ring links among them. With the link cap (2 per host, never both ring
links) they hold at most 2 of any honest node's links."""

from __future__ import annotations

from sybils import sybil_swarm


async def test_sybils_on_one_host_hold_at_most_two_links_and_never_both_ring_links():
    report = await sybil_swarm(honest=10, sybils=16, per_host=2)
    assert report.max_links_to_sybils <= 2, report
    assert report.both_ring_links == 0, report
    assert report.nodes_linking_to_sybils >= 1, report  # they are in the overlay all the same
