"""The WAL frame envelope (what each frame's payload means is ``formats``).

A frame on disk::

    u32 body_length | u32 crc32(body) | body
    body = u8 frame_type | u64 lsn | payload

All integers little-endian. The LSN (log sequence number) increases by one per frame, across
WAL files; a file is named by the LSN of its first frame. The CRC covers the whole body, so a
torn write (short body) or bit rot fails the check; :func:`scan` stops at the first frame that
is incomplete or fails its CRC — everything after it is the torn tail recovery truncates. A
frame whose CRC holds but whose type this server does not know was written by a newer server:
:func:`scan` raises ``versions.UnsupportedFormat`` for it rather than take it for a torn tail
(which recovery would truncate, with every later file set aside).

Frame types name their payload format in ``formats``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from .checksum import crc32
from .versions import UnsupportedFormat


class FrameType(IntEnum):
    TOPIC_PUT = 1
    TOPIC_DELETE = 2
    APPEND = 3
    DELETE = 4
    SEQ_RESERVE = 5
    CLEAN_STOP = 6
    ROUTER = 16
    LEASE = 17
    SCHEDULE = 18
    CONSUMER = 19


FRAME_HEADER = struct.Struct("<II")
BODY_HEADER = struct.Struct("<BQ")
MAX_BODY = 1 << 31


def encode_frame(frame_type: FrameType, lsn: int, payload: bytes) -> bytes:
    return b"".join(frame_parts(frame_type, lsn, (payload,)))


def frame_parts(frame_type: FrameType, lsn: int, payload: Sequence[bytes]) -> list[bytes]:
    """The frame as buffers to write in order (its payload's parts are not copied: a large
    record blob goes to the file as is)."""
    body_header = BODY_HEADER.pack(frame_type, lsn)
    crc = crc32(body_header)
    length = len(body_header)
    for part in payload:
        crc = crc32(part, crc)
        length += len(part)
    return [FRAME_HEADER.pack(length, crc) + body_header, *payload]


@dataclass(slots=True)
class Frame:
    type: FrameType
    lsn: int
    payload: memoryview
    end: int
    """Offset just past this frame in the scanned buffer."""


def scan(buf: bytes, offset: int = 0, path: Path | None = None) -> Iterator[Frame]:
    """Yield the valid frames of ``buf`` from ``offset``; stop at the first torn or corrupt one.

    The caller learns where the valid prefix ends from the last frame's ``end``. A CRC-valid
    frame of a type this server does not know raises :class:`UnsupportedFormat` (naming
    ``path``): a newer server wrote it, and it must be neither skipped nor truncated.
    """
    view = memoryview(buf)
    n = len(buf)
    while offset + FRAME_HEADER.size <= n:
        length, crc = FRAME_HEADER.unpack_from(buf, offset)
        start = offset + FRAME_HEADER.size
        if length < BODY_HEADER.size or length > MAX_BODY or start + length > n:
            return
        body = view[start : start + length]
        if crc32(body) != crc:
            return
        frame_type, lsn = BODY_HEADER.unpack_from(body)
        try:
            ftype = FrameType(frame_type)
        except ValueError:
            raise UnsupportedFormat(
                f"{path or 'WAL'}: frame type {frame_type} at byte {offset} (LSN {lsn}) is not one "
                "this server knows; it was written by a newer topics server (or the file is "
                "damaged) — upgrade topics to open this data directory"
            ) from None
        offset = start + length
        yield Frame(ftype, lsn, body[BODY_HEADER.size :], offset)
