"""Segment files, version 4: a chunk index read without the records, chunks read one at a time.

- :func:`read_segment_index` gives, per chunk, where its bytes are and what accounting needs
  (``ends``, ``ts_runs``, tags) — reading only ``header + flags + index`` of a version 4 file;
  :func:`read_chunk` gives back each batch exactly.
- Damage is :class:`CorruptSegment` (index, body, short file); an unknown version is
  ``UnsupportedFormat``.
- Version 3 files (whole-body CRC, no index) still open, with the same index values (``crc``
  ``None``), and their flags flip in place like version 4's.
"""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Sequence
from pathlib import Path

import orjson
import pytest
from topics_engine.records import NewRecords, encode
from topics_engine.storage.formats import RecordBatch, encode_batch
from topics_engine.storage.fs import FileSystem
from topics_engine.storage.segments import (
    HEADER,
    HEADER_V3,
    MAGIC,
    ChunkIndex,
    CorruptSegment,
    SegmentStore,
    decode_segment,
    encode_segment,
    read_chunk,
    read_segment_index,
)
from topics_engine.storage.versions import UnsupportedFormat

GOLDEN = Path(__file__).parent / "golden" / "v1" / "datadir" / "segments"


def batch(
    first_seq: int, ts: int, rows: Sequence[tuple[object, str | None, str | None, object]]
) -> RecordBatch:
    datas = [orjson.dumps(d) for d, _, _, _ in rows]
    tags = [t for _, t, _, _ in rows]
    nodes = [n for _, _, n, _ in rows]
    metas = [None if m is None else orjson.dumps(m) for _, _, _, m in rows]
    return encode(
        NewRecords(
            datas,
            tags if any(t is not None for t in tags) else None,
            nodes if any(n is not None for n in nodes) else None,
            metas if any(m is not None for m in metas) else None,
        ),
        first_seq,
        ts,
    )


def batches() -> list[RecordBatch]:
    plain = batch(10, 1000, [(i, None, None, None) for i in range(3)])
    tagged = batch(13, 2000, [(1, "t", None, None), (2, None, "n", {"k": 1}), ("x", "ü-tag", None, None)])
    meta = batch(20, 3000, [({"a": [1, 2]}, None, "node", {"m": True})])
    # two $ts runs in one chunk (as a merge of writes leaves them)
    runs = RecordBatch(meta.first_seq + 5, plain.blob, plain.ends, plain.data_at, [(0, 4000), (2, 4500)])
    return [plain, tagged, meta, runs]


def fields(b: RecordBatch) -> tuple[object, ...]:
    def col(a: array[int] | None) -> list[int] | None:
        return None if a is None else list(a)

    return (
        b.first_seq,
        b.count,
        b.blob,
        col(b.ends),
        col(b.data_at),
        [tuple(r) for r in b.ts_runs],
        col(b.tag_at),
        b.tags,
        b.nodes,
        col(b.meta_at),
    )


def seal(
    tmp_path: Path, bs: Sequence[RecordBatch], dead: bytes, fs: FileSystem | None = None
) -> SegmentStore:
    store = SegmentStore(fs or FileSystem(), tmp_path / "segments")
    store.seal(7, bs, dead)
    return store


def dead_for(bs: Sequence[RecordBatch]) -> bytes:
    n = sum(b.count for b in bs)
    return bytes(i % 3 == 1 for i in range(n))


class RecordingFS(FileSystem):
    """Records every byte range read from a file: ``(offset, length)``; whole reads as ``-1``."""

    def __init__(self) -> None:
        self.reads: list[tuple[int, int]] = []

    def read_bytes(self, path: Path) -> bytes:
        self.reads.append((0, -1))
        return super().read_bytes(path)

    def read_head(self, path: Path, n: int) -> bytes:
        self.reads.append((0, n))
        return super().read_head(path, n)

    def pread(self, path: Path, offset: int, length: int) -> bytes:
        self.reads.append((offset, length))
        return super().pread(path, offset, length)


def test_round_trip_gives_the_index_the_chunks_and_the_flags(tmp_path: Path) -> None:
    bs = batches()
    dead = dead_for(bs)
    store = seal(tmp_path, bs, dead)
    (segment,) = store.by_topic[7]
    index = read_segment_index(FileSystem(), segment.path)

    assert index.topic_id == 7 and index.dead == dead
    assert [(c.first_seq, c.count, list(c.ends), c.ts_runs, c.tags) for c in index.chunks] == [
        (b.first_seq, b.count, list(b.ends), [tuple(r) for r in b.ts_runs], b.tags) for b in bs
    ]
    raw = segment.path.read_bytes()
    for c, b in zip(index.chunks, bs, strict=True):
        assert isinstance(c, ChunkIndex) and c.ends.typecode == "I"
        assert raw[c.offset : c.offset + c.length] == encode_batch(b)
        assert c.crc == zlib.crc32(encode_batch(b))
        assert fields(read_chunk(FileSystem(), segment.path, c.offset, c.length, c.crc)) == fields(b)
    assert index.chunks[-1].offset + index.chunks[-1].length == len(raw)

    # the sealed Segment and the one read back agree
    read = index.segment
    assert (read.path, read.first_seq, read.last_seq) == (segment.path, 10, bs[-1].last_seq)
    for name in (
        "chunk_firsts",
        "chunk_counts",
        "chunk_ordinals",
        "flags",
        "deleted",
        "flags_at",
        "chunk_offsets",
        "chunk_lengths",
        "chunk_crcs",
    ):
        assert getattr(read, name) == getattr(segment, name), name
    assert read.flags_at == HEADER.size and read.deleted == dead.count(1)
    assert read.chunk_offsets == [c.offset for c in index.chunks]
    assert read.ordinal(13) == 3 and read.ordinal(19) is None and read.ordinal(25) == 7

    loaded = decode_segment(raw)
    assert loaded.dead == dead and [fields(b) for b in loaded.batches] == [fields(b) for b in bs]


def test_the_index_is_read_without_a_body_byte(tmp_path: Path) -> None:
    bs = batches()
    store = seal(tmp_path, bs, dead_for(bs))
    path = store.by_topic[7][0].path
    fs = RecordingFS()
    index = read_segment_index(fs, path)
    body_at = index.chunks[0].offset
    assert fs.reads and all(length >= 0 and offset + length <= body_at for offset, length in fs.reads)

    # garbage in the body: the index still reads, each chunk then fails its CRC
    raw = bytearray(path.read_bytes())
    raw[body_at:] = bytes(255 - x for x in raw[body_at:])
    path.write_bytes(bytes(raw))
    index = read_segment_index(FileSystem(), path)
    for c in index.chunks:
        with pytest.raises(CorruptSegment):
            read_chunk(FileSystem(), path, c.offset, c.length, c.crc)


def test_damage_is_a_corrupt_segment(tmp_path: Path) -> None:
    bs = batches()
    store = seal(tmp_path, bs, dead_for(bs))
    path = store.by_topic[7][0].path
    good = path.read_bytes()
    chunks = read_segment_index(FileSystem(), path).chunks
    index_at = HEADER.size + sum(b.count for b in bs)
    fs = FileSystem()

    def damaged(raw: bytes) -> Path:
        path.write_bytes(raw)
        return path

    for at in (index_at, index_at + 20, chunks[0].offset - 1):  # a flipped index byte
        raw = bytearray(good)
        raw[at] ^= 0x40
        with pytest.raises(CorruptSegment):
            read_segment_index(fs, damaged(bytes(raw)))
        with pytest.raises(CorruptSegment):
            decode_segment(bytes(raw))

    c = chunks[1]  # a flipped body byte: the index reads, that chunk does not
    raw = bytearray(good)
    raw[c.offset + c.length // 2] ^= 0x01
    read_segment_index(fs, damaged(bytes(raw)))
    with pytest.raises(CorruptSegment):
        read_chunk(fs, path, c.offset, c.length, c.crc)
    read_chunk(fs, path, chunks[0].offset, chunks[0].length, chunks[0].crc)
    with pytest.raises(CorruptSegment):
        decode_segment(bytes(raw))

    # a chunk read at the wrong place or length does not decode to exactly its bytes
    path.write_bytes(good)
    with pytest.raises(CorruptSegment):
        read_chunk(fs, path, c.offset, c.length - 1, None)
    with pytest.raises(CorruptSegment):
        read_chunk(fs, path, c.offset, c.length + 1, None)

    for size in (0, 3, HEADER.size - 1, index_at + 5, chunks[0].offset, len(good) - 1):  # short
        with pytest.raises(CorruptSegment):
            read_segment_index(fs, damaged(good[:size]))
        with pytest.raises(CorruptSegment):
            decode_segment(good[:size])
    path.write_bytes(good[:-1])
    with pytest.raises(CorruptSegment):
        read_chunk(fs, path, chunks[-1].offset, chunks[-1].length, chunks[-1].crc)

    with pytest.raises(CorruptSegment):  # bad magic
        read_segment_index(fs, damaged(b"XSEG" + good[4:]))

    newer = good[:4] + bytes((5,)) + good[5:]
    with pytest.raises(UnsupportedFormat, match="version 5 is newer"):
        read_segment_index(fs, damaged(newer))
    with pytest.raises(UnsupportedFormat, match="version 5 is newer"):
        read_segment_index(fs, damaged(newer[: HEADER.size]))
    with pytest.raises(UnsupportedFormat):
        decode_segment(newer)
    with pytest.raises(UnsupportedFormat, match="older"):
        read_segment_index(fs, damaged(good[:4] + bytes((2,)) + good[5:]))


def encode_v3(topic_id: int, bs: Sequence[RecordBatch], dead: bytes) -> bytes:
    """A version 3 file, as servers before version 4 wrote it."""
    body = b"".join(encode_batch(b) for b in bs)
    count = sum(b.count for b in bs)
    header = HEADER_V3.pack(
        MAGIC, 3, topic_id, bs[0].first_seq, bs[-1].last_seq, count, len(bs), zlib.crc32(body)
    )
    return header + dead + body


def test_a_version_3_file_reads_with_the_same_index(tmp_path: Path) -> None:
    bs = batches()
    dead = dead_for(bs)
    v4 = seal(tmp_path / "v4", bs, dead).by_topic[7][0]
    path = tmp_path / "v3.seg"
    path.write_bytes(encode_v3(7, bs, dead))
    index = read_segment_index(FileSystem(), path)
    v4_index = read_segment_index(FileSystem(), v4.path)
    assert index.topic_id == 7 and index.dead == dead
    assert index.segment.flags_at == HEADER_V3.size
    offset = HEADER_V3.size + len(dead)
    for c, c4, b in zip(index.chunks, v4_index.chunks, bs, strict=True):
        assert c.crc is None and c.offset == offset and c.length == len(encode_batch(b))
        assert (c.first_seq, c.count, list(c.ends), c.ts_runs, c.tags) == (
            c4.first_seq,
            c4.count,
            list(c4.ends),
            c4.ts_runs,
            c4.tags,
        )
        assert fields(read_chunk(FileSystem(), path, c.offset, c.length, c.crc)) == fields(b)
        offset += c.length
    assert index.segment.chunk_crcs == [None] * len(bs)
    assert index.segment.chunk_firsts == v4.chunk_firsts and index.segment.chunk_ordinals == v4.chunk_ordinals
    assert decode_segment(path.read_bytes()).flags_at == HEADER_V3.size

    raw = bytearray(path.read_bytes())  # the body CRC still guards a version 3 file
    raw[-2] ^= 0x01
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptSegment):
        read_segment_index(FileSystem(), path)


def test_golden_version_3_segments_read_as_decode_segment_does() -> None:
    paths = sorted(GOLDEN.glob("*/*.seg"))
    assert paths
    for path in paths:
        raw = path.read_bytes()
        assert raw[4] == 3
        loaded = decode_segment(raw, path)
        index = read_segment_index(FileSystem(), path)
        assert index.topic_id == loaded.topic_id == int(path.parent.name)
        assert index.dead == loaded.dead
        assert index.segment.first_seq == loaded.batches[0].first_seq
        assert index.segment.last_seq == loaded.batches[-1].last_seq
        for c, b in zip(index.chunks, loaded.batches, strict=True):
            assert fields(read_chunk(FileSystem(), path, c.offset, c.length, c.crc)) == fields(b)


@pytest.mark.parametrize("version", [3, 4])
def test_flip_deleted_flips_the_right_byte(tmp_path: Path, version: int) -> None:
    bs = batches()
    dead = bytes(sum(b.count for b in bs))
    store = seal(tmp_path, bs, dead)
    path = store.by_topic[7][0].path
    if version == 3:
        path.write_bytes(encode_v3(7, bs, dead))
        store = SegmentStore(FileSystem(), tmp_path / "segments")
        store.add(7, read_segment_index(FileSystem(), path).segment)
    before = path.read_bytes()
    flags_at = HEADER_V3.size if version == 3 else HEADER.size
    assert store.by_topic[7][0].flags_at == flags_at

    store.flip_deleted(7, [11, 14, 20, 99, 11])
    index = read_segment_index(FileSystem(), path)
    want = bytearray(dead)
    for ordinal in (1, 4, 6):
        want[ordinal] = 1
    assert index.dead == bytes(want) and index.segment.deleted == 3
    after = path.read_bytes()
    assert [i for i in range(len(before)) if before[i] != after[i]] == [flags_at + o for o in (1, 4, 6)]
    assert store.by_topic[7][0].flags == want


def test_a_segment_opened_from_its_index_flips_at_its_versions_flags_offset(tmp_path: Path) -> None:
    """A segment recovery opens (``read_segment_index`` + ``SegmentStore.add``) flips the right
    byte in version 3 and version 4 files alike."""
    bs = batches()
    dead = bytes(sum(b.count for b in bs))
    (tmp_path / "7").mkdir()
    for version, data in ((3, encode_v3(7, bs, dead)), (4, encode_segment(7, bs, dead))):
        path = tmp_path / "7" / f"v{version}.seg"
        path.write_bytes(data)
        store = SegmentStore(FileSystem(), tmp_path)
        store.add(7, read_segment_index(FileSystem(), path).segment)
        store.flip_deleted(7, [13])
        assert read_segment_index(FileSystem(), path).dead == bytes(3) + b"\x01" + bytes(len(dead) - 4)


def test_pread_stops_at_the_end_of_the_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(bytes(range(10)))
    fs = FileSystem()
    assert fs.pread(path, 3, 4) == bytes((3, 4, 5, 6))
    assert fs.pread(path, 8, 10) == bytes((8, 9))
    assert fs.pread(path, 20, 10) == b""
