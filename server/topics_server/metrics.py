"""The metric families of ``GET /v0/metrics``, read from the :class:`ServerContext`
(every family, its labels and its unit: docs/METRICS.md).

One prometheus_client collector (:class:`TopicsCollector`) yields every family of ours; each
render registers it, with prometheus_client's process, GC and platform collectors
(``process_*``, ``python_*``: made once per process), in a private :class:`CollectorRegistry`
(never the process-global default one, so nothing else ever shows up here and nothing of ours
elsewhere) and renders either

* the Prometheus text exposition 0.0.4 (:func:`metrics_text`, content type
  :data:`TEXT_CONTENT_TYPE`), or
* a JSON snapshot of the same families (:func:`metrics_snapshot`)::

      {"metrics": {"<exposed name>": {"type": "gauge" | "counter" | "histogram",
                                      "help": "...",
                                      "samples": [{"name": ..., "labels": {...}, "value": ...}]}}}

  keyed by the name the text format exposes (``topics_wal_frames_total``: prometheus_client
  keeps a counter's family name without ``_total`` and adds it back to the exposed name and
  its sample). A histogram has ``_bucket`` samples (label ``le``, cumulative, ``+Inf`` last),
  ``_sum`` and ``_count``.

Families: process aggregates (over every topic, whatever the caller may see); what was done
since the process started — requests by operation and status with their durations
(``accounting``), records appended, jobs claimed/acked/nacked/dead-lettered, records pushed down
streams, WebSocket commands — and the elastic throttle's state; a per-topic block for at most
:data:`MAX_TOPIC_METRICS` topics in name order — only those ``allowed`` admits (an API key's
prefix allowlist), with ``topics_topic_metrics_truncated`` 1 when more were eligible; the named
consumers' lag of those topics (``topics_topic_consumer_lag{topic,consumer}``, at most
:data:`MAX_CONSUMER_METRICS` samples, ``topics_topic_consumer_metrics_truncated`` 1 when more
consumers were eligible) — the WAL's counters, gauges and fsync latency histogram, the cold-read
cache's, and where the process's memory sits (``allocator``: glibc's malloc arenas, omitted
without glibc, and CPython's allocated blocks). Without a data directory (in-memory engine), or
before the WAL is open, the WAL families are present with zeros.

Names: the contract's are kept as they are; where one is not in Prometheus' base units
(``topics_wal_fsync_latency_us``, ``topics_topic_queue_oldest_ready_age_ms``,
``topics_uptime_ms``) the conventional twin is exposed beside it
(``topics_wal_fsync_duration_seconds``, ``topics_topic_queue_oldest_ready_age_seconds``,
``process_start_time_seconds``).

Cost: a scrape runs on the event loop — writes wait while it runs — so it reads what the engine
keeps up to date (topic count, ``engine.usage``, the class counts and the queue topics) and
walks only the queue topics (lazy lease expiry), the sorted names (for a prefix-limited key) and
the bounded per-topic block (``bench/metrics_scrape.py``: 43 ms text, 21 ms JSON at 100 000
topics); the request families are one series per operation seen; the process collector reads
three ``/proc`` files and lists the open descriptors; ``mallinfo2`` walks the malloc arenas'
free lists (``allocator``: 0.2 ms at 5 000 free chunks, 22 ms at 127 000).

While the WAL replays (on a worker thread that is mutating the engine) a scrape reads only the
topic and router counts: the per-topic block is empty and the other engine aggregates are 0
(``topics_recovery_progress`` says how far replay is). Once ready, lazy expiry is applied as any
read applies it (TTL for the exported topics, lease deadlines for queues), so the gauges agree
with ``GET /v0/topics/:topic``.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client.exposition import generate_latest
from prometheus_client.gc_collector import GCCollector
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.samples import Sample
from topics_engine import Engine
from topics_engine.config import Durability
from topics_engine.datadir import CacheView, WalView
from topics_engine.results import QueueCounters
from topics_engine.topic import Topic

from . import allocator
from .accounting import Histogram, RequestStats
from .context import VERSION, ServerContext
from .throttle import Throttle

MAX_TOPIC_METRICS = 1000
"""Most topics the per-topic block lists (the first eligible ones in name order)."""
MAX_CONSUMER_METRICS = 10_000
"""Most named consumers the per-topic block lists (those of its topics, in topic then name
order)."""
TEXT_CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"

TopicFilter = Callable[[str], bool]
"""Which topic names the caller may see (``None``: all)."""

STANDARD_COLLECTORS: list[Collector] = [
    ProcessCollector(registry=None),
    GCCollector(registry=CollectorRegistry()),
    PlatformCollector(registry=None),
]
"""prometheus_client's ``process_*`` (Linux ``/proc``: CPU seconds, resident and virtual memory,
open and max descriptors, start time), ``python_gc_*`` and ``python_info`` collectors, made once
(the process collector reads the boot time, the platform one its constants, when made)."""


# -- reading the context -----------------------------------------------------------------------


@dataclass(slots=True)
class TopicRow:
    """One topic of the per-topic block; ``ready``/``in_flight`` are ``None`` for a log."""

    name: str
    head_seq: int
    earliest_seq: int
    records: int
    bytes: int
    queue: QueueCounters | None
    """A queue's counters and health; ``None`` for a log."""
    consumers: list[tuple[str, int]]
    """The topic's named consumers and their lag, in name order (bounded: :func:`topic_rows`)."""


@dataclass(slots=True)
class Aggregates:
    """Engine-wide gauges (over every topic, whoever asks)."""

    topics: int
    by_class: dict[Durability, int]
    routers: int
    schedules: int
    consumers: int
    records: int
    bytes: int
    queue_topics: int
    leases_in_flight: int


def aggregates(ctx: ServerContext, ready: bool) -> Aggregates:
    """The aggregates (not ``ready``, while the WAL replays: the counts only, the rest 0)."""
    engine = ctx.engine
    if not ready:
        return Aggregates(
            engine.topic_count,
            dict.fromkeys(Durability, 0),
            ctx.routers.count,
            ctx.schedules.count,
            0,
            0,
            0,
            0,
            0,
        )
    usage, queues = engine.usage, list(engine.queue_topics.values())
    # in flight after lazy lease expiry, as any read of a queue applies it
    return Aggregates(
        engine.topic_count,
        dict(engine.by_class),
        ctx.routers.count,
        ctx.schedules.count,
        ctx.consumers.count,
        usage.records,
        usage.bytes,
        len(queues),
        sum(engine.queue_in_flight(topic) for topic in queues),
    )


def topic_rows(engine: Engine, ready: bool, allowed: TopicFilter | None) -> tuple[list[TopicRow], bool, bool]:
    """The per-topic block: the first :data:`MAX_TOPIC_METRICS` topics in name order that
    ``allowed`` admits, whether more were eligible, and whether their consumers were more than
    :data:`MAX_CONSUMER_METRICS` (not ``ready``: none, not capped)."""
    if not ready:
        return [], False, False
    names = engine.names()
    eligible = names if allowed is None else filter(allowed, names)
    chosen = list(itertools.islice(eligible, MAX_TOPIC_METRICS + 1))
    now = engine.clock.now_ms()
    room = [MAX_CONSUMER_METRICS]
    rows = [_row(engine, engine.get(name), now, room) for name in chosen[:MAX_TOPIC_METRICS]]
    return rows, len(chosen) > MAX_TOPIC_METRICS, room[0] < 0


def _row(engine: Engine, topic: Topic, now: int, room: list[int]) -> TopicRow:
    """One topic's row; ``room`` counts down the consumer samples left (negative: some left out)."""
    topic.expire(now)  # lazy TTL expiry, as any read of the topic applies it
    counters = engine.queue_counters(topic)
    head = topic.head_seq
    consumers = [
        (c.name, max(0, head - c.cursor)) for c in itertools.islice(topic.consumers, max(0, room[0]))
    ]
    room[0] -= len(topic.consumers)
    return TopicRow(
        topic.name,
        head,
        topic.earliest_seq,
        topic.count,
        topic.bytes,
        counters,
        consumers,
    )


# -- the families ------------------------------------------------------------------------------


def _queue(value: Callable[[QueueCounters], float]) -> Callable[[TopicRow], float | None]:
    """A per-topic value of queue topics only."""
    return lambda row: None if row.queue is None else value(row.queue)


def _gauge(name: str, help_: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, help_, value=value)


def _counter(name: str, help_: str, value: float) -> CounterMetricFamily:
    """A counter named exactly ``name`` (which ends in ``_total``) when exposed."""
    return CounterMetricFamily(name, help_, value=value)


class TopicsCollector(Collector):
    """Every family, read from ``ctx`` at each :meth:`collect`; the per-topic block lists
    only topics ``allowed`` admits (``None``: all), the aggregates are never filtered."""

    def __init__(self, ctx: ServerContext, allowed: TopicFilter | None = None) -> None:
        self.ctx = ctx
        self.allowed = allowed

    def collect(self) -> Iterator[Metric]:
        ctx = self.ctx
        rows, truncated, consumers_truncated = topic_rows(ctx.engine, ctx.ready, self.allowed)
        yield from self._process(aggregates(ctx, ctx.ready))
        yield from self._work()
        yield from _requests(ctx.requests)
        yield from _throttle(ctx.throttle)
        yield from self._per_topic(rows, truncated)
        yield from self._consumers(rows, consumers_truncated)
        yield from self._wal(ctx.wal_view())
        yield from self._cache(ctx.cache_view())
        yield from _memory(allocator.malloc_stats(), allocator.python_allocated_blocks())

    def _process(self, agg: Aggregates) -> Iterator[Metric]:
        ctx = self.ctx
        yield _gauge("topics_topics", "Live topics.", agg.topics)
        by_class = GaugeMetricFamily(
            "topics_topics_by_class", "Live topics by durability class.", labels=["class"]
        )
        for durability, n in agg.by_class.items():
            by_class.add_metric([durability.value], n)
        yield by_class
        yield _gauge("topics_routers", "Routers.", agg.routers)
        yield _gauge("topics_schedules", "Schedules.", agg.schedules)
        yield _gauge("topics_consumers", "Named consumers over all topics.", agg.consumers)
        yield _counter(
            "topics_schedule_runs_total",
            "Schedule runs (one append each) since the process started.",
            ctx.schedules.runs_total,
        )
        yield _counter(
            "topics_schedule_failures_total",
            "Schedule run attempts whose append failed (retried) since the process started.",
            ctx.schedules.failures_total,
        )
        yield _gauge("topics_records_live", "Live records over all topics.", agg.records)
        yield _gauge("topics_bytes_live", "Encoded bytes of the live records over all topics.", agg.bytes)
        yield _gauge("topics_queue_topics", "Topics of type queue.", agg.queue_topics)
        yield _gauge(
            "topics_queue_leases_in_flight",
            "Leased, unacknowledged jobs over all queues.",
            agg.leases_in_flight,
        )
        streams = ctx.admission.sse_connections
        yield _gauge("topics_sse_connections", "Open streams (SSE and WebSocket).", streams)
        yield _gauge("topics_watch_sessions", "Watch sessions.", len(ctx.watches))
        yield _gauge(
            "topics_ready",
            "1 when /v0/ready answers 200 (WAL replayed, not draining, WAL writable), else 0.",
            int(ctx.ready and not ctx.shutting_down and not ctx.wal_read_only),
        )
        yield _gauge(
            "topics_recovery_progress",
            "WAL replay progress, 0.0 to 1.0 (1 once recovered).",
            1.0 if ctx.ready else ctx.replay_progress,
        )
        yield _gauge("topics_uptime_ms", "Milliseconds since the server started.", ctx.uptime_ms)
        info = GaugeMetricFamily("topics_build_info", "The server's version (value 1).", labels=["version"])
        info.add_metric([VERSION], 1)
        yield info

    def _work(self) -> Iterator[Metric]:
        """What was done since the process started: records in, jobs, records pushed out."""
        ctx = self.ctx
        yield _counter(
            "topics_records_appended_total",
            "Records appended (writes over HTTP and WebSocket, schedule runs, dead-letter moves, "
            "router copies; not deduplicated retries).",
            ctx.engine.records_appended,
        )
        jobs = ctx.queues.stats
        yield _counter("topics_jobs_claimed_total", "Jobs leased by claims and /work streams.", jobs.claimed)
        yield _counter("topics_jobs_acked_total", "Jobs acknowledged (completed).", jobs.acked)
        yield _counter("topics_jobs_nacked_total", "Jobs released for a retry by a nack.", jobs.nacked)
        yield _counter(
            "topics_jobs_dead_lettered_total",
            "Jobs moved to a dead-letter topic (past max_deliveries, or explicitly).",
            jobs.dead_lettered,
        )
        pushed = CounterMetricFamily(
            "topics_records_pushed_total",
            "Deliveries pushed: records written to watch streams and WebSockets, jobs to /work streams.",
            labels=["stream"],
        )
        for stream, n in ctx.requests.pushed.items():
            pushed.add_metric([stream], n)
        yield pushed

    def _per_topic(self, rows: list[TopicRow], truncated: bool) -> Iterator[Metric]:
        def family(name: str, help_: str, value: Callable[[TopicRow], float | None]) -> GaugeMetricFamily:
            out = GaugeMetricFamily(name, help_, labels=["topic"])
            for row in rows:
                v = value(row)
                if v is not None:
                    out.add_metric([row.name], v)
            return out

        yield family("topics_topic_head_seq", "Highest assigned seq per topic.", lambda r: r.head_seq)
        yield family(
            "topics_topic_earliest_seq",
            "Lowest live seq per topic (head_seq + 1 when empty).",
            lambda r: r.earliest_seq,
        )
        yield family("topics_topic_records_live", "Live records per topic.", lambda r: r.records)
        yield family("topics_topic_bytes_live", "Encoded bytes of live records per topic.", lambda r: r.bytes)
        yield family("topics_topic_queue_ready", "Claimable jobs per queue topic.", _queue(lambda q: q.ready))
        yield family(
            "topics_topic_queue_in_flight",
            "Leased, unacknowledged jobs per queue topic.",
            _queue(lambda q: q.in_flight),
        )
        yield family(
            "topics_topic_queue_delayed",
            "Jobs per queue topic waiting out a write's or a nack's delay_ms (not claimable yet).",
            _queue(lambda q: q.delayed),
        )
        yield family(
            "topics_topic_queue_oldest_ready_age_ms",
            "Age of the oldest claimable job per queue topic (now - its $ts; 0 when none).",
            _queue(lambda q: q.oldest_ready_age_ms),
        )
        yield family(
            "topics_topic_queue_oldest_ready_age_seconds",
            "Age in seconds of the oldest claimable job per queue topic (0 when none).",
            _queue(lambda q: q.oldest_ready_age_ms / 1000),
        )
        yield family(
            "topics_topic_queue_holders",
            "Nodes holding leases per queue topic.",
            _queue(lambda q: q.holder_count),
        )
        yield _gauge(
            "topics_topic_metrics_truncated",
            f"1 if the per-topic block was capped at {MAX_TOPIC_METRICS} topics (name order), else 0.",
            int(truncated),
        )

    def _consumers(self, rows: list[TopicRow], truncated: bool) -> Iterator[Metric]:
        lag = GaugeMetricFamily(
            "topics_topic_consumer_lag",
            "Per named consumer of the per-topic block's topics: head_seq - its committed cursor.",
            labels=["topic", "consumer"],
        )
        for row in rows:
            for name, value in row.consumers:
                lag.add_metric([row.name, name], value)
        yield lag
        yield _gauge(
            "topics_topic_consumer_metrics_truncated",
            f"1 if topics_topic_consumer_lag was capped at {MAX_CONSUMER_METRICS} consumers, else 0.",
            int(truncated),
        )

    def _wal(self, wal: WalView) -> Iterator[Metric]:
        s = wal.stats
        yield _counter("topics_wal_frames_total", "Frames written to the WAL.", s.frames_total)
        yield _counter(
            "topics_wal_batches_total",
            "WAL writes (each writes the frames of one event-loop iteration).",
            s.batches_total,
        )
        yield _counter("topics_wal_fsyncs_total", "WAL fsyncs (group commits).", s.fsyncs_total)
        yield _counter("topics_wal_bytes_written_total", "Bytes written to the WAL.", s.bytes_written_total)
        yield _counter("topics_wal_rotations_total", "WAL file rotations.", s.rotations_total)
        yield _gauge(
            "topics_wal_queue_depth",
            "WAL frames not yet written, plus written ones awaited and not yet durable.",
            wal.queue_depth,
        )
        yield _gauge(
            "topics_wal_queue_depth_peak", "Highest topics_wal_queue_depth seen.", s.queue_depth_peak
        )
        yield _counter(
            "topics_wal_submit_full_total",
            "WAL submits that found the queue full: always 0, the WAL's submit queue is unbounded "
            "(a submit never waits).",
            0,
        )
        yield _gauge(
            "topics_wal_read_only", "1 once the WAL turned read-only after an I/O error.", int(wal.read_only)
        )
        yield _fsync_histogram(wal)
        yield _fsync_seconds(wal)

    def _cache(self, cache: CacheView) -> Iterator[Metric]:
        yield _gauge(
            "topics_cache_capacity_bytes",
            "TOPICS_CACHE_BYTES: the shared cache of cold record chunks.",
            cache.capacity_bytes,
        )
        yield _gauge("topics_cache_bytes", "Bytes of record chunks in the cache.", cache.bytes)
        yield _gauge("topics_cache_chunks", "Record chunks in the cache.", cache.chunks)
        yield _counter("topics_cache_hits_total", "Cold chunk lookups served from the cache.", cache.hits)
        yield _counter(
            "topics_cache_misses_total", "Cold chunk lookups the cache could not serve.", cache.misses
        )
        yield _counter("topics_cache_evictions_total", "Chunks evicted from the cache.", cache.evictions)
        yield _counter("topics_cold_reads_total", "Record chunks read back from segment files.", cache.loads)
        yield _counter(
            "topics_cold_read_bytes_total", "Bytes read back from segment files.", cache.load_bytes
        )
        yield _counter(
            "topics_cold_reads_blocking_total",
            "Of topics_cold_reads_total, chunks read on the calling thread (recovery, rare paths), "
            "not on a reader thread.",
            cache.blocking_loads,
        )
        yield _counter(
            "topics_cold_reads_page_cache_total",
            "Of topics_cold_reads_total, chunks read on the event loop because the OS page cache "
            "held them (never waiting for a disk).",
            cache.page_cache_loads,
        )
        yield _counter(
            "topics_cache_trims_total",
            "malloc_trim calls queued on a reader thread: after a quarter of the cache's capacity "
            "was let go, or when none ran for 10 s (free heap pages given back to the system).",
            cache.trims,
        )


def _fsync_histogram(wal: WalView) -> HistogramMetricFamily:
    """``topics_wal_fsync_latency_us`` with cumulative buckets (``le`` in µs, ``+Inf`` last)."""
    h = wal.histogram
    bounds = [str(b) for b in wal.bucket_bounds_us] + ["+Inf"]
    cumulative = itertools.accumulate(h.counts)
    return HistogramMetricFamily(
        "topics_wal_fsync_latency_us",
        "WAL fsync latency in microseconds.",
        buckets=list(zip(bounds, cumulative, strict=True)),
        sum_value=h.sum_us,
    )


def _fsync_seconds(wal: WalView) -> HistogramMetricFamily:
    """``topics_wal_fsync_latency_us`` in seconds (the same counts): the conventional name."""
    h = wal.histogram
    bounds = [repr(b / 1_000_000) for b in wal.bucket_bounds_us] + ["+Inf"]
    return HistogramMetricFamily(
        "topics_wal_fsync_duration_seconds",
        "WAL fsync latency in seconds.",
        buckets=list(zip(bounds, itertools.accumulate(h.counts), strict=True)),
        sum_value=h.sum_us / 1_000_000,
    )


def _requests(requests: RequestStats) -> Iterator[Metric]:
    """Requests by operation and status, their durations, stream lifetimes, WebSocket commands
    (``accounting``; an operation appears once it was called)."""
    operations = requests.every_operation()
    counts = CounterMetricFamily(
        "topics_http_requests_total",
        "HTTP requests served, by operationId and status (a stream counts when it ends).",
        labels=["operation", "status"],
    )
    for op in operations:
        for status, n in sorted(op.statuses.items()):
            counts.add_metric([op.operation_id, str(status)], n)
    yield counts
    durations = HistogramMetricFamily(
        "topics_http_request_duration_seconds",
        "Time from a request's first byte to its response being ready, by operationId (streams excluded).",
        labels=["operation"],
    )
    lifetimes = HistogramMetricFamily(
        "topics_http_stream_duration_seconds",
        "Lifetime of SSE streams and WebSockets, by operationId, observed when they end.",
        labels=["operation"],
    )
    for op in operations:
        _observed(durations, op.operation_id, op.durations)
        _observed(lifetimes, op.operation_id, op.lifetimes)
    yield durations
    yield lifetimes
    commands = CounterMetricFamily(
        "topics_websocket_commands_total",
        "WebSocket commands, by op and the HTTP status their answer stands for (200, or the error's).",
        labels=["command", "status"],
    )
    for (command, status), n in sorted(requests.commands.items()):
        commands.add_metric([command, str(status)], n)
    yield commands


def _observed(family: HistogramMetricFamily, operation: str, h: Histogram) -> None:
    """``h``'s samples for ``operation`` (none before its first observation), appended as
    ``HistogramMetricFamily.add_metric`` would, at a third of its cost."""
    if not h.count:
        return
    name, samples = family.name, family.samples
    bucket = name + "_bucket"
    total = 0
    for le, n in zip(_le(h.bounds), h.counts, strict=True):
        total += n
        samples.append(Sample(bucket, {"operation": operation, "le": le}, total))
    samples.append(Sample(name + "_count", {"operation": operation}, total))
    samples.append(Sample(name + "_sum", {"operation": operation}, h.sum))


@functools.cache
def _le(bounds: tuple[float, ...]) -> tuple[str, ...]:
    """The ``le`` labels of these bucket bounds, ``+Inf`` last."""
    return (*map(repr, bounds), "+Inf")


def _memory(malloc: allocator.MallocStats | None, python_blocks: int) -> Iterator[Metric]:
    """Where the process's memory sits (``allocator``): glibc's arenas over all threads
    (``mallinfo2``; absent without glibc) and CPython's allocated blocks."""
    if malloc is not None:
        yield _gauge(
            "topics_malloc_heap_bytes",
            "glibc mallinfo2 arena: bytes the malloc arenas (main heap and thread arenas) hold "
            "from the system, other than single mmapped blocks; in-use and free chunks.",
            malloc.heap,
        )
        yield _gauge(
            "topics_malloc_mmap_bytes",
            "glibc mallinfo2 hblkhd: bytes of blocks above the mmap threshold, each mmapped on its own.",
            malloc.mmap,
        )
        yield _gauge(
            "topics_malloc_in_use_bytes",
            "glibc mallinfo2 uordblks: bytes of in-use chunks in the arenas (not the mmapped blocks).",
            malloc.in_use,
        )
        yield _gauge(
            "topics_malloc_free_bytes",
            "glibc mallinfo2 fordblks: bytes of free chunks in the arenas (resident unless trimmed).",
            malloc.free,
        )
        yield _gauge(
            "topics_malloc_releasable_bytes",
            "glibc mallinfo2 keepcost: the main arena's free top chunk, which malloc_trim gives back.",
            malloc.releasable,
        )
    yield _gauge(
        "topics_python_allocated_blocks",
        "sys.getallocatedblocks(): blocks held by CPython's object and memory allocators.",
        python_blocks,
    )


def _throttle(throttle: Throttle) -> Iterator[Metric]:
    """The elastic throttle: an extension — the contract lists no throttle metric."""
    yield _gauge(
        "topics_throttle_active",
        "1 while the elastic throttle's priority cutoff is on (low-priority work waits or gets 429).",
        int(throttle.active),
    )
    yield _gauge("topics_throttle_cutoff", "The priority cutoff (0 when off).", throttle.cutoff or 0)
    yield _gauge(
        "topics_throttle_pressure",
        "Smoothed pressure: event-loop lag over its 10 ms budget, or WAL depth over 200 000 (1.0 = at it).",
        round(throttle.pressure, 4),
    )
    yield _gauge("topics_throttle_parked", "Requests waiting for admission now.", throttle.parked)
    yield _counter(
        "topics_throttle_refused_total", "Requests the throttle refused with 429.", throttle.refused
    )


# -- rendering ---------------------------------------------------------------------------------


def registry(ctx: ServerContext, allowed: TopicFilter | None = None) -> CollectorRegistry:
    """A private registry holding one :class:`TopicsCollector` over ``ctx``."""
    reg = CollectorRegistry(auto_describe=False)
    reg.register(TopicsCollector(ctx, allowed))
    for collector in STANDARD_COLLECTORS:
        reg.register(collector)
    return reg


def exposed_name(family: Metric) -> str:
    """The family's name in the text format (a counter's gets its ``_total`` back)."""
    return family.name + "_total" if family.type == "counter" else family.name


def metrics_text(ctx: ServerContext, allowed: TopicFilter | None = None) -> bytes:
    """The Prometheus text exposition (0.0.4) of every family."""
    return generate_latest(registry(ctx, allowed))


def metrics_snapshot(ctx: ServerContext, allowed: TopicFilter | None = None) -> dict[str, Any]:
    """The JSON snapshot ``{"metrics": {name: {"type", "help", "samples"}}}`` (module docs)."""
    return {
        "metrics": {
            exposed_name(family): {
                "type": family.type,
                "help": family.documentation,
                "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in family.samples],
            }
            for family in registry(ctx, allowed).collect()
        }
    }
