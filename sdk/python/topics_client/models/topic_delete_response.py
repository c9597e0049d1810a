from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.performance import Performance


T = TypeVar("T", bound="TopicDeleteResponse")


@_attrs_define
class TopicDeleteResponse:
    """Result of a topic delete.

    Attributes:
        topic (str):
        deleted (bool): False when the topic was already absent.
        routers_removed (list[str]): Routers removed because they referenced this topic (empty if none).
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
        schedules_removed (list[str] | Unset): Schedules removed because they appended to this topic (empty if none).
    """

    topic: str
    deleted: bool
    routers_removed: list[str]
    performance: Performance
    schedules_removed: list[str] | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        deleted = self.deleted

        routers_removed = self.routers_removed

        performance = self.performance.to_dict()

        schedules_removed: list[str] | Unset = UNSET
        if not isinstance(self.schedules_removed, Unset):
            schedules_removed = self.schedules_removed

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "deleted": deleted,
                "routers_removed": routers_removed,
                "performance": performance,
            }
        )
        if schedules_removed is not UNSET:
            field_dict["schedules_removed"] = schedules_removed

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.performance import Performance  # noqa: PLC0415

        d = dict(src_dict)
        topic = d.pop("topic")

        deleted = d.pop("deleted")

        routers_removed = cast(list[str], d.pop("routers_removed"))

        performance = Performance.from_dict(d.pop("performance"))

        schedules_removed = cast(list[str], d.pop("schedules_removed", UNSET))

        topic_delete_response = cls(
            topic=topic,
            deleted=deleted,
            routers_removed=routers_removed,
            performance=performance,
            schedules_removed=schedules_removed,
        )

        topic_delete_response.additional_properties = d
        return topic_delete_response

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
