from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="WatchTopicPosition")


@_attrs_define
class WatchTopicPosition:
    """One watched topic's resolved start and current watermarks.

    Attributes:
        from_seq (int): The resolved start cursor — records with `$seq > from_seq` are delivered (`head_seq` for a
            `tail` watch). If `from_seq + 1` is below the eviction floor the stream opens with a `from_seq_too_old`
            tombstone for this topic.
        head_seq (int): Highest assigned seq now.
        earliest_seq (int): First live seq now (`head_seq + 1` when the topic is empty).
    """

    from_seq: int
    head_seq: int
    earliest_seq: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from_seq = self.from_seq

        head_seq = self.head_seq

        earliest_seq = self.earliest_seq

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "from_seq": from_seq,
                "head_seq": head_seq,
                "earliest_seq": earliest_seq,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        from_seq = d.pop("from_seq")

        head_seq = d.pop("head_seq")

        earliest_seq = d.pop("earliest_seq")

        watch_topic_position = cls(
            from_seq=from_seq,
            head_seq=head_seq,
            earliest_seq=earliest_seq,
        )

        watch_topic_position.additional_properties = d
        return watch_topic_position

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
