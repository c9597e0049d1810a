from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.router_guarantee import RouterGuarantee

T = TypeVar("T", bound="RouterSummary")


@_attrs_define
class RouterSummary:
    """One router in a list.

    Attributes:
        router (str):
        source (str):
        dest (str):
        guarantee (RouterGuarantee | str):
        forwarded_total (int):
    """

    router: str
    source: str
    dest: str
    guarantee: RouterGuarantee | str
    forwarded_total: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        router = self.router

        source = self.source

        dest = self.dest

        guarantee: str
        if isinstance(self.guarantee, RouterGuarantee):
            guarantee = self.guarantee.value
        else:
            guarantee = self.guarantee

        forwarded_total = self.forwarded_total

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "router": router,
                "source": source,
                "dest": dest,
                "guarantee": guarantee,
                "forwarded_total": forwarded_total,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        router = d.pop("router")

        source = d.pop("source")

        dest = d.pop("dest")

        def _parse_guarantee(data: object) -> RouterGuarantee | str:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                guarantee_type_0 = RouterGuarantee(data)

                return guarantee_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(RouterGuarantee | str, data)

        guarantee = _parse_guarantee(d.pop("guarantee"))

        forwarded_total = d.pop("forwarded_total")

        router_summary = cls(
            router=router,
            source=source,
            dest=dest,
            guarantee=guarantee,
            forwarded_total=forwarded_total,
        )

        router_summary.additional_properties = d
        return router_summary

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
