"""WAL frame codec: round trips, scan stopping at torn / corrupt frames, LSN continuity."""

from __future__ import annotations

import asyncio
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topics_engine import _codec
from topics_engine.recordlog import merge_batches, slice_batch
from topics_engine.records import NewRecords, Record, encode, record_bytes
from topics_engine.storage.formats import (
    RecordBatch,
    append_head,
    decode_append,
    decode_batch,
    decode_delete,
    decode_seq_reserve,
    encode_append,
    encode_batch,
    encode_delete,
    encode_seq_reserve,
    to_ranges,
)
from topics_engine.storage.frames import FRAME_HEADER, FrameType, encode_frame, scan
from topics_engine.storage.fs import FileSystem
from topics_engine.storage.segments import decode_segment, encode_segment
from topics_engine.storage.versions import UnsupportedFormat
from topics_engine.storage.wal import Wal, wal_file_name, wal_files, wal_frames

U64 = st.integers(0, 2**64 - 1)
texts = st.text(max_size=40)  # unicode, including astral-plane characters
opt_text = st.none() | texts
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=10,
)
record_fields = st.tuples(
    json_values, opt_text, opt_text, st.none() | st.dictionaries(texts, json_values, max_size=3)
)


def new_records(rows: list[tuple[object, str | None, str | None, object]]) -> NewRecords:
    datas = [orjson.dumps(d) for d, _, _, _ in rows]
    tags = [t for _, t, _, _ in rows]
    nodes = [n for _, _, n, _ in rows]
    metas = [None if m is None else orjson.dumps(m) for _, _, _, m in rows]
    return NewRecords(
        datas,
        tags if any(t is not None for t in tags) else None,
        nodes if any(n is not None for n in nodes) else None,
        metas if any(m is not None for m in metas) else None,
    )


def served(batch: RecordBatch) -> list[dict[str, object]]:
    out: list[dict[str, object]] = orjson.loads(b"[" + batch.blob + b"]")
    return out


def same(a: RecordBatch, b: RecordBatch) -> bool:
    return (
        a.first_seq == b.first_seq
        and a.blob == b.blob
        and list(a.ends) == list(b.ends)
        and list(a.data_at) == list(b.data_at)
        and [tuple(r) for r in a.ts_runs] == [tuple(r) for r in b.ts_runs]
        and (a.tag_at is None) == (b.tag_at is None)
        and (a.tag_at is None or list(a.tag_at) == list(b.tag_at))  # type: ignore[arg-type]
        and a.tags == b.tags
        and a.nodes == b.nodes
        and (a.meta_at is None or list(a.meta_at) == list(b.meta_at))  # type: ignore[arg-type]
    )


@settings(max_examples=300, deadline=None)
@given(
    topic_id=U64,
    first_seq=st.integers(1, 2**63),
    ts=st.integers(0, 2**62),
    rows=st.lists(record_fields, min_size=1, max_size=8),
    key=opt_text,
)
def test_record_batches_encode_the_wire_form_and_round_trip(
    topic_id: int,
    first_seq: int,
    ts: int,
    rows: list[tuple[object, str | None, str | None, object]],
    key: str | None,
) -> None:
    batch = encode(new_records(rows), first_seq, ts)
    # the blob is the records exactly as served, key order $seq, $ts, $node, $tag, data, meta
    expected = []
    for i, (data, tag, node, meta) in enumerate(rows):
        obj: dict[str, object] = {"$seq": first_seq + i, "$ts": ts}
        if node is not None:
            obj["$node"] = node
        if tag is not None:
            obj["$tag"] = tag
        obj["data"] = data
        if meta is not None:
            obj["meta"] = meta
        expected.append(obj)
    assert served(batch) == expected
    assert [list(o) for o in served(batch)] == [list(o) for o in expected]
    # every variant a reader can ask for is a slice of the stored bytes
    for i in range(batch.count):
        for tags_ in (False, True):
            for meta_ in (False, True):
                for data_ in (False, True):
                    got = orjson.loads(record_bytes(batch, i, tags_, meta_, data_))
                    want = {
                        k: v
                        for k, v in expected[i].items()
                        if (k != "$tag" or tags_) and (k != "meta" or meta_) and (k != "data" or data_)
                    }
                    assert got == want
        r = Record(batch, i)
        assert (r.seq, r.ts, r.node, r.tag) == (first_seq + i, ts, rows[i][2], rows[i][1])
        assert orjson.loads(r.data_json) == rows[i][0]
        assert (r.meta_json is None) == (rows[i][3] is None)
    decoded = decode_append(memoryview(encode_append(topic_id, batch, key)))
    assert (decoded.topic_id, decoded.key) == (topic_id, key)
    assert same(decoded.batch, batch)
    assert_c_frame_matches(batch, append_head(topic_id, key))


def assert_c_frame_matches(batch: RecordBatch, head: bytes) -> None:
    """The WAL's one-call frame (C: envelope, CRC and batch) is the frame the Python envelope
    makes of the same payload, and scans back to it."""
    frame = _codec.frame(FrameType.APPEND, 42, head, batch)
    assert frame == encode_frame(FrameType.APPEND, 42, head + encode_batch(batch))
    (scanned,) = scan(frame)
    assert (scanned.type, scanned.lsn, bytes(scanned.payload)) == (
        FrameType.APPEND,
        42,
        head + encode_batch(batch),
    )


@settings(max_examples=100, deadline=None)
@given(
    a=st.lists(record_fields, min_size=1, max_size=5),
    b=st.lists(record_fields, min_size=1, max_size=5),
    cut=st.integers(0, 9),
)
def test_merge_and_slice_keep_every_record_intact(
    a: list[tuple[object, str | None, str | None, object]],
    b: list[tuple[object, str | None, str | None, object]],
    cut: int,
) -> None:
    x = encode(new_records(a), 1, 100)
    y = encode(new_records(b), 1 + len(a), 200)
    merged = merge_batches([x, y])
    assert served(merged) == served(x) + served(y)
    assert merged.ts_runs == [(0, 100), (len(a), 200)]
    assert same(decode_batch(encode_batch(merged))[0], merged)
    assert_c_frame_matches(merged, append_head(3, None))
    assert [Record(merged, i).ts for i in range(merged.count)] == [100] * len(a) + [200] * len(b)
    cut %= merged.count
    tail = slice_batch(merged, cut)
    assert served(tail) == served(merged)[cut:]
    assert [Record(tail, i).ts for i in range(tail.count)] == [
        Record(merged, i).ts for i in range(cut, merged.count)
    ]
    assert [record_bytes(tail, i, True, True) for i in range(tail.count)] == [
        record_bytes(merged, i, True, True) for i in range(cut, merged.count)
    ]


def test_segments_hold_batches_and_flags() -> None:
    x = encode(new_records([(1, "t", None, None), (2, None, "n", {"k": 1})]), 10, 5)
    y = encode(new_records([(3, None, None, None)]), 20, 6)
    loaded = decode_segment(encode_segment(7, [x, y], b"\x00\x01\x00"))
    assert loaded.topic_id == 7 and loaded.dead == b"\x00\x01\x00"
    assert [same(p, q) for p, q in zip(loaded.batches, [x, y], strict=True)] == [True, True]


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


def test_scan_refuses_a_crc_valid_frame_of_an_unknown_type() -> None:
    """A newer server wrote it: not a torn tail (which recovery would truncate)."""
    body = bytes([99]) + (5).to_bytes(8, "little") + b"x"
    bogus = FRAME_HEADER.pack(len(body), zlib.crc32(body)) + body
    good = encode_frame(FrameType.APPEND, 4, b"ok")
    seen = []
    with pytest.raises(UnsupportedFormat, match="frame type 99 .*upgrade topics"):
        for f in scan(good + bogus + encode_frame(FrameType.APPEND, 6, b"")):
            seen.append(f.lsn)
    assert seen == [4]


def test_scan_still_stops_at_an_unknown_type_whose_crc_fails() -> None:
    body = bytes([99]) + (5).to_bytes(8, "little") + b"x"
    bogus = FRAME_HEADER.pack(len(body), zlib.crc32(body) ^ 1) + body
    good = encode_frame(FrameType.APPEND, 4, b"ok")
    assert [f.lsn for f in scan(good + bogus)] == [4]


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
        frames = list(wal_frames(path.read_bytes()))
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
    assert [(f.lsn, bytes(f.payload)) for f in wal_frames(files[0][1].read_bytes())] == [(1, b"a"), (2, b"b")]


async def test_wal_syncs_an_unwaited_frame_within_its_sync_window(tmp_path: Path) -> None:
    """A ``disk``-class frame (nobody waits) is fsynced by the timer, not at once."""
    fs = FileSystem()
    wal = Wal(fs, tmp_path, asyncio.get_running_loop(), next_lsn=1, sync_delay_s=0.2)
    try:
        wal.submit(FrameType.APPEND, b"a")
        await asyncio.sleep(0.05)
        assert wal.stats.frames_total == 1  # written at the end of the submitting iteration
        assert wal.durable_lsn == 0 and wal.stats.fsyncs_total == 0
        for _ in range(100):
            await asyncio.sleep(0.02)
            if wal.durable_lsn == 1:
                break
        assert wal.durable_lsn == 1 and wal.stats.fsyncs_total == 1
    finally:
        wal.close()


async def test_write_queued_writes_now_and_leaves_one_flush_for_the_iteration(tmp_path: Path) -> None:
    """Each request writes its frames as its answer is made (``Wal.write_queued``); the one
    end-of-iteration flush stays queued for what is submitted after them — not one more per
    request — and still writes it."""
    fs, loop = FileSystem(), asyncio.get_running_loop()
    wal = Wal(fs, tmp_path, loop, next_lsn=1)
    scheduled: list[object] = []
    call_soon = loop.call_soon

    def counting(callback: Any, *args: Any, **kwargs: Any) -> asyncio.Handle:
        if callback == wal.flush:
            scheduled.append(callback)
        return call_soon(callback, *args, **kwargs)

    loop.call_soon = counting  # type: ignore[method-assign]
    try:
        for i in range(10):  # ten requests in one iteration, each writing before its answer
            mark = wal.next_lsn
            wal.submit(FrameType.APPEND, b"r%d" % i)
            assert wal.write_queued(mark)
            assert wal.stats.frames_total == i + 1
        wal.submit(FrameType.APPEND, b"outside a request")
    finally:
        loop.call_soon = call_soon  # type: ignore[method-assign]
    assert len(scheduled) == 1
    await asyncio.sleep(0)  # the iteration ends: its flush writes the last frame
    assert wal.stats.frames_total == 11
    wal.close()
    assert [f.lsn for f in wal_frames(wal_files(fs, tmp_path)[0][1].read_bytes())] == list(range(1, 12))


async def test_an_answer_that_wrote_nothing_leaves_the_queue_to_the_iteration(tmp_path: Path) -> None:
    """``write_queued(since)`` writes only when frames were submitted at or after ``since``:
    a read answered between two writes of one iteration does not split their one write."""
    wal = Wal(FileSystem(), tmp_path, asyncio.get_running_loop(), next_lsn=1)
    try:
        wal.submit(FrameType.ROUTER, b"one")
        mark = wal.next_lsn  # a read's mark: it submits nothing
        assert wal.write_queued(mark)
        assert wal.stats.batches_total == 0  # nothing written for it
        mine = wal.next_lsn
        wal.submit(FrameType.ROUTER, b"two")
        assert wal.write_queued(mine)
        assert wal.stats.batches_total == 1 and wal.stats.frames_total == 2  # both, in one write
    finally:
        wal.close()
