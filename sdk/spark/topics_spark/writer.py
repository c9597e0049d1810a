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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
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
            log.warning(
                'topic "%s" does not exist: the write creates it with the server\'s default '
                "idempotency_window_ms (120 s unless configured) — create it first with a longer "
                "window for effectively-once over longer outages",
                opts.topic,
            )
            return
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
    """What orjson cannot encode itself: decimals exactly as their text (never through a float:
    ``DECIMAL(38,18)`` sums stay exact), UTF-8 bytes as text, intervals as seconds."""
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise TypeError(f"{value} is not a JSON number")
        return orjson.Fragment(str(value))
    if isinstance(value, bytes | bytearray):
        return value.decode()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


class _BadValue(ValueError):
    """Row ``index`` of a column cannot become a record field."""

    def __init__(self, index: int, problem: str) -> None:
        super().__init__(problem)
        self.index = index


def _is_text(kind: pa.DataType) -> bool:
    t = pa.types
    return any(
        check(kind)
        for check in (
            t.is_string,
            t.is_large_string,
            t.is_string_view,
            t.is_binary,
            t.is_large_binary,
            t.is_binary_view,
        )
    )


_ANY_JSON = msgspec.json.Decoder(msgspec.Raw)
_OBJECT_JSON = msgspec.json.Decoder(dict[str, msgspec.Raw])


def _texts(values: list[Any], column: str) -> list[bytes | None]:
    """Text values as UTF-8 bytes; binary values must be UTF-8 already (the server takes
    nothing else)."""
    out: list[bytes | None] = []
    for i, value in enumerate(values):
        try:
            if value is None:
                out.append(None)
            elif isinstance(value, str):
                out.append(value.encode())
            else:
                raw = bytes(value)
                raw.decode()
                out.append(raw)
        except (UnicodeEncodeError, UnicodeDecodeError) as err:
            raise _BadValue(i, f"{column} is not UTF-8 text ({err.reason})") from None
        except TypeError:
            raise _BadValue(i, f"{column} is not text") from None
    return out


def _json_texts(values: list[Any], column: str, *, objects: bool) -> list[Any]:
    """JSON text checked and spliced in unchanged: a value the server stores exactly as written,
    and never a fragment that could break the request body. Checked as the server checks it
    (msgspec, without building Python objects): any JSON value, or an object with ``objects``."""
    decode = (_OBJECT_JSON if objects else _ANY_JSON).decode
    out: list[Any] = []
    fragment = orjson.Fragment
    for i, text in enumerate(_texts(values, column)):
        if text is None:
            out.append(None)
            continue
        try:
            decode(text)
        except msgspec.ValidationError:
            raise _BadValue(i, f"{column} must be a JSON object") from None
        except msgspec.DecodeError as err:
            hint = "" if objects else "; set dataFormat=string to store strings as is"
            raise _BadValue(i, f"{column} is not JSON text ({err}){hint}") from None
        out.append(fragment(text))
    return out


def _encoded(values: list[Any], column: str) -> list[Any]:
    """Struct, map, array, number, boolean, date… values as the JSON they become."""
    out: list[Any] = []
    for i, value in enumerate(values):
        if value is None:
            out.append(None)
            continue
        try:
            out.append(
                orjson.Fragment(orjson.dumps(value, default=_json_default, option=orjson.OPT_NON_STR_KEYS))
            )
        except (TypeError, ValueError) as err:
            raise _BadValue(i, f"{column} cannot be encoded as JSON ({err})") from None
    return out


def _strings(values: list[Any], column: str) -> list[Any]:
    """``dataFormat=string``: each value stored as a JSON string (binary must be UTF-8)."""
    out: list[Any] = []
    for i, value in enumerate(values):
        try:
            out.append(value.decode() if isinstance(value, bytes) else value)
        except UnicodeDecodeError as err:
            raise _BadValue(i, f"{column} is not UTF-8 text ({err.reason})") from None
    return out


def _field(array: Any, column: str, opts: WriteOptions) -> list[Any]:
    """One column of a batch as record field values, all rows at once."""
    values: list[Any] = array.to_pylist(maps_as_pydicts="strict")
    text = _is_text(array.type)
    if column in ("tag", "node", "topic"):
        return values
    if column == "meta":
        if text:
            return _json_texts(values, column, objects=True)
        for i, value in enumerate(values):
            if value is not None and not isinstance(value, dict):
                raise _BadValue(i, f"meta must be a struct or map, not {type(value).__name__}")
        return _encoded(values, column)
    if not text:
        return _encoded(values, column)
    if opts.data_format == "string":
        return _strings(values, column)
    return _json_texts(values, column, objects=False)


class _Partition:
    """One task's write: rows in, blocks appended, counts kept."""

    def __init__(self, opts: WriteOptions, key_prefix: str, partition: int) -> None:
        self.opts = opts
        self.key_prefix = key_prefix
        self.commit = WriteCommit(partition)
        self.pending: dict[str, tuple[list[int], list[dict[str, Any]]]] = {}
        self.blocks: dict[str, int] = {}
        self.client = o.client(opts.connection)

    def run(self, batches: Iterator[pa.RecordBatch]) -> WriteCommit:
        with self.client:
            for batch in batches:
                self._take(batch)
            self._flush()
        self.commit.topics.sort()
        return self.commit

    def _where(self, row: int) -> str:
        return f"row {row} of partition {self.commit.partition}"

    def _take(self, batch: pa.RecordBatch) -> None:
        """Turns a batch into records column by column, then files them by topic."""
        first_row = self.commit.rows
        names = {n.lower(): i for i, n in enumerate(batch.schema.names)}
        data_col = "data" if "data" in names else "value"
        columns: dict[str, list[Any]] = {}
        wanted = (data_col, "tag", "node", "meta") + (("topic",) if self.opts.topic is None else ())
        for col in wanted:
            if col in names:
                try:
                    columns[col] = _field(batch.column(names[col]), col, self.opts)
                except _BadValue as bad:
                    raise RowError(f"{self._where(first_row + bad.index)}: {bad}") from None
        records = [{"data": d} for d in columns[data_col]]
        for name in ("tag", "node", "meta"):
            for record, value in zip(records, columns.get(name, ()), strict=False):
                if value is not None:
                    record[name] = value
        self.commit.rows += len(records)
        if self.opts.topic is not None:
            self._file(self.opts.topic, range(first_row, first_row + len(records)), records)
            return
        by_topic: dict[str, tuple[list[int], list[dict[str, Any]]]] = {}
        for i, (topic, record) in enumerate(zip(columns["topic"], records, strict=True)):
            if not topic:
                raise RowError(f"{self._where(first_row + i)}: no topic (the topic column is null or empty)")
            rows, recs = by_topic.setdefault(topic, ([], []))
            rows.append(first_row + i)
            recs.append(record)
        for topic, (rows, recs) in by_topic.items():
            self._file(topic, rows, recs)

    def _file(self, topic: str, rows: Iterable[int], records: list[dict[str, Any]]) -> None:
        """Adds rows to ``topic``'s pending block, appending every block that fills up."""
        pending_rows, pending = self.pending.setdefault(topic, ([], []))
        pending_rows.extend(rows)
        pending.extend(records)
        size = self.opts.batch_rows
        while len(pending) >= size:
            self._append(topic, pending_rows[:size], pending[:size])
            del pending_rows[:size], pending[:size]

    def _flush(self) -> None:
        for topic in sorted(self.pending):
            rows, records = self.pending.pop(topic)
            if records:
                self._append(topic, rows, records)

    def _append(self, topic: str, rows: list[int], records: list[dict[str, Any]]) -> None:
        digest = hashlib.blake2b(orjson.dumps(records), digest_size=8).hexdigest()
        block = self.blocks.get(topic, 0)  # per topic: keys are, and blocks must not depend on batch cuts
        self.blocks[topic] = block + 1
        key = f"{self.key_prefix}:{block}:{digest}"
        try:
            result = self.client.append_many(topic, records, idempotency_key=key)
        except topics.TopicsError as err:
            index = err.record_index
            if index is None or not 0 <= index < len(rows):
                raise
            raise RowError(
                f'{self._where(rows[index])} cannot be written to topic "{topic}": {err.message}'
            ) from None
        if result.count != len(records):  # the key matched a different write: never count it as ours
            raise RuntimeError(
                f'topic "{topic}" answered {result.count} records for a block of {len(records)} '
                f"under idempotency key {key!r}: that key was used by another write"
            )
        self.commit.blocks += 1
        if result.deduped:
            self.commit.deduped += result.count
        else:
            self.commit.appended += result.count
        if topic not in self.commit.topics:
            self.commit.topics.append(topic)


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
