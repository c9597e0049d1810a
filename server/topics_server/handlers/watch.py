"""Live fan-out: ``POST /v0/watch`` (a session), ``GET /v0/watch/:wid`` (its SSE stream)
and ``GET /v0/ws`` (the WebSocket upgrade; the protocol itself is ``websocket``).

The stream of a session (:class:`WatchStream`) runs on the shared :class:`StreamLoop`: it reads
the session's dirty topics one step at a time from their cursors, writes each step's frames
(``record`` / ``tombstone`` / ``caught-up`` / ``topic-deleted``, each with the session's resume
``id``), commits the step, and flushes (waiting while the client is slow: its next reads then
coalesce). Resume order on open: the session's own cursors, then ``Last-Event-ID`` —
only to rewind — which a malformed value cannot disturb (ignored, logged).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import Any

from topics_engine.coldreads import ColdRead, ColdReads
from topics_engine.watch import Position, WatchSession

from ..bodies import opt
from ..context import ServerContext
from ..errors import NotAcceptable, Unauthorized
from ..responses import Reply
from ..sse import RETRY, StreamReply, accepts_event_stream, error_event, heartbeat
from ..streams import SharedStep, Sink, SlowConsumer, StreamLoop
from ..subscriptions import lagged, positions_body, records_in, topic_starts, watch_options
from ..throttle import StreamPacer, priorities_of
from ..validation import ValidatedRequest
from ..watchframes import sse_frame
from ..websocket import WebSocketReply, check_upgrade

log = logging.getLogger("topics.watch")


def create_watch(req: ValidatedRequest, ctx: ServerContext) -> Reply:
    body = req.json()
    options = watch_options(body, ctx.engine.limits.max_limit)
    creator = req.principal.key_id if req.principal is not None else None
    session = ctx.watches.create(
        topic_starts(body.topics),
        options,
        opt(body.cursor),
        bool(req.query.get("lenient", False)),
        creator=creator,
    )
    return Reply(200, _session_body(session))


def _session_body(session: WatchSession) -> dict[str, Any]:
    return {
        "wid": session.wid,
        "stream_url": f"/v0/watch/{session.wid}",
        "session_ttl_ms": session.ttl_ms,
        "topics": positions_body(session.sub),
    }


def watch_stream(req: ValidatedRequest, ctx: ServerContext) -> StreamReply:
    session = ctx.watches.session(req.path["wid"])
    if req.principal is not None and session.creator != req.principal.key_id:
        # the wid is bound to its creating key: a leaked wid is not a credential
        raise Unauthorized("this watch session belongs to another API key; present the key that created it")
    accept = req.header("accept")
    if not accepts_event_stream(accept):
        raise NotAcceptable(
            "the watch stream is text/event-stream; send Accept: text/event-stream", {"accept": accept}
        )
    stream = WatchStream(ctx, session, req.header("last-event-id"))
    return StreamReply(stream.produce, stream.close)


def open_websocket(req: ValidatedRequest, ctx: ServerContext) -> WebSocketReply:
    check_upgrade(req.header)
    return WebSocketReply(ctx, req.principal)


class WatchStream:
    """The one open stream of a watch session (a newer one takes the session over)."""

    def __init__(self, ctx: ServerContext, session: WatchSession, last_event_id: str | None) -> None:
        self.ctx = ctx
        self.session = session
        self.last_event_id = last_event_id
        self.loop: StreamLoop | None = None
        self.opened = False
        self.pacer = StreamPacer(ctx.throttle, ctx.engine.clock, "watch throttled under CPU pressure")
        self.cold = ColdReads()
        """Cold records a read of this stream missed: loaded by its task (never in a pump)."""
        self.shared_at: Position | None = None
        """The position :meth:`share_key` last found to share (read and committed by the group)."""

    def superseded(self) -> None:
        """Another stream took the session (docs/DECISIONS.md, "Takeover"): this one ends at its
        next turn."""
        if self.loop is not None:
            self.loop.wake()

    async def produce(self, sink: Sink) -> None:
        ctx, session = self.ctx, self.session
        clock = ctx.engine.clock
        sub = session.sub
        loop = self.loop = StreamLoop(
            sink,
            clock,
            sub.options.heartbeat_ms,
            lambda now: sink.write(heartbeat(now)),
            on_lagging=lambda: lagged([sub]),
        )
        previous = ctx.watches.open(session, self, loop.wake)
        self.opened = True
        if isinstance(previous, WatchStream):
            previous.superseded()
        self._rewind()
        try:
            await loop.send(RETRY)
            loop.pump = self._pump_unless_paced
            loop.share = self
            while True:
                if session.owner is not self:
                    await loop.send(error_event(409, "superseded: another stream opened this watch session"))
                    return
                if ctx.throttle.active:
                    await self.pacer.pace(loop, self._priorities(), sorted(sub.positions))
                else:
                    self.pacer.calm()
                done = self._pump()
                await loop.settle()
                await self.cold.load()
                if done:
                    await loop.idle()
        except SlowConsumer as exc:
            sink.write(error_event(408, f"slow consumer: {exc}; the session keeps its cursors"))
        finally:
            loop.close()

    def _priorities(self) -> list[int]:
        """The effective priorities of the topics this stream follows, now."""
        positions = self.session.sub.positions.values()
        return priorities_of(self.ctx.engine.clock, (position.topic for position in positions))

    def _pump_unless_paced(self) -> bool:
        """The pump a wake-up runs in the parked task's place: a throttled stream leaves the
        delivery to its task, which paces it."""
        throttle = self.ctx.throttle
        if throttle.active and throttle.stream_pause_ms(self._priorities()):
            return False
        return self._pump()

    def _pump(self) -> bool:
        """Write every frame ready now (each step committed once written); False when the task
        must act: the client is not keeping up, or another stream took the session."""
        session, loop, cache = self.session, self.loop, self.ctx.frames
        assert loop is not None
        sub, sink = session.sub, loop.sink
        while session.owner is self and not sink.blocked:
            try:
                step = self.cold.attempt(sub.next_step)
            except ColdRead:
                return False  # the task loads the cold records, then pumps again
            if step is None:
                return True
            name = step.position.name
            for ev in step.events:
                loop.write(sse_frame(ev, session.event_id((name, ev.cursor)), cache))
            sub.commit(step)
            self.ctx.requests.pushed["watch"] += records_in(step)
        return False

    # -- Shareable (streams "Broadcast": many sessions at one position, one read and one send) --

    def share_key(self) -> Hashable | None:
        """Sessions following one topic, at the same cursor of it with the same options, write
        the same frames (a one-topic session's ids depend only on the topic and the cursor) —
        unless taken over, paced (as :meth:`_pump_unless_paced`: the throttle's cutoff is over
        every topic it serves), or loading cold records."""
        session = self.session
        if session.owner is not self or not self.cold.idle:
            return None
        throttle = self.ctx.throttle
        if throttle.active and throttle.stream_pause_ms(self._priorities()):
            return None
        sub = session.sub
        position = self.shared_at = sub.only_dirty()
        if position is None:
            return None
        return ("sse", *sub.share_key(position))

    def share_read(self) -> SharedStep | None:
        session, position = self.session, self.shared_at
        assert position is not None
        sub = session.sub
        step = self.cold.attempt(lambda: sub.read(position))
        if step.more or step.ended:
            return None
        name, cache = position.name, self.ctx.frames
        frames = [sse_frame(ev, session.event_id((name, ev.cursor)), cache) for ev in step.events]
        return SharedStep(frames, step, records_in(step))

    def share_commit(self, shared: SharedStep) -> None:
        position = self.shared_at
        assert position is not None
        self.session.sub.commit_same(position, shared.step)
        self.ctx.requests.pushed["watch"] += shared.records

    def _rewind(self) -> None:
        token = self.last_event_id
        if not token:
            return
        cursors = self.session.resolve(token.strip())
        if cursors is None:
            log.info("watch %s: ignoring a malformed Last-Event-ID %r", self.session.wid, token[:80])
            return
        self.session.sub.rewind(cursors)

    def close(self) -> None:
        self.cold.release()
        if self.opened:
            self.ctx.watches.close(self.session, self)
