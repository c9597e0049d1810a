"""Queue operations (§10): claim, ack, nack, extend, dead-lettering, coalescing cohorts and
/work subscriptions, over the lease projection in :mod:`queue`.

Every operation first resolves the topic — 404 ``topic_not_found`` if absent, 409
``not_a_queue`` for a log — and only then validates its own fields. Lease changes are
:class:`LeaseEvent` s applied to the projection and, with ``leases_durable``, journaled; an ack
is the permanent delete of §5 (durable iff the topic is), so acked jobs never come back.

Claim order: the reclaim freelist (expired leases, elapsed nack delays) first, then fresh jobs
past the claim cursor. A job about to be delivered for the ``(max_deliveries + 1)``-th time on a
queue with a ``dead_letter`` topic is moved there instead (meta stamped with provenance) and
deleted from the queue. With ``claim_jitter_ms > 0`` claims (and /work refills) that arrive
within the window form a cohort served in one pass, the available jobs divided in proportion to
each claimer's ``max`` and dealt round-robin.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from .config import TopicType
from .errors import BatchTooLarge, InvalidRequest, NotAQueue, NotReady, TopicNotFound
from .journal import Durable
from .jsonvalues import U64_MAX, dumps, to_int
from .queue import Lease, LeaseEvent, LeaseEventKind, QueueState
from .records import PreparedRecord, Record
from .topic import Topic

if TYPE_CHECKING:
    from .engine import Engine

MAX_CLAIM = 1000
LEASE_MS_RANGE = (100, 86_400_000)
MAX_DELAY_MS = 86_400_000


@dataclass(slots=True)
class ClaimedJob:
    record: Record
    lease: Lease

    def encode(self, topic: str | None = None) -> bytes:
        """The claimed-job object: the record's fields plus the lease fields (and ``topic``
        first, for /work frames)."""
        body = self.record.encode(include_tags=True, include_meta=True)
        lease = b',"lease_id":"%s","deadline":%d,"deliveries":%d' % (
            self.lease.lease_id.encode(),
            self.lease.deadline,
            self.lease.deliveries,
        )
        prefix = b'{"topic":' + orjson.dumps(topic) + b"," if topic is not None else b"{"
        return prefix + body[1:-1] + lease + b"}"


@dataclass(slots=True)
class ClaimResult:
    topic: str
    jobs: list[ClaimedJob]
    ready: int
    durable: Durable = None


@dataclass(slots=True)
class SettleResult:
    """ack / nack / extend: what was done, what was skipped, and the counters after."""

    topic: str
    done: list[int]
    skipped: list[int]
    deadlines: dict[str, int] = field(default_factory=dict)
    durable: Durable = None


@dataclass(eq=False)
class WorkSubscription:
    """One /work stream: jobs pushed to it are leased to ``node`` and tracked in ``held`` so a
    disconnect releases exactly them; ``wake`` is called whenever one of them stops being held."""

    node: str
    max: int
    lease_ms: int
    held: set[int] = field(default_factory=set)
    wake: Callable[[], None] | None = None

    def lease_ended(self, seq: int) -> None:
        self.held.discard(seq)
        if self.wake is not None:
            self.wake()


@dataclass(slots=True)
class _Waiting:
    node: str
    max: int
    lease_ms: int
    future: asyncio.Future[list[ClaimedJob]] | None
    holder: WorkSubscription | None
    jobs: list[ClaimedJob] = field(default_factory=list)


class Queues:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._cohorts: dict[int, list[_Waiting]] = {}
        self._lease_prefix = secrets.token_hex(4)
        self._lease_counter = itertools.count(1)

    def _next_lease_id(self) -> str:
        """``lease_<hex>``: a random per-process prefix and a counter — unique across leases and
        restarts without paying for a random draw per job."""
        return f"lease_{self._lease_prefix}{next(self._lease_counter):010x}"

    # -- lookup and field checks -------------------------------------------------------------

    def queue_topic(self, name: str) -> Topic:
        topic = self.engine.topic(name)
        if topic is None:
            raise TopicNotFound(name)
        if topic.config.type is not TopicType.QUEUE or topic.queue is None:
            raise NotAQueue(
                f'topic "{name}" is a log, not a queue; create queues with PUT /v0/topics/{name} '
                '{"type": "queue"}',
                {"topic": name},
            )
        return topic

    def _node(self, node: Any) -> str:
        limit = self.engine.limits.max_node_bytes
        if not isinstance(node, str) or not node:
            raise InvalidRequest("node is required: the worker's non-empty identity", {"field": "node"})
        if len(node.encode()) > limit:
            raise InvalidRequest(f"node is longer than {limit} bytes", {"field": "node"})
        return node

    def _lease_ms(self, topic: Topic, lease_ms: Any, field_name: str = "lease_ms") -> int:
        if lease_ms is None:
            return topic.config.lease_ms
        return to_int(lease_ms, field_name, low=LEASE_MS_RANGE[0], high=LEASE_MS_RANGE[1], clamp=True)

    def _seqs(self, seqs: Any, lease_ids: Any) -> tuple[list[int], list[str] | None]:
        if not isinstance(seqs, list) or not seqs:
            raise InvalidRequest("seqs must be a non-empty array of job seqs", {"field": "seqs"})
        if len(seqs) > MAX_CLAIM:
            raise BatchTooLarge(
                f"{len(seqs)} seqs in one call; at most {MAX_CLAIM} — split it",
                {"seqs": len(seqs), "max_seqs": MAX_CLAIM},
            )
        if all(type(s) is int and 0 <= s <= U64_MAX for s in seqs):
            ints = seqs  # the common case: plain non-negative integers
        else:
            ints = [to_int(s, f"seqs[{i}]") for i, s in enumerate(seqs)]
        if lease_ids is None:
            return ints, None
        if (
            not isinstance(lease_ids, list)
            or len(lease_ids) != len(ints)
            or not all(isinstance(x, str) for x in lease_ids)
        ):
            raise InvalidRequest(
                "lease_ids must be an array of strings with one entry per seq, in the same order",
                {"field": "lease_ids"},
            )
        return ints, lease_ids

    def counters(self, topic: Topic) -> tuple[int, int]:
        q = _q(topic)
        q.expire(self.engine.clock.now_ms())
        return q.counters(topic.count)

    # -- claim --------------------------------------------------------------------------------

    def claim(
        self, name: str, node: Any, max_: Any = None, lease_ms: Any = None
    ) -> ClaimResult | asyncio.Future[list[ClaimedJob]]:
        """Lease up to ``max`` jobs to ``node``: a result now (greedy), or — with a coalescing
        window — a future resolved when the cohort's pass runs."""
        topic = self.queue_topic(name)
        waiting = _Waiting(self._node(node), _clamp_max(max_), self._lease_ms(topic, lease_ms), None, None)
        if topic.config.claim_jitter_ms > 0:
            return self._join_cohort(topic, waiting)
        self._serve(topic, [waiting])
        ready, _ = self.counters(topic)
        return ClaimResult(name, waiting.jobs, ready, self._journal_claims(topic, waiting.jobs))

    def claim_for(
        self, topic: Topic, sub: WorkSubscription, want: int
    ) -> list[ClaimedJob] | asyncio.Future[list[ClaimedJob]]:
        """A /work refill: lease up to ``want`` jobs to the subscription (in the cohort when
        the queue coalesces)."""
        waiting = _Waiting(sub.node, want, sub.lease_ms, None, sub)
        if topic.config.claim_jitter_ms > 0:
            return self._join_cohort(topic, waiting)
        self._serve(topic, [waiting])
        self._journal_claims(topic, waiting.jobs)
        return waiting.jobs

    def _join_cohort(self, topic: Topic, waiting: _Waiting) -> asyncio.Future[list[ClaimedJob]]:
        waiting.future = asyncio.get_running_loop().create_future()
        cohort = self._cohorts.get(topic.id)
        if cohort is None:
            cohort = self._cohorts[topic.id] = []
            self.engine.clock.call_later(topic.config.claim_jitter_ms, lambda: self._run_cohort(topic))
        cohort.append(waiting)
        return waiting.future

    def _run_cohort(self, topic: Topic) -> None:
        """The coordinator pass: one critical section serving every claim of the window."""
        cohort = self._cohorts.pop(topic.id, [])
        live = [w for w in cohort if w.future is not None and not w.future.done()]
        if self.engine.topic(topic.name) is not topic or topic.queue is None:
            for w in live:
                assert w.future is not None
                w.future.set_exception(
                    NotAQueue(f'topic "{topic.name}" is no longer a queue', {"topic": topic.name})
                )
            return
        self._serve(topic, live)
        for w in live:
            self._journal_claims(topic, w.jobs)
            assert w.future is not None
            w.future.set_result(w.jobs)

    def _serve(self, topic: Topic, claimers: list[_Waiting]) -> None:
        """Pick jobs for everyone (dead-lettering on the way) and divide them: each claimer's
        share is proportional to its ``max`` (largest remainder), dealt round-robin."""
        now = self.engine.clock.now_ms()
        topic.expire(now)
        q = _q(topic)
        q.expire(now)
        wanted = sum(w.max for w in claimers)
        picked = self._pick(topic, q, wanted, now)
        shares = _shares([w.max for w in claimers], len(picked))
        dealt: list[list[tuple[Record, int]]] = [[] for _ in claimers]
        i = 0
        while i < len(picked):
            for k in range(len(claimers)):
                if len(dealt[k]) < shares[k] and i < len(picked):
                    dealt[k].append(picked[i])
                    i += 1
        for w, jobs in zip(claimers, dealt, strict=True):
            for record, deliveries in sorted(jobs, key=lambda j: j[0].seq):
                lease_id = self._next_lease_id()
                q.apply(
                    LeaseEvent(
                        LeaseEventKind.CLAIMED, record.seq, lease_id, w.node, now + w.lease_ms, deliveries
                    )
                )
                lease = q.leases[record.seq]
                lease.holder = w.holder
                if w.holder is not None:
                    w.holder.held.add(record.seq)
                w.jobs.append(ClaimedJob(record, lease))

    def _pick(self, topic: Topic, q: QueueState, n: int, now: int) -> list[tuple[Record, int]]:
        """Up to ``n`` claimable jobs with their new delivery counts: reclaimed first, then
        fresh. Jobs past ``max_deliveries`` are dead-lettered instead of picked."""
        picked: list[tuple[Record, int]] = []
        cfg = topic.config
        while len(picked) < n:
            seq = q.pop_reclaimable()
            record = topic.record(seq) if seq is not None else None
            if seq is not None and record is None:
                continue
            if record is None:
                record = topic.next_live_after(q.cursor)
                if record is None:
                    break
                q.cursor = record.seq
            deliveries = q.deliveries.get(record.seq, 0) + 1
            poison = cfg.max_deliveries and cfg.dead_letter and deliveries > cfg.max_deliveries
            if poison and self._dead_letter(topic, record, deliveries - 1):
                continue
            picked.append((record, deliveries))
        return picked

    def _dead_letter(self, topic: Topic, record: Record, deliveries: int) -> bool:
        """Move a poison job to the dead-letter topic; False (deliver it instead) if the
        dead-letter topic refuses it — a job is never dropped."""
        meta = orjson.loads(record.meta_json) if record.meta_json is not None else {}
        meta.update(
            {
                "$dead_letter_from": topic.name,
                "$dead_letter_deliveries": deliveries,
                "$dead_letter_src_seq": record.seq,
            }
        )
        moved = PreparedRecord(record.node, record.tag, record.data_json, dumps(meta))
        try:
            self.engine.append_prepared(topic.config.dead_letter or "", [moved])
        except Exception:  # noqa: BLE001 — topic_full, not creatable, read-only WAL: keep the job
            return False
        self.engine.delete_seqs(topic, [record.seq])
        event = LeaseEvent(
            LeaseEventKind.DEAD_LETTERED, record.seq, "", deliveries=_q(topic).dead_lettered + 1
        )
        _q(topic).apply(event)
        self.engine.journal.lease_events(topic, [event], always=True)
        return True

    def _journal_claims(self, topic: Topic, jobs: list[ClaimedJob]) -> Durable:
        events = [
            LeaseEvent(
                LeaseEventKind.CLAIMED,
                j.record.seq,
                j.lease.lease_id,
                j.lease.node,
                j.lease.deadline,
                j.lease.deliveries,
            )
            for j in jobs
        ]
        return self.engine.journal.lease_events(topic, events) if events else None

    # -- ack / nack / extend ------------------------------------------------------------------

    def _held(
        self, topic: Topic, node: str, seqs: list[int], lease_ids: list[str] | None
    ) -> tuple[list[tuple[int, Lease]], list[int]]:
        q = _q(topic)
        q.expire(self.engine.clock.now_ms())
        held: list[tuple[int, Lease]] = []
        skipped: list[int] = []
        seen: set[int] = set()
        for i, seq in enumerate(seqs):
            lease = q.leases.get(seq)
            if (
                seq in seen
                or lease is None
                or lease.node != node
                or (lease_ids is not None and lease_ids[i] != lease.lease_id)
            ):
                skipped.append(seq)
                continue
            seen.add(seq)
            held.append((seq, lease))
        return held, skipped

    def ack(self, name: str, node: Any, seqs: Any, lease_ids: Any = None) -> SettleResult:
        """Complete held jobs: the ack is the permanent delete (durable iff the topic is)."""
        topic = self.queue_topic(name)
        node = self._node(node)
        ints, ids = self._seqs(seqs, lease_ids)
        held, skipped = self._held(topic, node, ints, ids)
        if held:
            self.engine.journal.check_writable()
        events = [LeaseEvent(LeaseEventKind.ACKED, seq, lease.lease_id) for seq, lease in held]
        for e in events:
            _q(topic).apply(e)
        self.engine.journal.lease_events(topic, events)
        deleted = self.engine.delete_seqs(topic, sorted(seq for seq, _ in held))
        return SettleResult(name, [seq for seq, _ in held], skipped, durable=deleted.durable)

    def nack(self, name: str, node: Any, seqs: Any, delay_ms: Any = 0, lease_ids: Any = None) -> SettleResult:
        """Release held jobs for reclaim now, or after ``delay_ms``."""
        topic = self.queue_topic(name)
        node = self._node(node)
        ints, ids = self._seqs(seqs, lease_ids)
        delay = to_int(0 if delay_ms is None else delay_ms, "delay_ms", high=MAX_DELAY_MS, clamp=True)
        held, skipped = self._held(topic, node, ints, ids)
        at = self.engine.clock.now_ms() + delay if delay else 0
        events = [LeaseEvent(LeaseEventKind.RELEASED, seq, lease.lease_id, at=at) for seq, lease in held]
        for e in events:
            _q(topic).apply(e)
        durable = self.engine.journal.lease_events(topic, events) if events else None
        return SettleResult(name, [seq for seq, _ in held], skipped, durable=durable)

    def extend(self, name: str, node: Any, seqs: Any, lease_ms: Any, lease_ids: Any = None) -> SettleResult:
        """Set held leases' deadlines to now + ``lease_ms`` (sets, not adds)."""
        topic = self.queue_topic(name)
        node = self._node(node)
        ints, ids = self._seqs(seqs, lease_ids)
        if lease_ms is None:
            raise InvalidRequest(
                "lease_ms is required: the new lease duration from now", {"field": "lease_ms"}
            )
        deadline = self.engine.clock.now_ms() + self._lease_ms(topic, lease_ms)
        held, skipped = self._held(topic, node, ints, ids)
        events = [
            LeaseEvent(LeaseEventKind.EXTENDED, seq, lease.lease_id, at=deadline) for seq, lease in held
        ]
        for e in events:
            _q(topic).apply(e)
        durable = self.engine.journal.lease_events(topic, events) if events else None
        done = [seq for seq, _ in held]
        return SettleResult(name, done, skipped, {str(seq): deadline for seq in done}, durable)

    # -- /work subscriptions ------------------------------------------------------------------

    def subscribe(
        self, name: str, node: Any, max_: Any = None, lease_ms: Any = None
    ) -> tuple[Topic, WorkSubscription]:
        topic = self.queue_topic(name)
        sub = WorkSubscription(self._node(node), _clamp_max(max_), self._lease_ms(topic, lease_ms))
        return topic, sub

    def release_subscription(self, topic: Topic, sub: WorkSubscription) -> int:
        """Release-on-disconnect: every lease pushed on this stream and still held goes back to
        the freelist now (``released`` events), not at lease expiry."""
        q: QueueState | None = topic.queue
        if q is None or self.engine.topic(topic.name) is not topic:
            return 0
        events = []
        for seq in sorted(sub.held):
            lease = q.leases.get(seq)
            if lease is not None and lease.holder is sub:
                events.append(LeaseEvent(LeaseEventKind.RELEASED, seq, lease.lease_id))
        sub.wake = None
        for e in events:
            q.apply(e)
        sub.held.clear()
        if events:
            with contextlib.suppress(NotReady):  # a read-only WAL: the leases expire instead
                self.engine.journal.lease_events(topic, events)
        return len(events)


def _q(topic: Topic) -> QueueState:
    assert topic.queue is not None, "queue operations resolve the topic with queue_topic()"
    return topic.queue


def _clamp_max(max_: Any) -> int:
    value = 1 if max_ is None else to_int(max_, "max", high=MAX_CLAIM, clamp=True)
    return value or 1


def _shares(wants: list[int], available: int) -> list[int]:
    """Split ``available`` jobs across claimers in proportion to what each wants (largest
    remainder, ties to the earlier arrival), never more than a claimer wants."""
    total = sum(wants)
    if available >= total:
        return list(wants)
    exact = [available * w / total for w in wants]
    shares = [int(x) for x in exact]
    order = sorted(range(len(wants)), key=lambda k: (-(exact[k] - shares[k]), k))
    for k in order[: available - sum(shares)]:
        shares[k] += 1
    return shares
