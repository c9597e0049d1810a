"""Delete flags of sealed records: a checkpoint flips each deleted record's flag once, and a
segment is dropped only when every record in it is gone."""

from __future__ import annotations

from pathlib import Path

from topics_engine import ManualClock

from .harness import T0, crash, diff_seqs, flush, open_node


async def test_two_deletes_of_one_sealed_record_flip_it_once(tmp_path: Path) -> None:
    """Two ``fsync`` deletes planned before either is applied both name the record; the
    checkpoint must not count it twice, or the segment looks wholly deleted and is dropped
    with its live record."""
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    e = node.engine
    await e.put_topic("t", {"durability": "fsync"}).wait
    await e.append("t", [{"data": 0}, {"data": 1}]).wait
    await flush(node)
    await node.store.checkpoint()  # records 1 and 2 in one sealed segment
    first = e.delete_records("t", before_seq=2)
    second = e.delete_records("t", before_seq=2)  # planned before the first is applied
    assert first.deleted == second.deleted == 1
    await first.wait
    await second.wait
    await flush(node)
    await node.store.checkpoint()
    crash(node)

    node = await open_node(tmp_path, clock)
    try:
        assert diff_seqs(node.engine, "t") == [2]
    finally:
        node.close()
