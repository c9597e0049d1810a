from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.performance import Performance
    from ..models.topic_summary import TopicSummary


T = TypeVar("T", bound="TopicList")


@_attrs_define
class TopicList:
    """One page of topics.

    Attributes:
        topics (list[TopicSummary]):
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
        next_cursor (str | Unset): Opaque cursor for the next page; omitted on the final page.
    """

    topics: list[TopicSummary]
    performance: Performance
    next_cursor: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topics = []
        for topics_item_data in self.topics:
            topics_item = topics_item_data.to_dict()
            topics.append(topics_item)

        performance = self.performance.to_dict()

        next_cursor = self.next_cursor

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topics": topics,
                "performance": performance,
            }
        )
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.performance import Performance  # noqa: PLC0415
        from ..models.topic_summary import TopicSummary  # noqa: PLC0415

        d = dict(src_dict)
        topics = []
        _topics = d.pop("topics")
        for topics_item_data in _topics:
            topics_item = TopicSummary.from_dict(topics_item_data)

            topics.append(topics_item)

        performance = Performance.from_dict(d.pop("performance"))

        next_cursor = d.pop("next_cursor", UNSET)

        topic_list = cls(
            topics=topics,
            performance=performance,
            next_cursor=next_cursor,
        )

        topic_list.additional_properties = d
        return topic_list

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
