"""Long-poll plumbing (§3 wait_ms): Notifier wake-ups on append / topic delete, timeouts.

Waits are tiny (<= 50 ms) and every successful wait is woken explicitly, never by the clock.
"""

from __future__ import annotations

import asyncio

import pytest
from topics_engine import Engine
from topics_engine.errors import TopicFull
from topics_engine.fanout import Hub

from .conftest import data, seqs

TINY = 0.05


async def _started(coro: object) -> asyncio.Task[bool]:
    task = asyncio.ensure_future(coro)  # type: ignore[arg-type]
    await asyncio.sleep(0)  # let the waiter park
    return task


async def test_append_wakes_waiter(engine: Engine) -> None:
    engine.put_topic("t", {})
    waiter = await _started(engine.hub.wait("t", 5.0))
    assert not waiter.done()
    engine.append("t", data(2))
    assert await asyncio.wait_for(waiter, 1.0) is True
    assert seqs(engine.diff("t")) == [1, 2]


async def test_lazy_create_wakes_waiter(engine: Engine) -> None:
    waiter = await _started(engine.hub.wait("new", 5.0))
    engine.append("new", data(1))
    assert await asyncio.wait_for(waiter, 1.0) is True


async def test_all_waiters_on_topic_woken(engine: Engine) -> None:
    engine.put_topic("t", {})
    waiters = [await _started(engine.hub.wait("t", 5.0)) for _ in range(3)]
    engine.append("t", data(1))
    assert await asyncio.wait_for(asyncio.gather(*waiters), 1.0) == [True, True, True]


async def test_other_topic_does_not_wake(engine: Engine) -> None:
    engine.put_topic("a", {})
    waiter = await _started(engine.hub.wait("a", TINY))
    engine.append("b", data(1))
    assert await waiter is False


async def test_timeout_returns_false_and_cleans_up(engine: Engine) -> None:
    assert await engine.hub.wait("t", 0.01) is False
    assert engine.hub._waiters == {}


async def test_zero_or_negative_timeout_returns_immediately() -> None:
    n = Hub()
    assert await n.wait("t", 0) is False
    assert await n.wait("t", -1) is False
    assert n._waiters == {}


async def test_topic_delete_wakes_waiter(engine: Engine) -> None:
    engine.append("t", data(1))
    waiter = await _started(engine.hub.wait("t", 5.0))
    engine.delete_topic("t")
    assert await asyncio.wait_for(waiter, 1.0) is True


async def test_failed_or_deduped_writes_do_not_wake(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 1, "discard": "reject"})
    engine.append("t", data(1), idempotency_key="k")
    waiter = await _started(engine.hub.wait("t", TINY))
    engine.append("t", data(1), idempotency_key="k")  # deduped: nothing new
    with pytest.raises(TopicFull):
        engine.append("t", data(1))  # topic_full: nothing new
    assert await waiter is False


async def test_cancelled_waiter_is_removed() -> None:
    n = Hub()
    task = await _started(n.wait("t", 5.0))
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert n._waiters == {}
    n.notify("t")  # nothing left to wake; must not raise


async def test_notify_before_wait_is_not_remembered() -> None:
    n = Hub()
    n.notify("t")
    assert await n.wait("t", 0.01) is False


async def test_long_poll_pattern(engine: Engine) -> None:
    """The diff + wait + diff loop a wait_ms handler runs."""
    engine.append("t", data(2))
    cursor = engine.diff("t").next_from_seq
    first = engine.diff("t", from_seq=cursor)
    assert first.caught_up and seqs(first) == []
    waiter = await _started(engine.hub.wait("t", 5.0))
    engine.append("t", data(1))
    assert await asyncio.wait_for(waiter, 1.0)
    assert seqs(engine.diff("t", from_seq=cursor)) == [3]
