from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="ConsumerConfig")


@_attrs_define
class ConsumerConfig:
    """Where a named consumer's cursor starts (the optional body of
    `PUT /v0/topics/{topic}/consumers/{consumer}`): `from_seq`, `from_ts` or — with
    neither — nothing read yet. `from_seq` and `from_ts` exclude each other.

        Attributes:
            from_seq (int | Unset): The cursor — the last seq already read (a reader gets `$seq > from_seq`). At most the
                topic's `head_seq` (above it is `409 cursor_beyond_head`). Default — with no `from_ts` either — nothing read yet
                (`earliest_seq - 1`).
            from_ts (int | Unset): Start at the first live record stamped `$ts >= from_ts` (epoch ms); the cursor is the seq
                before it, or the topic's `head_seq` when no record is that recent.
            force (bool | Unset): Reposition an existing consumer as the body says. Default false — a PUT on an existing
                consumer leaves its cursor alone.
    """

    from_seq: int | Unset = UNSET
    from_ts: int | Unset = UNSET
    force: bool | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from_seq = self.from_seq

        from_ts = self.from_ts

        force = self.force

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if from_seq is not UNSET:
            field_dict["from_seq"] = from_seq
        if from_ts is not UNSET:
            field_dict["from_ts"] = from_ts
        if force is not UNSET:
            field_dict["force"] = force

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        from_seq = d.pop("from_seq", UNSET)

        from_ts = d.pop("from_ts", UNSET)

        force = d.pop("force", UNSET)

        consumer_config = cls(
            from_seq=from_seq,
            from_ts=from_ts,
            force=force,
        )

        return consumer_config
