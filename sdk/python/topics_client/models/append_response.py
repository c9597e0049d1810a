from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.performance import Performance


T = TypeVar("T", bound="AppendResponse")


@_attrs_define
class AppendResponse:
    """Result of an append.

    Attributes:
        topic (str):
        first_seq (int):
        last_seq (int):
        head_seq (int):
        count (int): Number of records in this write.
        created (bool): True when this write created the topic (status 201).
        deduped (bool): True when an `idempotency_key` matched a prior in-window write; the seqs are the original ones
            and nothing was appended.
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
        seqs (list[int] | Unset): Assigned seqs in request order; omitted with `return_seqs=false`.
    """

    topic: str
    first_seq: int
    last_seq: int
    head_seq: int
    count: int
    created: bool
    deduped: bool
    performance: Performance
    seqs: list[int] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        first_seq = self.first_seq

        last_seq = self.last_seq

        head_seq = self.head_seq

        count = self.count

        created = self.created

        deduped = self.deduped

        performance = self.performance.to_dict()

        seqs: list[int] | Unset = UNSET
        if not isinstance(self.seqs, Unset):
            seqs = self.seqs

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "first_seq": first_seq,
                "last_seq": last_seq,
                "head_seq": head_seq,
                "count": count,
                "created": created,
                "deduped": deduped,
                "performance": performance,
            }
        )
        if seqs is not UNSET:
            field_dict["seqs"] = seqs

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.performance import Performance  # noqa: PLC0415

        d = dict(src_dict)
        topic = d.pop("topic")

        first_seq = d.pop("first_seq")

        last_seq = d.pop("last_seq")

        head_seq = d.pop("head_seq")

        count = d.pop("count")

        created = d.pop("created")

        deduped = d.pop("deduped")

        performance = Performance.from_dict(d.pop("performance"))

        seqs = cast(list[int], d.pop("seqs", UNSET))

        append_response = cls(
            topic=topic,
            first_seq=first_seq,
            last_seq=last_seq,
            head_seq=head_seq,
            count=count,
            created=created,
            deduped=deduped,
            performance=performance,
            seqs=seqs,
        )

        append_response.additional_properties = d
        return append_response

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
