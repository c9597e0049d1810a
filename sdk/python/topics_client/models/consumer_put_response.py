from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.performance import Performance


T = TypeVar("T", bound="ConsumerPutResponse")


@_attrs_define
class ConsumerPutResponse:
    """Result of a consumer PUT (the consumer as it stands).

    Attributes:
        consumer (str):
        topic (str):
        cursor (int): The committed cursor — the last seq the consumer has read; it reads `$seq > cursor` next.
        head_seq (int): The topic's head.
        lag (int): `head_seq - cursor` (as a diff's `lag`): seqs written that the consumer has not committed.
        committed_at_ms (int): When the cursor was last set (epoch ms) — by the PUT that created or repositioned it, or
            by a commit.
        created (bool): True only when this call created the consumer.
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
    """

    consumer: str
    topic: str
    cursor: int
    head_seq: int
    lag: int
    committed_at_ms: int
    created: bool
    performance: Performance
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        consumer = self.consumer

        topic = self.topic

        cursor = self.cursor

        head_seq = self.head_seq

        lag = self.lag

        committed_at_ms = self.committed_at_ms

        created = self.created

        performance = self.performance.to_dict()

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
                "created": created,
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

        cursor = d.pop("cursor")

        head_seq = d.pop("head_seq")

        lag = d.pop("lag")

        committed_at_ms = d.pop("committed_at_ms")

        created = d.pop("created")

        performance = Performance.from_dict(d.pop("performance"))

        consumer_put_response = cls(
            consumer=consumer,
            topic=topic,
            cursor=cursor,
            head_seq=head_seq,
            lag=lag,
            committed_at_ms=committed_at_ms,
            created=created,
            performance=performance,
        )

        consumer_put_response.additional_properties = d
        return consumer_put_response

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
