"""A swarm of honest daemons, each on a loopback address of its own, and
Sybils: many daemons on one address (one machine). Shared by
tests/test_sybils.py and benchmarks/sybil_links.py."""

from __future__ import annotations

import random
from contextlib import AsyncExitStack
from dataclasses import dataclass

import trio

import vinifera
from vinifera.schema import Schema

SCHEMA = Schema.numeric(1, 0.0, 1000.0)
SYBIL_IP = "127.0.9.1"


@dataclass
class SybilReport:
    honest: int
    sybils: int
    # over the honest nodes: the most links one of them has to the Sybils'
    # host, how many have both ring links there, and how many link to it at all
    max_links_to_sybils: int
    both_ring_links: int
    nodes_linking_to_sybils: int
    mean_links_to_sybils: float


async def sybil_swarm(honest: int, sybils: int, per_host: int, *, seed: int = 1,
                      period: float = 0.2, settle: int = 60) -> SybilReport:  # fmt: skip
    """Start the swarm (honest nodes enforce `per_host` links per host,
    loopback not exempt, each /32 a host), let it settle for `settle`
    periods, and report what the Sybils hold of the honest nodes' links."""
    rng = random.Random(seed)
    common = {"period": period, "subscription": "a0 in [0, 500]", "ports_per_host": 256}
    async with AsyncExitStack() as stack:
        nodes = []
        for i in range(honest):
            boot = [n.address for n in rng.sample(nodes, min(2, len(nodes)))]
            nodes.append(
                await stack.enter_async_context(
                    vinifera.Node(
                        SCHEMA,
                        listen=f"127.0.8.{i + 1}:0",
                        bootstrap=boot,
                        seed=seed * 1000 + i,
                        links_per_host=per_host,
                        link_ipv4_prefix=32,
                        loopback_links_exempt=False,
                        **common,
                    )  # fmt: skip
                )
            )
        for j in range(sybils):
            boot = [n.address for n in rng.sample(nodes, 2)]
            await stack.enter_async_context(
                vinifera.Node(
                    SCHEMA,
                    listen=f"{SYBIL_IP}:0",
                    bootstrap=boot,
                    seed=seed * 1000 + 500 + j,
                    links_per_host=0,
                    **common,
                )  # fmt: skip
            )
        await trio.sleep(settle * period)
        counts, both = [], 0
        for n in nodes:
            links = n.status()["links"]
            addrs = [links["succ"], links["pred"], *links["friends"], *links["small_world"]]
            on_sybil = [a is not None and a.startswith(SYBIL_IP + ":") for a in addrs]
            counts.append(sum(on_sybil))
            both += on_sybil[0] and on_sybil[1]
    return SybilReport(
        honest=honest,
        sybils=sybils,
        max_links_to_sybils=max(counts),
        both_ring_links=both,
        nodes_linking_to_sybils=sum(c > 0 for c in counts),
        mean_links_to_sybils=round(sum(counts) / len(counts), 2),
    )
