"""Records: encoded once, at append, into their wire form — then only sliced.

A write's records become one :class:`RecordBatch` (``storage.formats``): each record's JSON
object ``{"$seq":..,"$ts":..[,"$delay_ms":..][,"$node":..][,"$tag":..],"data":..[,"meta":..]}``
(key order as on the wire, absent keys omitted; ``$delay_ms`` only on a delayed queue job)
joined by ``,`` in one ``bytes`` blob, plus integer columns of offsets; the encoding loop is C
(``_codec.c``, built by the project's set-up). The same bytes go into the WAL frame, the
topic's record log, segments, and every response: a run of records is one slice of the blob;
a variant without ``$tag`` or ``meta`` is two or three slices of one record
(:func:`record_bytes`).

A record's ``size`` — behind ``bytes`` and ``cap_bytes`` — is its wire length plus one byte
of separator.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _codec
from .errors import InvalidRequest, RecordTooLarge, TopicsError
from .jsonvalues import to_int
from .storage.formats import RecordBatch

_KEY_LEN = 8  # each of ',"data":', ',"$tag":', ',"meta":'


@dataclass(slots=True)
class NewRecords:
    """A validated write, not yet numbered: each record's ``data`` JSON bytes and its optional
    tag, node and ``meta`` JSON bytes (a ``None`` list when no record of the write has one),
    and its ``delay_ms`` (``None`` when the write names none; checked and clamped by the engine
    before encoding, see :func:`clamp_delays`)."""

    datas: list[bytes]
    tags: list[str | None] | None = None
    nodes: list[str | None] | None = None
    metas: list[bytes | None] | None = None
    delays: list[Any] | None = None

    @property
    def count(self) -> int:
        return len(self.datas)

    @classmethod
    def from_objects(
        cls,
        records: list[Any],
        batch_node: str | None,
        absent: object,
        encode_meta: Callable[[Any], bytes],
        batch_delay: Any = None,
    ) -> NewRecords:
        """Columns from decoded record objects (attributes ``data``, ``tag``, ``node``,
        ``meta``, optionally ``delay_ms``; ``absent`` marks an unset field), split in C.
        ``data`` values must already be JSON bytes (e.g. ``msgspec.Raw``); ``meta`` objects are
        encoded by ``encode_meta``; a record without ``delay_ms`` gets ``batch_delay``."""
        return cls(*_codec.columns(records, batch_node, absent, encode_meta, batch_delay))


MAX_DELAY_MS = 86_400_000
"""A write's ``delay_ms`` (like a nack's) is clamped to ``[0, MAX_DELAY_MS]``: 24 hours."""


def clamp_delays(delays: list[Any]) -> list[int]:
    """A write's ``delay_ms`` column checked (integers, whatever the caller passed) and clamped
    to ``[0, MAX_DELAY_MS]``; raises :class:`InvalidRequest` naming the first bad one."""
    out = []
    for i, d in enumerate(delays):
        if type(d) is not int:
            d = to_int(d, f"records[{i}].delay_ms", low=0, high=MAX_DELAY_MS, clamp=True)
        out.append(0 if d < 0 else MAX_DELAY_MS if d > MAX_DELAY_MS else d)
    return out


RecordLimits = tuple[int, int, int, int]
"""``(max_record_bytes, max_meta_bytes, max_tag_bytes, max_node_bytes)``: data+meta and meta
in UTF-8 bytes, tag and node in characters (code points, as JSON Schema's ``maxLength`` counts)
per record of a write."""

NO_LIMITS: RecordLimits = (1 << 62, 1 << 62, 1 << 62, 1 << 62)


def encode(new: NewRecords, first_seq: int, ts: int, limits: RecordLimits = NO_LIMITS) -> RecordBatch:
    """Number ``new`` from ``first_seq`` with commit time ``ts`` and encode it once (in C:
    ``_codec.encode_records``). Raises :class:`RecordTooLarge` / :class:`InvalidRequest` — and
    encodes nothing — if a record exceeds ``limits`` or a ``delay_ms`` is not an integer (the
    delays are clamped, whoever built the columns: the engine has already, a schedule's check
    has not)."""
    delays = None if new.delays is None else clamp_delays(new.delays)
    out = _codec.encode_records(first_seq, ts, new.datas, new.tags, new.nodes, new.metas, limits, delays)
    if len(out) == 4:
        raise _over_limit(*out)
    blob, ends_raw, data_at_raw, tag_at_raw, meta_at_raw = out
    return RecordBatch(
        first_seq,
        blob,
        _column("I", ends_raw),
        _column("H", data_at_raw),
        [(0, ts)],
        _column("H", tag_at_raw) if tag_at_raw is not None else None,
        new.tags,
        new.nodes,
        _column("I", meta_at_raw) if meta_at_raw is not None else None,
    )


def _column(typecode: str, raw: bytes) -> array[int]:
    column = array(typecode)
    column.frombytes(raw)  # native order: the codec wrote native integers
    return column


def _over_limit(i: int, field: str, size: int, limit: int) -> TopicsError:
    where = f"records[{i}]"
    if field == "record":
        return RecordTooLarge(
            f"{where} data+meta is {size} bytes; the limit is {limit} — split the payload or raise "
            "TOPICS_MAX_RECORD_BYTES",
            {"index": i, "bytes": size, "max_bytes": limit},
        )
    if field == "meta":
        return RecordTooLarge(
            f"{where}.meta is {size} bytes; the limit is {limit}",
            {"index": i, "field": "meta", "bytes": size, "max_bytes": limit},
        )
    return InvalidRequest(
        f"{where}.{field} is {size} characters long; at most {limit} are allowed",
        {"field": f"{where}.{field}", "max_length": limit},
    )


_DELAY_KEY = b',"$delay_ms":'


def write_delays(batch: RecordBatch, skip: int = 0) -> list[tuple[int, int]]:
    """``(seq, due_ms)`` of the delayed jobs among records ``skip..`` of ``batch``: those whose
    stored bytes carry ``"$delay_ms"`` (due at ``$ts + $delay_ms``). Read from the bytes, so the
    live path and WAL replay agree. The key can only be a record's own: it is looked for in the
    record's head (before ``"data"``), where a string value cannot hold an unescaped quote; a
    batch whose blob does not hold it at all costs one substring search."""
    blob = batch.blob
    if _DELAY_KEY not in blob:
        return []
    out = []
    first, data_at, skip_len = batch.first_seq, batch.data_at, len(_DELAY_KEY)
    for i in range(skip, batch.count):
        start = batch.start(i)
        at = blob.find(_DELAY_KEY, start, start + data_at[i])
        if at >= 0:
            at += skip_len
            end = blob.index(b",", at)  # "$node", "$tag" or "data" follows
            out.append((first + i, batch.ts_of(i) + int(blob[at:end])))
    return out


def record_bytes(
    batch: RecordBatch, i: int, include_tags: bool, include_meta: bool, include_data: bool = True
) -> bytes:
    """Record ``i`` of ``batch`` as a reader asked for it: without ``$tag`` / ``meta`` /
    ``data`` when not included (slices of the stored bytes, never a re-encode)."""
    start, end = batch.start(i), batch.ends[i]
    blob = batch.blob
    tag_at = batch.tag_at[i] if batch.tag_at is not None else 0
    meta_at = batch.meta_at[i] if batch.meta_at is not None else 0
    data_at = batch.data_at[i]
    cut_tag = tag_at and not include_tags
    cut_meta = meta_at and not include_meta
    if not (cut_tag or cut_meta or not include_data):
        return blob[start:end]
    parts = [blob[start : start + (tag_at if cut_tag else data_at)]]  # head, with or without $tag
    if include_data:
        parts.append(blob[start + data_at : start + (meta_at or end - start - 1)])
    if meta_at and not cut_meta:
        parts.append(blob[start + meta_at : end - 1])
    parts.append(b"}")
    return b"".join(parts)


class Record:
    """One stored record, materialized on demand from its batch (queues, dead-lettering)."""

    __slots__ = ("seq", "ts", "node", "tag", "wire", "_data_at", "_meta_at")

    def __init__(self, batch: RecordBatch, i: int) -> None:
        start, end = batch.start(i), batch.ends[i]
        self.seq = batch.first_seq + i
        self.ts = batch.ts_of(i)
        self.node = batch.nodes[i] if batch.nodes is not None else None
        self.tag = batch.tags[i] if batch.tags is not None else None
        self.wire = batch.blob[start:end]
        """The full wire object (``$tag`` and ``meta`` included)."""
        self._data_at = batch.data_at[i]
        self._meta_at = batch.meta_at[i] if batch.meta_at is not None else 0

    @property
    def data_json(self) -> bytes:
        end = self._meta_at or len(self.wire) - 1
        return self.wire[self._data_at + _KEY_LEN : end]

    @property
    def meta_json(self) -> bytes | None:
        if not self._meta_at:
            return None
        return self.wire[self._meta_at + _KEY_LEN : -1]

    @property
    def size(self) -> int:
        return len(self.wire) + 1
