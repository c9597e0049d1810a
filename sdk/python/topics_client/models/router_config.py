from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..models.match_op import MatchOp
from ..models.router_guarantee import RouterGuarantee
from ..types import UNSET, Unset

T = TypeVar("T", bound="RouterConfig")


@_attrs_define
class RouterConfig:
    """A router definition (the body of `PUT /v0/routers/{router}`).

    Attributes:
        source (str): Source topic (a topic name); its records are forwarded. Created with the default config if
            missing.
        dest (str): Destination topic (a topic name); must differ from `source` (else `400 invalid_request`; a rule
            between two fields, which JSON Schema cannot state).
        preserve_node (bool | Unset): Keep the original `$node` on copies (loop prevention across a fan-out). `false`
            clears it. Default true.
        preserve_tag (bool | Unset): Keep `$tag` on copies. Default true.
        create_dest (bool | Unset): Create `dest` if absent (default true); `false` ⇒ `404 topic_not_found` when it is
            missing.
        filter_ (list[Literal['tag'] | MatchOp | str] | None | str | Unset): Forward-time filter on the source record's
            tag (a `Match`, as a delete's `match`); `null` (default) forwards everything.
        allow_cycle (bool | Unset): Permit a router that closes a directed cycle (multi-master); records then stop after
            8 hops. Default false ⇒ `409 router_cycle`.
        guarantee (RouterGuarantee | Unset): Delivery mode. `at_least_once` (default), per-source FIFO. `exactly_once`
            stamps each copy with a stable key in `meta._topics_router`
            (`{router, source, seq, hops}`); a router that finds its key already in
            dest (after recovery) moves past it instead of appending again — as long as
            the copy is still retained in dest.
    """

    source: str
    dest: str
    preserve_node: bool | Unset = UNSET
    preserve_tag: bool | Unset = UNSET
    create_dest: bool | Unset = UNSET
    filter_: list[Literal["tag"] | MatchOp | str] | None | str | Unset = UNSET
    allow_cycle: bool | Unset = UNSET
    guarantee: RouterGuarantee | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        source = self.source

        dest = self.dest

        preserve_node = self.preserve_node

        preserve_tag = self.preserve_tag

        create_dest = self.create_dest

        filter_: list[Literal["tag"] | str] | None | str | Unset
        if isinstance(self.filter_, Unset):
            filter_ = UNSET
        elif isinstance(self.filter_, list):
            filter_ = []
            for componentsschemas_match_type_1_item_data in self.filter_:
                componentsschemas_match_type_1_item: Literal["tag"] | str
                if isinstance(componentsschemas_match_type_1_item_data, MatchOp):
                    componentsschemas_match_type_1_item = componentsschemas_match_type_1_item_data.value
                else:
                    componentsschemas_match_type_1_item = componentsschemas_match_type_1_item_data
                filter_.append(componentsschemas_match_type_1_item)

        else:
            filter_ = self.filter_

        allow_cycle = self.allow_cycle

        guarantee: str | Unset = UNSET
        if not isinstance(self.guarantee, Unset):
            guarantee = self.guarantee.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "source": source,
                "dest": dest,
            }
        )
        if preserve_node is not UNSET:
            field_dict["preserve_node"] = preserve_node
        if preserve_tag is not UNSET:
            field_dict["preserve_tag"] = preserve_tag
        if create_dest is not UNSET:
            field_dict["create_dest"] = create_dest
        if filter_ is not UNSET:
            field_dict["filter"] = filter_
        if allow_cycle is not UNSET:
            field_dict["allow_cycle"] = allow_cycle
        if guarantee is not UNSET:
            field_dict["guarantee"] = guarantee

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        source = d.pop("source")

        dest = d.pop("dest")

        preserve_node = d.pop("preserve_node", UNSET)

        preserve_tag = d.pop("preserve_tag", UNSET)

        create_dest = d.pop("create_dest", UNSET)

        def _parse_filter_(data: object) -> list[Literal["tag"] | MatchOp | str] | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                componentsschemas_match_type_1 = []
                _componentsschemas_match_type_1 = data
                for componentsschemas_match_type_1_item_data in _componentsschemas_match_type_1:

                    def _parse_componentsschemas_match_type_1_item(
                        data: object,
                    ) -> Literal["tag"] | MatchOp | str:
                        componentsschemas_match_type_1_item_type_0 = cast(Literal["tag"], data)
                        if componentsschemas_match_type_1_item_type_0 != "tag":
                            raise ValueError(
                                f"/components/schemas/Match_type_1_item_type_0 must match const 'tag', got '{componentsschemas_match_type_1_item_type_0}'"
                            )
                        return componentsschemas_match_type_1_item_type_0
                        try:
                            if not isinstance(data, str):
                                raise TypeError()
                            componentsschemas_match_type_1_item_type_1 = MatchOp(data)

                            return componentsschemas_match_type_1_item_type_1
                        except (TypeError, ValueError, AttributeError, KeyError):
                            pass
                        return cast(Literal["tag"] | MatchOp | str, data)

                    componentsschemas_match_type_1_item = _parse_componentsschemas_match_type_1_item(
                        componentsschemas_match_type_1_item_data
                    )

                    componentsschemas_match_type_1.append(componentsschemas_match_type_1_item)

                return componentsschemas_match_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[Literal["tag"] | MatchOp | str] | None | str | Unset, data)

        filter_ = _parse_filter_(d.pop("filter", UNSET))

        allow_cycle = d.pop("allow_cycle", UNSET)

        _guarantee = d.pop("guarantee", UNSET)
        guarantee: RouterGuarantee | Unset
        if isinstance(_guarantee, Unset):
            guarantee = UNSET
        else:
            guarantee = RouterGuarantee(_guarantee)

        router_config = cls(
            source=source,
            dest=dest,
            preserve_node=preserve_node,
            preserve_tag=preserve_tag,
            create_dest=create_dest,
            filter_=filter_,
            allow_cycle=allow_cycle,
            guarantee=guarantee,
        )

        return router_config
