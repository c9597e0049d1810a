from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ExtendRequest")


@_attrs_define
class ExtendRequest:
    """Push out the deadlines of leases held by `node`.

    Attributes:
        node (str): Must be the current lease holder (else that seq is skipped). At most `TOPICS_MAX_NODE_BYTES`
            (default 128) characters.
        seqs (list[int]): Held job seqs to extend. More than 1000 (`TOPICS_MAX_CLAIM`) is `400 batch_too_large`.
        lease_ms (int): New lease duration from now (`deadline = now + lease_ms`; sets, does not add). Clamped by the
            server to [100, 86400000].
        lease_ids (list[str] | Unset): Optional per-seq lease fence, one per `seqs` entry — same semantics as on ack.
    """

    node: str
    seqs: list[int]
    lease_ms: int
    lease_ids: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        node = self.node

        seqs = self.seqs

        lease_ms = self.lease_ms

        lease_ids: list[str] | Unset = UNSET
        if not isinstance(self.lease_ids, Unset):
            lease_ids = self.lease_ids

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "node": node,
                "seqs": seqs,
                "lease_ms": lease_ms,
            }
        )
        if lease_ids is not UNSET:
            field_dict["lease_ids"] = lease_ids

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        node = d.pop("node")

        seqs = cast(list[int], d.pop("seqs"))

        lease_ms = d.pop("lease_ms")

        lease_ids = cast(list[str], d.pop("lease_ids", UNSET))

        extend_request = cls(
            node=node,
            seqs=seqs,
            lease_ms=lease_ms,
            lease_ids=lease_ids,
        )

        return extend_request
