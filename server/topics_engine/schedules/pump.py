"""The firing pump: appends each schedule's records when it is due, on the engine's clock.

One timer, for the earliest attempt over every schedule (a heap of ``(attempt_ms, order,
schedule id)``, resolved through the registry's ids: the heap holds no schedule, so a removed
one is freed at once), so an idle server sleeps until the next due time instead of polling.
An entry whose schedule moved on or was removed is dropped when it surfaces, and the heap is
rebuilt from its live entries once stale ones outnumber them (:meth:`Pump._compact`), so it
stays within twice the schedules (plus :data:`COMPACT_SLACK`) however many come and go. A
schedule has at most one live entry: planning it again for the same attempt pushes nothing.
A pass runs at most :data:`PASS_RUNS` runs and leaves the rest due at once, so requests
interleave with runs however many schedules are due together. The timer sleeps at most
:data:`MAX_SLEEP_MS` and then looks again: due times are wall-clock times but the loop's timers
run on its monotonic clock, so a wall clock stepped forward (NTP, a suspended VM) would
otherwise make every armed timer late by the step: a run made due by a step happens within a
second of it. A server with schedules wakes once a second when idle (a heap peek: no I/O); one
without any arms no timer.

A run (:meth:`Pump.fire`) at time ``now`` is for the latest due time at or before ``now``: one
append covers every due time since the last one accounted for, so a slow loop or a retry never
bursts (docs/DECISIONS.md, "Schedules"). In one synchronous step it appends the records through
the engine's write path with the run's key (``write.run_key``), then logs a ``SCHEDULE_RUN``
frame naming the due time — the two frames leave in the same WAL write, the append first. A
write is not atomic (a ``SIGKILL`` during a large ``writev``, a power loss): should a crash keep
only the append, ``missed: "skip"`` skips that due time at start-up, and ``"once"`` runs it
again with the same key, which the topic's idempotency window answers — unless the server was
down longer than the window (docs/DECISIONS.md, "Schedules").

A run whose append is refused (a full ``discard: "reject"`` topic, the bytes quota, a read-only
WAL, a limit lowered since the ``PUT``) changes nothing but the error it records
(``Schedule.last_error``) and its count: it is retried after :data:`RETRY_MS` (doubling), or at
the next due time if that comes first — then for that due time, as ``missed`` asks of a run
that could not happen on time. Nothing a run raises stops the pump.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Mapping

from ..clock import Timer
from ..engine import Engine
from ..errors import Internal, TopicsError
from ..storage import formats
from ..storage.formats import RunPayload
from .schedule import RunError, Schedule
from .write import run_key

log = logging.getLogger("topics.schedules")

PASS_RUNS = 100
"""Most runs one pass makes before the loop serves anything else."""
RETRY_MS = (1000, 60_000)
"""Backoff of a failed run: first retry, longest delay (never past the next due time)."""
COMPACT_SLACK = 64
"""Stale heap entries tolerated beyond the live ones before the heap is rebuilt."""
MAX_SLEEP_MS = 1_000
"""Longest the timer sleeps before it reads the wall clock again (see the module)."""


class Pump:
    """Timers and runs of the registered schedules (on the engine's loop). Nothing fires before
    :meth:`start` (the registry is still being recovered then) nor after :meth:`stop` (the
    server is shutting down: its last checkpoint must hold every run)."""

    def __init__(self, engine: Engine, by_id: Mapping[int, Schedule]) -> None:
        self.engine = engine
        self._by_id = by_id
        """The registered schedules by id (the registry's index): what heap entries name."""
        self._heap: list[tuple[int, int, int]] = []
        self._order = itertools.count()
        self._timer: Timer | None = None
        self._timer_at: int | None = None
        """When the armed timer fires, on the steady clock (``Clock.steady_ms``: a wall step
        since it was armed does not move it)."""
        self._started = False
        self._in_pass = False
        """A pass is running: it sets the timer once done, not each run it makes."""
        self.runs_total = 0
        """Runs this process made (``topics_schedule_runs_total``)."""
        self.failures_total = 0
        """Failed run attempts of this process (``topics_schedule_failures_total``)."""

    # -- planning -----------------------------------------------------------------------------

    def plan(self, schedule: Schedule, at_ms: int | None) -> None:
        """Look at ``schedule`` at ``at_ms`` (``None``: never), instead of whenever it was due."""
        if at_ms == schedule.attempt_ms:  # its entry is in the heap already (or never)
            return
        schedule.attempt_ms = at_ms
        if at_ms is not None and schedule.live:
            heapq.heappush(self._heap, (at_ms, next(self._order), schedule.id))
            self._compact()
            self._arm()

    def forget(self, schedule: Schedule) -> None:
        """``schedule`` was removed: its entry is stale from now on."""
        schedule.live = False
        schedule.attempt_ms = None
        self._compact()

    def _current(self, entry: tuple[int, int, int]) -> Schedule | None:
        """The schedule a heap entry plans, or ``None`` if the entry is stale."""
        schedule = self._by_id.get(entry[2])
        if schedule is None or not schedule.live or schedule.attempt_ms != entry[0]:
            return None
        return schedule

    def _compact(self) -> None:
        """Rebuild the heap from its live entries once stale ones outnumber them (amortised
        O(1): at least as many pushes or removals happened since the last rebuild)."""
        if len(self._heap) <= 2 * len(self._by_id) + COMPACT_SLACK:
            return
        self._heap = [entry for entry in self._heap if self._current(entry) is not None]
        heapq.heapify(self._heap)

    def plan_next(self, schedule: Schedule) -> None:
        """Look at ``schedule`` at its next due time."""
        self.plan(schedule, schedule.next_run_ms)

    def start(self, schedules: list[Schedule]) -> None:
        """After recovery: due times that passed while the server was down are skipped
        (``missed: "skip"``: the next run is the next due time in the future) or run once now
        (``"once"``); then the timer runs."""
        now = self.engine.clock.now_ms()
        for schedule in schedules:
            due = schedule.next_run_ms
            if due is not None and due <= now and schedule.config.missed == "skip":
                log.info("schedule %s: skipping the due times missed while down", schedule.name)
                schedule.through_ms = now
                due = schedule.next_run_ms
            self.plan(schedule, due if due is None or due > now else now)
        self._started = True
        self._arm()

    def stop(self) -> None:
        """No more runs: the timer is cancelled and not set again."""
        self._started = False
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._timer_at = None

    def _arm(self) -> None:
        """Set the one timer for the earliest live attempt (if it is not set for it already)."""
        heap = self._heap
        while heap and self._current(heap[0]) is None:
            heapq.heappop(heap)
        if not self._started or self._in_pass or not heap:
            return
        clock = self.engine.clock
        delay = min(heap[0][0] - clock.now_ms(), MAX_SLEEP_MS)
        fire_at = clock.steady_ms() + max(0, delay)  # compared on the clock timers run on
        if self._timer is not None:
            if self._timer_at is not None and self._timer_at <= fire_at:
                return
            self._timer.cancel()
        try:
            self._timer = clock.call_later(delay, self._wake)
        except RuntimeError:  # no event loop to time on (a synchronous embedding): pump() by hand
            self._timer = None
            return
        self._timer_at = fire_at

    def _wake(self) -> None:
        self._timer = self._timer_at = None
        if self._heap and self._heap[0][0] <= self.engine.clock.now_ms():  # else: a capped sleep
            self._in_pass = True
            try:
                self.pump()
            finally:
                self._in_pass = False
        self._arm()

    # -- runs ---------------------------------------------------------------------------------

    def pump(self) -> int:
        """One pass: run the schedules whose attempt is due (at most :data:`PASS_RUNS`; the
        rest stay due at once). Returns the attempts made."""
        now = self.engine.clock.now_ms()
        attempts = 0
        while self._heap and self._heap[0][0] <= now and attempts < PASS_RUNS:
            entry = heapq.heappop(self._heap)
            schedule = self._current(entry)
            if schedule is not None:
                schedule.attempt_ms = None  # its entry is gone: the run plans the next one
                self.fire(schedule, now)
                attempts += 1
        return attempts

    def fire(self, schedule: Schedule, now: int) -> None:
        """Run ``schedule`` for the latest due time at or before ``now`` (see the module)."""
        due = schedule.timing.latest_at_or_before(now)
        if due is None or due <= schedule.through_ms:  # not due after all (its timing changed)
            self.plan(schedule, schedule.timing.next_after(max(now, schedule.through_ms)))
            return
        engine = self.engine
        key = run_key(schedule.name, due, engine.limits.max_idempotency_key_chars)
        try:
            appended = engine.append(schedule.config.topic, schedule.batch, idempotency_key=key)
        except TopicsError as err:
            self._failed(schedule, now, err)
            return
        except Exception as err:  # noqa: BLE001 — a bug must not stop every schedule
            log.exception("schedule %s: the run for %d failed", schedule.name, due)
            self._failed(schedule, now, Internal(f"internal error: {type(err).__name__}"))
            return
        if appended.wait is not None:
            appended.wait.add_done_callback(_observe)
        schedule.last_run_ms, schedule.through_ms = due, now
        schedule.runs_total += 1
        schedule.retry_ms, schedule.last_error = 0, None
        self.runs_total += 1
        run = RunPayload(schedule.id, due, now, schedule.runs_total)
        engine.persistence.schedule_change(formats.encode_schedule_run(run), wait=False)
        self.plan_next(schedule)

    def _failed(self, schedule: Schedule, now: int, err: TopicsError) -> None:
        """Record the failure and retry after the backoff, or at the next due time if sooner."""
        again = schedule.last_error is not None and schedule.last_error.code == err.code
        (log.debug if again else log.warning)(
            "schedule %s: could not append to %s (%s: %s); retrying",
            schedule.name,
            schedule.config.topic,
            err.code,
            err.message,
        )
        schedule.last_error = RunError(err.code, err.message, now)
        schedule.retry_ms = min(RETRY_MS[1], schedule.retry_ms * 2) if schedule.retry_ms else RETRY_MS[0]
        self.failures_total += 1
        retry = now + schedule.retry_ms
        due = schedule.timing.next_after(now)
        self.plan(schedule, retry if due is None else min(retry, due))


def _observe(future: asyncio.Future[float]) -> None:
    """An fsync-class run's acknowledgement: nobody awaits it; a storage failure was logged by
    the WAL (and turned it read-only), so only retrieve it."""
    if not future.cancelled():
        future.exception()
