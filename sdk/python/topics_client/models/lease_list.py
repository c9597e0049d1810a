from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.lease_info import LeaseInfo
    from ..models.performance import Performance


T = TypeVar("T", bound="LeaseList")


@_attrs_define
class LeaseList:
    """One page of a queue's active leases.

    Attributes:
        leases (list[LeaseInfo]):
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
        next_cursor (str | Unset): The `cursor` of the next page; omitted on the final page.
    """

    leases: list[LeaseInfo]
    performance: Performance
    next_cursor: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        leases = []
        for leases_item_data in self.leases:
            leases_item = leases_item_data.to_dict()
            leases.append(leases_item)

        performance = self.performance.to_dict()

        next_cursor = self.next_cursor

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "leases": leases,
                "performance": performance,
            }
        )
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.lease_info import LeaseInfo  # noqa: PLC0415
        from ..models.performance import Performance  # noqa: PLC0415

        d = dict(src_dict)
        leases = []
        _leases = d.pop("leases")
        for leases_item_data in _leases:
            leases_item = LeaseInfo.from_dict(leases_item_data)

            leases.append(leases_item)

        performance = Performance.from_dict(d.pop("performance"))

        next_cursor = d.pop("next_cursor", UNSET)

        lease_list = cls(
            leases=leases,
            performance=performance,
            next_cursor=next_cursor,
        )

        lease_list.additional_properties = d
        return lease_list

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
