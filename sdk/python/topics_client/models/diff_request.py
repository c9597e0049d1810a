from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="DiffRequest")


@_attrs_define
class DiffRequest:
    """A read from a seq cursor, or from a time (`from_ts`). `{}` reads from the earliest retained record.

    Attributes:
        from_seq (int | Unset): Exclusive lower bound (records with `$seq > from_seq`). 0 = from earliest retained. To
            tail, pass the current `head_seq`. Default 0.
        from_ts (int | Unset): Seek by time (ms since epoch), instead of `from_seq` (both → `400 invalid_request`):
            read from the first live record with `$ts >= from_ts`, found from the per-chunk
            `$ts` index without reading records (cold segments included). At or below the
            earliest retained record's `$ts` it reads from the earliest — with the tombstone
            `from_seq: 0` gets if records were lost to cap/TTL; above the newest record it
            starts at the head (with `wait_ms`, it waits like a tail). The response's
            `from_seq` says where the read started, to continue by seq. Kafka's
            `offsetsForTimes`.
        limit (int | Unset): Max records this call. Default 256; 0 means the default. Clamped to `TOPICS_MAX_LIMIT`
            (1000), not rejected.
        max_batch_bytes (int | Unset): Byte budget for this response's records (the sum of their encoded sizes). Default
            1048576 (1 MiB); 0 means the default; clamped by the server to 8388608 (8 MiB). A response always holds at least
            one record when one is available.
        node (list[str] | str | Unset): Node loop-prevention filter; records whose `$node` is in this set are omitted
            (but still advance the cursor).
        include_tags (bool | Unset): Include `$tag` on each record. Default false.
        include_meta (bool | Unset): Include each record's `meta`. Default true.
        wait_ms (int | Unset): Long-poll; if nothing is available, block up to this many ms for new records. Default 0
            (no wait). Clamped to 30000.
        consumer (str | Unset): Read after this named consumer's committed cursor (`PUT
            /v0/topics/{topic}/consumers/{consumer}`) instead of `from_seq` (it excludes `from_seq` and `from_ts`). The read
            commits nothing — commit how far the reader got with `POST /v0/topics/{topic}/consumers/{consumer}/commit`. `409
            no_such_consumer` if the topic has no consumer of that name.
    """

    from_seq: int | Unset = UNSET
    from_ts: int | Unset = UNSET
    limit: int | Unset = UNSET
    max_batch_bytes: int | Unset = UNSET
    node: list[str] | str | Unset = UNSET
    include_tags: bool | Unset = UNSET
    include_meta: bool | Unset = UNSET
    wait_ms: int | Unset = UNSET
    consumer: str | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from_seq = self.from_seq

        from_ts = self.from_ts

        limit = self.limit

        max_batch_bytes = self.max_batch_bytes

        node: list[str] | str | Unset
        if isinstance(self.node, Unset):
            node = UNSET
        elif isinstance(self.node, list):
            node = self.node

        else:
            node = self.node

        include_tags = self.include_tags

        include_meta = self.include_meta

        wait_ms = self.wait_ms

        consumer = self.consumer

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if from_seq is not UNSET:
            field_dict["from_seq"] = from_seq
        if from_ts is not UNSET:
            field_dict["from_ts"] = from_ts
        if limit is not UNSET:
            field_dict["limit"] = limit
        if max_batch_bytes is not UNSET:
            field_dict["max_batch_bytes"] = max_batch_bytes
        if node is not UNSET:
            field_dict["node"] = node
        if include_tags is not UNSET:
            field_dict["include_tags"] = include_tags
        if include_meta is not UNSET:
            field_dict["include_meta"] = include_meta
        if wait_ms is not UNSET:
            field_dict["wait_ms"] = wait_ms
        if consumer is not UNSET:
            field_dict["consumer"] = consumer

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        from_seq = d.pop("from_seq", UNSET)

        from_ts = d.pop("from_ts", UNSET)

        limit = d.pop("limit", UNSET)

        max_batch_bytes = d.pop("max_batch_bytes", UNSET)

        def _parse_node(data: object) -> list[str] | str | Unset:
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                node_type_1 = cast(list[str], data)

                return node_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | str | Unset, data)

        node = _parse_node(d.pop("node", UNSET))

        include_tags = d.pop("include_tags", UNSET)

        include_meta = d.pop("include_meta", UNSET)

        wait_ms = d.pop("wait_ms", UNSET)

        consumer = d.pop("consumer", UNSET)

        diff_request = cls(
            from_seq=from_seq,
            from_ts=from_ts,
            limit=limit,
            max_batch_bytes=max_batch_bytes,
            node=node,
            include_tags=include_tags,
            include_meta=include_meta,
            wait_ms=wait_ms,
            consumer=consumer,
        )

        return diff_request
