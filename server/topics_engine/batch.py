"""Validation of an append batch against the §2 limits, producing :class:`NewRecords`.

Everything that can reject a batch is checked here, before any topic state changes, so a write
commits whole or not at all. Each record's ``data`` and ``meta`` are serialized exactly once.
"""

from __future__ import annotations

from typing import Any

from .errors import BatchTooLarge, InvalidRequest, RecordTooLarge
from .jsonvalues import dumps
from .limits import Limits
from .records import NewRecords

_RECORD_FIELDS = frozenset(("data", "tag", "node", "meta"))


def _text_error(field: str, value: Any, max_bytes: int) -> InvalidRequest:
    if not isinstance(value, str):
        return InvalidRequest(f"{field} must be a string", {"field": field})
    return InvalidRequest(
        f"{field} is longer than {max_bytes} bytes", {"field": field, "max_bytes": max_bytes}
    )


def _text_ok(value: Any, max_bytes: int) -> bool:
    """A string of at most ``max_bytes`` UTF-8 bytes (encodes only when it could be too long)."""
    return type(value) is str and (len(value) * 4 <= max_bytes or len(value.encode()) <= max_bytes)


def _check_text(value: Any, field: str, max_bytes: int) -> str | None:
    if value is not None and not _text_ok(value, max_bytes):
        raise _text_error(field, value, max_bytes)
    text: str | None = value
    return text


def _invalid_record(i: int, raw: Any, limits: Limits) -> InvalidRequest:
    """Explain why ``raw`` failed the fast checks in :func:`_prepare_one` (error path only)."""
    where = f"records[{i}]"
    if not isinstance(raw, dict):
        return InvalidRequest(f"{where} must be an object with a data field", {"field": where})
    unknown = sorted(set(raw) - _RECORD_FIELDS)
    if unknown:
        field = f"{where}.{unknown[0]}"
        return InvalidRequest(f"{field} is not a record field (use data, tag, node, meta)", {"field": field})
    if "data" not in raw:
        return InvalidRequest(f"{where}.data is required (it may be null)", {"field": f"{where}.data"})
    for name, max_bytes in (("tag", limits.max_tag_bytes), ("node", limits.max_node_bytes)):
        value = raw.get(name)
        if value is not None and not _text_ok(value, max_bytes):
            return _text_error(f"{where}.{name}", value, max_bytes)
    meta = raw.get("meta")
    if not isinstance(meta, dict):
        return InvalidRequest(f"{where}.meta must be an object", {"field": f"{where}.meta"})
    return InvalidRequest(
        f"{where}.meta has {len(meta)} keys; at most {limits.max_meta_keys} are allowed",
        {"field": f"{where}.meta", "max_keys": limits.max_meta_keys},
    )


def _prepare_one(i: int, raw: Any, limits: Limits) -> tuple[bytes, str | None, str | None, bytes | None]:
    """Validate one record and encode its payload; the common case takes no error branches.
    Returns ``(data_json, tag, node, meta_json)``."""
    if type(raw) is not dict or not raw.keys() <= _RECORD_FIELDS or "data" not in raw:
        raise _invalid_record(i, raw, limits)
    tag = raw.get("tag")
    node = raw.get("node")
    meta = raw.get("meta")
    if (tag is not None and not _text_ok(tag, limits.max_tag_bytes)) or (
        node is not None and not _text_ok(node, limits.max_node_bytes)
    ):
        raise _invalid_record(i, raw, limits)
    meta_json = None
    if meta is not None:
        if type(meta) is not dict or len(meta) > limits.max_meta_keys:
            raise _invalid_record(i, raw, limits)
        meta_json = dumps(meta)
        if len(meta_json) > limits.max_meta_bytes:
            raise RecordTooLarge(
                f"records[{i}].meta is {len(meta_json)} bytes; the limit is {limits.max_meta_bytes}",
                {"index": i, "field": "meta", "bytes": len(meta_json), "max_bytes": limits.max_meta_bytes},
            )
    data_json = dumps(raw["data"])
    payload = len(data_json) + (len(meta_json) if meta_json is not None else 0)
    if payload > limits.max_record_bytes:
        raise RecordTooLarge(
            f"records[{i}] data+meta is {payload} bytes; the limit is "
            f"{limits.max_record_bytes} — split the payload or raise TOPICS_MAX_RECORD_BYTES",
            {"index": i, "bytes": payload, "max_bytes": limits.max_record_bytes},
        )
    return data_json, tag, node, meta_json


def prepare_batch(records: Any, batch_node: Any, limits: Limits) -> NewRecords:
    if not isinstance(records, list) or not records:
        raise InvalidRequest("records must be a non-empty array", {"field": "records"})
    if len(records) > limits.max_batch_records:
        raise BatchTooLarge(
            f"{len(records)} records in one write; the limit is {limits.max_batch_records} — split the batch",
            {"records": len(records), "max_records": limits.max_batch_records},
        )
    default_node = _check_text(batch_node, "node", limits.max_node_bytes)
    prepared = [_prepare_one(i, raw, limits) for i, raw in enumerate(records)]
    datas = [p[0] for p in prepared]
    tags = [p[1] for p in prepared]
    nodes = [default_node if p[2] is None else p[2] for p in prepared]
    metas = [p[3] for p in prepared]
    return NewRecords(
        datas,
        tags if any(t is not None for t in tags) else None,
        nodes if any(n is not None for n in nodes) else None,
        metas if any(m is not None for m in metas) else None,
    )
