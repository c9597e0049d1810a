from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.schedule_missed import ScheduleMissed
from ..types import UNSET, Unset

T = TypeVar("T", bound="ScheduleSummary")


@_attrs_define
class ScheduleSummary:
    """One schedule in a list (without its records).

    Attributes:
        schedule (str):
        topic (str):
        missed (ScheduleMissed | str):
        next_run_ms (int | None):
        last_run_ms (int | None):
        runs_total (int):
        cron (str | Unset):
        every_ms (int | Unset):
    """

    schedule: str
    topic: str
    missed: ScheduleMissed | str
    next_run_ms: int | None
    last_run_ms: int | None
    runs_total: int
    cron: str | Unset = UNSET
    every_ms: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        schedule = self.schedule

        topic = self.topic

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

        cron = self.cron

        every_ms = self.every_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "schedule": schedule,
                "topic": topic,
                "missed": missed,
                "next_run_ms": next_run_ms,
                "last_run_ms": last_run_ms,
                "runs_total": runs_total,
            }
        )
        if cron is not UNSET:
            field_dict["cron"] = cron
        if every_ms is not UNSET:
            field_dict["every_ms"] = every_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        schedule = d.pop("schedule")

        topic = d.pop("topic")

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

        cron = d.pop("cron", UNSET)

        every_ms = d.pop("every_ms", UNSET)

        schedule_summary = cls(
            schedule=schedule,
            topic=topic,
            missed=missed,
            next_run_ms=next_run_ms,
            last_run_ms=last_run_ms,
            runs_total=runs_total,
            cron=cron,
            every_ms=every_ms,
        )

        schedule_summary.additional_properties = d
        return schedule_summary

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
