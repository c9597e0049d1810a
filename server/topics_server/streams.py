"""The loop every long-lived push stream runs on: ``/work``, the watch stream, the WebSocket.

A stream alternates between *sending* (frames it has, written to its :class:`Sink`) and *idling*
(nothing to send: wait until woken — new records, a lease change — or until a heartbeat is due).
:class:`StreamLoop` owns the three things they share:

- **backpressure**: :meth:`StreamLoop.flush` waits while the client is not taking what was
  written (the sink is ``blocked``). Nothing is buffered per stream above the transport: the
  stream reads again only once the client has caught up, so its next frames coalesce more
  records (up to its batch limits). A writer never waits for a stream.
- **slow consumers**: blocked for :data:`BUFFER_GRACE_MS`, the stream is lagging: its
  next :meth:`StreamLoop.settle` runs its ``on_lagging`` hook once (a watch or WebSocket then
  reports a loss met on its next read as ``from_seq_too_old``: ``subscriptions.lagged``);
  blocked for :data:`SLOW_CONSUMER_TIMEOUT_MS`, :meth:`flush` raises :class:`SlowConsumer` and
  the stream sends a final error and closes.
- **heartbeats**: when nothing went out for ``heartbeat_ms``, :meth:`idle` calls ``heartbeat(now_ms)``
  (which writes the stream's own kind: an SSE comment, a WebSocket ping) — one timer per stream,
  re-armed only when it fires (never per frame).

**Pumps.** A stream parked in :meth:`StreamLoop.idle` may register a ``pump``: a synchronous
"write every frame ready now" that returns False when the stream's task must act (the client
is not keeping up, the stream must end). A wake-up then runs the pump straight from one batch
callback per event-loop iteration — for every stream woken in that iteration — instead of
resuming each stream's task: a fan-out to a thousand idle watchers is a thousand pump calls, not
a thousand task switches. The batch runs after the current callback, so the write that caused
it is answered first, and in slices of :data:`PUMP_SLICE` streams, one per event-loop iteration,
so requests on other connections are not held behind a fan-out to thousands.

**Broadcast** (the live fan-out's fast path). Streams woken in one slice whose next step is
the very same read — a :class:`Shareable` stream gives the same :meth:`Shareable.share_key`:
one dirty topic, the same topic, cursor, liveness and options — and whose sink is a
:class:`DirectSink` ready for a direct send form a group: the first member reads the step
(:meth:`Shareable.share_read`), its frames are put in wire form once (chunk framing or WebSocket
frame heads included) and :func:`broadcast.send_all` hands the bytes to every member's socket
in one call (the GIL released, no Python per socket); then each member commits the step
(:meth:`Shareable.share_commit`) as its own pump would have. What a socket did not take goes to
its transport (``write``: the transport's buffering and pause/resume flow control take over, so
backpressure and the slow-consumer rules are unchanged); a socket that failed (EPIPE,
ECONNRESET, ...) and everything unusual — a read not caught up, a topic deleted, a cold read,
a group of one — runs the member's own pump, as without the fast path. Each member's bytes are
exactly those its pump would have written.

A direct send is in order only while the connection's transport holds no unsent bytes
(:meth:`DirectSink.direct_fd` checks it at once before the send; nothing runs in between).
Checked in uvloop's ``handles/stream.pyx`` (0.22/0.23): ``UVStream.write`` does not defer to
the end of the iteration — with the protocol not paused and libuv's write queue empty it tries
the write at once, buffering only the rest; a paused protocol's writes wait in ``_buffer`` for
the loop's check phase. ``get_write_buffer_size()`` is libuv's ``write_queue_size`` plus
``_buffer_size`` — every byte accepted and not yet given to the kernel — so 0 means none is
waiting. asyncio's selector transport likewise writes at once when its buffer is empty, and
counts its buffer in ``get_write_buffer_size()``. A transport that is closing (``is_closing()``)
is never sent to directly: uvloop closes the descriptor as it starts closing, and the number
could meanwhile name another connection.

Time is the engine's clock (a test moves a :class:`ManualClock` to fire heartbeats and
timeouts); every wait is woken on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from topics_engine.clock import Clock, Timer

from .broadcast import send_all

log = logging.getLogger("topics.streams")

BUFFER_GRACE_MS = 5_000
SLOW_CONSUMER_TIMEOUT_MS = 30_000

Frame = bytes | list[bytes | memoryview]
"""One frame, whole or in parts (record bytes shared between streams are never joined)."""


class Sink(Protocol):
    """Where a stream's frames go: a chunked HTTP body, WebSocket messages, ASGI events."""

    @property
    def closed(self) -> bool:
        """The client went away."""

    @property
    def blocked(self) -> bool:
        """The client is not taking what was written (above the transport's high-water mark)."""

    def write(self, frame: Frame) -> None:
        """Queue one frame; never blocks. Raises ``ConnectionResetError`` once closed."""

    async def drain(self) -> None:
        """Return once the sink is no longer blocked (``ConnectionResetError`` if the client
        goes away meanwhile)."""


class DirectSink(Sink, Protocol):
    """A sink on a socket of its own that frames may be sent to directly (HTTP/1.1 chunked,
    a native WebSocket): the broadcast path of :class:`_PumpBatch`."""

    def direct_fd(self) -> int:
        """The socket's descriptor if bytes sent to it now go out in order — the connection is
        open, not closing, not paused, and its transport holds no unsent bytes — else -1."""

    def wire(self, frames: list[Frame]) -> bytes:
        """The bytes :meth:`write` of each of ``frames`` would hand the transport, joined."""

    def write_wire(self, data: memoryview) -> None:
        """Hand the transport wire bytes (the rest of a direct send that the socket did not
        take), as :meth:`write` would."""


@dataclass(slots=True)
class SharedStep:
    """A step read once for a group of streams at the same place: its frames, the engine's step
    (committed by each member) and the records it carries (the pushed-records counter)."""

    frames: list[Frame]
    step: Any
    records: int


class Shareable(Protocol):
    """A stream whose next step a group may share (see "Broadcast" above)."""

    def share_key(self) -> Hashable | None:
        """Equal for streams whose next step is the very same read, hence the very same bytes;
        ``None`` when this stream's next step is its own (its pump runs)."""

    def share_read(self) -> SharedStep | None:
        """Read the next step for the group (nothing committed); ``None`` when it is not one to
        share (not caught up, the topic ended, a cold read): every member pumps itself."""

    def share_commit(self, shared: SharedStep) -> None:
        """``shared``'s frames went to this stream: commit its step here."""


class SlowConsumer(Exception):
    """The client took nothing for :data:`SLOW_CONSUMER_TIMEOUT_MS`."""


class StreamLoop:
    def __init__(
        self,
        sink: Sink,
        clock: Clock,
        heartbeat_ms: int,
        heartbeat: Callable[[int], None],
        *,
        grace_ms: int = BUFFER_GRACE_MS,
        slow_timeout_ms: int = SLOW_CONSUMER_TIMEOUT_MS,
        on_lagging: Callable[[], None] | None = None,
    ) -> None:
        self.sink = sink
        self.clock = clock
        self.heartbeat_ms = heartbeat_ms
        self._beat = heartbeat
        self.grace_ms = grace_ms
        self.slow_timeout_ms = slow_timeout_ms
        self.on_lagging = on_lagging
        """Run by :meth:`settle` once per episode of the client staying blocked past the grace."""
        self._lagged = False
        """Blocked past the grace period since the last :meth:`settle`."""
        self.sent_ms = clock.steady_ms()
        """When a frame was last written (the steady clock: heartbeats measure quiet time)."""
        self.pump: Callable[[], bool] | None = None
        self.share: Shareable | None = None
        """Set with ``pump`` by a stream whose steps a group may share (the broadcast path)."""
        self.direct: DirectSink | None = cast(DirectSink, sink) if hasattr(sink, "direct_fd") else None
        """The sink, when frames may be sent to its socket directly."""
        self.parked = False
        """The stream's task waits in :meth:`idle` (so a pump may run in its place)."""
        self._pump_due = False
        self._woken = asyncio.Event()
        self._beat_due = False
        self._beat_timer: Timer | None = clock.call_later(heartbeat_ms, self._check_heartbeat)

    # -- sending ------------------------------------------------------------------------------

    def write(self, frame: Frame) -> None:
        self.sink.write(frame)
        self.sent_ms = self.clock.steady_ms()

    async def send(self, frame: Frame) -> None:
        self.write(frame)
        await self.flush()

    async def flush(self) -> None:
        """Wait until the client takes what was written; :class:`SlowConsumer` past the
        timeout, ``ConnectionResetError`` if it goes away."""
        if not self.sink.blocked:
            return
        drained = asyncio.ensure_future(self.sink.drain())

        def give_up() -> None:
            drained.cancel()

        timers = [
            self.clock.call_later(self.grace_ms, self._grace_passed),
            self.clock.call_later(self.slow_timeout_ms, give_up),
        ]
        try:
            await drained
        except asyncio.CancelledError:
            if not drained.cancelled() or asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise  # this stream itself is being cancelled
            raise SlowConsumer(f"the client read nothing for {self.slow_timeout_ms} ms") from None
        finally:
            for timer in timers:
                timer.cancel()
            if not drained.done():
                drained.cancel()
                with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                    await drained

    def _grace_passed(self) -> None:
        self._lagged = True

    async def settle(self) -> None:
        """:meth:`flush`, then run the ``on_lagging`` hook if the client stayed blocked past
        the grace period since the last settle (once per such episode). A stream's delivery
        loop settles after each round of writes, so the hook runs between reads, never
        while a step is half written."""
        await self.flush()
        if self._lagged:
            self._lagged = False
            if self.on_lagging is not None:
                self.on_lagging()

    # -- idling -------------------------------------------------------------------------------

    def wake(self) -> None:
        """Something may be ready to send (safe to call from engine callbacks, any number of
        times)."""
        if self.parked and self.pump is not None:
            if not self._pump_due:
                self._pump_due = True
                _PUMPS.schedule(self)
        else:
            self._woken.set()

    def run_pump(self) -> None:
        """Run the pump in place of the parked task (the batch's call); wake the task when the
        pump cannot finish (or the task is no longer parked)."""
        self._pump_due = False
        pump = self.pump
        if not self.parked or pump is None:
            self._woken.set()
            return
        try:
            done = pump()
        except Exception:  # noqa: BLE001 — e.g. the client went away: the task deals with it
            done = False
        if not done:
            self._woken.set()

    def share_key(self) -> Hashable | None:
        """The group this woken stream's pump may join (``None``: it runs alone)."""
        share = self.share
        if share is None or self.direct is None or not self.parked or self.pump is None:
            return None
        return share.share_key()

    async def idle(self, timeout_ms: int | None = None) -> None:
        """Wait until :meth:`wake` (returns at once if woken since the last idle), or until
        ``timeout_ms`` passed; send a heartbeat if one fell due meanwhile."""
        if not self._woken.is_set():
            timer = None if timeout_ms is None else self.clock.call_later(timeout_ms, self._woken.set)
            self.parked = True
            try:
                await self._woken.wait()
            finally:
                self.parked = False
                if timer is not None:
                    timer.cancel()
        self._woken.clear()
        if self._beat_due:
            self._beat_due = False
            self._beat(self.clock.now_ms())  # a heartbeat carries the wall clock
            self.sent_ms = self.clock.steady_ms()
            await self.flush()
            self._arm(self.heartbeat_ms)

    def _check_heartbeat(self) -> None:
        self._beat_timer = None
        quiet = self.clock.steady_ms() - self.sent_ms
        if quiet >= self.heartbeat_ms:
            self._beat_due = True
            self._woken.set()
        else:
            self._arm(self.heartbeat_ms - quiet)

    def _arm(self, delay_ms: int) -> None:
        if self._beat_timer is None:
            self._beat_timer = self.clock.call_later(delay_ms, self._check_heartbeat)

    def close(self) -> None:
        """Stop the heartbeat timer and the pump (the stream ended)."""
        self.pump = None
        if self._beat_timer is not None:
            self._beat_timer.cancel()
            self._beat_timer = None


PUMP_SLICE = 128
"""The most streams one batch callback pumps; the rest go to the next event-loop iteration, so
the sockets are polled in between: a fan-out to thousands of watchers does not hold a request
(a health probe) behind all of them."""


class _PumpBatch:
    """The streams woken in this event-loop iteration, pumped by one callback per
    :data:`PUMP_SLICE` of them."""

    def __init__(self) -> None:
        self._due: list[StreamLoop] = []

    def schedule(self, loop: StreamLoop) -> None:
        if not self._due:
            asyncio.get_running_loop().call_soon(self._run)
        self._due.append(loop)

    def _run(self) -> None:
        due = self._due
        if len(due) > PUMP_SLICE:
            due, self._due = due[:PUMP_SLICE], due[PUMP_SLICE:]
            asyncio.get_running_loop().call_soon(self._run)  # after the sockets are polled
        else:
            self._due = []
        groups: dict[Hashable, list[StreamLoop]] = {}
        for loop in due:
            try:
                key = loop.share_key()
            except Exception:  # noqa: BLE001 — never expected: the stream runs alone
                key = None
            if key is None:
                loop.run_pump()
            else:
                members = groups.get(key)
                if members is None:
                    groups[key] = [loop]
                else:
                    members.append(loop)
        for members in groups.values():
            if len(members) == 1:
                members[0].run_pump()
                continue
            try:
                _broadcast(members)
            except Exception:  # never expected, and only before the send: no stream left unwoken
                log.exception("broadcast to %d streams failed; their tasks take over", len(members))
                for loop in members:
                    if loop._pump_due:
                        loop._pump_due = False
                        loop._woken.set()


def _broadcast(members: list[StreamLoop]) -> None:
    """Send one shared step to every member ready for a direct send; the others — and all of
    them when the step is not one to share — run their own pumps. (Every member has ``share``
    and ``direct``: :meth:`StreamLoop.share_key` gave it a key.)"""
    ready: list[StreamLoop] = []
    fds: list[int] = []
    for loop in members:
        fd = cast(DirectSink, loop.direct).direct_fd()
        if fd < 0:
            loop.run_pump()
        else:
            ready.append(loop)
            fds.append(fd)
    if len(ready) < 2:
        for loop in ready:
            loop.run_pump()
        return
    leader = ready[0]
    try:
        shared = cast(Shareable, leader.share).share_read()
    except Exception:  # noqa: BLE001 — the members' own pumps meet it (and their tasks act)
        shared = None
    if shared is None:
        for loop in ready:
            loop.run_pump()
        return
    data = cast(DirectSink, leader.direct).wire(shared.frames) if shared.frames else b""
    size = len(data)
    sent = send_all(fds, data) if size else [0] * len(ready)
    view = memoryview(data)
    now = leader.clock.steady_ms()
    for loop, count in zip(ready, sent, strict=True):
        if count < 0:  # the socket failed: the member's own pump meets the error
            loop.run_pump()
            continue
        loop._pump_due = False
        try:
            _deliver(loop, view[count:], shared, now if size else None)
        except Exception:  # never expected: the bytes went out, so only this member's task acts
            log.exception("a broadcast's commit failed; the stream's task takes over")
            loop._woken.set()


def _deliver(loop: StreamLoop, rest: memoryview, shared: SharedStep, sent_ms: int | None) -> None:
    """After :func:`broadcast.send_all`: the ``rest`` of the bytes a member's socket did not
    take to its transport, and its commit of ``shared`` (``sent_ms``: when the frames went out,
    ``None`` if there were none)."""
    blocked = False
    if rest:  # through the transport: its flow control takes over
        sink = cast(DirectSink, loop.direct)
        try:
            sink.write_wire(rest)
        except ConnectionError:  # gone meanwhile: its task ends the stream
            loop._woken.set()
            return
        blocked = sink.blocked
    cast(Shareable, loop.share).share_commit(shared)
    if sent_ms is not None:
        loop.sent_ms = sent_ms
    if blocked:  # as a pump stops: the task waits for the client
        loop._woken.set()


_PUMPS = _PumpBatch()
