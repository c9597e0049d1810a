from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Ready")


@_attrs_define
class Ready:
    """Readiness (only when ready; otherwise `503`).

    Attributes:
        status (str): `ready` (open: a client accepts any other value as well).
        wal_replay_complete (bool):
        topics (int): Number of topics.
    """

    status: str
    wal_replay_complete: bool
    topics: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        status = self.status

        wal_replay_complete = self.wal_replay_complete

        topics = self.topics

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "status": status,
                "wal_replay_complete": wal_replay_complete,
                "topics": topics,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        status = d.pop("status")

        wal_replay_complete = d.pop("wal_replay_complete")

        topics = d.pop("topics")

        ready = cls(
            status=status,
            wal_replay_complete=wal_replay_complete,
            topics=topics,
        )

        ready.additional_properties = d
        return ready

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
