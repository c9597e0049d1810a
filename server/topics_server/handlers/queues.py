"""Queues: claim, ack, nack, extend, and the /work SSE push stream.

Every handler resolves its queue first (404 ``topic_not_found`` / 409 ``not_a_queue``) and only
then reads and validates its own query or body (docs/DECISIONS.md).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from topics_engine.coldreads import ColdChunk, ColdReads, preload, preload_now
from topics_engine.queues import Claimed, ClaimedJob, WorkSubscription
from topics_engine.results import QueueCounters
from topics_engine.topic import Topic

from .. import wire
from ..bodies import opt
from ..context import ServerContext
from ..errors import NotAcceptable
from ..responses import Reply, after_ack, await_ack
from ..sse import RETRY, StreamReply, accepts_event_stream, error_event, event, heartbeat
from ..streams import Sink, SlowConsumer, StreamLoop
from ..throttle import StreamPacer, priorities_of
from ..validation import ValidatedRequest

HEARTBEAT_MS = 15_000


def _queue_body(req: ValidatedRequest, ctx: ServerContext) -> tuple[Topic, Any]:
    """The queue (404/409 first), then the request's validated body."""
    topic = ctx.queues.queue_topic(req.path["topic"])
    return topic, req.json()


def claim_jobs(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    topic, body = _queue_body(req, ctx)
    return _with_records(ctx.queues.cold_chunks(topic.name, opt(body.max)), lambda: _claim(ctx, topic, body))


def _with_records(
    chunks: list[ColdChunk], step: Callable[[], Reply | Awaitable[Reply]]
) -> Reply | Awaitable[Reply]:
    """Run ``step`` (a claim, a dead-letter move: it cannot be repeated) with the cold chunks
    it reads pinned: at once when they are in memory or the OS page cache, else once they are
    loaded off the event loop — the step itself never waits for a disk."""
    reads, missing = preload_now(chunks)
    if missing:
        return _with_loaded(reads, missing, step)
    try:
        return step()
    finally:
        reads.release()


async def _with_loaded(
    reads: ColdReads, missing: list[ColdChunk], step: Callable[[], Reply | Awaitable[Reply]]
) -> Reply:
    await preload(missing, reads)
    try:
        reply = step()
    finally:
        reads.release()
    return await reply if isinstance(reply, Awaitable) else reply


def _claim(ctx: ServerContext, topic: Topic, body: Any) -> Reply | Awaitable[Reply]:
    claimed = ctx.queues.claim(topic.name, body.node, opt(body.max), opt(body.lease_ms))
    if claimed.coalesced:
        return _claimed_in_cohort(ctx, claimed)
    return after_ack(claimed.wait, 200, wire.claimed(topic.name, claimed.jobs, claimed.counters))


async def _claimed_in_cohort(ctx: ServerContext, claimed: Claimed) -> Reply:
    """A claim on a coalescing queue: served with the rest of its window's cohort (the time
    spent waiting for it is reported as ``throttle_wait_ms``)."""
    started = time.perf_counter()
    await await_ack(claimed.wait)
    waited = round((time.perf_counter() - started) * 1000, 3)
    name = claimed.topic
    counters = ctx.queues.counters(ctx.queues.queue_topic(name))
    return Reply(200, wire.claimed(name, claimed.jobs, counters), {"throttle_wait_ms": waited})


def ack_jobs(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    topic, body = _queue_body(req, ctx)
    result = ctx.queues.ack(topic.name, body.node, body.seqs, opt(body.lease_ids))
    return after_ack(result.wait, 200, lambda: wire.acked(result, _counters(ctx, topic.name)))


def nack_jobs(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    topic, body = _queue_body(req, ctx)
    result = ctx.queues.nack(topic.name, body.node, body.seqs, opt(body.delay_ms, 0), opt(body.lease_ids))
    return after_ack(result.wait, 200, lambda: wire.nacked(result, _counters(ctx, topic.name)))


def dead_letter_jobs(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    """Move held jobs to the dead-letter topic now (an extension): their records are read
    first (cold chunks off the event loop, pinned), then moved in one append."""
    topic, body = _queue_body(req, ctx)
    chunks = ctx.queues.cold_chunks_of(topic.name, body.seqs)
    return _with_records(chunks, lambda: _dead_letter(ctx, topic, body))


def _dead_letter(ctx: ServerContext, topic: Topic, body: Any) -> Reply | Awaitable[Reply]:
    result = ctx.queues.dead_letter(topic.name, body.node, body.seqs, opt(body.lease_ids), opt(body.reason))
    return after_ack(result.wait, 200, lambda: wire.dead_lettered(result, _counters(ctx, topic.name)))


def extend_leases(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    topic, body = _queue_body(req, ctx)
    result = ctx.queues.extend(topic.name, body.node, body.seqs, body.lease_ms, opt(body.lease_ids))
    return after_ack(result.wait, 200, wire.extended(result))


def list_leases(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    ctx.queues.queue_topic(req.path["topic"])  # 404 / 409 before the query is validated
    q = req.query
    cursor = q.get("cursor")
    page = ctx.queues.leases(req.path["topic"], q.get("node"), q.get("page_size", 0), int(cursor or 0))
    return Reply(200, wire.lease_page(page))


def _counters(ctx: ServerContext, name: str) -> QueueCounters:
    return ctx.queues.counters(ctx.queues.queue_topic(name))


def work_stream(req: ValidatedRequest, ctx: ServerContext) -> StreamReply:
    """PUSH mode: keep up to ``max`` jobs leased to this connection; refill as they are acked,
    nacked or expire; release what it holds when the connection goes away."""
    ctx.queues.queue_topic(req.path["topic"])
    accept = req.header("accept")
    if not accepts_event_stream(accept):
        raise NotAcceptable(
            "the /work stream is text/event-stream; send Accept: text/event-stream", {"accept": accept}
        )
    q = req.query
    topic, sub = ctx.queues.subscribe(req.path["topic"], q["node"], q.get("max"), q.get("lease_ms"))
    stream = _WorkStream(ctx, topic, sub)
    return StreamReply(stream.produce, stream.close)


WORK_ROUND_BYTES = 32 << 10
"""About the most job-frame bytes a ``/work`` stream leases and writes in one round before it
looks whether the client keeps up (``StreamLoop.flush``): a stream with ``max=1000`` does not
write a thousand jobs into the buffer of a client that reads nothing. A round leases
``WORK_ROUND_BYTES // (largest job frame it sent so far)`` jobs, at least one."""


class _WorkStream:
    """One /work connection on the shared :class:`StreamLoop`: woken by appends to the queue
    (hub listener) and by changes to the jobs it holds (the subscription's ``wake``)."""

    def __init__(self, ctx: ServerContext, topic: Topic, sub: WorkSubscription) -> None:
        self.ctx, self.topic, self.sub = ctx, topic, sub
        self.loop: StreamLoop | None = None
        self.frame_bytes = 0
        """The largest job frame this stream sent (0: none yet): sizes a round's lease."""
        self.pacer = StreamPacer(ctx.throttle, ctx.engine.clock, "work stream paced under CPU pressure")

    def topic_changed(self, name: str) -> None:
        if self.loop is not None:
            self.loop.wake()

    async def produce(self, sink: Sink) -> None:
        engine = self.ctx.engine
        loop = self.loop = StreamLoop(
            sink, engine.clock, HEARTBEAT_MS, lambda now: sink.write(heartbeat(now))
        )
        self.sub.wake = loop.wake
        engine.hub.listen(self.topic.name, self)
        try:
            await loop.send(RETRY + heartbeat(engine.clock.now_ms()))
            while True:
                gone = self._gone()
                if gone is not None:
                    await loop.send(gone)
                    return
                if self.ctx.throttle.active:  # leasing is throttled like a claim
                    await self.pacer.pace(loop, priorities_of(engine.clock, [self.topic]))
                else:
                    self.pacer.calm()
                jobs = await self._refill()
                for job in jobs:
                    frame = event("job", job.encode(self.topic.name), job.seq)
                    self.frame_bytes = max(self.frame_bytes, len(frame))
                    loop.write(frame)
                if jobs:
                    self.ctx.requests.pushed["work"] += len(jobs)
                    await loop.flush()
                    continue
                await loop.idle(self._until_next_change_ms())
        except SlowConsumer as exc:
            sink.write(error_event(408, str(exc)))
        finally:
            engine.hub.unlisten(self.topic.name, self)
            loop.close()

    def _gone(self) -> bytes | None:
        """The final error frame if the queue was deleted or recreated under the stream."""
        name = self.topic.name
        current = self.ctx.engine.topic(name)
        if current is self.topic:
            return None
        if current is None:
            return error_event(404, f'topic "{name}" was deleted', topic=name)
        return error_event(409, f'topic "{name}" is no longer a queue', topic=name)

    async def _refill(self) -> list[ClaimedJob]:
        """Lease up to the stream's free depth; the jobs go out once their leases are durable
        (on an ``fsync`` queue with durable leases), exactly like a claim's."""
        self.ctx.engine.queue_in_flight(self.topic)  # lazy expiry: frees expired held leases
        want = self.sub.max - len(self.sub.held)
        if want <= 0:
            return []
        # one round: about WORK_ROUND_BYTES of frames (the first job sizes the rounds after it)
        want = min(want, max(1, WORK_ROUND_BYTES // self.frame_bytes)) if self.frame_bytes else 1
        reads, missing = preload_now(self.ctx.queues.cold_chunks(self.topic.name, want))
        if missing:
            await preload(missing, reads)
        persistence = self.ctx.engine.persistence
        mark = persistence.mark()
        try:
            claimed = self.ctx.queues.claim_for(self.topic, self.sub, want)
        finally:
            reads.release()
        await await_ack(claimed.wait)
        persistence.write_queued(mark)  # the leases, in the page cache before the jobs leave
        return claimed.jobs

    def _until_next_change_ms(self) -> int | None:
        """Milliseconds until the stream must look again (expiry is lazy, with no timers): with
        free depth, until any lease in the queue expires or a delayed job comes due (either frees
        a job to push); when full, until the earliest lease it holds expires. ``None``: nothing
        pending, only an append or a change to its jobs wakes it (``Queues.next_push_at``)."""
        at = self.ctx.queues.next_push_at(self.topic, self.sub)
        return None if at is None else max(0, at - self.ctx.engine.clock.steady_ms())

    def close(self) -> None:
        self.ctx.queues.release_subscription(self.topic, self.sub)
