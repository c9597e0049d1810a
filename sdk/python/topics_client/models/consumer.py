from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Consumer")


@_attrs_define
class Consumer:
    """A named consumer and where it stands.

    Attributes:
        consumer (str):
        topic (str):
        cursor (int): The committed cursor — the last seq the consumer has read; it reads `$seq > cursor` next.
        head_seq (int): The topic's head.
        lag (int): `head_seq - cursor` (as a diff's `lag`): seqs written that the consumer has not committed.
        committed_at_ms (int): When the cursor was last set (epoch ms) — by the PUT that created or repositioned it, or
            by a commit.
    """

    consumer: str
    topic: str
    cursor: int
    head_seq: int
    lag: int
    committed_at_ms: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        consumer = self.consumer

        topic = self.topic

        cursor = self.cursor

        head_seq = self.head_seq

        lag = self.lag

        committed_at_ms = self.committed_at_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "consumer": consumer,
                "topic": topic,
                "cursor": cursor,
                "head_seq": head_seq,
                "lag": lag,
                "committed_at_ms": committed_at_ms,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        consumer = d.pop("consumer")

        topic = d.pop("topic")

        cursor = d.pop("cursor")

        head_seq = d.pop("head_seq")

        lag = d.pop("lag")

        committed_at_ms = d.pop("committed_at_ms")

        consumer = cls(
            consumer=consumer,
            topic=topic,
            cursor=cursor,
            head_seq=head_seq,
            lag=lag,
            committed_at_ms=committed_at_ms,
        )

        consumer.additional_properties = d
        return consumer

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
