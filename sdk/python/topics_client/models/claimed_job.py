from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.claimed_job_meta import ClaimedJobMeta


T = TypeVar("T", bound="ClaimedJob")


@_attrs_define
class ClaimedJob:
    """One leased job: the record's `$seq`/`$ts`/`data` (and `$tag`/`$node`/`meta`
    when present, omitted when absent) plus the lease fields.

        Attributes:
            seq (int): The job's seq in the jobs log; what ack/nack/extend take.
            lease_id (str): Opaque identity of this delivery's lease. May be echoed back in `lease_ids` to fence stale
                workers (validate-when-supplied).
            deadline (int): Absolute ms epoch when the lease expires unless acked/extended (`claim_ts + effective
                lease_ms`).
            ts (int): The record's server commit time (ms since epoch).
            deliveries (int): How many times this job has now been delivered, this delivery included. Compared against
                `max_deliveries`.
            data (Any): The job payload, verbatim (any JSON, may be null).
            delay_ms (int | Unset): The job's write delay, when it was appended with one (it became claimable at `$ts +
                $delay_ms`).
            tag (str | Unset): The record's tag, when it has one.
            node (str | Unset): The record's origin node (the producer's, not the claimer's), when it has one.
            meta (ClaimedJobMeta | Unset): The record's headers, verbatim, when it has any.
    """

    seq: int
    lease_id: str
    deadline: int
    ts: int
    deliveries: int
    data: Any
    delay_ms: int | Unset = UNSET
    tag: str | Unset = UNSET
    node: str | Unset = UNSET
    meta: ClaimedJobMeta | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        seq = self.seq

        lease_id = self.lease_id

        deadline = self.deadline

        ts = self.ts

        deliveries = self.deliveries

        data = self.data

        delay_ms = self.delay_ms

        tag = self.tag

        node = self.node

        meta: dict[str, Any] | Unset = UNSET
        if not isinstance(self.meta, Unset):
            meta = self.meta.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "$seq": seq,
                "lease_id": lease_id,
                "deadline": deadline,
                "$ts": ts,
                "deliveries": deliveries,
                "data": data,
            }
        )
        if delay_ms is not UNSET:
            field_dict["$delay_ms"] = delay_ms
        if tag is not UNSET:
            field_dict["$tag"] = tag
        if node is not UNSET:
            field_dict["$node"] = node
        if meta is not UNSET:
            field_dict["meta"] = meta

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.claimed_job_meta import ClaimedJobMeta  # noqa: PLC0415

        d = dict(src_dict)
        seq = d.pop("$seq")

        lease_id = d.pop("lease_id")

        deadline = d.pop("deadline")

        ts = d.pop("$ts")

        deliveries = d.pop("deliveries")

        data = d.pop("data")

        delay_ms = d.pop("$delay_ms", UNSET)

        tag = d.pop("$tag", UNSET)

        node = d.pop("$node", UNSET)

        _meta = d.pop("meta", UNSET)
        meta: ClaimedJobMeta | Unset
        if isinstance(_meta, Unset):
            meta = UNSET
        else:
            meta = ClaimedJobMeta.from_dict(_meta)

        claimed_job = cls(
            seq=seq,
            lease_id=lease_id,
            deadline=deadline,
            ts=ts,
            deliveries=deliveries,
            data=data,
            delay_ms=delay_ms,
            tag=tag,
            node=node,
            meta=meta,
        )

        claimed_job.additional_properties = d
        return claimed_job

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
