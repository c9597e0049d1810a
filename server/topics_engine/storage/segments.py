"""Sealed segments: immutable per-topic record files, with in-place delete flags.

File ``segments/<topic-id>/<first-seq:020d>.seg``::

    header  b"TSEG" | u8 version (3) | u64 topic_id | u64 first_seq | u64 last_seq | u32 count
            | u32 chunk_count | u32 crc32(body)
    flags   u8[count]         1 = deleted (records in seq order across the chunks)
    body    chunk_count × record batch (``formats.encode_batch``)

The body is the engine's in-memory record batches as they were: loading a segment copies each
batch back without re-encoding a record. Seqs inside a chunk are consecutive; there may be gaps
between chunks. A segment is written once (temp file, fsync, rename, fsync of the directory)
and its body never changes. Deleting a sealed record flips its flag byte in place and fsyncs:
one byte, so a crash mid-flip leaves the old or the new value, never torn framing; the CRC
covers the body only, so either flag value reads back cleanly. The flag is an independent
witness of the delete that survives WAL trimming. A segment whose records are all gone is
dropped whole at the next checkpoint (after the snapshot that stops listing it is durable).

Versions (``versions.SEGMENT``): this server writes and reads version 3 only. A file of another
version raises ``versions.UnsupportedFormat`` (the server does not start), never
:class:`CorruptSegment` (whose records recovery would give up as lost).

:class:`SegmentStore` is owned by the segment thread: the event loop reaches it only through
ordered tasks, so a flip always follows the durable WAL ``DELETE`` frame it witnesses.
"""

from __future__ import annotations

import bisect
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .formats import RecordBatch, decode_batch, encode_batch
from .fs import FileSystem
from .versions import SEGMENT

MAGIC = b"TSEG"
VERSION = SEGMENT.current
HEADER = struct.Struct("<4sBQQQIII")
VERSION_HEAD = 5
"""Bytes that name a segment's format: the magic and the version byte."""


class CorruptSegment(Exception):
    pass


def segment_name(first_seq: int) -> str:
    return f"{first_seq:020d}.seg"


@dataclass
class Segment:
    """Where a sealed segment's records are: per chunk, its first seq, size and the ordinal of
    its first record among the segment's flags."""

    path: Path
    first_seq: int
    last_seq: int
    chunk_firsts: list[int] = field(default_factory=list)
    chunk_counts: list[int] = field(default_factory=list)
    chunk_ordinals: list[int] = field(default_factory=list)
    flags: bytearray = field(default_factory=bytearray)
    """The delete flags as on disk, one per record (1 = gone): a flip sets only a clear one."""
    deleted: int = 0
    """How many flags are set; the segment holds no live record once it reaches :attr:`size`."""

    @property
    def size(self) -> int:
        return sum(self.chunk_counts)

    def ordinal(self, seq: int) -> int | None:
        """The index of record ``seq`` among the segment's flags (``None``: not in it)."""
        k = bisect.bisect_right(self.chunk_firsts, seq) - 1
        if k < 0 or seq >= self.chunk_firsts[k] + self.chunk_counts[k]:
            return None
        return self.chunk_ordinals[k] + seq - self.chunk_firsts[k]


def _index(path: Path, batches: Sequence[RecordBatch], dead: bytes) -> Segment:
    segment = Segment(
        path, batches[0].first_seq, batches[-1].last_seq, flags=bytearray(dead), deleted=dead.count(1)
    )
    ordinal = 0
    for b in batches:
        segment.chunk_firsts.append(b.first_seq)
        segment.chunk_counts.append(b.count)
        segment.chunk_ordinals.append(ordinal)
        ordinal += b.count
    return segment


def encode_segment(topic_id: int, batches: Sequence[RecordBatch], dead: bytes) -> bytes:
    """The file bytes for ``batches`` (ascending seqs) with their delete flags."""
    body = b"".join(encode_batch(b) for b in batches)
    count = sum(b.count for b in batches)
    assert len(dead) == count
    header = HEADER.pack(
        MAGIC,
        VERSION,
        topic_id,
        batches[0].first_seq,
        batches[-1].last_seq,
        count,
        len(batches),
        zlib.crc32(body),
    )
    return b"".join((header, dead, body))


@dataclass(slots=True)
class LoadedSegment:
    topic_id: int
    batches: list[RecordBatch]
    dead: bytes
    """One flag per record, in seq order across the batches (1 = deleted)."""


def segment_version(head: bytes) -> int | None:
    """The format version named by a segment file's first :data:`VERSION_HEAD` bytes (``None``:
    no segment magic — a corrupt file, for the loader to report)."""
    if len(head) < VERSION_HEAD or head[:4] != MAGIC:
        return None
    return head[4]


def decode_segment(buf: bytes, path: Path | None = None) -> LoadedSegment:
    """Parse a segment file; raises :class:`CorruptSegment`, or ``UnsupportedFormat`` for a
    version this server does not read (``path`` names the file in that message)."""
    version = segment_version(buf[:VERSION_HEAD])
    if version is not None:
        SEGMENT.check(path or Path("segment"), version)
    if len(buf) < HEADER.size:
        raise CorruptSegment("truncated header")
    magic, _version, topic_id, _first, _last, count, n_chunks, crc = HEADER.unpack_from(buf)
    if magic != MAGIC:
        raise CorruptSegment("bad magic")
    body_start = HEADER.size + count
    dead = buf[HEADER.size : body_start]
    if len(dead) != count or zlib.crc32(memoryview(buf)[body_start:]) != crc:
        raise CorruptSegment("checksum mismatch")
    batches = []
    pos = body_start
    view = memoryview(buf)
    try:
        for _ in range(n_chunks):
            batch, pos = decode_batch(view, pos)
            batches.append(batch)
    except (ValueError, struct.error) as err:
        raise CorruptSegment(f"bad record batch: {err}") from None
    if sum(b.count for b in batches) != count:
        raise CorruptSegment("record count mismatch")
    return LoadedSegment(topic_id, batches, bytes(dead))


class SegmentStore:
    """Segment-thread-owned index of every sealed segment: topic id -> segments by seq."""

    def __init__(self, fs: FileSystem, directory: Path) -> None:
        self.fs = fs
        self.directory = directory
        self.by_topic: dict[int, list[Segment]] = {}

    def topic_dir(self, topic_id: int) -> Path:
        return self.directory / str(topic_id)

    def add_loaded(self, topic_id: int, path: Path, loaded: LoadedSegment) -> None:
        segment = _index(path, loaded.batches, loaded.dead)
        self.by_topic.setdefault(topic_id, []).append(segment)

    def seal(self, topic_id: int, batches: Sequence[RecordBatch], dead: bytes) -> Segment:
        """Write ``batches`` as a new sealed segment (atomically) and index it."""
        data = encode_segment(topic_id, batches, dead)
        directory = self.topic_dir(topic_id)
        if not self.fs.exists(directory):
            self.fs.makedirs(directory)
            self.fs.fsync_dir(self.directory)
        path = directory / segment_name(batches[0].first_seq)
        self.fs.write_atomic(path, data)
        segment = _index(path, batches, dead)
        self.by_topic.setdefault(topic_id, []).append(segment)
        return segment

    def flip_deleted(self, topic_id: int, seqs: Iterable[int]) -> None:
        """Set the delete flag of each sealed record among ``seqs`` and fsync the files.

        Idempotent per record: a flag already set is neither written nor counted again, so a
        seq reported twice (by two deletes, or in two checkpoints) never makes a segment look
        wholly deleted while a record in it is live."""
        segments = self.by_topic.get(topic_id, [])
        firsts = [s.first_seq for s in segments]
        fds: dict[Path, int] = {}
        try:
            for seq in seqs:
                i = bisect.bisect_right(firsts, seq) - 1
                if i < 0 or seq > segments[i].last_seq:
                    continue
                segment = segments[i]
                ordinal = segment.ordinal(seq)
                if ordinal is None or segment.flags[ordinal]:
                    continue
                if segment.path not in fds:
                    fds[segment.path] = self.fs.open_rw(segment.path)
                self.fs.pwrite(fds[segment.path], b"\x01", HEADER.size + ordinal)
                segment.flags[ordinal] = 1
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
