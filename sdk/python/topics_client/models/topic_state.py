from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.topic_type import TopicType
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.performance import Performance
    from ..models.queue_counters import QueueCounters
    from ..models.resolved_topic_config import ResolvedTopicConfig


T = TypeVar("T", bound="TopicState")


@_attrs_define
class TopicState:
    """Current state of one topic.

    Attributes:
        topic (str):
        type_ (str | TopicType): A `TopicType`, or a kind added later (open).
        head_seq (int): Highest assigned seq (log end). 0 for a fresh empty topic.
        earliest_seq (int): Seq of the first currently-live record (not evicted, TTL-expired or deleted); `head_seq + 1`
            when the topic is empty.
        next_seq (int): Seq the next append will receive (`head_seq + 1`).
        count (int): Currently retained records (approximate under lazy eviction).
        bytes_ (int): Currently retained payload bytes (approximate under lazy eviction).
        config (ResolvedTopicConfig): The full resolved topic config as echoed in responses: every field present,
            including the queue fields (inert on a log). `durability` is always the
            resolved class and `durable == (durability == "fsync")`.
        effective_priority (int): The priority the scheduler is using right now (manual, or auto-derived).
        last_write_ts (int | None): Last write time (ms); null if never.
        last_read_ts (int | None): Last read time (ms); null if never.
        performance (Performance): Server-side timings and counters for this request. Best-effort and additive;
            clients must tolerate any subset. `fsync_ms` is 0.0 for non-fsync topics;
            `throttle_wait_ms` is time parked behind the elastic scheduler.
        queue (QueueCounters | Unset): Queue observability counters; the `queue` sub-object of a queue topic's state.
            The health fields (`delayed`, `oldest_ready_age_ms`, `holders`, `holders_truncated`) are an extension this
            server always sends; they are optional in the schema so a client also reads a server without them.
    """

    topic: str
    type_: str | TopicType
    head_seq: int
    earliest_seq: int
    next_seq: int
    count: int
    bytes_: int
    config: ResolvedTopicConfig
    effective_priority: int
    last_write_ts: int | None
    last_read_ts: int | None
    performance: Performance
    queue: QueueCounters | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        topic = self.topic

        type_: str
        if isinstance(self.type_, TopicType):
            type_ = self.type_.value
        else:
            type_ = self.type_

        head_seq = self.head_seq

        earliest_seq = self.earliest_seq

        next_seq = self.next_seq

        count = self.count

        bytes_ = self.bytes_

        config = self.config.to_dict()

        effective_priority = self.effective_priority

        last_write_ts: int | None
        last_write_ts = self.last_write_ts

        last_read_ts: int | None
        last_read_ts = self.last_read_ts

        performance = self.performance.to_dict()

        queue: dict[str, Any] | Unset = UNSET
        if not isinstance(self.queue, Unset):
            queue = self.queue.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "topic": topic,
                "type": type_,
                "head_seq": head_seq,
                "earliest_seq": earliest_seq,
                "next_seq": next_seq,
                "count": count,
                "bytes": bytes_,
                "config": config,
                "effective_priority": effective_priority,
                "last_write_ts": last_write_ts,
                "last_read_ts": last_read_ts,
                "performance": performance,
            }
        )
        if queue is not UNSET:
            field_dict["queue"] = queue

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.performance import Performance  # noqa: PLC0415
        from ..models.queue_counters import QueueCounters  # noqa: PLC0415
        from ..models.resolved_topic_config import ResolvedTopicConfig  # noqa: PLC0415

        d = dict(src_dict)
        topic = d.pop("topic")

        def _parse_type_(data: object) -> str | TopicType:
            try:
                if not isinstance(data, str):
                    raise TypeError()
                type_type_0 = TopicType(data)

                return type_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(str | TopicType, data)

        type_ = _parse_type_(d.pop("type"))

        head_seq = d.pop("head_seq")

        earliest_seq = d.pop("earliest_seq")

        next_seq = d.pop("next_seq")

        count = d.pop("count")

        bytes_ = d.pop("bytes")

        config = ResolvedTopicConfig.from_dict(d.pop("config"))

        effective_priority = d.pop("effective_priority")

        def _parse_last_write_ts(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        last_write_ts = _parse_last_write_ts(d.pop("last_write_ts"))

        def _parse_last_read_ts(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        last_read_ts = _parse_last_read_ts(d.pop("last_read_ts"))

        performance = Performance.from_dict(d.pop("performance"))

        _queue = d.pop("queue", UNSET)
        queue: QueueCounters | Unset
        if isinstance(_queue, Unset):
            queue = UNSET
        else:
            queue = QueueCounters.from_dict(_queue)

        topic_state = cls(
            topic=topic,
            type_=type_,
            head_seq=head_seq,
            earliest_seq=earliest_seq,
            next_seq=next_seq,
            count=count,
            bytes_=bytes_,
            config=config,
            effective_priority=effective_priority,
            last_write_ts=last_write_ts,
            last_read_ts=last_read_ts,
            performance=performance,
            queue=queue,
        )

        topic_state.additional_properties = d
        return topic_state

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
