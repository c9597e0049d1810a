"""§10 — queues: claim, ack, nack, extend, and the /work SSE push stream."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import orjson
from topics_engine.errors import NotAcceptable
from topics_engine.queues import ClaimedJob, ClaimResult, WorkSubscription
from topics_engine.topic import Topic

from ..context import ServerContext
from ..responses import Reply, settle
from ..sse import RETRY, Emit, StreamReply, event, heartbeat
from ..validation import ValidatedRequest

HEARTBEAT_S = 15.0


def _counters(ctx: ServerContext, name: str) -> tuple[int, int]:
    topic = ctx.engine.queues.queue_topic(name)
    return ctx.engine.queues.counters(topic)


async def claim_jobs(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    name, body = req.path["topic"], req.body
    queues = ctx.engine.queues
    started = time.perf_counter()
    outcome = queues.claim(name, body.get("node"), body.get("max"), body.get("lease_ms"))
    perf: dict[str, Any] = {}
    if isinstance(outcome, ClaimResult):
        jobs, ready = outcome.jobs, outcome.ready
        perf = await settle(outcome.durable)
    else:  # coalescing window: served with the rest of the cohort
        jobs = await outcome
        perf["throttle_wait_ms"] = round((time.perf_counter() - started) * 1000, 3)
        ready, _ = _counters(ctx, name)
    body_bytes = b"".join(
        (
            b'{"topic":',
            orjson.dumps(name),
            b',"claimed":[',
            b",".join(j.encode() for j in jobs),
            b'],"count":%d,"ready":%d' % (len(jobs), ready),
        )
    )
    return Reply(200, body_bytes, perf)


async def ack_jobs(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    name, body = req.path["topic"], req.body
    result = ctx.engine.queues.ack(name, body.get("node"), body.get("seqs"), body.get("lease_ids"))
    perf = await settle(result.durable)
    ready, in_flight = _counters(ctx, name)
    return Reply(
        200,
        {
            "topic": name,
            "acked": len(result.done),
            "skipped": result.skipped,
            "ready": ready,
            "in_flight": in_flight,
        },
        perf,
    )


async def nack_jobs(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    name, body = req.path["topic"], req.body
    result = ctx.engine.queues.nack(
        name, body.get("node"), body.get("seqs"), body.get("delay_ms", 0), body.get("lease_ids")
    )
    perf = await settle(result.durable)
    ready, in_flight = _counters(ctx, name)
    return Reply(
        200,
        {
            "topic": name,
            "nacked": len(result.done),
            "skipped": result.skipped,
            "ready": ready,
            "in_flight": in_flight,
        },
        perf,
    )


async def extend_leases(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    name, body = req.path["topic"], req.body
    result = ctx.engine.queues.extend(
        name, body.get("node"), body.get("seqs"), body.get("lease_ms"), body.get("lease_ids")
    )
    perf = await settle(result.durable)
    return Reply(
        200,
        {
            "topic": name,
            "extended": len(result.done),
            "skipped": result.skipped,
            "deadlines": result.deadlines,
        },
        perf,
    )


def _accepts_event_stream(accept: str | None) -> bool:
    if accept is None:
        return True
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    return bool(kinds & {"text/event-stream", "text/*", "*/*"})


def work_stream(req: ValidatedRequest, ctx: ServerContext) -> StreamReply:
    """PUSH mode: keep up to ``max`` jobs leased to this connection; refill as they are acked,
    nacked or expire; release what it holds when the connection goes away."""
    accept = req.header("accept")
    if not _accepts_event_stream(accept):
        raise NotAcceptable(
            "the /work stream is text/event-stream; send Accept: text/event-stream", {"accept": accept}
        )
    q = req.query
    topic, sub = ctx.engine.queues.subscribe(req.path["topic"], q["node"], q["max"], q.get("lease_ms"))
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
                await emit(event("job", job.encode(self.topic.name), job.record.seq))
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
        self.ctx.engine.queues.counters(self.topic)  # lazy expiry: frees expired held leases
        want = self.sub.max - len(self.sub.held)
        if want <= 0:
            return []
        outcome = self.ctx.engine.queues.claim_for(self.topic, self.sub, want)
        return outcome if isinstance(outcome, list) else await outcome

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
        self.ctx.engine.queues.release_subscription(self.topic, self.sub)
