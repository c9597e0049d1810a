from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.durability import Durability
from ..models.topic_type import TopicType

T = TypeVar("T", bound="TopicSummary")


@_attrs_define
class TopicSummary:
    """One entry of a topic list (every field always present).

    Attributes:
        topic (str):
        type_ (str | TopicType): A `TopicType`, or a kind added later (open).
        head_seq (int): Highest assigned seq (log end). 0 for a fresh empty topic.
        earliest_seq (int): Seq of the first currently-live record; `head_seq + 1` when the topic is empty.
        count (int): Currently retained records (approximate under lazy eviction).
        bytes_ (int): Currently retained payload bytes (approximate under lazy eviction).
        durable (bool): Always `durability == "fsync"`.
        durability (Durability | str): The resolved `Durability` class, or a class added later (open).
        effective_priority (int): The priority the scheduler is using right now (manual, or auto-derived).
    """

    topic: str
    type_: str | TopicType
    head_seq: int
    earliest_seq: int
    count: int
    bytes_: int
    durable: bool
    durability: Durability | str
    effective_priority: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        type_: str
        if isinstance(self.type_, TopicType):
            type_ = self.type_.value
        else:
            type_ = self.type_

        head_seq = self.head_seq

        earliest_seq = self.earliest_seq

        count = self.count

        bytes_ = self.bytes_

        durable = self.durable

        durability: str
        if isinstance(self.durability, Durability):
            durability = self.durability.value
        else:
            durability = self.durability

        effective_priority = self.effective_priority

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "type": type_,
                "head_seq": head_seq,
                "earliest_seq": earliest_seq,
                "count": count,
                "bytes": bytes_,
                "durable": durable,
                "durability": durability,
                "effective_priority": effective_priority,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        topic = d.pop("topic")

        def _parse_type_(data: object) -> str | TopicType:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                type_type_0 = TopicType(data)

                return type_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(str | TopicType, data)

        type_ = _parse_type_(d.pop("type"))

        head_seq = d.pop("head_seq")

        earliest_seq = d.pop("earliest_seq")

        count = d.pop("count")

        bytes_ = d.pop("bytes")

        durable = d.pop("durable")

        def _parse_durability(data: object) -> Durability | str:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                durability_type_0 = Durability(data)

                return durability_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Durability | str, data)

        durability = _parse_durability(d.pop("durability"))

        effective_priority = d.pop("effective_priority")

        topic_summary = cls(
            topic=topic,
            type_=type_,
            head_seq=head_seq,
            earliest_seq=earliest_seq,
            count=count,
            bytes_=bytes_,
            durable=durable,
            durability=durability,
            effective_priority=effective_priority,
        )

        topic_summary.additional_properties = d
        return topic_summary

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
