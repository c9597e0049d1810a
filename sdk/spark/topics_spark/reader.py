"""Reading topics into Spark: the batch reader, the streaming reader, and the task that reads one
:class:`~topics_spark.offsets.SeqRange` into Arrow record batches.

Rows have :data:`SCHEMA`. ``data`` and ``meta`` are the JSON text the server sent, unchanged
(``from_json``/``get_json_object`` them downstream); ``tag``/``node``/``meta`` are null where the
record has none (``tag`` and ``meta`` also when ``includeTags``/``includeMeta`` are false).

Tasks page ``diff`` through the SDK (:meth:`topics.Client.read_raw`: by ``next_from_seq`` and
``caught_up``, never by an empty page; 429/503 retried). A tombstone inside a task's range is
lost data: with ``failOnDataLoss`` (the default) the task fails naming the topic and the lost
seqs; without it the seqs are skipped and a warning names them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import topics
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

from . import offsets as o
from .options import EARLIEST, LATEST, Offsets, ReadOptions

log = logging.getLogger("topics_spark")

SCHEMA = StructType(
    [
        StructField("topic", StringType(), nullable=False),
        StructField("seq", LongType(), nullable=False),
        StructField("ts", TimestampType(), nullable=False),
        StructField("node", StringType()),
        StructField("tag", StringType()),
        StructField("data", StringType(), nullable=False),
        StructField("meta", StringType()),
    ]
)
"""The rows of a read: ``data`` is never null (a JSON ``null`` record is the text ``null``)."""
ARROW_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("node", pa.string()),
        pa.field("tag", pa.string()),
        pa.field("data", pa.string(), nullable=False),
        pa.field("meta", pa.string()),
    ]
)
ROWS_PER_BATCH = 10_000
"""Rows per Arrow record batch handed to Spark."""


class DataLossError(RuntimeError):
    """Records of a range were lost (evicted by a cap or TTL, or the topic was recreated)
    before the read reached them, and ``failOnDataLoss`` is true."""


class TopicRange(InputPartition):
    """A task of a read: topic ``topic``, the records with ``start < seq <= end``."""

    def __init__(self, topic: str, start: int, end: int) -> None:
        super().__init__((topic, start, end))
        self.topic, self.start, self.end = topic, start, end


def _partitions(ranges: list[o.SeqRange]) -> list[TopicRange]:
    return [TopicRange(r.topic, r.start, r.end) for r in ranges]


def default_min_partitions(opts: ReadOptions) -> int:
    """A batch read's ``minPartitions``, else the driver's core count (``read_topic`` passes
    Spark's default parallelism; the planner, a separate Python process, cannot ask Spark)."""
    return opts.min_partitions or os.cpu_count() or 1


def stream_min_partitions(opts: ReadOptions) -> int:
    """A stream's ``minPartitions``, else 1 (ranges of at most :data:`SEQS_PER_PARTITION`
    seqs): a micro-batch's plan must depend on its offsets and options only, so a batch
    replayed after a restart — on a driver with another core count — is cut the same way."""
    return opts.min_partitions or 1


def lost(opts: ReadOptions, loss: o.Loss, when: str) -> None:
    """Records of a read that are gone: raise :class:`DataLossError` (``failOnDataLoss``), or
    log a warning naming them and go on without them."""
    message = f'topic "{loss.topic}": seqs {loss.first}..{loss.last} were lost ({loss.reason}) {when}'
    if opts.fail_on_data_loss:
        raise DataLossError(f"{message}; set failOnDataLoss=false to read on without them")
    log.warning("%s; skipped (failOnDataLoss=false)", message)


def report_losses(opts: ReadOptions, starts: Offsets, now: dict[str, o.Position]) -> None:
    """On the driver, at planning: the losses the read meets at its start cursors."""
    for loss in o.probe_losses(opts.connection, starts, now):
        lost(opts, loss, "before this read started")


# -- a task ----------------------------------------------------------------------------------


def read_range(opts: ReadOptions, part: TopicRange) -> Iterator[pa.RecordBatch]:
    """The rows of ``part`` as Arrow record batches of at most :data:`ROWS_PER_BATCH` rows,
    in seq order; the same rows every time the range is read (its bounds are fixed). A tombstone
    in the range, or the topic gone, is lost data (:func:`lost`) — the SDK's ``trimmed`` too: a
    range starting at cursor 0 was planned with the records it reports in it; rows outside the range that a
    recreated topic's cursor reset would bring back are dropped."""
    with o.client(opts.connection) as c:
        records = c.read_raw(
            part.topic,
            part.start,
            to_seq=part.end,
            include_meta=opts.include_meta,
            include_tags=opts.include_tags,
            on_gap="raise" if opts.fail_on_data_loss else "skip",
            page_size=opts.page_size,
        )
        batch: list[topics.RawRecord] = []
        trimmed_seen = False
        try:
            for record in records:
                if records.trimmed is not None and not trimmed_seen:
                    trimmed_seen = True  # a range from 0 was planned with those records in it
                    lost(opts, _clipped(part, records.trimmed), "before this read reached them")
                if record.seq <= part.start:
                    continue
                batch.append(record)
                if len(batch) >= ROWS_PER_BATCH:
                    yield _arrow(part.topic, batch)
                    batch = []
        except topics.DataLoss as gap:
            lost(opts, _clipped(part, gap), "before this read reached them")
        except topics.TopicNotFound:
            lost(
                opts,
                o.Loss(part.topic, part.start + 1, part.end, "topic deleted"),
                "after this read was planned",
            )
            return
        if batch:
            yield _arrow(part.topic, batch)
        if records.trimmed is not None and not trimmed_seen:
            lost(opts, _clipped(part, records.trimmed), "before this read reached them")
        for tomb in records.gaps:
            lost(opts, _clipped(part, tomb), "before this read reached them")


def _clipped(part: TopicRange, gap: topics.DataLoss | topics.Tombstone) -> o.Loss:
    """The share of a gap inside ``part``."""
    return o.Loss(part.topic, max(gap.gap_from, part.start + 1), min(gap.gap_to, part.end), gap.reason)


def _read(opts: ReadOptions, partition: InputPartition) -> Iterator[pa.RecordBatch]:
    """A task's rows: nothing for the placeholder partition Spark plans when there are no
    ranges (nothing to read), else its range's."""
    if not isinstance(partition, TopicRange):
        return iter(())
    return read_range(opts, partition)


def _arrow(topic: str, records: list[topics.RawRecord]) -> pa.RecordBatch:
    """One record batch of :data:`ARROW_SCHEMA` (``data``/``meta`` bytes cast to UTF-8 text in C)."""
    n = len(records)
    ts = pa.array([r.ts * 1000 for r in records], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    columns: list[Any] = [
        pa.array([topic] * n, pa.string()),
        pa.array([r.seq for r in records], pa.int64()),
        ts,
        pa.array([r.node for r in records], pa.string()),
        pa.array([r.tag for r in records], pa.string()),
        pa.array([bytes(r.data) for r in records], pa.binary()).cast(pa.string()),
        pa.array([bytes(r.meta) or None for r in records], pa.binary()).cast(pa.string()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)


def _starts(opts: ReadOptions, now: dict[str, o.Position]) -> Offsets:
    """Where a read starts on each topic in ``now``: at its starting time
    (``startingTimestamp`` / ``startingOffsetsByTimestamp``, which take precedence), else at
    ``startingOffsets``."""
    starts = o.resolve(opts.starting, now, default=EARLIEST)
    if opts.starting_times is not None:
        by_time = o.at_times(opts.connection, opts.starting_times, now)
        starts.update(o.resolve(by_time, {t: now[t] for t in by_time}, default=EARLIEST))
    return starts


# -- batch -----------------------------------------------------------------------------------


class TopicsReader(DataSourceReader):
    """A batch read: offsets resolved once, when Spark plans the read (:meth:`partitions`)."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts

    def partitions(self) -> list[TopicRange]:
        opts = self.opts
        now = o.positions(opts.connection, opts, missing_ok=False)
        starts = _starts(opts, now)
        if opts.ending_time is not None:  # before the first record at or after it: never behind the start
            ending = o.at_times(opts.connection, opts.ending_time, now)
            wanted = {t: max(starts[t], end) for t, end in o.resolve(ending, now, default=LATEST).items()}
        else:
            wanted = o.resolve(opts.ending, now, default=LATEST)
            if isinstance(opts.ending, dict):  # an end asked for (not "latest") before the start
                o.check_order(starts, {t: seq for t, seq in opts.ending.items() if seq >= 0})
        ends = {t: max(starts[t], end) for t, end in o.clamp(wanted, now).items()}  # past the head: empty
        report_losses(opts, starts, now)
        return _partitions(o.plan(starts, ends, default_min_partitions(opts)))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.opts, partition)


# -- streaming -------------------------------------------------------------------------------


class TopicsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming read. Offsets are ``{"topic": cursor}`` maps; a micro-batch reads each topic's
    ``(start, end]``. With ``topicPrefix`` the topics are listed again at every micro-batch: a new
    topic (or a named one that did not exist yet) enters the offsets at its earliest retained
    record — a micro-batch with no rows of it: what it lost before the stream saw it is not this
    stream's loss — and is read from the next one on. ``maxOffsetsPerTrigger`` caps the seqs per
    micro-batch; ``Trigger.AvailableNow`` reads up to the heads seen at its first micro-batch. A
    topic deleted and recreated under the stream (the server's ``recreated`` tombstone) is read
    again from its start; what the old topic held beyond the stream's cursor is lost data."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self._available_now = False
        self._target: dict[str, o.Position] | None = None

    def _now(self) -> dict[str, o.Position]:
        return o.positions(self.opts.connection, self.opts, missing_ok=True)

    def initialOffset(self) -> Offsets:
        now = self._now()
        starts = _starts(self.opts, now)
        report_losses(self.opts, starts, now)
        # a cursor past the head is the head (the contract's rule)
        return o.as_offset((t, min(c, now[t].head)) for t, c in starts.items())

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        if self._available_now and self._target is None:
            self._target = self._now()  # at the first micro-batch: after initialOffset, never before
        now = self._target if self._target is not None else self._now()
        new = {t: p.earliest for t, p in now.items() if t not in start}
        behind = {t: c for t, c in start.items() if t in now and now[t].head < c}
        recreated = {
            t: lost for t, lost in o.probe(self.opts.connection, behind).items() if lost.reason == "recreated"
        }
        for name, lost in recreated.items():
            self._recreated(name, start[name], lost)
        # a recreated topic is read from 0 (plan reads an end behind its start as (0, end]);
        # a head behind the cursor otherwise (gone, or not recreated) leaves the topic where it is
        froms = {t: 0 if t in recreated else c for t, c in start.items()}
        heads = {
            t: now[t].head if t in now and (t in recreated or t not in behind) else c
            for t, c in start.items()
        }
        max_seqs = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        ends = o.capped(froms, heads, max_seqs)
        return o.as_offset([*ends.items(), *new.items()])

    def _recreated(self, name: str, cursor: int, lost: topics.DataLoss) -> None:
        """Topic ``name`` was deleted and recreated under the stream: read the new one from its
        start; what the old one held beyond ``cursor`` (the server's estimate) is lost."""
        message = f'topic "{name}" was deleted and recreated after this stream\'s offset {cursor}'
        if lost.missed_estimate:
            message += f"; ~{lost.missed_estimate} records of the old topic after {cursor} were never read"
            if self.opts.fail_on_data_loss:
                raise DataLossError(
                    f"{message}; set failOnDataLoss=false to read the new topic from its start"
                )
        log.warning("%s; reading the new topic from its start", message)

    def reportLatestOffset(self) -> Offsets | None:
        return None  # Spark shows the offsets of each micro-batch; no extra listing per trigger

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True  # the target heads are taken at the first latestOffset

    def partitions(self, start: Offsets, end: Offsets) -> list[TopicRange]:
        return _partitions(o.plan(start, end, stream_min_partitions(self.opts)))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read(self.opts, partition)

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the server keeps no per-reader state (the checkpoint holds the offsets)."""
