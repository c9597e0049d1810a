from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.record_meta import RecordMeta


T = TypeVar("T", bound="Record")


@_attrs_define
class Record:
    """A stored record as returned by reads. Server-canonical metadata uses `$`-prefixed keys; `$node`/`$tag`/`meta` are
    omitted when absent.

        Attributes:
            seq (int): Server-assigned sequence id.
            ts (int): Server commit time (ms since epoch).
            data (Any): The payload, verbatim (any JSON, may be null).
            delay_ms (int | Unset): A delayed queue job's write delay (the `delay_ms` it was appended with, clamped): not
                claimable before `$ts + $delay_ms`. Omitted when the record was not delayed.
            node (str | Unset): Origin node id supplied by the writer.
            tag (str | Unset): Tag supplied by the writer (only with `include_tags`).
            meta (RecordMeta | Unset): The writer's headers, verbatim (only with `include_meta`).
    """

    seq: int
    ts: int
    data: Any
    delay_ms: int | Unset = UNSET
    node: str | Unset = UNSET
    tag: str | Unset = UNSET
    meta: RecordMeta | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        seq = self.seq

        ts = self.ts

        data = self.data

        delay_ms = self.delay_ms

        node = self.node

        tag = self.tag

        meta: dict[str, Any] | Unset = UNSET
        if not isinstance(self.meta, Unset):
            meta = self.meta.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "$seq": seq,
                "$ts": ts,
                "data": data,
            }
        )
        if delay_ms is not UNSET:
            field_dict["$delay_ms"] = delay_ms
        if node is not UNSET:
            field_dict["$node"] = node
        if tag is not UNSET:
            field_dict["$tag"] = tag
        if meta is not UNSET:
            field_dict["meta"] = meta

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.record_meta import RecordMeta  # noqa: PLC0415

        d = dict(src_dict)
        seq = d.pop("$seq")

        ts = d.pop("$ts")

        data = d.pop("data")

        delay_ms = d.pop("$delay_ms", UNSET)

        node = d.pop("$node", UNSET)

        tag = d.pop("$tag", UNSET)

        _meta = d.pop("meta", UNSET)
        meta: RecordMeta | Unset
        if isinstance(_meta, Unset):
            meta = UNSET
        else:
            meta = RecordMeta.from_dict(_meta)

        record = cls(
            seq=seq,
            ts=ts,
            data=data,
            delay_ms=delay_ms,
            node=node,
            tag=tag,
            meta=meta,
        )

        record.additional_properties = d
        return record

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
