"""The Python API for applications that embed a node.

    async def main():
        async with vinifera.Node(schema="schema.toml", bootstrap=["10.0.0.1:7000"],
                                 subscription="temp in [0, 5]") as node:
            await node.publish(temp=3.5, city="Oslo")
            async for delivery in node.deliveries():
                print(delivery.values, delivery.hops)

    trio.run(main)

Leaving the block leaves the overlay gracefully. The node runs on trio; an
asyncio caller gets a RuntimeError that says so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack
from pathlib import Path

import sniffio
import trio

from vinifera.daemon.runner import Delivery, NodeRunner
from vinifera.daemon.settings import NodeSettings
from vinifera.expr import parse_subscription
from vinifera.schema import Schema
from vinifera.subscription import Subscription


def _require_trio() -> None:
    """The node's tasks run on trio: under asyncio (or anything else) say
    so plainly instead of failing deep inside trio."""
    try:
        library = sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        library = None
    if library != "trio":
        raise RuntimeError(
            f"vinifera.Node runs on trio, but this code runs under {library or 'no event loop'}: "
            "start it with trio.run(main) (pip install trio); from an asyncio program, run the "
            "node in a thread with trio.run, or run `vinifera-node run` and talk to its "
            "control socket"
        )


class Node:
    def __init__(
        self,
        schema: Schema | str | Path,
        *,
        listen: str = "127.0.0.1:0",
        bootstrap: Sequence[str] = (),
        subscription: str | Subscription | None = None,
        **settings,
    ) -> None:
        """`settings` are further NodeSettings fields (period, seed, log_file,
        control, network_key, advertise, friends, small_world, system, ...)."""
        if not isinstance(schema, Schema):
            schema = Schema.load(schema)
        if isinstance(subscription, str):
            subscription = parse_subscription(subscription, schema)
        self.settings = NodeSettings(
            schema=schema,
            listen=listen,
            bootstrap=tuple(bootstrap),
            subscription=subscription,
            **settings,
        )
        self._runner = NodeRunner(self.settings)
        self._stack: AsyncExitStack | None = None
        self._send, self._receive = trio.open_memory_channel(self.settings.delivery_buffer)
        self.deliveries_dropped = 0

    async def __aenter__(self) -> Node:
        _require_trio()
        if self._stack is not None:
            raise RuntimeError("this Node is already running")
        self._runner.add_listener(self._on_delivery)
        stack = AsyncExitStack()
        nursery = await stack.enter_async_context(trio.open_nursery())
        try:
            await nursery.start(self._runner.run)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc) -> bool:
        self._runner.stop()
        stack, self._stack = self._stack, None
        self._send.close()
        # The body's own exception propagates as is, not wrapped in the
        # nursery's exception group; the nursery only adds its own failures.
        await stack.aclose()
        return False

    def _on_delivery(self, d: Delivery) -> None:
        try:
            self._send.send_nowait(d)
        except trio.WouldBlock:
            self.deliveries_dropped += 1  # the application is not keeping up
        except trio.ClosedResourceError:
            pass  # stopping

    @property
    def address(self) -> str:
        return self._runner.address

    @property
    def runner(self) -> NodeRunner:
        return self._runner

    async def publish(self, values: Mapping | None = None, **kw) -> int:
        """Publish an event: a mapping or keyword arguments attribute=value.
        Returns its event id."""
        _require_trio()
        return await self._runner.publish({**(values or {}), **kw})

    async def subscribe(self, subscription: str | Subscription | None) -> Subscription | None:
        return await self._runner.subscribe(subscription)

    def status(self) -> dict:
        return self._runner.status()

    async def deliveries(self) -> AsyncIterator[Delivery]:
        """Delivered events, in order, until the node stops."""
        async for d in self._receive:
            yield d
