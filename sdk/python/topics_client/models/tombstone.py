from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.tombstone_reason import TombstoneReason

T = TypeVar("T", bound="Tombstone")


@_attrs_define
class Tombstone:
    """A gap marker: the cursor fell below the involuntary (cap/TTL) floor. An
    in-band 200 signal, never an error. The lost range `[gap_from, gap_to]` is
    inclusive and authoritative; `reason` is informational.

        Attributes:
            gap_from (int): First missing seq (stale `from_seq + 1`).
            gap_to (int): Last missing seq (`earliest_seq - 1`).
            reason (str | TombstoneReason): A `TombstoneReason`, or a reason added later (open).
            missed_estimate (int): Approximate count of dropped records (eviction is segment-granular).
            earliest_seq (int):
            head_seq (int):
    """

    gap_from: int
    gap_to: int
    reason: str | TombstoneReason
    missed_estimate: int
    earliest_seq: int
    head_seq: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        gap_from = self.gap_from

        gap_to = self.gap_to

        reason: str
        if isinstance(self.reason, TombstoneReason):
            reason = self.reason.value
        else:
            reason = self.reason

        missed_estimate = self.missed_estimate

        earliest_seq = self.earliest_seq

        head_seq = self.head_seq

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "gap_from": gap_from,
                "gap_to": gap_to,
                "reason": reason,
                "missed_estimate": missed_estimate,
                "earliest_seq": earliest_seq,
                "head_seq": head_seq,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        gap_from = d.pop("gap_from")

        gap_to = d.pop("gap_to")

        def _parse_reason(data: object) -> str | TombstoneReason:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                reason_type_0 = TombstoneReason(data)

                return reason_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(str | TombstoneReason, data)

        reason = _parse_reason(d.pop("reason"))

        missed_estimate = d.pop("missed_estimate")

        earliest_seq = d.pop("earliest_seq")

        head_seq = d.pop("head_seq")

        tombstone = cls(
            gap_from=gap_from,
            gap_to=gap_to,
            reason=reason,
            missed_estimate=missed_estimate,
            earliest_seq=earliest_seq,
            head_seq=head_seq,
        )

        tombstone.additional_properties = d
        return tombstone

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
