from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Performance")


@_attrs_define
class Performance:
    """Server-side timings and counters for this request. Best-effort and additive;
    clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
    `throttle_wait_ms` is time parked behind the elastic scheduler.

        Attributes:
            server_total_ms (float | Unset):
            wal_append_ms (float | Unset):
            fsync_ms (float | Unset):
            records_scanned (int | Unset):
            throttle_wait_ms (float | Unset):
    """

    server_total_ms: float | Unset = UNSET
    wal_append_ms: float | Unset = UNSET
    fsync_ms: float | Unset = UNSET
    records_scanned: int | Unset = UNSET
    throttle_wait_ms: float | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        server_total_ms = self.server_total_ms

        wal_append_ms = self.wal_append_ms

        fsync_ms = self.fsync_ms

        records_scanned = self.records_scanned

        throttle_wait_ms = self.throttle_wait_ms

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if server_total_ms is not UNSET:
            field_dict["server_total_ms"] = server_total_ms
        if wal_append_ms is not UNSET:
            field_dict["wal_append_ms"] = wal_append_ms
        if fsync_ms is not UNSET:
            field_dict["fsync_ms"] = fsync_ms
        if records_scanned is not UNSET:
            field_dict["records_scanned"] = records_scanned
        if throttle_wait_ms is not UNSET:
            field_dict["throttle_wait_ms"] = throttle_wait_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        server_total_ms = d.pop("server_total_ms", UNSET)

        wal_append_ms = d.pop("wal_append_ms", UNSET)

        fsync_ms = d.pop("fsync_ms", UNSET)

        records_scanned = d.pop("records_scanned", UNSET)

        throttle_wait_ms = d.pop("throttle_wait_ms", UNSET)

        performance = cls(
            server_total_ms=server_total_ms,
            wal_append_ms=wal_append_ms,
            fsync_ms=fsync_ms,
            records_scanned=records_scanned,
            throttle_wait_ms=throttle_wait_ms,
        )

        performance.additional_properties = d
        return performance

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
