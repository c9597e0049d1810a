"""The PySpark connector (``sdk/spark/topics_spark``) against one ``topics serve``: batch reads,
batch writes and one streaming micro-batch's latency, next to the SDK doing the same reads in
this one process.

- **load**: ``N`` small records (``bench/payloads.py`` events, ~100 B) appended with
  ``topics.Client.append_many``.
- **read**: ``spark.read.format("topics")`` of the whole topic with ``minPartitions`` 1 and 2,
  forced through ``df.select("seq", "data").write.format("noop")`` (every row goes through,
  nothing is collected), against ``topics.Client.read`` and ``read_raw`` iterated and counted in
  this process, and the connector's own task function (``topics_spark.reader.read_range``: pages
  of ``read_raw`` → Arrow record batches) run in this process over the whole topic — what the
  Python side of a read costs without Spark. Planning puts at most ~100 000 seqs in a task
  (``offsets.SEQS_PER_PARTITION``), so from 200 000 records on both settings plan the same
  ranges; ``partitions`` in the JSON says how many each planned.
- **write**: a DataFrame of ``N`` rows whose ``data`` column is the same ~100 B events as JSON
  text (built by ``to_json`` in the JVM), ``repartition(2)``, ``write.format("topics")`` into a
  fresh topic each round; the topic's ``count`` is checked to equal ``N`` every time. Next to
  it: the same DataFrame into ``noop`` (what the JVM spends producing the rows), and the
  connector's write task (``writer._Partition``) fed the rows as Arrow batches in this process.
- **streaming**: ``readStream.format("topics")`` → ``writeStream.format("noop")`` with
  ``trigger(processingTime="0 seconds")`` (an idle query asks for new offsets every
  ``spark.sql.streaming.pollingDelay``, 10 ms). Once it has caught up, one record is appended
  with the SDK and ``query.lastProgress`` is polled every 10 ms until a micro-batch whose
  source range holds that record's seq has completed. ``detected_ms`` is append → seen by the
  poll (includes up to 10 ms of polling); ``completed_ms`` is append → the micro-batch's end as
  Spark reports it (progress ``timestamp`` + ``durationMs.triggerExecution``, same host clock).
  Repeated ``--latency-samples`` times, 0.3–0.5 s apart; medians of each ``durationMs`` phase.
  Before the samples, ``idle_cpu_cores``: the CPU the caught-up query uses while nothing arrives.

Each timed phase also records ``cpu_seconds``: CPU seconds of the driver, the server, the JVM, the
Python workers and ``rest_of_machine`` (busy time of every other process, from /proc/stat; tells
a round disturbed by other work).

One local SparkSession (``local[2]``, UI off, log level ERROR), warmed up by a small read and a
small write first so JVM and Python-worker start-up is not measured. The server runs with the
elastic throttle off (``TOPICS_THROTTLE=false``) so the bulk load meets no 429s. Nothing is
pinned by default (``--pin`` puts the server on CPU 0; Spark's JVM and Python workers float):
with 2 cores, the server, the JVM, the Python workers and this driver share them. Rates are
records/s of the median round; JSON goes to stdout (and ``--out``), progress to stderr.

    .venv/bin/python bench/spark_bench.py --records 1000000 --rounds 3 --out bench/results/spark-<commit>.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import topics  # noqa: E402

from bench.http_bench import can_pin, git, machine_busy_seconds, topics_server  # noqa: E402
from bench.output import emit  # noqa: E402
from bench.payloads import make_data  # noqa: E402

PAGE = 1000
"""Records per ``diff`` page, SDK and connector alike (both default to it)."""
DATA_SQL = (
    "to_json(named_struct('id', id, 'user', concat('user-', lpad(cast(id % 100000 AS string), 6, '0')), "
    "'event', 'page_view', 'path', element_at(array('/products/widget-pro', '/cart/checkout-step', "
    "'/search/results-page', '/account/settings'), cast(id % 4 AS int) + 1), "
    "'ms', 1700000000000 + id)) AS data"
)
"""``bench/payloads.py``'s ``make_data(id)`` as JSON text, built in the JVM (same bytes)."""


def log(msg: str) -> None:
    print(f"[spark-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def load(base: str, topic: str, n: int) -> None:
    with topics.Client(base) as client:
        for i in range(0, n, 100_000):
            client.append_many(topic, [{"data": make_data(j)} for j in range(i, min(n, i + 100_000))])
        assert client.topic(topic).count == n


def spark_session() -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    import topics_spark
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("topics-spark-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    topics_spark.register(spark)
    return spark


# -- reads -----------------------------------------------------------------------------------


def spark_read_df(spark: Any, base: str, topic: str, min_partitions: int) -> Any:
    return (
        spark.read.format("topics")
        .option("url", base)
        .option("topic", topic)
        .option("minPartitions", str(min_partitions))
        .load()
    )


def spark_read(spark: Any, base: str, topic: str, min_partitions: int) -> None:
    df = spark_read_df(spark, base, topic, min_partitions)
    df.select("seq", "data").write.format("noop").mode("overwrite").save()


def sdk_read(base: str, topic: str, n: int, raw: bool) -> None:
    with topics.Client(base) as client:
        it = client.read_raw(topic, page_size=PAGE) if raw else client.read(topic, page_size=PAGE)
        count = sum(1 for _ in it)
    assert count == n, count


def task_read(base: str, topic: str, n: int) -> None:
    """The connector's task function over the whole topic, in this process (no Spark)."""
    from topics_spark.options import read_options
    from topics_spark.reader import TopicRange, read_range

    opts = read_options({"url": base, "topic": topic})
    count = sum(b.num_rows for b in read_range(opts, TopicRange(topic, 0, n)))
    assert count == n, count


# -- writes ----------------------------------------------------------------------------------


def spark_write(spark: Any, base: str, topic: str, n: int) -> None:
    df = spark.range(n).selectExpr(DATA_SQL).repartition(2)
    df.write.format("topics").mode("append").option("url", base).option("topic", topic).save()


def write_source(spark: Any, n: int) -> None:
    """The write's DataFrame (rows, ``to_json``, ``repartition(2)``) into the noop sink: what the
    JVM spends producing the rows before any of them reaches the connector."""
    spark.range(n).selectExpr(DATA_SQL).repartition(2).write.format("noop").mode("overwrite").save()


def arrow_rows(n: int) -> list[Any]:
    """The write's rows as Arrow record batches of 10 000 (Spark's ``maxRecordsPerBatch``)."""
    import orjson
    import pyarrow as pa

    data = pa.array([orjson.dumps(make_data(i)).decode() for i in range(n)], pa.string())
    batches: list[Any] = pa.Table.from_arrays([data], names=["data"]).to_batches(max_chunksize=10_000)
    return batches


def task_write(base: str, topic: str, batches: list[Any], n: int) -> None:
    """The connector's write task over all ``n`` rows, in this process (no Spark)."""
    from topics_spark.options import write_options
    from topics_spark.writer import _Partition

    opts = write_options({"url": base, "topic": topic})
    commit = _Partition(opts, f"bench:{uuid.uuid4().hex}:0", 0).run(iter(batches))
    assert commit.appended == n, commit


# -- CPU accounting --------------------------------------------------------------------------


def _cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _descendants(root: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, []))
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def cpu_by_process(server_pid: int) -> dict[int, tuple[str, float]]:
    """CPU seconds so far of this process and its descendants, each labelled: ``driver``,
    ``server``, ``jvm``, ``stream_source`` (the streaming reader's long-lived Python process),
    ``python_workers`` (Spark's Python daemons and workers), ``other``."""
    server_tree = set(_descendants(server_pid))
    out: dict[int, tuple[str, float]] = {}
    for pid in _descendants(os.getpid()):
        cmd = _cmdline(pid)
        if pid == os.getpid():
            label = "driver"
        elif pid in server_tree:
            label = "server"
        elif "java" in cmd.split(" ", 1)[0]:
            label = "jvm"
        elif "python_streaming_source_runner" in cmd:
            label = "stream_source"
        elif "pyspark" in cmd:
            label = "python_workers"
        else:
            label = "other"
        out[pid] = (label, _cpu_s(pid))
    return out


def cpu_split(before: dict[int, tuple[str, float]], after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds per label between two :func:`cpu_by_process` readings (a process that exited
    in between is not counted)."""
    out: dict[str, float] = {}
    for pid, (label, cpu) in after.items():
        out[label] = out.get(label, 0.0) + cpu - before.get(pid, (label, 0.0))[1]
    return {k: round(v, 2) for k, v in sorted(out.items())}


# -- streaming -------------------------------------------------------------------------------


def _progress(query: Any) -> dict[str, Any] | None:
    p = query.lastProgress
    return dict(p) if p is not None else None


def _covers(progress: dict[str, Any], topic: str, seq: int) -> bool:
    """The micro-batch read ``seq`` of ``topic``: its source range ``(start, end]`` holds it."""
    for source in progress.get("sources") or []:
        start, end = source.get("startOffset"), source.get("endOffset")
        start = json.loads(start) if isinstance(start, str) else start
        end = json.loads(end) if isinstance(end, str) else end
        if isinstance(end, dict) and topic in end:
            before = (start or {}).get(topic, 0) if isinstance(start, dict) else 0
            if before < seq <= end[topic]:
                return True
    return False


def _ts_ms(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000


IDLE_S = 3.0
"""How long the caught-up, idle streaming query's CPU use is measured."""


def stream_latency(spark: Any, base: str, server_pid: int, samples: int, workdir: Path) -> dict[str, Any]:
    topic = f"spark-stream-{uuid.uuid4().hex[:6]}"
    rng = random.Random(12)
    detected: list[float] = []
    completed: list[float] = []
    rows: list[int] = []
    phases: dict[str, list[float]] = {}
    with topics.Client(base) as client:
        client.append_many(topic, [{"data": make_data(i)} for i in range(10)])
        df = spark.readStream.format("topics").option("url", base).option("topic", topic).load()
        query = (
            df.select("seq", "data")
            .writeStream.format("noop")
            .option("checkpointLocation", str(workdir / "stream-ck"))
            .trigger(processingTime="0 seconds")
            .start()
        )
        try:
            deadline = time.monotonic() + 120
            while not ((p := _progress(query)) and _covers(p, topic, 10)):
                if query.exception() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"stream never caught up: {query.exception()}")
                time.sleep(0.05)
            time.sleep(1.0)  # idle for a while: the query is polling for new offsets
            before, t_idle = cpu_by_process(server_pid), time.perf_counter()
            time.sleep(IDLE_S)
            idle = cpu_split(before, cpu_by_process(server_pid))
            idle_cores = {k: round(v / (time.perf_counter() - t_idle), 2) for k, v in idle.items()}
            for i in range(samples):
                time.sleep(0.3 + 0.2 * rng.random())
                t0_wall = time.time() * 1000
                t0 = time.perf_counter()
                seq = client.append(topic, make_data(100 + i)).first_seq
                deadline = time.monotonic() + 30
                while True:
                    p = _progress(query)
                    if p and _covers(p, topic, seq):
                        break
                    if query.exception() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"record {seq} not processed within 30 s: {query.exception()}")
                    time.sleep(0.01)
                detected.append((time.perf_counter() - t0) * 1000)
                durations = {k: float(v) for k, v in (p.get("durationMs") or {}).items()}
                completed.append(_ts_ms(p["timestamp"]) + durations.get("triggerExecution", 0.0) - t0_wall)
                rows.append(int(p.get("numInputRows", 0)))
                for k, v in durations.items():
                    phases.setdefault(k, []).append(v)
        finally:
            query.stop()

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "median": round(statistics.median(values), 1),
            "p90": round(percentile(values, 90), 1),
            "min": round(min(values), 1),
            "max": round(max(values), 1),
        }

    return {
        "samples": samples,
        "idle_cpu_cores": idle_cores,
        "detected_ms": summary(detected),
        "completed_ms": summary(completed),
        "detected_ms_all": [round(v, 1) for v in detected],
        "completed_ms_all": [round(v, 1) for v in completed],
        "rows_in_batch": rows,
        "duration_ms_median": {k: statistics.median(v) for k, v in sorted(phases.items())},
        "duration_ms_p90": {k: percentile(v, 90) for k, v in sorted(phases.items())},
    }


# -- the run ---------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    n = args.records
    read_kinds = [
        "spark_read_p1",
        "spark_read_p2",
        "sdk_read",
        "sdk_read_raw",
        "connector_read_task_in_process",
    ]
    write_kinds = ["spark_write", "spark_write_source_noop", "connector_write_task_in_process"]
    seconds: dict[str, list[float]] = {k: [] for k in read_kinds + write_kinds}
    cpu: dict[str, list[dict[str, float]]] = {k: [] for k in seconds}
    load_avg = {"start": os.getloadavg()}
    os.environ["TOPICS_THROTTLE"] = "false"  # inherited by the server
    with tempfile.TemporaryDirectory() as tmp:
        server = topics_server(args.pin, Path(tmp))
        try:
            server.wait_ready()
            base, server_pid = server.base, server.proc.pid
            log(f"server ready at {base}")
            topic = f"spark-read-{uuid.uuid4().hex[:6]}"
            load_s = timed(lambda: load(base, topic, n))
            log(f"loaded {n} records in {load_s:.1f} s")
            batches = arrow_rows(n)

            spark_start = time.perf_counter()
            spark = spark_session()
            spark_start_s = time.perf_counter() - spark_start
            warm = f"spark-warm-{uuid.uuid4().hex[:6]}"
            load(base, warm, 2000)
            warm_s = timed(lambda: spark_read(spark, base, warm, 2))
            warm_s += timed(lambda: spark_write(spark, base, f"spark-warm-w-{uuid.uuid4().hex[:6]}", 2000))
            warm_s += timed(lambda: write_source(spark, 2000))
            log(f"spark up in {spark_start_s:.1f} s, warmed up in {warm_s:.1f} s")
            partitions = {
                f"p{mp}": spark_read_df(spark, base, topic, mp).rdd.getNumPartitions() for mp in (1, 2)
            }

            def measure(kind: str, fn: Callable[[], None]) -> None:
                before, busy = cpu_by_process(server_pid), machine_busy_seconds()
                seconds[kind].append(timed(fn))
                split = cpu_split(before, cpu_by_process(server_pid))
                split["rest_of_machine"] = round(machine_busy_seconds() - busy - sum(split.values()), 2)
                cpu[kind].append(split)
                log(f"{kind}: {n / seconds[kind][-1]:,.0f} records/s, CPU s {split}")

            for rnd in range(args.rounds):
                log(f"round {rnd}")
                order = read_kinds if rnd % 2 == 0 else list(reversed(read_kinds))
                for kind in order:
                    if kind == "spark_read_p1":
                        measure(kind, lambda: spark_read(spark, base, topic, 1))
                    elif kind == "spark_read_p2":
                        measure(kind, lambda: spark_read(spark, base, topic, 2))
                    elif kind == "sdk_read":
                        measure(kind, lambda: sdk_read(base, topic, n, raw=False))
                    elif kind == "sdk_read_raw":
                        measure(kind, lambda: sdk_read(base, topic, n, raw=True))
                    else:
                        measure(kind, lambda: task_read(base, topic, n))
                target = f"spark-write-{uuid.uuid4().hex[:6]}"
                measure("spark_write", lambda: spark_write(spark, base, target, n))  # noqa: B023
                with topics.Client(base) as client:
                    count = client.topic(target).count
                assert count == n, f"write round {rnd}: topic holds {count} records, not {n}"
                measure("spark_write_source_noop", lambda: write_source(spark, n))
                target = f"task-write-{uuid.uuid4().hex[:6]}"
                measure("connector_write_task_in_process", lambda: task_write(base, target, batches, n))  # noqa: B023

            log("streaming latency")
            streaming = stream_latency(spark, base, server_pid, args.latency_samples, Path(tmp))
            log(
                f"stream: detected median {streaming['detected_ms']['median']} ms, "
                f"p90 {streaming['detected_ms']['p90']} ms; idle CPU cores {streaming['idle_cpu_cores']}"
            )
            spark.stop()
        finally:
            server.stop()
    load_avg["end"] = os.getloadavg()

    def rate(values: list[float]) -> int:
        return int(round(n / statistics.median(values)))

    rps = {k: rate(v) for k, v in seconds.items()}
    return {
        "commit": git("rev-parse", "--short", "HEAD"),
        "records": n,
        "rounds": args.rounds,
        "pinned_server": args.pin,
        "cpus": os.cpu_count(),
        "spark_master": "local[2]",
        "page_size": PAGE,
        "load_seconds": round(load_s, 3),
        "spark_start_seconds": round(spark_start_s, 3),
        "warmup_seconds": round(warm_s, 3),
        "partitions": partitions,
        "seconds": {k: [round(x, 3) for x in v] for k, v in seconds.items()},
        "records_per_s": rps,
        "spark_read_over_sdk_read_raw": {
            "p1": round(rps["spark_read_p1"] / rps["sdk_read_raw"], 3),
            "p2": round(rps["spark_read_p2"] / rps["sdk_read_raw"], 3),
        },
        "cpu_seconds": cpu,
        "streaming": streaming,
        "load_average": load_avg,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency-samples", type=int, default=10)
    parser.add_argument("--pin", action="store_true", help="pin the server to CPU 0 (Spark floats)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    args.pin = args.pin and can_pin()
    result = run(args)
    emit(result, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
