"""Schedules (an extension, issue 24): durable, timed appends — a write body appended to a topic
on a five-field cron expression (UTC) or every ``every_ms``, like Celery beat, arq's ``cron``,
RQ's ``cron`` and NATS 2.12 scheduled messages.

One concept per module, lowest first:

- ``cron`` — the cron language (exactly the spec's pattern), parsed into :class:`Cron`, which
  computes the fire time after (and at or before) an instant by jumping over whole months,
  days and hours.
- ``timing`` — when a schedule is due: a :class:`Cron` or an interval (:class:`Every`).
- ``write`` — what a run appends: the records of a write body, kept as JSON text, checked like
  an append when the schedule is put, keyed per run (``run_key``).
- ``config`` — a ``PUT`` body parsed into a :class:`ScheduleConfig`, a stored record read back
  tolerantly (:func:`stored_schedule_config`); schedule names.
- ``schedule`` — :class:`Schedule`: one schedule's config, durable progress and run state.
- ``pump`` — :class:`Pump`: one timer on the engine's clock for the earliest attempt; a run
  appends through the engine's write path and logs a ``SCHEDULE_RUN`` frame with its due time;
  failed runs retry with backoff.
- ``registry`` — :class:`Schedules`: put/get/delete/list, WAL replay (``apply_*``) and
  snapshot images.

The names other modules use are re-exported here: import them from ``topics_engine.schedules``.
"""

from .config import (
    EVERY_MS_MAX,
    EVERY_MS_MIN,
    MISSED,
    ScheduleConfig,
    check_schedule_name,
    stored_schedule_config,
)
from .cron import PATTERN, Cron, cron_problem, parse_cron
from .pump import MAX_SLEEP_MS, PASS_RUNS, RETRY_MS, Pump
from .registry import ScheduleDeleted, SchedulePage, SchedulePut, Schedules
from .schedule import RunError, Schedule
from .timing import Every, Timing
from .write import RecordsDecoder, json_records, run_key

__all__ = [
    "EVERY_MS_MAX",
    "EVERY_MS_MIN",
    "MAX_SLEEP_MS",
    "MISSED",
    "PASS_RUNS",
    "PATTERN",
    "RETRY_MS",
    "Cron",
    "Every",
    "Pump",
    "RecordsDecoder",
    "RunError",
    "Schedule",
    "ScheduleConfig",
    "ScheduleDeleted",
    "SchedulePage",
    "SchedulePut",
    "Schedules",
    "Timing",
    "check_schedule_name",
    "cron_problem",
    "json_records",
    "parse_cron",
    "run_key",
    "stored_schedule_config",
]
