"""Validation of an append batch given as JSON values, producing :class:`NewRecords`.

Everything about a record's shape is checked here (fields, types, the batch size, meta's key
count); its byte sizes are checked by the codec while it encodes (``records.encode``). Both
happen before any topic state changes, so a write commits whole or not at all. Each record's
``data`` and ``meta`` are serialized exactly once.
"""

from __future__ import annotations

from typing import Any, Required, TypedDict

from .errors import BatchTooLarge, InvalidRequest
from .jsonvalues import JsonValue, dumps
from .limits import Limits
from .records import NewRecords


class RecordInput(TypedDict, total=False):
    """One record of a write as JSON values: ``data`` is required (it may be null)."""

    data: Required[JsonValue]
    tag: str | None
    node: str | None
    """Who wrote it (loop prevention); overrides the batch's ``node``."""
    meta: dict[str, JsonValue] | None
    delay_ms: int | None
    """A queue job not claimable before ``$ts + delay_ms`` (clamped to 24 h); overrides the
    batch's ``delay_ms``. Refused on a log topic."""


_RECORD_FIELDS = frozenset(RecordInput.__annotations__)


def _invalid_record(i: int, raw: Any, limits: Limits) -> InvalidRequest:
    """Explain why ``raw`` failed the fast checks in :func:`_prepare_one` (error path only)."""
    where = f"records[{i}]"
    if not isinstance(raw, dict):
        return InvalidRequest(f"{where} must be an object with a data field", {"field": where})
    unknown = sorted(set(raw) - _RECORD_FIELDS)
    if unknown:
        field = f"{where}.{unknown[0]}"
        return InvalidRequest(
            f"{field} is not a record field (use data, tag, node, meta, delay_ms)", {"field": field}
        )
    if "data" not in raw:
        return InvalidRequest(f"{where}.data is required (it may be null)", {"field": f"{where}.data"})
    for name in ("tag", "node"):
        if raw.get(name) is not None and type(raw[name]) is not str:
            return InvalidRequest(f"{where}.{name} must be a string", {"field": f"{where}.{name}"})
    return too_many_meta_keys(i, raw.get("meta"), limits)


def too_many_meta_keys(i: int, meta: Any, limits: Limits) -> InvalidRequest:
    where = f"records[{i}].meta"
    if not isinstance(meta, dict):
        return InvalidRequest(f"{where} must be an object", {"field": where})
    return InvalidRequest(
        f"{where} has {len(meta)} keys; at most {limits.max_meta_keys} are allowed",
        {"field": where, "max_keys": limits.max_meta_keys},
    )


def _prepare_one(i: int, raw: Any, limits: Limits) -> tuple[bytes, str | None, str | None, bytes | None]:
    """Validate one record's shape and encode its payload; the common case takes no error
    branches. Returns ``(data_json, tag, node, meta_json)``."""
    if type(raw) is not dict or not raw.keys() <= _RECORD_FIELDS or "data" not in raw:
        raise _invalid_record(i, raw, limits)
    tag = raw.get("tag")
    node = raw.get("node")
    meta = raw.get("meta")
    if (tag is not None and type(tag) is not str) or (node is not None and type(node) is not str):
        raise _invalid_record(i, raw, limits)
    meta_json = None
    if meta is not None:
        if type(meta) is not dict or len(meta) > limits.max_meta_keys:
            raise _invalid_record(i, raw, limits)
        meta_json = dumps(meta)
    return dumps(raw["data"]), tag, node, meta_json


def check_batch_size(count: int, limits: Limits) -> None:
    if count > limits.max_batch_records:
        raise BatchTooLarge(
            f"{count} records in one write; the limit is {limits.max_batch_records} — split the batch",
            {"records": count, "max_records": limits.max_batch_records},
        )


def check_batch_node(node: str | None, limits: Limits) -> None:
    """A write's batch-level ``node``: a string of at most ``max_node_bytes`` characters,
    checked once even when every record names its own (the codec checks each record's
    effective node)."""
    if node is None:
        return
    if type(node) is not str:
        raise InvalidRequest("node must be a string", {"field": "node"})
    if len(node) > limits.max_node_bytes:
        raise InvalidRequest(
            f"node is {len(node)} characters long; at most {limits.max_node_bytes} are allowed",
            {"field": "node", "max_length": limits.max_node_bytes},
        )


def prepare_batch(
    records: list[RecordInput], batch_node: str | None, limits: Limits, batch_delay: int | None = None
) -> NewRecords:
    """JSON-value records (``{"data": ..., "tag": ...}`` dicts) -> validated columns. The types
    say what is valid; everything is still checked (the values may come from anywhere); a
    ``delay_ms`` is checked and clamped by the engine (``records.clamp_delays``)."""
    if not isinstance(records, list) or not records:
        raise InvalidRequest("records must be a non-empty array", {"field": "records"})
    check_batch_size(len(records), limits)
    check_batch_node(batch_node, limits)
    prepared = [_prepare_one(i, raw, limits) for i, raw in enumerate(records)]
    tags = [p[1] for p in prepared]
    nodes = [batch_node if p[2] is None else p[2] for p in prepared]
    metas = [p[3] for p in prepared]
    delays = [raw.get("delay_ms") for raw in records]
    any_delay = batch_delay is not None or any(d is not None for d in delays)
    return NewRecords(
        [p[0] for p in prepared],
        tags if any(t is not None for t in tags) else None,
        nodes if any(n is not None for n in nodes) else None,
        metas if any(m is not None for m in metas) else None,
        [(batch_delay or 0) if d is None else d for d in delays] if any_delay else None,
    )
