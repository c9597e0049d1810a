from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.record_in import RecordIn
    from ..models.topic_config import TopicConfig


T = TypeVar("T", bound="AppendRequest")


@_attrs_define
class AppendRequest:
    """An append of one or many records.

    Attributes:
        records (list[RecordIn]): Records to append, assigned contiguous seqs in array order. At most
            `TOPICS_MAX_BATCH_RECORDS` (default 10000; the served document states the configured value), else `400
            batch_too_large`.
        node (str | Unset): Batch-level default origin node (the common one-writer case). At most
            `TOPICS_MAX_NODE_BYTES` (default 128) characters.
        idempotency_key (str | Unset): Dedupe key scoped to this topic; a retry in-window returns the original seqs with
            `deduped: true`. Wins over the `Idempotency-Key` header.
        create (bool | Unset): Overrides the topic's `auto_create` for this write only. true ⇒ auto-create if absent;
            false ⇒ `404 topic_not_found` if absent. Default = the topic's `auto_create`.
        config (TopicConfig | Unset): Topic config as sent on create/configure (PUT body, or inline `config` on a
            creating append). All fields optional. On create, an omitted field takes
            the default stated in its description; on an update, an omitted field keeps
            its current value (a partial `PUT` never resets a field). The schema sets no
            `default:` so a generated client sends only the fields its user set.
            Unknown fields are `400 invalid_request`. The queue fields
            (`lease_ms`, `claim_jitter_ms`, `max_deliveries`, `dead_letter`,
            `leases_durable`, `max_in_flight`) are only meaningful when `type` is `queue` (accepted but
            inert on a log).
        disable_backpressure (bool | Unset): If true, opt out of `429` for this write; the server may queue it instead.
            Default false.
        delay_ms (int | Unset): Queue topics only: the default `delay_ms` of this write's records (a record's own wins)
            — each job is not claimable before `$ts + delay_ms`. Clamped by the server to [0, 86400000]. On a log topic (or
            a write that would create one): `409 not_a_queue`, nothing written.
    """

    records: list[RecordIn]
    node: str | Unset = UNSET
    idempotency_key: str | Unset = UNSET
    create: bool | Unset = UNSET
    config: TopicConfig | Unset = UNSET
    disable_backpressure: bool | Unset = UNSET
    delay_ms: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        records = []
        for records_item_data in self.records:
            records_item = records_item_data.to_dict()
            records.append(records_item)

        node = self.node

        idempotency_key = self.idempotency_key

        create = self.create

        config: dict[str, Any] | Unset = UNSET
        if not isinstance(self.config, Unset):
            config = self.config.to_dict()

        disable_backpressure = self.disable_backpressure

        delay_ms = self.delay_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "records": records,
            }
        )
        if node is not UNSET:
            field_dict["node"] = node
        if idempotency_key is not UNSET:
            field_dict["idempotency_key"] = idempotency_key
        if create is not UNSET:
            field_dict["create"] = create
        if config is not UNSET:
            field_dict["config"] = config
        if disable_backpressure is not UNSET:
            field_dict["disable_backpressure"] = disable_backpressure
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.record_in import RecordIn  # noqa: PLC0415
        from ..models.topic_config import TopicConfig  # noqa: PLC0415

        d = dict(src_dict)
        records = []
        _records = d.pop("records")
        for records_item_data in _records:
            records_item = RecordIn.from_dict(records_item_data)

            records.append(records_item)

        node = d.pop("node", UNSET)

        idempotency_key = d.pop("idempotency_key", UNSET)

        create = d.pop("create", UNSET)

        _config = d.pop("config", UNSET)
        config: TopicConfig | Unset
        if isinstance(_config, Unset):
            config = UNSET
        else:
            config = TopicConfig.from_dict(_config)

        disable_backpressure = d.pop("disable_backpressure", UNSET)

        delay_ms = d.pop("delay_ms", UNSET)

        append_request = cls(
            records=records,
            node=node,
            idempotency_key=idempotency_key,
            create=create,
            config=config,
            disable_backpressure=disable_backpressure,
            delay_ms=delay_ms,
        )

        return append_request
