"""The engine: the registry of topics and every topic operation of §1–§5.

Concurrency: one asyncio event loop owns all state; every operation here is synchronous and
never blocks (long-polls await :class:`Notifier` outside any mutation). Time comes only from the
injected :class:`Clock`.

Atomicity: each mutating operation validates everything first and then applies, so a failing
call changes nothing — a write that lazily creates its topic and is then rejected leaves no
topic behind.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .batch import prepare_batch
from .clock import Clock
from .config import TopicConfig, resolve_config
from .errors import InvalidRequest, TopicNotEmpty, TopicNotFound
from .journal import Durable, Journal, MemoryJournal
from .jsonvalues import to_int
from .limits import Limits
from .listing import decode_cursor, encode_cursor
from .matching import parse_match
from .names import check_topic_name
from .notifier import Notifier
from .priority import effective_priority
from .queues import Queues
from .records import PreparedRecord, Record
from .topic import ReadOptions, ReadResult, Topic

MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100


@dataclass(slots=True)
class PutResult:
    topic: str
    created: bool
    config: TopicConfig
    durable: Durable = None

    def to_wire(self) -> dict[str, Any]:
        return {"topic": self.topic, "created": self.created, "config": self.config.to_wire()}


@dataclass(slots=True)
class AppendResult:
    topic: str
    first_seq: int
    last_seq: int
    head_seq: int
    created: bool
    deduped: bool
    durable: Durable = None

    def to_wire(self, return_seqs: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"topic": self.topic, "first_seq": self.first_seq, "last_seq": self.last_seq}
        if return_seqs:
            out["seqs"] = list(range(self.first_seq, self.last_seq + 1))
        out.update(
            head_seq=self.head_seq,
            count=self.last_seq - self.first_seq + 1,
            created=self.created,
            deduped=self.deduped,
        )
        return out


@dataclass(slots=True)
class TopicDeleteResult:
    deleted: bool
    durable: Durable = None


@dataclass(slots=True)
class DeleteResult:
    """A records delete. For fsync-class topics the counters are filled in once the delete
    is durable and applied (await ``durable`` before reading them)."""

    topic: str
    deleted: int
    earliest_seq: int = 0
    head_seq: int = 0
    count: int = 0
    bytes: int = 0
    durable: Durable = None

    def refresh(self, topic: Topic) -> None:
        self.earliest_seq, self.head_seq = topic.earliest_seq, topic.head_seq
        self.count, self.bytes = topic.count, topic.bytes

    def to_wire(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "deleted": self.deleted,
            "earliest_seq": self.earliest_seq,
            "head_seq": self.head_seq,
            "count": self.count,
            "bytes": self.bytes,
        }


@dataclass(slots=True)
class DiffResult:
    topic: str
    read: ReadResult

    @property
    def caught_up(self) -> bool:
        return self.read.next_from_seq >= self.read.head_seq


class Engine:
    def __init__(self, clock: Clock, limits: Limits | None = None, journal: Journal | None = None) -> None:
        self.clock = clock
        self.limits = limits or Limits()
        self.journal: Journal = journal or MemoryJournal()
        self.notifier = Notifier()
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[int, Topic] = {}
        self._names: list[str] = []
        self._deleted_heads: dict[str, int] = {}
        self.next_topic_id = 1
        self.queues = Queues(self)

    # -- registry -----------------------------------------------------------------------------

    @property
    def topic_count(self) -> int:
        return len(self._topics)

    def _get(self, name: str) -> Topic:
        topic = self._topics.get(name)
        if topic is None:
            raise TopicNotFound(name)
        return topic

    def _new_topic(self, name: str, config: TopicConfig) -> Topic:
        topic = Topic(name, config, self.clock.now_ms(), previous_head=self._deleted_heads.get(name))
        topic.id = self.next_topic_id
        return topic

    def register(self, topic: Topic) -> None:
        """Add a topic under its name and id (live create or replayed create)."""
        self._topics[topic.name] = topic
        self._by_id[topic.id] = topic
        self.next_topic_id = max(self.next_topic_id, topic.id + 1)
        bisect.insort(self._names, topic.name)

    def unregister(self, topic: Topic) -> None:
        """Remove a topic (live or replayed delete); remembers its head for ``recreated``."""
        del self._topics[topic.name]
        del self._by_id[topic.id]
        del self._names[bisect.bisect_left(self._names, topic.name)]
        self._deleted_heads[topic.name] = topic.reserved_seq
        self.notifier.notify(topic.name)

    def deleted_heads(self) -> dict[str, int]:
        """Head seqs of deleted topics by name (for ``recreated`` tombstones; snapshotted)."""
        return dict(self._deleted_heads)

    def restore_deleted_heads(self, heads: dict[str, int]) -> None:
        self._deleted_heads.update(heads)

    def topic(self, name: str) -> Topic | None:
        return self._topics.get(name)

    def topic_by_id(self, topic_id: int) -> Topic | None:
        return self._by_id.get(topic_id)

    def topics(self) -> list[Topic]:
        return [self._topics[name] for name in self._names]

    # -- §1 topics ----------------------------------------------------------------------------

    def put_topic(self, name: str, fields: dict[str, Any]) -> PutResult:
        """Create (201) or update (200) a topic; fields merge over the current config."""
        check_topic_name(name)
        topic = self._topics.get(name)
        config = resolve_config(name, fields, topic.config if topic else None)
        if topic is None:
            self.journal.check_writable()
            topic = self._new_topic(name, config)
            self.register(topic)
            return PutResult(name, True, config, self.journal.topic_put(topic, self.clock.now_ms()))
        if config == topic.config:
            return PutResult(name, False, config)
        self.journal.check_writable()
        self.apply_config(topic, config)
        return PutResult(name, False, config, self.journal.topic_put(topic, self.clock.now_ms()))

    def apply_config(self, topic: Topic, config: TopicConfig, at_ms: int | None = None) -> None:
        """Switch ``topic`` to ``config`` as of ``at_ms`` (now by default; replay passes the
        time the change was made, so the old TTL's expiries replay exactly)."""
        now = self.clock.now_ms() if at_ms is None else at_ms
        topic.expire(now)  # what the old TTL already expired stays expired
        topic.config = config
        topic.enforce_retention(now)

    def topic_state(self, name: str, touch: bool = True) -> dict[str, Any]:
        topic = self._get(name)
        now = self.clock.now_ms()
        topic.expire(now)
        if touch:
            topic.last_read_ts = now
        return {
            "topic": name,
            "type": topic.config.type.value,
            "head_seq": topic.head_seq,
            "earliest_seq": topic.earliest_seq,
            "next_seq": topic.next_seq,
            "count": topic.count,
            "bytes": topic.bytes,
            "config": topic.config.to_wire(),
            "effective_priority": effective_priority(topic.config, topic.last_read_ts, now),
            "last_write_ts": topic.last_write_ts,
            "last_read_ts": topic.last_read_ts,
            **self._queue_counters(topic),
        }

    def _queue_counters(self, topic: Topic) -> dict[str, Any]:
        if topic.queue is None:
            return {}
        ready, in_flight = self.queues.counters(topic)
        return {"queue": {"ready": ready, "in_flight": in_flight, "dead_lettered": topic.queue.dead_lettered}}

    def list_topics(
        self,
        prefix: str = "",
        page_size: int = DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        touch: bool = False,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One page of topics in name order; the cursor is returned only if more remain."""
        page_size = max(1, min(MAX_PAGE_SIZE, page_size))
        names = self._names
        start = bisect.bisect_left(names, prefix)
        if cursor is not None:
            start = max(start, bisect.bisect_right(names, decode_cursor(cursor)))
        now = self.clock.now_ms()
        page: list[dict[str, Any]] = []
        i = start
        while i < len(names) and len(page) < page_size and names[i].startswith(prefix):
            page.append(self._summary(self._topics[names[i]], now, touch))
            i += 1
        more = i < len(names) and names[i].startswith(prefix)
        return page, encode_cursor(page[-1]["topic"]) if more and page else None

    def _summary(self, topic: Topic, now: int, touch: bool) -> dict[str, Any]:
        topic.expire(now)
        if touch:
            topic.last_read_ts = now
        return {
            "topic": topic.name,
            "type": topic.config.type.value,
            "head_seq": topic.head_seq,
            "earliest_seq": topic.earliest_seq,
            "count": topic.count,
            "bytes": topic.bytes,
            "durable": topic.config.durable,
            "durability": topic.config.durability.value,
            "effective_priority": effective_priority(topic.config, topic.last_read_ts, now),
        }

    def delete_topic(self, name: str, if_empty: bool = False) -> TopicDeleteResult:
        """Remove the topic and everything it owns; ``deleted`` is False if it did not exist."""
        check_topic_name(name)
        topic = self._topics.get(name)
        if topic is None:
            return TopicDeleteResult(False)
        if if_empty:
            topic.expire(self.clock.now_ms())
            if topic.count:
                raise TopicNotEmpty(
                    f'topic "{name}" still holds {topic.count} records; delete without '
                    "if_empty=true to drop them",
                    {"topic": name, "count": topic.count},
                )
        self.journal.check_writable()
        self.unregister(topic)
        return TopicDeleteResult(True, self.journal.topic_delete(topic))

    # -- §2 writes ----------------------------------------------------------------------------

    def append(
        self,
        name: str,
        records: Any,
        *,
        node: Any = None,
        idempotency_key: str | None = None,
        create: bool | None = None,
        config: dict[str, Any] | None = None,
    ) -> AppendResult:
        """Append a batch atomically. Seqs are reserved and the WAL frame submitted in this one
        synchronous call; visibility and the ack follow the topic's durability class."""
        check_topic_name(name)
        batch = prepare_batch(records, node, self.limits)
        if idempotency_key is not None:
            self._check_idempotency_key(idempotency_key)
        return self.append_prepared(
            name, batch, idempotency_key=idempotency_key, create=create, config=config
        )

    def append_prepared(
        self,
        name: str,
        batch: list[PreparedRecord],
        *,
        idempotency_key: str | None = None,
        create: bool | None = None,
        config: dict[str, Any] | None = None,
    ) -> AppendResult:
        """Append already-validated records (the write path behind :meth:`append`, also used to
        move dead-lettered jobs)."""
        self.journal.check_writable()  # before dedupe: a retry must never be acked by a failed write
        now = self.clock.now_ms()
        topic = self._topics.get(name)
        created = topic is None
        if topic is None:
            resolved = resolve_config(name, config or {})
            if not (resolved.auto_create if create is None else create):
                raise TopicNotFound(name)
            topic = self._new_topic(name, resolved)
        elif idempotency_key is not None:
            seen = topic.idempotency.lookup(idempotency_key, now, topic.config.idempotency_window_ms)
            if seen is not None:
                # a retry of a write still awaiting its fsync is acked only when that one is
                pending = topic.pending_keys.get(idempotency_key)
                return AppendResult(name, seen[0], seen[1], topic.head_seq, False, True, pending)
        planned = topic.plan_append(batch, now)
        first, last = planned[0].seq, planned[-1].seq
        if idempotency_key is not None:
            topic.idempotency.remember(idempotency_key, now, first, last)
        if created:
            self.register(topic)
            self.journal.topic_put(topic, now)
        apply = self._applier(topic, planned, now)
        durable = self.journal.append(topic, batch, planned, idempotency_key, apply)
        if durable is not None and idempotency_key is not None:
            topic.pending_keys[idempotency_key] = durable
            durable.add_done_callback(_settle_key(topic, idempotency_key))
        return AppendResult(name, first, last, max(topic.head_seq, last), created, False, durable)

    def _applier(self, topic: Topic, planned: list[Record], now: int) -> Callable[[], None]:
        """The apply step of an append: run at once, or once durable (fsync class)."""
        topic.pending_count += len(planned)
        topic.pending_bytes += sum(r.size for r in planned)

        def apply() -> None:
            topic.pending_count -= len(planned)
            topic.pending_bytes -= sum(r.size for r in planned)
            if self._by_id.get(topic.id) is topic:
                topic.apply_append(planned, now)
                self.journal.applied(topic, now)
                self.notifier.notify(topic.name)

        return apply

    def _check_idempotency_key(self, key: Any) -> None:
        if not isinstance(key, str) or not key or len(key) > self.limits.max_idempotency_key_chars:
            raise InvalidRequest(
                f"idempotency_key must be a string of 1-{self.limits.max_idempotency_key_chars} characters",
                {"field": "idempotency_key"},
            )

    # -- §3 reads -----------------------------------------------------------------------------

    def diff(
        self,
        name: str,
        *,
        from_seq: int = 0,
        limit: int = 0,
        node: Any = None,
        include_tags: bool = False,
        include_meta: bool = True,
        touch: bool = True,
    ) -> DiffResult:
        from_seq = to_int(from_seq, "from_seq")
        limit = to_int(limit, "limit", high=self.limits.max_limit, clamp=True)
        topic = self._get(name)
        now = self.clock.now_ms()
        topic.expire(now)
        if touch:
            topic.last_read_ts = now
        opts = ReadOptions(
            limit=self._clamp_limit(limit),
            nodes=_node_set(node),
            include_tags=include_tags,
            include_meta=include_meta,
            max_scan=self.limits.max_scan_per_read,
        )
        return DiffResult(name, topic.read(from_seq, opts))

    def _clamp_limit(self, limit: int) -> int:
        if limit <= 0:
            return self.limits.default_limit
        return min(limit, self.limits.max_limit)

    def clamp_wait_ms(self, wait_ms: Any) -> int:
        return to_int(wait_ms, "wait_ms", high=self.limits.max_wait_ms, clamp=True)

    # -- §5 deletes ---------------------------------------------------------------------------

    def delete_records(self, name: str, *, before_seq: Any = None, match: Any = None) -> DeleteResult:
        if before_seq is None and match is None:
            raise InvalidRequest(
                "supply before_seq, match, or both (they are ANDed)", {"field": "before_seq"}
            )
        if before_seq is not None:
            before_seq = to_int(before_seq, "before_seq")
        tag_match = parse_match(match) if match is not None else None
        topic = self._get(name)
        topic.expire(self.clock.now_ms())
        return self.delete_seqs(topic, topic.plan_delete(before_seq, tag_match))

    def delete_seqs(self, topic: Topic, seqs: list[int]) -> DeleteResult:
        """Permanently delete these live seqs (the delete path of §5, queue acks and
        dead-letter moves); visible at once or once durable, per the topic's class."""
        if seqs:
            self.journal.check_writable()
        result = DeleteResult(topic.name, len(seqs))

        def apply() -> None:
            if self._by_id.get(topic.id) is topic:
                topic.apply_delete(seqs)
                self.journal.deleted(topic, seqs)
            result.refresh(topic)

        result.durable = self.journal.delete(topic, seqs, apply)
        if result.durable is None:
            result.refresh(topic)
        return result


def _settle_key(topic: Topic, key: str) -> Callable[[asyncio.Future[float]], None]:
    """Once a keyed write's fsync settles: stop parking retries on it, and forget the key if
    the write failed (so a retry appends rather than being deduped to nothing)."""

    def settle(future: asyncio.Future[float]) -> None:
        if topic.pending_keys.get(key) is future:
            del topic.pending_keys[key]
        if future.cancelled() or future.exception() is not None:
            topic.idempotency.forget(key)

    return settle


def _node_set(node: Any) -> frozenset[str] | None:
    if node is None:
        return None
    if isinstance(node, str):
        return frozenset((node,))
    if isinstance(node, list) and all(isinstance(n, str) for n in node):
        return frozenset(node) if node else None
    raise InvalidRequest("node must be a string or an array of strings", {"field": "node"})
