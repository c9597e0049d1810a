"""Disk faults under the WAL: EIO on write / fsync, torn writes, power loss, corruption.

Every test runs in-process on a :class:`FaultyFileSystem` over a tmp data directory; a "crash"
stops the old store's writer thread and recovers a fresh engine from the same directory with the
real filesystem.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import httpx
import pytest
from topics_engine import ManualClock
from topics_engine.errors import NotReady
from topics_engine.records import NewRecords, encode
from topics_engine.storage.formats import encode_append
from topics_engine.storage.frames import BODY_HEADER, FRAME_HEADER, FrameType
from topics_engine.storage.fs import FileSystem
from topics_engine.storage.wal import WalFailed, wal_files, wal_frames

from ..storage.harness import T0, Node, app_client, diff_data, diff_seqs, flush, open_node, wait_for
from .faulty_fs import FaultyFileSystem

DURABLE_FAILED = (WalFailed, NotReady)
"""How a durable future fails when its WAL group could not be persisted (the journal maps the
WAL's error to the 503 ``not_ready`` engine error)."""


def assert_envelope(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) <= {"error", "performance"}, body
    assert body["error"]["code"] == code, body
    assert body["error"]["message"]
    return body["error"]


def assert_wal_read_only_refusal(r: httpx.Response) -> None:
    """503 not_ready with detail.wal_read_only and no Retry-After — it does not clear until a
    restart, so clients must not retry (docs/DECISIONS.md, "WAL failure is fail-stop")."""
    error = assert_envelope(r, 503, "not_ready")
    assert error["detail"]["wal_read_only"] is True
    assert "retry-after" not in r.headers


async def blocked_in_sync(fs: FaultyFileSystem) -> None:
    assert await asyncio.to_thread(fs.sync_blocked.wait, 5.0), "the WAL writer never reached a sync"


async def flush_written(node: Any) -> None:
    """Let the event loop write what was submitted (the WAL writes once per loop iteration)."""
    await asyncio.sleep(0)
    assert node.store.wal is not None
    node.store.wal.flush()


def append_frame_size(
    topic_id: int, first_seq: int, ts: int, data: list[bytes], key: str | None = None
) -> int:
    batch = encode(NewRecords(data), first_seq, ts)
    return FRAME_HEADER.size + BODY_HEADER.size + len(encode_append(topic_id, batch, key))


# -- (a) / (b) EIO on write or fdatasync: no false ack, WAL read-only, reads keep working -------


@pytest.mark.parametrize("fault", ["write", "fdatasync"])
async def test_eio_fails_the_fsync_append_and_turns_the_server_read_only(tmp_path: Path, fault: str) -> None:
    fs = FaultyFileSystem()
    async with app_client(tmp_path, ManualClock(T0), fs) as (client, ctx):
        assert (await client.put("/v0/topics/f", json={"durability": "fsync"})).status_code == 201
        assert (await client.put("/v0/topics/d", json={"durability": "disk"})).status_code == 201
        r = await client.post("/v0/topics/f", json={"records": [{"data": 1, "tag": "a"}]})
        assert r.status_code == 200, r.text
        assert r.json()["performance"]["fsync_ms"] >= 0
        (await client.post("/v0/topics/d", json={"records": [{"data": "d1"}]})).raise_for_status()

        fs.fail_writes() if fault == "write" else fs.fail_syncs()
        r = await client.post("/v0/topics/f", json={"records": [{"data": 2}, {"data": 3}]})
        assert 500 <= r.status_code < 600, r.text
        body = r.json()
        assert set(body) <= {"error", "performance"} and body["error"]["message"], body

        # the failed records never became visible
        diff = (await client.post("/v0/topics/f/diff", json={"from_seq": 0})).json()
        assert [rec["data"] for rec in diff["records"]] == [1]
        assert diff["head_seq"] == 1
        state = (await client.get("/v0/topics/f")).json()
        assert (state["head_seq"], state["count"]) == (1, 1)

        # every later write is refused with 503 not_ready + wal_read_only ...
        assert_wal_read_only_refusal(await client.post("/v0/topics/f", json={"records": [{"data": 4}]}))
        assert_wal_read_only_refusal(await client.post("/v0/topics/d", json={"records": [{"data": "d2"}]}))
        assert_wal_read_only_refusal(await client.post("/v0/topics/new", json={"records": [{"data": 1}]}))
        assert_wal_read_only_refusal(await client.put("/v0/topics/other", json={}))
        assert_wal_read_only_refusal(await client.put("/v0/topics/f", json={"cap_records": 5}))
        assert_wal_read_only_refusal(await client.post("/v0/topics/d/delete", json={"before_seq": 99}))
        assert_wal_read_only_refusal(await client.post("/v0/topics/f/delete", json={"match": "a"}))
        assert_wal_read_only_refusal(await client.delete("/v0/topics/d"))

        # ... and nothing of them leaked into the state
        assert (await client.get("/v0/topics/new")).status_code == 404
        assert (await client.get("/v0/topics/other")).status_code == 404
        state = (await client.get("/v0/topics/f")).json()
        assert state["config"]["cap_records"] == 0 and state["count"] == 1

        # reads keep working
        diff = (await client.post("/v0/topics/d/diff", json={})).json()
        assert [rec["data"] for rec in diff["records"]] == ["d1"]
        listing = (await client.get("/v0/topics")).json()
        assert [t["topic"] for t in listing["topics"]] == ["d", "f"]
        # readiness fails so load balancers stop routing writes here
        assert_wal_read_only_refusal(await client.get("/v0/ready"))
        assert_wal_read_only_refusal(await client.get("/readyz"))
        assert (await client.get("/v0/health")).status_code == 200
        assert ctx.datadir is not None and ctx.datadir.wal is not None and ctx.datadir.wal.read_only


async def test_a_disk_write_whose_wal_write_fails_is_refused_not_acknowledged(tmp_path: Path) -> None:
    """A ``disk`` write is acknowledged once its bytes are written (before its answer leaves):
    the request whose write hits EIO gets the read-only ``503``, never a ``200``, and neither it
    nor a later write is there after a restart."""
    fs = FaultyFileSystem()
    async with app_client(tmp_path, ManualClock(T0), fs) as (client, _):
        assert (await client.put("/v0/topics/d", json={"durability": "disk"})).status_code == 201
        (await client.post("/v0/topics/d", json={"records": [{"data": "kept"}]})).raise_for_status()
        fs.fail_writes()
        assert_wal_read_only_refusal(await client.post("/v0/topics/d", json={"records": [{"data": "lost"}]}))
        assert_wal_read_only_refusal(await client.post("/v0/topics/d", json={"records": [{"data": "later"}]}))
    node = await open_node(tmp_path, ManualClock(T0))
    assert diff_data(node.engine, "d") == ["kept"]
    node.close()


@pytest.mark.parametrize("fault", ["write", "fdatasync", "nth_write", "torn"])
async def test_a_failed_group_fails_every_durable_future_in_it(tmp_path: Path, fault: str) -> None:
    fs = FaultyFileSystem()
    node = await open_node(tmp_path, ManualClock(T0), fs)
    engine = node.engine
    await engine.put_topic("f", {"durability": "fsync"}).wait
    ok = engine.append("f", [{"data": 0}])
    await ok.wait
    if fault == "write":
        fs.fail_writes()
    elif fault == "fdatasync":
        fs.fail_syncs()
    elif fault == "nth_write":
        fs.fail_nth_write(1)
    else:
        fs.tear_next_write(5)
    results = [engine.append("f", [{"data": i}]) for i in range(1, 4)]
    for result in results:
        with pytest.raises(DURABLE_FAILED):
            await result.wait
    assert diff_data(engine, "f") == [0]
    assert engine.topic_state("f").count == 1
    with pytest.raises(NotReady) as info:
        engine.append("f", [{"data": 9}])
    assert info.value.detail == {"wal_read_only": True}
    node.close()


async def test_disk_class_ack_is_not_fsync_gated_but_refused_once_read_only(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    node = await open_node(tmp_path, ManualClock(T0), fs)
    engine = node.engine
    await engine.put_topic("d", {"durability": "disk"}).wait
    await flush(node)  # the topic's first seq reservation is durable
    fs.fail_syncs()
    first = engine.append("d", [{"data": 1}])
    assert first.wait is None  # acked on enqueue (§0.10 disk)
    await wait_for(lambda: node.store.wal is not None and node.store.wal.read_only)
    with pytest.raises(NotReady):
        engine.append("d", [{"data": 2}])
    assert diff_data(engine, "d") == [1]
    node.close()


async def test_retrying_a_failed_fsync_append_with_its_idempotency_key_is_not_acked(tmp_path: Path) -> None:
    """A write whose fsync failed was answered 5xx. Retrying it with the same idempotency key
    must not get a 200 ``deduped`` ack for seqs that were never made durable (or visible)."""
    fs = FaultyFileSystem()
    async with app_client(tmp_path, ManualClock(T0), fs) as (client, _):
        await client.put("/v0/topics/f", json={"durability": "fsync"})
        fs.fail_syncs()
        body = {"records": [{"data": "pay"}], "idempotency_key": "order-1"}
        r = await client.post("/v0/topics/f", json=body)
        assert r.status_code >= 500
        retry = await client.post("/v0/topics/f", json=body)
        assert retry.status_code >= 500, f"false ack of a write that never became durable: {retry.text}"
        diff = (await client.post("/v0/topics/f/diff", json={})).json()
        assert diff["records"] == []


async def test_eio_on_the_first_frame_of_a_lazily_created_topic(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    node = await open_node(tmp_path, ManualClock(T0), fs)
    fs.fail_writes()
    result = node.engine.append("lazy", [{"data": 1}], config={"durability": "fsync"})
    with pytest.raises(DURABLE_FAILED):
        await result.wait
    node.close()
    fresh = await open_node(tmp_path, ManualClock(T0))
    assert fresh.engine.topic_count == 0
    fresh.close()


# -- (c) torn write + crash ----------------------------------------------------------------------


async def test_torn_write_then_crash_truncates_the_tail_and_keeps_every_acked_write(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs)
    engine = node.engine
    await engine.put_topic("f", {"durability": "fsync"}).wait
    topic_id = engine._topics["f"].id
    for i in range(3):  # acked
        await engine.append("f", [{"data": i}]).wait

    # hold the next sync so the two later appends are written as one group, then tear it 10
    # bytes into its first frame
    fs.hold_syncs()
    held = engine.append("f", [{"data": 3}])
    await blocked_in_sync(fs)
    doomed = [engine.append("f", [{"data": i}]) for i in (4, 5)]
    fs.tear_next_write(10)
    fs.release_syncs()
    await held.wait  # acked: its group was fsynced before the torn one
    for result in doomed:
        with pytest.raises(DURABLE_FAILED):
            await result.wait
    ((_, wal_path),) = wal_files(fs, node.store.wal_dir)
    size_before = wal_path.stat().st_size

    fs.crash(keep_unsynced=None)  # a process crash: the torn bytes stay in the file
    node.close()
    assert wal_path.stat().st_size == size_before

    fresh = await open_node(tmp_path, clock)
    assert fresh.store.report.truncated_bytes == 10
    assert fresh.store.report.corrupt_files == 0
    assert wal_path.stat().st_size == size_before - 10
    assert diff_data(fresh.engine, "f") == [0, 1, 2, 3]
    assert fresh.engine.topic_state("f").head_seq == 4
    # the log goes on cleanly after the cut
    await fresh.engine.append("f", [{"data": "after"}]).wait
    fresh.close()
    again = await open_node(tmp_path, clock)
    assert again.store.report.truncated_bytes == 0
    assert diff_data(again.engine, "f") == [0, 1, 2, 3, "after"]
    assert diff_seqs(again.engine, "f") == [1, 2, 3, 4, 5]
    assert append_frame_size(topic_id, 1, T0, [b"0"]) > 10
    again.close()


async def test_torn_group_keeps_its_complete_frames_only_as_a_prefix(tmp_path: Path) -> None:
    """A tear after the first frame of a failed group: that complete frame is replayed (its
    outcome was unknown to the client: it got an error, not a rejection), the torn one is not."""
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs)
    engine = node.engine
    await engine.put_topic("f", {"durability": "fsync"}).wait
    topic_id = engine._topics["f"].id
    fs.hold_syncs()
    held = engine.append("f", [{"data": 0}])
    await blocked_in_sync(fs)
    doomed = [engine.append("f", [{"data": i}]) for i in (1, 2)]
    ts = engine._topics["f"]._last_ts
    first_frame = append_frame_size(topic_id, 2, ts, [b"1"])
    fs.tear_next_write(first_frame + 3)
    fs.release_syncs()
    await held.wait
    for result in doomed:
        with pytest.raises(DURABLE_FAILED):
            await result.wait
    fs.crash(keep_unsynced=None)
    node.close()
    fresh = await open_node(tmp_path, clock)
    assert fresh.store.report.truncated_bytes == 3
    assert diff_data(fresh.engine, "f") == [0, 1]
    fresh.close()


# -- (d) power loss --------------------------------------------------------------------------------


@pytest.mark.parametrize("keep_unsynced", [0, 1, 17, 60, 150, 400, None])
@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_power_loss_recovers_a_prefix_of_acked_writes(
    tmp_path: Path, seed: int, keep_unsynced: int | None
) -> None:
    """Appends to disk, memory and fsync topics, interleaved, each carrying its global submission
    index. Power is lost while groups sit written-but-unsynced (frames are written to the page
    cache as they come; only syncs wait), with ``keep_unsynced`` bytes of the page cache flushed
    (``None``: all written). Recovered state must be exactly a prefix of the submission order
    containing every write that was acked as fsynced, and every write before them."""
    rng = random.Random(seed)
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs)
    engine = node.engine
    classes = {"d": "disk", "m": "memory", "f": "fsync"}
    for name, cls in classes.items():
        await engine.put_topic(name, {"durability": cls}).wait
    order: list[tuple[str, int]] = []
    futures: list[tuple[int, asyncio.Future[float]]] = []

    def submit(n: int) -> None:
        for _ in range(n):
            name = rng.choice("dmf")
            i = len(order)
            batch = [{"data": i, "tag": f"t{i % 3}"}] * rng.randint(1, 3)
            result = engine.append(name, [dict(r, data=[i, k]) for k, r in enumerate(batch)])
            order.append((name, i))
            if result.wait is not None:
                futures.append((i, result.wait))
            if rng.random() < 0.2:
                clock.advance(rng.randint(1, 50))

    submit(40)
    await asyncio.gather(*(f for _, f in futures))
    await flush(node)
    acked = len(order)  # everything so far is durable
    futures.clear()

    fs.hold_syncs()
    submit(1)
    await blocked_in_sync(fs)  # a one-frame group written, its sync held
    assert node.store.wal is not None
    written = node.store.wal.next_lsn - 1
    fs.allow_syncs(1)
    await wait_for(lambda: node.store.wal is not None and node.store.wal.durable_lsn >= written)
    for _, fut in futures:  # that sync completed: the write is acked
        await fut
    acked += 1
    await flush_written(node)
    futures.clear()
    submit(12)  # written, their sync held
    await blocked_in_sync(fs)
    submit(10)  # written behind them, unsynced too
    await flush_written(node)
    fs.crash(keep_unsynced=keep_unsynced)
    node.close()
    for _, fut in futures:  # nothing after the crash point was acked
        with pytest.raises(DURABLE_FAILED):
            await fut

    fresh = await open_node(tmp_path, clock)
    recovered: list[int] = []
    for name in "dmf":
        indices = [d[0] for d in diff_data(fresh.engine, name)]
        # whole batches only: every record of a batch or none
        per_batch = {i: indices.count(i) for i in indices}
        for i in per_batch:
            assert per_batch[i] == sum(1 for d in diff_data(fresh.engine, name) if d[0] == i)
        recovered += list(per_batch)
        assert indices == sorted(indices)
    recovered.sort()
    assert recovered == list(range(len(recovered))), "recovered writes are not a prefix"
    assert len(recovered) >= acked, "an acked, fsynced write was lost"
    for name in "dmf":
        seqs = diff_seqs(fresh.engine, name)
        assert seqs == list(range(1, len(seqs) + 1))
    if keep_unsynced == 0:
        assert len(recovered) == acked
        assert fresh.store.report.truncated_bytes == 0
    # writes go on at the recovered heads
    for name in "dmf":
        head = fresh.engine.topic_state(name).head_seq
        result = fresh.engine.append(name, [{"data": "next"}])
        assert result.first_seq == head + 1
        if result.wait is not None:
            await result.wait
    fresh.close()


async def test_power_loss_loses_the_unsynced_disk_tail_but_never_an_acked_fsync_write(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs)
    engine = node.engine
    await engine.put_topic("d", {"durability": "disk"}).wait
    await engine.put_topic("f", {"durability": "fsync"}).wait
    engine.append("d", [{"data": "d1"}])
    await engine.append("f", [{"data": "f1"}]).wait  # fsync ack covers d1 too (WAL order)
    fs.hold_syncs()
    engine.append("d", [{"data": "d2"}])  # acked, never synced
    await blocked_in_sync(fs)
    pending = engine.append("f", [{"data": "f2"}])
    fs.crash()
    node.close()
    with pytest.raises(DURABLE_FAILED):
        await pending.wait
    fresh = await open_node(tmp_path, clock)
    assert diff_data(fresh.engine, "d") == ["d1"]
    assert diff_data(fresh.engine, "f") == ["f1"]
    fresh.close()


async def test_power_loss_right_after_topic_create_ack_keeps_the_topic(tmp_path: Path) -> None:
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs)
    for cls in ("ephemeral", "memory", "disk", "fsync"):
        await node.engine.put_topic(f"t-{cls}", {"durability": cls, "cap_records": 9}).wait
    fs.crash()
    node.close()
    fresh = await open_node(tmp_path, clock)
    for cls in ("ephemeral", "memory", "disk", "fsync"):
        config = fresh.engine.topic_state(f"t-{cls}").config
        assert (config.durability, config.cap_records) == (cls, 9)
    fresh.close()


# -- (e) corruption in the middle of the WAL -----------------------------------------------------


def _flip(path: Path, offset: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[offset] ^= 0xFF
    path.write_bytes(bytes(raw))


async def test_corrupt_byte_mid_last_wal_file_truncates_there_and_the_server_starts(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)  # closed without a checkpoint: all in the WAL
    await node.engine.put_topic("log", {"durability": "disk"}).wait
    for i in range(10):
        node.engine.append("log", [{"data": i}])
    node.close()
    ((_, wal_path),) = wal_files(FileSystem(), tmp_path / "wal")
    frames = list(wal_frames(wal_path.read_bytes()))
    appends = [f for f in frames if f.type is FrameType.APPEND]
    assert len(appends) == 10
    victim = frames.index(appends[6])
    start = frames[victim - 1].end
    size = wal_path.stat().st_size
    _flip(wal_path, (start + appends[6].end) // 2)

    async with app_client(tmp_path, clock) as (client, ctx):
        assert (await client.get("/v0/ready")).status_code == 200
        assert ctx.datadir is not None
        assert ctx.datadir.report.truncated_bytes == size - start
        assert wal_path.stat().st_size == start
        diff = (await client.post("/v0/topics/log/diff", json={})).json()
        assert [r["data"] for r in diff["records"]] == list(range(6))
        r = await client.post("/v0/topics/log", json={"records": [{"data": "new"}]})
        # a crash-recovered disk topic resumes above its seq reservation: never below 7
        assert r.status_code == 200 and r.json()["first_seq"] >= 7
    async with app_client(tmp_path, clock) as (client, ctx):
        assert ctx.datadir is not None and ctx.datadir.report.truncated_bytes == 0
        diff = (await client.post("/v0/topics/log/diff", json={})).json()
        assert [r["data"] for r in diff["records"]] == [*range(6), "new"]


async def test_corrupt_frame_in_an_earlier_wal_file_sets_later_files_aside(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, wal_rotate_bytes=300)
    await node.engine.put_topic("log", {"durability": "fsync"}).wait
    for i in range(40):
        await node.engine.append("log", [{"data": i}]).wait
    node.close()
    files = wal_files(node.store.fs, tmp_path / "wal")
    assert len(files) >= 4
    victim_first, victim = files[1]
    frames = list(wal_frames(victim.read_bytes()))
    victim_size = victim.stat().st_size
    _flip(victim, frames[1].end - 2)  # inside the second frame of file 2

    fresh = await open_node(tmp_path, clock, wal_rotate_bytes=300)
    report = fresh.store.report
    assert report.corrupt_files == len(files) - 2
    assert report.truncated_bytes == victim_size - frames[0].end
    assert victim.stat().st_size == frames[0].end
    assert sorted(p.name for p in (tmp_path / "wal").iterdir() if p.name.endswith(".corrupt")) == [
        p.name + ".corrupt" for _, p in files[2:]
    ]
    last_good_lsn = frames[0].lsn
    # lsn 1 is the TOPIC_PUT, each later frame one single-record append
    assert diff_data(fresh.engine, "log") == list(range(last_good_lsn - 1))
    await fresh.engine.append("log", [{"data": "new"}]).wait
    fresh.close()
    again = await open_node(tmp_path, clock, wal_rotate_bytes=300)
    assert again.store.report.truncated_bytes == 0
    assert diff_data(again.engine, "log") == [*range(last_good_lsn - 1), "new"]
    again.close()
    assert victim_first == last_good_lsn


async def test_zero_filled_tail_after_crash_is_truncated(tmp_path: Path) -> None:
    """A file system may leave a zero-filled extent after a crash (size updated, data not)."""
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    await node.engine.put_topic("log", {}).wait
    node.engine.append("log", [{"data": 1}])
    await flush(node)
    node.close()
    ((_, wal_path),) = wal_files(node.store.fs, tmp_path / "wal")
    with wal_path.open("ab") as f:
        f.write(bytes(4096))
    fresh = await open_node(tmp_path, clock)
    assert fresh.store.report.truncated_bytes == 4096
    assert diff_data(fresh.engine, "log") == [1]
    fresh.close()


async def test_duplicate_of_an_in_flight_fsync_append_is_not_acked_before_it_is_durable(
    tmp_path: Path,
) -> None:
    """While the first fsync-class append with a key awaits its fsync, a retry with the same key
    must not be acked at once: power loss now loses the write the retry reported as done."""
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs)
    engine = node.engine
    await engine.put_topic("f", {"durability": "fsync"}).wait
    fs.hold_syncs()
    first = engine.append("f", [{"data": "pay"}], idempotency_key="order-1")
    await blocked_in_sync(fs)
    retry = engine.append("f", [{"data": "pay"}], idempotency_key="order-1")
    assert retry.deduped
    retry_acked_at_once = retry.wait is None
    fs.crash()
    node.close()
    with pytest.raises(DURABLE_FAILED):
        await first.wait
    fresh = await open_node(tmp_path, clock)
    assert diff_data(fresh.engine, "f") == []
    fresh.close()
    assert not retry_acked_at_once, "the deduped retry was acked before the original was durable"


# -- checkpoints under faults --------------------------------------------------------------------


async def _write_some(node: Node) -> list[int]:
    e = node.engine
    await e.put_topic("f", {"durability": "fsync"}).wait
    await e.put_topic("d", {"durability": "disk"}).wait
    for i in range(20):
        e.append("d", [{"data": i, "tag": f"t{i % 4}"}])
        await e.append("f", [{"data": i}]).wait
    e.delete_records("d", match="t1")
    await e.delete_records("f", before_seq=4).wait
    await flush(node)
    return [i for i in range(20) if i % 4 != 1]


@pytest.mark.parametrize("fault", ["fail_syncs", "fail_writes"])
async def test_a_checkpoint_that_hits_eio_loses_nothing(tmp_path: Path, fault: str) -> None:
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs)
    expected_d = await _write_some(node)
    getattr(fs, fault)()
    with pytest.raises((OSError, *DURABLE_FAILED)):
        await node.store.checkpoint()
    fs.crash(keep_unsynced=None)
    node.close()
    fresh = await open_node(tmp_path, clock)
    assert diff_data(fresh.engine, "d") == expected_d
    assert diff_data(fresh.engine, "f") == list(range(3, 20))
    fresh.close()


@pytest.mark.parametrize("keep_unsynced", [0, None])
async def test_power_loss_after_a_checkpoint_keeps_everything_it_covered(
    tmp_path: Path, keep_unsynced: int | None
) -> None:
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs)
    expected_d = await _write_some(node)
    await node.store.checkpoint()
    fs.crash(keep_unsynced=keep_unsynced)
    node.close()
    fresh = await open_node(tmp_path, clock)
    assert diff_data(fresh.engine, "d") == expected_d
    assert diff_data(fresh.engine, "f") == list(range(3, 20))
    await fresh.engine.append("f", [{"data": "more"}]).wait
    fresh.close()
    again = await open_node(tmp_path, clock)
    assert diff_data(again.engine, "f") == [*range(3, 20), "more"]
    again.close()


async def _coalescing_queue_with_a_job(client: httpx.AsyncClient) -> None:
    """Queue ``cq``: ``disk``, durable leases, claims coalesced over 5 ms; one job in it."""
    config = {"type": "queue", "durability": "disk", "leases_durable": True, "claim_jitter_ms": 5}
    assert (await client.put("/v0/topics/cq", json=config)).status_code == 201
    (await client.post("/v0/topics/cq", json={"records": [{"data": "job"}]})).raise_for_status()


async def test_a_coalesced_claim_whose_lease_write_fails_is_refused_not_acknowledged(tmp_path: Path) -> None:
    """A claim on a coalescing ``disk`` queue with durable leases is served by the cohort's
    pass (a timer), whose lease frames the loop writes before the claim's answer is made: when
    that write fails the claim gets the read-only ``503``, like an uncoalesced one, never a
    ``200`` holding leases the log lost."""
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    async with app_client(tmp_path, clock, fs) as (client, _):
        await _coalescing_queue_with_a_job(client)
        fs.fail_writes()
        claim = asyncio.ensure_future(client.post("/v0/topics/cq/claim", json={"node": "w", "max": 1}))
        for _ in range(100):  # the claim joins its cohort, then the window closes
            await asyncio.sleep(0)
            clock.advance(5)
        assert_wal_read_only_refusal(await claim)


async def test_a_coalesced_claim_waiting_when_the_wal_fails_is_refused_not_left_hanging(
    tmp_path: Path,
) -> None:
    """The WAL turns read-only while a claim waits for its cohort's pass: the pass cannot log
    the leases, and every claim of the cohort gets the read-only ``503``."""
    fs = FaultyFileSystem()
    clock = ManualClock(T0)
    async with app_client(tmp_path, clock, fs) as (client, _):
        await _coalescing_queue_with_a_job(client)
        claim = asyncio.ensure_future(client.post("/v0/topics/cq/claim", json={"node": "w", "max": 1}))
        for _ in range(20):  # the claim joins its cohort
            await asyncio.sleep(0)
        fs.fail_writes()
        assert_wal_read_only_refusal(await client.post("/v0/topics/cq", json={"records": [{"data": "x"}]}))
        for _ in range(100):  # the window closes
            await asyncio.sleep(0)
            clock.advance(5)
        assert_wal_read_only_refusal(await asyncio.wait_for(claim, 10))
