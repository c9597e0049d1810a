from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="DeadLetterRequest")


@_attrs_define
class DeadLetterRequest:
    """Move jobs leased to `node` to the queue's dead-letter topic now.

    Attributes:
        node (str): The worker giving up; must be the current lease holder of a seq for it to move. At most
            `TOPICS_MAX_NODE_BYTES` (default 128) characters.
        seqs (list[int]): Job seqs to move. More than 1000 (`TOPICS_MAX_CLAIM`) is `400 batch_too_large`.
        lease_ids (list[str] | Unset): Optional per-seq lease fence, one per `seqs` entry — the same semantics as on
            ack.
        reason (str | Unset): Why the jobs failed for good; stored in each moved record's `meta` as
            `$dead_letter_reason`.
    """

    node: str
    seqs: list[int]
    lease_ids: list[str] | Unset = UNSET
    reason: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        node = self.node

        seqs = self.seqs

        lease_ids: list[str] | Unset = UNSET
        if not isinstance(self.lease_ids, Unset):
            lease_ids = self.lease_ids

        reason = self.reason

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "node": node,
                "seqs": seqs,
            }
        )
        if lease_ids is not UNSET:
            field_dict["lease_ids"] = lease_ids
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        node = d.pop("node")

        seqs = cast(list[int], d.pop("seqs"))

        lease_ids = cast(list[str], d.pop("lease_ids", UNSET))

        reason = d.pop("reason", UNSET)

        dead_letter_request = cls(
            node=node,
            seqs=seqs,
            lease_ids=lease_ids,
            reason=reason,
        )

        return dead_letter_request
