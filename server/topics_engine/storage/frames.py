"""WAL frame format.

A frame on disk::

    u32 body_length | u32 crc32(body) | body
    body = u8 frame_type | u64 lsn | payload

All integers little-endian. The LSN (log sequence number) increases by one per frame, across
WAL files; a file is named by the LSN of its first frame. The CRC covers the whole body, so a
torn write (short body) or bit rot fails the check; :func:`scan` stops at the first frame that
is incomplete or fails its CRC — everything after it is the torn tail recovery truncates.

Payloads (``<`` struct formats; ``NONE16``/``NONE32`` length marks an absent field):

- ``APPEND``: ``QQqI`` topic_id, first_seq, ts, count; ``H`` idempotency-key length + key;
  then the records as a columnar batch (``storage.columns``: length columns, then node, tag,
  data and meta bytes — data and meta are the record's JSON, exactly as served).
- ``DELETE``: ``QI`` topic_id, n; then n × ``QQ`` inclusive seq ranges actually deleted (the
  effect, not the request, so replay never depends on state).
- ``SEQ_RESERVE``: ``QQ`` topic_id, reserved head (ephemeral topics: seqs up to it may have been
  handed out, so recovery never reuses them).
- ``TOPIC_PUT`` / ``TOPIC_DELETE``: JSON objects (rare control-plane events).
- ``CLEAN_STOP``: JSON ``{"heads": {topic_id: head}}`` of ephemeral topics; the last frame of a
  clean shutdown (nothing after it was lost, so seq reservations need not be skipped over).
- ``ROUTER`` / ``LEASE``: reserved for routers and queue leases.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum

from ..records import PreparedRecord
from .columns import NONE16, decode_columns, encode_columns


class FrameType(IntEnum):
    TOPIC_PUT = 1
    TOPIC_DELETE = 2
    APPEND = 3
    DELETE = 4
    SEQ_RESERVE = 5
    CLEAN_STOP = 6
    ROUTER = 16
    LEASE = 17


FRAME_HEADER = struct.Struct("<II")
BODY_HEADER = struct.Struct("<BQ")
APPEND_HEADER = struct.Struct("<QQqI")
KEY_LEN = struct.Struct("<H")
DELETE_HEADER = struct.Struct("<QI")
RANGE = struct.Struct("<QQ")
PAIR = struct.Struct("<QQ")
MAX_BODY = 1 << 31


def encode_frame(frame_type: FrameType, lsn: int, payload: bytes) -> bytes:
    body = BODY_HEADER.pack(frame_type, lsn) + payload
    return FRAME_HEADER.pack(len(body), zlib.crc32(body)) + body


@dataclass(slots=True)
class Frame:
    type: FrameType
    lsn: int
    payload: memoryview
    end: int
    """Offset just past this frame in the scanned buffer."""


def scan(buf: bytes, offset: int = 0) -> Iterator[Frame]:
    """Yield the valid frames of ``buf`` from ``offset``; stop at the first torn or corrupt one.

    The caller learns where the valid prefix ends from the last frame's ``end``.
    """
    view = memoryview(buf)
    n = len(buf)
    while offset + FRAME_HEADER.size <= n:
        length, crc = FRAME_HEADER.unpack_from(buf, offset)
        start = offset + FRAME_HEADER.size
        if length < BODY_HEADER.size or length > MAX_BODY or start + length > n:
            return
        body = view[start : start + length]
        if zlib.crc32(body) != crc:
            return
        frame_type, lsn = BODY_HEADER.unpack_from(body)
        try:
            ftype = FrameType(frame_type)
        except ValueError:
            return
        offset = start + length
        yield Frame(ftype, lsn, body[BODY_HEADER.size :], offset)


# -- APPEND ------------------------------------------------------------------------------------


def encode_append(
    topic_id: int, first_seq: int, ts: int, batch: Sequence[PreparedRecord], key: str | None
) -> bytes:
    key_bytes = b"" if key is None else key.encode()
    return b"".join(
        (
            APPEND_HEADER.pack(topic_id, first_seq, ts, len(batch)),
            KEY_LEN.pack(NONE16 if key is None else len(key_bytes)),
            key_bytes,
            encode_columns(batch),
        )
    )


@dataclass(slots=True)
class AppendFrame:
    topic_id: int
    first_seq: int
    ts: int
    key: str | None
    records: list[PreparedRecord]


def decode_append(payload: memoryview) -> AppendFrame:
    buf = bytes(payload)
    topic_id, first_seq, ts, count = APPEND_HEADER.unpack_from(buf)
    pos = APPEND_HEADER.size
    (key_len,) = KEY_LEN.unpack_from(buf, pos)
    pos += KEY_LEN.size
    key = None
    if key_len != NONE16:
        key = buf[pos : pos + key_len].decode()
        pos += key_len
    records, _ = decode_columns(buf, pos, range(first_seq, first_seq + count), [ts] * count)
    return AppendFrame(topic_id, first_seq, ts, key, records)


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


def encode_pair(a: int, b: int) -> bytes:
    return PAIR.pack(a, b)


def decode_pair(payload: memoryview) -> tuple[int, int]:
    a, b = PAIR.unpack_from(payload)
    return a, b
