"""Named consumers through the SDK (an extension, issue 25) against a real server: the
control-plane methods (both clients), and ``consume`` — reading from the committed cursor,
committing every ``commit_every`` records, on close and when exhausted, only what was handled
when a ``with`` block fails, following, creating the consumer (or saying how), and a second
reader that committed further."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest
import topics

from tests.server.processes import ServerProcess

from .test_client import Calls, sdk  # noqa: F401 — the fixture, both clients

Name = Callable[[str], str]


def fill(client: topics.Client, topic: str, n: int, start: int = 0) -> None:
    client.append_many(topic, [{"data": start + i} for i in range(n)])


async def test_the_control_plane(sdk: Calls, name: Name) -> None:  # noqa: F811
    t = name("cons")
    await sdk.call("append_many", t, [{"data": i} for i in range(6)])
    info = await sdk.call("put_consumer", t, "billing", from_seq=2)
    assert (info.consumer, info.topic, info.cursor, info.head_seq, info.lag, info.created) == (
        "billing",
        t,
        2,
        6,
        4,
        True,
    )
    again = await sdk.call("put_consumer", t, "billing", from_seq=5)
    assert (again.created, again.cursor) == (False, 2)
    assert (await sdk.call("put_consumer", t, "billing", from_seq=5, force=True)).cursor == 5
    committed = await sdk.call("commit", t, "billing", 6)
    assert (committed.cursor, committed.lag, committed.created) == (6, 0, None)
    with pytest.raises(topics.CursorBehind) as behind:
        await sdk.call("commit", t, "billing", 1)
    assert behind.value.status == 409 and behind.value.detail["cursor"] == 6
    with pytest.raises(topics.CursorBeyondHead):
        await sdk.call("commit", t, "billing", 7)
    assert (await sdk.call("commit", t, "billing", 1, force=True)).cursor == 1
    await sdk.call("put_consumer", t, "audit")
    assert [c.consumer for c in await sdk.call("list_consumers", t)] == ["audit", "billing"]
    assert [c.consumer for c in await sdk.call("list_consumers", t, prefix="b")] == ["billing"]
    assert (await sdk.call("consumer", t, "audit")).cursor == 0
    assert await sdk.call("delete_consumer", t, "audit") is True
    assert await sdk.call("delete_consumer", t, "audit") is False
    with pytest.raises(topics.ConsumerNotFound):
        await sdk.call("consumer", t, "audit")


def test_consume_commits_every_n_and_when_closed(client: topics.Client, name: Name) -> None:
    t = name("consume")
    fill(client, t, 7)
    with client.consume(t, "c", commit_every=3) as it:
        got = []
        for record in it:
            got.append(record.data)
            if record.data == 1:  # two handled, the second in hand: nothing committed yet
                assert client.consumer(t, "c").cursor == 0
            if record.data == 4:  # three handled and committed when the fourth was asked for
                assert (it.committed, client.consumer(t, "c").cursor) == (3, 3)
            if record.data == 5:
                break
    assert got == [0, 1, 2, 3, 4, 5]
    assert client.consumer(t, "c").cursor == 6  # closing committed the last record handed out
    assert [r.data for r in client.consume(t, "c")] == [6]  # exhausted: committed too
    assert client.consumer(t, "c").cursor == 7
    assert list(client.consume(t, "c")) == []


def test_a_failed_with_block_commits_only_what_was_handled(client: topics.Client, name: Name) -> None:
    t = name("fails")
    fill(client, t, 5)
    with pytest.raises(RuntimeError), client.consume(t, "c", commit_every=100) as it:
        for record in it:
            if record.data == 3:
                raise RuntimeError("the handler failed on record 4")
    assert client.consumer(t, "c").cursor == 3  # records 1-3 handled; record 4 comes again
    assert [r.seq for r in client.consume(t, "c")] == [4, 5]


def test_consume_creates_the_consumer_where_asked(client: topics.Client, name: Name) -> None:
    t = name("create")
    fill(client, t, 5)
    with client.consume(t, "late", from_seq=3) as it:
        assert [r.seq for r in it] == [4, 5]
    with pytest.raises(topics.ConsumerNotFound) as missing:
        next(client.consume(t, "ghost", create=False))
    assert "put_consumer" in missing.value.message and "topics consumer create" in missing.value.message
    with pytest.raises(topics.TopicNotFound):
        next(client.consume(name("nope"), "c"))


def test_a_follower_waits_for_new_records(client: topics.Client, name: Name) -> None:
    t = name("follow")
    fill(client, t, 2)
    it = client.consume(t, "f", follow=True, commit_every=1)
    assert [next(it).data, next(it).data] == [0, 1]
    fill(client, t, 1, start=2)  # a caught-up follower does not stop: it reads what comes
    assert next(it).data == 2
    it.close()
    assert client.consumer(t, "f").cursor == 3


def test_a_caught_up_follower_commits_what_it_handled_before_it_waits(
    client: topics.Client, name: Name
) -> None:
    """Fewer than ``commit_every`` records, then nothing new: the follower commits them before
    its long-poll, so an idle consumer shows no lag and a restart repeats nothing."""
    t = name("idle")
    fill(client, t, 3)
    client.put_consumer(t, "idle")
    it = client.consume(t, "idle", follow=True, commit_every=100)
    got: list[int] = []
    reader = threading.Thread(target=lambda: got.extend(r.seq for r in it), daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    while client.consumer(t, "idle").cursor != 3:
        assert time.monotonic() < deadline, f"handed out {got}, never committed while waiting"
        time.sleep(0.02)
    assert got == [1, 2, 3] and client.consumer(t, "idle").lag == 0
    it.close()  # ends the iteration after the long-poll the thread is in
    fill(client, t, 1)
    reader.join(30)
    assert not reader.is_alive()


async def test_an_async_follower_commits_before_it_waits(aclient: topics.AsyncClient, name: Name) -> None:
    t = name("aidle")
    await aclient.append_many(t, [{"data": i} for i in range(2)])
    it = aclient.consume(t, "idle", follow=True, commit_every=100)
    assert [(await anext(it)).seq, (await anext(it)).seq] == [1, 2]
    waiting = asyncio.ensure_future(anext(it))  # caught up: commits, then long-polls
    deadline = time.monotonic() + 30
    while (await aclient.consumer(t, "idle")).cursor != 2:
        assert time.monotonic() < deadline, "never committed while waiting"
        await asyncio.sleep(0.02)
    await aclient.append(t, "new")
    assert (await asyncio.wait_for(waiting, 30)).data == "new"
    await it.close()
    assert (await aclient.consumer(t, "idle")).cursor == 3


def test_a_reader_behind_another_one_is_told(client: topics.Client, name: Name) -> None:
    t = name("twice")
    fill(client, t, 10)
    it = client.consume(t, "shared", commit_every=1)
    next(it)
    client.commit(t, "shared", 8)  # another process took over and committed further
    with pytest.raises(topics.CursorBehind):
        next(it)  # commits the first record before reading on: refused


def test_consume_needs_an_admin_key_only_to_create(
    make_server: Callable[..., ServerProcess], name: Name
) -> None:
    server = make_server({"TOPICS_API_KEYS": "admin,reader:rw"})
    t = name("keys")
    with (
        topics.Client(server.url, api_key="admin") as admin,
        topics.Client(server.url, api_key="reader") as reader,
    ):
        fill(admin, t, 3)
        with pytest.raises(topics.ConsumerNotFound) as refused:
            next(reader.consume(t, "worker"))
        assert "admin key" in refused.value.message
        assert isinstance(refused.value.__cause__, topics.Forbidden)
        admin.put_consumer(t, "worker", from_seq=1)
        assert [r.seq for r in reader.consume(t, "worker")] == [2, 3]
        assert admin.consumer(t, "worker").cursor == 3


async def test_the_async_consume(aclient: topics.AsyncClient, name: Name) -> None:
    t = name("async")
    await aclient.append_many(t, [{"data": i} for i in range(5)])
    async with aclient.consume(t, "a", commit_every=2) as it:
        got = [r.data async for r in it]
    assert got == [0, 1, 2, 3, 4]
    assert (await aclient.consumer(t, "a")).cursor == 5
    await aclient.append(t, 5)
    with pytest.raises(RuntimeError):
        async with aclient.consume(t, "a") as it:
            async for record in it:
                raise RuntimeError(f"failed on {record.data}")
    assert (await aclient.consumer(t, "a")).cursor == 5
    assert [r.data async for r in aclient.consume(t, "a")] == [5]
    assert (await aclient.consumer(t, "a")).cursor == 6


def test_a_consumer_at_cursor_0_is_owed_what_the_cap_evicted(client: topics.Client, name: Name) -> None:
    """A plain read from 0 starts at the earliest retained record (``trimmed``, no loss); a
    consumer whose committed cursor is 0 was owed seq 1 on, so it learns of the loss."""
    t = name("owed")
    client.create_topic(t, cap_records=5)
    client.put_consumer(t, "c")  # an empty topic: cursor 0
    client.append_many(t, [{"data": i} for i in range(8)])  # seqs 1..3 evicted
    assert [r.seq for r in client.read(t)] == [4, 5, 6, 7, 8]
    with pytest.raises(topics.DataLoss) as err, client.consume(t, "c") as records:
        list(records)
    assert (err.value.gap_from, err.value.gap_to, err.value.reason) == (1, 3, "cap")
    with client.consume(t, "c", on_gap="skip") as records:
        assert [r.seq for r in records] == [4, 5, 6, 7, 8]
        assert [(g.gap_from, g.gap_to) for g in records.gaps] == [(1, 3)]
