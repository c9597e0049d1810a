"""Sealed segments: immutable per-topic record files, with in-place delete flags.

File ``segments/<topic-id>/<first-seq:020d>.seg``, version 4 (little-endian)::

    header  b"TSEG" | u8 version (4) | u64 topic_id | u64 first_seq | u64 last_seq | u32 count
            | u32 chunk_count | u32 index_len | u32 crc32(index)
    flags   u8[count]         1 = deleted (records in seq order across the chunks)
    index   chunk_count × entry (:class:`ChunkIndex`):
              u64 first_seq | u32 count | u64 offset | u32 length | u32 crc32(chunk)
              | u16 ts_run_count | ts_run_count × (u32 ordinal | i64 ts) | u32[count] ends
              | u8 has_tags | [has_tags: u16[count] tag_len (0xFFFF = no tag) + tag bytes]
    body    chunk_count × record batch (``formats.encode_batch``), back to back; ``offset`` is
            a chunk's file offset, ``length`` its size

``header + flags + index`` is one contiguous read at the start of the file: opening a segment
(:func:`read_segment_index`) never reads a record byte, and a chunk is read alone
(:func:`read_chunk`, checked against its own CRC). The index keeps what accounting needs in
memory without the records: each record's size (``ends``), ``$ts`` runs and tags.

The body is the engine's in-memory record batches as they were: loading a chunk copies the
batch back without re-encoding a record. Seqs inside a chunk are consecutive; there may be gaps
between chunks. A segment is written once (temp file, fsync, rename, fsync of the directory)
and its index and body never change. Deleting a sealed record flips its flag byte in place and
fsyncs: one byte, so a crash mid-flip leaves the old or the new value, never torn framing; no
CRC covers the flags, so either flag value reads back cleanly. The flag is an independent
witness of the delete that survives WAL trimming. A segment whose records are all gone is
dropped whole at the next checkpoint (after the snapshot that stops listing it is durable).

Versions (``versions.SEGMENT``): this server writes version 4 and reads 3 and 4. Version 3 is
``header (as above without index_len and the index CRC; its last u32 is crc32(body)) | flags |
body``, no index: opening one reads the whole file once (recovery), checks the body CRC and
derives the same :class:`ChunkIndex` values from the decoded batches (``crc`` ``None``). A file
of another version raises ``versions.UnsupportedFormat`` (the server does not start), never
:class:`CorruptSegment` (whose records recovery would give up as lost).

:class:`SegmentStore` is owned by the segment thread: the event loop reaches it only through
ordered tasks, so a flip always follows the durable WAL ``DELETE`` frame it witnesses.
"""

from __future__ import annotations

import bisect
import struct
import sys
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .checksum import crc32
from .formats import NONE16, RecordBatch, decode_batch, encode_batch, load_column
from .fs import FileSystem
from .versions import SEGMENT

MAGIC = b"TSEG"
VERSION = SEGMENT.current
HEADER = struct.Struct("<4sBQQQIIII")
"""The version 4 header: magic, version, topic_id, first_seq, last_seq, count, chunk_count,
index_len, crc32(index)."""
HEADER_V3 = struct.Struct("<4sBQQQIII")
"""The version 3 header: magic, version, topic_id, first_seq, last_seq, count, chunk_count,
crc32(body)."""
VERSION_HEAD = 5
"""Bytes that name a segment's format: the magic and the version byte."""

_ENTRY = struct.Struct("<QIQIIH")
_TS_RUN = struct.Struct("<Iq")
_LITTLE = sys.byteorder == "little"


class CorruptSegment(Exception):
    pass


def segment_name(first_seq: int) -> str:
    return f"{first_seq:020d}.seg"


@dataclass(slots=True)
class ChunkIndex:
    """Where one chunk (an encoded record batch) of a segment is, and what must stay in memory
    to account its records without reading them."""

    first_seq: int
    count: int
    offset: int
    """File offset of the chunk's encoded batch."""
    length: int
    """Its length in bytes."""
    crc: int | None
    """crc32 of those bytes (v4); ``None`` for a v3 file (its body CRC was checked when the
    index was read)."""
    ends: array[int]
    """Typecode ``"I"``, as ``RecordBatch.ends``."""
    ts_runs: list[tuple[int, int]]
    tags: list[str | None] | None
    """Per record; ``None`` when no record of the chunk has a tag."""


@dataclass
class Segment:
    """Where a sealed segment's records are: per chunk, its first seq, size, the ordinal of its
    first record among the segment's flags, and where its bytes are in the file."""

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
    flags_at: int = HEADER.size
    """File offset of the flags region (the header's size of the file's version)."""
    chunk_offsets: list[int] = field(default_factory=list)
    """Per chunk (parallel to :attr:`chunk_firsts`): file offset of its encoded batch."""
    chunk_lengths: list[int] = field(default_factory=list)
    chunk_crcs: list[int | None] = field(default_factory=list)
    """Per chunk: crc32 of its bytes (``None`` in a version 3 file)."""

    @property
    def size(self) -> int:
        return sum(self.chunk_counts)

    def ordinal(self, seq: int) -> int | None:
        """The index of record ``seq`` among the segment's flags (``None``: not in it)."""
        k = bisect.bisect_right(self.chunk_firsts, seq) - 1
        if k < 0 or seq >= self.chunk_firsts[k] + self.chunk_counts[k]:
            return None
        return self.chunk_ordinals[k] + seq - self.chunk_firsts[k]


@dataclass(slots=True)
class SegmentIndex:
    """A segment file opened without its records (:func:`read_segment_index`)."""

    topic_id: int
    segment: Segment
    chunks: list[ChunkIndex]
    dead: bytes
    """The flags as on disk."""


@dataclass(slots=True)
class LoadedSegment:
    """A whole segment file read (:func:`decode_segment`)."""

    topic_id: int
    batches: list[RecordBatch]
    dead: bytes
    """One flag per record, in seq order across the batches (1 = deleted)."""
    chunks: list[ChunkIndex] = field(default_factory=list)
    flags_at: int = HEADER.size


def _segment(
    path: Path, first_seq: int, last_seq: int, chunks: Sequence[ChunkIndex], dead: bytes, flags_at: int
) -> Segment:
    segment = Segment(
        path, first_seq, last_seq, flags=bytearray(dead), deleted=dead.count(1), flags_at=flags_at
    )
    ordinal = 0
    for c in chunks:
        segment.chunk_firsts.append(c.first_seq)
        segment.chunk_counts.append(c.count)
        segment.chunk_ordinals.append(ordinal)
        segment.chunk_offsets.append(c.offset)
        segment.chunk_lengths.append(c.length)
        segment.chunk_crcs.append(c.crc)
        ordinal += c.count
    return segment


# -- writing -----------------------------------------------------------------------------------


def _column_bytes(typecode: str, values: array[int]) -> bytes:
    a = values if values.typecode == typecode else array(typecode, values)
    if _LITTLE:
        return a.tobytes()
    swapped = array(typecode, a)
    swapped.byteswap()
    return swapped.tobytes()


def _entry_tail(batch: RecordBatch) -> bytes:
    """An index entry after its fixed part: ts runs, ends and tags."""
    parts = [_TS_RUN.pack(o, ts) for o, ts in batch.ts_runs]
    parts.append(_column_bytes("I", batch.ends))
    if batch.tags is None:
        parts.append(b"\x00")
    else:
        encoded = [None if t is None else t.encode() for t in batch.tags]
        lens = array("H", (NONE16 if t is None else len(t) for t in encoded))
        parts += [b"\x01", _column_bytes("H", lens), *(t for t in encoded if t is not None)]
    return b"".join(parts)


def _encode(topic_id: int, batches: Sequence[RecordBatch], dead: bytes) -> tuple[bytes, list[ChunkIndex]]:
    if not batches:
        raise ValueError("a segment holds at least one record batch")
    count = sum(b.count for b in batches)
    if len(dead) != count:
        raise ValueError(f"{len(dead)} delete flags for {count} records")
    bodies = [encode_batch(b) for b in batches]
    tails = [_entry_tail(b) for b in batches]
    index_len = sum(_ENTRY.size + len(t) for t in tails)
    offset = HEADER.size + count + index_len
    chunks = []
    entries = []
    for batch, body, tail in zip(batches, bodies, tails, strict=True):
        crc = crc32(body)
        runs = [(o, ts) for o, ts in batch.ts_runs]
        tags = None if batch.tags is None else list(batch.tags)
        chunks.append(
            ChunkIndex(
                batch.first_seq, batch.count, offset, len(body), crc, array("I", batch.ends), runs, tags
            )
        )
        entries.append(_ENTRY.pack(batch.first_seq, batch.count, offset, len(body), crc, len(runs)))
        entries.append(tail)
        offset += len(body)
    index = b"".join(entries)
    assert len(index) == index_len
    header = HEADER.pack(
        MAGIC,
        VERSION,
        topic_id,
        batches[0].first_seq,
        batches[-1].last_seq,
        count,
        len(batches),
        index_len,
        crc32(index),
    )
    return b"".join((header, dead, index, *bodies)), chunks


def encode_segment(topic_id: int, batches: Sequence[RecordBatch], dead: bytes) -> bytes:
    """The file bytes (version 4) for ``batches`` (ascending seqs) with their delete flags."""
    return _encode(topic_id, batches, dead)[0]


# -- reading -----------------------------------------------------------------------------------


def segment_version(head: bytes) -> int | None:
    """The format version named by a segment file's first :data:`VERSION_HEAD` bytes (``None``:
    no segment magic — a corrupt file, for the loader to report)."""
    if len(head) < VERSION_HEAD or head[:4] != MAGIC:
        return None
    return head[4]


def _version(head: bytes | memoryview, path: Path | None) -> int:
    """The file's version, checked readable (``UnsupportedFormat``), or :class:`CorruptSegment`
    for no magic."""
    version = segment_version(bytes(head[:VERSION_HEAD]))
    if version is not None:
        SEGMENT.check(path or Path("segment"), version)
    if len(head) < VERSION_HEAD:
        raise CorruptSegment("truncated header")
    if version is None:
        raise CorruptSegment("bad magic")
    return version


def _chunk_of(batch: RecordBatch, offset: int, length: int, crc: int | None) -> ChunkIndex:
    runs = [(o, ts) for o, ts in batch.ts_runs]
    return ChunkIndex(batch.first_seq, batch.count, offset, length, crc, batch.ends, runs, batch.tags)


def _read_v3(buf: bytes) -> tuple[int, int, int, bytes, list[RecordBatch], list[ChunkIndex]]:
    """A whole version 3 file: topic_id, first and last seq, flags, batches, chunks."""
    if len(buf) < HEADER_V3.size:
        raise CorruptSegment("truncated header")
    _magic, _version, topic_id, first, last, count, n_chunks, crc = HEADER_V3.unpack_from(buf)
    body_start = HEADER_V3.size + count
    dead = buf[HEADER_V3.size : body_start]
    view = memoryview(buf)
    if len(dead) != count or crc32(view[body_start:]) != crc:
        raise CorruptSegment("checksum mismatch")
    batches = []
    chunks = []
    pos = body_start
    try:
        for _ in range(n_chunks):
            batch, end = decode_batch(view, pos)
            batches.append(batch)
            chunks.append(_chunk_of(batch, pos, end - pos, None))
            pos = end
    except (ValueError, struct.error) as err:
        raise CorruptSegment(f"bad record batch: {err}") from None
    if sum(b.count for b in batches) != count:
        raise CorruptSegment("record count mismatch")
    if batches:
        first, last = batches[0].first_seq, batches[-1].last_seq
    return topic_id, first, last, bytes(dead), batches, chunks


def _v4_header(buf: bytes | memoryview) -> tuple[int, int, int, int, int, int, int]:
    """topic_id, first_seq, last_seq, count, chunk_count, index_len, index_crc."""
    if len(buf) < HEADER.size:
        raise CorruptSegment("truncated header")
    _magic, _version, *fields = HEADER.unpack_from(buf)
    topic_id, first, last, count, n_chunks, index_len, index_crc = fields
    return topic_id, first, last, count, n_chunks, index_len, index_crc


def _read_v4_index(buf: bytes | memoryview) -> tuple[int, int, int, bytes, list[ChunkIndex]]:
    """Version 4 ``header + flags + index`` (``buf`` may go on past them): topic_id, first and
    last seq, flags and chunks. The chunks are checked to add up (seqs ascending, counts summing
    to the header's, offsets back to back from the end of the index) — not read."""
    topic_id, first, last, count, n_chunks, index_len, index_crc = _v4_header(buf)
    index_at = HEADER.size + count
    end = index_at + index_len
    if len(buf) < end:
        raise CorruptSegment("truncated index")
    view = memoryview(buf)
    if crc32(view[index_at:end]) != index_crc:
        raise CorruptSegment("index checksum mismatch")
    if n_chunks == 0:
        raise CorruptSegment("no chunks")
    chunks = []
    pos = index_at
    offset = end
    total = 0
    prev_end = first
    try:
        for _ in range(n_chunks):
            c_first, c_count, c_offset, c_length, c_crc, n_runs = _ENTRY.unpack_from(view, pos)
            pos += _ENTRY.size
            runs = []
            for _ in range(n_runs):
                o, ts = _TS_RUN.unpack_from(view, pos)
                runs.append((o, ts))
                pos += _TS_RUN.size
            ends, pos = load_column("I", view, pos, c_count)
            has_tags = view[pos]
            pos += 1
            tags: list[str | None] | None = None
            if has_tags:
                tags, pos = _decode_strings(view, pos, c_count, end)
            if pos > end or len(ends) != c_count or has_tags > 1:
                raise CorruptSegment("bad index entry")
            if c_offset != offset or c_first < prev_end:
                raise CorruptSegment("chunks out of place")
            chunks.append(ChunkIndex(c_first, c_count, c_offset, c_length, c_crc, ends, runs, tags))
            offset += c_length
            total += c_count
            prev_end = c_first + c_count
    except (ValueError, IndexError, struct.error, UnicodeDecodeError) as err:
        raise CorruptSegment(f"bad index: {err}") from None
    if pos != end:
        raise CorruptSegment("index length mismatch")
    if total != count:
        raise CorruptSegment("record count mismatch")
    if chunks[0].first_seq != first or prev_end - 1 != last:
        raise CorruptSegment("seq range mismatch")
    return topic_id, first, last, bytes(view[HEADER.size : index_at]), chunks


def _decode_strings(buf: memoryview, pos: int, n: int, limit: int) -> tuple[list[str | None], int]:
    lens, pos = load_column("H", buf, pos, n)
    if len(lens) != n:
        raise ValueError("truncated tag lengths")
    out: list[str | None] = []
    for length in lens:
        if length == NONE16:
            out.append(None)
        else:
            if pos + length > limit:
                raise ValueError("truncated tag")
            out.append(bytes(buf[pos : pos + length]).decode())
            pos += length
    return out, pos


def _body_end(chunks: Sequence[ChunkIndex]) -> int:
    return chunks[-1].offset + chunks[-1].length


def read_segment_index(fs: FileSystem, path: Path) -> SegmentIndex:
    """Open a segment without reading its records: a version 4 file's ``header + flags +
    index`` only (its index CRC checked, its size compared with the index's); a version 3 file
    whole (its body CRC checked). Raises :class:`CorruptSegment`, or ``UnsupportedFormat`` for
    a version this server does not read."""
    head = fs.read_head(path, HEADER.size)
    version = _version(head, path)
    if version == 3:
        topic_id, first, last, dead, _batches, chunks = _read_v3(fs.read_bytes(path))
        flags_at = HEADER_V3.size
    else:
        _topic_id, _first, _last, count, _n, index_len, _crc = _v4_header(head)
        buf = head + fs.pread(path, HEADER.size, count + index_len)
        topic_id, first, last, dead, chunks = _read_v4_index(buf)
        if fs.size(path) != _body_end(chunks):
            raise CorruptSegment("file size does not match the index")
        flags_at = HEADER.size
    return SegmentIndex(topic_id, _segment(path, first, last, chunks, dead, flags_at), chunks, dead)


def _decode_chunk(data: bytes | memoryview, crc: int | None) -> RecordBatch:
    if crc is not None and crc32(data) != crc:
        raise CorruptSegment("chunk checksum mismatch")
    try:
        batch, end = decode_batch(data, 0)
    except (ValueError, struct.error) as err:
        raise CorruptSegment(f"bad record batch: {err}") from None
    if end != len(data):
        raise CorruptSegment("chunk length mismatch")
    return batch


def read_chunk(fs: FileSystem, path: Path, offset: int, length: int, crc: int | None) -> RecordBatch:
    """The record batch of the chunk at ``offset`` (``length`` bytes; ``crc`` checked unless
    ``None``); raises :class:`CorruptSegment` when the file is short, the CRC differs or the
    bytes are not exactly one batch."""
    data = fs.pread(path, offset, length)
    if len(data) != length:
        raise CorruptSegment(f"short chunk: {len(data)} of {length} bytes at {offset}")
    return _decode_chunk(data, crc)


def read_chunk_cached(
    fs: FileSystem, path: Path, offset: int, length: int, crc: int | None, scratch: bytearray
) -> RecordBatch | None:
    """:func:`read_chunk` if the chunk's bytes are all in the page cache now (the read never
    waits for the disk), else ``None``. ``scratch`` holds the bytes while they are decoded (the
    batch copies what it keeps), so one buffer serves every such read."""
    data = fs.pread_cached(path, offset, length, scratch)
    return None if data is None else _decode_chunk(data, crc)


def decode_segment(buf: bytes, path: Path | None = None) -> LoadedSegment:
    """Parse a whole segment file (version 3 or 4); raises :class:`CorruptSegment`, or
    ``UnsupportedFormat`` for a version this server does not read (``path`` names the file in
    that message)."""
    version = _version(buf[:VERSION_HEAD], path)
    if version == 3:
        topic_id, _first, _last, dead, batches, chunks = _read_v3(buf)
        return LoadedSegment(topic_id, batches, dead, chunks, HEADER_V3.size)
    topic_id, _first, _last, dead, chunks = _read_v4_index(buf)
    if len(buf) != _body_end(chunks):
        raise CorruptSegment("file size does not match the index")
    view = memoryview(buf)
    batches = [_decode_chunk(view[c.offset : c.offset + c.length], c.crc) for c in chunks]
    return LoadedSegment(topic_id, batches, dead, chunks, HEADER.size)


class SegmentStore:
    """Segment-thread-owned index of every sealed segment: topic id -> segments by seq."""

    def __init__(self, fs: FileSystem, directory: Path) -> None:
        self.fs = fs
        self.directory = directory
        self.by_topic: dict[int, list[Segment]] = {}

    def topic_dir(self, topic_id: int) -> Path:
        return self.directory / str(topic_id)

    def add(self, topic_id: int, segment: Segment) -> None:
        """Index a segment read at recovery (``SegmentIndex.segment``), after those before it."""
        self.by_topic.setdefault(topic_id, []).append(segment)

    def seal(self, topic_id: int, batches: Sequence[RecordBatch], dead: bytes) -> Segment:
        """Write ``batches`` as a new sealed segment (version 4, atomically) and index it."""
        data, chunks = _encode(topic_id, batches, dead)
        directory = self.topic_dir(topic_id)
        if not self.fs.exists(directory):
            self.fs.makedirs(directory)
            self.fs.fsync_dir(self.directory)
        path = directory / segment_name(batches[0].first_seq)
        self.fs.write_atomic(path, data)
        segment = _segment(path, batches[0].first_seq, batches[-1].last_seq, chunks, dead, HEADER.size)
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
                self.fs.pwrite(fds[segment.path], b"\x01", segment.flags_at + ordinal)
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
