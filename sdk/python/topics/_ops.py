"""The SDK's operations, without I/O: each builds the :class:`~topics._transport.Call` (or the
sequence of calls) that :class:`topics.Client` and :class:`topics.AsyncClient` send.

Single-request operations return a ``Call``. Multi-request ones are generators (*steps*): they
yield a ``Call`` and receive its parsed answer, or yield :class:`Items` to hand to the caller,
and return their result. Both clients drive the same steps (one with ``httpx.Client``, the other
with ``httpx.AsyncClient``), so paging, chunking and gap handling are written once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import orjson

from . import _generated as g
from ._generated import Route
from ._json import dumps as json_bytes
from ._times import epoch_ms
from ._transport import Call
from .errors import (
    RECORD_FIELD,
    BatchTooLarge,
    ConsumerNotFound,
    DataLoss,
    Forbidden,
    NotAQueue,
    PayloadTooLarge,
    TopicsError,
)
from .models import (
    AckResult,
    AppendResult,
    ConsumerInfo,
    DeadLetterResult,
    ExtendResult,
    Health,
    Identity,
    Job,
    NackResult,
    QueueCounters,
    RawRecord,
    Readiness,
    Record,
    RouterInfo,
    ScheduleInfo,
    Tombstone,
    TopicDeletion,
    TopicInfo,
    TopicState,
)

MAX_SEQS_PER_CALL = 1000
"""``TOPICS_MAX_CLAIM``'s default: the most seqs one ack/nack/extend may carry (a resource cap)."""

CHUNK_RECORDS = 10_000
"""``append_many`` puts at most this many records in one request (``TOPICS_MAX_BATCH_RECORDS``'
default); a server configured lower answers ``batch_too_large`` and the chunk is halved."""

CHUNK_BYTES = 8 << 20
"""…and at most this many body bytes (the server's default body limit is 64 MiB); a lower limit
answers ``payload_too_large`` and the chunk is halved."""

READ_PAGE = 1000
"""Records per ``diff`` page (the server's ``TOPICS_MAX_LIMIT``)."""

COMMIT_EVERY = 100
"""``consume``'s default: records handed out between two commits of the consumer's cursor (a
crash re-delivers at most about this many; each commit is one durable write on the server)."""

POLL_MS = 5000
"""How long a following ``consume`` long-polls for new records per request (at most half the
client's ``timeout``)."""

OnGap = Literal["raise", "skip"]


class Items(list[Any]):
    """What a step hands to the caller (a page of records, of topics…)."""


Steps = Generator["Call[Any] | Items", Any, Any]


def new_key() -> str:
    """A fresh idempotency key (makes a plain append safe to retry)."""
    return uuid.uuid4().hex


def _drop_none(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


_Page = tuple[list[Any], str | None]


def _paged(route: Callable[[str | None], Route], parse: Callable[[Any], _Page]) -> Steps:
    """Every item of a cursor-paged list (``route(cursor)``; ``parse`` gives a page's items and
    the next cursor, ``None`` on the last page)."""
    cursor: str | None = None
    while True:
        items, cursor = yield Call(route(cursor), parse)
        yield Items(items)
        if cursor is None:
            return None


# -- topics ------------------------------------------------------------------------------------


def create_topic(name: str, config: Mapping[str, Any]) -> Call[TopicInfo]:
    return Call(g.put_topic_route(name, dict(config)), g.topic_info)


def topic(name: str, touch: bool | None) -> Call[TopicState]:
    return Call(g.get_topic_route(name, touch=touch), g.topic_state)


def list_topics(prefix: str | None, page_size: int | None) -> Steps:
    return _paged(lambda cursor: g.list_topics_route(prefix, page_size, cursor), g.topic_page)


def delete_topic(name: str, if_empty: bool) -> Call[TopicDeletion]:
    return Call(g.delete_topic_route(name, if_empty=if_empty), g.topic_deletion)


# -- writes ------------------------------------------------------------------------------------


def record_body(
    data: Any,
    tag: str | None = None,
    node: str | None = None,
    meta: Mapping[str, Any] | None = None,
    delay_ms: int | None = None,
) -> dict[str, Any]:
    """One record as the write body wants it (absent fields left out)."""
    body: dict[str, Any] = {"data": data}
    if tag is not None:
        body["tag"] = tag
    if node is not None:
        body["node"] = node
    if meta is not None:
        body["meta"] = meta if type(meta) is dict else dict(meta)  # orjson encodes dicts only
    if delay_ms is not None:
        body["delay_ms"] = delay_ms
    return body


def append(
    topic: str,
    records: list[dict[str, Any]],
    *,
    idempotency_key: str | None,
    node: str | None = None,
    create: bool | None = None,
    config: Mapping[str, Any] | None = None,
) -> Call[AppendResult]:
    """One write. Without a caller's key a fresh one is sent, so a retry never appends twice."""
    body = {"records": records, **_write_fields(node, idempotency_key or new_key(), create, config)}
    return Call(g.append_route(topic, body), g.append_result)


def _write_fields(
    node: str | None,
    key: str,
    create: bool | None,
    config: Mapping[str, Any] | None,
    delay_ms: int | None = None,
) -> dict[str, Any]:
    """A write body's fields besides ``records`` (absent ones left out)."""
    return _drop_none(
        node=node,
        idempotency_key=key,
        create=create,
        config=dict(config) if config is not None else None,
        delay_ms=delay_ms,
    )


def _checked(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``records`` as a list of dicts (orjson encodes dicts only: another mapping is copied into
    one; the caller's list is never changed). A plain dict is passed through unchecked (the hot
    path; the server names a missing ``data``)."""
    out = records if isinstance(records, list) else list(records)
    copied = out is not records
    for i, record in enumerate(out):
        if type(record) is dict:
            continue
        if not (isinstance(record, Mapping) and "data" in record):
            raise TypeError(
                f"append_many: record {i} must be a mapping with a 'data' key, got {record!r:.80}"
            )
        if not copied:
            out, copied = list(out), True
        out[i] = dict(record)
    if not out:
        raise ValueError("append_many needs at least one record")
    return out


def _chunk_call(
    topic: str,
    encoded_records: bytes,
    key: str,
    node: str | None,
    create: bool | None,
    config: Mapping[str, Any] | None,
    delay_ms: int | None = None,
) -> Call[AppendResult]:
    """One write of already-encoded records (a JSON array), spliced into the body."""
    rest = _write_fields(node, key, create, config, delay_ms)
    call = Call(g.append_route(topic, rest), g.append_result)
    call.content = b'{"records":' + encoded_records + b"," + orjson.dumps(rest)[1:]
    return call


def append_many(
    topic: str,
    records: Iterable[Mapping[str, Any]],
    *,
    node: str | None,
    idempotency_key: str | None,
    create: bool | None,
    config: Mapping[str, Any] | None,
    chunk_records: int = CHUNK_RECORDS,
    chunk_bytes: int = CHUNK_BYTES,
    delay_ms: int | None = None,
) -> Steps:
    """Writes ``records`` in chunks of at most ``chunk_records`` records and ``chunk_bytes``
    encoded bytes (a chunk encoded bigger is halved before it is sent); chunk ``n`` carries the
    key ``<key>.<n>`` (``<key>`` the caller's, or a fresh one), so a retried chunk — or a re-run
    of the whole call with the same ``idempotency_key`` and records — never appends twice. A
    chunk the server finds too big (its limits were configured lower) is halved and sent again.
    Each chunk is encoded once, by one ``orjson.dumps`` of its records. ``delay_ms``: every
    chunk's batch default (a record's own ``delay_ms`` wins; queue topics only)."""
    recs = _checked(records)
    base_key = idempotency_key or new_key()
    pending = [
        (i, min(i + chunk_records, len(recs)), f"{base_key}.{n}")
        for n, i in enumerate(range(0, len(recs), chunk_records))
    ]
    results: list[AppendResult] = []
    while pending:
        start, end, key = pending.pop(0)
        encoded = json_bytes(recs[start:end], items_of="records", first=start)
        too_big = len(encoded) > chunk_bytes and end - start > 1
        if not too_big:
            try:
                results.append((yield _chunk_call(topic, encoded, key, node, create, config, delay_ms)))
                continue
            except (BatchTooLarge, PayloadTooLarge):
                if end - start == 1:
                    raise
            except TopicsError as err:
                _shift_record_index(err, start)
                raise
        mid = (start + end) // 2
        pending[:0] = [(start, mid, f"{key}a"), (mid, end, f"{key}b")]
    return merge_appends(results)


def _shift_record_index(err: TopicsError, by: int) -> None:
    """A chunk's error names a record by its index in the chunk (``detail.index``, or
    ``detail.field`` ``records[i]…``): make it the index in the caller's list."""
    detail = err.detail
    if isinstance(detail.get("index"), int):
        detail["index"] += by
    field = detail.get("field")
    if isinstance(field, str) and (m := RECORD_FIELD.match(field)):
        detail["field"] = f"records[{int(m[1]) + by}]{field[m.end() :]}"


def merge_appends(results: Sequence[AppendResult]) -> AppendResult:
    seqs = [s for r in results for s in r.seqs]
    return AppendResult(
        topic=results[0].topic,
        seqs=seqs,
        first_seq=results[0].first_seq,
        last_seq=results[-1].last_seq,
        head_seq=max(r.head_seq for r in results),
        count=sum(r.count for r in results),
        created=any(r.created for r in results),
        deduped=all(r.deduped for r in results),
    )


# -- reads -------------------------------------------------------------------------------------


@dataclass(slots=True)
class ReadState:
    """Where a ``read`` is: ``position`` is the cursor (the last seq examined — pass it as
    ``from_seq`` to resume), ``gaps`` the tombstones met (with ``on_gap="skip"``),
    ``trimmed`` the tombstone a read from the start (cursor 0) met on its first page: the
    records the topic no longer kept when the read began — not a loss to this reader, so never
    raised nor counted in ``gaps`` (kcat ``-o beginning``, ``XRANGE - +``) — unless
    ``committed``: the start is a cursor the reader is owed every record after (a named
    consumer's), so cursor 0 is no different from any other."""

    topic: str
    position: int
    gaps: list[Tombstone] = field(default_factory=list)
    trimmed: Tombstone | None = None
    committed: bool = False

    @property
    def missed(self) -> int:
        """Records lost in the gaps met so far."""
        return sum(_lost(t) for t in self.gaps)


class _ReadPage(Items):
    """A page of a read. Handing its records out moves the read's ``position`` with them, one
    record at a time, then to the page's end — so a reader that stops mid-page resumes right
    after the last record it was given (not after records it never saw)."""

    def __init__(self, records: Sequence[Record | RawRecord], state: ReadState, end: int) -> None:
        super().__init__(records)
        self.state, self.end = state, end

    def __iter__(self) -> Iterator[Any]:
        state = self.state
        for record in list.__iter__(self):
            state.position = record.seq
            yield record
        state.position = self.end


def _lost(tomb: Tombstone) -> int:
    """Records lost in one gap: the server's estimate, else the range's size."""
    return tomb.missed_estimate if tomb.missed_estimate is not None else tomb.gap_to - tomb.gap_from + 1


def reading(
    topic: str,
    from_seq: int,
    from_ts: int | datetime | None,
    to_seq: int | None,
    node: str | Sequence[str] | None,
    include_meta: bool,
    include_tags: bool,
    on_gap: OnGap,
    page_size: int,
    *,
    raw: bool,
) -> tuple[ReadState, Steps]:
    """A read's state and its steps (:func:`read`), from a client method's arguments."""
    if from_ts is not None and from_seq:
        raise ValueError("read: from_ts replaces from_seq; give one of them")
    state = ReadState(topic, from_seq)
    steps = read(
        state,
        from_ts=None if from_ts is None else epoch_ms(from_ts),
        to_seq=to_seq,
        node=node,
        include_meta=include_meta,
        include_tags=include_tags,
        on_gap=on_gap,
        page_size=page_size,
        raw=raw,
    )
    return state, steps


def read(
    state: ReadState,
    *,
    from_ts: int | None = None,
    to_seq: int | None,
    node: str | Sequence[str] | None,
    include_meta: bool,
    include_tags: bool,
    on_gap: OnGap,
    page_size: int,
    raw: bool = False,
    wait_ms: int | None = None,
    before_wait: Callable[[], Call[Any] | None] | None = None,
) -> Steps:
    """Pages ``diff`` from ``state.position`` until caught up (or past ``to_seq``), following
    ``next_from_seq`` — never stopping at an empty page (a page may hold no records yet advance)
    and never assuming the cursor only grows (a ``recreated`` tombstone moves it back). Yields
    :class:`Record` objects, or :class:`RawRecord` objects with ``raw``. With ``from_ts`` (ms
    since the epoch) the first page seeks by time instead, and ``state.position`` becomes the
    cursor the server resolved it to. ``wait_ms`` (a follower): never stops — each caught-up read
    long-polls that long for new records, and ``before_wait`` (if given) may make one call first
    (a consumer's commit of what it handled: nothing is held uncommitted while it waits). A
    tombstone on the first page of a read from cursor 0 (``from_ts`` below the earliest record
    included) goes to ``state.trimmed``, not ``gaps``: starting at the earliest retained record
    loses nothing; any later tombstone is a loss."""
    if on_gap not in ("raise", "skip"):
        raise ValueError("on_gap must be 'raise' or 'skip'")
    route_node = list(node) if isinstance(node, list | tuple) else node
    parse = g.raw_diff_page if raw else g.diff_page
    first_page = True
    caught_up = False
    while to_seq is None or state.position < to_seq:
        if caught_up and before_wait is not None and (call := before_wait()) is not None:
            yield call
        body = _drop_none(
            from_seq=state.position if from_ts is None else None,
            from_ts=from_ts,
            limit=page_size if to_seq is None else max(1, min(page_size, to_seq - state.position)),
            node=route_node,
            include_meta=include_meta,
            include_tags=include_tags,
            wait_ms=wait_ms,
        )
        page: g.DiffPage | g.RawDiffPage = yield Call(g.diff_route(state.topic, body), parse, raw=True)
        if from_ts is not None:  # the seek is done: on by seq from where it landed
            state.position, from_ts = page.from_seq, None
        from_start, first_page = first_page and state.position == 0 and not state.committed, False
        if page.tombstone:
            tomb = g.tombstone(state.topic, page.tombstone)
            if from_start and tomb.reason != "recreated":
                state.trimmed = tomb
            elif on_gap == "raise":
                raise DataLoss(state.topic, tomb.gap_from, tomb.gap_to, tomb.reason, _lost(tomb))
            else:
                state.gaps.append(tomb)
        recs: Sequence[Record | RawRecord] = page.records
        if to_seq is not None and recs and recs[-1].seq > to_seq:
            recs = [r for r in recs if r.seq <= to_seq]
        end = page.next_from_seq if to_seq is None else min(page.next_from_seq, to_seq)
        if recs:
            yield _ReadPage(recs, state, end)
        state.position = end
        caught_up = page.caught_up
        if caught_up and wait_ms is None:
            return None
    return None


def cursor_at(topic: str, when: int | datetime) -> Call[int]:
    """Where a read from time ``when`` starts: a one-record diff with ``from_ts``, whose
    ``from_seq`` is the answer."""
    body = {"from_ts": epoch_ms(when), "limit": 1, "max_batch_bytes": 1, "include_meta": False}
    return Call(g.diff_route(topic, body), lambda b: int(b["from_seq"]))


def delete_records(topic: str, before_seq: int | None, tag: str | None, *, glob: bool = True) -> Call[int]:
    """``tag`` ending in ``*`` is a prefix match (``"chat-42:*"``), else an exact one;
    ``glob=False``: always exact (a record's own tag, which may end in ``*``)."""
    if before_seq is None and tag is None:
        raise ValueError("delete_records needs before_seq, tag, or both")
    body: dict[str, Any] = {}
    if before_seq is not None:
        body["before_seq"] = before_seq
    if tag is not None:
        body["match"] = ["tag", "Glob", tag] if glob and tag.endswith("*") else ["tag", "Eq", tag]
    # a tag delete without before_seq is bounded by the head at call time: repeating it could
    # remove a record written in between, so it is not repeated after a broken connection
    return Call(
        g.delete_records_route(topic, body), lambda b: int(b["deleted"]), idempotent=before_seq is not None
    )


# -- queues ------------------------------------------------------------------------------------


def claim(queue: str, node: str, max_jobs: int, lease_ms: int | None) -> Call[list[Job]]:
    body = _drop_none(node=node, max=max_jobs, lease_ms=lease_ms)
    # not idempotent: a claim repeated after its answer was lost would lease more jobs
    return Call(g.claim_route(queue, body), lambda b: g.jobs(queue, b["claimed"]), idempotent=False)


def _fenced(jobs: Iterable[Job | int]) -> list[tuple[int, str | None]]:
    out: list[tuple[int, str | None]] = []
    for job in jobs:
        if isinstance(job, Job):
            out.append((job.seq, job.lease_id))
        elif isinstance(job, int) and not isinstance(job, bool):
            out.append((job, None))
        else:
            raise TypeError(f"expected a Job or a seq (int), got {job!r:.80}")
    return out


def _lease_batches(queue: str, node: str, jobs: Iterable[Job | int], **extra: Any) -> list[dict[str, Any]]:
    """Request bodies of at most :data:`MAX_SEQS_PER_CALL` seqs; ``lease_ids`` fence a batch
    whose entries are all ``Job``s (the server wants one token per seq or none)."""
    pairs = _fenced(jobs)
    bodies = []
    for i in range(0, len(pairs), MAX_SEQS_PER_CALL):
        part = pairs[i : i + MAX_SEQS_PER_CALL]
        body: dict[str, Any] = {"node": node, "seqs": [seq for seq, _ in part], **_drop_none(**extra)}
        if all(lease is not None for _, lease in part):
            body["lease_ids"] = [lease for _, lease in part]
        bodies.append(body)
    return bodies


def _counters(queue: str) -> Call[QueueCounters]:
    """No jobs to ack/nack: no lease call, but the answer still carries the queue's counters."""

    def parse(body: Any) -> QueueCounters:
        state = g.topic_state(body)
        if state.queue is None:
            raise NotAQueue(409, "not_a_queue", f"topic {queue!r} is not a queue")
        return state.queue

    return Call(g.get_topic_route(queue, touch=False), parse)


def _settle(
    queue: str,
    node: str,
    jobs: Iterable[Job | int],
    route: Callable[[str, dict[str, Any]], Route],
    parse: Callable[[Any], Any],
    **extra: Any,
) -> Steps:
    """Sends ack or nack batches; returns their answers, the skipped seqs and the queue's last
    ``ready``/``in_flight`` counters (asked for when there was nothing to send)."""
    results = []
    for body in _lease_batches(queue, node, jobs, **extra):
        results.append((yield Call(route(queue, body), parse)))
    if results:
        ready, in_flight = results[-1].ready, results[-1].in_flight
    else:
        counters = yield _counters(queue)
        ready, in_flight = counters.ready, counters.in_flight
    return results, [s for r in results for s in r.skipped], ready, in_flight


def ack(queue: str, node: str, jobs: Iterable[Job | int]) -> Steps:
    results, skipped, ready, in_flight = yield from _settle(queue, node, jobs, g.ack_route, g.ack_result)
    return AckResult(queue, sum(r.acked for r in results), skipped, ready, in_flight)


def nack(queue: str, node: str, jobs: Iterable[Job | int], delay_ms: int) -> Steps:
    results, skipped, ready, in_flight = yield from _settle(
        queue, node, jobs, g.nack_route, g.nack_result, delay_ms=delay_ms or None
    )
    return NackResult(queue, sum(r.nacked for r in results), skipped, ready, in_flight)


def dead_letter(queue: str, node: str, jobs: Iterable[Job | int], reason: str | None) -> Steps:
    results, skipped, ready, in_flight = yield from _settle(
        queue, node, jobs, g.dead_letter_route, g.dead_letter_result, reason=reason
    )
    return DeadLetterResult(queue, [s for r in results for s in r.moved], skipped, ready, in_flight)


def extend(queue: str, node: str, jobs: Iterable[Job | int], lease_ms: int | None) -> Steps:
    """``lease_ms`` ``None``: the queue's own (one topic lookup first)."""
    if lease_ms is None:
        state: TopicState = yield topic(queue, touch=False)
        lease_ms = state.config.lease_ms
    results: list[ExtendResult] = []
    for body in _lease_batches(queue, node, jobs, lease_ms=lease_ms):
        results.append((yield Call(g.extend_route(queue, body), g.extend_result)))
    deadlines = {seq: d for r in results for seq, d in r.deadlines.items()}
    return ExtendResult(
        queue, sum(r.extended for r in results), [s for r in results for s in r.skipped], deadlines
    )


# -- routers -----------------------------------------------------------------------------------


def put_router(name: str, source: str, dest: str, options: Mapping[str, Any]) -> Call[RouterInfo]:
    return Call(g.put_router_route(name, {"source": source, "dest": dest, **options}), g.router_put)


def router(name: str) -> Call[RouterInfo]:
    return Call(g.get_router_route(name), g.router_state)


def list_routers(prefix: str | None, source: str | None, dest: str | None) -> Steps:
    return _paged(lambda cursor: g.list_routers_route(prefix, source, dest, None, cursor), g.router_page)


def leases(queue: str, node: str | None) -> Steps:
    return _paged(lambda cursor: g.list_leases_route(queue, node, None, cursor), g.lease_page)


def delete_router(name: str) -> Call[bool]:
    return Call(g.delete_router_route(name), g.router_deleted)


# -- schedules ---------------------------------------------------------------------------------


def put_schedule(
    name: str,
    topic: str,
    records: Iterable[Mapping[str, Any]],
    *,
    cron: str | None,
    every_ms: int | None,
    node: str | None,
    missed: str | None,
) -> Call[ScheduleInfo]:
    body = {
        "topic": topic,
        **_drop_none(cron=cron, every_ms=every_ms),
        "records": _checked(records),
        **_drop_none(node=node, missed=missed),
    }
    return Call(g.put_schedule_route(name, body), g.schedule_put)


def schedule(name: str) -> Call[ScheduleInfo]:
    return Call(g.get_schedule_route(name), g.schedule_state)


def list_schedules(prefix: str | None, topic: str | None) -> Steps:
    return _paged(lambda cursor: g.list_schedules_route(prefix, topic, None, cursor), g.schedule_page)


def delete_schedule(name: str) -> Call[bool]:
    return Call(g.delete_schedule_route(name), g.schedule_deleted)


# -- named consumers ---------------------------------------------------------------------------


def put_consumer(
    topic: str, name: str, from_seq: int | None, from_ts: int | datetime | None, force: bool
) -> Call[ConsumerInfo]:
    when = None if from_ts is None else epoch_ms(from_ts)
    body = _drop_none(from_seq=from_seq, from_ts=when, force=force or None)
    return Call(g.put_consumer_route(topic, name, body), g.consumer_put)


def consumer(topic: str, name: str) -> Call[ConsumerInfo]:
    return Call(g.get_consumer_route(topic, name), g.consumer_state)


def list_consumers(topic: str, prefix: str | None) -> Steps:
    return _paged(lambda cursor: g.list_consumers_route(topic, prefix, None, cursor), g.consumer_page)


def commit(topic: str, name: str, seq: int, force: bool) -> Call[ConsumerInfo]:
    body = _drop_none(seq=seq, force=force or None)
    return Call(g.commit_consumer_route(topic, name, body), g.consumer_state)


def delete_consumer(topic: str, name: str) -> Call[bool]:
    return Call(g.delete_consumer_route(topic, name), g.consumer_deleted)


def consumer_cursor(
    topic: str, name: str, create: bool, from_seq: int | None, from_ts: int | datetime | None
) -> Steps:
    """Named consumer ``name``'s committed cursor (``GET``, a ``read`` key); a missing consumer
    is created at ``from_seq``/``from_ts`` when ``create`` (``PUT``, an ``admin`` key).
    :class:`ConsumerNotFound` says how to create it when it may not be created here."""
    try:
        info: ConsumerInfo = yield consumer(topic, name)
        return info.cursor
    except ConsumerNotFound as err:
        if not create:
            raise _not_found(err, f"consume(..., create=True) or put_consumer({topic!r}, {name!r})") from err
        missing = err
    try:
        info = yield put_consumer(topic, name, from_seq, from_ts, False)
    except Forbidden as err:
        raise _not_found(missing, f"put_consumer({topic!r}, {name!r}) with an admin key") from err
    return info.cursor


def _not_found(err: ConsumerNotFound, how: str) -> ConsumerNotFound:
    """``err`` saying how to create the consumer from the SDK (or the CLI)."""
    topic, name = err.detail.get("topic", "?"), err.detail.get("consumer", "?")
    message = (
        f"{err.message}; from the SDK: {how}; from the CLI: topics consumer create {topic} {name} "
        "(creating a consumer needs an admin key)"
    )
    return ConsumerNotFound(err.status, err.code, message, err.detail)


# -- probes ------------------------------------------------------------------------------------


def health() -> Call[Health]:
    return Call(g.health_route(), g.health)


def ready() -> Call[Readiness]:
    return Call(g.ready_route(), g.readiness)


def whoami() -> Call[Identity]:
    return Call(g.whoami_route(), g.identity)


# -- redrive -----------------------------------------------------------------------------------

DEAD_LETTER_KEYS = (
    "$dead_letter_from",
    "$dead_letter_deliveries",
    "$dead_letter_src_seq",
    "$dead_letter_reason",
)
"""What the server stamps into ``meta`` when it dead-letters a job."""


def redrive_body(record: Record) -> dict[str, Any]:
    """The job as it is appended back to its queue: data, tag, node and meta, minus the
    dead-letter stamps."""
    meta = (
        {k: v for k, v in (record.meta or {}).items() if k not in DEAD_LETTER_KEYS} if record.meta else None
    )
    return record_body(record.data, record.tag, record.node, meta or None)


def redrive(
    dlq: str, to: str | None, limit: int | None, keep: Callable[[Record], bool] | None, dry_run: bool
) -> Steps:
    """Moves dead-lettered records back to their queue, oldest first: append (keyed by the DLQ
    and seq, so a re-run inside the queue's idempotency window never appends twice), then
    delete. A log can only delete a seq prefix or by tag, so a record is deleted exactly: by
    prefix while every older record has been moved, else by its tag when no older record left
    in place shares it; a record neither allows is left in place (not counted)."""
    moved = 0
    kept_tags: set[str | None] = set()
    all_moved_below = True
    state = ReadState(dlq, 0)
    reader = read(
        state,
        to_seq=None,
        node=None,
        include_meta=True,
        include_tags=True,
        on_gap="skip",
        page_size=READ_PAGE,
    )
    answer: Any = None
    while limit is None or moved < limit:
        try:
            step = reader.send(answer)
        except StopIteration:
            break
        if isinstance(step, Call):
            answer = yield step
            continue
        answer = None
        for record in step:
            if limit is not None and moved >= limit:
                break
            target = to or (record.meta or {}).get("$dead_letter_from")
            chosen = keep is None or bool(keep(record))
            exact = all_moved_below or (record.tag is not None and record.tag not in kept_tags)
            if not (chosen and isinstance(target, str) and exact):
                all_moved_below = False
                kept_tags.add(record.tag)
                continue
            moved += 1
            if dry_run:
                continue
            key = f"redrive:{dlq}:{record.seq}"
            yield append(target, [redrive_body(record)], idempotency_key=key)
            # by its exact tag: a tag ending in "*" read as a prefix would delete records left in place
            yield delete_records(dlq, record.seq + 1, None if all_moved_below else record.tag, glob=False)
    return moved
