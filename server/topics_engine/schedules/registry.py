"""The schedule registry: ``PUT``/``GET``/``DELETE``/list, WAL replay and snapshot images.

Invariants:

- A schedule is in every index (by name, by id, the sorted names) and planned on the pump, or
  in none of them.
- A registered schedule's topic exists: a ``PUT`` creates a missing one (default config),
  :meth:`Schedules.topic_deleted` removes a deleted topic's schedules, and replay drops a
  schedule whose topic is gone (:meth:`Schedules.finish_replay`).
- Every change is logged before it is acknowledged: ``SCHEDULE_PUT`` (definition and progress)
  and ``SCHEDULE_DELETE`` frames, and a ``SCHEDULE_RUN`` frame per run (``pump``); schedules
  are also a section of the snapshot (:meth:`Schedules.images`). Replay (``apply_*``) rebuilds
  the same schedules and progress, so a due time that ran before a crash never runs again.
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass
from typing import Any

from .. import listing
from ..config import TopicType
from ..engine import Engine
from ..errors import NotAQueue, ScheduleNotFound, cap_reached
from ..listing import decode_cursor, effective_prefixes, encode_cursor, names_after
from ..results import AckWait
from ..storage import formats
from ..storage.formats import RunPayload, SchedulePayload
from .config import Parsed, check_schedule_name, parse_schedule_config, stored_schedule_config
from .pump import Pump
from .schedule import Schedule, new_schedule
from .write import RecordsDecoder, json_records


@dataclass(slots=True)
class SchedulePut:
    schedule: Schedule
    created: bool
    wait: AckWait = None


@dataclass(slots=True)
class SchedulePage:
    schedules: list[Schedule]
    next_cursor: str | None


@dataclass(slots=True)
class ScheduleDeleted:
    name: str
    deleted: bool
    wait: AckWait = None


class Schedules:
    """The schedule registry and its pump (on the engine's loop)."""

    def __init__(
        self, engine: Engine, *, decode: RecordsDecoder = json_records, max_schedules: int = 0
    ) -> None:
        self.engine = engine
        self.decode = decode
        """Turns a schedule's records text into the engine's records (``write``)."""
        self.max_schedules = max_schedules
        """``TOPICS_MAX_SCHEDULES`` (0: unlimited): only a new schedule counts."""
        self._by_name: dict[str, Schedule] = {}
        self._by_id: dict[int, Schedule] = {}
        self._names: list[str] = []
        """Every schedule name, sorted (pages are in name order)."""
        self.pump = Pump(engine, self._by_id)
        self.next_id = 1
        """The id of the next new schedule (ids are never reused)."""

    # -- lookups ------------------------------------------------------------------------------

    @property
    def count(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> Schedule:
        check_schedule_name(name)
        schedule = self._by_name.get(name)
        if schedule is None:
            raise ScheduleNotFound(f'schedule "{name}" does not exist', {"schedule": name})
        return schedule

    def all(self) -> list[Schedule]:
        """Every schedule, in name order."""
        return [self._by_name[name] for name in self._names]

    def naming(self, topic: str) -> list[Schedule]:
        """The schedules appending to ``topic``, in name order."""
        return [s for s in self.all() if s.config.topic == topic]

    # -- the API ------------------------------------------------------------------------------

    def put(self, name: str, fields: dict[str, Any]) -> SchedulePut:
        """Create (201) or reconfigure (200) a schedule; a missing topic is created with the
        default config. A new timing starts over from now (the first due time after the PUT);
        an identical PUT changes nothing. Everything is checked before anything changes: a
        refused PUT leaves no trace (no schedule, no topic)."""
        check_schedule_name(name)
        engine = self.engine
        now = engine.clock.now_ms()
        parsed = parse_schedule_config(fields, self.decode, engine.limits, now)
        current = self._by_name.get(name)
        if current is not None and current.config.extra:  # a newer server's keys stay
            parsed = _with_extra(parsed, current.config.extra)
        if current is not None and current.config == parsed.config:
            return SchedulePut(current, False)
        _check_delays(engine, parsed)
        engine.persistence.check_writable()
        if current is None:
            self._check_room()
        if engine.topic(parsed.config.topic) is None:
            engine.check_topic_room()
            engine.put_topic(parsed.config.topic, {})
        if current is None:
            schedule = new_schedule(self.next_id, name, parsed, now, now)
            self._add(schedule)
        else:
            schedule = current
            schedule.define(parsed, now)
        wait = engine.persistence.schedule_change(formats.encode_schedule_put(schedule.payload()))
        self.pump.plan_next(schedule)
        return SchedulePut(schedule, current is None, wait)

    def page(
        self,
        prefix: str = "",
        topic: str | None = None,
        page_size: int = 0,
        cursor: str | None = None,
        within: tuple[str, ...] = (),
    ) -> SchedulePage:
        """One page of schedules in name order, filtered by name prefix and topic; ``within``
        (an API key's prefix allowlist; empty: any) hides every other name."""
        size = listing.page_size(page_size)
        after = decode_cursor(cursor) if cursor is not None else None
        page: list[Schedule] = []
        for name in names_after(self._names, effective_prefixes(prefix, within), after):
            schedule = self._by_name[name]
            if topic is None or schedule.config.topic == topic:
                if len(page) == size:
                    return SchedulePage(page, encode_cursor(page[-1].name))
                page.append(schedule)
        return SchedulePage(page, None)

    def delete(self, name: str) -> ScheduleDeleted:
        """Remove a schedule (idempotent): it never runs again; what it appended stays."""
        check_schedule_name(name)
        schedule = self._by_name.get(name)
        if schedule is None:
            return ScheduleDeleted(name, False)
        self.engine.persistence.check_writable()
        self._remove(schedule)
        wait = self.engine.persistence.schedule_change(formats.encode_schedule_delete(schedule.id))
        return ScheduleDeleted(name, True, wait)

    def topic_deleted(self, topic: str) -> list[str]:
        """``topic`` was just deleted: remove the schedules appending to it (logged like a
        delete, riding the topic delete's durability); returns their names."""
        removed = self.naming(topic)
        for schedule in removed:
            self._remove(schedule)
            self.engine.persistence.schedule_change(formats.encode_schedule_delete(schedule.id), wait=False)
        return [s.name for s in removed]

    # -- running ------------------------------------------------------------------------------

    def start(self) -> None:
        """After recovery: apply ``missed`` to the due times that passed while the server was
        down, then run on the engine's clock (see ``Pump.start``)."""
        self.pump.start(self.all())

    def stop(self) -> None:
        """No more runs (a shutdown: before the final checkpoint)."""
        self.pump.stop()

    @property
    def runs_total(self) -> int:
        return self.pump.runs_total

    @property
    def failures_total(self) -> int:
        return self.pump.failures_total

    # -- replay and snapshots -----------------------------------------------------------------

    def apply_put(self, p: SchedulePayload) -> None:
        """Replay a ``SCHEDULE_PUT`` frame or a snapshot entry (its stored config is read
        tolerantly: ``stored_schedule_config``).

        Replay may re-run frames a snapshot already reflects (its LSN stays below an ``fsync``
        append still waiting when it was cut): another schedule holding ``p.name`` (an id put
        later, or earlier and deleted since) is removed first — the later frames put it back —
        so every index stays consistent."""
        parsed = stored_schedule_config(p.config, p.name, self.decode)
        schedule = self._by_id.get(p.id)
        holder = self._by_name.get(p.name)
        if holder is not None and holder is not schedule:
            self._remove(holder)
        if schedule is not None and schedule.name != p.name:  # ids are never reused: defensive
            self._remove(schedule)
            schedule = None
        if schedule is None:
            schedule = new_schedule(p.id, p.name, parsed, p.since_ms, p.through_ms)
            self._add(schedule)
        else:
            schedule.config, schedule.batch = parsed.config, parsed.batch
            schedule.timing = parsed.timing(p.since_ms)
            schedule.since_ms, schedule.through_ms = p.since_ms, p.through_ms
        schedule.last_run_ms, schedule.runs_total = p.last_run_ms, p.runs_total

    def apply_delete(self, schedule_id: int) -> None:
        """Replay a ``SCHEDULE_DELETE`` frame (of an id no longer present: nothing)."""
        schedule = self._by_id.get(schedule_id)
        if schedule is not None:
            self._remove(schedule)

    def apply_run(self, p: RunPayload) -> None:
        """Replay a ``SCHEDULE_RUN`` frame (idempotent: progress only moves forward)."""
        schedule = self._by_id.get(p.schedule_id)
        if schedule is None or p.through_ms < schedule.through_ms:
            return
        schedule.through_ms, schedule.last_run_ms = p.through_ms, p.due_ms
        schedule.runs_total = max(schedule.runs_total, p.runs_total)

    def finish_replay(self) -> None:
        """Schedules whose topic no longer exists are gone (the topic's delete frame survived
        a crash that lost theirs)."""
        for schedule in self.all():
            if self.engine.topic(schedule.config.topic) is None:
                self._remove(schedule)

    def images(self) -> list[SchedulePayload]:
        """The snapshot's schedules section, in name order."""
        return [schedule.payload() for schedule in self.all()]

    # -- internals ----------------------------------------------------------------------------

    def _check_room(self) -> None:
        """429 ``throttled`` when a new schedule would exceed ``max_schedules``."""
        if self.max_schedules and len(self._by_name) >= self.max_schedules:
            raise cap_reached(
                "max_schedules",
                self.max_schedules,
                f"{len(self._by_name)} schedules exist; delete one or raise TOPICS_MAX_SCHEDULES",
            )

    def _add(self, schedule: Schedule) -> None:
        self._by_name[schedule.name] = schedule
        self._by_id[schedule.id] = schedule
        bisect.insort(self._names, schedule.name)
        self.next_id = max(self.next_id, schedule.id + 1)

    def _remove(self, schedule: Schedule) -> None:
        del self._by_name[schedule.name]
        del self._by_id[schedule.id]
        del self._names[bisect.bisect_left(self._names, schedule.name)]
        self.pump.forget(schedule)


def _with_extra(parsed: Parsed, extra: dict[str, Any]) -> Parsed:
    """``parsed`` keeping the stored keys a newer server wrote (never served, written back)."""
    return dataclasses.replace(parsed, config=dataclasses.replace(parsed.config, extra=extra))


def _check_delays(engine: Engine, parsed: Parsed) -> None:
    """Records with ``delay_ms`` (delayed jobs) need a queue: a schedule whose runs every
    append would refuse is refused now (``409 not_a_queue``, as the append would answer)."""
    if parsed.batch.delays is None:
        return
    name = parsed.config.topic
    topic = engine.topic(name)
    if topic is None or topic.config.type is not TopicType.QUEUE:
        what = "a log" if topic is not None else "missing (the schedule would create it as a log)"
        raise NotAQueue(
            f'the records carry delay_ms, which delays queue jobs; topic "{name}" is {what} — '
            f"create it as a queue first (PUT /v0/topics/{name} with type queue)",
            {"topic": name, "field": "records"},
        )
