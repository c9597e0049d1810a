"""Batch reads through Spark against a real server: rows equal a ``diff`` walk in every
column, sub-range partitions cover each seq exactly once, the offset forms, tombstones both
ways, bad options failing the query with the option's name."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest
import topics
from topics_spark import DataLossError
from topics_spark.offsets import Loss, Position, probe_losses
from topics_spark.options import read_options
from topics_spark.reader import TopicRange, read_range

from tests.server.processes import ServerProcess


def _read(spark: Any, server: ServerProcess, **options: Any) -> Any:
    reader = spark.read.format("topics").option("url", server.url)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _seqs(df: Any) -> list[int]:
    return sorted(r.seq for r in df.select("seq").collect())


@pytest.fixture
def filled(server: ServerProcess, name: Callable[[str], str]) -> str:
    """A topic of 1000 records with tags on even seqs, nodes on every third, meta on some."""
    topic = name("filled")
    records = [
        {
            "data": {"i": i, "f": i / 8, "s": "é" * (i % 3)} if i % 5 else [i, None, True],
            **({"tag": f"t:{i % 4}"} if i % 2 == 0 else {}),
            **({"node": f"n{i % 2}"} if i % 3 == 0 else {}),
            **({"meta": {"trace": f"z{i}"}} if i % 7 == 0 else {}),
        }
        for i in range(1000)
    ]
    with topics.Client(server.url) as client:
        client.append_many(topic, records)
    return topic


def test_batch_read_equals_a_diff_walk_in_every_column(
    spark: Any, server: ServerProcess, filled: str
) -> None:
    rows = _read(spark, server, topic=filled).orderBy("seq").collect()
    with topics.Client(server.url) as client:
        walked = list(client.read(filled))
        raw = list(client.read_raw(filled))
    assert len(rows) == len(walked) == 1000
    for row, rec, text in zip(rows, walked, raw, strict=True):
        assert (row.topic, row.seq, row.node, row.tag) == (filled, rec.seq, rec.node, rec.tag)
        assert row.ts == dt.datetime.fromtimestamp(rec.ts / 1000, dt.UTC).replace(tzinfo=None)
        assert row.data == bytes(text.data).decode() and orjson.loads(row.data) == rec.data
        assert (orjson.loads(row.meta) if row.meta is not None else None) == rec.meta
    assert rows[0].data == "[0,null,true]" and rows[1].data == '{"i":1,"f":0.125,"s":"é"}'


def test_include_options_null_the_columns(spark: Any, server: ServerProcess, filled: str) -> None:
    df = _read(spark, server, topic=filled, includeMeta="false", includeTags="false")
    assert df.where("tag is not null or meta is not null").count() == 0
    assert df.where("node is not null").count() == 334


@pytest.mark.parametrize("min_partitions", [1, 2, 3, 7])
def test_partitions_cover_each_seq_exactly_once(
    spark: Any, server: ServerProcess, filled: str, min_partitions: int
) -> None:
    df = _read(spark, server, topic=filled, minPartitions=str(min_partitions))
    assert df.rdd.getNumPartitions() == min_partitions
    assert _seqs(df) == list(range(1, 1001))


def test_starting_and_ending_offsets(
    spark: Any, server: ServerProcess, filled: str, name: Callable[[str], str]
) -> None:
    assert _seqs(_read(spark, server, topic=filled, startingOffsets=f'{{"{filled}": 990}}')) == list(
        range(991, 1001)
    )  # an exclusive cursor
    ranged = _read(
        spark,
        server,
        topic=filled,
        startingOffsets=f'{{"{filled}": 10}}',
        endingOffsets=f'{{"{filled}": 20}}',
    )
    assert _seqs(ranged) == list(range(11, 21))  # the end is inclusive
    assert _read(spark, server, topic=filled, startingOffsets="latest").count() == 0
    assert (
        _read(spark, server, topic=filled, startingOffsets=f'{{"{filled}": 5000}}').count() == 0
    )  # past the head
    assert _read(spark, server, topic=filled, startingOffsets=f'{{"{filled}": -2}}').count() == 1000
    beyond = _read(spark, server, topic=filled, endingOffsets=f'{{"{filled}": 5000}}')  # clamped to the head
    assert beyond.count() == 1000
    other = name("other")
    with topics.Client(server.url) as client:
        client.append_many(other, [{"data": i} for i in range(5)])
    both = _read(spark, server, topics=f"{filled},{other}", startingOffsets=f'{{"{filled}": 995}}')
    assert sorted((r.topic, r.seq) for r in both.select("topic", "seq").collect()) == [
        *((filled, s) for s in range(996, 1001)),
        *((other, s) for s in range(1, 6)),
    ]
    prefix = other.rsplit("-", 1)[0]
    assert {
        r.topic for r in _read(spark, server, topicPrefix=prefix).select("topic").distinct().collect()
    } == {other}


def test_starting_and_ending_timestamps(
    spark: Any, server: ServerProcess, name: Callable[[str], str]
) -> None:
    """Kafka's meanings: a start at the first record written at or after the time, an end
    before the first record written at or after it; past the newest record, the head."""
    early, late = name("early"), name("late")
    with topics.Client(server.url) as client:
        client.append_many(early, [{"data": i} for i in range(3)])  # seqs 1-3
        client.append_many(late, [{"data": i} for i in range(2)])  # seqs 1-2
        time.sleep(0.003)  # a later $ts
        client.append_many(early, [{"data": i} for i in range(3, 5)])  # seqs 4-5
        mark = [r.ts for r in client.read(early)][3]
    ranged = _read(spark, server, topic=early, startingTimestamp=str(mark))
    assert _seqs(ranged) == [4, 5]
    assert _seqs(_read(spark, server, topic=early, endingTimestamp=str(mark))) == [1, 2, 3]
    assert _read(spark, server, topic=early, startingTimestamp=str(mark + 60_000)).count() == 0
    assert _read(spark, server, topic=early, endingTimestamp="0").count() == 0
    both = _read(
        spark,
        server,
        topics=f"{early},{late}",
        startingOffsetsByTimestamp=f'{{"{early}": {mark}}}',
        startingOffsets=f'{{"{late}": 1}}',  # the topics it does not name start here
    )
    assert sorted((r.topic, r.seq) for r in both.select("topic", "seq").collect()) == [
        (early, 4),
        (early, 5),
        (late, 2),
    ]


def test_ending_before_starting_is_an_error(spark: Any, server: ServerProcess, filled: str) -> None:
    df = _read(
        spark,
        server,
        topic=filled,
        startingOffsets=f'{{"{filled}": 50}}',
        endingOffsets=f'{{"{filled}": 20}}',
    )
    with pytest.raises(Exception, match="is before its startingOffsets"):
        df.collect()


@pytest.fixture
def evicted(server: ServerProcess, name: Callable[[str], str]) -> str:
    """A topic capped at 50 records after 120 appends: seqs 1..70 are gone."""
    topic = name("evicted")
    with topics.Client(server.url) as client:
        client.create_topic(topic, cap_records=50)
        client.append_many(topic, [{"data": i} for i in range(120)])
    return topic


def test_lost_records_fail_the_read_or_are_skipped(spark: Any, server: ServerProcess, evicted: str) -> None:
    assert _seqs(_read(spark, server, topic=evicted)) == list(range(71, 121))  # earliest: nothing lost
    behind = f'{{"{evicted}": 10}}'
    with pytest.raises(Exception, match=rf'topic "{evicted}": seqs 11\.\.70 were lost'):
        _read(spark, server, topic=evicted, startingOffsets=behind).collect()
    skipped = _read(spark, server, topic=evicted, startingOffsets=behind, failOnDataLoss="false")
    assert _seqs(skipped) == list(range(71, 121))


def test_a_task_meeting_a_tombstone_names_the_lost_seqs_of_its_range(
    server: ServerProcess, evicted: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A range planned before the records went (the task runs later): its own share of the gap."""
    strict = read_options({"url": server.url, "topic": evicted})
    with pytest.raises(DataLossError, match=rf'topic "{evicted}": seqs 31\.\.70 were lost \(cap\)'):
        list(read_range(strict, TopicRange(evicted, 30, 100)))
    lenient = read_options({"url": server.url, "topic": evicted, "failOnDataLoss": "false"})
    logging.getLogger("topics_spark").addHandler(caplog.handler)
    try:
        batches = list(read_range(lenient, TopicRange(evicted, 30, 100)))
    finally:
        logging.getLogger("topics_spark").removeHandler(caplog.handler)
    assert [s for b in batches for s in b.column("seq").to_pylist()] == list(range(71, 101))
    message = f'topic "{evicted}": seqs 31..70 were lost (cap) before this read reached them; skipped'
    assert message in caplog.text


def test_a_range_planned_from_cursor_0_still_reports_what_was_evicted(
    server: ServerProcess, evicted: str
) -> None:
    """The SDK reads from 0 without DataLoss (its ``trimmed``); a planned range from 0 is owed
    seq 1 on, so the connector counts it as lost."""
    strict = read_options({"url": server.url, "topic": evicted})
    with pytest.raises(DataLossError, match=rf'topic "{evicted}": seqs 1\.\.70 were lost \(cap\)'):
        list(read_range(strict, TopicRange(evicted, 0, 100)))
    lenient = read_options({"url": server.url, "topic": evicted, "failOnDataLoss": "false"})
    batches = list(read_range(lenient, TopicRange(evicted, 0, 100)))
    assert [s for b in batches for s in b.column("seq").to_pylist()] == list(range(71, 101))
    now = {evicted: Position(70, 120)}  # earliest retained 71: a cursor 0 is behind it
    assert probe_losses(lenient.connection, {evicted: 0}, now) == [Loss(evicted, 1, 70, "cap")]


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"startingOffsets": "first"}, "startingOffsets"),
        ({"minPartitions": "0"}, "minPartitions"),
        ({"failOnDataLoss": "maybe"}, "failOnDataLoss"),
    ],
)
def test_bad_options_fail_the_query_naming_the_option(
    spark: Any, server: ServerProcess, filled: str, options: dict[str, str], option: str
) -> None:
    with pytest.raises(Exception, match=f"option {option}: "):
        _read(spark, server, topic=filled, **options).collect()


def test_a_missing_topic_is_an_error(spark: Any, server: ServerProcess, name: Callable[[str], str]) -> None:
    with pytest.raises(Exception, match="topic_not_found|TopicNotFound"):
        _read(spark, server, topic=name("absent")).collect()


def test_deleted_records_are_no_loss(spark: Any, server: ServerProcess, name: Callable[[str], str]) -> None:
    """Deleted (or acked) records are skipped silently by every reader: no DataLossError."""
    t = name("deleted")
    with topics.Client(server.url) as client:
        client.append_many(t, [{"data": i} for i in range(10)])
        client.delete_records(t, before_seq=6)
    assert _seqs(_read(spark, server, topic=t, startingOffsets=f'{{"{t}": 2}}')) == [6, 7, 8, 9, 10]
    assert _seqs(_read(spark, server, topic=t, startingOffsets=f'{{"{t}": 0}}')) == [6, 7, 8, 9, 10]


def test_a_topic_deleted_after_planning_is_lost_data(
    server: ServerProcess, name: Callable[[str], str]
) -> None:
    t = name("gone")
    with topics.Client(server.url) as client:
        client.append_many(t, [{"data": i} for i in range(10)])
        client.delete_topic(t)
    strict = read_options({"url": server.url, "topic": t})
    with pytest.raises(DataLossError, match=rf'topic "{t}": seqs 1\.\.10 were lost \(topic deleted\)'):
        list(read_range(strict, TopicRange(t, 0, 10)))
    lenient = read_options({"url": server.url, "topic": t, "failOnDataLoss": "false"})
    assert list(read_range(lenient, TopicRange(t, 0, 10))) == []
