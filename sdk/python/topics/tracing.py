"""OpenTelemetry tracing, opt-in (the ``otel`` extra: ``pip install topics[otel]``).

With ``opentelemetry-api`` installed:

- ``append``/``append_many`` called while a span is active run in a ``send <topic>`` span
  (kind PRODUCER) and write its W3C trace context into each record's ``meta`` as ``traceparent``
  (and ``tracestate`` when there is one). A record whose ``meta`` already holds a
  ``traceparent`` keeps it (the caller's own context wins). No active span: nothing is added.
- the :class:`topics.Worker` runs each job's handler in a ``process <queue>`` span (kind
  CONSUMER), a child of the context in the job's ``meta`` when it has one — so a job's processing
  shows up in the trace of the request that enqueued it.

Spans carry the messaging semantic conventions' attributes: ``messaging.system`` (``topics``),
``messaging.destination.name``, ``messaging.operation.type``/``name``,
``messaging.message.id`` (the seq, on the consumer) and ``messaging.batch.message_count``.

Without the package the module is inert: :data:`ENABLED` is false, :func:`producing` hands
out a shared no-op context and the Worker's handler is not wrapped — no cost.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ._worker_types import is_async_handler
from .models import Job

try:
    from opentelemetry import trace as _trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
except ImportError:  # the otel extra is not installed
    ENABLED = False
else:
    ENABLED = True
    _PROPAGATOR = TraceContextTextMapPropagator()

TRACER = "topics"
"""The instrumentation scope of the SDK's spans."""

Carrier = dict[str, str]
"""The trace context headers to put in a record's ``meta``: ``traceparent`` (and
``tracestate``)."""


@contextlib.contextmanager
def _off() -> Iterator[Carrier | None]:
    yield None


def producing(topic: str, operation: str, count: int) -> contextlib.AbstractContextManager[Carrier | None]:
    """A ``send <topic>`` PRODUCER span around a write of ``count`` records (``operation``:
    ``append``/``append_many``), entered only while the caller has a span active; it gives the
    carrier to stamp the records with, or ``None`` (no span: write them unchanged)."""
    if not ENABLED or not _trace.get_current_span().get_span_context().is_valid:
        return _off()
    return _producing(topic, operation, count)


@contextlib.contextmanager
def _producing(topic: str, operation: str, count: int) -> Iterator[Carrier | None]:
    attributes: dict[str, str | int] = {
        "messaging.system": "topics",
        "messaging.destination.name": topic,
        "messaging.operation.type": "send",
        "messaging.operation.name": operation,
    }
    if count > 1:  # 0: a batch of unknown size (an iterator)
        attributes["messaging.batch.message_count"] = count
    tracer = _trace.get_tracer(TRACER)
    with tracer.start_as_current_span(f"send {topic}", kind=_trace.SpanKind.PRODUCER, attributes=attributes):
        carrier: Carrier = {}
        _PROPAGATOR.inject(carrier)
        yield carrier or None


def stamped(record: dict[str, Any], carrier: Carrier) -> dict[str, Any]:
    """``record`` (a write body's record) with ``carrier`` in its ``meta`` — a copy; unchanged
    when its ``meta`` has a ``traceparent`` already or is not a mapping (the server names
    that)."""
    meta = record.get("meta")
    if meta is None:
        return {**record, "meta": dict(carrier)}
    if not isinstance(meta, Mapping) or "traceparent" in meta:
        return record
    return {**record, "meta": {**meta, **carrier}}


def stamped_all(records: Iterable[Any], carrier: Carrier) -> list[Any]:
    """Every record of an ``append_many`` stamped (copies: the caller's are never changed); a
    record that is not a mapping is passed on as it is (the write refuses it)."""
    return [stamped(dict(r), carrier) if isinstance(r, Mapping) else r for r in records]


def consuming(handler: Callable[[Any], Any], queue: str) -> Callable[[Job], Any]:
    """A Worker's ``handler`` run in a ``process <queue>`` CONSUMER span, the child of the trace
    context in the job's ``meta`` (a root span when there is none). An exception the handler
    raises is recorded on the span (status ERROR) and raised on. Async when ``handler`` is."""

    def span(job: Job) -> contextlib.AbstractContextManager[Any]:
        meta = job.meta
        parent = _PROPAGATOR.extract(meta) if meta and "traceparent" in meta else None
        attributes: dict[str, str | int] = {
            "messaging.system": "topics",
            "messaging.destination.name": queue,
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.message.id": str(job.seq),
        }
        tracer = _trace.get_tracer(TRACER)
        return tracer.start_as_current_span(
            f"process {queue}", context=parent, kind=_trace.SpanKind.CONSUMER, attributes=attributes
        )

    if is_async_handler(handler):

        async def run_async(job: Job) -> Any:
            with span(job):
                return await handler(job)

        return run_async

    def run(job: Job) -> Any:
        with span(job):
            return handler(job)

    return run
