from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.record_in_meta import RecordInMeta


T = TypeVar("T", bound="RecordIn")


@_attrs_define
class RecordIn:
    """One record to append. `node`/`tag` are echoed on read as `$node`/`$tag`.

    Attributes:
        data (Any): Opaque payload, any JSON value (may be null). Stored and returned verbatim.
        tag (str | Unset): Match key for deletion (`POST /v0/topics/{topic}/delete`). At most `TOPICS_MAX_TAG_BYTES`
            (default 256) characters; the served document states the configured value.
        node (str | Unset): Per-record origin node; overrides the batch-level `node`. At most `TOPICS_MAX_NODE_BYTES`
            (default 128) characters.
        meta (RecordInMeta | Unset): Small headers, returned verbatim. At most 64 keys and `TOPICS_MAX_META_BYTES`
            (default 16 KiB).
        delay_ms (int | Unset): Queue topics only: the job is appended now (it has its seq and is readable) but not
            claimable before `$ts + delay_ms`; stored with the record as `$delay_ms`. Overrides the write's `delay_ms`.
            Clamped by the server to [0, 86400000]. On a log topic (or a write that would create one): `409 not_a_queue`,
            nothing written.
    """

    data: Any
    tag: str | Unset = UNSET
    node: str | Unset = UNSET
    meta: RecordInMeta | Unset = UNSET
    delay_ms: int | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        data = self.data

        tag = self.tag

        node = self.node

        meta: dict[str, Any] | Unset = UNSET
        if not isinstance(self.meta, Unset):
            meta = self.meta.to_dict()

        delay_ms = self.delay_ms

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "data": data,
            }
        )
        if tag is not UNSET:
            field_dict["tag"] = tag
        if node is not UNSET:
            field_dict["node"] = node
        if meta is not UNSET:
            field_dict["meta"] = meta
        if delay_ms is not UNSET:
            field_dict["delay_ms"] = delay_ms

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.record_in_meta import RecordInMeta  # noqa: PLC0415

        d = dict(src_dict)
        data = d.pop("data")

        tag = d.pop("tag", UNSET)

        node = d.pop("node", UNSET)

        _meta = d.pop("meta", UNSET)
        meta: RecordInMeta | Unset
        if isinstance(_meta, Unset):
            meta = UNSET
        else:
            meta = RecordInMeta.from_dict(_meta)

        delay_ms = d.pop("delay_ms", UNSET)

        record_in = cls(
            data=data,
            tag=tag,
            node=node,
            meta=meta,
            delay_ms=delay_ms,
        )

        return record_in
