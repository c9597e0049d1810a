from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.router_guarantee import RouterGuarantee

T = TypeVar("T", bound="Router")


@_attrs_define
class Router:
    """A router's resolved definition.

    Attributes:
        router (str):
        source (str):
        dest (str):
        preserve_node (bool):
        preserve_tag (bool):
        filter_ (list[str] | None | str): The filter as given (a `Match`), or null.
        allow_cycle (bool):
        guarantee (RouterGuarantee | str):
    """

    router: str
    source: str
    dest: str
    preserve_node: bool
    preserve_tag: bool
    filter_: list[str] | None | str
    allow_cycle: bool
    guarantee: RouterGuarantee | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        router = self.router

        source = self.source

        dest = self.dest

        preserve_node = self.preserve_node

        preserve_tag = self.preserve_tag

        filter_: list[str] | None | str
        if isinstance(self.filter_, list):
            filter_ = self.filter_

        else:
            filter_ = self.filter_

        allow_cycle = self.allow_cycle

        guarantee: str
        if isinstance(self.guarantee, RouterGuarantee):
            guarantee = self.guarantee.value
        else:
            guarantee = self.guarantee

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "router": router,
                "source": source,
                "dest": dest,
                "preserve_node": preserve_node,
                "preserve_tag": preserve_tag,
                "filter": filter_,
                "allow_cycle": allow_cycle,
                "guarantee": guarantee,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        router = d.pop("router")

        source = d.pop("source")

        dest = d.pop("dest")

        preserve_node = d.pop("preserve_node")

        preserve_tag = d.pop("preserve_tag")

        def _parse_filter_(data: object) -> list[str] | None | str:
            if data is None:
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                filter_type_1 = cast(list[str], data)

                return filter_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | str, data)

        filter_ = _parse_filter_(d.pop("filter"))

        allow_cycle = d.pop("allow_cycle")

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

        router = cls(
            router=router,
            source=source,
            dest=dest,
            preserve_node=preserve_node,
            preserve_tag=preserve_tag,
            filter_=filter_,
            allow_cycle=allow_cycle,
            guarantee=guarantee,
        )

        router.additional_properties = d
        return router

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
