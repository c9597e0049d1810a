"""The chunk cache's budget is honest: ``coldstore.batch_size`` — what the cache counts for a
decoded batch — is within a few percent of what decoding it really allocated (tracemalloc),
whatever the batch's shape: big or tiny records, tags, and a ``$ts`` run per record (a segment
chunk of joined single-record writes), which the estimate once left out."""

from __future__ import annotations

import tracemalloc

import orjson
import pytest
from topics_engine.recordlog import merge_batches
from topics_engine.records import NewRecords, encode
from topics_engine.storage.coldstore import batch_size
from topics_engine.storage.formats import RecordBatch, decode_batch, encode_batch


def write(first_seq: int, ts: int, n: int, pad: int, tag: str | None) -> RecordBatch:
    datas = [orjson.dumps({"i": first_seq + i, "pad": "x" * pad}) for i in range(n)]
    return encode(NewRecords(datas, [tag] * n if tag else None, None, None), first_seq, ts)


def joined_writes(writes: int, per_write: int, pad: int, tagged: bool) -> RecordBatch:
    """``writes`` writes of ``per_write`` records, a ms apart, joined as sealing joins them."""
    return merge_batches(
        [
            write(
                1_000_000 + k * per_write,
                1_700_000_000_000 + k,
                per_write,
                pad,
                f"g{k // 7}" if tagged else None,
            )
            for k in range(writes)
        ]
    )


TUPLE_FREE_LIST = 2000
"""How many freed 2-tuples CPython keeps for reuse: a tuple taken from that list is not a new
allocation to tracemalloc, while a cache holding thousands of runs has used the list up."""


def decoded_bytes(encoded: bytes) -> tuple[RecordBatch, int]:
    """The batch ``encoded`` holds, and the bytes decoding it allocated (the 2-tuple free list
    drained first, so every run's tuple counts as it does in a full cache)."""
    drained = [tuple([i, -i]) for i in range(TUPLE_FREE_LIST + 100)]
    tracemalloc.start()
    try:
        batch, _ = decode_batch(encoded)
        allocated, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(drained) > TUPLE_FREE_LIST  # alive until measured
    return batch, allocated


@pytest.mark.parametrize(
    ("writes", "per_write", "pad", "tagged"),
    [
        (1, 1000, 50, False),  # one run
        (1000, 1, 16, False),  # a run per tiny record: the runs are most of it
        (333, 3, 16, True),
        (100, 1, 200, True),
        (60, 1, 1000, False),
    ],
)
@pytest.mark.skipif(tracemalloc.is_tracing(), reason="measures with tracemalloc, already started")
def test_the_cache_counts_what_a_decoded_batch_holds(
    writes: int, per_write: int, pad: int, tagged: bool
) -> None:
    batch, allocated = decoded_bytes(encode_batch(joined_writes(writes, per_write, pad, tagged)))
    assert len(batch.ts_runs) == writes
    assert 0.9 <= batch_size(batch) / allocated <= 1.2, (batch_size(batch), allocated)
