from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="LeaseInfo")


@_attrs_define
class LeaseInfo:
    """An active lease on a job.

    Attributes:
        seq (int): The job's `$seq`.
        node (str): The worker node holding the lease.
        lease_id (str): The lease's fence token (as `claimed[].lease_id`).
        deadline (int): Epoch ms when the lease expires unless extended.
        deliveries (int): Times the job has been delivered, this lease included.
    """

    seq: int
    node: str
    lease_id: str
    deadline: int
    deliveries: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        seq = self.seq

        node = self.node

        lease_id = self.lease_id

        deadline = self.deadline

        deliveries = self.deliveries

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "seq": seq,
                "node": node,
                "lease_id": lease_id,
                "deadline": deadline,
                "deliveries": deliveries,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        seq = d.pop("seq")

        node = d.pop("node")

        lease_id = d.pop("lease_id")

        deadline = d.pop("deadline")

        deliveries = d.pop("deliveries")

        lease_info = cls(
            seq=seq,
            node=node,
            lease_id=lease_id,
            deadline=deadline,
            deliveries=deliveries,
        )

        lease_info.additional_properties = d
        return lease_info

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
