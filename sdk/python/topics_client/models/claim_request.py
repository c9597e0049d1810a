from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ClaimRequest")


@_attrs_define
class ClaimRequest:
    """A claim of up to `max` jobs for one worker node.

    Attributes:
        node (str): The claiming worker's identity, recorded as the lease holder (ack/nack/extend ownership, release on
            `/work` disconnect). At most `TOPICS_MAX_NODE_BYTES` (default 128) characters.
        max_ (int | Unset): Max jobs to lease this call. Default 1; 0 means the default. Clamped by the server to 1000
            (`TOPICS_MAX_CLAIM`), not rejected.
        lease_ms (int | Unset): Lease duration for the jobs of this claim; overrides the topic's `lease_ms`. Default the
            topic's `lease_ms`. Clamped by the server to [100, 86400000].
    """

    node: str
    max_: int | Unset = UNSET
    lease_ms: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        node = self.node

        max_ = self.max_

        lease_ms = self.lease_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "node": node,
            }
        )
        if max_ is not UNSET:
            field_dict["max"] = max_
        if lease_ms is not UNSET:
            field_dict["lease_ms"] = lease_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        node = d.pop("node")

        max_ = d.pop("max", UNSET)

        lease_ms = d.pop("lease_ms", UNSET)

        claim_request = cls(
            node=node,
            max_=max_,
            lease_ms=lease_ms,
        )

        return claim_request
