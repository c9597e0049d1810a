from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.queue_holder import QueueHolder


T = TypeVar("T", bound="QueueCounters")


@_attrs_define
class QueueCounters:
    """Queue observability counters; the `queue` sub-object of a queue topic's state. The health fields (`delayed`,
    `oldest_ready_age_ms`, `holders`, `holders_truncated`) are an extension this server always sends; they are optional
    in the schema so a client also reads a server without them.

        Attributes:
            ready (int): Claimable jobs right now — in the jobs log, not acked, with no active lease (includes reclaimed
                seqs whose lease expired or whose nack delay elapsed).
            in_flight (int): Jobs with an active (un-expired) lease.
            dead_lettered (int): Cumulative jobs moved to the dead-letter topic over this topic instance's life (resets on
                delete + recreate).
            delayed (int | Unset): Jobs not claimable yet because they wait out a write's or a nack's `delay_ms` (counted in
                neither `ready` nor `in_flight`).
            oldest_ready_age_ms (int | Unset): How long the oldest claimable job has waited, in ms (now minus its `$ts`); 0
                when no job is claimable.
            holders (list[QueueHolder] | Unset): The nodes holding leases now, most `in_flight` first (ties by node), at
                most 100.
            holders_truncated (bool | Unset): True when more nodes hold leases than `holders` lists.
    """

    ready: int
    in_flight: int
    dead_lettered: int
    delayed: int | Unset = UNSET
    oldest_ready_age_ms: int | Unset = UNSET
    holders: list[QueueHolder] | Unset = UNSET
    holders_truncated: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ready = self.ready

        in_flight = self.in_flight

        dead_lettered = self.dead_lettered

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
                "ready": ready,
                "in_flight": in_flight,
                "dead_lettered": dead_lettered,
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
        from ..models.queue_holder import QueueHolder  # noqa: PLC0415

        d = dict(src_dict)
        ready = d.pop("ready")

        in_flight = d.pop("in_flight")

        dead_lettered = d.pop("dead_lettered")

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

        queue_counters = cls(
            ready=ready,
            in_flight=in_flight,
            dead_lettered=dead_lettered,
            delayed=delayed,
            oldest_ready_age_ms=oldest_ready_age_ms,
            holders=holders,
            holders_truncated=holders_truncated,
        )

        queue_counters.additional_properties = d
        return queue_counters

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
