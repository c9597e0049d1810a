"""Every payload format of the data directory in one place: what is inside WAL frames, the
record batches shared by ``APPEND`` frames and segments, and the snapshot schema.

The frame envelope (length, CRC, type, LSN) is ``frames``; file layouts are ``wal``,
``segments`` and ``snapshot``. This module only turns plain values into bytes and back; it knows
nothing of topics' semantics. All integers are little-endian.

Payloads by frame type (``<`` struct formats; ``NONE16``/``NONE32`` mark an absent field):

- ``APPEND``: ``QQqI`` topic_id, first_seq, ts, count; ``H`` idempotency-key length + key; then
  the records as a columnar batch (below).
- ``DELETE``: ``QI`` topic_id, n; then n × ``QQ`` inclusive seq ranges actually deleted (the
  effect, not the request, so replay never depends on state).
- ``SEQ_RESERVE``: ``QQ`` topic_id, reserved head (seqs up to it may have been handed out, so
  recovery never reuses them).
- ``TOPIC_PUT``: JSON ``{ts, id, name, config, created_ms, previous_head}``.
- ``TOPIC_DELETE``: JSON ``{id, name, head}``.
- ``LEASE``: JSON ``{topic, events: [[kind, seq, lease_id, node, at, deliveries], ...]}``.
- ``CLEAN_STOP``: JSON ``{"heads": {topic_id: head}}`` of ephemeral topics; the last frame of a
  clean shutdown (nothing after it was lost, so seq reservations need not be skipped over).
- ``ROUTER``: reserved.

Columnar record batch (``n`` records)::

    u16[n] node_len | u16[n] tag_len | u32[n] data_len | u32[n] meta_len | blob

The blob concatenates each record's node, tag, data and meta bytes in order; data and meta are
the record's JSON exactly as served. Lengths are read with ``array.frombytes`` (C speed).
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

NONE16 = 0xFFFF
NONE32 = 0xFFFFFFFF
_LITTLE = sys.byteorder == "little"

APPEND_HEADER = struct.Struct("<QQqI")
KEY_LEN = struct.Struct("<H")
DELETE_HEADER = struct.Struct("<QI")
RANGE = struct.Struct("<QQ")
PAIR = struct.Struct("<QQ")


# -- little-endian integer columns -------------------------------------------------------------


def le_bytes(a: array[int]) -> bytes:
    if not _LITTLE:
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def load_column(typecode: str, buf: bytes | memoryview, pos: int, n: int) -> tuple[array[int], int]:
    """``n`` little-endian integers of ``typecode`` at ``buf[pos:]``; returns them and the end."""
    a = array(typecode)
    end = pos + a.itemsize * n
    a.frombytes(buf[pos:end])
    if not _LITTLE:
        a.byteswap()
    return a, end


# -- columnar record batches -------------------------------------------------------------------


class RecordFields(Protocol):
    """What a batch stores of a record (its seq and ``$ts`` are stored beside the batch)."""

    node: str | None
    tag: str | None
    data_json: bytes
    meta_json: bytes | None


RecordTuple = tuple[str | None, str | None, bytes, bytes | None]
"""A decoded record: ``(node, tag, data_json, meta_json)``."""


def encode_records(records: Sequence[RecordFields]) -> bytes:
    node_lens, tag_lens = array("H"), array("H")
    data_lens, meta_lens = array("I"), array("I")
    blob: list[bytes] = []
    for r in records:
        if r.node is None:
            node_lens.append(NONE16)
        else:
            node = r.node.encode()
            node_lens.append(len(node))
            blob.append(node)
        if r.tag is None:
            tag_lens.append(NONE16)
        else:
            tag = r.tag.encode()
            tag_lens.append(len(tag))
            blob.append(tag)
        data_lens.append(len(r.data_json))
        blob.append(r.data_json)
        if r.meta_json is None:
            meta_lens.append(NONE32)
        else:
            meta_lens.append(len(r.meta_json))
            blob.append(r.meta_json)
    return b"".join(
        (le_bytes(node_lens), le_bytes(tag_lens), le_bytes(data_lens), le_bytes(meta_lens), *blob)
    )


def decode_records(
    buf: bytes, pos: int, n: int, keep: Sequence[bool] | None = None
) -> tuple[list[RecordTuple | None], int]:
    """The ``n`` records at ``buf[pos:]``; ``keep[i]`` false yields ``None`` for record ``i``
    (still consumed). Returns the records and the end offset."""
    node_lens, pos = load_column("H", buf, pos, n)
    tag_lens, pos = load_column("H", buf, pos, n)
    data_lens, pos = load_column("I", buf, pos, n)
    meta_lens, pos = load_column("I", buf, pos, n)
    out: list[RecordTuple | None] = []
    append = out.append
    for i, (nl, tl, dl, ml) in enumerate(zip(node_lens, tag_lens, data_lens, meta_lens, strict=True)):
        node = tag = meta = None
        if nl != NONE16:
            node = buf[pos : pos + nl].decode()
            pos += nl
        if tl != NONE16:
            tag = buf[pos : pos + tl].decode()
            pos += tl
        data = buf[pos : pos + dl]
        pos += dl
        if ml != NONE32:
            meta = buf[pos : pos + ml]
            pos += ml
        append((node, tag, data, meta) if keep is None or keep[i] else None)
    return out, pos


# -- APPEND ------------------------------------------------------------------------------------


def encode_append(
    topic_id: int, first_seq: int, ts: int, records: Sequence[RecordFields], key: str | None
) -> bytes:
    key_bytes = b"" if key is None else key.encode()
    return b"".join(
        (
            APPEND_HEADER.pack(topic_id, first_seq, ts, len(records)),
            KEY_LEN.pack(NONE16 if key is None else len(key_bytes)),
            key_bytes,
            encode_records(records),
        )
    )


@dataclass(slots=True)
class AppendPayload:
    topic_id: int
    first_seq: int
    ts: int
    key: str | None
    records: list[RecordTuple]


def decode_append(payload: memoryview) -> AppendPayload:
    buf = bytes(payload)
    topic_id, first_seq, ts, count = APPEND_HEADER.unpack_from(buf)
    pos = APPEND_HEADER.size
    (key_len,) = KEY_LEN.unpack_from(buf, pos)
    pos += KEY_LEN.size
    key = None
    if key_len != NONE16:
        key = buf[pos : pos + key_len].decode()
        pos += key_len
    records, _ = decode_records(buf, pos, count)
    return AppendPayload(topic_id, first_seq, ts, key, records)  # type: ignore[arg-type]


# -- DELETE / SEQ_RESERVE ----------------------------------------------------------------------


def to_ranges(seqs: Sequence[int]) -> list[tuple[int, int]]:
    """Ascending seqs -> inclusive runs."""
    ranges: list[tuple[int, int]] = []
    for seq in seqs:
        if ranges and ranges[-1][1] == seq - 1:
            ranges[-1] = (ranges[-1][0], seq)
        else:
            ranges.append((seq, seq))
    return ranges


def encode_delete(topic_id: int, ranges: Sequence[tuple[int, int]]) -> bytes:
    return DELETE_HEADER.pack(topic_id, len(ranges)) + b"".join(RANGE.pack(a, b) for a, b in ranges)


def decode_delete(payload: memoryview) -> tuple[int, list[tuple[int, int]]]:
    topic_id, n = DELETE_HEADER.unpack_from(payload)
    ranges = [RANGE.unpack_from(payload, DELETE_HEADER.size + i * RANGE.size) for i in range(n)]
    return topic_id, ranges


def encode_seq_reserve(topic_id: int, reserved: int) -> bytes:
    return PAIR.pack(topic_id, reserved)


def decode_seq_reserve(payload: memoryview) -> tuple[int, int]:
    topic_id, reserved = PAIR.unpack_from(payload)
    return topic_id, reserved


# -- control-plane frames (JSON) ---------------------------------------------------------------


@dataclass(slots=True)
class TopicPutPayload:
    ts: int
    id: int
    name: str
    config: dict[str, Any]
    """The resolved config as its wire object."""
    created_ms: int
    previous_head: int | None


def encode_topic_put(p: TopicPutPayload) -> bytes:
    return orjson.dumps(
        {
            "ts": p.ts,
            "id": p.id,
            "name": p.name,
            "config": p.config,
            "created_ms": p.created_ms,
            "previous_head": p.previous_head,
        }
    )


def decode_topic_put(payload: memoryview) -> TopicPutPayload:
    d = orjson.loads(payload)
    return TopicPutPayload(
        d.get("ts", 0), d["id"], d["name"], d["config"], d["created_ms"], d.get("previous_head")
    )


def encode_topic_delete(topic_id: int, name: str, head: int) -> bytes:
    return orjson.dumps({"id": topic_id, "name": name, "head": head})


def decode_topic_delete(payload: memoryview) -> tuple[int, int]:
    """``(topic_id, head)``."""
    d = orjson.loads(payload)
    return d["id"], d["head"]


LeaseRow = list[Any]
"""``[kind, seq, lease_id, node, at, deliveries]`` (see ``leases.LeaseEvent``)."""


def encode_lease(topic_id: int, rows: Sequence[LeaseRow]) -> bytes:
    return orjson.dumps({"topic": topic_id, "events": list(rows)})


def decode_lease(payload: memoryview) -> tuple[int, list[LeaseRow]]:
    d = orjson.loads(payload)
    return d["topic"], d["events"]


def encode_clean_stop(heads: dict[int, int]) -> bytes:
    return orjson.dumps({"heads": {str(k): v for k, v in heads.items()}})


def decode_clean_stop(payload: memoryview) -> dict[int, int]:
    return {int(k): v for k, v in orjson.loads(payload)["heads"].items()}


# -- the snapshot schema -----------------------------------------------------------------------

SNAPSHOT_VERSION = 1


@dataclass(slots=True)
class QueueImage:
    """A queue's lease projection. Only ``dead_lettered`` unless the queue's leases are
    durable; then the leases, delivery counters, delayed retries, freelist and claim cursor."""

    dead_lettered: int = 0
    leases: list[list[Any]] | None = None
    """``[seq, node, lease_id, deadline, deliveries]`` rows."""
    deliveries: list[list[int]] | None = None
    delayed: list[list[int]] | None = None
    free: list[int] | None = None
    cursor: int = 0


@dataclass(slots=True)
class TopicImage:
    """One topic in a snapshot: identity, config, watermarks and its sealed segments."""

    id: int
    name: str
    config: dict[str, Any]
    created_ms: int
    previous_head: int | None
    head_seq: int
    reserved_seq: int
    seq_reserved_durable: int
    evict_floor: int
    losses: list[list[Any]]
    """``[reason, last_seq, count]`` runs of involuntary losses."""
    last_write_ts: int | None
    last_read_ts: int | None
    last_ts: int
    idempotency: list[list[Any]]
    """``[key, ts, first_seq, last_seq]`` rows, oldest first."""
    queue: QueueImage | None
    segments: list[str]
    """File names of the sealed segments holding the topic's records."""


@dataclass(slots=True)
class SnapshotImage:
    lsn: int
    """Every WAL frame up to this LSN is reflected; replay starts after it."""
    next_topic_id: int
    deleted_heads: dict[str, int]
    topics: list[TopicImage]


def encode_snapshot(image: SnapshotImage) -> bytes:
    topics = []
    for t in image.topics:
        entry = {k: getattr(t, k) for k in TopicImage.__slots__}
        q = t.queue
        entry["queue"] = None if q is None else {k: getattr(q, k) for k in QueueImage.__slots__}
        topics.append(entry)
    return orjson.dumps(
        {
            "version": SNAPSHOT_VERSION,
            "lsn": image.lsn,
            "next_topic_id": image.next_topic_id,
            "deleted_heads": image.deleted_heads,
            "topics": topics,
        }
    )


def decode_snapshot(body: bytes) -> SnapshotImage:
    d = orjson.loads(body)
    if d.get("version") != SNAPSHOT_VERSION:
        raise ValueError(f"unknown snapshot version {d.get('version')}")
    topics = []
    for t in d["topics"]:
        q = t.pop("queue")
        topics.append(TopicImage(**t, queue=None if q is None else QueueImage(**q)))
    return SnapshotImage(d["lsn"], d["next_topic_id"], d["deleted_heads"], topics)
