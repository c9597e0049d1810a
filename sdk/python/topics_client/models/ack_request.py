from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="AckRequest")


@_attrs_define
class AckRequest:
    """Complete jobs leased to `node`.

    Attributes:
        node (str): The worker acking; must be the current lease holder of a seq for it to count. At most
            `TOPICS_MAX_NODE_BYTES` (default 128) characters.
        seqs (list[int]): Job seqs to complete. More than 1000 (`TOPICS_MAX_CLAIM`) is `400 batch_too_large`.
        lease_ids (list[str] | Unset): Optional per-seq lease fence (validate-when-supplied) — the `claimed[].lease_id`
            tokens, one per `seqs` entry in the same order. A seq whose token no longer matches its current lease is
            skipped, and so is a seq past the end of `lease_ids` (it has no token — a fenced call never settles a seq
            unfenced); tokens past the end of `seqs` fence nothing. Omit to match by `node` + `seqs`.
    """

    node: str
    seqs: list[int]
    lease_ids: list[str] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        node = self.node

        seqs = self.seqs

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
        if lease_ids is not UNSET:
            field_dict["lease_ids"] = lease_ids

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        node = d.pop("node")

        seqs = cast(list[int], d.pop("seqs"))

        lease_ids = cast(list[str], d.pop("lease_ids", UNSET))

        ack_request = cls(
            node=node,
            seqs=seqs,
            lease_ids=lease_ids,
        )

        return ack_request
