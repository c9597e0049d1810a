"""Records: encoded once, at append, into their wire form — then only sliced.

A write's records become one :class:`RecordBatch` (``storage.formats``): each record's JSON
object ``{"$seq":..,"$ts":..[,"$node":..][,"$tag":..],"data":..[,"meta":..]}`` (key order as on
the wire, absent keys omitted) joined by ``,`` in one ``bytes`` blob, plus integer columns of
offsets. The same bytes go into the WAL frame, the topic's record log, segments, and every
response: a run of records is one slice of the blob; a variant without ``$tag`` or ``meta`` is
two or three slices of one record (:func:`record_bytes`).

A record's ``size`` — behind ``bytes`` and ``cap_bytes`` — is its wire length plus one byte
of separator.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import orjson

from .storage.formats import RecordBatch

DATA_KEY = b',"data":'
TAG_KEY = b',"$tag":'
META_KEY = b',"meta":'
_KEY_LEN = 8  # each of the three keys above


@dataclass(slots=True)
class NewRecords:
    """A validated write, not yet numbered: each record's ``data`` JSON bytes and its optional
    tag, node and ``meta`` JSON bytes (a ``None`` list when no record of the write has one)."""

    datas: list[bytes]
    tags: list[str | None] | None = None
    nodes: list[str | None] | None = None
    metas: list[bytes | None] | None = None

    @property
    def count(self) -> int:
        return len(self.datas)


def encode(new: NewRecords, first_seq: int, ts: int) -> RecordBatch:
    """Number ``new`` from ``first_seq`` with commit time ``ts`` and encode it once."""
    if new.tags is None and new.nodes is None and new.metas is None:
        return _encode_plain(new.datas, first_seq, ts)
    return _encode_general(new, first_seq, ts)


def _encode_plain(datas: list[bytes], first_seq: int, ts: int) -> RecordBatch:
    """The common case — records with data only — in one tight loop."""
    ends, data_at = array("I"), array("H")
    parts: list[bytes] = []
    append = parts.append
    pos, seq = 0, first_seq
    for data in datas:
        head = b'{"$seq":%d,"$ts":%d,"data":' % (seq, ts)
        append(head)
        append(data)
        append(b"},")
        pos += len(head) + len(data) + 1
        ends.append(pos)
        data_at.append(len(head) - _KEY_LEN)
        pos += 1
        seq += 1
    parts[-1] = b"}"
    return RecordBatch(first_seq, b"".join(parts), ends, data_at, [(0, ts)])


def _encode_general(new: NewRecords, first_seq: int, ts: int) -> RecordBatch:
    n = new.count
    tags = new.tags or [None] * n
    nodes = new.nodes or [None] * n
    metas = new.metas or [None] * n
    ends, data_at = array("I"), array("H")
    tag_at = array("H") if new.tags is not None else None
    meta_at = array("I") if new.metas is not None else None
    parts: list[bytes] = []
    pos = 0
    for i, data in enumerate(new.datas):
        head = b'{"$seq":%d,"$ts":%d' % (first_seq + i, ts)
        node, tag, meta = nodes[i], tags[i], metas[i]
        if node is not None:
            head += b',"$node":' + orjson.dumps(node)
        record = [head]
        at = len(head)
        if tag_at is not None:
            tag_at.append(at if tag is not None else 0)
        if tag is not None:
            tag_part = TAG_KEY + orjson.dumps(tag)
            record.append(tag_part)
            at += len(tag_part)
        data_at.append(at)
        record.append(DATA_KEY)
        record.append(data)
        at += _KEY_LEN + len(data)
        if meta_at is not None:
            meta_at.append(at if meta is not None else 0)
        if meta is not None:
            record.append(META_KEY)
            record.append(meta)
            at += _KEY_LEN + len(meta)
        record.append(b"},")
        parts.extend(record)
        pos += at + 1
        ends.append(pos)
        pos += 1
    parts[-1] = b"}"
    return RecordBatch(
        first_seq,
        b"".join(parts),
        ends,
        data_at,
        [(0, ts)],
        tag_at,
        new.tags if tag_at is not None else None,
        new.nodes,
        meta_at,
    )


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
