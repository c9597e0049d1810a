from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.discard import Discard
from ..models.durability import Durability
from ..models.topic_type import TopicType
from ..types import UNSET, Unset

T = TypeVar("T", bound="TopicConfig")


@_attrs_define
class TopicConfig:
    """Topic config as sent on create/configure (PUT body, or inline `config` on a
    creating append). All fields optional. On create, an omitted field takes
    the default stated in its description; on an update, an omitted field keeps
    its current value (a partial `PUT` never resets a field). The schema sets no
    `default:` so a generated client sends only the fields its user set.
    Unknown fields are `400 invalid_request`. The queue fields
    (`lease_ms`, `claim_jitter_ms`, `max_deliveries`, `dead_letter`,
    `leases_durable`, `max_in_flight`) are only meaningful when `type` is `queue` (accepted but
    inert on a log).

        Attributes:
            type_ (TopicType | Unset): Topic kind. `queue` additionally enables the claim/ack/nack/extend/work endpoints.
            ttl_ms (int | Unset): Records older than this (by `$ts`) are not delivered. 0 = no TTL. Default 0.
            cap_records (int | Unset): Max retained record count; on overflow the topic evicts per `discard`. 0 = unbounded.
                Default 0.
            cap_bytes (int | Unset): Max retained payload bytes (data + meta + framing). 0 = unbounded. Whichever cap is hit
                first triggers eviction. Default 0.
            discard (Discard | Unset): Full-topic policy. `old` evicts the oldest; `reject` refuses the write with `422
                topic_full`.
            durable (bool | Unset): Shorthand alias for `durability`, consulted only when `durability` is absent (true ⇒
                `fsync`, false ⇒ `disk`). Default false.
            durability (Durability | Unset): Durability commit class. `ephemeral`: resident-only payloads, lost on
                restart. `memory`: WAL-written but best-effort, no durability guarantee.
                `disk`: WAL group-committed, acked on enqueue. `fsync`: ack held until the
                WAL frame is fsynced.
            priority (int | None | Unset): Manual delivery priority (higher served first under pressure), clamped by the
                server to [-1000, 1000]. null ⇒ auto-priority. Default null.
            auto_priority (bool | Unset): If `priority` is null, derive effective priority from the recency of the last
                read/SSE/state call on this topic. Default true.
            auto_create (bool | Unset): Whether a write to this topic name may lazily create it. The per-write `create` flag
                can override it. Default true.
            idempotency_window_ms (int | Unset): How long `(topic, idempotency_key)` dedupe state is retained. Default
                120000 (2 minutes).
            dedupe_node (bool | Unset): Whether node loop-prevention filtering is enabled on reads of this topic. Default
                true.
            lease_ms (int | Unset): Queue only. Default lease (visibility-timeout) duration for a claim. Clamped by the
                server to [100, 86400000]. Default 30000.
            claim_jitter_ms (int | Unset): Queue only. Claim coalescing-window width; 0 = greedy. Clamped by the server to
                [0, 5000]. Default 0.
            max_deliveries (int | Unset): Queue only. Deliveries without an ack before a job is dead-lettered. 0 = unlimited
                redelivery. Default 0.
            dead_letter (None | str | Unset): Queue only. Topic a job is moved to when it exceeds `max_deliveries`; null =
                none. Must differ from this topic (else `400 invalid_request`). Default null.
            leases_durable (bool | Unset): Queue only. Durability of the leases log; losing leases on a crash is self-
                healing. Default false.
            max_in_flight (int | Unset): Queue only. The most jobs leased at once across all consumers (claims and `/work`
                streams); a claim gets at most the room left, and none when there is none. A change takes effect at once; jobs
                in flight above a lowered cap finish normally. 0 = no cap. Default 0.
    """

    type_: TopicType | Unset = UNSET
    ttl_ms: int | Unset = UNSET
    cap_records: int | Unset = UNSET
    cap_bytes: int | Unset = UNSET
    discard: Discard | Unset = UNSET
    durable: bool | Unset = UNSET
    durability: Durability | Unset = UNSET
    priority: int | None | Unset = UNSET
    auto_priority: bool | Unset = UNSET
    auto_create: bool | Unset = UNSET
    idempotency_window_ms: int | Unset = UNSET
    dedupe_node: bool | Unset = UNSET
    lease_ms: int | Unset = UNSET
    claim_jitter_ms: int | Unset = UNSET
    max_deliveries: int | Unset = UNSET
    dead_letter: None | str | Unset = UNSET
    leases_durable: bool | Unset = UNSET
    max_in_flight: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        type_: str | Unset = UNSET
        if not isinstance(self.type_, Unset):
            type_ = self.type_.value

        ttl_ms = self.ttl_ms

        cap_records = self.cap_records

        cap_bytes = self.cap_bytes

        discard: str | Unset = UNSET
        if not isinstance(self.discard, Unset):
            discard = self.discard.value

        durable = self.durable

        durability: str | Unset = UNSET
        if not isinstance(self.durability, Unset):
            durability = self.durability.value

        priority: int | None | Unset
        if isinstance(self.priority, Unset):
            priority = UNSET
        else:
            priority = self.priority

        auto_priority = self.auto_priority

        auto_create = self.auto_create

        idempotency_window_ms = self.idempotency_window_ms

        dedupe_node = self.dedupe_node

        lease_ms = self.lease_ms

        claim_jitter_ms = self.claim_jitter_ms

        max_deliveries = self.max_deliveries

        dead_letter: None | str | Unset
        if isinstance(self.dead_letter, Unset):
            dead_letter = UNSET
        else:
            dead_letter = self.dead_letter

        leases_durable = self.leases_durable

        max_in_flight = self.max_in_flight

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if type_ is not UNSET:
            field_dict["type"] = type_
        if ttl_ms is not UNSET:
            field_dict["ttl_ms"] = ttl_ms
        if cap_records is not UNSET:
            field_dict["cap_records"] = cap_records
        if cap_bytes is not UNSET:
            field_dict["cap_bytes"] = cap_bytes
        if discard is not UNSET:
            field_dict["discard"] = discard
        if durable is not UNSET:
            field_dict["durable"] = durable
        if durability is not UNSET:
            field_dict["durability"] = durability
        if priority is not UNSET:
            field_dict["priority"] = priority
        if auto_priority is not UNSET:
            field_dict["auto_priority"] = auto_priority
        if auto_create is not UNSET:
            field_dict["auto_create"] = auto_create
        if idempotency_window_ms is not UNSET:
            field_dict["idempotency_window_ms"] = idempotency_window_ms
        if dedupe_node is not UNSET:
            field_dict["dedupe_node"] = dedupe_node
        if lease_ms is not UNSET:
            field_dict["lease_ms"] = lease_ms
        if claim_jitter_ms is not UNSET:
            field_dict["claim_jitter_ms"] = claim_jitter_ms
        if max_deliveries is not UNSET:
            field_dict["max_deliveries"] = max_deliveries
        if dead_letter is not UNSET:
            field_dict["dead_letter"] = dead_letter
        if leases_durable is not UNSET:
            field_dict["leases_durable"] = leases_durable
        if max_in_flight is not UNSET:
            field_dict["max_in_flight"] = max_in_flight

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        _type_ = d.pop("type", UNSET)
        type_: TopicType | Unset
        if isinstance(_type_, Unset):
            type_ = UNSET
        else:
            type_ = TopicType(_type_)

        ttl_ms = d.pop("ttl_ms", UNSET)

        cap_records = d.pop("cap_records", UNSET)

        cap_bytes = d.pop("cap_bytes", UNSET)

        _discard = d.pop("discard", UNSET)
        discard: Discard | Unset
        if isinstance(_discard, Unset):
            discard = UNSET
        else:
            discard = Discard(_discard)

        durable = d.pop("durable", UNSET)

        _durability = d.pop("durability", UNSET)
        durability: Durability | Unset
        if isinstance(_durability, Unset):
            durability = UNSET
        else:
            durability = Durability(_durability)

        def _parse_priority(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        priority = _parse_priority(d.pop("priority", UNSET))

        auto_priority = d.pop("auto_priority", UNSET)

        auto_create = d.pop("auto_create", UNSET)

        idempotency_window_ms = d.pop("idempotency_window_ms", UNSET)

        dedupe_node = d.pop("dedupe_node", UNSET)

        lease_ms = d.pop("lease_ms", UNSET)

        claim_jitter_ms = d.pop("claim_jitter_ms", UNSET)

        max_deliveries = d.pop("max_deliveries", UNSET)

        def _parse_dead_letter(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        dead_letter = _parse_dead_letter(d.pop("dead_letter", UNSET))

        leases_durable = d.pop("leases_durable", UNSET)

        max_in_flight = d.pop("max_in_flight", UNSET)

        topic_config = cls(
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

        return topic_config
