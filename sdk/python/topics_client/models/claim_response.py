from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.claimed_job import ClaimedJob
    from ..models.performance import Performance
    from ..models.queue_holder import QueueHolder


T = TypeVar("T", bound="ClaimResponse")


@_attrs_define
class ClaimResponse:
    """Result of a claim.

    Attributes:
        topic (str):
        claimed (list[ClaimedJob]): The leased jobs, ascending by `$seq`. May be empty.
        count (int): `claimed.length`. `count < max` is the "queue (near-)empty" signal.
        ready (int): Claimable jobs still waiting after this claim.
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
        delayed (int | Unset): Jobs not claimable yet because they wait out a write's or a nack's `delay_ms` (counted in
            neither `ready` nor `in_flight`).
        oldest_ready_age_ms (int | Unset): How long the oldest claimable job has waited, in ms (now minus its `$ts`); 0
            when no job is claimable.
        holders (list[QueueHolder] | Unset): The nodes holding leases now, most `in_flight` first (ties by node), at
            most 100.
        holders_truncated (bool | Unset): True when more nodes hold leases than `holders` lists.
    """

    topic: str
    claimed: list[ClaimedJob]
    count: int
    ready: int
    performance: Performance
    delayed: int | Unset = UNSET
    oldest_ready_age_ms: int | Unset = UNSET
    holders: list[QueueHolder] | Unset = UNSET
    holders_truncated: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        claimed = []
        for claimed_item_data in self.claimed:
            claimed_item = claimed_item_data.to_dict()
            claimed.append(claimed_item)

        count = self.count

        ready = self.ready

        performance = self.performance.to_dict()

        delayed = self.delayed

        oldest_ready_age_ms = self.oldest_ready_age_ms

        holders: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.holders, Unset):
            holders = []
            for holders_item_data in self.holders:
                holders_item = holders_item_data.to_dict()
                holders.append(holders_item)

        holders_truncated = self.holders_truncated

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "claimed": claimed,
                "count": count,
                "ready": ready,
                "performance": performance,
            }
        )
        if delayed is not UNSET:
            field_dict["delayed"] = delayed
        if oldest_ready_age_ms is not UNSET:
            field_dict["oldest_ready_age_ms"] = oldest_ready_age_ms
        if holders is not UNSET:
            field_dict["holders"] = holders
        if holders_truncated is not UNSET:
            field_dict["holders_truncated"] = holders_truncated

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.claimed_job import ClaimedJob  # noqa: PLC0415
        from ..models.performance import Performance  # noqa: PLC0415
        from ..models.queue_holder import QueueHolder  # noqa: PLC0415

        d = dict(src_dict)
        topic = d.pop("topic")

        claimed = []
        _claimed = d.pop("claimed")
        for claimed_item_data in _claimed:
            claimed_item = ClaimedJob.from_dict(claimed_item_data)

            claimed.append(claimed_item)

        count = d.pop("count")

        ready = d.pop("ready")

        performance = Performance.from_dict(d.pop("performance"))

        delayed = d.pop("delayed", UNSET)

        oldest_ready_age_ms = d.pop("oldest_ready_age_ms", UNSET)

        _holders = d.pop("holders", UNSET)
        holders: list[QueueHolder] | Unset = UNSET
        if _holders is not UNSET:
            holders = []
            for holders_item_data in _holders:
                holders_item = QueueHolder.from_dict(holders_item_data)

                holders.append(holders_item)

        holders_truncated = d.pop("holders_truncated", UNSET)

        claim_response = cls(
            topic=topic,
            claimed=claimed,
            count=count,
            ready=ready,
            performance=performance,
            delayed=delayed,
            oldest_ready_age_ms=oldest_ready_age_ms,
            holders=holders,
            holders_truncated=holders_truncated,
        )

        claim_response.additional_properties = d
        return claim_response

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
