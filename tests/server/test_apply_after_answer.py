"""The native HTTP/1.1 transport answers a ``disk`` append as soon as its WAL write is done and
makes the records readable right after writing that answer, before it handles anything else
(``Request.apply_later``; ``Engine.append``). So the answer waits only on what it acknowledges,
and no request — pipelined on the same connection or sent by another client once it has the
answer — can see the topic without the records.

The order is checked exactly, as ``test_write_before_ack`` does: when the records are applied,
the client's socket is peeked (``MSG_PEEK``) for the answer."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import orjson
import pytest
from topics_engine.recordlog import RecordBatch
from topics_engine.topic import Topic
from topics_server.context import ServerContext

from .test_native_http import Conn, Peek, request


@pytest.fixture
def watch_applies(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Conn], list[bytes]]]:
    """``watch(conn)``: from then on, at every apply of an append, what waits unread on
    ``conn``'s socket is noted (``b""``: nothing) in the list it returns."""
    peeks: list[Peek] = []

    def watch(conn: Conn) -> list[bytes]:
        peek = Peek(conn.writer)
        peeks.append(peek)
        seen: list[bytes] = []
        original = Topic.apply_append

        def apply_append(topic: Topic, batch: RecordBatch, now_ms: int, steady_ms: int | None = None) -> None:
            seen.append(peek.unread())
            original(topic, batch, now_ms, steady_ms)

        monkeypatch.setattr(Topic, "apply_append", apply_append)
        return seen

    yield watch
    for peek in peeks:
        peek.close()


async def test_a_disk_append_is_answered_before_it_is_applied(
    served: tuple[ServerContext, int], watch_applies: Callable[[Conn], list[bytes]]
) -> None:
    _, port = served
    conn = await Conn.open(port)
    await conn.call("PUT", "/v0/topics/d", {"durability": "disk"})
    # the topic's first write may wait for its seq reservation's fsync; once answered, the
    # reservation covers the next writes, which are answered at once
    await conn.call("POST", "/v0/topics/d", {"records": [{"data": 0}]})
    seen = watch_applies(conn)
    conn.send(request("POST", "/v0/topics/d", {"records": [{"data": 1}, {"data": 2}]}))
    status, _, raw = await conn.response()
    assert status == 200 and orjson.loads(raw)["last_seq"] == 3
    assert len(seen) == 1 and seen[0].startswith(b"HTTP/1.1 200 ")
    assert (await conn.call("GET", "/v0/topics/d"))["count"] == 3
    conn.close()


async def test_a_write_whose_answer_waits_is_applied_before_it_and_seen_behind_it(
    served: tuple[ServerContext, int], watch_applies: Callable[[Conn], list[bytes]]
) -> None:
    """A batch that outruns its topic's seq reservation is answered once the new reservation
    is durable: the transport runs its apply as soon as the handler hands back the wait, so
    the records are visible before the answer, and to the requests pipelined behind it."""
    _, port = served
    conn = await Conn.open(port)
    await conn.call("PUT", "/v0/topics/r", {"durability": "disk"})
    await conn.call("POST", "/v0/topics/r", {"records": [{"data": 0}]})
    seen = watch_applies(conn)
    conn.send(
        request("POST", "/v0/topics/r", {"records": [{"data": i} for i in range(1, 5001)]})
        + request("GET", "/v0/topics/r")
    )
    written, info = [orjson.loads((await conn.response())[2]) for _ in range(2)]
    assert written["last_seq"] == 5001 and written["performance"]["fsync_ms"] > 0  # it waited
    assert seen == [b""] and info["count"] == 5001
    conn.close()


async def test_an_fsync_append_is_applied_before_its_answer(
    served: tuple[ServerContext, int], watch_applies: Callable[[Conn], list[bytes]]
) -> None:
    """Visible once durable, answered once durable: its apply runs first, as before."""
    _, port = served
    conn = await Conn.open(port)
    await conn.call("PUT", "/v0/topics/f", {"durability": "fsync"})
    seen = watch_applies(conn)
    assert (await conn.call("POST", "/v0/topics/f", {"records": [{"data": 1}]}))["last_seq"] == 1
    assert seen == [b""]
    conn.close()


@pytest.mark.parametrize("durability", ["disk", "memory", "ephemeral"])
async def test_requests_pipelined_behind_an_append_see_its_records(
    served: tuple[ServerContext, int], durability: str
) -> None:
    _, port = served
    conn = await Conn.open(port)
    await conn.call("PUT", "/v0/topics/p", {"durability": durability})
    conn.send(
        request("POST", "/v0/topics/p", {"records": [{"data": i} for i in range(3)]})
        + request("GET", "/v0/topics/p")
        + request("POST", "/v0/topics/p/diff", {"from_seq": 0})
        + request("POST", "/v0/topics/p", {"records": [{"data": 3}]})
        + request("POST", "/v0/topics/p/diff", {"from_seq": 0})
    )
    answers = [orjson.loads((await conn.response())[2]) for _ in range(5)]
    assert answers[0]["last_seq"] == 3 and answers[1]["count"] == 3
    assert len(answers[2]["records"]) == 3 and answers[3]["first_seq"] == 4
    assert [r["data"] for r in answers[4]["records"]] == [0, 1, 2, 3]
    conn.close()


async def test_another_client_that_has_the_answer_sees_the_records(served: tuple[ServerContext, int]) -> None:
    _, port = served
    writer, reader = await Conn.open(port), await Conn.open(port)
    await writer.call("PUT", "/v0/topics/o", {"durability": "disk"})
    for i in range(1, 51):
        assert (await writer.call("POST", "/v0/topics/o", {"records": [{"data": i}]}))["last_seq"] == i
        assert (await reader.call("GET", "/v0/topics/o"))["head_seq"] == i
    writer.close()
    reader.close()


async def test_an_apply_that_fails_after_the_answer_is_logged_and_the_connection_goes_on(
    served: tuple[ServerContext, int], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _, port = served
    conn = await Conn.open(port)
    await conn.call("PUT", "/v0/topics/x", {"durability": "disk"})

    def broken(*_: object) -> None:
        raise RuntimeError("injected apply failure")

    monkeypatch.setattr(Topic, "apply_append", broken)
    with caplog.at_level(logging.ERROR, logger="topics.server"):
        assert (await conn.call("POST", "/v0/topics/x", {"records": [{"data": 1}]}))["last_seq"] == 1
    assert any("left for after its answer failed" in r.getMessage() and r.exc_info for r in caplog.records)
    assert (await conn.call("GET", "/v0/health"))["status"] == "ok"
    conn.close()
