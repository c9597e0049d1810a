"""OpenTelemetry (``topics.tracing``, the ``otel`` extra): the trace context travels in a record's
``meta`` from the append to the Worker's handler, against a real server, spans caught by the
SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator

import pytest
import topics
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from topics import Job, Worker, WorkerStats, tracing
from topics_engine import Limits

from tests.server.processes import ServerProcess

EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module")
def tracer() -> trace.Tracer:
    """The process's tracer provider, exporting to :data:`EXPORTER` (OpenTelemetry allows one
    global provider per process: set once)."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    trace.set_tracer_provider(provider)
    return trace.get_tracer("tests")


@pytest.fixture
def spans(tracer: trace.Tracer) -> Iterator[Callable[[], list[ReadableSpan]]]:
    EXPORTER.clear()
    yield lambda: list(EXPORTER.get_finished_spans())
    EXPORTER.clear()


def by_name(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


@pytest.mark.parametrize("mode", ["push", "poll"])
def test_the_handlers_span_is_in_the_producers_trace(
    mode: str,
    client: topics.Client,
    tracer: trace.Tracer,
    spans: Callable[[], list[ReadableSpan]],
    name: Callable[[str], str],
) -> None:
    q = name("traced")
    client.create_topic(q, type="queue")
    with tracer.start_as_current_span("request") as request:
        client.append(q, {"n": 1})
        client.append_many(q, [{"data": {"n": 2}}, {"data": {"n": 3}, "meta": {"k": "v"}}])
    trace_id = request.get_span_context().trace_id
    seen: list[int] = []

    def handle(job: Job) -> None:
        current = trace.get_current_span().get_span_context()
        assert current.trace_id == trace_id
        seen.append(job.data["n"])

    assert Worker(client, q, handle, mode=mode).drain(timeout_s=20) == WorkerStats(processed=3)
    assert sorted(seen) == [1, 2, 3]

    finished = spans()
    [send_one] = [
        s
        for s in by_name(finished, f"send {q}")
        if s.attributes is not None and s.attributes["messaging.operation.name"] == "append"
    ]
    [send_many] = [s for s in by_name(finished, f"send {q}") if s is not send_one]
    assert send_one.kind == send_many.kind == SpanKind.PRODUCER
    assert send_one.parent is not None and send_one.parent.span_id == request.get_span_context().span_id
    assert send_many.attributes is not None and send_many.attributes["messaging.batch.message_count"] == 2
    processed = by_name(finished, f"process {q}")
    assert len(processed) == 3
    for span in processed:
        assert span.kind == SpanKind.CONSUMER and span.context is not None
        assert span.context.trace_id == trace_id
        assert span.attributes is not None
        assert span.attributes["messaging.system"] == "topics"
        assert span.attributes["messaging.destination.name"] == q
        seq = int(str(span.attributes["messaging.message.id"]))
        parent = send_one if seq == 1 else send_many
        assert span.parent is not None and span.parent.span_id == parent.context.span_id  # type: ignore[union-attr]


def test_records_carry_the_context_and_a_callers_own_traceparent_wins(
    client: topics.Client,
    tracer: trace.Tracer,
    spans: Callable[[], list[ReadableSpan]],
    name: Callable[[str], str],
) -> None:
    t = name("ctx")
    mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    client.append(t, 0)  # no active span: nothing added, no span
    assert spans() == []
    with tracer.start_as_current_span("request") as request:
        client.append_many(t, [{"data": 1, "meta": {"traceparent": mine}}, {"data": 2, "meta": {"a": 1}}])
    [send] = by_name(spans(), f"send {t}")
    ctx = send.context
    assert ctx is not None and ctx.trace_id == request.get_span_context().trace_id
    expected = f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"
    assert [r.meta for r in client.read(t)] == [
        None,
        {"traceparent": mine},
        {"a": 1, "traceparent": expected},
    ]


async def test_an_async_worker_continues_the_trace(
    aclient: topics.AsyncClient,
    tracer: trace.Tracer,
    spans: Callable[[], list[ReadableSpan]],
    name: Callable[[str], str],
) -> None:
    q = name("atraced")
    await aclient.create_topic(q, type="queue")
    with tracer.start_as_current_span("request") as request:
        await aclient.append(q, "job")
    trace_ids: list[int] = []

    async def handle(job: Job) -> None:
        trace_ids.append(trace.get_current_span().get_span_context().trace_id)

    assert await Worker(aclient, q, handle).drain_async(timeout_s=20) == WorkerStats(processed=1)
    assert trace_ids == [request.get_span_context().trace_id]
    [process] = by_name(spans(), f"process {q}")
    assert process.context is not None and process.context.trace_id == trace_ids[0]


def test_a_meta_at_the_servers_limits_is_written_unstamped(
    client: topics.Client, tracer: trace.Tracer, name: Callable[[str], str]
) -> None:
    """Tracing never turns a write that works into one refused (review of issue 26): a meta
    with no room left for the trace context (64 keys, or its bytes near 16 KiB) goes as it is."""
    t = name("full-meta")
    by_keys = {f"k{i}": "v" for i in range(64)}
    by_bytes = {"k": "x" * (16 * 1024 - 8)}
    with tracer.start_as_current_span("request"):
        client.append(t, 1, meta=by_keys)
        client.append(t, 2, meta=by_bytes)
        client.append(t, 3, meta={"k": "v"})
    metas = [r.meta for r in client.read(t)]
    assert metas[0] == by_keys and metas[1] == by_bytes
    assert "traceparent" in metas[2]


def test_the_meta_limits_tracing_leaves_room_under_are_the_servers_defaults() -> None:
    """``topics.tracing`` copies the server's default meta limits (the SDK does not import the
    server): a change to either must change both."""
    defaults = Limits()
    assert (defaults.max_meta_keys, defaults.max_meta_bytes) == (tracing.META_KEYS, tracing.META_BYTES)


def test_a_job_whose_traceparent_is_not_a_string_is_processed_in_a_root_span(
    client: topics.Client, tracer: trace.Tracer, name: Callable[[str], str]
) -> None:
    q = name("odd-tp")
    client.create_topic(q, type="queue")
    client.append_many(
        q, [{"data": 1, "meta": {"traceparent": 5}}, {"data": 2, "meta": {"traceparent": "junk"}}]
    )
    seen: list[int] = []
    stats = Worker(client, q, lambda job: seen.append(job.seq), mode="poll").drain(timeout_s=30)
    assert sorted(seen) == [1, 2] and stats.failed == 0, stats


def test_without_opentelemetry_nothing_is_wrapped_or_added(server: ServerProcess) -> None:
    """The extra not installed (its import made to fail): tracing is off, the Worker's handler is
    the caller's own function, and a write inside what would be a span adds no ``meta``."""
    script = f"""
import sys
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
import topics
from topics import tracing
assert not tracing.ENABLED
def handle(job): pass
client = topics.Client({server.url!r})
assert topics.Worker(client, "q", handle).handler is handle
with tracing.producing("t", "append", 1) as carrier:
    assert carrier is None
client.append("untraced-{uuid.uuid4().hex[:8]}", 1)
assert "opentelemetry.trace" not in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
