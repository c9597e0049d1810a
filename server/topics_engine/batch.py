"""Validation of an append batch against the §2 limits, producing encoded records.

Everything that can reject a batch is checked here, before any topic state changes, so a write
commits whole or not at all. Each record's ``data`` and ``meta`` are serialized exactly once.
"""

from __future__ import annotations

from typing import Any

from .errors import BatchTooLarge, InvalidRequest, RecordTooLarge
from .jsonvalues import dumps
from .limits import Limits
from .records import PreparedRecord

_RECORD_FIELDS = frozenset(("data", "tag", "node", "meta"))


def _check_text(value: Any, field: str, max_bytes: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"{field} must be a string", {"field": field})
    if len(value.encode()) > max_bytes:
        raise InvalidRequest(
            f"{field} is longer than {max_bytes} bytes", {"field": field, "max_bytes": max_bytes}
        )
    return value


def _prepare_one(i: int, raw: Any, batch_node: str | None, limits: Limits) -> PreparedRecord:
    where = f"records[{i}]"
    if not isinstance(raw, dict):
        raise InvalidRequest(f"{where} must be an object with a data field", {"field": where})
    unknown = set(raw) - _RECORD_FIELDS
    if unknown:
        field = sorted(unknown)[0]
        raise InvalidRequest(
            f"{where}.{field} is not a record field (use data, tag, node, meta)",
            {"field": f"{where}.{field}"},
        )
    if "data" not in raw:
        raise InvalidRequest(f"{where}.data is required (it may be null)", {"field": f"{where}.data"})
    tag = _check_text(raw.get("tag"), f"{where}.tag", limits.max_tag_bytes)
    node = _check_text(raw.get("node"), f"{where}.node", limits.max_node_bytes)
    meta = raw.get("meta")
    meta_json = None
    if meta is not None:
        if not isinstance(meta, dict):
            raise InvalidRequest(f"{where}.meta must be an object", {"field": f"{where}.meta"})
        if len(meta) > limits.max_meta_keys:
            raise InvalidRequest(
                f"{where}.meta has {len(meta)} keys; at most {limits.max_meta_keys} are allowed",
                {"field": f"{where}.meta", "max_keys": limits.max_meta_keys},
            )
        meta_json = dumps(meta)
        if len(meta_json) > limits.max_meta_bytes:
            raise RecordTooLarge(
                f"{where}.meta is {len(meta_json)} bytes; the limit is {limits.max_meta_bytes}",
                {"index": i, "field": "meta", "bytes": len(meta_json), "max_bytes": limits.max_meta_bytes},
            )
    prepared = PreparedRecord(node if node is not None else batch_node, tag, dumps(raw["data"]), meta_json)
    if prepared.payload_bytes > limits.max_record_bytes:
        raise RecordTooLarge(
            f"{where} data+meta is {prepared.payload_bytes} bytes; the limit is "
            f"{limits.max_record_bytes} — split the payload or raise TOPICS_MAX_RECORD_BYTES",
            {"index": i, "bytes": prepared.payload_bytes, "max_bytes": limits.max_record_bytes},
        )
    return prepared


def prepare_batch(records: Any, batch_node: Any, limits: Limits) -> list[PreparedRecord]:
    if not isinstance(records, list) or not records:
        raise InvalidRequest("records must be a non-empty array", {"field": "records"})
    if len(records) > limits.max_batch_records:
        raise BatchTooLarge(
            f"{len(records)} records in one write; the limit is {limits.max_batch_records} — split the batch",
            {"records": len(records), "max_records": limits.max_batch_records},
        )
    node = _check_text(batch_node, "node", limits.max_node_bytes)
    return [_prepare_one(i, raw, node, limits) for i, raw in enumerate(records)]
