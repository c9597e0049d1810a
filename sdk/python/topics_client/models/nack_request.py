from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="NackRequest")


@_attrs_define
class NackRequest:
    """Release jobs leased to `node` for immediate or delayed reclaim.

    Attributes:
        node (str): Must be the current lease holder (else that seq is skipped). At most `TOPICS_MAX_NODE_BYTES`
            (default 128) characters.
        seqs (list[int]): Job seqs to release. More than 1000 (`TOPICS_MAX_CLAIM`) is `400 batch_too_large`.
        delay_ms (int | Unset): Keep the job invisible this long before it is claimable again (backoff). 0 = claimable
            now. Default 0. Clamped by the server to [0, 86400000].
        lease_ids (list[str] | Unset): Optional per-seq lease fence, one per `seqs` entry — same semantics as on ack.
    """

    node: str
    seqs: list[int]
    delay_ms: int | Unset = UNSET
    lease_ids: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        node = self.node

        seqs = self.seqs

        delay_ms = self.delay_ms

        lease_ids: list[str] | Unset = UNSET
        if not isinstance(self.lease_ids, Unset):
            lease_ids = self.lease_ids

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "node": node,
                "seqs": seqs,
            }
        )
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms
        if lease_ids is not UNSET:
            field_dict["lease_ids"] = lease_ids

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        node = d.pop("node")

        seqs = cast(list[int], d.pop("seqs"))

        delay_ms = d.pop("delay_ms", UNSET)

        lease_ids = cast(list[str], d.pop("lease_ids", UNSET))

        nack_request = cls(
            node=node,
            seqs=seqs,
            delay_ms=delay_ms,
            lease_ids=lease_ids,
        )

        return nack_request
