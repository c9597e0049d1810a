"""§8.3 GET /v0/metrics over HTTP (in-process app): the Prometheus text exposition and its JSON
twin, every family the spec names, their values after writes and claims, the bounded per-topic
block, the ``allowed`` filter, the WAL counters and histogram of a durable server, 200 while
the WAL replays, and the allocator gauges (glibc's, absent without ``mallinfo2``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from topics_engine import Engine, ManualClock
from topics_engine.datadir.directory import DataDirectory
from topics_engine.storage.fs import FileSystem
from topics_engine.storage.wal import FSYNC_BUCKETS_US, WalStats
from topics_server import allocator, metrics
from topics_server.asgi import create_app
from topics_server.context import ServerContext
from topics_server.settings import load_settings

from ..storage.harness import app_client

AGGREGATES = [
    "topics_topics",
    "topics_topics_by_class",
    "topics_routers",
    "topics_schedules",
    "topics_consumers",
    "topics_schedule_runs_total",
    "topics_schedule_failures_total",
    "topics_records_live",
    "topics_bytes_live",
    "topics_queue_topics",
    "topics_queue_leases_in_flight",
    "topics_sse_connections",
    "topics_watch_sessions",
    "topics_ready",
    "topics_recovery_progress",
    "topics_uptime_ms",
]
WORK = [
    "topics_build_info",
    "topics_records_appended_total",
    "topics_jobs_claimed_total",
    "topics_jobs_acked_total",
    "topics_jobs_nacked_total",
    "topics_jobs_dead_lettered_total",
    "topics_records_pushed_total",
    "topics_http_requests_total",
    "topics_http_request_duration_seconds",
    "topics_http_stream_duration_seconds",
    "topics_websocket_commands_total",
    "topics_throttle_active",
    "topics_throttle_cutoff",
    "topics_throttle_pressure",
    "topics_throttle_parked",
    "topics_throttle_refused_total",
]
"""Beside the contract's families: what was done since the start, and the throttle."""
HISTOGRAMS = {
    "topics_wal_fsync_latency_us",
    "topics_wal_fsync_duration_seconds",
    "topics_http_request_duration_seconds",
    "topics_http_stream_duration_seconds",
}
PROCESS = [
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
    "process_open_fds",
    "process_max_fds",
    "process_start_time_seconds",
    "python_gc_objects_collected_total",
    "python_gc_objects_uncollectable_total",
    "python_gc_collections_total",
    "python_info",
]
"""prometheus_client's standard process, GC and platform families (Linux)."""
PER_TOPIC = [
    "topics_topic_head_seq",
    "topics_topic_earliest_seq",
    "topics_topic_records_live",
    "topics_topic_bytes_live",
    "topics_topic_queue_ready",
    "topics_topic_queue_in_flight",
    "topics_topic_queue_delayed",
    "topics_topic_queue_oldest_ready_age_ms",
    "topics_topic_queue_oldest_ready_age_seconds",
    "topics_topic_queue_holders",
]
WAL = [
    "topics_wal_frames_total",
    "topics_wal_batches_total",
    "topics_wal_fsyncs_total",
    "topics_wal_bytes_written_total",
    "topics_wal_rotations_total",
    "topics_wal_queue_depth",
    "topics_wal_queue_depth_peak",
    "topics_wal_submit_full_total",
    "topics_wal_read_only",
]
CACHE = [
    "topics_cache_capacity_bytes",
    "topics_cache_bytes",
    "topics_cache_chunks",
    "topics_cache_hits_total",
    "topics_cache_misses_total",
    "topics_cache_evictions_total",
    "topics_cold_reads_total",
    "topics_cold_read_bytes_total",
    "topics_cold_reads_blocking_total",
    "topics_cold_reads_page_cache_total",
    "topics_cache_trims_total",
]
MALLOC = [
    "topics_malloc_heap_bytes",
    "topics_malloc_mmap_bytes",
    "topics_malloc_in_use_bytes",
    "topics_malloc_free_bytes",
    "topics_malloc_releasable_bytes",
]
"""glibc's ``mallinfo2`` gauges: exposed on glibc only."""
GLIBC = allocator.malloc_stats() is not None
MEMORY = [*(MALLOC if GLIBC else []), "topics_python_allocated_blocks"]
FAMILIES = [
    *AGGREGATES,
    *WORK,
    *PER_TOPIC,
    "topics_topic_metrics_truncated",
    "topics_topic_consumer_lag",
    "topics_topic_consumer_metrics_truncated",
    *WAL,
    "topics_wal_fsync_latency_us",
    "topics_wal_fsync_duration_seconds",
    *CACHE,
    *MEMORY,
    *PROCESS,
]
"""Every family, as exposed (a counter with its ``_total``): §8.3's and ours beside them."""
COUNTERS = {name for name in FAMILIES if name.endswith("_total")}

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse_text(text: str) -> tuple[dict[str, str], Samples]:
    """(exposed family name -> type, (sample name, sorted labels) -> value) of a text exposition;
    parsing with prometheus_client's own parser proves it is well formed."""
    types: dict[str, str] = {}
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        # the parser strips a counter's _total from the family name; its samples keep it
        types[family.name + "_total" if family.type == "counter" else family.name] = family.type
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return types, samples


def parse_json(body: dict[str, Any]) -> tuple[dict[str, str], Samples]:
    types = {name: family["type"] for name, family in body["metrics"].items()}
    samples: Samples = {
        (s["name"], tuple(sorted(s["labels"].items()))): s["value"]
        for family in body["metrics"].values()
        for s in family["samples"]
    }
    return types, samples


async def scrape(client: httpx.AsyncClient) -> Samples:
    r = await client.get("/v0/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    return parse_text(r.text)[1]


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def topic_value(samples: Samples, name: str, topic: str) -> float | None:
    return samples.get((name, (("topic", topic),)))


async def _write(client: httpx.AsyncClient, topic: str, n: int, **config: Any) -> None:
    if config:
        assert (await client.put(f"/v0/topics/{topic}", json=config)).status_code in (200, 201)
    r = await client.post(f"/v0/topics/{topic}", json={"records": [{"data": i} for i in range(n)]})
    assert r.status_code in (200, 201), r.text


async def test_text_exposes_every_family_with_its_type(client: httpx.AsyncClient) -> None:
    await _write(client, "log", 1)
    await _write(client, "jobs", 1, type="queue")
    r = await client.get("/v0/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    types, samples = parse_text(r.text)
    assert set(types) == set(FAMILIES)
    for name in FAMILIES:
        expected = "histogram" if name in HISTOGRAMS else "gauge"
        assert types[name] == ("counter" if name in COUNTERS else expected), name
    # counters are exposed under exactly the spec's names
    assert "# TYPE topics_wal_frames_total counter" in r.text
    assert "_total_total" not in r.text
    assert {name for name, _ in samples} >= {*AGGREGATES, *PER_TOPIC, *WAL}


async def test_values_after_writes_and_claims(client: httpx.AsyncClient) -> None:
    await _write(client, "a-fsync", 3, durability="fsync")
    await _write(client, "b-mem", 2, durability="memory")
    await _write(client, "c-eph", 1, durability="ephemeral")
    await _write(client, "d-disk", 4)
    await _write(client, "jobs", 5, type="queue")
    r = await client.post("/v0/topics/jobs/claim", json={"node": "w", "max": 2})
    assert r.status_code == 200 and r.json()["count"] == 2
    await client.post("/v0/topics/d-disk/delete", json={"before_seq": 3})

    s = await scrape(client)
    assert value(s, "topics_topics") == 5
    by_class = {
        c: value(s, "topics_topics_by_class", **{"class": c})
        for c in ("ephemeral", "memory", "disk", "fsync")
    }
    assert by_class == {"ephemeral": 1, "memory": 1, "disk": 2, "fsync": 1}
    assert value(s, "topics_records_live") == 3 + 2 + 1 + 2 + 5
    assert value(s, "topics_bytes_live") == sum(
        topic_value(s, "topics_topic_bytes_live", t) or 0
        for t in ("a-fsync", "b-mem", "c-eph", "d-disk", "jobs")
    )
    assert value(s, "topics_queue_topics") == 1
    assert value(s, "topics_queue_leases_in_flight") == 2
    assert value(s, "topics_routers") == 0 and value(s, "topics_watch_sessions") == 0
    assert value(s, "topics_ready") == 1 and value(s, "topics_recovery_progress") == 1
    assert value(s, "topics_uptime_ms") >= 0
    assert topic_value(s, "topics_topic_head_seq", "a-fsync") == 3
    assert topic_value(s, "topics_topic_head_seq", "d-disk") == 4
    assert topic_value(s, "topics_topic_earliest_seq", "d-disk") == 3
    assert topic_value(s, "topics_topic_records_live", "d-disk") == 2
    assert topic_value(s, "topics_topic_queue_ready", "jobs") == 3
    assert topic_value(s, "topics_topic_queue_in_flight", "jobs") == 2
    # queue gauges only for queue topics
    assert topic_value(s, "topics_topic_queue_ready", "d-disk") is None
    assert topic_value(s, "topics_topic_queue_in_flight", "a-fsync") is None
    assert value(s, "topics_topic_metrics_truncated") == 0


async def test_expired_leases_are_ready_again(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await _write(client, "jobs", 2, type="queue")
    await client.post("/v0/topics/jobs/claim", json={"node": "w", "max": 2, "lease_ms": 1000})
    s = await scrape(client)
    assert value(s, "topics_queue_leases_in_flight") == 2
    clock.advance(1001)
    s = await scrape(client)
    assert value(s, "topics_queue_leases_in_flight") == 0
    assert topic_value(s, "topics_topic_queue_ready", "jobs") == 2


async def test_json_snapshot_has_the_same_content(client: httpx.AsyncClient) -> None:
    await _write(client, "t", 2)
    await _write(client, "jobs", 1, type="queue")
    text = await client.get("/v0/metrics")
    r = await client.get("/v0/metrics", headers={"accept": "application/json"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    body = r.json()
    families = body["metrics"]
    for family in families.values():
        assert set(family) == {"type", "help", "samples"} and family["help"]
        for sample in family["samples"]:
            assert set(sample) == {"name", "labels", "value"}
    json_types, json_samples = parse_json(body)
    text_types, text_samples = parse_text(text.text)
    assert json_types == text_types

    def steady(samples: Samples) -> Samples:
        """Without what moves between the two scrapes: the uptime, the process, and the
        requests (the text scrape is counted before the JSON one)."""
        moving = (
            "topics_uptime_ms",
            "topics_http_",
            "process_",
            "python_gc_",
            "topics_malloc_",
            "topics_python_",
        )
        return {k: v for k, v in samples.items() if not k[0].startswith(moving)}

    assert steady(json_samples) == steady(text_samples)
    assert families["topics_wal_fsync_latency_us"]["samples"][-3]["labels"] == {"le": "+Inf"}


@pytest.mark.parametrize(
    ("accept", "json"),
    [
        (None, False),
        ("text/plain", False),
        ("*/*", False),
        ("application/json", True),
        ("application/json, text/plain, */*", True),
        ("text/plain;q=1, application/json;q=0.5", False),
        ("application/json;q=0", False),
    ],
)
async def test_content_negotiation(client: httpx.AsyncClient, accept: str | None, json: bool) -> None:
    headers = {"accept": accept} if accept is not None else {}
    r = await client.get("/v0/metrics", headers=headers)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json" if json else "text/plain; version=0.0.4")
    assert "accept" in r.headers["vary"].lower()


async def test_text_is_gzipped_when_large_and_accepted(client: httpx.AsyncClient) -> None:
    r = await client.get("/v0/metrics", headers={"accept-encoding": "gzip"})
    assert r.headers["content-encoding"] == "gzip"
    assert "topics_topics" in parse_text(r.text)[0]  # httpx decoded it


async def test_per_topic_block_is_bounded_in_name_order(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(metrics, "MAX_TOPIC_METRICS", 3)
    for name in ("e", "d", "c", "b", "a"):
        await _write(client, name, 1)
    s = await scrape(client)
    listed = sorted(labels[0][1] for name, labels in s if name == "topics_topic_head_seq")
    assert listed == ["a", "b", "c"]
    assert value(s, "topics_topic_metrics_truncated") == 1
    assert value(s, "topics_topics") == 5 and value(s, "topics_records_live") == 5  # unbounded
    monkeypatch.setattr(metrics, "MAX_TOPIC_METRICS", 5)
    s = await scrape(client)
    assert value(s, "topics_topic_metrics_truncated") == 0


def _ctx_with_topics(names: list[str]) -> ServerContext:
    engine = Engine(ManualClock())
    for name in names:
        engine.put_topic(name, {})
    return ServerContext(engine, ready=True)


def test_allowed_filters_only_the_per_topic_block(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = _ctx_with_topics(["tenant1:a", "tenant1:b", "tenant2:a", "tenant2:b", "tenant2:c"])
    _, s = parse_text(metrics.metrics_text(ctx, allowed=lambda t: t.startswith("tenant2:")).decode())
    listed = sorted(labels[0][1] for name, labels in s if name == "topics_topic_head_seq")
    assert listed == ["tenant2:a", "tenant2:b", "tenant2:c"]
    assert value(s, "topics_topics") == 5  # aggregates are not filtered
    assert value(s, "topics_topic_metrics_truncated") == 0
    # the bound counts eligible topics only
    monkeypatch.setattr(metrics, "MAX_TOPIC_METRICS", 2)
    _, s = parse_json(metrics.metrics_snapshot(ctx, allowed=lambda t: t.startswith("tenant1:")))
    listed = sorted(labels[0][1] for name, labels in s if name == "topics_topic_head_seq")
    assert listed == ["tenant1:a", "tenant1:b"] and value(s, "topics_topic_metrics_truncated") == 0
    _, s = parse_json(metrics.metrics_snapshot(ctx, allowed=lambda t: t.startswith("tenant2:")))
    assert value(s, "topics_topic_metrics_truncated") == 1
    _, s = parse_json(metrics.metrics_snapshot(ctx, allowed=lambda t: False))
    assert not [name for name, _ in s if name == "topics_topic_head_seq"]


async def test_stream_and_watch_gauges() -> None:
    app, ctx = create_app(load_settings({}), Engine(ManualClock()))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t.test") as client:
        await _write(client, "a", 1)
        r = await client.post("/v0/watch", json={"topics": {"a": {"from_seq": 0}}})
        assert r.status_code in (200, 201), r.text
        ctx.admission.sse_connections = 3  # streams need a real socket (see test_watch_stream.py)
        s = await scrape(client)
    assert value(s, "topics_watch_sessions") == 1
    assert value(s, "topics_sse_connections") == 3


async def test_in_memory_server_exposes_wal_families_as_zeros(client: httpx.AsyncClient) -> None:
    await _write(client, "t", 3, durability="fsync")
    s = await scrape(client)
    for name in WAL:
        assert value(s, name) == 0, name
    assert value(s, "topics_wal_fsync_latency_us_count") == 0
    assert value(s, "topics_wal_fsync_latency_us_bucket", le="+Inf") == 0


async def test_wal_counters_and_histogram_move_after_durable_writes(tmp_path: Path) -> None:
    async with app_client(tmp_path, ManualClock()) as (client, _):
        before = await scrape(client)
        for i in range(3):
            await _write(client, "f", 1 + i, durability="fsync")
        s = await scrape(client)
    for name in ("topics_wal_frames_total", "topics_wal_batches_total", "topics_wal_bytes_written_total"):
        assert value(s, name) > value(before, name), name
    assert value(s, "topics_wal_fsyncs_total") >= 3  # each fsync-class append waits for one
    assert value(s, "topics_wal_queue_depth_peak") >= 1
    assert value(s, "topics_wal_submit_full_total") == 0 and value(s, "topics_wal_read_only") == 0
    count = value(s, "topics_wal_fsync_latency_us_count")
    assert count == value(s, "topics_wal_fsyncs_total")
    assert value(s, "topics_wal_fsync_latency_us_bucket", le="+Inf") == count
    assert value(s, "topics_wal_fsync_latency_us_sum") > 0
    buckets = [value(s, "topics_wal_fsync_latency_us_bucket", le=str(b)) for b in FSYNC_BUCKETS_US]
    assert buckets == sorted(buckets)  # cumulative
    assert value(s, "topics_ready") == 1 and topic_value(s, "topics_topic_head_seq", "f") == 6


async def test_200_while_recovering(tmp_path: Path) -> None:
    settings = load_settings({"TOPICS_DATA_DIR": str(tmp_path)})
    app, ctx = create_app(
        settings, Engine(ManualClock(), settings.limits), DataDirectory(tmp_path, FileSystem())
    )
    ctx.replay_progress = 0.25  # not started: the context is still "replaying"
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://topics.test"
    ) as client:
        assert (await client.get("/v0/topics")).status_code == 503
        assert (await client.get("/v0/ready")).status_code == 503
        s = await scrape(client)
        r = await client.get("/v0/metrics", headers={"accept": "application/json"})
        assert r.status_code == 200
    assert value(s, "topics_ready") == 0
    assert value(s, "topics_recovery_progress") == 0.25
    assert value(s, "topics_wal_frames_total") == 0
    assert value(s, "topics_topic_metrics_truncated") == 0


@pytest.mark.skipif(not GLIBC, reason="glibc's mallinfo2 (glibc >= 2.33) is not available here")
async def test_memory_gauges_read_the_allocators(client: httpx.AsyncClient) -> None:
    await _write(client, "t", 100)
    s = await scrape(client)
    heap, in_use, free = (value(s, f"topics_malloc_{f}_bytes") for f in ("heap", "in_use", "free"))
    assert in_use > 0 and free >= 0
    # glibc adds each arena's free chunks to fordblks and the rest of its memory to uordblks
    assert heap == in_use + free
    assert value(s, "topics_malloc_mmap_bytes") >= 0
    assert 0 <= value(s, "topics_malloc_releasable_bytes") <= free
    assert value(s, "topics_python_allocated_blocks") > 0


def test_without_mallinfo2_the_malloc_gauges_are_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "_MALLINFO2", None)  # as on musl or macOS
    types, s = parse_text(metrics.metrics_text(_ctx_with_topics(["a"])).decode())
    assert not any(name.startswith("topics_malloc_") for name in types)
    assert value(s, "topics_python_allocated_blocks") > 0


def test_fsync_histogram_buckets() -> None:
    stats = WalStats()
    for micros in (10, 50, 51, 1_000, 2_000_000):
        stats.record_fsync(micros)
    h = stats.fsync_histogram()
    assert h.count == 5 == stats.fsyncs_total and h.sum_us == 2_001_111
    assert len(h.counts) == len(FSYNC_BUCKETS_US) + 1
    assert h.counts[0] == 2  # le=50 is inclusive
    assert h.counts[1] == 1 and h.counts[FSYNC_BUCKETS_US.index(1_000)] == 1
    assert h.counts[-1] == 1  # +Inf


def test_render_uses_a_private_registry() -> None:
    from prometheus_client import REGISTRY

    ctx = _ctx_with_topics(["a"])
    metrics.metrics_text(ctx)
    assert REGISTRY.get_sample_value("topics_topics") is None
