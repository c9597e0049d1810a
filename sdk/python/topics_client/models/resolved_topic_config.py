from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.discard import Discard
from ..models.durability import Durability
from ..models.topic_type import TopicType
from ..types import UNSET, Unset

T = TypeVar("T", bound="ResolvedTopicConfig")


@_attrs_define
class ResolvedTopicConfig:
    """The full resolved topic config as echoed in responses: every field present,
    including the queue fields (inert on a log). `durability` is always the
    resolved class and `durable == (durability == "fsync")`.

        Attributes:
            type_ (str | TopicType): A `TopicType`, or a kind added later (open).
            ttl_ms (int):
            cap_records (int):
            cap_bytes (int):
            discard (Discard | str): A `Discard` policy, or a policy added later (open).
            durable (bool): Always `durability == "fsync"`.
            durability (Durability | str): The resolved `Durability` class, or a class added later (open).
            priority (int | None): Manual priority (as clamped), or null for auto-priority.
            auto_priority (bool):
            auto_create (bool):
            idempotency_window_ms (int):
            dedupe_node (bool):
            lease_ms (int): As clamped to [100, 86400000].
            claim_jitter_ms (int): As clamped to [0, 5000].
            max_deliveries (int):
            dead_letter (None | str):
            leases_durable (bool):
            max_in_flight (int | Unset): Queue only. The most jobs leased at once (0 = no cap). An extension this server
                always sends; optional in the schema so a client also reads a server without it.
    """

    type_: str | TopicType
    ttl_ms: int
    cap_records: int
    cap_bytes: int
    discard: Discard | str
    durable: bool
    durability: Durability | str
    priority: int | None
    auto_priority: bool
    auto_create: bool
    idempotency_window_ms: int
    dedupe_node: bool
    lease_ms: int
    claim_jitter_ms: int
    max_deliveries: int
    dead_letter: None | str
    leases_durable: bool
    max_in_flight: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        type_: str
        if isinstance(self.type_, TopicType):
            type_ = self.type_.value
        else:
            type_ = self.type_

        ttl_ms = self.ttl_ms

        cap_records = self.cap_records

        cap_bytes = self.cap_bytes

        discard: str
        if isinstance(self.discard, Discard):
            discard = self.discard.value
        else:
            discard = self.discard

        durable = self.durable

        durability: str
        if isinstance(self.durability, Durability):
            durability = self.durability.value
        else:
            durability = self.durability

        priority: int | None
        priority = self.priority

        auto_priority = self.auto_priority

        auto_create = self.auto_create

        idempotency_window_ms = self.idempotency_window_ms

        dedupe_node = self.dedupe_node

        lease_ms = self.lease_ms

        claim_jitter_ms = self.claim_jitter_ms

        max_deliveries = self.max_deliveries

        dead_letter: None | str
        dead_letter = self.dead_letter

        leases_durable = self.leases_durable

        max_in_flight = self.max_in_flight

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "type": type_,
                "ttl_ms": ttl_ms,
                "cap_records": cap_records,
                "cap_bytes": cap_bytes,
                "discard": discard,
                "durable": durable,
                "durability": durability,
                "priority": priority,
                "auto_priority": auto_priority,
                "auto_create": auto_create,
                "idempotency_window_ms": idempotency_window_ms,
                "dedupe_node": dedupe_node,
                "lease_ms": lease_ms,
                "claim_jitter_ms": claim_jitter_ms,
                "max_deliveries": max_deliveries,
                "dead_letter": dead_letter,
                "leases_durable": leases_durable,
            }
        )
        if max_in_flight is not UNSET:
            field_dict["max_in_flight"] = max_in_flight

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)

        def _parse_type_(data: object) -> str | TopicType:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                type_type_0 = TopicType(data)

                return type_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(str | TopicType, data)

        type_ = _parse_type_(d.pop("type"))

        ttl_ms = d.pop("ttl_ms")

        cap_records = d.pop("cap_records")

        cap_bytes = d.pop("cap_bytes")

        def _parse_discard(data: object) -> Discard | str:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                discard_type_0 = Discard(data)

                return discard_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Discard | str, data)

        discard = _parse_discard(d.pop("discard"))

        durable = d.pop("durable")

        def _parse_durability(data: object) -> Durability | str:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                durability_type_0 = Durability(data)

                return durability_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Durability | str, data)

        durability = _parse_durability(d.pop("durability"))

        def _parse_priority(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        priority = _parse_priority(d.pop("priority"))

        auto_priority = d.pop("auto_priority")

        auto_create = d.pop("auto_create")

        idempotency_window_ms = d.pop("idempotency_window_ms")

        dedupe_node = d.pop("dedupe_node")

        lease_ms = d.pop("lease_ms")

        claim_jitter_ms = d.pop("claim_jitter_ms")

        max_deliveries = d.pop("max_deliveries")

        def _parse_dead_letter(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        dead_letter = _parse_dead_letter(d.pop("dead_letter"))

        leases_durable = d.pop("leases_durable")

        max_in_flight = d.pop("max_in_flight", UNSET)

        resolved_topic_config = cls(
            type_=type_,
            ttl_ms=ttl_ms,
            cap_records=cap_records,
            cap_bytes=cap_bytes,
            discard=discard,
            durable=durable,
            durability=durability,
            priority=priority,
            auto_priority=auto_priority,
            auto_create=auto_create,
            idempotency_window_ms=idempotency_window_ms,
            dedupe_node=dedupe_node,
            lease_ms=lease_ms,
            claim_jitter_ms=claim_jitter_ms,
            max_deliveries=max_deliveries,
            dead_letter=dead_letter,
            leases_durable=leases_durable,
            max_in_flight=max_in_flight,
        )

        resolved_topic_config.additional_properties = d
        return resolved_topic_config

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
