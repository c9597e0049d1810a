"""Sealed segments: immutable per-topic record files, with in-place delete flags.

File ``segments/<topic-id>/<first-seq:020d>.seg``::

    header  b"TSEG" | u8 version | u64 topic_id | u64 first_seq | u64 last_seq | u32 count
            | u32 crc32(body)
    flags   u8[count]         1 = deleted
    body    u64[count] seqs | i64[count] $ts | columnar records (``formats``)

A segment is written once (temp file, fsync, rename, fsync of the directory) and its body never
changes. Deleting a sealed record flips its flag byte in place and fsyncs: one byte, so a crash
mid-flip leaves the old or the new value, never torn framing; the CRC covers the body only, so
either flag value reads back cleanly. The flag is an independent witness of the delete that
survives WAL trimming. A segment whose records are all gone is dropped whole at the next
checkpoint (after the snapshot that stops listing it is durable).

:class:`SegmentStore` is owned by the WAL writer thread: the event loop only reaches it through
ordered writer tasks, so a flip always follows the durable WAL ``DELETE`` frame it witnesses.
"""

from __future__ import annotations

import bisect
import struct
import zlib
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .formats import RecordFields, RecordTuple, decode_records, encode_records, le_bytes, load_column
from .fs import FileSystem

MAGIC = b"TSEG"
VERSION = 2
HEADER = struct.Struct("<4sBQQQII")


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
    deleted: int = 0

    @property
    def size(self) -> int:
        return len(self.seqs)

    def flag_offset(self, seq: int) -> int | None:
        i = bisect.bisect_left(self.seqs, seq)
        if i < len(self.seqs) and self.seqs[i] == seq:
            return HEADER.size + i
        return None


class SealedRecord(RecordFields, Protocol):
    seq: int
    ts: int


def encode_segment(topic_id: int, records: Sequence[SealedRecord]) -> tuple[bytes, array[int]]:
    """The file bytes for ``records`` (ascending seqs), and their seqs."""
    seqs = array("Q", (r.seq for r in records))
    body = b"".join((le_bytes(seqs), le_bytes(array("q", (r.ts for r in records))), encode_records(records)))
    header = HEADER.pack(MAGIC, VERSION, topic_id, seqs[0], seqs[-1], len(seqs), zlib.crc32(body))
    return b"".join((header, bytes(len(seqs)), body)), seqs


@dataclass(slots=True)
class LoadedSegment:
    topic_id: int
    first_seq: int
    last_seq: int
    seqs: array[int]
    deleted: int
    records: list[tuple[int, int, RecordTuple]]
    """Live records as ``(seq, ts, record)``: not flagged deleted and at or above the floor."""


def decode_segment(buf: bytes, floor: int = 0) -> LoadedSegment:
    """Parse a segment file, keeping records not flagged deleted with ``seq >= floor``;
    raises :class:`CorruptSegment`."""
    if len(buf) < HEADER.size:
        raise CorruptSegment("truncated header")
    magic, version, topic_id, first, last, count, crc = HEADER.unpack_from(buf)
    if magic != MAGIC or version != VERSION:
        raise CorruptSegment("bad magic or version")
    flags = buf[HEADER.size : HEADER.size + count]
    body_start = HEADER.size + count
    if len(flags) != count or zlib.crc32(memoryview(buf)[body_start:]) != crc:
        raise CorruptSegment("checksum mismatch")
    seqs, pos = load_column("Q", buf, body_start, count)
    stamps, pos = load_column("q", buf, pos, count)
    keep = [not flag and seq >= floor for flag, seq in zip(flags, seqs, strict=True)]
    decoded, _ = decode_records(buf, pos, count, keep)
    records = [(seq, ts, r) for seq, ts, r in zip(seqs, stamps, decoded, strict=True) if r is not None]
    return LoadedSegment(topic_id, first, last, seqs, sum(1 for f in flags if f), records)


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

    def seal(self, topic_id: int, records: Sequence[SealedRecord]) -> Segment:
        """Write ``records`` as a new sealed segment (atomically) and index it."""
        data, seqs = encode_segment(topic_id, records)
        directory = self.topic_dir(topic_id)
        if not self.fs.exists(directory):
            self.fs.makedirs(directory)
            self.fs.fsync_dir(self.directory)
        path = directory / segment_name(records[0].seq)
        self.fs.write_atomic(path, data)
        segment = Segment(path, records[0].seq, records[-1].seq, seqs)
        self.by_topic.setdefault(topic_id, []).append(segment)
        return segment

    def flip_deleted(self, topic_id: int, seqs: Iterable[int]) -> None:
        """Set the delete flag of each sealed record among ``seqs`` and fsync the files."""
        segments = self.by_topic.get(topic_id, [])
        firsts = [s.first_seq for s in segments]
        fds: dict[Path, int] = {}
        try:
            for seq in seqs:
                i = bisect.bisect_right(firsts, seq) - 1
                if i < 0 or seq > segments[i].last_seq:
                    continue
                segment = segments[i]
                offset = segment.flag_offset(seq)
                if offset is None:
                    continue
                if segment.path not in fds:
                    fds[segment.path] = self.fs.open_rw(segment.path)
                self.fs.pwrite(fds[segment.path], b"\x01", offset)
                segment.deleted += 1
            for fd in fds.values():
                self.fs.fdatasync(fd)
        finally:
            for fd in fds.values():
                self.fs.close(fd)

    def live_segments(self, topic_id: int, earliest_seq: int) -> list[Segment]:
        """Segments that may still hold a live record (not wholly below ``earliest_seq`` and
        not wholly flagged deleted)."""
        return [
            s for s in self.by_topic.get(topic_id, []) if s.last_seq >= earliest_seq and s.deleted < s.size
        ]

    def remove_unlisted(self) -> int:
        """Recovery: delete segment files the loaded snapshot does not list (sealed after it, or
        torn ``.tmp`` writes). Their records are still in the WAL past the snapshot — that is
        what replay re-applies — so the files are redundant. Returns how many were removed."""
        listed = {s.path for segments in self.by_topic.values() for s in segments}
        removed = 0
        for topic_dir in self.fs.listdir(self.directory):
            directory = self.directory / topic_dir
            for name in self.fs.listdir(directory):
                if directory / name not in listed:
                    self.fs.remove(directory / name)
                    removed += 1
            if not self.fs.listdir(directory):
                self.fs.rmdir(directory)
        if removed:
            self.fs.fsync_dir(self.directory)
        return removed

    def retain(self, keep: dict[int, list[Segment]]) -> None:
        """Drop every segment not in ``keep`` (files and index). Call only once a snapshot that
        no longer lists them is durable."""
        kept_paths = {s.path for segments in keep.values() for s in segments}
        for topic_id, segments in list(self.by_topic.items()):
            for s in segments:
                if s.path not in kept_paths and self.fs.exists(s.path):
                    self.fs.remove(s.path)
            if topic_id not in keep or not keep[topic_id]:
                directory = self.topic_dir(topic_id)
                if self.fs.exists(directory) and not self.fs.listdir(directory):
                    self.fs.rmdir(directory)
        self.by_topic = {t: list(s) for t, s in keep.items() if s}
