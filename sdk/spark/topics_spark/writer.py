"""Writing DataFrames into topics, batch and streaming, effectively once.

Columns: ``data`` (or Kafka's ``value``) — required; optional ``tag``, ``node``, ``meta`` and
``topic`` (the ``topic`` option overrides the column). A string ``data`` column is JSON text,
as a read produces it, so read → write round-trips exactly (``dataFormat=string`` stores each
string as a JSON string instead); binary is UTF-8 text likewise; struct, map, array, numeric,
boolean, date and timestamp columns are encoded as JSON. ``meta`` is JSON text of an object,
or a struct/map. A null ``data`` is JSON ``null``; a null ``tag``/``node``/``meta`` is absent.

**Effectively once.** A task cuts its partition's rows into blocks of ``batchRows`` (per topic,
in row order) and appends each block with ``topics.Client.append_many`` under the idempotency
key ``spark:<write id>:<partition>:<block>:<digest>`` (the SDK adds ``.<chunk>``, splitting
within the server's limits). The write id is the streaming query id and micro-batch id, or the
``writeId`` option (else a fresh id per batch write); the digest hashes the block's records. So
a task executed twice, or a replayed micro-batch, sends the same keys for the same rows and the
server dedupes them — within the topic's ``idempotency_window_ms`` (the driver warns when that
window is short). Rows cut into blocks differently on a replay (another ``batchRows``, another
partitioning) get other digests: they are appended again — duplicates, never rows dropped as
"already written".
"""

from __future__ import annotations

import datetime as dt
import decimal
import hashlib
import logging
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import topics
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StringType, StructType

from . import offsets as o
from .options import WriteOptions

log = logging.getLogger("topics_spark")

SHORT_WINDOW_MS = 15 * 60_000
"""Below this ``idempotency_window_ms`` the driver warns: a task retried or a micro-batch
replayed later than the window (a query restarted after a long stop) would append again."""
COLUMNS = ("data", "value", "tag", "node", "meta", "topic")


class RowError(ValueError):
    """A row that can never be written (bad JSON, a record over the server's limits…)."""


@dataclass
class WriteCommit(WriterCommitMessage):
    """What one task wrote: ``rows`` read, ``appended`` new records, ``deduped`` records the
    server already had (a retried task or a replayed micro-batch: blocks it had whole), in
    ``blocks`` ``append_many`` calls."""

    partition: int
    rows: int = 0
    appended: int = 0
    deduped: int = 0
    blocks: int = 0
    topics: list[str] = field(default_factory=list)


# -- the driver: schema and options checked before any task runs ---------------------------


def check_schema(schema: StructType, opts: WriteOptions) -> None:
    """The DataFrame has what a write needs: one of ``data``/``value``, string ``tag``/``node``/
    ``topic`` if present, and a topic (option or column)."""
    names = {f.name.lower(): f for f in schema.fields}
    if ("data" in names) == ("value" in names):
        raise ValueError(
            "a topics write needs exactly one of the columns data or value; "
            f"the DataFrame has {schema.simpleString()}"
        )
    for name in ("tag", "node", "topic"):
        if name in names and not isinstance(names[name].dataType, StringType):
            raise ValueError(f"column {name} must be a string, not {names[name].dataType.simpleString()}")
    if opts.topic is None and "topic" not in names:
        raise ValueError("a topics write needs the topic option or a topic column")


def warn_if_window_short(opts: WriteOptions) -> None:
    """Warns when the target topic's idempotency window is shorter than :data:`SHORT_WINDOW_MS`
    (topics named by a column are not known before the write)."""
    if opts.topic is None:
        return
    with o.client(opts.connection) as c:
        try:
            window = c.topic(opts.topic, touch=False).config.idempotency_window_ms
        except topics.TopicNotFound:
            return  # created by the first append, with the server's default window
        except (topics.Forbidden, topics.Unauthorized):
            return  # a write-only key may not read the topic's config: no check, no failure
    if window < SHORT_WINDOW_MS:
        log.warning(
            'topic "%s" dedupes retried writes for %d s (idempotency_window_ms): a task retried or a '
            "micro-batch replayed later than that would append again; raise it with "
            'PUT /v0/topics/%s {"idempotency_window_ms": ...} for effectively-once over longer outages',
            opts.topic,
            window // 1000,
            opts.topic,
        )


def report(messages: list[WriteCommit | None], what: str) -> None:
    done = [m for m in messages if m is not None]
    log.info(
        "%s: %d rows from %d of %d tasks: %d appended, %d deduped (already written), %d blocks",
        what,
        sum(m.rows for m in done),
        len(done),
        len(messages),
        sum(m.appended for m in done),
        sum(m.deduped for m in done),
        sum(m.blocks for m in done),
    )


# -- a task ----------------------------------------------------------------------------------


def _json_default(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return float(value) if value != value.to_integral_value() else int(value)
    if isinstance(value, bytes | bytearray):
        return value.decode()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def _encoded(value: Any) -> Any:
    """A struct/map/array/number value as the JSON it becomes (dates as ISO 8601 text)."""
    return orjson.Fragment(orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS))


def _json_text(text: str | bytes | None, what: str) -> Any:
    """JSON text checked and spliced in unchanged (``orjson.Fragment``)."""
    if text is None:
        return None
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as err:
        raise RowError(
            f"{what} is not JSON text ({err}); set dataFormat=string to store strings as is"
        ) from None
    return orjson.Fragment(text if isinstance(text, bytes) else text.encode())


def _converter(kind: pa.DataType, column: str, opts: WriteOptions) -> Callable[[Any, str], Any]:
    """How one column's Python values become a record field."""
    textual = pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)
    if column in ("tag", "node"):
        return lambda v, where: v
    if column == "meta":
        return _meta_text if textual else lambda v, where: v
    if not textual:
        return lambda v, where: None if v is None else _encoded(v)
    if opts.data_format == "string":
        return lambda v, where: v.decode() if isinstance(v, bytes) else v
    return lambda v, where: _json_text(v, f"{where}: {column}")


def _meta_text(value: str | bytes, where: str) -> Any:
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError as err:
        raise RowError(f"{where}: meta is not JSON text ({err})") from None
    if not isinstance(parsed, dict):
        raise RowError(f"{where}: meta must be a JSON object, not {type(parsed).__name__}")
    return parsed


class _Partition:
    """One task's write: rows in, blocks appended, counts kept."""

    def __init__(self, opts: WriteOptions, key_prefix: str, partition: int) -> None:
        self.opts = opts
        self.key_prefix = key_prefix
        self.commit = WriteCommit(partition)
        self.pending: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        self.client = o.client(opts.connection)

    def run(self, batches: Iterator[pa.RecordBatch]) -> WriteCommit:
        with self.client:
            for batch in batches:
                self._take(batch)
            self._flush()
        self.commit.topics.sort()
        return self.commit

    def _take(self, batch: pa.RecordBatch) -> None:
        names = {n.lower(): i for i, n in enumerate(batch.schema.names)}
        data_col = "data" if "data" in names else "value"
        fields: list[tuple[str, list[Any], Callable[[Any, str], Any]]] = []
        for col in (data_col, "tag", "node", "meta"):
            if col in names:
                i = names[col]
                values = batch.column(i).to_pylist(maps_as_pydicts="strict")
                convert = _converter(batch.schema.types[i], col, self.opts)
                fields.append(("data" if col == data_col else col, values, convert))
        topic_col = batch.column(names["topic"]).to_pylist() if "topic" in names else None
        for r in range(batch.num_rows):
            row = self.commit.rows
            where = f"row {row} of partition {self.commit.partition}"
            topic = self.opts.topic or (topic_col[r] if topic_col is not None else None)
            if not topic:
                raise RowError(f"{where}: no topic (the topic column is null or empty)")
            record: dict[str, Any] = {}
            for name, values, convert in fields:
                value = values[r]
                if name == "data":
                    record["data"] = convert(value, where)
                elif value is not None:
                    record[name] = convert(value, where)
            self.commit.rows += 1
            block = self.pending.setdefault(topic, [])
            block.append((row, record))
            if len(block) >= self.opts.batch_rows:
                self._append(topic, self.pending.pop(topic))

    def _flush(self) -> None:
        for topic in sorted(self.pending):
            self._append(topic, self.pending.pop(topic))

    def _append(self, topic: str, block: list[tuple[int, dict[str, Any]]]) -> None:
        records = [rec for _, rec in block]
        digest = hashlib.blake2b(orjson.dumps(records), digest_size=8).hexdigest()
        key = f"{self.key_prefix}:{self.commit.blocks}:{digest}"
        try:
            result = self.client.append_many(topic, records, idempotency_key=key)
        except topics.TopicsError as err:
            index = _record_index(err)
            if index is None or not 0 <= index < len(block):
                raise
            row = block[index][0]
            raise RowError(
                f"row {row} of partition {self.commit.partition} cannot be written to topic "
                f'"{topic}": {err.message}'
            ) from None
        if result.count != len(block):  # the key matched a different write: never count it as ours
            raise RuntimeError(
                f'topic "{topic}" answered {result.count} records for a block of {len(block)} '
                f"under idempotency key {key!r}: that key was used by another write"
            )
        self.commit.blocks += 1
        if result.deduped:
            self.commit.deduped += result.count
        else:
            self.commit.appended += result.count
        if topic not in self.commit.topics:
            self.commit.topics.append(topic)


def _record_index(err: topics.TopicsError) -> int | None:
    """The index of the record an error names (``detail.index``, or ``records[i]`` in
    ``detail.field``), if it names one."""
    index = err.detail.get("index")
    if isinstance(index, int):
        return index
    field_name = err.detail.get("field")
    if isinstance(field_name, str) and field_name.startswith("records["):
        digits = field_name[len("records[") :].split("]", 1)[0]
        return int(digits) if digits.isdigit() else None
    return None


def _partition_id() -> int:
    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


# -- the writers -----------------------------------------------------------------------------


class TopicsWriter(DataSourceArrowWriter):
    """A batch write. Its id (``writeId``, else fresh) is fixed on the driver, so every attempt
    of a task uses the same idempotency keys."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        self.write_id = opts.write_id or uuid.uuid4().hex

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteCommit:
        partition = _partition_id()
        return _Partition(self.opts, f"spark:{self.write_id}:{partition}", partition).run(iterator)

    def commit(self, messages: list[WriteCommit | None]) -> None:  # type: ignore[override]
        report(messages, f"topics write {self.write_id} committed")

    def abort(self, messages: list[WriteCommit | None]) -> None:  # type: ignore[override]
        report(messages, f"topics write {self.write_id} aborted (rows of finished tasks stay written)")


class TopicsStreamWriter(DataSourceStreamArrowWriter):
    """A streaming write: the write id of a micro-batch is the query id (kept in the checkpoint
    across restarts) and the batch id, so a replayed micro-batch sends the same keys."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteCommit:
        ctx = TaskContext.get()
        query = ctx.getLocalProperty("sql.streaming.queryId") if ctx is not None else None
        batch = ctx.getLocalProperty("streaming.sql.batchId") if ctx is not None else None
        if not query or batch is None:
            raise RuntimeError("a topics stream write ran outside a streaming query (no query or batch id)")
        partition = _partition_id()
        return _Partition(self.opts, f"spark:{query}:{batch}:{partition}", partition).run(iterator)

    def commit(self, messages: list[WriteCommit | None], batchId: int) -> None:  # type: ignore[override]
        report(messages, f"topics stream write, micro-batch {batchId} committed")

    def abort(self, messages: list[WriteCommit | None], batchId: int) -> None:  # type: ignore[override]
        report(messages, f"topics stream write, micro-batch {batchId} aborted")
