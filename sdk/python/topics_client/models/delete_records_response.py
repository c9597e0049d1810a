from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.performance import Performance


T = TypeVar("T", bound="DeleteRecordsResponse")


@_attrs_define
class DeleteRecordsResponse:
    """Result of a record delete; topic state after the delete.

    Attributes:
        topic (str):
        deleted (int): Count of records removed by this call.
        earliest_seq (int): New first live seq.
        head_seq (int):
        count (int):
        bytes_ (int):
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
    """

    topic: str
    deleted: int
    earliest_seq: int
    head_seq: int
    count: int
    bytes_: int
    performance: Performance
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        deleted = self.deleted

        earliest_seq = self.earliest_seq

        head_seq = self.head_seq

        count = self.count

        bytes_ = self.bytes_

        performance = self.performance.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "deleted": deleted,
                "earliest_seq": earliest_seq,
                "head_seq": head_seq,
                "count": count,
                "bytes": bytes_,
                "performance": performance,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.performance import Performance  # noqa: PLC0415

        d = dict(src_dict)
        topic = d.pop("topic")

        deleted = d.pop("deleted")

        earliest_seq = d.pop("earliest_seq")

        head_seq = d.pop("head_seq")

        count = d.pop("count")

        bytes_ = d.pop("bytes")

        performance = Performance.from_dict(d.pop("performance"))

        delete_records_response = cls(
            topic=topic,
            deleted=deleted,
            earliest_seq=earliest_seq,
            head_seq=head_seq,
            count=count,
            bytes_=bytes_,
            performance=performance,
        )

        delete_records_response.additional_properties = d
        return delete_records_response

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
