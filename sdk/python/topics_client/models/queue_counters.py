from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="QueueCounters")


@_attrs_define
class QueueCounters:
    """Queue observability counters (§10.7); the `queue` sub-object of a queue topic's state.

    Attributes:
        ready (int): Claimable jobs right now — in the jobs log, not acked, with no active lease (includes reclaimed
            seqs whose lease expired or whose nack delay elapsed).
        in_flight (int): Jobs with an active (un-expired) lease.
        dead_lettered (int): Cumulative jobs moved to the dead-letter topic over this topic instance's life (resets on
            delete + recreate).
    """

    ready: int
    in_flight: int
    dead_lettered: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        ready = self.ready

        in_flight = self.in_flight

        dead_lettered = self.dead_lettered

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "ready": ready,
                "in_flight": in_flight,
                "dead_lettered": dead_lettered,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        ready = d.pop("ready")

        in_flight = d.pop("in_flight")

        dead_lettered = d.pop("dead_lettered")

        queue_counters = cls(
            ready=ready,
            in_flight=in_flight,
            dead_lettered=dead_lettered,
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
