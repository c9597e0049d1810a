"""One schedule: its config, its durable progress, and its run state.

Durable progress (:meth:`Schedule.payload`: a ``SCHEDULE_PUT`` frame or snapshot entry; runs
add ``SCHEDULE_RUN`` frames): ``since_ms`` (when its timing was put), ``through_ms`` (every due
time at or before it is accounted for: ran, or skipped), ``last_run_ms`` (the due time of the
last run) and ``runs_total``.

Invariants: ``since_ms <= through_ms``; ``through_ms`` and ``runs_total`` only grow while the
timing stays the same; ``last_run_ms``, when set, is a due time at or before ``through_ms``.
The next due time is always the first one after ``through_ms`` — so a due time is run at most
once, and never again once a run for it (or a later one) is logged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import NewRecords
from ..storage.formats import SchedulePayload
from .config import Parsed, ScheduleConfig
from .timing import Timing


@dataclass(frozen=True, slots=True)
class RunError:
    """Why the last attempt to run failed (the append's error), and when."""

    code: str
    message: str
    at_ms: int


@dataclass(eq=False, slots=True)
class Schedule:
    id: int
    name: str
    config: ScheduleConfig
    timing: Timing
    batch: NewRecords
    """The decoded records each run appends."""
    since_ms: int
    through_ms: int
    last_run_ms: int | None = None
    runs_total: int = 0
    attempt_ms: int | None = None
    """When the pump looks at the schedule next (a due time, or a retry); ``None``: never (a cron
    no day matches, or not planned yet)."""
    retry_ms: int = 0
    """The delay before the next retry of a failed run; 0 while runs succeed."""
    last_error: RunError | None = None
    """The error of the last attempt, until a run succeeds."""
    live: bool = True
    """False once removed: the pump drops what it still holds of it."""
    _next: tuple[Timing, int, int | None] | None = field(default=None, repr=False)
    """The cached :attr:`next_run_ms`: ``(timing, through_ms, next due time)`` it was computed
    for (a new timing is a new object, so any change of either recomputes it)."""

    @property
    def next_run_ms(self) -> int | None:
        """The next due time not yet accounted for (in the past while a failed run is retried).
        Cached: every GET, list item and PUT reads it, and a rare cron may take a search."""
        cached = self._next
        if cached is not None and cached[0] is self.timing and cached[1] == self.through_ms:
            return cached[2]
        due = self.timing.next_after(self.through_ms)
        self._next = (self.timing, self.through_ms, due)
        return due

    def define(self, parsed: Parsed, now_ms: int) -> None:
        """Take a new config. A new timing (another cron, another interval) starts over from
        ``now_ms``: the first due time after the ``PUT``, an interval counted from it."""
        retimed = not parsed.config.same_timing(self.config)
        self.config, self.batch = parsed.config, parsed.batch
        if retimed:
            self.since_ms = self.through_ms = max(now_ms, self.through_ms)
        self.timing = parsed.timing(self.since_ms)
        self.retry_ms, self.last_error = 0, None

    def payload(self) -> SchedulePayload:
        """The durable part: definition and progress."""
        return SchedulePayload(
            self.id,
            self.name,
            self.config.to_stored(),
            self.since_ms,
            self.through_ms,
            self.last_run_ms,
            self.runs_total,
        )


def new_schedule(schedule_id: int, name: str, parsed: Parsed, since_ms: int, through_ms: int) -> Schedule:
    return Schedule(
        schedule_id,
        name,
        parsed.config,
        parsed.timing(since_ms),
        parsed.batch,
        since_ms,
        through_ms,
    )
