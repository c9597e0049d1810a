"""Queue operations: claim, ack, nack, extend, dead-lettering, coalescing cohorts and
/work subscriptions, over the lease projection in :mod:`leases`.

Every operation first resolves the topic — 404 ``topic_not_found`` if absent, 409
``not_a_queue`` for a log — and only then validates its own fields. Lease changes are
:class:`LeaseEvent` s applied to the projection and, with ``leases_durable``, journaled; an ack
is the permanent delete that record deletes use (durable iff the topic is), so acked jobs never come back.

Claim order: the reclaim freelist (expired leases, elapsed nack delays) first, then fresh jobs
past the claim cursor. With ``max_in_flight`` (an extension) a claim or refill takes at most the
room left under the cap; what frees room or jobs, or moves a due time earlier (an ack at the
cap, a nack, an extend that shortens a lease, a stream's release, a leased job deleted under a
cap) wakes the queue's /work streams.

A job about to be delivered for the ``(max_deliveries + 1)``-th time on a queue with a
``dead_letter`` topic is moved there instead (meta stamped with provenance) and
deleted from the queue. With ``claim_jitter_ms > 0`` claims (and /work refills) that arrive
within the window form a cohort served in one pass, the available jobs divided in proportion to
each claimer's ``max`` and dealt round-robin.

Time: the projection runs on the engine's steady clock (``Clock.steady_ms``), so a lease, a
nack's delay and a write's delay last what they say however the wall clock steps; a deadline is
reported, and a lease event journaled, as the wall instant it stands for at the time
(``Clock.wall_of``), which is what a restart reads back (docs/DECISIONS.md, "Clock steps").
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import listing
from .coldreads import ColdReads, preload, preload_now
from .config import TopicType
from .engine import Engine
from .errors import BatchTooLarge, InvalidRequest, NoDeadLetter, NotAQueue, NotReady, TopicsError
from .jsonvalues import U64_MAX, dumps, to_int
from .leases import Lease, LeaseEvent, LeaseEventKind, QueueState
from .records import NewRecords, Record
from .results import AckWait, LeaseInfo, LeasePage, QueueCounters, RecordsDeleted
from .storage.coldstore import ColdChunk
from .storage.formats import RecordBatch
from .topic import Topic

log = logging.getLogger("topics.queues")

MAX_CLAIM = 1000
LEASE_MS_RANGE = (100, 86_400_000)
MAX_DELAY_MS = 86_400_000
DEAD_LETTER_RETRY_MS = (1_000, 60_000)
"""Backoff of a failed dead-letter move: first retry after 1 s, doubling, at most every 60 s."""


@dataclass(slots=True)
class ClaimedJob:
    """A leased job: record ``index`` of ``batch`` (its stored wire bytes) and its lease."""

    batch: RecordBatch
    index: int
    lease: Lease
    shift: int = 0
    """Wall minus steady clock when leased: the reported ``deadline`` is ``lease.deadline +
    shift`` (the lease itself runs on the steady clock)."""

    @property
    def seq(self) -> int:
        return self.batch.first_seq + self.index

    @property
    def record(self) -> Record:
        return Record(self.batch, self.index)

    def encode(self, topic: str | None = None) -> bytes:
        """The claimed-job object: the record's fields plus the lease fields (and ``topic``
        first, for /work frames), sliced from the stored record bytes."""
        batch, i = self.batch, self.index
        start = batch.ends[i - 1] + 1 if i else 0
        fields = batch.blob[start + 1 : batch.ends[i] - 1]
        lease = self.lease
        prefix = b'{"topic":' + orjson.dumps(topic) + b"," if topic is not None else b"{"
        return _JOB % (prefix, fields, lease.lease_id.encode(), lease.deadline + self.shift, lease.deliveries)


_JOB = b'%s%s,"lease_id":"%s","deadline":%d,"deliveries":%d}'
"""A claimed-job object: its opening (``{``, or ``{"topic":"…",`` on /work), the record's
fields, then the lease fields."""


def encode_jobs(jobs: list[ClaimedJob]) -> bytes:
    """The ``,``-joined :meth:`ClaimedJob.encode` of every job (a claim response's array), in
    one pass."""
    out = []
    for job in jobs:
        batch, i, lease = job.batch, job.index, job.lease
        ends = batch.ends
        start = ends[i - 1] + 1 if i else 0
        fields = batch.blob[start + 1 : ends[i] - 1]
        out.append(
            _JOB % (b"{", fields, lease.lease_id.encode(), lease.deadline + job.shift, lease.deliveries)
        )
    return b",".join(out)


@dataclass(slots=True)
class Claimed:
    """What a claim (or a /work refill) leased, whether served at once or by a coalescing
    cohort: every caller awaits ``wait`` (when not ``None``) before handing ``jobs`` out, and
    ``jobs`` is final once ``wait`` is ``None`` or done without error.

    - Served at once (no coalescing window): ``jobs`` are leased and ``counters`` taken now;
      ``wait`` is the lease frame's durability (``leases_durable`` on an ``fsync`` queue).
    - ``coalesced`` (``claim_jitter_ms > 0``): ``jobs`` stays empty until the cohort's pass
      serves it (``ready`` is counted then); ``wait`` resolves once the pass ran and the lease
      frame is durable (with the fsync ms; 0.0 when nothing was logged), or fails
      ``not_a_queue`` / ``not_ready``. Cancelling ``wait`` before the pass leaves the claimer
      out of it.
    """

    topic: str
    jobs: list[ClaimedJob]
    counters: QueueCounters = field(default_factory=lambda: QueueCounters(0, 0, 0))
    """The queue's counters after this claim (``ready``: claimable jobs still waiting)."""
    wait: AckWait = None
    coalesced: bool = False


@dataclass(slots=True)
class LeaseChange:
    """ack / nack / extend: what was done and what was skipped."""

    topic: str
    done: list[int]
    skipped: list[int]
    deadlines: dict[str, int] = field(default_factory=dict)
    wait: AckWait = None


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
    """A claimer being served: its jobs go to ``claimed.jobs``; ``future`` is a coalesced
    claim's ``claimed.wait`` (``None`` when served at once)."""

    node: str
    max: int
    lease_ms: int
    holder: WorkSubscription | None
    claimed: Claimed
    future: asyncio.Future[float] | None = None


@dataclass(slots=True)
class JobStats:
    """What happened to jobs since the process started, over every queue (the metrics'
    ``topics_jobs_*_total``): one add per operation, not per job."""

    claimed: int = 0
    """Leased by a claim or a ``/work`` refill (a re-delivery counts again)."""
    acked: int = 0
    nacked: int = 0
    dead_lettered: int = 0
    """Moved to a dead-letter topic: past ``max_deliveries``, or explicitly."""


class Queues:
    """Queue operations, composed over an :class:`Engine` (the engine knows nothing of them)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._cohorts: dict[int, list[_Waiting]] = {}
        self._retries: dict[tuple[int, int], int] = {}
        self._loading: set[asyncio.Task[None]] = set()
        """Cohort passes waiting for their cold jobs to load."""
        """(topic id, seq) -> backoff ms of a held-back job's next dead-letter move attempt."""
        self._lease_prefix = f"lease_{secrets.token_hex(4)}"
        self._lease_counter = 1
        self.stats = JobStats()

    def _lease_ids(self, n: int) -> list[str]:
        """``n`` new ``lease_<hex>`` ids: a random per-process prefix and a counter — unique
        across leases and restarts without paying for a random draw per job."""
        first, self._lease_counter = self._lease_counter, self._lease_counter + n
        prefix = self._lease_prefix
        return [f"{prefix}{i:010x}" for i in range(first, first + n)]

    # -- lookup and field checks -------------------------------------------------------------

    def queue_topic(self, name: str) -> Topic:
        """The queue called ``name``: 404 ``topic_not_found`` / 409 ``not_a_queue`` otherwise.
        Every queue endpoint calls this before judging its own fields."""
        topic = self.engine.get(name)
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
        if len(node) > limit:
            raise InvalidRequest(
                f"node is {len(node)} characters long; at most {limit} are allowed",
                {"field": "node", "max_length": limit},
            )
        return node

    def _lease_ms(self, topic: Topic, lease_ms: int | None, field_name: str = "lease_ms") -> int:
        if lease_ms is None:
            return topic.config.lease_ms
        return to_int(lease_ms, field_name, low=LEASE_MS_RANGE[0], high=LEASE_MS_RANGE[1], clamp=True)

    def _seqs(self, seqs: list[int], lease_ids: list[str] | None) -> tuple[list[int], list[str] | None]:
        """``seqs`` and ``lease_ids`` checked (every value, whatever its declared type: direct
        callers may pass anything)."""
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
        if not isinstance(lease_ids, list) or not all(isinstance(x, str) for x in lease_ids):
            raise InvalidRequest("lease_ids must be an array of strings", {"field": "lease_ids"})
        return ints, fence_tokens(ints, lease_ids)

    def counters(self, topic: Topic) -> QueueCounters:
        """The counters of a queue (lazy lease expiry applied first)."""
        counters = self.engine.queue_counters(topic)
        assert counters is not None, "queue operations resolve the topic with queue_topic()"
        return counters

    def leases(self, name: str, node: str | None, page_size: int, after: int) -> LeasePage:
        """One page of the queue's active leases (expired ones are not), ascending by seq:
        those of ``node`` (any node when ``None``) with seqs above ``after``."""
        topic = self.queue_topic(name)
        q = topic.queue
        assert q is not None
        clock = self.engine.clock
        q.expire(clock.steady_ms())
        size = listing.page_size(page_size)
        held = q.leases
        seqs = (seq for seq, lease in held.items() if seq > after and (node is None or lease.node == node))
        chosen = heapq.nsmallest(size + 1, seqs)
        more = len(chosen) > size
        shift = clock.wall_of(0)
        page = [_lease_info(seq, held[seq], shift) for seq in chosen[:size]]
        return LeasePage(page, page[-1].seq if more else None)

    # -- claim --------------------------------------------------------------------------------

    def claim(self, name: str, node: str, max_: int | None = None, lease_ms: int | None = None) -> Claimed:
        """Lease up to ``max`` jobs to ``node``: now (greedy), or — with a coalescing window —
        at the cohort's pass (see :class:`Claimed`)."""
        topic = self.queue_topic(name)
        node, max_jobs, lease = self._node(node), _clamp_max(max_), self._lease_ms(topic, lease_ms)
        return self._lease(topic, _Waiting(node, max_jobs, lease, None, Claimed(name, [])))

    def cold_chunks(self, name: str, max_: int | None = None) -> list[ColdChunk]:
        """The cold record chunks (not in memory) that a claim of ``max_`` jobs on queue
        ``name`` would read: a caller on the event loop loads them first
        (``coldreads.preload``), so the claim itself does not wait for a disk. Changes
        nothing."""
        topic = self.queue_topic(name)
        if topic.config.claim_jitter_ms > 0:
            return []  # a coalescing queue loads at its cohort's pass (_run_cohort)
        return self._cold_for(topic, _clamp_max(max_))

    def _cold_for(self, topic: Topic, n: int) -> list[ColdChunk]:
        """The cold chunks not in memory holding the next ``n`` jobs a pick takes (expired
        leases first freed, as the pick frees them). A poison job among them is dead-lettered
        and does not count, so a pick may read a little further: that read is made on the
        calling thread (``topics_cold_reads_blocking_total``)."""
        if not topic.log.cold_chunks:
            return []  # everything in memory: the common case of a queue keeping up
        q = _q(topic)
        q.expire(self.engine.clock.steady_ms())
        chunks = topic.log.cold_at(q.peek_reclaimable(n))
        topic.pass_delayed()
        return chunks + topic.log.cold_after(q.cursor, n)

    def claim_for(self, topic: Topic, sub: WorkSubscription, want: int) -> Claimed:
        """A /work refill: lease up to ``want`` jobs to the subscription (in the cohort when
        the queue coalesces). Like a claim, jobs are handed out once their leases are durable."""
        return self._lease(topic, _Waiting(sub.node, want, sub.lease_ms, sub, Claimed(topic.name, [])))

    def _lease(self, topic: Topic, waiting: _Waiting) -> Claimed:
        """Serve ``waiting`` now, or join the queue's cohort when it coalesces."""
        claimed = waiting.claimed
        if topic.config.claim_jitter_ms > 0:
            self._join_cohort(topic, waiting)
            return claimed
        self._serve(topic, [waiting])
        if waiting.holder is None:  # a claim answers with the counters; a /work refill does not
            claimed.counters = self.counters(topic)
        claimed.wait = self._log_claims(topic, claimed.jobs)
        return claimed

    def _join_cohort(self, topic: Topic, waiting: _Waiting) -> None:
        """Make ``waiting`` a coalesced claim in the cohort of ``topic``'s current window (the
        first claim of a window opens it and schedules its pass)."""
        waiting.future = asyncio.get_running_loop().create_future()
        waiting.claimed.wait, waiting.claimed.coalesced = waiting.future, True
        cohort = self._cohorts.get(topic.id)
        if cohort is None:
            cohort = self._cohorts[topic.id] = []
            self.engine.clock.call_later(topic.config.claim_jitter_ms, lambda: self._run_cohort(topic))
        cohort.append(waiting)

    def _run_cohort(self, topic: Topic) -> None:
        """The coordinator pass: one critical section serving every claim of the window. Each
        claimer gets its jobs once their lease frame is durable (if it is logged at all)."""
        cohort = self._cohorts.pop(topic.id, [])
        live = [w for w in cohort if w.future is not None and not w.future.done()]
        try:
            chunks = self._cold_for(topic, sum(w.max for w in live)) if self._is_queue(topic) else []
            reads, missing = preload_now(chunks)
        except Exception as err:  # noqa: BLE001 — e.g. a corrupt segment: the claims fail
            _fail(live, err)
            return
        if missing:
            task = asyncio.ensure_future(self._serve_cohort_after_loading(topic, live, reads, missing))
            self._loading.add(task)
            task.add_done_callback(self._loading.discard)
            return
        try:
            self._serve_cohort(topic, live)
        finally:
            reads.release()

    def _is_queue(self, topic: Topic) -> bool:
        return self.engine.is_current(topic) and topic.queue is not None

    async def _serve_cohort_after_loading(
        self, topic: Topic, live: list[_Waiting], reads: ColdReads, missing: list[ColdChunk]
    ) -> None:
        """A cohort whose jobs are cold and not in the page cache: their chunks are loaded (off
        the event loop) and pinned with the rest first, so the pass never waits for a disk."""
        try:
            await preload(missing, reads)
        except Exception as err:  # noqa: BLE001 — e.g. a lost segment file: the claims fail
            _fail(live, err)
            return
        try:
            self._serve_cohort(topic, [w for w in live if w.future is not None and not w.future.done()])
        finally:
            reads.release()

    def _serve_cohort(self, topic: Topic, live: list[_Waiting]) -> None:
        """Serve a cohort's claims in one pass (or fail them: the topic is no longer a queue)."""
        if not self._is_queue(topic):
            for w in live:
                assert w.future is not None
                w.future.set_exception(
                    NotAQueue(f'topic "{topic.name}" is no longer a queue', {"topic": topic.name})
                )
            return
        self._serve(topic, live)
        claims = any(w.holder is None for w in live)  # /work refills take no counters
        counters = self.counters(topic) if claims else QueueCounters(0, 0, 0)
        persistence = self.engine.persistence
        mark = persistence.mark()
        try:
            waits = [self._log_claims(topic, w.claimed.jobs) for w in live]
            # the leases are in the page cache before any claimer hears of them; a failed write
            # (or a WAL already read-only) refuses every claim rather than acking lost leases
            persistence.write_queued(mark)
        except Exception as err:  # noqa: BLE001 — e.g. the read-only 503: no claim is left waiting
            _fail(live, err)
            return
        for w, wait in zip(live, waits, strict=True):
            assert w.future is not None
            w.claimed.counters = counters
            _resolve_after(w.future, wait)

    def _serve(self, topic: Topic, claimers: list[_Waiting]) -> None:
        """Pick jobs for everyone (dead-lettering on the way) and divide them: each claimer's
        share is proportional to its ``max`` (largest remainder), dealt round-robin."""
        clock = self.engine.clock
        now = clock.steady_ms()
        topic.expire(clock.now_ms())
        q = _q(topic)
        q.expire(now)
        shift = clock.wall_of(now) - now
        wanted = sum(w.max for w in claimers)
        cap = topic.config.max_in_flight
        if cap:
            wanted = min(wanted, max(0, cap - len(q.leases)))
        picked = self._pick(topic, q, wanted, now)
        self.stats.claimed += len(picked)
        if len(claimers) == 1:
            dealt = [picked]
        else:
            shares = _shares([w.max for w in claimers], len(picked))
            dealt = [[] for _ in claimers]
            i = 0
            while i < len(picked):
                for k in range(len(claimers)):
                    if len(dealt[k]) < shares[k] and i < len(picked):
                        dealt[k].append(picked[i])
                        i += 1
        for w, jobs in zip(claimers, dealt, strict=True):
            jobs.sort(key=_job_seq)
            seqs = [batch.first_seq + i for batch, i, _ in jobs]
            leases = q.claim_many(
                seqs, self._lease_ids(len(jobs)), w.node, now + w.lease_ms, [j[2] for j in jobs]
            )
            w.claimed.jobs.extend(
                ClaimedJob(batch, i, lease, shift) for (batch, i, _), lease in zip(jobs, leases, strict=True)
            )
            if w.holder is not None:
                for lease in leases:
                    lease.holder = w.holder
                w.holder.held.update(seqs)

    def _pick(self, topic: Topic, q: QueueState, n: int, now: int) -> list[_Picked]:
        """Up to ``n`` claimable jobs with their new delivery counts: reclaimed first, then
        fresh past the claim cursor (delayed writes not yet due are passed over). Jobs past
        ``max_deliveries`` are dead-lettered (or held back) instead."""
        picked: list[_Picked] = []
        deliveries = q.deliveries
        while len(picked) < n:
            seq = q.pop_reclaimable()
            if seq is None:
                break
            at = topic.locate(seq)
            if at is not None:
                self._take(topic, picked, at[0], at[1], deliveries.get(seq, 0) + 1)
        while len(picked) < n:
            topic.pass_delayed()  # a run of delayed writes is skipped without reading them
            fresh = topic.live_after(q.cursor, n - len(picked))
            if not fresh:
                break
            delayed = q.delayed
            if not delayed and not _may_be_poison(topic):  # every one is taken: in one pass
                picked.extend((batch, i, deliveries.get(batch.first_seq + i, 0) + 1) for batch, i in fresh)
                last_batch, last_i = fresh[-1]
                q.cursor = last_batch.first_seq + last_i
                continue
            for batch, i in fresh:
                seq = batch.first_seq + i
                q.cursor = seq
                if delayed and seq in delayed:
                    continue  # a delayed write: passed over, on the freelist once due
                self._take(topic, picked, batch, i, deliveries.get(seq, 0) + 1)
        return picked

    def _take(self, topic: Topic, picked: list[_Picked], batch: RecordBatch, i: int, deliveries: int) -> None:
        if _is_poison(topic, deliveries):
            self._dead_letter(topic, Record(batch, i), deliveries - 1)
        else:
            picked.append((batch, i, deliveries))

    # -- dead-lettering -----------------------------------------------------------------------

    def _dead_letter(self, topic: Topic, record: Record, deliveries: int) -> None:
        """Move a poison job to the dead-letter topic. If the dead-letter topic refuses it
        (full, not creatable, read-only WAL), the job is held back — never re-delivered, never
        dropped — and the move is retried with backoff (docs/DECISIONS.md, "Dead-letter move failures")."""
        q = _q(topic)
        try:
            self._move_to_dead_letter(topic, record, deliveries)
        except TopicsError as err:
            q.hold_back(record.seq)
            key = (topic.id, record.seq)
            delay = self._retries.get(key, DEAD_LETTER_RETRY_MS[0])
            self._retries[key] = min(delay * 2, DEAD_LETTER_RETRY_MS[1])
            log.warning(
                "dead-letter move of %s seq %d to %s failed (%s: %s); retrying in %d ms",
                topic.name,
                record.seq,
                topic.config.dead_letter,
                err.code,
                err.message,
                delay,
            )
            self.engine.clock.call_later(delay, lambda: self._retry_dead_letter(topic, record.seq))
            return
        self._retries.pop((topic.id, record.seq), None)

    def _move_to_dead_letter(self, topic: Topic, record: Record, deliveries: int) -> None:
        moved = _dead_letters(topic, [(record, deliveries)], None)
        self.engine.append_prepared(topic.config.dead_letter or "", moved)
        self.engine.delete_seqs(topic, [record.seq])
        self._count_dead_lettered(topic, record.seq, 1)

    def _retry_dead_letter(self, topic: Topic, seq: int) -> None:
        """A held-back job's retry timer: move it now if it is still held back and poison;
        release it to the freelist if the queue's config no longer makes it poison."""
        q = topic.queue
        record = topic.record(seq)
        if q is None or not self.engine.is_current(topic) or seq not in q.held_back or record is None:
            self._retries.pop((topic.id, seq), None)
            return
        deliveries = q.deliveries.get(seq, 0)
        if not _is_poison(topic, deliveries + 1):
            self._retries.pop((topic.id, seq), None)
            q.release_held(seq)
            return
        q.held_back.discard(seq)
        self._dead_letter(topic, record, deliveries)

    def _log_claims(self, topic: Topic, jobs: list[ClaimedJob]) -> AckWait:
        if not jobs or not self.engine.persistence.logs_leases(topic):
            return None
        events = [
            LeaseEvent(
                LeaseEventKind.CLAIMED,
                j.seq,
                j.lease.lease_id,
                j.lease.node,
                j.lease.deadline,
                j.lease.deliveries,
            )
            for j in jobs
        ]
        return self._journal(topic, events)

    # -- ack / nack / extend ------------------------------------------------------------------

    def _held(
        self, topic: Topic, node: str, seqs: list[int], lease_ids: list[str] | None
    ) -> tuple[list[tuple[int, Lease]], list[int]]:
        q = _q(topic)
        q.expire(self.engine.clock.steady_ms())
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

    def ack(self, name: str, node: str, seqs: list[int], lease_ids: list[str] | None = None) -> LeaseChange:
        """Complete held jobs: the ack is the permanent delete (durable iff the topic is)."""
        topic = self.queue_topic(name)
        node = self._node(node)
        ints, ids = self._seqs(seqs, lease_ids)
        held, skipped = self._held(topic, node, ints, ids)
        if not held:
            return LeaseChange(name, [], skipped)
        self.engine.persistence.check_writable()
        cap = topic.config.max_in_flight
        was_full = bool(cap) and len(_q(topic).leases) >= cap
        done = [seq for seq, _ in held]
        deleted = self._complete(topic, held)
        self.stats.acked += len(done)
        if was_full:
            self._freed(topic)  # room under the cap
        return LeaseChange(name, done, skipped, wait=deleted.wait)

    def _complete(self, topic: Topic, held: list[tuple[int, Lease]]) -> RecordsDeleted:
        """End the ``held`` leases (journaled as acks with ``leases_durable``) and delete their
        jobs: an ack, or the second half of a dead-letter move."""
        _q(topic).end_many([(seq, lease.lease_id) for seq, lease in held])
        persistence = self.engine.persistence
        if persistence.logs_leases(topic):
            self._journal(
                topic, [LeaseEvent(LeaseEventKind.ACKED, seq, lease.lease_id) for seq, lease in held]
            )
        return self.engine.delete_seqs(topic, sorted(seq for seq, _ in held))

    def _count_dead_lettered(self, topic: Topic, last_seq: int, n: int) -> None:
        """``n`` more jobs were moved to the dead-letter topic: the queue's ``dead_lettered``
        total, journaled always (the event carries the new total: replay-safe)."""
        q = _q(topic)
        self.stats.dead_lettered += n
        event = LeaseEvent(LeaseEventKind.DEAD_LETTERED, last_seq, "", deliveries=q.dead_lettered + n)
        q.apply(event)
        self._journal(topic, [event], always=True)

    def dead_letter(
        self,
        name: str,
        node: str,
        seqs: list[int],
        lease_ids: list[str] | None = None,
        reason: str | None = None,
    ) -> LeaseChange:
        """Move held jobs to the queue's dead-letter topic now, whatever their delivery count
        (a permanent failure): one append of them all to the dead-letter topic (with the usual
        provenance meta and ``$dead_letter_reason``), then their delete here — if the append is
        refused, nothing moved and every lease stands. Their records must be in memory (a
        caller on the event loop pins their cold chunks first: :meth:`cold_chunks_of`)."""
        topic = self.queue_topic(name)
        node = self._node(node)
        ints, ids = self._seqs(seqs, lease_ids)
        if reason is not None and not isinstance(reason, str):
            raise InvalidRequest("reason must be a string", {"field": "reason"})
        dead_letter = topic.config.dead_letter
        if not dead_letter:
            raise NoDeadLetter(
                f'queue "{name}" has no dead_letter topic; set one with PUT /v0/topics/{name}',
                {"topic": name},
            )
        held, skipped = self._held(topic, node, ints, ids)
        if not held:
            return LeaseChange(name, [], skipped)
        held.sort(key=lambda pair: pair[0])  # into the dead-letter topic in seq order
        self.engine.persistence.check_writable()
        records = []
        for seq, lease in held:
            at = topic.locate(seq)
            assert at is not None, "a leased job is live"
            records.append((Record(at[0], at[1]), lease.deliveries))
        moved = self.engine.append_prepared(dead_letter, _dead_letters(topic, records, reason))
        done = [seq for seq, _ in held]
        deleted = self._complete(topic, held)
        self._count_dead_lettered(topic, done[-1], len(done))
        self._freed(topic)  # room under a cap, and the jobs left: streams look again
        return LeaseChange(name, done, skipped, wait=deleted.wait or moved.wait)

    def cold_chunks_of(self, name: str, seqs: list[Any]) -> list[ColdChunk]:
        """The cold chunks not in memory holding these live jobs (for :meth:`dead_letter`)."""
        topic = self.queue_topic(name)
        if not topic.config.dead_letter:
            return []  # refused before anything is read (dead_letter answers no_dead_letter)
        ints = [s for s in seqs if isinstance(s, int) and not isinstance(s, bool)]
        return topic.log.cold_at(ints)

    def nack(
        self,
        name: str,
        node: str,
        seqs: list[int],
        delay_ms: int | None = 0,
        lease_ids: list[str] | None = None,
    ) -> LeaseChange:
        """Release held jobs for reclaim now, or after ``delay_ms`` (``None``: 0)."""
        topic = self.queue_topic(name)
        node = self._node(node)
        ints, ids = self._seqs(seqs, lease_ids)
        delay = to_int(0 if delay_ms is None else delay_ms, "delay_ms", high=MAX_DELAY_MS, clamp=True)
        held, skipped = self._held(topic, node, ints, ids)
        at = self.engine.clock.steady_ms() + delay if delay else 0
        events = [LeaseEvent(LeaseEventKind.RELEASED, seq, lease.lease_id, at=at) for seq, lease in held]
        for e in events:
            _q(topic).apply(e)
        wait = self._journal(topic, events) if events else None
        self.stats.nacked += len(events)
        if events:  # jobs claimable now or at a new due time (streams re-arm their timers), room
            self._freed(topic)
        return LeaseChange(name, [seq for seq, _ in held], skipped, wait=wait)

    def extend(
        self, name: str, node: str, seqs: list[int], lease_ms: int | None, lease_ids: list[str] | None = None
    ) -> LeaseChange:
        """Set held leases' deadlines to now + ``lease_ms`` (sets, not adds; ``None`` is
        ``invalid_request``: it is required)."""
        topic = self.queue_topic(name)
        node = self._node(node)
        ints, ids = self._seqs(seqs, lease_ids)
        if lease_ms is None:
            raise InvalidRequest(
                "lease_ms is required: the new lease duration from now", {"field": "lease_ms"}
            )
        clock = self.engine.clock
        deadline = clock.steady_ms() + self._lease_ms(topic, lease_ms)
        held, skipped = self._held(topic, node, ints, ids)
        events = [
            LeaseEvent(LeaseEventKind.EXTENDED, seq, lease.lease_id, at=deadline) for seq, lease in held
        ]
        shortened = any(deadline < lease.deadline for _, lease in held)
        for e in events:
            _q(topic).apply(e)
        wait = self._journal(topic, events) if events else None
        if shortened:
            self._freed(topic)  # a lease now expires sooner: streams re-arm their timers
        done = [seq for seq, _ in held]
        reported = clock.wall_of(deadline)
        return LeaseChange(name, done, skipped, {str(seq): reported for seq in done}, wait)

    # -- /work subscriptions ------------------------------------------------------------------

    def subscribe(
        self, name: str, node: str, max_: int | None = None, lease_ms: int | None = None
    ) -> tuple[Topic, WorkSubscription]:
        topic = self.queue_topic(name)
        sub = WorkSubscription(self._node(node), _clamp_max(max_), self._lease_ms(topic, lease_ms))
        return topic, sub

    def next_push_at(self, topic: Topic, sub: WorkSubscription) -> int | None:
        """When (steady clock ms) a /work stream must look again for a job to push — lease expiry is
        lazy, with no timers: with free depth, when any lease of the queue expires or a delayed
        job comes due (either frees a job); when full, just after the earliest lease it holds
        expires. ``None``: nothing pending; only an append or a change to its jobs frees one.

        First drops from ``sub.held`` the seqs no longer leased (defensive: only those count)."""
        q = topic.queue
        if q is None:
            return None
        sub.held &= q.leases.keys()
        if len(sub.held) < sub.max:
            return q.next_change_at()
        return min(q.leases[seq].deadline for seq in sub.held) + 1

    def release_subscription(self, topic: Topic, sub: WorkSubscription) -> int:
        """Release-on-disconnect: every lease pushed on this stream and still held goes back to
        the freelist now (``released`` events), not at lease expiry."""
        q: QueueState | None = topic.queue
        if q is None or not self.engine.is_current(topic):
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
                self._journal(topic, events)
            self._freed(topic)
        return len(events)

    def _journal(self, topic: Topic, events: list[LeaseEvent], always: bool = False) -> AckWait:
        """Journal ``events`` (with ``leases_durable``, or ``always``) with their times as wall
        instants: a deadline or due time on the steady clock is written as the wall instant it
        stands for now, which a restart (its steady clock starting at the wall clock) reads as is."""
        shift = self.engine.clock.wall_of(0)
        if shift:
            events = [
                LeaseEvent(
                    e.kind, e.seq, e.lease_id, e.node, e.at + shift if e.at > 0 else e.at, e.deliveries
                )
                for e in events
            ]
        return self.engine.persistence.lease_events(topic, events, always)

    def _freed(self, topic: Topic) -> None:
        """Jobs became claimable, or room under ``max_in_flight``: wake the queue's /work
        streams (hub listeners; a long-poll on the topic wakes too, finds nothing new and
        waits on)."""
        self.engine.hub.notify(topic.name)


_Picked = tuple[RecordBatch, int, int]
"""A job picked for a claim: ``(batch, ordinal, deliveries)``."""


def _job_seq(job: _Picked) -> int:
    return job[0].first_seq + job[1]


def _q(topic: Topic) -> QueueState:
    assert topic.queue is not None, "queue operations resolve the topic with queue_topic()"
    return topic.queue


def _may_be_poison(topic: Topic) -> bool:
    """Whether a job of ``topic`` can ever be poison (``max_deliveries`` and a dead-letter
    topic set)."""
    cfg = topic.config
    return bool(cfg.max_deliveries and cfg.dead_letter)


def _is_poison(topic: Topic, deliveries: int) -> bool:
    """Delivering the job a ``deliveries``-th time would exceed ``max_deliveries`` on a queue
    with a dead-letter topic."""
    cfg = topic.config
    return bool(cfg.max_deliveries and cfg.dead_letter and deliveries > cfg.max_deliveries)


def _resolve_after(future: asyncio.Future[float], wait: AckWait) -> None:
    """Resolve a cohort claimer's ``wait`` once its lease frame is durable: with the fsync ms
    (0.0 when nothing was logged), or the frame's failure."""
    if wait is None:
        future.set_result(0.0)
        return

    def done(w: asyncio.Future[float]) -> None:
        if future.done():
            return
        error = None if w.cancelled() else w.exception()
        if w.cancelled() or error is not None:
            future.set_exception(error or NotReady("the lease log could not be written", None))
        else:
            future.set_result(w.result())

    wait.add_done_callback(done)


NO_TOKEN = ""
"""The fence of a seq that ``lease_ids`` gave no token: it matches no lease ("lease_" + hex)."""


def fence_tokens(seqs: list[int], lease_ids: list[str]) -> list[str]:
    """One fence token per seq, in order (docs/DECISIONS.md, "Lease fences"): ``lease_ids[i]``
    fences ``seqs[i]``; a seq past the end of ``lease_ids`` has no token, which matches no lease,
    so it is skipped (a fenced call never settles a seq unfenced); tokens past the end of
    ``seqs`` fence nothing."""
    if len(lease_ids) == len(seqs):
        return lease_ids
    return lease_ids[: len(seqs)] + [NO_TOKEN] * (len(seqs) - len(lease_ids))


def _clamp_max(max_: int | None) -> int:
    """``max`` jobs: ``None`` or 0 means 1; clamped to :data:`MAX_CLAIM`."""
    value = 1 if max_ is None else to_int(max_, "max", high=MAX_CLAIM, clamp=True)
    return value or 1


def _fail(claimers: list[_Waiting], err: BaseException) -> None:
    """Fail every claim of a cohort still waiting (its pass could not run)."""
    for w in claimers:
        if w.future is not None and not w.future.done():
            w.future.set_exception(err)


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


def _lease_info(seq: int, lease: Lease, shift: int) -> LeaseInfo:
    """A lease as listed: its deadline as a wall instant (``shift``: wall minus steady now)."""
    return LeaseInfo(seq, lease.node, lease.lease_id, lease.deadline + shift, lease.deliveries)


def _dead_letters(topic: Topic, records: list[tuple[Record, int]], reason: str | None) -> NewRecords:
    """``records`` (with their delivery counts) as dead-letter topic records: data, tag and node
    as they were, meta stamped with their provenance (``$dead_letter_from``, …) and, for an explicit move,
    ``$dead_letter_reason``."""
    datas: list[bytes] = []
    tags: list[str | None] = []
    nodes: list[str | None] = []
    metas: list[bytes | None] = []
    for record, deliveries in records:
        meta = orjson.loads(record.meta_json) if record.meta_json is not None else {}
        meta.update(
            {
                "$dead_letter_from": topic.name,
                "$dead_letter_deliveries": deliveries,
                "$dead_letter_src_seq": record.seq,
            }
        )
        meta.pop("$dead_letter_reason", None)  # a redriven job's old reason
        if reason is not None:
            meta["$dead_letter_reason"] = reason
        datas.append(record.data_json)
        tags.append(record.tag)
        nodes.append(record.node)
        metas.append(dumps(meta))
    return NewRecords(
        datas,
        tags if any(t is not None for t in tags) else None,
        nodes if any(n is not None for n in nodes) else None,
        metas,
    )
