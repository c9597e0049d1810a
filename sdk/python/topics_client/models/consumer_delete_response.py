from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.performance import Performance


T = TypeVar("T", bound="ConsumerDeleteResponse")


@_attrs_define
class ConsumerDeleteResponse:
    """Result of a consumer delete.

    Attributes:
        consumer (str):
        topic (str):
        deleted (bool): False when the consumer was already absent.
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
    """

    consumer: str
    topic: str
    deleted: bool
    performance: Performance
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        consumer = self.consumer

        topic = self.topic

        deleted = self.deleted

        performance = self.performance.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "consumer": consumer,
                "topic": topic,
                "deleted": deleted,
                "performance": performance,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.performance import Performance  # noqa: PLC0415

        d = dict(src_dict)
        consumer = d.pop("consumer")

        topic = d.pop("topic")

        deleted = d.pop("deleted")

        performance = Performance.from_dict(d.pop("performance"))

        consumer_delete_response = cls(
            consumer=consumer,
            topic=topic,
            deleted=deleted,
            performance=performance,
        )

        consumer_delete_response.additional_properties = d
        return consumer_delete_response

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
