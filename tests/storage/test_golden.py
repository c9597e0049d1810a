"""The golden data directories (issue 22): each ``golden/vN/datadir`` was written once by
``golden/make_golden.py`` with the engine as it was then — a snapshot with sealed segments
(delete flags set), segments sealed after it, and a WAL tail of every frame type ending as a
crash leaves it. Every later version must open each with exactly the state in its
``golden/vN/expected.json``, and go on writing to it. ``v1``: the formats before issue 22
(headerless WAL files, snapshot version 1, segment version 3); ``v2``: WAL version 2, snapshot
version 2, segment version 4 (chunk indexes: records stay cold on disk after recovery); ``v3``:
snapshot version 3 and the ``SCHEDULE`` WAL frames (schedules, issue 24); ``v4``: snapshot
version 4 and the ``CONSUMER`` WAL frames (named consumers, issue 25).

The checked-in directory is never opened in place (recovery may write: it removes segments
sealed after the snapshot): each test opens a copy. The clock is the fixed one the state was
observed at, so no lease, delay, TTL or idempotency window depends on when the test runs.

Never regenerate the golden files; a new format gets a new set, added to :data:`SETS`.
Should a deliberate change of behaviour (not of the format) alter an observation, name the
exception here, next to the comparison, rather than editing ``expected.json``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from topics_engine import ManualClock

from .golden.observe import GOLDEN, Node, done, observe, observe_topic, open_node, run_probe

SETS = ["v1", "v2", "v3", "v4"]


@pytest.fixture(params=SETS)
def golden(request: pytest.FixtureRequest) -> Path:
    """One golden set's directory."""
    return GOLDEN / str(request.param)


@pytest.fixture
def expected(golden: Path) -> dict[str, Any]:
    out: dict[str, Any] = json.loads((golden / "expected.json").read_text(encoding="utf-8"))
    if golden.name == "v1":
        _fixed_since_v1(out)
    if "schedules" not in out["state"]:
        _schedules_observed_since_v3(out)
    if "consumers" not in out["state"]:
        _consumers_observed_since_v4(out)
    return out


SCHEDULES_ADDED = {"schedules": [], "next_schedule_id": 1}
"""What the observation of a set written before schedules (``v1``, ``v2``) leaves out: it has
none, and the first schedule id is 1."""


def _schedules_observed_since_v3(expected: dict[str, Any]) -> None:
    """Schedules (issue 24) are observed since ``v3``; an older set's directory holds none."""
    for part in ("state", "after_probes"):
        expected[part].update(SCHEDULES_ADDED)


CONSUMERS_ADDED: dict[str, Any] = {"consumers": []}
"""What the observation of a set written before named consumers (``v1`` to ``v3``) leaves out:
it has none."""


def _consumers_observed_since_v4(expected: dict[str, Any]) -> None:
    """Named consumers (issue 25) are observed since ``v4``; an older set's directory holds none."""
    for part in ("state", "after_probes"):
        expected[part].update(CONSUMERS_ADDED)


def _fixed_since_v1(expected: dict[str, Any]) -> None:
    """The deliberate changes of behaviour since the golden observations were made.

    Issue 22 (a recreation hidden by a crash): topics ``recreated`` and ``recreated.tail``
    replaced incarnations whose heads were 5 and 4, and the golden crash recovery raised their
    heads from 1 to 1025. A reader at cursor 2 — the old incarnation's, inside the skipped
    seqs — silently missed record 1 of the new topic; now it gets the ``recreated`` tombstone
    and reads the new topic from its start."""
    for name, old_head in (("recreated", 5), ("recreated.tail", 4)):
        cursors = expected["state"]["topics"][name]["cursors"]
        assert cursors["2"] == [[], 1025, None]
        tombstone = {
            "gap_from": 3,
            "gap_to": old_head,
            "reason": "recreated",
            "missed_estimate": old_head - 2,
            "earliest_seq": 1,
            "head_seq": 1025,
        }
        cursors["2"] = [[1], 1025, tombstone]


@pytest.fixture
def datadir(tmp_path: Path, golden: Path) -> Path:
    copy = tmp_path / "datadir"
    shutil.copytree(golden / "datadir", copy)
    return copy


def assert_same(actual: dict[str, Any], expected: dict[str, Any], when: str) -> None:
    """``actual == expected``, compared part by part so a failure names what differs."""
    assert actual.keys() == expected.keys(), when
    assert list(actual["topics"]) == list(expected["topics"]), f"{when}: the topics differ"
    for name, topic in expected["topics"].items():
        for part, value in topic.items():
            assert actual["topics"][name][part] == value, f"{when}: topic {name!r}: {part} differs"
    for key, value in expected.items():
        assert actual[key] == value, f"{when}: {key} differs"


async def test_golden_recovers_the_state_it_was_written_with(datadir: Path, expected: dict[str, Any]) -> None:
    node = await open_node(datadir, ManualClock(expected["clock_ms"]))
    try:
        assert_same(observe(node), expected["state"], "after recovery")
        for probe in expected["probes"]:
            assert await run_probe(node, probe["probe"]) == probe["result"], probe["probe"]
        assert_same(observe(node, full=False), expected["after_probes"], "after the probes")
    finally:
        node.close()


def _data(records: list[dict[str, Any]]) -> list[Any]:
    return [r["data"] for r in records]


RESTARTS = ["crash", "checkpoint", "clean_stop", "final_checkpoint"]
"""How the run on the recovered golden state ends: ``kill -9``; a checkpoint, then ``kill -9``
(the next start loads that snapshot); a clean stop without a final checkpoint (the WAL ends
with ``CLEAN_STOP``); the server's own shutdown (a final checkpoint, then the clean stop)."""


async def restart(node: Node, how: str) -> None:
    """End ``node``'s run as ``how`` (one of :data:`RESTARTS`) says."""
    if how == "crash":
        await node.crash()
    elif how == "checkpoint":
        await node.checkpoint()
        await node.crash()
    elif how == "clean_stop":
        await node.flush()
        node.close()
    else:
        await node.flush()
        await node.store.checkpoint(final=True)
        node.close()


@pytest.mark.parametrize("how", RESTARTS)
async def test_golden_stays_usable(datadir: Path, expected: dict[str, Any], how: str) -> None:
    """Writes on the recovered state and a restart — whichever way the run ends — leave the old
    state intact and the new writes readable; the routers forward the lag the golden tail left."""
    state = expected["state"]
    topics = state["topics"]
    clock = ManualClock(expected["clock_ms"])
    node = await open_node(datadir, clock)
    try:
        e, q = node.engine, node.queues
        disk = e.append("log.disk", [{"data": "usable-1", "tag": "u"}])
        assert disk.first_seq == topics["log.disk"]["state"]["head_seq"] + 1
        await done(e.append("log.fsync", [{"data": "usable-1"}]))
        await done(e.append("idem", [{"data": "usable"}], idempotency_key="k5"))
        claimed = q.claim("jobs.durable", "w9", 1)
        await done(claimed)
        job = claimed.jobs[0].seq  # type: ignore[union-attr]
        await done(q.ack("jobs.durable", "w9", [job]))
        clock.advance(1000)
        e.append("log.disk", [{"data": "usable-2"}])
    finally:
        await restart(node, how)

    node = await open_node(datadir, clock)
    try:
        touched = {"log.disk", "log.fsync", "idem", "jobs.durable"}
        now = {name: observe_topic(node.engine, name) for name in topics}
        for name in topics.keys() - touched:
            assert now[name] == topics[name], f"topic {name!r} changed"
        assert _data(now["log.disk"]["records"]) == [
            *_data(topics["log.disk"]["records"]),
            "usable-1",
            "usable-2",
        ]
        assert _data(now["log.fsync"]["records"]) == [*_data(topics["log.fsync"]["records"]), "usable-1"]
        assert _data(now["idem"]["records"]) == [*_data(topics["idem"]["records"]), "usable"]
        assert [r["$seq"] for r in now["jobs.durable"]["records"]] == [
            r["$seq"] for r in topics["jobs.durable"]["records"] if r["$seq"] != job
        ]
        assert now["jobs.durable"]["queue"]["leases"] == topics["jobs.durable"]["queue"]["leases"]
        for key in ("k1", "k4", "k5"):
            assert node.engine.append("idem", [{"data": "again"}], idempotency_key=key).deduped, key
        assert observe(node, full=False)["routers"] == state["routers"]
        assert observe(node, full=False)["schedules"] == state["schedules"]
        assert observe(node, full=False)["consumers"] == state["consumers"]
        assert node.routers.drain() > 0  # the routers' lag from the golden tail is forwarded
        await node.flush()
    finally:
        node.close()


async def test_golden_checkpoint_after_recovery_keeps_the_state(
    datadir: Path, expected: dict[str, Any]
) -> None:
    """A checkpoint over the recovered golden state (sealing, flag flips, a new snapshot, the
    WAL trimmed) and a restart give back the same state: the deletes, acks and dead-letter moves
    that recovery replayed from WAL ``DELETE`` frames reach their segments' flags before the
    frames are trimmed."""
    clock = ManualClock(expected["clock_ms"])
    node = await open_node(datadir, clock)
    try:
        await node.checkpoint()
    finally:
        await node.crash()
    node = await open_node(datadir, clock)
    try:
        assert_same(observe(node), expected["state"], "after a checkpoint and a restart")
    finally:
        node.close()


async def test_golden_clean_stop_after_recovery_keeps_the_heads(
    datadir: Path, expected: dict[str, Any]
) -> None:
    """The heads the crash recovery raised above the seq reservations stay raised after a clean
    stop without a final checkpoint (``CLEAN_STOP``): no seq that may have been handed out
    before the crash is handed out again."""
    clock = ManualClock(expected["clock_ms"])
    node = await open_node(datadir, clock)
    node.close()
    node = await open_node(datadir, clock)
    try:
        heads = {t["topic"]: t["head_seq"] for t in observe(node, full=False)["listing"]}
        assert heads == {t["topic"]: t["head_seq"] for t in expected["state"]["listing"]}
    finally:
        node.close()
