from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.scheduled_record_meta import ScheduledRecordMeta


T = TypeVar("T", bound="ScheduledRecord")


@_attrs_define
class ScheduledRecord:
    """One record a schedule appends, as put (`data` and `meta` verbatim).

    Attributes:
        data (Any): Any JSON value.
        tag (str | Unset):
        node (str | Unset):
        meta (ScheduledRecordMeta | Unset):
    """

    data: Any
    tag: str | Unset = UNSET
    node: str | Unset = UNSET
    meta: ScheduledRecordMeta | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data

        tag = self.tag

        node = self.node

        meta: dict[str, Any] | Unset = UNSET
        if not isinstance(self.meta, Unset):
            meta = self.meta.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
            }
        )
        if tag is not UNSET:
            field_dict["tag"] = tag
        if node is not UNSET:
            field_dict["node"] = node
        if meta is not UNSET:
            field_dict["meta"] = meta

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.scheduled_record_meta import ScheduledRecordMeta  # noqa: PLC0415

        d = dict(src_dict)
        data = d.pop("data")

        tag = d.pop("tag", UNSET)

        node = d.pop("node", UNSET)

        _meta = d.pop("meta", UNSET)
        meta: ScheduledRecordMeta | Unset
        if isinstance(_meta, Unset):
            meta = UNSET
        else:
            meta = ScheduledRecordMeta.from_dict(_meta)

        scheduled_record = cls(
            data=data,
            tag=tag,
            node=node,
            meta=meta,
        )

        scheduled_record.additional_properties = d
        return scheduled_record

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
