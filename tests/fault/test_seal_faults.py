"""A segment write (a seal) that fails: its records stay hot — readable, and in the WAL, which
turns read-only — and nothing written after the failure may claim them (docs/STORAGE.md,
"Failures").

In-process on an injected-fault :class:`FileSystem` (the seam every file operation goes through,
``storage/fs.py``): a seal's segment write is held on the segment thread until the test lets it
fail with ``EROFS``, so a checkpoint can be started while the seal is in flight — the order a
busy server meets by chance (a seal takes milliseconds to seconds; a checkpoint is due every
interval)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import threading
from pathlib import Path

import pytest
from topics_engine import ManualClock
from topics_engine.datadir.sealing import SegmentPolicy
from topics_engine.errors import NotReady
from topics_engine.storage.fs import FileSystem
from topics_engine.storage.wal import WalFailed

from ..storage.harness import T0, crash, diff_data, flush, open_node, wait_for

SEAL_AT = 50
"""``TOPICS_SEGMENT_MAX_EVENTS`` here: the write reaching it seals the topic's hot records."""


class HeldSegmentWrites(FileSystem):
    """Segment writes (``*.seg``) block once :meth:`hold` is called, until :meth:`fail` lets the
    held one raise ``EROFS`` (a read-only file system); every later one fails at once."""

    def __init__(self) -> None:
        self._held = False
        self.entered = threading.Event()
        self._release = threading.Event()

    def hold(self) -> None:
        self._held = True

    def fail(self) -> None:
        self._release.set()

    def write_atomic(self, path: Path, data: bytes) -> None:
        if self._held and path.suffix == ".seg":
            self.entered.set()
            assert self._release.wait(10), "the test never let the held segment write fail"
            raise OSError(errno.EROFS, "injected read-only file system", str(path))
        super().write_atomic(path, data)


async def test_a_checkpoint_started_while_a_failing_seal_runs_loses_none_of_its_records(
    tmp_path: Path,
) -> None:
    """The seal's records are exported from memory (marked sealed) when it is submitted; a
    checkpoint cut taken while it runs sees nothing of them to seal. Once the seal has failed,
    that checkpoint must not write its snapshot: the snapshot's LSN covers the records' WAL
    frames and no segment it lists holds them, so recovery would skip them."""
    fs = HeldSegmentWrites()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs, segment_policy=SegmentPolicy(max_events=SEAL_AT))
    e = node.engine
    await e.put_topic("d", {"durability": "disk"}).wait
    e.append("d", [{"data": i} for i in range(10)])
    await node.store.checkpoint()  # a first snapshot: the next one would replace it
    fs.hold()
    e.append("d", [{"data": i} for i in range(10, 10 + SEAL_AT)])  # due: the seal starts
    assert await asyncio.to_thread(fs.entered.wait, 10), "no seal started"
    checkpoint = asyncio.create_task(node.store.checkpoint())
    await asyncio.sleep(0)  # the checkpoint takes its cut (the WAL is still writable)
    fs.fail()
    with pytest.raises((OSError, WalFailed, NotReady)):
        await checkpoint
    assert node.store.wal is not None and node.store.wal.read_only
    expected = list(range(10 + SEAL_AT))
    assert diff_data(e, "d") == expected  # the failed seal's records are still served
    crash(node)

    fresh = await open_node(tmp_path, clock)  # the fault cleared, the server restarted
    assert diff_data(fresh.engine, "d") == expected
    await fresh.engine.append("d", [{"data": "after"}]).wait
    await flush(fresh)
    fresh.close()


async def test_a_switch_to_a_durable_class_whose_seal_fails_is_refused_read_only(tmp_path: Path) -> None:
    """The switch from ephemeral answers once a checkpoint sealed the topic's records
    (docs/DECISIONS.md, "Switching a topic's class"); when that seal fails, the ``PUT`` gets
    the read-only refusal (its outcome is unknown: its frame is durable, the records are not),
    and the records are still served until the restart."""
    fs = HeldSegmentWrites()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs)
    e = node.engine
    await e.put_topic("t", {"durability": "ephemeral"}).wait
    e.append("t", [{"data": i} for i in range(5)])
    fs.hold()
    fs.fail()  # every segment write fails at once
    switched = e.put_topic("t", {"durability": "disk"}).wait
    assert switched is not None
    with pytest.raises(NotReady) as refused:
        await switched
    assert refused.value.detail == {"wal_read_only": True}
    assert diff_data(e, "t") == list(range(5))
    crash(node)

    fresh = await open_node(tmp_path, clock)
    assert fresh.engine.get("t").config.durability.value == "disk"
    fresh.close()


class BrokenSegmentWrite(FileSystem):
    """The first segment write raises something other than an I/O error (a bug, a
    ``MemoryError``): what the segment thread left behind is just as unknown. It waits for
    :meth:`fail` first, so the test decides that the failure comes after the frames of the
    records it seals were written (a failure before that drops them, unacknowledged: the WAL
    refuses to write once it failed)."""

    def __init__(self) -> None:
        self.broken = False
        self._release = threading.Event()

    def fail(self) -> None:
        self._release.set()

    def write_atomic(self, path: Path, data: bytes) -> None:
        if path.suffix == ".seg" and not self.broken:
            self.broken = True
            assert self._release.wait(60), "the test never let the segment write fail"
            raise MemoryError("injected: no memory for the segment")
        super().write_atomic(path, data)


async def test_a_seal_that_fails_without_an_io_error_loses_none_of_its_records(tmp_path: Path) -> None:
    """The seal marked its records sealed when it was submitted; failing with any exception, it
    must stop the checkpoint after it as an I/O error does, or that snapshot would cover their
    WAL frames with no segment holding them."""
    fs = BrokenSegmentWrite()
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock, fs, segment_policy=SegmentPolicy(max_events=SEAL_AT))
    e = node.engine
    await e.put_topic("d", {"durability": "disk"}).wait
    e.append("d", [{"data": i} for i in range(SEAL_AT)])  # due: the seal starts, and waits
    await flush(node)  # the records' frames are durable
    fs.fail()
    await wait_for(lambda: node.store.wal is not None and node.store.wal.read_only, timeout=10)
    with contextlib.suppress(Exception):
        await node.store.checkpoint()
    expected = list(range(SEAL_AT))
    assert diff_data(e, "d") == expected
    crash(node)

    fresh = await open_node(tmp_path, clock)
    assert diff_data(fresh.engine, "d") == expected
    fresh.close()
