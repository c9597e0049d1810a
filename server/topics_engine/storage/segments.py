"""Sealed segments: immutable per-topic record files, with an in-place delete flag.

File ``segments/<topic-id>/<first-seq:020d>.seg``::

    header  b"TSEG" | u8 version | u64 topic_id | u64 first_seq | u64 last_seq
    record  u32 body_length | u32 crc32(body) | u8 deleted | body
    body    u64 seq | i64 ts | u16 node_len | u16 tag_len | u32 data_len | u32 meta_len
            | node | tag | data | meta          (NONE16/NONE32 lengths mark absent fields)

A segment is written once (temp file, fsync, rename, fsync of the directory) and never rewritten.
Deleting a sealed record flips its ``deleted`` byte in place and fsyncs: one byte, so a crash
mid-flip leaves the old or the new value — never torn framing — and the CRC does not cover the
flag, so either value reads back cleanly. The flag is an independent witness of the delete that
survives WAL trimming. A segment whose records are all gone is dropped whole at the next
checkpoint (after the snapshot that stops listing it is durable).

:class:`SegmentStore` is owned by the WAL writer thread: the event loop only reaches it through
ordered writer tasks, so flips always follow the durable WAL ``DELETE`` frame they witness.
"""

from __future__ import annotations

import bisect
import struct
import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..records import PreparedRecord, Record
from .frames import NONE16, NONE32
from .fs import FileSystem

MAGIC = b"TSEG"
VERSION = 1
HEADER = struct.Struct("<4sBQQQ")
RECORD = struct.Struct("<IIB")
BODY = struct.Struct("<QqHHII")
FLAG_OFFSET = 8  # from the start of a record frame


class CorruptSegment(Exception):
    pass


def segment_name(first_seq: int) -> str:
    return f"{first_seq:020d}.seg"


@dataclass
class Segment:
    path: Path
    first_seq: int
    last_seq: int
    seqs: array[int] = field(default_factory=lambda: array("Q"))
    offsets: array[int] = field(default_factory=lambda: array("Q"))
    deleted: int = 0

    @property
    def size(self) -> int:
        return len(self.seqs)

    def flag_offset(self, seq: int) -> int | None:
        i = bisect.bisect_left(self.seqs, seq)
        if i < len(self.seqs) and self.seqs[i] == seq:
            return int(self.offsets[i]) + FLAG_OFFSET
        return None


def _text(value: str | None) -> tuple[int, bytes]:
    if value is None:
        return NONE16, b""
    raw = value.encode()
    return len(raw), raw


def encode_segment(topic_id: int, records: Sequence[Record]) -> tuple[bytes, array[int], array[int]]:
    """The file bytes for ``records`` (ascending seqs), with their seqs and frame offsets."""
    parts = [HEADER.pack(MAGIC, VERSION, topic_id, records[0].seq, records[-1].seq)]
    pos = HEADER.size
    seqs, offsets = array("Q"), array("Q")
    for r in records:
        node_len, node = _text(r.node)
        tag_len, tag = _text(r.tag)
        data = r.data_json
        meta = r.meta_json or b""
        body = b"".join(
            (
                BODY.pack(
                    r.seq, r.ts, node_len, tag_len, len(data), NONE32 if r.meta_json is None else len(meta)
                ),
                node,
                tag,
                data,
                meta,
            )
        )
        parts.append(RECORD.pack(len(body), zlib.crc32(body), 0))
        parts.append(body)
        seqs.append(r.seq)
        offsets.append(pos)
        pos += RECORD.size + len(body)
    return b"".join(parts), seqs, offsets


@dataclass(slots=True)
class StoredRecord:
    seq: int
    ts: int
    record: PreparedRecord
    deleted: bool
    offset: int


def decode_segment(buf: bytes) -> tuple[int, int, int, Iterator[StoredRecord]]:
    """(topic_id, first_seq, last_seq, records) of a segment file; raises on corruption."""
    if len(buf) < HEADER.size:
        raise CorruptSegment("truncated header")
    magic, version, topic_id, first, last = HEADER.unpack_from(buf)
    if magic != MAGIC or version != VERSION:
        raise CorruptSegment("bad magic or version")

    def records() -> Iterator[StoredRecord]:
        pos = HEADER.size
        while pos < len(buf):
            if pos + RECORD.size > len(buf):
                raise CorruptSegment(f"truncated record at {pos}")
            length, crc, deleted = RECORD.unpack_from(buf, pos)
            start = pos + RECORD.size
            body = buf[start : start + length]
            if len(body) != length or zlib.crc32(body) != crc:
                raise CorruptSegment(f"bad record at {pos}")
            seq, ts, node_len, tag_len, data_len, meta_len = BODY.unpack_from(body)
            p = BODY.size
            node = tag = None
            if node_len != NONE16:
                node = body[p : p + node_len].decode()
                p += node_len
            if tag_len != NONE16:
                tag = body[p : p + tag_len].decode()
                p += tag_len
            data = body[p : p + data_len]
            p += data_len
            meta = body[p : p + meta_len] if meta_len != NONE32 else None
            yield StoredRecord(seq, ts, PreparedRecord(node, tag, data, meta, seq, ts), deleted != 0, pos)
            pos = start + length

    return topic_id, first, last, records()


class SegmentStore:
    """Writer-thread-owned index of every sealed segment: topic id -> segments by seq."""

    def __init__(self, fs: FileSystem, directory: Path) -> None:
        self.fs = fs
        self.directory = directory
        self.by_topic: dict[int, list[Segment]] = {}

    def topic_dir(self, topic_id: int) -> Path:
        return self.directory / str(topic_id)

    def add_loaded(self, topic_id: int, segment: Segment) -> None:
        self.by_topic.setdefault(topic_id, []).append(segment)

    def seal(self, topic_id: int, records: Sequence[Record]) -> Segment:
        """Write ``records`` as a new sealed segment (atomically) and index it."""
        data, seqs, offsets = encode_segment(topic_id, records)
        directory = self.topic_dir(topic_id)
        if not self.fs.exists(directory):
            self.fs.makedirs(directory)
            self.fs.fsync_dir(self.directory)
        path = directory / segment_name(records[0].seq)
        self.fs.write_atomic(path, data)
        segment = Segment(path, records[0].seq, records[-1].seq, seqs, offsets)
        self.by_topic.setdefault(topic_id, []).append(segment)
        return segment

    def flip_deleted(self, topic_id: int, seqs: Iterable[int]) -> None:
        """Set the delete flag of each sealed record among ``seqs`` and fsync the files."""
        touched: dict[int, tuple[Segment, int]] = {}
        segments = self.by_topic.get(topic_id, [])
        firsts = [s.first_seq for s in segments]
        try:
            for seq in seqs:
                i = bisect.bisect_right(firsts, seq) - 1
                if i < 0 or seq > segments[i].last_seq:
                    continue
                segment = segments[i]
                offset = segment.flag_offset(seq)
                if offset is None:
                    continue
                if id(segment) not in touched:
                    touched[id(segment)] = (segment, self.fs.open_rw(segment.path))
                self.fs.pwrite(touched[id(segment)][1], b"\x01", offset)
                segment.deleted += 1
            for _, fd in touched.values():
                self.fs.fdatasync(fd)
        finally:
            for _, fd in touched.values():
                self.fs.close(fd)

    def live_segments(self, topic_id: int, earliest_seq: int) -> list[Segment]:
        """Segments that may still hold a live record (not wholly below ``earliest_seq`` and
        not wholly flagged deleted)."""
        return [
            s for s in self.by_topic.get(topic_id, []) if s.last_seq >= earliest_seq and s.deleted < s.size
        ]

    def retain(self, keep: dict[int, list[Segment]]) -> None:
        """Drop every segment not in ``keep`` (files and index). Call only once a snapshot that
        no longer lists them is durable."""
        kept_paths = {s.path for segments in keep.values() for s in segments}
        for topic_id, segments in list(self.by_topic.items()):
            for s in segments:
                if s.path not in kept_paths and self.fs.exists(s.path):
                    self.fs.remove(s.path)
            if topic_id not in keep:
                directory = self.topic_dir(topic_id)
                if self.fs.exists(directory) and not self.fs.listdir(directory):
                    self.fs.rmdir(directory)
        self.by_topic = {t: list(s) for t, s in keep.items() if s}
