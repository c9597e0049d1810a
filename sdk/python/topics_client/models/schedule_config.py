from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..models.schedule_missed import ScheduleMissed
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.record_in import RecordIn


T = TypeVar("T", bound="ScheduleConfig")


@_attrs_define
class ScheduleConfig:
    """A schedule definition (the body of `PUT /v0/schedules/{schedule}`): `topic`,
    `records`, and exactly one of `cron` and `every_ms` (`400 invalid_request`
    otherwise).

        Attributes:
            topic (str): The topic each run appends to (a topic name). Created with the default config if missing.
            records (list[RecordIn]): What each run appends, as in a write body (the same record schema, limits and errors).
                At most `TOPICS_MAX_BATCH_RECORDS` (default 10000), else `400 batch_too_large`.
            cron (str | Unset): When to run: `minute hour day-of-month month day-of-week`, in UTC, each
                field `*`, a value, a range `a-b` (wrapping when `a > b`), a list `a,b`,
                with an optional step `/s` (1-99); month and weekday names (`jan`, `mon`,
                any case); weekday 0 and 7 are Sunday; `@yearly`, `@monthly`, `@weekly`,
                `@daily`, `@hourly`. When both day fields are restricted a day matching
                either runs (Vixie cron). An expression no day matches is accepted and
                never runs (`next_run_ms: null`). A malformed one is `400 invalid_request`
                naming the field and the problem.
            every_ms (int | Unset): Run every this many milliseconds (100 ms to ten years), the first run one interval after
                the PUT.
            node (str | Unset): Batch-level default origin node of each run's records, as in a write body. At most
                `TOPICS_MAX_NODE_BYTES` (default 128) characters.
            missed (ScheduleMissed | Unset): What a schedule does with due times that passed while the server was down:
                `skip` them (default; the next run is the next due time in the future, as
                cron does) or append `once` for all of them when the server starts (anacron,
                Celery beat).
    """

    topic: str
    records: list[RecordIn]
    cron: str | Unset = UNSET
    every_ms: int | Unset = UNSET
    node: str | Unset = UNSET
    missed: ScheduleMissed | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        records = []
        for records_item_data in self.records:
            records_item = records_item_data.to_dict()
            records.append(records_item)

        cron = self.cron

        every_ms = self.every_ms

        node = self.node

        missed: str | Unset = UNSET
        if not isinstance(self.missed, Unset):
            missed = self.missed.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "topic": topic,
                "records": records,
            }
        )
        if cron is not UNSET:
            field_dict["cron"] = cron
        if every_ms is not UNSET:
            field_dict["every_ms"] = every_ms
        if node is not UNSET:
            field_dict["node"] = node
        if missed is not UNSET:
            field_dict["missed"] = missed

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.record_in import RecordIn  # noqa: PLC0415

        d = dict(src_dict)
        topic = d.pop("topic")

        records = []
        _records = d.pop("records")
        for records_item_data in _records:
            records_item = RecordIn.from_dict(records_item_data)

            records.append(records_item)

        cron = d.pop("cron", UNSET)

        every_ms = d.pop("every_ms", UNSET)

        node = d.pop("node", UNSET)

        _missed = d.pop("missed", UNSET)
        missed: ScheduleMissed | Unset
        if isinstance(_missed, Unset):
            missed = UNSET
        else:
            missed = ScheduleMissed(_missed)

        schedule_config = cls(
            topic=topic,
            records=records,
            cron=cron,
            every_ms=every_ms,
            node=node,
            missed=missed,
        )

        return schedule_config
