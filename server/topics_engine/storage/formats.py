"""Every payload format of the data directory in one place: what is inside WAL frames, the
record batches shared by ``APPEND`` frames and segments, and the snapshot schema.

The frame envelope (length, CRC, type, LSN) is ``frames``; file layouts are ``wal``,
``segments`` and ``snapshot``. This module only turns plain values into bytes and back; it knows
nothing of topics' semantics. All integers are little-endian.

Payloads by frame type (``<`` struct formats; ``NONE16`` marks an absent field):

- ``APPEND``: ``QH`` topic_id, idempotency-key length + key; then the write's records as one
  record batch (:class:`RecordBatch`, :func:`encode_batch`, encoded in C) — the same bytes the
  engine keeps in memory and serves, so recovery copies them back without re-encoding a record.
- ``DELETE``: ``QI`` topic_id, n; then n × ``QQ`` inclusive seq ranges actually deleted (the
  effect, not the request, so replay never depends on state).
- ``SEQ_RESERVE``: ``QQ`` topic_id, reserved head (seqs up to it may have been handed out, so
  recovery never reuses them).
- ``TOPIC_PUT``: JSON ``{ts, id, name, config, created_ms, previous_head}``.
- ``TOPIC_DELETE``: JSON ``{id, name, head}``.
- ``LEASE``: JSON ``{topic, events: [[kind, seq, lease_id, node, at, deliveries], ...]}``.
- ``CLEAN_STOP``: JSON ``{"heads": {topic_id: head}}`` of ephemeral topics; the last frame of a
  clean shutdown (nothing after it was lost, so seq reservations need not be skipped over).
- ``ROUTER``: one kind byte, then — ``ROUTER_PUT`` (JSON :class:`RouterPayload`: a router created
  or reconfigured, with its cursor), ``ROUTER_DELETE`` (JSON ``{id}``), or ``ROUTER_FORWARD``
  (binary, :class:`ForwardPayload`: a forwarding step — the router's new cursor and total, and
  which source seqs were copied to which dest seqs; the copies' bytes are *not* logged, they
  are re-derived from the source records on replay).
- ``SCHEDULE``: one kind byte, then — ``SCHEDULE_PUT`` (JSON :class:`SchedulePayload`: a
  schedule created or reconfigured, with its progress), ``SCHEDULE_DELETE`` (JSON ``{id}``), or
  ``SCHEDULE_RUN`` (binary, :class:`RunPayload`: a run — the due time it ran for, how far due
  times are accounted for, the run count; it follows the run's own ``APPEND`` frame).
- ``CONSUMER``: binary, :class:`ConsumerPayload` — ``<BQQqH`` kind, topic_id, cursor,
  committed_at_ms, name length, then the name: ``CONSUMER_SET`` (a named consumer created, its
  cursor committed or repositioned: the consumer's whole state, so replay sets it) or
  ``CONSUMER_DELETE`` (cursor and time 0). A topic's delete takes its consumers with it; no
  ``CONSUMER_DELETE`` frame is written for them.

Stored configs (``TOPIC_PUT``'s and a snapshot topic's ``config``, ``ROUTER_PUT``'s and a
snapshot router's ``config``) are JSON objects read back tolerantly — missing keys default,
unknown keys are kept and written back, unknown enum values are refused
(``versions.UnsupportedFormat``) — by ``config.stored_config`` and
``routers.stored_router_config``, never by the request validators (a ``SCHEDULE_PUT``'s and a
snapshot schedule's by ``schedules.stored_schedule_config``). A ``ROUTER``, ``SCHEDULE`` or
``CONSUMER`` frame of an unknown kind is refused too (``datadir.recovery``).

The snapshot schema is versioned with its file (``versions.SNAPSHOT``): :func:`decode_snapshot`
reads every version this server reads (see :class:`TopicImage` for what each added; version 3
added the schedules, version 4 the named consumers: :class:`SnapshotImage`).

Integer columns are read with ``array.frombytes`` (C speed).
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import _codec
from .versions import SNAPSHOT

NONE16 = 0xFFFF
_LITTLE = sys.byteorder == "little"

_APPEND_HEADER = struct.Struct("<QH")
DELETE_HEADER = struct.Struct("<QI")
RANGE = struct.Struct("<QQ")
PAIR = struct.Struct("<QQ")


# -- little-endian integer columns -------------------------------------------------------------


def load_column(typecode: str, buf: bytes | memoryview, pos: int, n: int) -> tuple[array[int], int]:
    """``n`` little-endian integers of ``typecode`` at ``buf[pos:]``; returns them and the end."""
    a = array(typecode)
    end = pos + a.itemsize * n
    a.frombytes(buf[pos:end])
    if not _LITTLE:
        a.byteswap()
    return a, end


# -- record batches ----------------------------------------------------------------------------


@dataclass(slots=True)
class RecordBatch:
    """Consecutive records — seqs ``first_seq .. first_seq + count - 1`` — in their wire form.

    ``blob`` holds each record's JSON object exactly as served (``{"$seq":..,"$ts":..[,
    "$delay_ms":..][,"$node":..][,"$tag":..],"data":..[,"meta":..]}``), joined by ``,``: a run
    of records is one slice of it. Per record, ``ends[i]`` is the exclusive end of record
    ``i`` in ``blob`` (record ``i + 1`` starts at ``ends[i] + 1``); ``data_at[i]`` the offset
    of ``,"data":`` in the record; ``tag_at[i]``/``meta_at[i]`` the offsets of
    ``,"$tag":``/``,"meta":`` (0 = absent; the arrays are ``None`` when no record has one).
    ``tags``/``nodes`` hold the raw strings (``None`` lists when no record has one).
    ``ts_runs`` are ``(ordinal, $ts)`` pairs: record ``i`` has the ``$ts`` of the last run
    starting at or before ``i``.

    Immutable once built: the WAL writer, the segment thread and readers share it freely.
    """

    first_seq: int
    blob: bytes
    ends: array[int]
    data_at: array[int]
    ts_runs: list[tuple[int, int]]
    tag_at: array[int] | None = None
    tags: list[str | None] | None = None
    nodes: list[str | None] | None = None
    meta_at: array[int] | None = None
    count: int = field(init=False)
    last_seq: int = field(init=False)

    def __post_init__(self) -> None:
        self.count = len(self.ends)
        self.last_seq = self.first_seq + self.count - 1

    def start(self, i: int) -> int:
        """Offset of record ``i`` in ``blob``."""
        return self.ends[i - 1] + 1 if i else 0

    def ts_of(self, i: int) -> int:
        runs = self.ts_runs
        k = len(runs) - 1
        while runs[k][0] > i:
            k -= 1
        return runs[k][1]


_BATCH_HEADER = struct.Struct("<QIIBH")
_TS_RUN = struct.Struct("<Iq")
_HAS_TAGS, _HAS_NODES, _HAS_META = 1, 2, 4


def _decode_strings(buf: bytes | memoryview, pos: int, n: int) -> tuple[list[str | None], int]:
    lens, pos = load_column("H", buf, pos, n)
    out: list[str | None] = []
    for length in lens:
        if length == NONE16:
            out.append(None)
        else:
            out.append(bytes(buf[pos : pos + length]).decode())
            pos += length
    return out, pos


def encode_batch(batch: RecordBatch) -> bytes:
    """A record batch as bytes (the body of an ``APPEND`` frame after its header, and of each
    chunk of a segment); encoded in C (``_codec.encode_batch``)::

        u64 first_seq | u32 count | u32 blob_len | u8 flags | u16 ts_run_count
        ts_run_count × (u32 ordinal | i64 ts)
        u32[count] ends | u16[count] data_at
        [flags & 1: u16[count] tag_at | u16[count] tag_len + tag bytes]   (0xFFFF = no tag)
        [flags & 2: u16[count] node_len + node bytes]                     (0xFFFF = no node)
        [flags & 4: u32[count] meta_at]
        blob
    """
    return _codec.encode_batch(batch)


def decode_batch(buf: bytes | memoryview, pos: int = 0) -> tuple[RecordBatch, int]:
    """The batch at ``buf[pos:]`` and the offset just past it."""
    first_seq, n, blob_len, flags, n_runs = _BATCH_HEADER.unpack_from(buf, pos)
    pos += _BATCH_HEADER.size
    runs = []
    for _ in range(n_runs):
        runs.append(_TS_RUN.unpack_from(buf, pos))
        pos += _TS_RUN.size
    ends, pos = load_column("I", buf, pos, n)
    data_at, pos = load_column("H", buf, pos, n)
    tag_at = tags = nodes = meta_at = None
    if flags & _HAS_TAGS:
        tag_at, pos = load_column("H", buf, pos, n)
        tags, pos = _decode_strings(buf, pos, n)
    if flags & _HAS_NODES:
        nodes, pos = _decode_strings(buf, pos, n)
    if flags & _HAS_META:
        meta_at, pos = load_column("I", buf, pos, n)
    blob = bytes(buf[pos : pos + blob_len])
    if len(blob) != blob_len:
        raise ValueError("record batch truncated")
    return RecordBatch(first_seq, blob, ends, data_at, runs, tag_at, tags, nodes, meta_at), pos + blob_len


# -- APPEND ------------------------------------------------------------------------------------


def append_head(topic_id: int, key: str | None) -> bytes:
    """The start of an ``APPEND`` payload: ``Q`` topic_id | ``H`` idempotency-key length
    (0xFFFF = none) + key. The write's record batch (:func:`encode_batch`) follows; the WAL
    frame is built in one piece by ``_codec.frame`` (one frame per write, whatever its size)."""
    if key is None:
        return _APPEND_HEADER.pack(topic_id, NONE16)
    key_bytes = key.encode()
    return _APPEND_HEADER.pack(topic_id, len(key_bytes)) + key_bytes


def encode_append(topic_id: int, batch: RecordBatch, key: str | None) -> bytes:
    """A whole ``APPEND`` payload (tests and tools; the WAL path frames it in C directly)."""
    return append_head(topic_id, key) + encode_batch(batch)


@dataclass(slots=True)
class AppendPayload:
    topic_id: int
    key: str | None
    batch: RecordBatch


def decode_append(payload: bytes | memoryview) -> AppendPayload:
    topic_id, key_len = _APPEND_HEADER.unpack_from(payload)
    pos = _APPEND_HEADER.size
    key = None
    if key_len != NONE16:
        key = bytes(payload[pos : pos + key_len]).decode()
        pos += key_len
    batch, _ = decode_batch(payload, pos)
    return AppendPayload(topic_id, key, batch)


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
    """The stored config record (``TopicConfig.to_stored``; read by ``config.stored_config``)."""
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


# -- ROUTER frames ------------------------------------------------------------------------------

ROUTER_PUT = 1
ROUTER_DELETE = 2
ROUTER_FORWARD = 3
_FORWARD_HEADER = struct.Struct("<BBQQQQqQQI")


@dataclass(slots=True)
class RouterPayload:
    """A router's definition and progress (a ``ROUTER_PUT`` frame and a snapshot entry)."""

    id: int
    name: str
    config: dict[str, Any]
    """The stored router fields (``source``, ``dest``, ``preserve_node`` ...) as on the wire."""
    cursor: int
    """The last source seq the router examined (forwarded, filtered out or hop-capped)."""
    forwarded_total: int = 0
    source_trimmed: int = 0
    """Source records the router could not forward because the source evicted them first."""


def encode_router_put(p: RouterPayload) -> bytes:
    body = {k: getattr(p, k) for k in RouterPayload.__slots__}
    return bytes((ROUTER_PUT,)) + orjson.dumps(body)


def encode_router_delete(router_id: int) -> bytes:
    return bytes((ROUTER_DELETE,)) + orjson.dumps({"id": router_id})


@dataclass(slots=True)
class ForwardPayload:
    """One forwarding step of a router: copies of source seqs ``copied`` (inclusive ranges,
    ascending) occupy dest seqs ``first_dest_seq ..`` in order, all with ``$ts`` = ``ts``. A step
    with ``trimmed`` > 0 copies nothing: the source evicted that many records before the router
    reached them, and dest seq ``first_dest_seq`` marks the loss (``source_trim``)."""

    router_id: int
    cursor: int
    forwarded_total: int
    dest_id: int
    first_dest_seq: int
    ts: int
    trimmed: int
    copied: list[tuple[int, int]]
    stamped: bool = False
    """The copies carry ``meta._topics_router`` (exactly-once key and hop count)."""


def encode_forward(p: ForwardPayload) -> bytes:
    head = _FORWARD_HEADER.pack(
        ROUTER_FORWARD,
        int(p.stamped),
        p.router_id,
        p.cursor,
        p.forwarded_total,
        p.dest_id,
        p.ts,
        p.first_dest_seq,
        p.trimmed,
        len(p.copied),
    )
    return head + b"".join(RANGE.pack(a, b) for a, b in p.copied)


def router_frame_kind(payload: bytes | memoryview) -> int:
    return payload[0]


def decode_router_put(payload: bytes | memoryview) -> RouterPayload:
    return RouterPayload(**orjson.loads(payload[1:]))


def decode_router_delete(payload: bytes | memoryview) -> int:
    router_id: int = orjson.loads(payload[1:])["id"]
    return router_id


def decode_forward(payload: bytes | memoryview) -> ForwardPayload:
    _, stamped, router_id, cursor, total, dest_id, ts, first, trimmed, n = _FORWARD_HEADER.unpack_from(
        payload
    )
    at = _FORWARD_HEADER.size
    copied = [RANGE.unpack_from(payload, at + i * RANGE.size) for i in range(n)]
    return ForwardPayload(router_id, cursor, total, dest_id, first, ts, trimmed, copied, bool(stamped))


# -- SCHEDULE frames ----------------------------------------------------------------------------

SCHEDULE_PUT = 1
SCHEDULE_DELETE = 2
SCHEDULE_RUN = 3
_RUN = struct.Struct("<BQqqQ")


@dataclass(slots=True)
class SchedulePayload:
    """A schedule's definition and progress (a ``SCHEDULE_PUT`` frame and a snapshot entry)."""

    id: int
    name: str
    config: dict[str, Any]
    """The stored fields (``topic``, ``cron``/``every_ms``, ``records`` as JSON text, ``node``,
    ``missed``), read by ``schedules.stored_schedule_config``."""
    since_ms: int
    """When the timing was put: an interval's due times are ``since_ms + n * every_ms``."""
    through_ms: int
    """Every due time at or before this is accounted for (ran, or skipped)."""
    last_run_ms: int | None = None
    """The due time of the last run."""
    runs_total: int = 0


def encode_schedule_put(p: SchedulePayload) -> bytes:
    body = {k: getattr(p, k) for k in SchedulePayload.__slots__}
    return bytes((SCHEDULE_PUT,)) + orjson.dumps(body)


def encode_schedule_delete(schedule_id: int) -> bytes:
    return bytes((SCHEDULE_DELETE,)) + orjson.dumps({"id": schedule_id})


@dataclass(slots=True)
class RunPayload:
    """One run of a schedule: it appended for due time ``due_ms``, and every due time at or
    before ``through_ms`` is accounted for; ``runs_total`` counts its runs so far."""

    schedule_id: int
    due_ms: int
    through_ms: int
    runs_total: int


def encode_schedule_run(p: RunPayload) -> bytes:
    """``<BQqqQ``: kind, schedule id, due time, through, runs total."""
    return _RUN.pack(SCHEDULE_RUN, p.schedule_id, p.due_ms, p.through_ms, p.runs_total)


def schedule_frame_kind(payload: bytes | memoryview) -> int:
    return payload[0]


def decode_schedule_put(payload: bytes | memoryview) -> SchedulePayload:
    return SchedulePayload(**orjson.loads(payload[1:]))


def decode_schedule_delete(payload: bytes | memoryview) -> int:
    schedule_id: int = orjson.loads(payload[1:])["id"]
    return schedule_id


def decode_schedule_run(payload: bytes | memoryview) -> RunPayload:
    _, schedule_id, due, through, total = _RUN.unpack_from(payload)
    return RunPayload(schedule_id, due, through, total)


# -- CONSUMER frames ----------------------------------------------------------------------------

CONSUMER_SET = 1
CONSUMER_DELETE = 2
_CONSUMER = struct.Struct("<BQQqH")


@dataclass(slots=True)
class ConsumerPayload:
    """A named consumer's state (a ``CONSUMER_SET`` frame, and a row of the snapshot's
    ``consumers`` section): its topic (by id), name, committed cursor and when it was set."""

    topic_id: int
    name: str
    cursor: int
    committed_at_ms: int

    def row(self) -> list[Any]:
        """The snapshot row ``[topic_id, name, cursor, committed_at_ms]``."""
        return [self.topic_id, self.name, self.cursor, self.committed_at_ms]


def encode_consumer_set(p: ConsumerPayload) -> bytes:
    name = p.name.encode()
    return _CONSUMER.pack(CONSUMER_SET, p.topic_id, p.cursor, p.committed_at_ms, len(name)) + name


def encode_consumer_delete(topic_id: int, name: str) -> bytes:
    raw = name.encode()
    return _CONSUMER.pack(CONSUMER_DELETE, topic_id, 0, 0, len(raw)) + raw


def consumer_frame_kind(payload: bytes | memoryview) -> int:
    return payload[0]


def decode_consumer(payload: bytes | memoryview) -> ConsumerPayload:
    """A ``CONSUMER_SET`` or ``CONSUMER_DELETE`` payload (the kind is :func:`consumer_frame_kind`)."""
    _, topic_id, cursor, at_ms, n = _CONSUMER.unpack_from(payload)
    name = bytes(payload[_CONSUMER.size : _CONSUMER.size + n]).decode()
    return ConsumerPayload(topic_id, name, cursor, at_ms)


# -- the snapshot schema -----------------------------------------------------------------------

SNAPSHOT_VERSION = SNAPSHOT.current
"""The schema version this server writes (the file header's version; see ``versions``)."""


@dataclass(slots=True)
class QueueImage:
    """A queue's lease projection. Only ``dead_lettered`` and ``due`` unless the queue's
    leases are durable; then the leases, delivery counters, delayed retries, freelist and claim
    cursor too."""

    dead_lettered: int = 0
    leases: list[list[Any]] | None = None
    """``[seq, node, lease_id, deadline, deliveries]`` rows."""
    deliveries: list[list[int]] | None = None
    delayed: list[list[int]] | None = None
    free: list[int] | None = None
    cursor: int = 0
    due: list[list[int]] | None = None
    """``[seq, due_ms]`` of the delayed writes not yet due, for a queue whose leases are not
    durable (with durable leases ``delayed`` holds them). Since snapshot schema version 3;
    absent before: no delayed writes existed."""


@dataclass(slots=True)
class TopicImage:
    """One topic in a snapshot: identity, config, watermarks and its sealed segments.

    Schema versions: 1 — every field but ``skipped``; 2 — ``skipped`` added (absent in a
    version 1 snapshot: no skipped range); 3 — the queue's ``due`` added (:class:`QueueImage`)."""

    id: int
    name: str
    config: dict[str, Any]
    """The stored config record (``TopicConfig.to_stored``; read by ``config.stored_config``)."""
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
    holes: list[list[int]] = field(default_factory=list)
    """``[seq, missed]``: dest seqs marking records a router could not copy (``source_trim``)."""
    skipped: list[list[int]] = field(default_factory=list)
    """``[low, high]``: cursors strictly between are the previous incarnation's, inside seqs a
    crash recovery skipped in a recreated topic (``Topic.skipped``). Since schema version 2."""


@dataclass(slots=True)
class SnapshotImage:
    lsn: int
    """Every WAL frame up to this LSN is reflected; replay starts after it."""
    next_topic_id: int
    deleted_heads: dict[str, int]
    topics: list[TopicImage]
    routers: list[RouterPayload] = field(default_factory=list)
    next_router_id: int = 1
    schedules: list[SchedulePayload] = field(default_factory=list)
    """Since schema version 3 (absent before: no schedules)."""
    next_schedule_id: int = 1
    consumers: list[ConsumerPayload] = field(default_factory=list)
    """The named consumers of the snapshot's topics, as rows ``[topic_id, name, cursor,
    committed_at_ms]``. Since schema version 4 (absent before: no consumers)."""


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
            "routers": [{k: getattr(r, k) for k in RouterPayload.__slots__} for r in image.routers],
            "next_router_id": image.next_router_id,
            "schedules": [{k: getattr(s, k) for k in SchedulePayload.__slots__} for s in image.schedules],
            "next_schedule_id": image.next_schedule_id,
            "consumers": [c.row() for c in image.consumers],
        }
    )


def decode_snapshot(body: bytes, version: int = SNAPSHOT_VERSION) -> SnapshotImage:
    """The snapshot of schema ``version`` (its file header's): any version ``versions.SNAPSHOT``
    reads; a field a version lacks takes its default (:class:`TopicImage`). Raises
    ``ValueError`` when the body names another version than its header."""
    d = orjson.loads(body)
    if d.get("version") != version:
        raise ValueError(f"snapshot body version {d.get('version')} differs from its header's {version}")
    topics = []
    for t in d["topics"]:
        q = t.pop("queue")
        topics.append(TopicImage(**t, queue=None if q is None else QueueImage(**q)))
    routers = [RouterPayload(**r) for r in d.get("routers", [])]
    schedules = [SchedulePayload(**s) for s in d.get("schedules", [])]
    return SnapshotImage(
        d["lsn"],
        d["next_topic_id"],
        d["deleted_heads"],
        topics,
        routers,
        d.get("next_router_id", 1),
        schedules,
        d.get("next_schedule_id", 1),
        [ConsumerPayload(*row) for row in d.get("consumers", [])],
    )
