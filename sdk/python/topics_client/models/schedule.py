from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.schedule_missed import ScheduleMissed
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.schedule_failure import ScheduleFailure
    from ..models.scheduled_record import ScheduledRecord


T = TypeVar("T", bound="Schedule")


@_attrs_define
class Schedule:
    """A schedule as put (one of `cron` and `every_ms`; `node` when set), with its progress.

    Attributes:
        schedule (str):
        topic (str):
        records (list[ScheduledRecord]):
        missed (ScheduleMissed | str):
        next_run_ms (int | None): The next due time not run yet (epoch ms; in the past while a failed run is retried);
            null for a cron expression no day matches.
        last_run_ms (int | None): The due time of the last run (epoch ms; the records' `$ts` is when they were
            appended); null before the first.
        runs_total (int): Runs since the schedule was created (one append each).
        last_error (None | ScheduleFailure): Why the last attempt failed, until a run succeeds; null when the last run
            succeeded.
        cron (str | Unset):
        every_ms (int | Unset):
        node (str | Unset):
    """

    schedule: str
    topic: str
    records: list[ScheduledRecord]
    missed: ScheduleMissed | str
    next_run_ms: int | None
    last_run_ms: int | None
    runs_total: int
    last_error: None | ScheduleFailure
    cron: str | Unset = UNSET
    every_ms: int | Unset = UNSET
    node: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.schedule_failure import ScheduleFailure  # noqa: PLC0415

        schedule = self.schedule

        topic = self.topic

        records = []
        for records_item_data in self.records:
            records_item = records_item_data.to_dict()
            records.append(records_item)

        missed: str
        if isinstance(self.missed, ScheduleMissed):
            missed = self.missed.value
        else:
            missed = self.missed

        next_run_ms: int | None
        next_run_ms = self.next_run_ms

        last_run_ms: int | None
        last_run_ms = self.last_run_ms

        runs_total = self.runs_total

        last_error: dict[str, Any] | None
        if isinstance(self.last_error, ScheduleFailure):
            last_error = self.last_error.to_dict()
        else:
            last_error = self.last_error

        cron = self.cron

        every_ms = self.every_ms

        node = self.node

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "schedule": schedule,
                "topic": topic,
                "records": records,
                "missed": missed,
                "next_run_ms": next_run_ms,
                "last_run_ms": last_run_ms,
                "runs_total": runs_total,
                "last_error": last_error,
            }
        )
        if cron is not UNSET:
            field_dict["cron"] = cron
        if every_ms is not UNSET:
            field_dict["every_ms"] = every_ms
        if node is not UNSET:
            field_dict["node"] = node

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.schedule_failure import ScheduleFailure  # noqa: PLC0415
        from ..models.scheduled_record import ScheduledRecord  # noqa: PLC0415

        d = dict(src_dict)
        schedule = d.pop("schedule")

        topic = d.pop("topic")

        records = []
        _records = d.pop("records")
        for records_item_data in _records:
            records_item = ScheduledRecord.from_dict(records_item_data)

            records.append(records_item)

        def _parse_missed(data: object) -> ScheduleMissed | str:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                missed_type_0 = ScheduleMissed(data)

                return missed_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ScheduleMissed | str, data)

        missed = _parse_missed(d.pop("missed"))

        def _parse_next_run_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        next_run_ms = _parse_next_run_ms(d.pop("next_run_ms"))

        def _parse_last_run_ms(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        last_run_ms = _parse_last_run_ms(d.pop("last_run_ms"))

        runs_total = d.pop("runs_total")

        def _parse_last_error(data: object) -> None | ScheduleFailure:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                last_error_type_0 = ScheduleFailure.from_dict(data)

                return last_error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ScheduleFailure, data)

        last_error = _parse_last_error(d.pop("last_error"))

        cron = d.pop("cron", UNSET)

        every_ms = d.pop("every_ms", UNSET)

        node = d.pop("node", UNSET)

        schedule = cls(
            schedule=schedule,
            topic=topic,
            records=records,
            missed=missed,
            next_run_ms=next_run_ms,
            last_run_ms=last_run_ms,
            runs_total=runs_total,
            last_error=last_error,
            cron=cron,
            every_ms=every_ms,
            node=node,
        )

        schedule.additional_properties = d
        return schedule

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
