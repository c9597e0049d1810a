"""The one module that touches the generated client (:mod:`topics_client`, made from
``openapi/v0.yaml`` by ``scripts/gen-client.sh``); the rest of the SDK sees only the names below.

Two things come from the generated code:

- **Routes**: each ``*_route`` asks the generated operation module for its method, URL
  (path parameters percent-encoded) and query parameters, so a path or parameter renamed in the
  spec reaches the SDK by regeneration alone. Bodies are not built through the generated request
  models: the SDK encodes its own JSON (one ``orjson.dumps`` of what the caller gave), which is
  what the spec asks for (request schemas carry no defaults, so only set fields are sent).
- **Control-plane answers** (topic, list, router, schedule, named-consumer, probe, queue-ack
  and watch-session responses)
  are parsed by the generated models and copied into the SDK's dataclasses; ``mypy --strict``
  checks every field against the spec. Record-bearing answers are not: the generated models cost
  3.4 ms per 1000-record page, ``orjson.loads`` 0.9 ms. ``diff`` pages and watch frames are
  decoded by msgspec straight into :class:`Record` structs (0.8 ms per page, less than the
  dicts alone); claimed jobs and append answers are read from the JSON dicts.

Unknown response fields are ignored and enum values outside the spec's list are kept as plain
strings (the generated models treat response enums as open: docs/DECISIONS.md, "Fit for client
generation").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote

import msgspec
from topics_client.api.auth import whoami as _whoami
from topics_client.api.consumers import (
    commit_consumer,
    delete_consumer,
    get_consumer,
    list_consumers,
    put_consumer,
)
from topics_client.api.probes import health as _health
from topics_client.api.probes import ready as _ready
from topics_client.api.queues import (
    ack_jobs,
    claim_jobs,
    dead_letter_jobs,
    extend_leases,
    list_leases,
    nack_jobs,
)
from topics_client.api.records import append_records, delete_records, diff_topic
from topics_client.api.routers import delete_router, get_router, list_routers, put_router
from topics_client.api.schedules import delete_schedule, get_schedule, list_schedules, put_schedule
from topics_client.api.topics import delete_topic, get_topic, list_topics, put_topic
from topics_client.api.watch import create_watch
from topics_client.models.ack_response import AckResponse
from topics_client.models.consumer import Consumer as _Consumer
from topics_client.models.consumer_delete_response import ConsumerDeleteResponse
from topics_client.models.consumer_list import ConsumerList
from topics_client.models.consumer_put_response import ConsumerPutResponse
from topics_client.models.consumer_state import ConsumerState
from topics_client.models.dead_letter_response import DeadLetterResponse
from topics_client.models.error_code import ErrorCode
from topics_client.models.extend_response import ExtendResponse
from topics_client.models.health import Health as _Health
from topics_client.models.lease_list import LeaseList
from topics_client.models.nack_response import NackResponse
from topics_client.models.ready import Ready as _Ready
from topics_client.models.resolved_topic_config import ResolvedTopicConfig
from topics_client.models.router_delete_response import RouterDeleteResponse
from topics_client.models.router_list import RouterList
from topics_client.models.router_put_response import RouterPutResponse
from topics_client.models.router_state import RouterState
from topics_client.models.schedule_delete_response import ScheduleDeleteResponse
from topics_client.models.schedule_failure import ScheduleFailure as _ScheduleFailure
from topics_client.models.schedule_list import ScheduleList
from topics_client.models.schedule_put_response import SchedulePutResponse
from topics_client.models.schedule_state import ScheduleState
from topics_client.models.topic_delete_response import TopicDeleteResponse
from topics_client.models.topic_list import TopicList
from topics_client.models.topic_put_response import TopicPutResponse
from topics_client.models.topic_state import TopicState as _TopicState
from topics_client.models.watch_session import WatchSession
from topics_client.models.whoami import Whoami as _Whoami
from topics_client.types import UNSET, Unset

from .models import (
    AckResult,
    AppendResult,
    ConsumerInfo,
    DeadLetterResult,
    ExtendResult,
    Health,
    Identity,
    Job,
    Lease,
    NackResult,
    QueueCounters,
    QueueHolder,
    RawRecord,
    Readiness,
    Record,
    RouterInfo,
    ScheduleFailure,
    ScheduleInfo,
    Tombstone,
    TopicConfig,
    TopicDeletion,
    TopicInfo,
    TopicState,
    TopicSummary,
)

ERROR_CODES: frozenset[str] = frozenset(code.value for code in ErrorCode)
"""Every ``error.code`` the spec lists (``ErrorCode``)."""


class _Prepared:
    """Stands in for a generated request model: the SDK builds request bodies as plain dicts
    (what the caller gave, encoded once by orjson), and the generated operation only asks the
    body for ``to_dict()``."""

    __slots__ = ("body",)

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def to_dict(self) -> dict[str, Any]:
        return self.body


def _body(body: dict[str, Any]) -> Any:
    return _Prepared(body)


@dataclass(frozen=True, slots=True)
class Route:
    """One request: HTTP method, URL path (relative to the base URL), query parameters, extra
    headers, and the JSON body (``None``: no body)."""

    method: str
    url: str
    params: dict[str, Any]
    headers: dict[str, str]
    json: dict[str, Any] | None


def _route(kwargs: dict[str, Any]) -> Route:
    headers = {k: v for k, v in (kwargs.get("headers") or {}).items() if k.lower() != "content-type"}
    return Route(
        kwargs["method"].upper(), kwargs["url"], dict(kwargs.get("params") or {}), headers, kwargs.get("json")
    )


def _opt(value: Any) -> Any:
    return UNSET if value is None else value


# -- routes ------------------------------------------------------------------------------------


def put_topic_route(topic: str, config: dict[str, Any]) -> Route:
    return _route(put_topic._get_kwargs(topic, body=_body(config)))


def get_topic_route(topic: str, *, touch: bool | None = None) -> Route:
    return _route(get_topic._get_kwargs(topic, touch=_opt(touch)))


def list_topics_route(prefix: str | None, page_size: int | None, cursor: str | None) -> Route:
    return _route(
        list_topics._get_kwargs(prefix=_opt(prefix), page_size=_opt(page_size), cursor=_opt(cursor))
    )


def delete_topic_route(topic: str, *, if_empty: bool) -> Route:
    return _route(delete_topic._get_kwargs(topic, if_empty=if_empty or UNSET))


def append_route(topic: str, body: dict[str, Any]) -> Route:
    return _route(append_records._get_kwargs(topic, body=_body(body)))


def diff_route(topic: str, body: dict[str, Any]) -> Route:
    return _route(diff_topic._get_kwargs(topic, body=_body(body)))


def delete_records_route(topic: str, body: dict[str, Any]) -> Route:
    return _route(delete_records._get_kwargs(topic, body=_body(body)))


def claim_route(queue: str, body: dict[str, Any]) -> Route:
    return _route(claim_jobs._get_kwargs(queue, body=_body(body)))


def ack_route(queue: str, body: dict[str, Any]) -> Route:
    return _route(ack_jobs._get_kwargs(queue, body=_body(body)))


def nack_route(queue: str, body: dict[str, Any]) -> Route:
    return _route(nack_jobs._get_kwargs(queue, body=_body(body)))


def dead_letter_route(queue: str, body: dict[str, Any]) -> Route:
    return _route(dead_letter_jobs._get_kwargs(queue, body=_body(body)))


def extend_route(queue: str, body: dict[str, Any]) -> Route:
    return _route(extend_leases._get_kwargs(queue, body=_body(body)))


def put_router_route(router: str, body: dict[str, Any]) -> Route:
    return _route(put_router._get_kwargs(router, body=_body(body)))


def get_router_route(router: str) -> Route:
    return _route(get_router._get_kwargs(router))


def list_routers_route(
    prefix: str | None, source: str | None, dest: str | None, page_size: int | None, cursor: str | None
) -> Route:
    return _route(
        list_routers._get_kwargs(
            prefix=_opt(prefix),
            source=_opt(source),
            dest=_opt(dest),
            page_size=_opt(page_size),
            cursor=_opt(cursor),
        )
    )


def put_schedule_route(schedule: str, body: dict[str, Any]) -> Route:
    return _route(put_schedule._get_kwargs(schedule, body=_body(body)))


def get_schedule_route(schedule: str) -> Route:
    return _route(get_schedule._get_kwargs(schedule))


def list_schedules_route(
    prefix: str | None, topic: str | None, page_size: int | None, cursor: str | None
) -> Route:
    return _route(
        list_schedules._get_kwargs(
            prefix=_opt(prefix), topic=_opt(topic), page_size=_opt(page_size), cursor=_opt(cursor)
        )
    )


def delete_schedule_route(schedule: str) -> Route:
    return _route(delete_schedule._get_kwargs(schedule))


def put_consumer_route(topic: str, consumer: str, body: dict[str, Any]) -> Route:
    return _route(put_consumer._get_kwargs(topic, consumer, body=_body(body)))


def get_consumer_route(topic: str, consumer: str) -> Route:
    return _route(get_consumer._get_kwargs(topic, consumer))


def list_consumers_route(topic: str, prefix: str | None, page_size: int | None, cursor: str | None) -> Route:
    return _route(
        list_consumers._get_kwargs(topic, prefix=_opt(prefix), page_size=_opt(page_size), cursor=_opt(cursor))
    )


def commit_consumer_route(topic: str, consumer: str, body: dict[str, Any]) -> Route:
    return _route(commit_consumer._get_kwargs(topic, consumer, body=_body(body)))


def delete_consumer_route(topic: str, consumer: str) -> Route:
    return _route(delete_consumer._get_kwargs(topic, consumer))


def list_leases_route(queue: str, node: str | None, page_size: int | None, cursor: str | None) -> Route:
    return _route(
        list_leases._get_kwargs(queue, node=_opt(node), page_size=_opt(page_size), cursor=_opt(cursor))
    )


def delete_router_route(router: str) -> Route:
    return _route(delete_router._get_kwargs(router))


def create_watch_route(body: dict[str, Any]) -> Route:
    return _route(create_watch._get_kwargs(body=_body(body)))


def work_stream_path(queue: str) -> str:
    """``GET /v0/topics/{queue}/work`` (push), the queue name percent-encoded. Written here by
    hand: streaming operations are not generated.

    >>> work_stream_path("render:tenant/42")
    '/v0/topics/render%3Atenant%2F42/work'
    """
    return f"/v0/topics/{quote(queue, safe='')}/work"


def health_route() -> Route:
    return _route(_health._get_kwargs())


def ready_route() -> Route:
    return _route(_ready._get_kwargs())


def whoami_route() -> Route:
    return _route(_whoami._get_kwargs())


# -- control-plane answers, through the generated models --------------------------------------


T = TypeVar("T")


def _or(value: T | Unset, default: T) -> T:
    """An optional field of an answer (an extension a server may not send), or ``default``."""
    return default if isinstance(value, Unset) else value


def _config(c: ResolvedTopicConfig) -> TopicConfig:
    return TopicConfig(
        type=str(c.type_),
        ttl_ms=c.ttl_ms,
        cap_records=c.cap_records,
        cap_bytes=c.cap_bytes,
        discard=str(c.discard),
        durable=c.durable,
        durability=str(c.durability),
        priority=c.priority,
        auto_priority=c.auto_priority,
        auto_create=c.auto_create,
        idempotency_window_ms=c.idempotency_window_ms,
        dedupe_node=c.dedupe_node,
        lease_ms=c.lease_ms,
        claim_jitter_ms=c.claim_jitter_ms,
        max_deliveries=c.max_deliveries,
        dead_letter=c.dead_letter,
        leases_durable=c.leases_durable,
        max_in_flight=_or(c.max_in_flight, 0),
    )


def topic_info(body: dict[str, Any]) -> TopicInfo:
    m = TopicPutResponse.from_dict(body)
    return TopicInfo(topic=m.topic, created=m.created, config=_config(m.config))


def topic_state(body: dict[str, Any]) -> TopicState:
    m = _TopicState.from_dict(body)
    queue = None
    if not isinstance(m.queue, Unset):
        q = m.queue
        queue = QueueCounters(
            q.ready,
            q.in_flight,
            q.dead_lettered,
            _or(q.delayed, 0),
            _or(q.oldest_ready_age_ms, 0),
            [QueueHolder(h.node, h.in_flight) for h in _or(q.holders, [])],
            _or(q.holders_truncated, False),
        )
    return TopicState(
        topic=m.topic,
        type=str(m.type_),
        head_seq=m.head_seq,
        earliest_seq=m.earliest_seq,
        next_seq=m.next_seq,
        count=m.count,
        bytes=m.bytes_,
        config=_config(m.config),
        effective_priority=m.effective_priority,
        last_write_ts=m.last_write_ts,
        last_read_ts=m.last_read_ts,
        queue=queue,
    )


def topic_page(body: dict[str, Any]) -> tuple[list[TopicSummary], str | None]:
    """One page of ``GET /v0/topics`` and the cursor of the next (``None`` on the last)."""
    m = TopicList.from_dict(body)
    items = [
        TopicSummary(
            topic=t.topic,
            type=str(t.type_),
            head_seq=t.head_seq,
            earliest_seq=t.earliest_seq,
            count=t.count,
            bytes=t.bytes_,
            durable=t.durable,
            durability=str(t.durability),
            effective_priority=t.effective_priority,
        )
        for t in m.topics
    ]
    return items, None if isinstance(m.next_cursor, Unset) else m.next_cursor


def topic_deletion(body: dict[str, Any]) -> TopicDeletion:
    m = TopicDeleteResponse.from_dict(body)
    schedules = [] if isinstance(m.schedules_removed, Unset) else list(m.schedules_removed)
    return TopicDeletion(m.topic, m.deleted, list(m.routers_removed), schedules)


def ack_result(body: dict[str, Any]) -> AckResult:
    m = AckResponse.from_dict(body)
    return AckResult(m.topic, m.acked, list(m.skipped), m.ready, m.in_flight)


def dead_letter_result(body: dict[str, Any]) -> DeadLetterResult:
    m = DeadLetterResponse.from_dict(body)
    return DeadLetterResult(m.topic, list(m.moved), list(m.skipped), m.ready, m.in_flight)


def nack_result(body: dict[str, Any]) -> NackResult:
    m = NackResponse.from_dict(body)
    return NackResult(m.topic, m.nacked, list(m.skipped), m.ready, m.in_flight)


def extend_result(body: dict[str, Any]) -> ExtendResult:
    m = ExtendResponse.from_dict(body)
    deadlines = {int(seq): int(deadline) for seq, deadline in m.deadlines.additional_properties.items()}
    return ExtendResult(m.topic, m.extended, list(m.skipped), deadlines)


def router_put(body: dict[str, Any]) -> RouterInfo:
    m = RouterPutResponse.from_dict(body)
    return RouterInfo(
        router=m.router,
        source=m.source,
        dest=m.dest,
        guarantee=str(m.guarantee),
        preserve_node=m.preserve_node,
        preserve_tag=m.preserve_tag,
        filter=m.filter_,
        allow_cycle=m.allow_cycle,
        created=m.created,
    )


def router_state(body: dict[str, Any]) -> RouterInfo:
    m = RouterState.from_dict(body)
    return RouterInfo(
        router=m.router,
        source=m.source,
        dest=m.dest,
        guarantee=str(m.guarantee),
        preserve_node=m.preserve_node,
        preserve_tag=m.preserve_tag,
        filter=m.filter_,
        allow_cycle=m.allow_cycle,
        forwarded_total=m.forwarded_total,
        cursor=m.cursor,
        lag=m.lag,
    )


def router_page(body: dict[str, Any]) -> tuple[list[RouterInfo], str | None]:
    m = RouterList.from_dict(body)
    items = [
        RouterInfo(
            router=r.router,
            source=r.source,
            dest=r.dest,
            guarantee=str(r.guarantee),
            forwarded_total=r.forwarded_total,
        )
        for r in m.routers
    ]
    return items, None if isinstance(m.next_cursor, Unset) else m.next_cursor


def _opt_value(value: Any) -> Any:
    return None if isinstance(value, Unset) else value


def _schedule(m: SchedulePutResponse | ScheduleState) -> ScheduleInfo:
    error = m.last_error
    return ScheduleInfo(
        schedule=m.schedule,
        topic=m.topic,
        missed=str(m.missed),
        next_run_ms=m.next_run_ms,
        last_run_ms=m.last_run_ms,
        runs_total=m.runs_total,
        cron=_opt_value(m.cron),
        every_ms=_opt_value(m.every_ms),
        records=[r.to_dict() for r in m.records],
        node=_opt_value(m.node),
        last_error=ScheduleFailure(str(error.code), error.message, error.at_ms)
        if isinstance(error, _ScheduleFailure)
        else None,
    )


def schedule_put(body: dict[str, Any]) -> ScheduleInfo:
    m = SchedulePutResponse.from_dict(body)
    info = _schedule(m)
    info.created = m.created
    return info


def schedule_state(body: dict[str, Any]) -> ScheduleInfo:
    return _schedule(ScheduleState.from_dict(body))


def schedule_page(body: dict[str, Any]) -> tuple[list[ScheduleInfo], str | None]:
    m = ScheduleList.from_dict(body)
    items = [
        ScheduleInfo(
            schedule=s.schedule,
            topic=s.topic,
            missed=str(s.missed),
            next_run_ms=s.next_run_ms,
            last_run_ms=s.last_run_ms,
            runs_total=s.runs_total,
            cron=_opt_value(s.cron),
            every_ms=_opt_value(s.every_ms),
        )
        for s in m.schedules
    ]
    return items, None if isinstance(m.next_cursor, Unset) else m.next_cursor


def schedule_deleted(body: dict[str, Any]) -> bool:
    return ScheduleDeleteResponse.from_dict(body).deleted


def _consumer(m: _Consumer | ConsumerPutResponse | ConsumerState) -> ConsumerInfo:
    return ConsumerInfo(m.consumer, m.topic, m.cursor, m.head_seq, m.lag, m.committed_at_ms)


def consumer_put(body: dict[str, Any]) -> ConsumerInfo:
    m = ConsumerPutResponse.from_dict(body)
    info = _consumer(m)
    info.created = m.created
    return info


def consumer_state(body: dict[str, Any]) -> ConsumerInfo:
    return _consumer(ConsumerState.from_dict(body))


def consumer_page(body: dict[str, Any]) -> tuple[list[ConsumerInfo], str | None]:
    m = ConsumerList.from_dict(body)
    return [_consumer(c) for c in m.consumers], None if isinstance(m.next_cursor, Unset) else m.next_cursor


def consumer_deleted(body: dict[str, Any]) -> bool:
    return ConsumerDeleteResponse.from_dict(body).deleted


def lease_page(body: dict[str, Any]) -> tuple[list[Lease], str | None]:
    m = LeaseList.from_dict(body)
    items = [Lease(x.seq, x.node, x.lease_id, x.deadline, x.deliveries) for x in m.leases]
    return items, None if isinstance(m.next_cursor, Unset) else m.next_cursor


def router_deleted(body: dict[str, Any]) -> bool:
    return RouterDeleteResponse.from_dict(body).deleted


def watch_session(body: dict[str, Any]) -> tuple[str, str, dict[str, int]]:
    """``(wid, stream_url, {topic: from_seq})`` of a created watch session."""
    m = WatchSession.from_dict(body)
    positions = {topic: pos.from_seq for topic, pos in m.topics.additional_properties.items()}
    return m.wid, m.stream_url, positions


def health(body: dict[str, Any]) -> Health:
    m = _Health.from_dict(body)
    return Health(m.status, m.version, m.uptime_ms)


def readiness(body: dict[str, Any]) -> Readiness:
    m = _Ready.from_dict(body)
    return Readiness(m.status, m.wal_replay_complete, m.topics)


def identity(body: dict[str, Any]) -> Identity:
    m = _Whoami.from_dict(body)
    return Identity(m.auth, m.key_id, m.key, list(m.scopes), list(m.prefixes))


# -- record-bearing answers, straight from the JSON (the hot path) ----------------------------


def append_result(body: dict[str, Any]) -> AppendResult:
    """An ``AppendResponse``; ``seqs`` is rebuilt from ``first_seq..last_seq`` when the answer
    leaves it out (``return_seqs=false``): a write's seqs are contiguous."""
    first, last = body["first_seq"], body["last_seq"]
    seqs = body.get("seqs")
    return AppendResult(
        topic=body["topic"],
        seqs=seqs if seqs is not None else list(range(first, last + 1)),
        first_seq=first,
        last_seq=last,
        head_seq=body["head_seq"],
        count=body["count"],
        created=body["created"],
        deduped=body["deduped"],
    )


class DiffPage(msgspec.Struct):
    """The fields of a ``DiffResponse`` a reader needs (the rest are ignored)."""

    records: list[Record]
    next_from_seq: int
    caught_up: bool
    tombstone: dict[str, Any] | None = None
    from_seq: int = 0
    """Where the read started (the cursor a ``from_ts`` resolved to)."""


class RecordFrame(msgspec.Struct):
    """A watch ``event: record`` frame (decoded once, by msgspec, topic and records alike)."""

    topic: str
    records: list[Record]
    to_seq: int | None = None
    head_seq: int | None = None


class RawDiffPage(msgspec.Struct):
    """:class:`DiffPage` with :class:`RawRecord` records (``data``/``meta`` left as JSON text)."""

    records: list[RawRecord]
    next_from_seq: int
    caught_up: bool
    tombstone: dict[str, Any] | None = None
    from_seq: int = 0
    """Where the read started (the cursor a ``from_ts`` resolved to)."""


_diff_page = msgspec.json.Decoder(DiffPage)
_raw_diff_page = msgspec.json.Decoder(RawDiffPage)
_record_frame = msgspec.json.Decoder(RecordFrame)


def diff_page(content: bytes) -> DiffPage:
    """A diff answer, decoded by msgspec straight into :class:`Record` structs."""
    return _diff_page.decode(content)


def raw_diff_page(content: bytes) -> RawDiffPage:
    """A diff answer whose records keep ``data``/``meta`` as raw JSON text."""
    return _raw_diff_page.decode(content)


def record_frame(data: str | bytes) -> RecordFrame:
    """The records of a watch frame."""
    return _record_frame.decode(data)


def tombstone(topic: str, raw: dict[str, Any]) -> Tombstone:
    return Tombstone(
        topic=topic,
        gap_from=raw["gap_from"],
        gap_to=raw["gap_to"],
        reason=str(raw.get("reason", "")),
        missed_estimate=raw.get("missed_estimate"),
        earliest_seq=raw.get("earliest_seq"),
        head_seq=raw.get("head_seq"),
    )


def jobs(queue: str, raw: list[dict[str, Any]]) -> list[Job]:
    """The ``claimed`` jobs of a claim answer, or one ``/work`` job frame in a list."""
    return [
        Job(
            topic=queue,
            seq=j["$seq"],
            data=j.get("data"),
            lease_id=j["lease_id"],
            deadline=j["deadline"],
            deliveries=j["deliveries"],
            ts=j["$ts"],
            tag=j.get("$tag"),
            node=j.get("$node"),
            meta=j.get("meta"),
            delay_ms=j.get("$delay_ms", 0),
        )
        for j in raw
    ]
