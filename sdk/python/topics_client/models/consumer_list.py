from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.consumer import Consumer
    from ..models.performance import Performance


T = TypeVar("T", bound="ConsumerList")


@_attrs_define
class ConsumerList:
    """One page of a topic's named consumers.

    Attributes:
        consumers (list[Consumer]):
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
        next_cursor (str | Unset): Opaque cursor for the next page; omitted on the final page.
    """

    consumers: list[Consumer]
    performance: Performance
    next_cursor: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        consumers = []
        for consumers_item_data in self.consumers:
            consumers_item = consumers_item_data.to_dict()
            consumers.append(consumers_item)

        performance = self.performance.to_dict()

        next_cursor = self.next_cursor

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "consumers": consumers,
                "performance": performance,
            }
        )
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.consumer import Consumer  # noqa: PLC0415
        from ..models.performance import Performance  # noqa: PLC0415

        d = dict(src_dict)
        consumers = []
        _consumers = d.pop("consumers")
        for consumers_item_data in _consumers:
            consumers_item = Consumer.from_dict(consumers_item_data)

            consumers.append(consumers_item)

        performance = Performance.from_dict(d.pop("performance"))

        next_cursor = d.pop("next_cursor", UNSET)

        consumer_list = cls(
            consumers=consumers,
            performance=performance,
            next_cursor=next_cursor,
        )

        consumer_list.additional_properties = d
        return consumer_list

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
