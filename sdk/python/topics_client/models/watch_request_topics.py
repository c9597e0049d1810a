from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.watch_topic_options import WatchTopicOptions


T = TypeVar("T", bound="WatchRequestTopics")


@_attrs_define
class WatchRequestTopics:
    """Map of topic name → per-topic options. The key is the topic (it keeps
    cursors unambiguous and doubles as the resume map). At least one entry,
    at most `TOPICS_MAX_WATCH_TOPICS` (default 256; the served document
    states the configured value) — more is `400 invalid_request`. Every
    topic must exist (`404 topic_not_found`, unless `?lenient=true`) and be
    within the key's prefix allowlist (`403 forbidden`).

    """

    additional_properties: dict[str, WatchTopicOptions] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            field_dict[prop_name] = prop.to_dict()

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.watch_topic_options import WatchTopicOptions  # noqa: PLC0415

        d = dict(src_dict)
        watch_request_topics = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():
            additional_property = WatchTopicOptions.from_dict(prop_dict)

            additional_properties[prop_name] = additional_property

        watch_request_topics.additional_properties = additional_properties
        return watch_request_topics

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> WatchTopicOptions:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: WatchTopicOptions) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
