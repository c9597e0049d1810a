"""WAL frame codec: round trips, scan stopping at torn / corrupt frames, LSN continuity."""

from __future__ import annotations

import asyncio
import zlib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from topics_engine.records import PreparedRecord
from topics_engine.storage.formats import (
    decode_append,
    decode_delete,
    decode_seq_reserve,
    encode_append,
    encode_delete,
    encode_seq_reserve,
    to_ranges,
)
from topics_engine.storage.frames import FRAME_HEADER, FrameType, encode_frame, scan
from topics_engine.storage.fs import FileSystem
from topics_engine.storage.wal import Wal, wal_file_name, wal_files

U64 = st.integers(0, 2**64 - 1)
texts = st.text(max_size=40)  # unicode, including astral-plane characters
opt_text = st.none() | texts
json_bytes = st.binary(max_size=200)
records = st.builds(PreparedRecord, opt_text, opt_text, json_bytes, st.none() | json_bytes)


def fields(r: PreparedRecord | tuple[object, ...]) -> tuple[object, ...]:
    if isinstance(r, tuple):
        node, tag, data, meta = r
        return (node, tag, bytes(data), None if meta is None else bytes(meta))  # type: ignore[arg-type]
    return (r.node, r.tag, bytes(r.data_json), None if r.meta_json is None else bytes(r.meta_json))


@settings(max_examples=300, deadline=None)
@given(
    topic_id=U64,
    first_seq=U64,
    ts=st.integers(-(2**63), 2**63 - 1),
    batch=st.lists(records, min_size=1, max_size=8),
    key=opt_text,
)
def test_append_payload_round_trips(
    topic_id: int, first_seq: int, ts: int, batch: list[PreparedRecord], key: str | None
) -> None:
    decoded = decode_append(memoryview(encode_append(topic_id, first_seq, ts, batch, key)))
    assert (decoded.topic_id, decoded.first_seq, decoded.ts, decoded.key) == (topic_id, first_seq, ts, key)
    assert [fields(r) for r in decoded.records] == [fields(r) for r in batch]


def test_append_payload_keeps_empty_strings_distinct_from_none() -> None:
    batch = [PreparedRecord("", "", b"null", b""), PreparedRecord(None, None, b"1", None)]
    decoded = decode_append(memoryview(encode_append(1, 1, 0, batch, "")))
    assert decoded.key == ""
    assert [fields(r) for r in decoded.records] == [fields(r) for r in batch]


@given(st.lists(st.tuples(st.sampled_from(list(FrameType)), st.binary(max_size=64)), max_size=20), U64)
def test_frames_scan_back_in_order(frames: list[tuple[FrameType, bytes]], first_lsn: int) -> None:
    first_lsn %= 2**63
    buf = b"".join(encode_frame(t, first_lsn + i, p) for i, (t, p) in enumerate(frames))
    out = list(scan(buf))
    assert [(f.type, f.lsn, bytes(f.payload)) for f in out] == [
        (t, first_lsn + i, p) for i, (t, p) in enumerate(frames)
    ]
    assert (out[-1].end if out else 0) == len(buf)


def _three_frames() -> tuple[bytes, list[int]]:
    parts = [encode_frame(FrameType.APPEND, 7 + i, b"payload-%d" % i * (i + 1)) for i in range(3)]
    ends, pos = [], 0
    for p in parts:
        pos += len(p)
        ends.append(pos)
    return b"".join(parts), ends


def test_scan_stops_at_a_torn_frame_at_every_cut_point() -> None:
    buf, ends = _three_frames()
    for cut in range(len(buf) + 1):
        out = list(scan(buf[:cut]))
        complete = [e for e in ends if e <= cut]
        assert [f.end for f in out] == complete, cut
        assert [f.lsn for f in out] == [7 + i for i in range(len(complete))]


def test_scan_stops_at_a_corrupt_byte_anywhere_in_a_frame() -> None:
    buf, ends = _three_frames()
    starts = [0, *ends[:-1]]
    for pos in range(len(buf)):
        bad = bytearray(buf)
        bad[pos] ^= 0x5A
        out = list(scan(bytes(bad)))
        hit = next(i for i, (s, e) in enumerate(zip(starts, ends, strict=True)) if s <= pos < e)
        assert [f.lsn for f in out] == [7 + i for i in range(hit)], pos


def test_scan_rejects_an_unknown_frame_type_even_with_a_valid_crc() -> None:
    body = bytes([99]) + (5).to_bytes(8, "little") + b"x"
    bogus = FRAME_HEADER.pack(len(body), zlib.crc32(body)) + body
    good = encode_frame(FrameType.APPEND, 4, b"ok")
    assert [f.lsn for f in scan(good + bogus + encode_frame(FrameType.APPEND, 6, b""))] == [4]


def test_scan_treats_zero_fill_as_the_end() -> None:
    good = encode_frame(FrameType.DELETE, 1, b"abc")
    assert [f.lsn for f in scan(good + bytes(64))] == [1]


@given(st.lists(st.integers(1, 10_000), unique=True, max_size=50).map(sorted), U64)
def test_delete_payload_round_trips(seqs: list[int], topic_id: int) -> None:
    ranges = to_ranges(seqs)
    assert [s for a, b in ranges for s in range(a, b + 1)] == seqs
    assert all(b + 1 < c for (_, b), (c, _) in zip(ranges, ranges[1:], strict=False))
    assert decode_delete(memoryview(encode_delete(topic_id, ranges))) == (topic_id, ranges)


@given(U64, U64)
def test_pair_round_trips(a: int, b: int) -> None:
    assert decode_seq_reserve(memoryview(encode_seq_reserve(a, b))) == (a, b)


async def test_wal_lsns_are_continuous_across_rotated_files(tmp_path: Path) -> None:
    fs = FileSystem()
    wal = Wal(fs, tmp_path, asyncio.get_running_loop(), next_lsn=1, rotate_bytes=200)
    futures = []
    for i in range(60):
        lsn, fut = wal.submit(FrameType.APPEND, b"x" * (i % 13), wait=i % 7 == 0)
        assert lsn == i + 1
        if fut is not None:
            futures.append(fut)
    await asyncio.gather(*futures)
    await wal.run_task(lambda: None)
    assert wal.durable_lsn == 60
    wal.close()
    files = wal_files(fs, tmp_path)
    assert len(files) > 1
    expected = 1
    for first, path in files:
        assert path.name == wal_file_name(first)
        frames = list(scan(path.read_bytes()))
        if not frames:  # a freshly rotated, still empty last file
            assert (first, path) == files[-1] and path.stat().st_size == 0
            assert first == expected
            continue
        assert frames[0].lsn == first == expected
        assert [f.lsn for f in frames] == list(range(first, first + len(frames)))
        assert frames[-1].end == path.stat().st_size
        expected = frames[-1].lsn + 1
    assert expected == 61


async def test_wal_reopen_continues_the_last_file_at_next_lsn(tmp_path: Path) -> None:
    fs, loop = FileSystem(), asyncio.get_running_loop()
    wal = Wal(fs, tmp_path, loop, next_lsn=1)
    wal.submit(FrameType.APPEND, b"a")
    wal.close()
    wal = Wal(fs, tmp_path, loop, next_lsn=2)
    _, fut = wal.submit(FrameType.APPEND, b"b", wait=True)
    await fut
    wal.close()
    (files,) = [wal_files(fs, tmp_path)]
    assert len(files) == 1
    assert [(f.lsn, bytes(f.payload)) for f in scan(files[0][1].read_bytes())] == [(1, b"a"), (2, b"b")]
