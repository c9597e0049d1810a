"""What is acknowledged on enqueue (``disk`` and ``memory`` class writes, deletes, queue leases)
is in the WAL file before its answer leaves: a ``kill -9`` right after the client read the answer
cannot take it back (docs/STORAGE.md, the durability classes; docs/DECISIONS.md, "Group-commit
window").

The check is exact, not timed: the WAL's ``writev`` looks at the client's socket through
``MSG_PEEK``. Over loopback the server's answer is in the client's receive queue as soon as the
server's ``write`` returns, and the client reads every answer whole before it sends the next
request — so any byte waiting there while the WAL writes is an answer that left before the bytes
it acknowledges were written."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from topics_server.context import ServerContext

from .processes import NO_THROTTLE
from .test_native_http import Conn, Peek, request
from .test_websocket import Raw, serve


class Witness:
    """Wraps the WAL's ``writev``: at every write, notes whether the client already holds an
    answer it has not read (an answer that left before this write)."""

    def __init__(self, ctx: ServerContext, conn: Conn | Raw) -> None:
        self.client = Peek(conn.writer)
        self.writes = 0
        self.answers_ahead: list[bytes] = []
        fs = ctx.engine.persistence.wal.fs  # type: ignore[attr-defined]
        original = fs.writev

        def writev(fd: int, parts: list[bytes]) -> None:
            self.writes += 1
            ahead = self.client.unread()
            if ahead:
                self.answers_ahead.append(ahead)
            original(fd, parts)

        fs.writev = writev


def _acknowledged_on_enqueue() -> Iterator[tuple[str, str, Any]]:
    """Requests whose answer acknowledges a WAL frame that is not fsynced first: on the log
    ``t`` and the queue ``q``."""
    yield "POST", "/v0/topics/t", {"records": [{"data": {"n": 1}}]}
    yield "POST", "/v0/topics/t", {"records": [{"data": {"n": i}} for i in range(2, 40)]}
    yield "POST", "/v0/topics/t/delete", {"before_seq": 2}
    yield "POST", "/v0/topics/q", {"records": [{"data": {"job": i}} for i in range(8)]}
    yield "POST", "/v0/topics/q/claim", {"node": "w", "max": 4}
    yield "POST", "/v0/topics/q/ack", {"node": "w", "seqs": [1, 2]}
    yield "POST", "/v0/topics/q/nack", {"node": "w", "seqs": [3]}


@pytest.mark.parametrize("durability", ["disk", "memory"])
async def test_no_answer_leaves_before_the_wal_holds_what_it_acknowledges(
    served: tuple[ServerContext, int], durability: str
) -> None:
    ctx, port = served
    conn = await Conn.open(port)
    await conn.call("PUT", "/v0/topics/t", {"durability": durability})
    await conn.call(
        "PUT", "/v0/topics/q", {"durability": durability, "type": "queue", "leases_durable": True}
    )
    witness = Witness(ctx, conn)
    answers = [await conn.call(*step) for step in _acknowledged_on_enqueue()]
    assert answers[1]["last_seq"] == 39 and answers[4]["count"] == 4
    assert witness.writes >= len(answers)  # every step wrote to the WAL
    assert witness.answers_ahead == []
    witness.client.close()
    conn.close()


async def test_a_watcher_sees_a_record_only_after_the_wal_holds_it(served: tuple[ServerContext, int]) -> None:
    """A record shown to a watcher and then lost to a crash would leave its seq to be handed
    out again with other data; the watcher's stream is checked like an answer."""
    ctx, port = served
    writer = await Conn.open(port)
    await writer.call("PUT", "/v0/topics/w", {"durability": "disk"})
    session = await writer.call("POST", "/v0/watch", {"topics": {"w": {"tail": True}}})
    watcher = await Conn.open(port)
    watcher.send(request("GET", session["stream_url"]))
    head = await asyncio.wait_for(watcher.reader.readuntil(b"\r\n\r\n"), 10)
    assert b" 200 " in head.split(b"\r\n")[0]
    witness = Witness(ctx, watcher)
    for i in range(5):
        await writer.call("POST", "/v0/topics/w", {"records": [{"data": i}]})
        got = b""
        while b'"data":%d' % i not in got:
            got += await asyncio.wait_for(watcher.reader.read(65536), 10)
    assert witness.writes >= 5
    assert witness.answers_ahead == []
    witness.client.close()
    writer.close()
    watcher.close()


async def test_a_websocket_publish_is_acked_only_after_the_wal_holds_it(tmp_path: Path) -> None:
    async with serve({"TOPICS_DATA_DIR": str(tmp_path / "data"), **NO_THROTTLE}) as server:
        await server.put("p", {"durability": "disk"})
        raw = await server.raw()
        await raw.upgrade()
        witness = Witness(server.ctx, raw)
        for i in range(5):
            raw.send_json({"op": "publish", "request_id": str(i), "topic": "p", "records": [{"data": i}]})
            ack = (await raw.frame()).json()
            assert ack["op"] == "ack" and ack["last_seq"] == i + 1, ack
        assert witness.writes >= 5
        assert witness.answers_ahead == []
        witness.client.close()


async def test_a_work_stream_pushes_a_job_only_after_the_wal_holds_its_lease(
    served: tuple[ServerContext, int],
) -> None:
    """A job pushed on ``/work`` is a lease acknowledged like a claim's: a crash right after the
    worker read it must not free the job for another worker while this one holds it."""
    ctx, port = served
    writer = await Conn.open(port)
    await writer.call("PUT", "/v0/topics/q", {"durability": "disk", "type": "queue", "leases_durable": True})
    worker = await Conn.open(port)
    worker.send(request("GET", "/v0/topics/q/work?node=w&max=10", headers={"Accept": "text/event-stream"}))
    head = await asyncio.wait_for(worker.reader.readuntil(b"\r\n\r\n"), 10)
    assert b" 200 " in head.split(b"\r\n")[0]
    got = b""
    while b"retry:" not in got:  # the stream's opening frames: nothing is leased yet
        got += await asyncio.wait_for(worker.reader.read(65536), 10)
    witness = Witness(ctx, worker)
    for i in range(5):
        await writer.call("POST", "/v0/topics/q", {"records": [{"data": {"job": i}}]})
        got = b""
        while b'"job":%d' % i not in got:
            got += await asyncio.wait_for(worker.reader.read(65536), 10)
    assert witness.writes >= 10  # the appends and the leases
    assert [ahead for ahead in witness.answers_ahead if b"event: job" in ahead] == []
    witness.client.close()
    writer.close()
    worker.close()


async def test_a_read_is_answered_though_a_write_before_it_fails(served: tuple[ServerContext, int]) -> None:
    """An ``fsync`` write waits for its sync, its frame still queued, when a read arrives in
    the same loop iteration: the read's answer writes the queue (which fails), but the failure
    is the write's — it gets the read-only ``503``, the read its ``200`` (reads still work)."""
    ctx, port = served
    writer, reader = await Conn.open(port), await Conn.open(port)
    await writer.call("PUT", "/v0/topics/f", {"durability": "fsync"})
    await writer.call("PUT", "/v0/topics/r", {"durability": "disk"})
    await writer.call("POST", "/v0/topics/r", {"records": [{"data": 1}]})
    fs = ctx.engine.persistence.wal.fs  # type: ignore[attr-defined]

    def writev(fd: int, parts: list[bytes]) -> None:
        raise OSError(errno.EIO, "injected EIO")

    fs.writev = writev
    # both requests wait in their sockets before the server's loop looks: one iteration serves both
    writer.send(request("POST", "/v0/topics/f", {"records": [{"data": 2}]}))
    reader.send(request("GET", "/v0/topics/r"))
    status, _, raw = await reader.response()
    assert status == 200, raw
    status, _, raw = await writer.response()
    assert status == 503 and orjson.loads(raw)["error"]["detail"]["wal_read_only"] is True, raw
    writer.close()
    reader.close()
