"""Writes through Spark: read → write round-trips exactly, column types encode as JSON, bad rows
fail naming the row, and a write lands exactly once even when a partition's write runs twice
or a streaming micro-batch is replayed."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import topics
from pyspark import TaskContext
from topics_spark import RowError
from topics_spark.options import write_options
from topics_spark.writer import TopicsStreamWriter, TopicsWriter, warn_if_window_short

from tests.server.processes import ServerProcess


def _write(df: Any, server: ServerProcess, **options: str) -> None:
    writer = df.write.format("topics").mode("append").option("url", server.url)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save()


def _records(server: ServerProcess, topic: str) -> list[topics.Record]:
    with topics.Client(server.url) as client:
        return list(client.read(topic))


def test_read_then_write_round_trips_exactly(
    spark: Any, server: ServerProcess, name: Callable[[str], str]
) -> None:
    src, dst = name("src"), name("dst")
    records = [
        {
            "data": {"i": i, "f": i / 3, "s": "ü" * (i % 3), "n": None},
            "tag": f"t{i % 3}",
            "node": "n",
            "meta": {"k": i},
        }
        if i % 2
        else {"data": [i, True, "x"]}
        for i in range(500)
    ]
    with topics.Client(server.url) as client:
        client.append_many(src, records)
    df = spark.read.format("topics").option("url", server.url).option("topic", src).load()
    _write(df.select("data", "tag", "node", "meta"), server, topic=dst)
    got = sorted(_records(server, dst), key=lambda r: r.data if isinstance(r.data, list) else [r.data["i"]])
    want = sorted(_records(server, src), key=lambda r: r.data if isinstance(r.data, list) else [r.data["i"]])
    assert [(r.data, r.tag, r.node, r.meta) for r in got] == [(r.data, r.tag, r.node, r.meta) for r in want]
    with topics.Client(server.url) as client:
        assert sorted(bytes(r.data) for r in client.read_raw(dst)) == sorted(
            bytes(r.data) for r in client.read_raw(src)
        )


def test_column_types_become_json_and_the_topic_column_routes(
    spark: Any, server: ServerProcess, name: Callable[[str], str]
) -> None:
    a, b = name("ta"), name("tb")
    df = spark.sql(
        f"""SELECT named_struct('id', id, 'tags', array('x', 'y'), 'm', map('k', id * 1.5)) AS value,
                   CAST(id AS STRING) AS tag,
                   IF(id % 2 = 0, '{a}', '{b}') AS topic,
                   to_json(named_struct('src', 'spark')) AS meta
            FROM range(6)"""
    )
    _write(df, server)
    assert sorted((r.data["id"], r.tag, r.meta["src"]) for r in _records(server, a)) == [
        (0, "0", "spark"),
        (2, "2", "spark"),
        (4, "4", "spark"),
    ]
    assert min(_records(server, b), key=lambda r: r.data["id"]).data == {
        "id": 1,
        "tags": ["x", "y"],
        "m": {"k": 1.5},
    }
    plain = spark.createDataFrame([("not json",), ('{"ok": 1}',)], "data string")
    t = name("strings")
    _write(plain, server, topic=t, dataFormat="string")
    assert sorted(r.data for r in _records(server, t)) == ["not json", '{"ok": 1}']


def test_bad_rows_and_frames_fail_naming_what_is_wrong(
    spark: Any, server: ServerProcess, name: Callable[[str], str]
) -> None:
    t = name("bad")
    bad_json = spark.createDataFrame([('{"ok": 1}',), ("not json",)], "data string").coalesce(1)
    with pytest.raises(Exception, match=r"row 1 of partition 0: data is not JSON text"):
        _write(bad_json, server, topic=t)
    long_tag = spark.createDataFrame([("1", "x"), ("2", "t" * 300)], "data string, tag string").coalesce(1)
    with pytest.raises(Exception, match=r"row 1 of partition 0 cannot be written .*tag is 300 characters"):
        _write(long_tag, server, topic=t)
    with pytest.raises(Exception, match="exactly one of the columns data or value"):
        _write(spark.createDataFrame([(1,)], "x int"), server, topic=t)
    with pytest.raises(Exception, match="needs the topic option or a topic column"):
        _write(spark.createDataFrame([("1",)], "data string"), server)
    with pytest.raises(Exception, match="option dataFormat: "):
        _write(spark.createDataFrame([("1",)], "data string"), server, topic=t, dataFormat="xml")
    with pytest.raises(Exception, match="append-only"):
        spark.createDataFrame([("1",)], "data string").write.format("topics").mode("overwrite").option(
            "url", server.url
        ).option("topic", t).save()


def _batches(n: int, start: int = 0) -> Iterator[pa.RecordBatch]:
    data = [json.dumps({"i": i}) for i in range(start, start + n)]
    yield pa.RecordBatch.from_pydict({"data": pa.array(data, pa.string())})


def test_a_partition_written_twice_lands_once(server: ServerProcess, name: Callable[[str], str]) -> None:
    """The same task identity (write id, partition) twice — a retried task: the second is deduped."""
    t = name("twice")
    writer = TopicsWriter(write_options({"url": server.url, "topic": t, "batchRows": "400"}))
    first = writer.write(_batches(1000))
    second = writer.write(_batches(1000))
    assert (first.rows, first.appended, first.deduped, first.blocks) == (1000, 1000, 0, 3)
    assert (second.rows, second.appended, second.deduped) == (1000, 0, 1000)
    assert [r.data["i"] for r in _records(server, t)] == list(range(1000))
    other_run = TopicsWriter(write_options({"url": server.url, "topic": t}))  # no writeId: a new write
    assert other_run.write(_batches(10)).appended == 10


def test_rows_cut_differently_on_a_replay_are_written_again_never_dropped(
    server: ServerProcess, name: Callable[[str], str]
) -> None:
    """A replay whose blocks differ (another batchRows here; another partitioning alike) must
    not be answered "already written" for rows never written: the key digests the rows."""
    t = name("recut")
    first = TopicsWriter(write_options({"url": server.url, "topic": t, "writeId": "w", "batchRows": "500"}))
    assert first.write(_batches(500)).appended == 500  # the task died after its first block
    replay = TopicsWriter(write_options({"url": server.url, "topic": t, "writeId": "w", "batchRows": "1000"}))
    assert replay.write(_batches(1000)).appended == 1000
    assert sorted(set(r.data["i"] for r in _records(server, t))) == list(range(1000))


def test_a_write_only_key_can_write(
    make_server: Callable[..., ServerProcess], name: Callable[[str], str]
) -> None:
    server = make_server({"TOPICS_API_KEYS": "ops::,wo:w:"})
    t = name("wo")
    with topics.Client(server.url, api_key="ops") as admin:
        admin.create_topic(t, idempotency_window_ms=1000)
    opts = write_options({"url": server.url, "apiKey": "wo", "topic": t})
    warn_if_window_short(opts)  # cannot read the config: no warning, no failure
    assert TopicsWriter(opts).write(_batches(5)).appended == 5


def test_a_named_batch_write_run_again_is_deduped(
    spark: Any, server: ServerProcess, name: Callable[[str], str]
) -> None:
    t = name("rerun")
    df = spark.range(2000).selectExpr("to_json(named_struct('id', id)) AS data").repartition(3)
    _write(df, server, topic=t, writeId="nightly-2026-11-24")
    _write(df, server, topic=t, writeId="nightly-2026-11-24")
    assert sorted(r.data["id"] for r in _records(server, t)) == list(range(2000))


def test_a_stream_write_task_run_twice_lands_once(server: ServerProcess, name: Callable[[str], str]) -> None:
    t = name("stwice")
    writer = TopicsStreamWriter(write_options({"url": server.url, "topic": t}))
    ctx = TaskContext()
    ctx._partitionId = 1
    ctx._localProperties = {"sql.streaming.queryId": "q-1", "streaming.sql.batchId": "7"}
    TaskContext._setTaskContext(ctx)
    try:
        assert writer.write(_batches(50)).appended == 50
        assert writer.write(_batches(50)).deduped == 50  # the same micro-batch's task again
        ctx._localProperties = {"sql.streaming.queryId": "q-1", "streaming.sql.batchId": "8"}
        assert writer.write(_batches(50, 50)).appended == 50  # the next micro-batch
    finally:
        TaskContext._setTaskContext(None)  # type: ignore[arg-type]
    assert [r.data["i"] for r in _records(server, t)] == list(range(100))


def test_a_replayed_micro_batch_is_written_once(
    spark: Any, server: ServerProcess, name: Callable[[str], str], tmp_path: Path
) -> None:
    """The query dies after the sink wrote a micro-batch but before Spark recorded it as done
    (its commit-log entry removed): on restart Spark runs the batch again; the keys dedupe it."""
    src, dst = name("ssrc"), name("sdst")
    with topics.Client(server.url) as client:
        client.append_many(src, [{"data": {"i": i}} for i in range(300)])
        client.create_topic(dst, idempotency_window_ms=3_600_000)
    checkpoint = tmp_path / "ck"

    def run() -> None:
        stream = spark.readStream.format("topics").option("url", server.url).option("topic", src)
        query = (
            stream.option("maxOffsetsPerTrigger", "100")
            .load()
            .select("data")
            .writeStream.format("topics")
            .option("url", server.url)
            .option("topic", dst)
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(120)
        assert query.exception() is None, query.exception()

    run()
    assert len(_records(server, dst)) == 300
    commits = sorted(
        (checkpoint / "commits").iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else -1
    )
    last = [p for p in commits if p.name.isdigit()][-1]
    last.unlink()
    (checkpoint / "commits" / f".{last.name}.crc").unlink(missing_ok=True)
    with topics.Client(server.url) as client:
        client.append_many(src, [{"data": {"i": i}} for i in range(300, 350)])
    run()  # replays the uncommitted batch, then reads the new records
    assert last.exists(), "Spark did not run the uncommitted micro-batch again"
    assert sorted(r.data["i"] for r in _records(server, dst)) == list(range(350))


def _write_batch(server: ServerProcess, topic: str, batch: pa.RecordBatch, **options: str) -> Any:
    return TopicsWriter(write_options({"url": server.url, "topic": topic, **options})).write(iter([batch]))


def test_values_encode_exactly(server: ServerProcess, name: Callable[[str], str]) -> None:
    """Decimals keep every digit; JSON the server stores but orjson refuses (1e400) and meta
    text round-trip unchanged; string views and large binaries are text; int-keyed maps work."""
    import decimal

    t = name("exact")
    batch = pa.RecordBatch.from_pydict(
        {
            "data": pa.array(
                [decimal.Decimal("1234567.891234567891000000"), decimal.Decimal("1E+2")],
                pa.decimal128(38, 18),
            ),
            "meta": pa.array([[(1, "x")], None], pa.map_(pa.int32(), pa.string())),
        }
    )
    assert _write_batch(server, t, batch).appended == 2
    texts = pa.RecordBatch.from_pydict(
        {
            "data": pa.array(['{"x":1e400}', '{"a":1}'], pa.string_view()),
            "meta": pa.array([b'{"v":1.10}', None], pa.large_binary()),
        }
    )
    assert _write_batch(server, t, texts).appended == 2
    with topics.Client(server.url) as client:
        raw = [(bytes(r.data), bytes(r.meta)) for r in client.read_raw(t)]
    assert raw == [
        (b"1234567.891234567891000000", b'{"1":"x"}'),
        (b"100.000000000000000000", b""),
        (b'{"x":1e400}', b'{"v":1.10}'),
        (b'{"a":1}', b""),
    ]


@pytest.mark.parametrize(
    ("columns", "problem"),
    [
        (
            {"data": pa.array(["1", "2"]), "meta": pa.array(["{}", "[1]"])},
            "row 1 of partition 0: meta must be a JSON object",
        ),
        ({"data": pa.array([b'"ok"', b"\xff"], pa.binary())}, "row 1 of partition 0: data is not UTF-8 text"),
        ({"data": pa.array(['"a"', '1}, {"data": 2'])}, "row 1 of partition 0: data is not JSON text"),
        ({"data": pa.array(['"a"', "NaN"])}, "row 1 of partition 0: data is not JSON text"),
        (
            {"data": pa.array(["1", "2"]), "meta": pa.array(['{"a":1}', '{"a":NaN}'])},
            "row 1 of partition 0: meta",
        ),
    ],
)
def test_bad_values_name_their_row(
    server: ServerProcess, name: Callable[[str], str], columns: dict[str, Any], problem: str
) -> None:
    with pytest.raises(RowError, match=problem):
        _write_batch(server, name("badv"), pa.RecordBatch.from_pydict(columns))
    with pytest.raises(RowError, match="row 1 of partition 0: data is not UTF-8 text"):
        _write_batch(
            server,
            name("badv"),
            pa.RecordBatch.from_pydict({"data": pa.array([b"ok", b"\xff"])}),
            dataFormat="string",
        )


def test_keys_do_not_depend_on_how_rows_arrive_in_batches(
    server: ServerProcess, name: Callable[[str], str]
) -> None:
    """A topic column: the same rows cut into other Arrow batches on a retry send the same keys."""
    ka, kb = name("ka"), name("kb")
    rows = pa.RecordBatch.from_pydict(
        {"data": pa.array(["1", "2", "3", "4"]), "topic": pa.array([ka, kb, kb, ka])}
    )
    opts = write_options({"url": server.url, "writeId": "cut", "batchRows": "2"})
    first = TopicsWriter(opts).write(iter([rows]))
    again = TopicsWriter(opts).write(iter([rows.slice(0, 3), rows.slice(3)]))
    assert (first.appended, again.appended, again.deduped) == (4, 0, 4)
    assert [r.data for r in _records(server, ka)] == [1, 4] and [r.data for r in _records(server, kb)] == [
        2,
        3,
    ]
