"""§10 — queues: claim, ack, nack, extend, and the /work SSE push stream.

Every handler resolves its queue first (404 ``topic_not_found`` / 409 ``not_a_queue``) and only
then reads and validates its own query or body (§10, decision in docs/DECISIONS.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable
from typing import Any

import msgspec
import orjson
from topics_engine.queues import Claimed, ClaimedJob, WorkSubscription
from topics_engine.results import QueueCounters
from topics_engine.topic import Topic

from .. import wire
from ..context import ServerContext
from ..errors import NotAcceptable
from ..responses import Reply, after_ack, await_ack
from ..sse import RETRY, Emit, StreamReply, event, heartbeat
from ..validation import ValidatedRequest

HEARTBEAT_S = 15.0


def _opt(value: Any, default: Any = None) -> Any:
    return default if value is msgspec.UNSET else value


def _queue_body(req: ValidatedRequest, ctx: ServerContext) -> tuple[Topic, Any]:
    """The queue (404/409 first), then the request's validated body."""
    topic = ctx.queues.queue_topic(req.path["topic"])
    return topic, req.json()


def claim_jobs(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    topic, body = _queue_body(req, ctx)
    outcome = ctx.queues.claim(topic.name, body.node, _opt(body.max), _opt(body.lease_ms))
    if isinstance(outcome, Claimed):
        claimed = wire.claimed(topic.name, outcome.jobs, outcome.ready)
        return after_ack(outcome.wait, 200, claimed)
    return _claimed_in_cohort(ctx, topic.name, outcome)


async def _claimed_in_cohort(ctx: ServerContext, name: str, cohort: Awaitable[list[ClaimedJob]]) -> Reply:
    """A claim on a coalescing queue: served with the rest of its window's cohort."""
    started = time.perf_counter()
    jobs = await cohort
    waited = round((time.perf_counter() - started) * 1000, 3)
    ready = ctx.queues.counters(ctx.queues.queue_topic(name)).ready
    return Reply(200, wire.claimed(name, jobs, ready), {"throttle_wait_ms": waited})


def ack_jobs(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    topic, body = _queue_body(req, ctx)
    result = ctx.queues.ack(topic.name, body.node, body.seqs, _opt(body.lease_ids))
    return after_ack(result.wait, 200, lambda: wire.acked(result, _counters(ctx, topic.name)))


def nack_jobs(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    topic, body = _queue_body(req, ctx)
    result = ctx.queues.nack(topic.name, body.node, body.seqs, _opt(body.delay_ms, 0), _opt(body.lease_ids))
    return after_ack(result.wait, 200, lambda: wire.nacked(result, _counters(ctx, topic.name)))


def extend_leases(req: ValidatedRequest, ctx: ServerContext) -> Reply | Awaitable[Reply]:
    topic, body = _queue_body(req, ctx)
    result = ctx.queues.extend(topic.name, body.node, body.seqs, body.lease_ms, _opt(body.lease_ids))
    return after_ack(result.wait, 200, wire.extended(result))


def _counters(ctx: ServerContext, name: str) -> QueueCounters:
    return ctx.queues.counters(ctx.queues.queue_topic(name))


def _accepts_event_stream(accept: str | None) -> bool:
    if accept is None:
        return True
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(kinds & {"text/event-stream", "text/*", "*/*"})


def work_stream(req: ValidatedRequest, ctx: ServerContext) -> StreamReply:
    """PUSH mode: keep up to ``max`` jobs leased to this connection; refill as they are acked,
    nacked or expire; release what it holds when the connection goes away."""
    ctx.queues.queue_topic(req.path["topic"])
    accept = req.header("accept")
    if not _accepts_event_stream(accept):
        raise NotAcceptable(
            "the /work stream is text/event-stream; send Accept: text/event-stream", {"accept": accept}
        )
    q = req.query
    topic, sub = ctx.queues.subscribe(req.path["topic"], q.get("node"), q.get("max"), q.get("lease_ms"))
    stream = _WorkStream(ctx, topic, sub)
    return StreamReply(stream.produce, stream.close)


class _WorkStream:
    def __init__(self, ctx: ServerContext, topic: Topic, sub: WorkSubscription) -> None:
        self.ctx, self.topic, self.sub = ctx, topic, sub
        self.changed = asyncio.Event()
        sub.wake = self.changed.set

    async def produce(self, emit: Emit) -> None:
        await emit(RETRY + heartbeat())
        last_frame = time.monotonic()
        while True:
            error = self._gone()
            if error is not None:
                await emit(event("error", orjson.dumps(error)))
                return
            jobs = await self._refill()
            for job in jobs:
                await emit(event("job", job.encode(self.topic.name), job.seq))
            if jobs:
                last_frame = time.monotonic()
                continue
            idle = time.monotonic() - last_frame
            if idle >= HEARTBEAT_S:
                await emit(heartbeat())
                last_frame = time.monotonic()
                continue
            await self._wait(min(HEARTBEAT_S - idle, self._until_next_expiry()))

    def _gone(self) -> dict[str, Any] | None:
        current = self.ctx.engine.topic(self.topic.name)
        if current is self.topic:
            return None
        if current is None:
            return {"code": 404, "error": f'topic "{self.topic.name}" was deleted', "topic": self.topic.name}
        return {
            "code": 409,
            "error": f'topic "{self.topic.name}" is no longer a queue',
            "topic": self.topic.name,
        }

    async def _refill(self) -> list[ClaimedJob]:
        """Lease up to the stream's free depth; the jobs go out once their leases are durable
        (on an ``fsync`` queue with durable leases), exactly like a claim's."""
        self.ctx.queues.counters(self.topic)  # lazy expiry: frees expired held leases
        want = self.sub.max - len(self.sub.held)
        if want <= 0:
            return []
        outcome = self.ctx.queues.claim_for(self.topic, self.sub, want)
        if isinstance(outcome, Claimed):
            await await_ack(outcome.wait)
            return outcome.jobs
        return await outcome

    def _until_next_expiry(self) -> float:
        """Seconds until the earliest lease this stream holds expires (expiry is lazy: the
        stream must look again then to refill)."""
        queue = self.topic.queue
        if queue is None or not self.sub.held:
            return HEARTBEAT_S
        self.sub.held &= queue.leases.keys()  # defensive: only seqs still leased count as held
        deadlines = [queue.leases[s].deadline for s in self.sub.held]
        if not deadlines:
            return HEARTBEAT_S
        return max(0.0, (min(deadlines) - self.ctx.engine.clock.now_ms() + 1) / 1000)

    async def _wait(self, timeout: float) -> None:
        """Until a held job is acked/nacked/expired, new jobs are appended, or ``timeout``."""
        self.changed.clear()
        appended = asyncio.ensure_future(self.ctx.engine.notifier.wait(self.topic.name, timeout))
        changed = asyncio.ensure_future(self.changed.wait())
        try:
            await asyncio.wait({appended, changed}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (appended, changed):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def close(self) -> None:
        self.ctx.queues.release_subscription(self.topic, self.sub)
