from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.router_guarantee import RouterGuarantee

if TYPE_CHECKING:
    from ..models.performance import Performance


T = TypeVar("T", bound="RouterPutResponse")


@_attrs_define
class RouterPutResponse:
    """Result of a router create/configure (the router, without `create_dest`).

    Attributes:
        router (str):
        source (str):
        dest (str):
        preserve_node (bool):
        preserve_tag (bool):
        filter_ (list[str] | None | str): The filter as given (a `Match`), or null.
        allow_cycle (bool):
        guarantee (RouterGuarantee | str):
        created (bool): True only when this call created the router.
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
    """

    router: str
    source: str
    dest: str
    preserve_node: bool
    preserve_tag: bool
    filter_: list[str] | None | str
    allow_cycle: bool
    guarantee: RouterGuarantee | str
    created: bool
    performance: Performance
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

        created = self.created

        performance = self.performance.to_dict()

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
                "created": created,
                "performance": performance,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.performance import Performance  # noqa: PLC0415

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

        created = d.pop("created")

        performance = Performance.from_dict(d.pop("performance"))

        router_put_response = cls(
            router=router,
            source=source,
            dest=dest,
            preserve_node=preserve_node,
            preserve_tag=preserve_tag,
            filter_=filter_,
            allow_cycle=allow_cycle,
            guarantee=guarantee,
            created=created,
            performance=performance,
        )

        router_put_response.additional_properties = d
        return router_put_response

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
