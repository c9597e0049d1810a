"""Crash oracle against a real ``topics serve`` subprocess (spec §0.10, §2, §5, §8.2).

Concurrent writers on fsync, disk and ephemeral topics, a deleter on an fsync and on a disk
topic and a config mutator run until a SIGKILL — at a seeded-random moment, or in the same
event-loop turn as a chosen kind of ack; the server restarts on the same data dir, the
recovered state is checked against the model of every acked and in-flight operation, and the
load continues, several times. See bench/crash_harness.py for the oracle;
bench/crash_loop.py is the long variant.

``TOPICS_CRASH_SEED`` overrides the seed (the RNG fixes the intent — kill points, batch sizes,
deletes — not the server's timing; a failure message carries the full JSON summary).

How much is checked does not depend on the machine's speed: the cycles go on (within a time
budget far above what they need) until a minimum of appends was acknowledged, so the bounds
asserted on the counts hold on a loaded machine too.

The server runs without the elastic throttle (``TOPICS_THROTTLE=false``, inherited from this
process's environment): the harness counts a ``429 throttled`` as an unexpected status and an
unknown outcome, which a loaded machine's loop lag would cause.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench.crash_harness import KINDS, Summary, Topic, clean_stop, crash_loop, summary_json
from tests.server.processes import NO_THROTTLE

SEED = int(os.environ.get("TOPICS_CRASH_SEED", "20260522"))


@pytest.fixture(autouse=True)
def _no_throttle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The harness's ``topics serve`` children inherit the environment: no elastic throttle."""
    for key, value in NO_THROTTLE.items():
        monkeypatch.setenv(key, value)


def _assert_clean(s: Summary) -> None:
    counts = s.counts()
    assert all(counts[k] == 0 for k in KINDS), summary_json(s)
    assert not s.unexpected_statuses, summary_json(s)


async def test_sigkill_restart_cycles_keep_every_durability_promise(tmp_path: Path) -> None:
    s = await crash_loop(
        tmp_path / "data", cycles=5, seed=SEED, run_s=(0.3, 1.2), time_budget_s=300, min_acked_appends=250
    )
    _assert_clean(s)
    assert s.cycles >= 5, summary_json(s)
    assert s.acked_appends > 200 and s.acked_deletes > 5, summary_json(s)
    assert s.sigterm_exit_codes == [0], summary_json(s)


async def test_sigterm_stop_loses_nothing_on_fsync_or_disk_and_exits_0(tmp_path: Path) -> None:
    s = await clean_stop(tmp_path / "data", seed=SEED + 1, run_s=1.0, min_acked_appends=60)
    _assert_clean(s)
    assert s.sigterm_exit_codes == [0], summary_json(s)
    assert s.acked_appends > 50, summary_json(s)


async def test_kill_right_after_fsync_acks_and_fsync_delete_acks(tmp_path: Path) -> None:
    """SIGKILL in the same turn as an fsync append / delete ack: nothing acked lost or resurrected."""
    s = await crash_loop(
        tmp_path / "data",
        cycles=3,
        seed=SEED + 2,
        run_s=(0.2, 0.6),
        time_budget_s=20,
        trigger_p=1.0,
        triggers=("fsync_ack", "fsync_delete_ack"),
        topics=[Topic("t.fsync", "fsync", deletes=True), Topic("t.fsync2", "fsync", deletes=False)],
        double_kill_p=0.0,
    )
    _assert_clean(s)


async def test_disk_seqs_are_not_reused_after_losing_the_acked_tail(tmp_path: Path) -> None:
    """SIGKILL right after a disk ack may lose the un-fsynced tail (allowed: the recovered state
    is a prefix), but the lost seqs were handed out: new writes must get greater ones."""
    s = await crash_loop(
        tmp_path / "data",
        cycles=3,
        seed=SEED + 3,
        run_s=(0.2, 0.6),
        time_budget_s=20,
        trigger_p=1.0,
        triggers=("disk_ack", "disk_delete_ack"),
        topics=[Topic("t.disk", "disk", deletes=True), Topic("t.disk2", "disk", deletes=False)],
        double_kill_p=0.0,
    )
    _assert_clean(s)


async def test_ephemeral_seqs_are_not_reused_after_a_kill_right_after_a_big_batch(tmp_path: Path) -> None:
    """An ephemeral batch larger than half a seq-reservation block, acked, then SIGKILL: after the
    restart new seqs must still be above every seq acked before (§0.10: no seq reuse)."""
    s = await crash_loop(
        tmp_path / "data",
        cycles=3,
        seed=SEED + 4,
        run_s=(0.2, 0.6),
        time_budget_s=20,
        trigger_p=1.0,
        triggers=("eph_big_ack",),
        topics=[Topic("t.eph", "ephemeral", deletes=False), Topic("t.fsync", "fsync", deletes=False)],
        big_batch_p=0.3,
        double_kill_p=0.0,
    )
    _assert_clean(s)


COLD = {
    "TOPICS_CACHE_BYTES": "65536",
    "TOPICS_SEGMENT_MAX_EVENTS": "64",
    "TOPICS_SEGMENT_MAX_BYTES": "4096",
    "TOPICS_CHECKPOINT_WAL_BYTES": "65536",
    "TOPICS_CHECKPOINT_INTERVAL_MS": "200",
}
"""A server whose records go cold at once: tiny segments sealed all the time, checkpoints every
64 KiB of WAL or 200 ms, a 64 KiB cache — so kills land during sealing, checkpoints, cold reads
and cache evictions, and every check reads records back from segment files."""


async def test_sigkill_cycles_with_everything_cold_keep_every_promise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in COLD.items():
        monkeypatch.setenv(key, value)
    s = await crash_loop(
        tmp_path / "data", cycles=4, seed=SEED + 5, run_s=(0.3, 1.0), time_budget_s=300, min_acked_appends=200
    )
    _assert_clean(s)
    assert s.cycles >= 4, summary_json(s)
    assert s.acked_appends > 150 and s.acked_deletes > 3, summary_json(s)
    assert s.sigterm_exit_codes == [0], summary_json(s)
