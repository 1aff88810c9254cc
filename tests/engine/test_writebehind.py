"""The write-behind coalesces a stream of changes to one key into few writes."""

from __future__ import annotations

import asyncio

from hosts.engine.writebehind import WriteBehind


async def test_a_steady_stream_of_changes_is_written_once_per_round():
    writes: list[int] = []
    behind = WriteBehind(delay=0.05)
    behind.start()

    def write_of(value: int):
        async def write() -> None:
            await asyncio.sleep(0.01)  # a write takes time; changes keep coming meanwhile
            writes.append(value)

        return write

    for value in range(200):
        behind.later("root-config", write_of(value))
        await asyncio.sleep(0.001)
    await behind.drain()
    await behind.stop()
    assert writes[-1] == 199
    assert len(writes) < 20


async def test_drain_waits_for_writes_scheduled_during_a_round():
    done: list[str] = []
    behind = WriteBehind(delay=0.01)
    behind.start()

    async def slow() -> None:
        behind.later("b", fast)
        await asyncio.sleep(0.01)
        done.append("a")

    async def fast() -> None:
        done.append("b")

    behind.later("a", slow)
    await asyncio.sleep(0.015)
    await behind.drain()
    assert done == ["a", "b"]
    await behind.stop()


async def test_a_key_written_again_keeps_its_first_place():
    order: list[str] = []
    behind = WriteBehind(delay=0.01)
    behind.start()

    def write_of(name: str):
        async def write() -> None:
            order.append(name)

        return write

    behind.later("session", write_of("session-1"))
    behind.later("chat", write_of("chat"))
    behind.later("session", write_of("session-2"))
    await asyncio.sleep(0.02)
    await behind.drain()
    await behind.stop()
    assert order == ["session-2", "chat"]


async def test_a_flush_writes_now_after_everything_scheduled_before_it():
    order: list[str] = []
    behind = WriteBehind(delay=3600)  # the background would not write within the test
    behind.start()

    def write_of(name: str):
        async def write() -> None:
            order.append(name)

        return write

    behind.later("session", write_of("session"))
    behind.later("chat", write_of("chat"))
    behind.later("turn", write_of("turn"))
    await behind.flush()
    assert order == ["session", "chat", "turn"]
    await behind.drain()  # nothing is left owed
    behind.later("later", write_of("later"))
    assert order == ["session", "chat", "turn"]
    await behind.flush()
    assert order[-1] == "later"
    await behind.stop()


async def test_a_flush_waits_for_a_round_under_way_and_never_overtakes_it():
    order: list[str] = []
    behind = WriteBehind(delay=0)
    behind.start()
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow() -> None:
        started.set()
        await release.wait()
        order.append("slow")

    async def fact() -> None:
        order.append("fact")

    behind.later("slow", slow)
    await started.wait()
    behind.later("fact", fact)
    flushing = asyncio.create_task(behind.flush())
    await asyncio.sleep(0)
    assert order == []
    release.set()
    await flushing
    assert order == ["slow", "fact"]
    await behind.stop()
