from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.performance import Performance
    from ..models.resolved_topic_config import ResolvedTopicConfig


T = TypeVar("T", bound="TopicPutResponse")


@_attrs_define
class TopicPutResponse:
    """Result of a topic create/configure.

    Attributes:
        topic (str):
        created (bool): True only when this call brought the topic into existence.
        config (ResolvedTopicConfig): The full resolved topic config as echoed in responses: every field present,
            including the queue fields (inert on a log). `durability` is always the
            resolved class and `durable == (durability == "fsync")`.
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
    """

    topic: str
    created: bool
    config: ResolvedTopicConfig
    performance: Performance
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        created = self.created

        config = self.config.to_dict()

        performance = self.performance.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "created": created,
                "config": config,
                "performance": performance,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.performance import Performance  # noqa: PLC0415
        from ..models.resolved_topic_config import ResolvedTopicConfig  # noqa: PLC0415

        d = dict(src_dict)
        topic = d.pop("topic")

        created = d.pop("created")

        config = ResolvedTopicConfig.from_dict(d.pop("config"))

        performance = Performance.from_dict(d.pop("performance"))

        topic_put_response = cls(
            topic=topic,
            created=created,
            config=config,
            performance=performance,
        )

        topic_put_response.additional_properties = d
        return topic_put_response

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
