from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define

from ..models.watch_consistency import WatchConsistency
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.watch_request_topics import WatchRequestTopics


T = TypeVar("T", bound="WatchRequest")


@_attrs_define
class WatchRequest:
    """A watch subscription: the topics with their start positions, and the stream
    options (applied to every watched topic). All fields but `topics` are
    optional; an omitted option takes the default stated in its description.

        Attributes:
            topics (WatchRequestTopics): Map of topic name → per-topic options. The key is the topic (it keeps
                cursors unambiguous and doubles as the resume map). At least one entry,
                at most `TOPICS_MAX_WATCH_TOPICS` (default 256; the served document
                states the configured value) — more is `400 invalid_request`. Every
                topic must exist (`404 topic_not_found`, unless `?lenient=true`) and be
                within the key's prefix allowlist (`403 forbidden`).
            node (list[str] | str | Unset): Loop-prevention filter applied to every watched topic — this node (or these
                nodes) never receives its own records (they still advance the cursor). Default none.
            cursor (str | Unset): A stream `id:` from an earlier session of this watch (the base64url per-topic cursor map,
                or an opaque checkpoint token) — re-creates the session at that known position after its wid answered `404
                not_found`. The positions it names override those topics' `from_seq`/`tail`; the other topics start from their
                own options. Like a wid, a cursor is opaque to clients — one either names a position or not. A string of the
                stream-id alphabet that names none is `404 not_found`; one outside it is `400 invalid_request`.
            limit (int | Unset): Max records per `record` frame (per topic, per flush). Default 256; 0 means the default.
                Clamped to `TOPICS_MAX_LIMIT` (1000), not rejected.
            max_batch_bytes (int | Unset): Enforced soft byte budget of one `record` frame — the per-topic read stops once
                the batch reaches this many payload bytes (at least one record is always delivered), so a frame cannot balloon
                to `limit` × the record cap. Default 262144 (256 KiB); 0 means the server default 1048576 (1 MiB); clamped by
                the server to 8388608 (8 MiB).
            heartbeat_ms (int | Unset): Heartbeat interval — a `hb` comment frame is sent after this long without any frame.
                Default 15000. Clamped by the server to [1000, 60000].
            include_meta (bool | Unset): Include each record's `meta` in frames. Default true.
            include_tags (bool | Unset): Include `$tag` in frames. Default false.
            include_data (bool | Unset): If false, frames carry only the `$seq`/`$ts`/`$tag`/`$node` metadata of each
                record, not `data` (lightweight tailing). Default true.
            consistency (WatchConsistency | Unset): When a watch pushes a record. `eventual` pushes it as soon as it is in
                the WAL buffer; `strong` only once it is committed — on a `disk` topic, after the group commit that covers it
                has been fsynced (records of an `fsync` topic are visible only once fsynced anyway).
    """

    topics: WatchRequestTopics
    node: list[str] | str | Unset = UNSET
    cursor: str | Unset = UNSET
    limit: int | Unset = UNSET
    max_batch_bytes: int | Unset = UNSET
    heartbeat_ms: int | Unset = UNSET
    include_meta: bool | Unset = UNSET
    include_tags: bool | Unset = UNSET
    include_data: bool | Unset = UNSET
    consistency: WatchConsistency | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        topics = self.topics.to_dict()

        node: list[str] | str | Unset
        if isinstance(self.node, Unset):
            node = UNSET
        elif isinstance(self.node, list):
            node = self.node

        else:
            node = self.node

        cursor = self.cursor

        limit = self.limit

        max_batch_bytes = self.max_batch_bytes

        heartbeat_ms = self.heartbeat_ms

        include_meta = self.include_meta

        include_tags = self.include_tags

        include_data = self.include_data

        consistency: str | Unset = UNSET
        if not isinstance(self.consistency, Unset):
            consistency = self.consistency.value

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "topics": topics,
            }
        )
        if node is not UNSET:
            field_dict["node"] = node
        if cursor is not UNSET:
            field_dict["cursor"] = cursor
        if limit is not UNSET:
            field_dict["limit"] = limit
        if max_batch_bytes is not UNSET:
            field_dict["max_batch_bytes"] = max_batch_bytes
        if heartbeat_ms is not UNSET:
            field_dict["heartbeat_ms"] = heartbeat_ms
        if include_meta is not UNSET:
            field_dict["include_meta"] = include_meta
        if include_tags is not UNSET:
            field_dict["include_tags"] = include_tags
        if include_data is not UNSET:
            field_dict["include_data"] = include_data
        if consistency is not UNSET:
            field_dict["consistency"] = consistency

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.watch_request_topics import WatchRequestTopics  # noqa: PLC0415

        d = dict(src_dict)
        topics = WatchRequestTopics.from_dict(d.pop("topics"))

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

        cursor = d.pop("cursor", UNSET)

        limit = d.pop("limit", UNSET)

        max_batch_bytes = d.pop("max_batch_bytes", UNSET)

        heartbeat_ms = d.pop("heartbeat_ms", UNSET)

        include_meta = d.pop("include_meta", UNSET)

        include_tags = d.pop("include_tags", UNSET)

        include_data = d.pop("include_data", UNSET)

        _consistency = d.pop("consistency", UNSET)
        consistency: WatchConsistency | Unset
        if isinstance(_consistency, Unset):
            consistency = UNSET
        else:
            consistency = WatchConsistency(_consistency)

        watch_request = cls(
            topics=topics,
            node=node,
            cursor=cursor,
            limit=limit,
            max_batch_bytes=max_batch_bytes,
            heartbeat_ms=heartbeat_ms,
            include_meta=include_meta,
            include_tags=include_tags,
            include_data=include_data,
            consistency=consistency,
        )

        return watch_request
