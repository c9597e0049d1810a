from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.extend_response_deadlines import ExtendResponseDeadlines
    from ..models.performance import Performance


T = TypeVar("T", bound="ExtendResponse")


@_attrs_define
class ExtendResponse:
    """Result of an extend.

    Attributes:
        topic (str):
        extended (int): Seqs whose deadline was pushed out.
        skipped (list[int]): Requested seqs that were not extended (expired/reclaimed/never claimed/not held by `node`,
            or a stale lease token).
        deadlines (ExtendResponseDeadlines): New absolute deadline (ms epoch) per extended seq, keyed by the seq as a
            decimal string.
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
    """

    topic: str
    extended: int
    skipped: list[int]
    deadlines: ExtendResponseDeadlines
    performance: Performance
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        extended = self.extended

        skipped = self.skipped

        deadlines = self.deadlines.to_dict()

        performance = self.performance.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "extended": extended,
                "skipped": skipped,
                "deadlines": deadlines,
                "performance": performance,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.extend_response_deadlines import ExtendResponseDeadlines  # noqa: PLC0415
        from ..models.performance import Performance  # noqa: PLC0415

        d = dict(src_dict)
        topic = d.pop("topic")

        extended = d.pop("extended")

        skipped = cast(list[int], d.pop("skipped"))

        deadlines = ExtendResponseDeadlines.from_dict(d.pop("deadlines"))

        performance = Performance.from_dict(d.pop("performance"))

        extend_response = cls(
            topic=topic,
            extended=extended,
            skipped=skipped,
            deadlines=deadlines,
            performance=performance,
        )

        extend_response.additional_properties = d
        return extend_response

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
