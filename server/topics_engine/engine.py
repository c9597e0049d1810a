"""The engine: the registry of topics and every topic operation: topics, writes, reads, deletes.

Concurrency: one asyncio event loop owns all state; every operation here is synchronous and
never blocks (long-polls await the :class:`fanout.Hub` outside any mutation). Time comes only from
the injected :class:`Clock`.

Atomicity: each mutating operation validates everything first and then applies, so a failing
call changes nothing — a write that lazily creates its topic and is then rejected leaves no
topic behind.

Persistence is a seam (:class:`persistence.Persistence`): the engine decides a mutation and
hands it over; the persistence applies it now or once durable, and returns what the
acknowledgement waits for. Features built on topics (queues, routers and watch) are composed
above the engine and use its public operations; the engine knows none of them.
"""

from __future__ import annotations

import asyncio
import bisect
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import listing
from .batch import RecordInput, check_batch_size, prepare_batch
from .clock import Clock
from .config import Durability, TopicConfig, TopicType, resolve_config
from .errors import InvalidRequest, NotAQueue, TopicNotEmpty, TopicNotFound, cap_reached
from .fanout import Hub
from .jsonvalues import to_int
from .leases import QueueState
from .limits import Limits
from .listing import decode_cursor, effective_prefixes, encode_cursor, names_after
from .matching import MatchSpec, parse_match
from .names import check_topic_name
from .persistence import InMemory, Persistence
from .records import NewRecords, clamp_delays, encode
from .results import (
    Appended,
    Diff,
    QueueCounters,
    RecordsDeleted,
    TopicDeleted,
    TopicPage,
    TopicPut,
    TopicState,
    TopicSummary,
)
from .storage.formats import RecordBatch
from .topic import ZERO_MAX_BYTES, DeletePlan, ReadBudget, ReadOptions, Topic, Usage

QUOTA_SWEEP_MS = 1000
"""Least time between two TTL sweeps of all topics made by writes over ``max_total_bytes``."""

NodeFilter = str | list[str] | None
"""A reader's ``node`` loop-prevention filter as a request holds it: one node, several, or
none (:func:`node_set`)."""


@dataclass(slots=True)
class StrongWatch:
    """A live topic's ``consistency: "strong"`` bookkeeping (docs/DECISIONS.md, "Strong
    watches"), kept by the engine from the topic's first strong watcher until it is
    unregistered. Only the engine's strong-watch code (:meth:`Engine.watch_strong`,
    ``_track_durable``, ``_made_durable``) changes it.

    Invariants: ``watchers >= 0``; ``durable_seq`` only grows, and every record with a seq at or
    below it is durable."""

    watchers: int = 0
    """Strong watchers reading the topic: while any, appends report their durability."""
    durable_seq: int = 0
    """How far the topic is known durable (``Persistence.when_durable`` reports it)."""


class Engine:
    def __init__(
        self, clock: Clock, limits: Limits | None = None, persistence: Persistence | None = None
    ) -> None:
        self.clock = clock
        self.limits = limits or Limits()
        self.persistence: Persistence = persistence or InMemory()
        self.hub = Hub()
        self.usage = Usage()
        """Live records and bytes over all registered topics."""
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[int, Topic] = {}
        self._names: list[str] = []
        self.by_class: dict[Durability, int] = dict.fromkeys(Durability, 0)
        """Live topics by durability class (kept by register, unregister and apply_config)."""
        self.queue_topics: dict[int, Topic] = {}
        """Live queue topics by id."""
        self._deleted_heads: dict[str, int] = {}
        self._strong: dict[int, StrongWatch] = {}
        """Strong-watch state by topic id (see :class:`StrongWatch`)."""
        self.next_topic_id = 1
        self._quota_swept_ms = -QUOTA_SWEEP_MS
        self.records_appended = 0
        """Records accepted by appends since the process started — writes, schedule runs,
        dead-letter moves and router copies; not a deduplicated retry, not WAL replay
        (``topics_records_appended_total``)."""

    # -- registry -----------------------------------------------------------------------------

    @property
    def topic_count(self) -> int:
        return len(self._topics)

    def get(self, name: str) -> Topic:
        """The live topic called ``name``; :class:`TopicNotFound` if there is none."""
        topic = self._topics.get(name)
        if topic is None:
            raise TopicNotFound(name)
        return topic

    def _new_topic(self, name: str, config: TopicConfig) -> Topic:
        topic = Topic(name, config, self.clock.now_ms(), previous_head=self._deleted_heads.get(name))
        topic.id = self.next_topic_id
        return topic

    def register(self, topic: Topic) -> None:
        """Add a topic under its name and id (live create or replayed create); its records
        join the engine's totals."""
        self.usage.add(topic.count, topic.bytes)
        self.usage.consumers += len(topic.consumers)
        topic.usage = self.usage
        self._topics[topic.name] = topic
        self._by_id[topic.id] = topic
        self.by_class[topic.config.durability] += 1
        if topic.queue is not None:
            self.queue_topics[topic.id] = topic
            topic.queue.lease_dropped = functools.partial(self._lease_dropped, topic)
        self.next_topic_id = max(self.next_topic_id, topic.id + 1)
        bisect.insort(self._names, topic.name)

    def _lease_dropped(self, topic: Topic) -> None:
        """A lease of ``topic`` ended with its job (deleted, evicted): room under its
        ``max_in_flight``, if it has one — wake its /work streams."""
        if topic.config.max_in_flight and self.is_current(topic):
            self.hub.notify(topic.name)

    def unregister(self, topic: Topic) -> None:
        """Remove a topic (live or replayed delete) and with it its named consumers; remembers
        its head for ``recreated``."""
        del self._topics[topic.name]
        del self._by_id[topic.id]
        self.by_class[topic.config.durability] -= 1
        self.queue_topics.pop(topic.id, None)
        self._strong.pop(topic.id, None)
        self.usage.add(-topic.count, -topic.bytes)
        self.usage.consumers -= len(topic.consumers)
        topic.usage = Usage()
        del self._names[bisect.bisect_left(self._names, topic.name)]
        self._deleted_heads[topic.name] = topic.reserved_seq
        self.hub.notify(topic.name)

    def check_topic_room(self, new: int = 1) -> None:
        """429 ``throttled`` if ``new`` more topics would exceed ``max_topics`` (a resource cap)."""
        cap = self.limits.max_topics
        if cap and new and len(self._topics) + new > cap:
            raise cap_reached(
                "max_topics", cap, f"{len(self._topics)} topics exist; delete one or raise TOPICS_MAX_TOPICS"
            )

    def _check_bytes_room(self, topic: Topic, planned: RecordBatch) -> None:
        """429 ``throttled`` (the plan cancelled) if the write ``planned`` on ``topic`` would
        take the live bytes (writes awaiting their fsync included) over ``max_total_bytes``
        (the total-bytes quota), counted after the write's own evictions (docs/DECISIONS.md,
        "Caps"). Before refusing, records past their TTL anywhere are expired (expiry is
        otherwise lazy, per topic) — at most once per :data:`QUOTA_SWEEP_MS`, so refused writes
        cannot each walk every topic. Checked only when the quota is set."""
        cap = self.limits.max_total_bytes
        if not cap:
            return
        total = self._total_after(topic, planned)
        now = self.clock.now_ms()
        if total > cap and now - self._quota_swept_ms >= QUOTA_SWEEP_MS:
            self._quota_swept_ms = now
            for other in self._topics.values():
                if other.config.ttl_ms and other is not topic:
                    other.expire(now)
            total = self._total_after(topic, planned)
        if total > cap:
            topic.cancel_plan(planned)
            raise cap_reached(
                "max_total_bytes",
                cap,
                f"the write of {len(planned.blob) + 1} bytes would take the live total to {total} "
                "bytes; delete or expire records, or raise TOPICS_MAX_TOTAL_BYTES",
            )

    def _total_after(self, topic: Topic, planned: RecordBatch) -> int:
        usage = self.usage
        current = topic.bytes + topic.pending.bytes if self.is_current(topic) else 0
        return usage.bytes + usage.pending - current + topic.bytes_after(planned)

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

    def names(self) -> Sequence[str]:
        """Live topic names in name order (the registry's own list: read it, never keep it)."""
        return self._names

    def is_current(self, topic: Topic) -> bool:
        """``topic`` is still the live incarnation of its name (not deleted or recreated)."""
        return self._by_id.get(topic.id) is topic

    # -- topics -------------------------------------------------------------------------------

    def put_topic(self, name: str, fields: dict[str, Any]) -> TopicPut:
        """Create or update a topic; fields merge over the current config."""
        check_topic_name(name)
        topic = self._topics.get(name)
        config = resolve_config(name, fields, topic.config if topic else None)
        if topic is None:
            self.persistence.check_writable()
            self.check_topic_room()
            topic = self._new_topic(name, config)
            self.register(topic)
            return TopicPut(name, True, config, self.persistence.topic_put(topic, self.clock.now_ms()))
        if config == topic.config:
            return TopicPut(name, False, config)
        self.persistence.check_writable()
        raised_cap = topic.queue is not None and _cap_raised(topic.config.max_in_flight, config.max_in_flight)
        self.apply_config(topic, config)
        if raised_cap:
            self.hub.notify(name)  # /work streams waiting for room under the old cap
        return TopicPut(name, False, config, self.persistence.topic_put(topic, self.clock.now_ms()))

    def apply_config(self, topic: Topic, config: TopicConfig, at_ms: int | None = None) -> None:
        """Switch ``topic`` to ``config`` as of ``at_ms`` (now by default; replay passes the
        time the change was made, so the old TTL's expiries replay exactly)."""
        now = self.clock.now_ms() if at_ms is None else at_ms
        topic.expire(now)  # what the old TTL already expired stays expired
        self.by_class[topic.config.durability] -= 1
        self.by_class[config.durability] += 1
        was_ephemeral = topic.config.durability is Durability.EPHEMERAL
        if was_ephemeral != (config.durability is Durability.EPHEMERAL):
            topic.switch_logging(was_ephemeral)  # docs/DECISIONS.md, "Switching a topic's class"
        topic.config = config
        topic.version += 1
        topic.enforce_retention(now)

    def topic_state(self, name: str, touch: bool = True) -> TopicState:
        topic = self.get(name)
        now = self.clock.now_ms()
        topic.expire(now)
        if touch:
            topic.last_read_ts = now
        return TopicState(
            topic=name,
            type=topic.config.type,
            head_seq=topic.head_seq,
            earliest_seq=topic.earliest_seq,
            next_seq=topic.next_seq,
            count=topic.count,
            bytes=topic.bytes,
            config=topic.config,
            effective_priority=topic.priority(now),
            last_write_ts=topic.last_write_ts,
            last_read_ts=topic.last_read_ts,
            queue=self.queue_counters(topic),
        )

    def queue_in_flight(self, topic: Topic) -> int:
        """A queue's leased jobs (lazy lease expiry applied first); 0 for a log."""
        q = topic.queue
        if q is None:
            return 0
        q.expire(self.clock.steady_ms())
        return len(q.leases)

    def queue_counters(self, topic: Topic) -> QueueCounters | None:
        """A queue's counters (lazy lease expiry applied first); ``None`` for a log."""
        q = topic.queue
        if q is None:
            return None
        now = self.clock.now_ms()  # the oldest ready job's age is in $ts terms
        q.expire(self.clock.steady_ms())
        ready, in_flight = q.counters(topic.count)
        holders, holder_count = q.holders(MAX_HOLDERS)
        oldest = _oldest_ready_ts(topic, q) if ready else None
        return QueueCounters(
            ready,
            in_flight,
            q.dead_lettered,
            delayed=len(q.delayed),
            oldest_ready_age_ms=0 if oldest is None else max(0, now - oldest),
            holders=holders,
            holders_truncated=holder_count > len(holders),
            holder_count=holder_count,
        )

    def list_topics(
        self,
        prefix: str = "",
        page_size: int = 0,
        cursor: str | None = None,
        touch: bool = False,
        within: tuple[str, ...] = (),
    ) -> TopicPage:
        """One page of topics in name order; the cursor is returned only if more remain.
        ``page_size`` 0 means the default; it is clamped to [1, 1000] (docs/DECISIONS.md,
        "`page_size`"). ``within`` (an API key's prefix allowlist; empty: any) hides every other
        name."""
        size = listing.page_size(page_size)
        after = decode_cursor(cursor) if cursor is not None else None
        now = self.clock.now_ms()
        page: list[TopicSummary] = []
        for name in names_after(self._names, effective_prefixes(prefix, within), after):
            if len(page) == size:
                return TopicPage(page, encode_cursor(page[-1].topic))
            page.append(self._summary(self._topics[name], now, touch))
        return TopicPage(page, None)

    def _summary(self, topic: Topic, now: int, touch: bool) -> TopicSummary:
        topic.expire(now)
        if touch:
            topic.last_read_ts = now
        return TopicSummary(
            topic=topic.name,
            type=topic.config.type,
            head_seq=topic.head_seq,
            earliest_seq=topic.earliest_seq,
            count=topic.count,
            bytes=topic.bytes,
            durability=topic.config.durability,
            effective_priority=topic.priority(now),
        )

    def delete_topic(self, name: str, if_empty: bool = False) -> TopicDeleted:
        """Remove the topic and everything it owns; ``deleted`` is False if it did not exist."""
        check_topic_name(name)
        topic = self._topics.get(name)
        if topic is None:
            return TopicDeleted(name, False)
        if if_empty:
            topic.expire(self.clock.now_ms())
            if topic.count:
                raise TopicNotEmpty(
                    f'topic "{name}" still holds {topic.count} records; delete without '
                    "if_empty=true to drop them",
                    {"topic": name, "count": topic.count},
                )
        self.persistence.check_writable()
        self.unregister(topic)
        return TopicDeleted(name, True, wait=self.persistence.topic_delete(topic))

    # -- writes -------------------------------------------------------------------------------

    def append(
        self,
        name: str,
        records: NewRecords | list[RecordInput],
        *,
        node: str | None = None,
        idempotency_key: str | None = None,
        create: bool | None = None,
        config: dict[str, Any] | None = None,
        delay_ms: int | None = None,
        apply_later: list[Callable[[], None]] | None = None,
    ) -> Appended:
        """Append a batch atomically. Seqs are reserved and the WAL frame submitted in this one
        synchronous call; visibility and the ack follow the topic's durability class.

        ``apply_later`` (a transport writing the answer itself): a write visible at once is
        not applied here but left on that list, for the caller to run right after it has
        written the answer — so the answer waits only on what it acknowledges, the WAL write
        (:meth:`append_prepared`). The caller must run it before anything else reaches the
        engine: a topic's writes apply in seq order.

        ``records`` are JSON values (``[{"data": ..., "tag": ...}, ...]``, validated here) or
        :class:`NewRecords` columns a caller decoded itself (the HTTP layer: ``node`` and the
        batch's ``delay_ms`` are then already applied to them). ``delay_ms`` (per record or for
        the batch) delays a queue's jobs: see :meth:`append_prepared`."""
        check_topic_name(name)
        if isinstance(records, NewRecords):
            if not records.count:
                raise InvalidRequest("records must be a non-empty array", {"field": "records"})
            check_batch_size(records.count, self.limits)
            batch = records
        else:
            batch = prepare_batch(records, node, self.limits, delay_ms)
        if idempotency_key is not None:
            self._check_idempotency_key(idempotency_key)
        return self.append_prepared(
            name,
            batch,
            idempotency_key=idempotency_key,
            create=create,
            config=config,
            apply_later=apply_later,
        )

    def append_prepared(
        self,
        name: str,
        batch: NewRecords,
        *,
        idempotency_key: str | None = None,
        create: bool | None = None,
        config: dict[str, Any] | None = None,
        apply_later: list[Callable[[], None]] | None = None,
    ) -> Appended:
        """Append already-validated records (the write path behind :meth:`append`, also used to
        move dead-lettered jobs).

        ``apply_later``: an apply the persistence runs during this call (a write visible at
        once) is put there instead; one it runs later (once durable) runs then, as always.
        Until the caller runs it, the records are planned (their seqs taken, counted as
        pending) but not readable, the same state a write waiting for its ``fsync`` is in.

        Records with a ``delay_ms`` (a queue's delayed jobs, an extension: docs/DECISIONS.md,
        "Delayed jobs") carry it in their stored bytes as ``$delay_ms``; the queue keeps them
        unclaimable until ``$ts + $delay_ms`` (``Topic._added``). ``delay_ms`` on a log topic
        is refused (``not_a_queue``) before anything changes."""
        self.persistence.check_writable()  # before dedupe: a retry is never acked by a failed write
        now = self.clock.now_ms()
        topic = self._topics.get(name)
        created = topic is None
        if topic is None:
            resolved = resolve_config(name, config or {})
            if not (resolved.auto_create if create is None else create):
                raise TopicNotFound(name)
            _check_delays(name, resolved.type, batch)
            self.check_topic_room()
            topic = self._new_topic(name, resolved)
        else:
            _check_delays(name, topic.config.type, batch)
            if idempotency_key is not None:
                seen = topic.idempotency.lookup(idempotency_key, now, topic.config.idempotency_window_ms)
                if seen is not None:
                    # a retry is checked like a new write (bad input is refused, never "deduped");
                    # it is encoded only to run the codec's limit checks
                    encode(batch, 1, now, self.limits.record_limits)
                    # a retry of a write still awaiting its fsync is acked only when that one is
                    pending = topic.pending.keys.get(idempotency_key)
                    return Appended(name, seen[0], seen[1], topic.head_seq, False, True, pending)
        planned = topic.plan_append(batch, now, self.limits.record_limits)
        self._check_bytes_room(topic, planned)
        first, last = planned.first_seq, planned.last_seq
        if idempotency_key is not None:
            topic.idempotency.remember(idempotency_key, now, first, last)
        if created:
            self.register(topic)
            self.persistence.topic_put(topic, now, lazy=True)
        apply = self._applier(topic, planned, now)
        if apply_later is None:
            wait = self.persistence.append(topic, planned, idempotency_key, apply)
        else:
            deferring = _ApplyLater(apply, apply_later)
            wait = self.persistence.append(topic, planned, idempotency_key, deferring)
            deferring.later = None  # an apply once durable runs when it comes
        self._track_durable(topic, last)
        self.records_appended += planned.count
        if wait is not None and idempotency_key is not None:
            topic.pending.keys[idempotency_key] = wait
            wait.add_done_callback(_release_key(topic, idempotency_key))
        return Appended(name, first, last, max(topic.head_seq, last), created, False, wait)

    def append_derived(
        self,
        topic: Topic,
        records: NewRecords | None,
        describe: Callable[[int, int], bytes],
        trimmed: int = 0,
    ) -> int:
        """Append copies a router made of records stored elsewhere (derived records:
        docs/DECISIONS.md, "Derived copies"): the WAL gets ``describe(first_seq, ts)`` — a frame
        naming what was copied, not the copies' bytes. ``records`` ``None``: reserve one seq marking
        ``trimmed`` source records lost before they could be copied. Returns the first seq used.
        Raises :class:`TopicFull` (nothing reserved) when ``topic`` is a full ``discard:"reject"``
        topic; record size limits do not apply (the originals passed them)."""
        self.persistence.check_writable()
        now = self.clock.now_ms()
        if records is None:
            seq = topic.plan_hole()

            def apply_hole() -> None:
                if self.is_current(topic):
                    topic.apply_hole(seq, trimmed)
                    self.hub.notify(topic.name)

            self.persistence.forward(topic, seq, describe(seq, now), apply_hole)
            self._track_durable(topic, seq)
            return seq
        planned = topic.plan_append(records, now)
        self._check_bytes_room(topic, planned)
        apply = self._applier(topic, planned, now)
        self.persistence.forward(
            topic, planned.last_seq, describe(planned.first_seq, planned.ts_runs[0][1]), apply
        )
        self._track_durable(topic, planned.last_seq)
        self.records_appended += planned.count
        return planned.first_seq

    def _track_durable(self, topic: Topic, last: int) -> None:
        """While ``strong`` watchers read ``topic``, learn when its seqs up to ``last`` are
        durable (every write path: direct appends and router copies alike)."""
        strong = self._strong.get(topic.id)
        if strong is not None and strong.watchers:
            self.persistence.when_durable(topic, lambda: self._made_durable(topic, strong, last))

    def watch_strong(self, topic: Topic, delta: int) -> None:
        """A ``strong`` watcher starts (+1) or stops (-1) reading ``topic``. While any does,
        appends report when they are durable; the first one also learns how far the records
        already there are durable (a barrier on the group commit). A topic no longer live is
        not tracked: nobody reads it strongly again."""
        if not self.is_current(topic):
            return
        strong = self._strong.get(topic.id)
        if strong is None:
            strong = self._strong[topic.id] = StrongWatch()
        strong.watchers += delta
        if delta > 0 and strong.watchers == delta:
            head = topic.head_seq
            self.persistence.when_durable(topic, lambda: self._made_durable(topic, strong, head))

    def strong_watchers(self, topic: Topic) -> int:
        """How many ``strong`` watchers read ``topic`` now."""
        strong = self._strong.get(topic.id)
        return 0 if strong is None else strong.watchers

    def strong_head(self, topic: Topic) -> int:
        """The highest seq a ``strong`` reader may see now (docs/DECISIONS.md, "Strong watches")."""
        strong = self._strong.get(topic.id)
        return self.persistence.strong_head(topic, 0 if strong is None else strong.durable_seq)

    def _made_durable(self, topic: Topic, strong: StrongWatch, seq: int) -> None:
        if seq > strong.durable_seq:
            strong.durable_seq = seq
            if self.is_current(topic):
                self.hub.notify(topic.name)

    def _applier(self, topic: Topic, planned: RecordBatch, now: int) -> Callable[[], None]:
        """The apply step of an append: run at once, or once durable (fsync class)."""
        count, size, usage, pending = planned.count, len(planned.blob) + 1, topic.usage, topic.pending
        pending.add(count, size)
        usage.pending += size

        def apply() -> None:
            pending.add(-count, -size)
            usage.pending -= size
            if self.is_current(topic):
                topic.apply_append(planned, now, self.clock.steady_ms())
                self.persistence.applied(topic, now)
                self.hub.notify(topic.name)

        return apply

    def _check_idempotency_key(self, key: Any) -> None:
        if not isinstance(key, str) or not key or len(key) > self.limits.max_idempotency_key_chars:
            raise InvalidRequest(
                f"idempotency_key must be a string of 1-{self.limits.max_idempotency_key_chars} characters",
                {"field": "idempotency_key"},
            )

    # -- reads --------------------------------------------------------------------------------

    def diff(
        self,
        name: str,
        *,
        from_seq: int = 0,
        from_ts: int | None = None,
        limit: int = 0,
        node: NodeFilter = None,
        include_tags: bool = False,
        include_meta: bool = True,
        max_batch_bytes: int = 0,
        touch: bool = True,
    ) -> Diff:
        """Records after the exclusive cursor ``from_seq``, or — with ``from_ts`` (ms
        since epoch), which replaces ``from_seq`` — from the first live record with
        ``$ts >= from_ts`` (:meth:`Topic.seq_before_ts`; the result's ``from_seq`` says where
        that was). ``limit`` and ``max_batch_bytes`` 0 mean their defaults
        (``limits.default_limit``, 1 MiB); both are clamped (:meth:`ReadBudget.resolve`)."""
        from_seq = to_int(from_seq, "from_seq")
        defaults = ReadBudget(self.limits.default_limit, ZERO_MAX_BYTES)
        budget = defaults.resolve(limit, max_batch_bytes, self.limits.max_limit)
        topic = self.get(name)
        now = self.clock.now_ms()
        topic.expire(now)
        if from_ts is not None:
            from_seq = topic.seq_before_ts(to_int(from_ts, "from_ts"))
        if touch:
            topic.last_read_ts = now
        opts = ReadOptions(
            limit=budget.limit,
            nodes=node_set(node),
            include_tags=include_tags,
            include_meta=include_meta,
            max_bytes=budget.max_bytes,
            max_scan=self.limits.max_scan_per_read,
        )
        return topic.read(from_seq, opts)

    def clamp_wait_ms(self, wait_ms: int) -> int:
        return to_int(wait_ms, "wait_ms", high=self.limits.max_wait_ms, clamp=True)

    # -- deletes ------------------------------------------------------------------------------

    def delete_records(
        self, name: str, *, before_seq: int | None = None, match: MatchSpec | None = None
    ) -> RecordsDeleted:
        plan = self.plan_records_delete(name, before_seq=before_seq, match=match)
        plan.examine_here()
        return self.delete_seqs(plan.topic, plan.seqs())

    def plan_records_delete(
        self, name: str, *, before_seq: int | None = None, match: MatchSpec | None = None
    ) -> DeletePlan:
        """:meth:`delete_records` up to its plan: checked, and what memory tells of the seqs to
        delete; the caller examines the plan's cold chunks (off the event loop) and passes
        ``plan.seqs()`` to :meth:`delete_seqs`."""
        if before_seq is None and match is None:
            raise InvalidRequest(
                "supply before_seq, match, or both (they are ANDed)", {"field": "before_seq"}
            )
        if before_seq is not None:
            before_seq = to_int(before_seq, "before_seq")
        tag_match = parse_match(match) if match is not None else None
        topic = self.get(name)
        topic.expire(self.clock.now_ms())
        return topic.delete_plan(before_seq, tag_match)

    def delete_seqs(self, topic: Topic, seqs: list[int]) -> RecordsDeleted:
        """Permanently delete these live seqs (the path of record deletes, queue acks and
        dead-letter moves); visible at once or once durable, per the topic's class."""
        if seqs:
            self.persistence.check_writable()
        result = RecordsDeleted(topic.name, len(seqs))

        def refresh() -> None:
            result.earliest_seq, result.head_seq = topic.earliest_seq, topic.head_seq
            result.count, result.bytes = topic.count, topic.bytes

        def apply() -> None:
            if self.is_current(topic):
                # report the records this delete removed (persistence flags the sealed ones on
                # disk), not those another one planned before it applied removed first
                deleted = topic.apply_delete(seqs)
                if deleted:
                    self.persistence.deleted(topic, deleted)
            refresh()

        result.wait = self.persistence.delete(topic, seqs, apply)
        if result.wait is None:
            refresh()
        return result


def _release_key(topic: Topic, key: str) -> Callable[[asyncio.Future[float]], None]:
    """Once a keyed write's fsync settles: stop parking retries on it, and forget the key if
    the write failed (so a retry appends rather than being deduped to nothing)."""

    def release(future: asyncio.Future[float]) -> None:
        keys = topic.pending.keys
        if keys.get(key) is future:
            del keys[key]
        if future.cancelled() or future.exception() is not None:
            topic.idempotency.forget(key)

    return release


def node_set(node: NodeFilter) -> frozenset[str] | None:
    """A reader's ``node`` filter (a string or an array of strings) as a set; ``None`` = none
    (so is an empty array). Anything else is ``invalid_request`` (direct callers)."""
    if node is None:
        return None
    if isinstance(node, str):
        return frozenset((node,))
    if isinstance(node, list) and all(isinstance(n, str) for n in node):
        return frozenset(node) if node else None
    raise InvalidRequest("node must be a string or an array of strings", {"field": "node"})


MAX_HOLDERS = 100
"""The most lease holders a queue's counters list (``holders_truncated`` says there are more)."""


def _oldest_ready_ts(topic: Topic, q: QueueState) -> int | None:
    """``$ts`` of the oldest claimable job: the lowest seq on the reclaim freelist, or the first
    job past the claim cursor (never handed out), whichever is older; read from what the record
    log keeps resident, so no record is read. Delayed writes at the front are passed over for
    good (``Topic.pass_delayed``: the cursor moves over them, as a claim's pick would)."""
    log = topic.log
    times = []
    reclaimable = q.oldest_reclaimable(log.is_live)
    if reclaimable is not None:
        ts = log.ts_of(reclaimable)
        if ts is not None:
            times.append(ts)
    fresh = topic.pass_delayed()  # delayed writes are not claimable
    if fresh is not None:
        times.append(fresh[1])
    return min(times) if times else None


def _check_delays(name: str, type_: TopicType, batch: NewRecords) -> None:
    """A write's ``delay_ms`` column, if any: refused on a log (it would silently mean
    nothing) with ``409 not_a_queue`` — the request is schema-valid, only the topic's type
    makes it wrong (docs/DECISIONS.md, "Delayed jobs") — else checked and clamped in place
    (``None`` when every delay is 0)."""
    if batch.delays is None:
        return
    if type_ is not TopicType.QUEUE:
        raise NotAQueue(
            f'delay_ms delays queue jobs; topic "{name}" is a log, not a queue — write without '
            f"delay_ms, or make it a queue (PUT /v0/topics/{name} with type queue)",
            {"topic": name, "field": "delay_ms"},
        )
    delays = clamp_delays(batch.delays)
    batch.delays = delays if any(delays) else None


def _cap_raised(old: int, new: int) -> bool:
    """Whether a ``max_in_flight`` change makes room (0 is no cap)."""
    return old != 0 and (new == 0 or new > old)


class _ApplyLater:
    """An append's apply step that, run while ``later`` is a list (during the append's own
    call), is left there for the caller instead; once ``later`` is ``None`` it runs at once."""

    __slots__ = ("apply", "later")

    def __init__(self, apply: Callable[[], None], later: list[Callable[[], None]]) -> None:
        self.apply = apply
        self.later: list[Callable[[], None]] | None = later

    def __call__(self) -> None:
        later = self.later
        if later is None:
            self.apply()
        else:
            later.append(self.apply)
