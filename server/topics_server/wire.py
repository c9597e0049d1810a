"""The one place where engine results and errors become HTTP: response bodies, statuses and the
error envelope.

Results: each engine result dataclass has an encoder here producing the response object (a dict
serialized once, or — for record reads — JSON object bytes assembled from the records' bytes
encoded at append time, left open so the ``performance`` block can be appended last).

Errors: every non-2xx response is ``{"error": {"code", "message", "detail"?}, "performance"}``.
Engine and HTTP-layer errors carry a stable ``code``; :data:`STATUS_BY_CODE` gives its status.
Anything else is a 500 ``internal`` with no stack trace in the body (it is logged server-side).
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from topics_engine.consumers import ConsumerPage, ConsumerPut, ConsumerState
from topics_engine.errors import Internal, TopicsError
from topics_engine.queues import ClaimedJob, LeaseChange, encode_jobs
from topics_engine.results import (
    Appended,
    Diff,
    LeasePage,
    QueueCounters,
    RecordsDeleted,
    Tombstone,
    TopicDeleted,
    TopicPage,
    TopicPut,
    TopicState,
    TopicSummary,
)
from topics_engine.routers import Router, RouterPage, RouterPut, RouterState
from topics_engine.schedules import Schedule, SchedulePage, SchedulePut

log = logging.getLogger("topics.server")

# -- errors ------------------------------------------------------------------------------------

STATUS_BY_CODE: dict[str, int] = {
    "invalid_request": 400,
    "batch_too_large": 400,
    "record_too_large": 400,
    "unauthorized": 401,
    "forbidden": 403,
    "topic_not_found": 404,
    "router_not_found": 404,
    "schedule_not_found": 404,
    "consumer_not_found": 404,
    "not_found": 404,
    "method_not_allowed": 405,
    "not_acceptable": 406,
    "router_cycle": 409,
    "topic_exists_incompatible": 409,
    "topic_not_empty": 409,
    "not_a_queue": 409,
    "no_dead_letter": 409,
    "no_such_consumer": 409,
    "cursor_behind": 409,
    "cursor_beyond_head": 409,
    "payload_too_large": 413,
    "unsupported_media_type": 415,
    "topic_full": 422,
    "throttled": 429,
    "internal": 500,
    "not_ready": 503,
    "shutting_down": 503,
}
"""The contract's status for every ``error.code``."""


def status_of(err: TopicsError) -> int:
    return STATUS_BY_CODE[err.code]


def to_topics_error(exc: BaseException) -> TopicsError:
    """Map any exception to the error that describes it to a client."""
    if isinstance(exc, TopicsError):
        return exc
    log.error("unhandled error", exc_info=exc)
    return Internal("internal error; the server logged the details")


def error_body(err: TopicsError) -> dict[str, Any]:
    inner: dict[str, Any] = {"code": err.code, "message": err.message}
    if err.detail is not None:
        inner["detail"] = err.detail
    return {"error": inner}


def retry_after_s(err: TopicsError) -> int | None:
    """``Retry-After`` seconds for a 429/503, or ``None``: a read-only WAL does not clear until
    a restart, so it carries none (docs/DECISIONS.md, "WAL failure is fail-stop")."""
    if STATUS_BY_CODE[err.code] not in (429, 503):
        return None
    detail = err.detail or {}
    if detail.get("wal_read_only"):
        return None
    retry_ms = detail.get("retry_after_ms", 1000)
    return max(1, -(-int(retry_ms) // 1000))


# -- topics ------------------------------------------------------------------------------------


def topic_put(r: TopicPut) -> dict[str, Any]:
    return {"topic": r.topic, "created": r.created, "config": r.config.to_wire()}


def queue_counters(q: QueueCounters) -> dict[str, Any]:
    return {"ready": q.ready, "in_flight": q.in_flight, "dead_lettered": q.dead_lettered, **queue_health(q)}


def queue_health(q: QueueCounters) -> dict[str, Any]:
    """The queue health fields (an extension) of the topic state and the claim, ack and nack
    responses."""
    return {
        "delayed": q.delayed,
        "oldest_ready_age_ms": q.oldest_ready_age_ms,
        "holders": [{"node": node, "in_flight": n} for node, n in q.holders],
        "holders_truncated": q.holders_truncated,
    }


def topic_state(s: TopicState) -> dict[str, Any]:
    body: dict[str, Any] = {
        "topic": s.topic,
        "type": s.type.value,
        "head_seq": s.head_seq,
        "earliest_seq": s.earliest_seq,
        "next_seq": s.next_seq,
        "count": s.count,
        "bytes": s.bytes,
        "config": s.config.to_wire(),
        "effective_priority": s.effective_priority,
        "last_write_ts": s.last_write_ts,
        "last_read_ts": s.last_read_ts,
    }
    if s.queue is not None:
        body["queue"] = queue_counters(s.queue)
    return body


def topic_summary(s: TopicSummary) -> dict[str, Any]:
    return {
        "topic": s.topic,
        "type": s.type.value,
        "head_seq": s.head_seq,
        "earliest_seq": s.earliest_seq,
        "count": s.count,
        "bytes": s.bytes,
        "durable": s.durable,
        "durability": s.durability.value,
        "effective_priority": s.effective_priority,
    }


def topic_page(p: TopicPage) -> dict[str, Any]:
    body: dict[str, Any] = {"topics": [topic_summary(s) for s in p.topics]}
    if p.next_cursor is not None:
        body["next_cursor"] = p.next_cursor
    return body


def topic_deleted(r: TopicDeleted) -> dict[str, Any]:
    return {
        "topic": r.topic,
        "deleted": r.deleted,
        "routers_removed": r.routers_removed,
        "schedules_removed": r.schedules_removed,
    }


# -- routers -----------------------------------------------------------------------------------


def router(r: Router) -> dict[str, Any]:
    return {"router": r.name, **r.config.to_wire()}


def router_put(p: RouterPut) -> dict[str, Any]:
    body = router(p.router)
    return {"router": body.pop("router"), "created": p.created, **body}


def router_state(s: RouterState) -> dict[str, Any]:
    return {
        **router(s.router),
        "forwarded_total": s.router.forwarded_total,
        "cursor": s.cursor,
        "lag": s.lag,
        "source_trimmed": s.router.source_trimmed,
    }


def router_page(p: RouterPage) -> dict[str, Any]:
    body: dict[str, Any] = {
        "routers": [
            {
                "router": r.name,
                "source": r.config.source,
                "dest": r.config.dest,
                "guarantee": r.config.guarantee,
                "forwarded_total": r.forwarded_total,
            }
            for r in p.routers
        ]
    }
    if p.next_cursor is not None:
        body["next_cursor"] = p.next_cursor
    return body


# -- schedules (an extension) ------------------------------------------------------------------


def _timing(s: Schedule) -> dict[str, Any]:
    c = s.config
    return {"cron": c.cron} if c.cron is not None else {"every_ms": c.every_ms}


def schedule(s: Schedule) -> dict[str, Any]:
    """A schedule as put (``records`` verbatim: the stored JSON text), with its progress."""
    c = s.config
    body: dict[str, Any] = {"schedule": s.name, "topic": c.topic, **_timing(s)}
    body["records"] = orjson.Fragment(c.records)
    if c.node is not None:
        body["node"] = c.node
    error = s.last_error
    body.update(
        missed=c.missed,
        next_run_ms=s.next_run_ms,
        last_run_ms=s.last_run_ms,
        runs_total=s.runs_total,
        last_error=None
        if error is None
        else {"code": error.code, "message": error.message, "at_ms": error.at_ms},
    )
    return body


def schedule_put(p: SchedulePut) -> dict[str, Any]:
    body = schedule(p.schedule)
    return {"schedule": body.pop("schedule"), "created": p.created, **body}


def schedule_state(s: Schedule) -> dict[str, Any]:
    return schedule(s)


def schedule_page(p: SchedulePage) -> dict[str, Any]:
    body: dict[str, Any] = {
        "schedules": [
            {
                "schedule": s.name,
                "topic": s.config.topic,
                **_timing(s),
                "missed": s.config.missed,
                "next_run_ms": s.next_run_ms,
                "last_run_ms": s.last_run_ms,
                "runs_total": s.runs_total,
            }
            for s in p.schedules
        ]
    }
    if p.next_cursor is not None:
        body["next_cursor"] = p.next_cursor
    return body


# -- named consumers (an extension) ------------------------------------------------------------


def consumer(s: ConsumerState) -> dict[str, Any]:
    return {
        "consumer": s.consumer,
        "topic": s.topic,
        "cursor": s.cursor,
        "head_seq": s.head_seq,
        "lag": s.lag,
        "committed_at_ms": s.committed_at_ms,
    }


def consumer_put(p: ConsumerPut) -> dict[str, Any]:
    return {"consumer": p.state.consumer, "topic": p.state.topic, "created": p.created, **consumer(p.state)}


def consumer_page(p: ConsumerPage) -> dict[str, Any]:
    body: dict[str, Any] = {"consumers": [consumer(s) for s in p.consumers]}
    if p.next_cursor is not None:
        body["next_cursor"] = p.next_cursor
    return body


# -- records -----------------------------------------------------------------------------------


def appended(r: Appended, return_seqs: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"topic": r.topic, "first_seq": r.first_seq, "last_seq": r.last_seq}
    if return_seqs:
        out["seqs"] = list(range(r.first_seq, r.last_seq + 1))
    out.update(head_seq=r.head_seq, count=r.count, created=r.created, deduped=r.deduped)
    return out


def tombstone(t: Tombstone) -> dict[str, Any]:
    return {
        "gap_from": t.gap_from,
        "gap_to": t.gap_to,
        "reason": t.reason,
        "missed_estimate": t.missed_estimate,
        "earliest_seq": t.earliest_seq,
        "head_seq": t.head_seq,
    }


def diff(d: Diff) -> list[bytes | memoryview]:
    """The diff response as JSON object parts without the closing brace (performance goes
    last): the page's record bytes are not copied together."""
    stone = orjson.dumps(tombstone(d.tombstone)) if d.tombstone else b"null"
    tail = (
        b'],"next_from_seq":%d,"head_seq":%d,"earliest_seq":%d,"caught_up":%s,"tombstone":%s,"lag":%d,"from_seq":%d'
        % (
            d.next_from_seq,
            d.head_seq,
            d.earliest_seq,
            b"true" if d.caught_up else b"false",
            stone,
            d.lag,
            d.from_seq,
        )
    )
    return [b'{"topic":' + orjson.dumps(d.topic) + b',"records":[', *d.records_parts(), tail]


def records_deleted(r: RecordsDeleted) -> dict[str, Any]:
    return {
        "topic": r.topic,
        "deleted": r.deleted,
        "earliest_seq": r.earliest_seq,
        "head_seq": r.head_seq,
        "count": r.count,
        "bytes": r.bytes,
    }


# -- queues ------------------------------------------------------------------------------------


def claimed(topic: str, jobs: list[ClaimedJob], counters: QueueCounters) -> bytes:
    """The claim response as open JSON object bytes (jobs are joined from record bytes)."""
    return b"".join(
        (
            b'{"topic":',
            orjson.dumps(topic),
            b',"claimed":[',
            encode_jobs(jobs),
            b'],"count":%d,"ready":%d,' % (len(jobs), counters.ready),
            orjson.dumps(queue_health(counters))[1:-1],
        )
    )


def acked(r: LeaseChange, counters: QueueCounters) -> dict[str, Any]:
    return {
        "topic": r.topic,
        "acked": len(r.done),
        "skipped": r.skipped,
        "ready": counters.ready,
        "in_flight": counters.in_flight,
        **queue_health(counters),
    }


def nacked(r: LeaseChange, counters: QueueCounters) -> dict[str, Any]:
    return {
        "topic": r.topic,
        "nacked": len(r.done),
        "skipped": r.skipped,
        "ready": counters.ready,
        "in_flight": counters.in_flight,
        **queue_health(counters),
    }


def dead_lettered(r: LeaseChange, counters: QueueCounters) -> dict[str, Any]:
    return {
        "topic": r.topic,
        "moved": r.done,
        "skipped": r.skipped,
        "ready": counters.ready,
        "in_flight": counters.in_flight,
        **queue_health(counters),
    }


def lease_page(page: LeasePage) -> dict[str, Any]:
    body: dict[str, Any] = {
        "leases": [
            {
                "seq": x.seq,
                "node": x.node,
                "lease_id": x.lease_id,
                "deadline": x.deadline,
                "deliveries": x.deliveries,
            }
            for x in page.leases
        ]
    }
    if page.next_after is not None:
        body["next_cursor"] = str(page.next_after)
    return body


def extended(r: LeaseChange) -> dict[str, Any]:
    return {"topic": r.topic, "extended": len(r.done), "skipped": r.skipped, "deadlines": r.deadlines}
