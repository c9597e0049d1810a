from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="WatchTopicOptions")


@_attrs_define
class WatchTopicOptions:
    """Where a watch starts on one topic. `{}` starts from the earliest retained record.

    Attributes:
        from_seq (int | Unset): Deliver records with `$seq > from_seq`. 0 = from earliest. Default 0.
        tail (bool | Unset): If true, ignore `from_seq` and start at the topic's current head — only records appended
            after the subscribe (the SSE analog of Redis `XREAD $`). Default false.
        from_ts (int | Unset): Start at the first live record with `$ts >= from_ts` (ms since epoch), as a diff's
            `from_ts`, resolved when the session is created; with `from_seq` or `tail` → `400 invalid_request`. At or below
            the earliest retained record it starts from the earliest (a `from_seq_too_old` tombstone first if records were
            lost to cap/TTL); above the newest record it starts at the head.
        consumer (str | Unset): Start after this named consumer's committed cursor as it is when the session is created
            (`PUT /v0/topics/{topic}/consumers/{consumer}`); excludes `from_seq`, `tail` and `from_ts`. A resume `cursor`
            still overrides it. The watch commits nothing — commit with `POST
            /v0/topics/{topic}/consumers/{consumer}/commit`. `409 no_such_consumer` if the topic has no consumer of that
            name.
    """

    from_seq: int | Unset = UNSET
    tail: bool | Unset = UNSET
    from_ts: int | Unset = UNSET
    consumer: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from_seq = self.from_seq

        tail = self.tail

        from_ts = self.from_ts

        consumer = self.consumer

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if from_seq is not UNSET:
            field_dict["from_seq"] = from_seq
        if tail is not UNSET:
            field_dict["tail"] = tail
        if from_ts is not UNSET:
            field_dict["from_ts"] = from_ts
        if consumer is not UNSET:
            field_dict["consumer"] = consumer

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        from_seq = d.pop("from_seq", UNSET)

        tail = d.pop("tail", UNSET)

        from_ts = d.pop("from_ts", UNSET)

        consumer = d.pop("consumer", UNSET)

        watch_topic_options = cls(
            from_seq=from_seq,
            tail=tail,
            from_ts=from_ts,
            consumer=consumer,
        )

        return watch_topic_options
