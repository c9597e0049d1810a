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

Time is the engine's clock (a test moves a :class:`ManualClock` to fire heartbeats and
timeouts); every wait is woken on the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Protocol

from topics_engine.clock import Clock, Timer

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
        for loop in due:
            loop.run_pump()


_PUMPS = _PumpBatch()
