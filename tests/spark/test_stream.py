"""Streaming reads through Spark: micro-batches capped by ``maxOffsetsPerTrigger``, a query
stopped and restarted from its checkpoint (no loss, no duplicate), new topics under a prefix
picked up, and the stream reader's offsets and replays being deterministic."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import topics
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows
from topics_spark import DataLossError
from topics_spark.options import read_options
from topics_spark.reader import TopicsStreamReader

from tests.server.processes import ServerProcess


def _stream(spark: Any, server: ServerProcess, **options: str) -> Any:
    reader = spark.readStream.format("topics").option("url", server.url)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _run_available_now(df: Any, checkpoint: Path, seen: list[tuple[int, list[tuple[str, int]]]]) -> Any:
    """Runs ``df`` to the current heads (``availableNow``), recording each micro-batch's rows."""

    def collect(batch: Any, batch_id: int) -> None:
        seen.append((batch_id, [(r.topic, r.seq) for r in batch.select("topic", "seq").collect()]))

    query = df.writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint))
    query = query.trigger(availableNow=True).start()
    query.awaitTermination(120)
    assert query.exception() is None, query.exception()
    return query


def test_micro_batches_respect_max_offsets_and_a_restart_resumes_exactly(
    spark: Any, server: ServerProcess, name: Callable[[str], str], tmp_path: Path
) -> None:
    topic = name("stream")
    with topics.Client(server.url) as client:
        client.append_many(topic, [{"data": i} for i in range(1000)])
    seen: list[tuple[int, list[tuple[str, int]]]] = []
    df = _stream(spark, server, topic=topic, maxOffsetsPerTrigger="300")
    _run_available_now(df, tmp_path / "ck", seen)
    sizes = [len(rows) for _, rows in seen if rows]
    assert sizes == [300, 300, 300, 100]
    with topics.Client(server.url) as client:
        client.append_many(topic, [{"data": i} for i in range(1000, 1450)])
    _run_available_now(_stream(spark, server, topic=topic, maxOffsetsPerTrigger="300"), tmp_path / "ck", seen)
    seqs = [seq for _, rows in seen for _, seq in rows]
    assert sorted(seqs) == list(range(1, 1451)) and len(seqs) == len(set(seqs))  # no loss, no duplicate
    batch_ids = [b for b, rows in seen if rows]
    assert batch_ids == sorted(batch_ids) and len(batch_ids) == len(set(batch_ids))


def test_starting_offsets_and_a_prefix_picking_up_new_topics(
    spark: Any, server: ServerProcess, name: Callable[[str], str], tmp_path: Path
) -> None:
    prefix = name("orders") + "."
    with topics.Client(server.url) as client:
        client.append_many(prefix + "eu", [{"data": i} for i in range(20)])
    seen: list[tuple[int, list[tuple[str, int]]]] = []
    df = _stream(spark, server, topicPrefix=prefix, startingOffsets=f'{{"{prefix}eu": 15}}')
    _run_available_now(df, tmp_path / "ck", seen)
    assert sorted(r for _, rows in seen for r in rows) == [(prefix + "eu", s) for s in range(16, 21)]
    with topics.Client(server.url) as client:
        client.append_many(prefix + "us", [{"data": i} for i in range(7)])  # a new topic
        client.append(prefix + "eu", 20)
    seen.clear()
    _run_available_now(_stream(spark, server, topicPrefix=prefix), tmp_path / "ck", seen)
    assert sorted(r for _, rows in seen for r in rows) == [(prefix + "eu", 21)] + [
        (prefix + "us", s) for s in range(1, 8)
    ]


def test_a_stream_starts_at_its_starting_timestamp(server: ServerProcess, name: Callable[[str], str]) -> None:
    topic = name("since")
    with topics.Client(server.url) as client:
        client.append_many(topic, [{"data": i} for i in range(3)])
        time.sleep(0.003)  # a later $ts
        client.append_many(topic, [{"data": i} for i in range(3, 6)])
        mark = [r.ts for r in client.read(topic)][3]
    opts = read_options({"url": server.url, "topic": topic, "startingTimestamp": str(mark)}, streaming=True)
    reader = TopicsStreamReader(opts)
    start = reader.initialOffset()
    assert start == {topic: 3}
    assert reader.latestOffset(start, ReadAllAvailable()) == {topic: 6}
    early = read_options({"url": server.url, "topic": topic, "startingTimestamp": "0"}, streaming=True)
    assert TopicsStreamReader(early).initialOffset() == {topic: 0}  # the earliest record


def test_stream_reader_offsets_limits_and_replays(server: ServerProcess, name: Callable[[str], str]) -> None:
    a, b = name("sa"), name("sb")
    with topics.Client(server.url) as client:
        client.append_many(a, [{"data": i} for i in range(300)])
        client.append_many(b, [{"data": i} for i in range(100)])
    opts = read_options(
        {"url": server.url, "topics": f"{a},{b}", "maxOffsetsPerTrigger": "200"}, streaming=True
    )
    reader = TopicsStreamReader(opts)
    start = reader.initialOffset()
    assert start == {a: 0, b: 0} and list(start) == sorted(start)
    assert reader.getDefaultReadLimit() == ReadMaxRows(200)
    end = reader.latestOffset(start, ReadMaxRows(200))
    assert end == {a: 150, b: 50}  # the budget shared by backlog
    assert reader.latestOffset(start, ReadAllAvailable()) == {a: 300, b: 100}
    parts = reader.partitions(start, end)
    assert [(p.topic, p.start, p.end) for p in parts] == [
        (p.topic, p.start, p.end) for p in reader.partitions(start, end)
    ]  # a replayed micro-batch plans the same ranges
    rows = [s for p in parts for batch in reader.read(p) for s in batch.column("seq").to_pylist()]
    again = [s for p in parts for batch in reader.read(p) for s in batch.column("seq").to_pylist()]
    assert sorted(rows) == sorted([*range(1, 151), *range(1, 51)]) and rows == again
    reader.prepareForTriggerAvailableNow()
    assert reader.latestOffset(end, ReadAllAvailable()) == {a: 300, b: 100}  # the target: these heads
    with topics.Client(server.url) as client:
        client.append(a, "after the target")
    assert reader.latestOffset(end, ReadAllAvailable()) == {a: 300, b: 100}  # not past the target
    assert reader.partitions(end, end) == []


def test_a_topic_recreated_under_a_stream_is_read_again_from_its_start(
    server: ServerProcess, name: Callable[[str], str]
) -> None:
    t = name("recreated")
    with topics.Client(server.url) as client:
        client.append_many(t, [{"data": i} for i in range(10)])
        client.delete_topic(t)
        client.append_many(t, [{"data": i} for i in range(4)])  # seqs 1..4 again, behind the stream
    strict = TopicsStreamReader(read_options({"url": server.url, "topic": t}, streaming=True))
    with pytest.raises(
        DataLossError, match=rf'topic "{t}" was deleted and recreated after .* offset 6; ~4 records'
    ):
        strict.latestOffset({t: 6}, ReadAllAvailable())  # 7..10 of the old topic never read
    assert strict.latestOffset({t: 10}, ReadAllAvailable()) == {t: 4}  # it had read all: no loss
    opts = read_options({"url": server.url, "topic": t, "failOnDataLoss": "false"}, streaming=True)
    lenient = TopicsStreamReader(opts)
    end = lenient.latestOffset({t: 6}, ReadAllAvailable())
    assert end == {t: 4}
    parts = lenient.partitions({t: 6}, end)  # the new topic, from its start
    assert [s for p in parts for b in lenient.read(p) for s in b.column("seq").to_pylist()] == [1, 2, 3, 4]
    capped_end = lenient.latestOffset({t: 6}, ReadMaxRows(3))  # the catch-up honours the cap
    assert capped_end == {t: 3}


def test_available_now_targets_the_heads_at_its_first_micro_batch(
    server: ServerProcess, name: Callable[[str], str]
) -> None:
    """Spark calls prepareForTriggerAvailableNow before initialOffset: records appended in
    between are neither a loss nor read twice."""
    t = name("avail")
    with topics.Client(server.url) as client:
        client.append_many(t, [{"data": i} for i in range(10)])
        opts = read_options({"url": server.url, "topic": t, "startingOffsets": "latest"}, streaming=True)
        reader = TopicsStreamReader(opts)
        reader.prepareForTriggerAvailableNow()
        client.append_many(t, [{"data": i} for i in range(3)])
        start = reader.initialOffset()
        assert start == {t: 13}
        assert reader.latestOffset(start, ReadAllAvailable()) == {t: 13}
        client.append(t, "later")
        assert reader.latestOffset(start, ReadAllAvailable()) == {t: 13}  # not past the target


def test_a_new_prefix_topic_enters_at_its_earliest_record(
    server: ServerProcess, name: Callable[[str], str]
) -> None:
    """Whatever a topic lost before the stream saw it is not the stream's loss."""
    prefix = name("np") + "."
    with topics.Client(server.url) as client:
        client.append(prefix + "a", 0)
    reader = TopicsStreamReader(read_options({"url": server.url, "topicPrefix": prefix}, streaming=True))
    start = reader.initialOffset()
    with topics.Client(server.url) as client:
        client.create_topic(prefix + "b", cap_records=5)
        client.append_many(prefix + "b", [{"data": i} for i in range(12)])  # seqs 1..7 evicted
    first = reader.latestOffset(start, ReadAllAvailable())
    assert first == {prefix + "a": 1, prefix + "b": 7}
    assert [(p.topic, p.start, p.end) for p in reader.partitions(start, first)] == [(prefix + "a", 0, 1)]
    second = reader.latestOffset(first, ReadAllAvailable())
    rows = [
        s
        for p in reader.partitions(first, second)
        for b in reader.read(p)
        for s in b.column("seq").to_pylist()
    ]
    assert rows == [8, 9, 10, 11, 12]
