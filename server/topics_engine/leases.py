"""The lease projection of one queue: who holds which job, delivery counters, the
reclaim freelist and delayed retries — the materialized state of the queue's leases log.

Every change is a :class:`LeaseEvent` applied by :meth:`QueueState.apply`, on the live path and
on replay alike (``leases_durable: true`` journals the events; otherwise a restart starts from
an empty projection and every job is claimable again — the self-healing default).

Times here (deadlines, due times) are on the engine's steady clock (``Clock.steady_ms``: it
never steps); snapshots and journaled events carry them as wall instants (``image``'s
``shift``), which a restart reads back on its own steady clock, started at the wall clock.
Expiry is lazy, with no per-job timers: a min-heap of ``(deadline, seq, lease_id)`` is popped
whenever the queue is touched; a popped entry whose lease was since extended, released or
acked is stale and ignored. An expired lease puts its seq on the reclaim freelist, which claims
drain before fresh jobs. Delayed nacks and delayed writes (jobs appended with ``delay_ms``:
:meth:`QueueState.delay`) wait in a second heap until due; a delayed write that comes due
above the claim cursor is simply fresh again, one at or below it (claims passed it over) goes
on the freelist. A poison job whose move
to the dead-letter topic failed is *held back* (docs/DECISIONS.md, "Dead-letter move failures"):
neither claimable nor in flight until the move is retried. Invariants (with the jobs log's live
records): a seq is in at most one of ``leases``, ``delayed``, ``held_back`` and the freelist;
every seq there is a live job; ``cursor`` is the highest seq ever handed out fresh or passed
over as delayed (never above a job that is neither delayed nor handed out); ``_holding``
counts ``leases`` by node, and ``_ranked`` orders it.
"""

from __future__ import annotations

import bisect
import heapq
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from .storage.formats import QueueImage


class LeaseEventKind(StrEnum):
    CLAIMED = "claimed"
    RELEASED = "released"
    EXTENDED = "extended"
    ACKED = "acked"
    DEAD_LETTERED = "dead_lettered"
    """Not a lease change: a move to the dead-letter topic; ``deliveries`` carries the queue's
    new ``dead_lettered`` total (always journaled)."""


@dataclass(slots=True)
class LeaseEvent:
    kind: LeaseEventKind
    seq: int
    lease_id: str
    node: str = ""
    at: int = 0
    """CLAIMED/EXTENDED: the deadline. RELEASED: when the job is claimable again."""
    deliveries: int = 0

    def to_row(self) -> list[Any]:
        return [self.kind.value, self.seq, self.lease_id, self.node, self.at, self.deliveries]

    @classmethod
    def from_row(cls, row: list[Any]) -> LeaseEvent:
        kind, seq, lease_id, node, at, deliveries = row
        return cls(LeaseEventKind(kind), seq, lease_id, node, at, deliveries)


@dataclass(slots=True)
class Lease:
    node: str
    lease_id: str
    deadline: int
    deliveries: int
    holder: LeaseHolder | None = None
    """The /work subscription this lease was pushed on (release-on-disconnect), if any."""


class LeaseHolder(Protocol):
    def lease_ended(self, seq: int) -> None:
        """One of this holder's leases stopped (acked, released, expired, job gone)."""


@dataclass
class QueueState:
    leases: dict[int, Lease] = field(default_factory=dict)
    deliveries: dict[int, int] = field(default_factory=dict)
    delayed: dict[int, int] = field(default_factory=dict)
    held_back: set[int] = field(default_factory=set)
    """Poison jobs whose dead-letter move failed; the queue retries the move (not claimable)."""
    dead_letter_failures: int = 0
    """Failed dead-letter move attempts over this topic instance's life (for operators)."""
    cursor: int = 0
    dead_lettered: int = 0
    _expiry: list[tuple[int, int, str]] = field(default_factory=list)
    _due: list[tuple[int, int]] = field(default_factory=list)
    _freelist: deque[int] = field(default_factory=deque)
    _free: set[int] = field(default_factory=set)
    _free_heap: list[int] = field(default_factory=list)
    """The freelist's seqs as a min-heap, for the oldest reclaimable job: entries no longer in
    ``_free`` are dropped lazily, and the heap is rebuilt from ``_free`` when they are most of
    it (so it stays within about twice the freelist, however jobs churn)."""
    _holding: dict[str, int] = field(default_factory=dict)
    """Leases held per node (``{node: n}``, no zeros): the sum is ``len(leases)``."""
    _ranked: list[tuple[int, str]] = field(default_factory=list)
    """``(-n, node)`` for every node of ``_holding``, sorted: the busiest holders first, ties
    by node (kept as counts change, so listing the top ones never sorts them all)."""
    lease_dropped: Callable[[], None] | None = None
    """Called when a lease ends because its job left the log (deleted, evicted, expired by
    TTL): the engine wakes the queue's streams, as that may make room under a cap."""

    # -- the projection ----------------------------------------------------------------------
    #
    # One method per change; :meth:`apply` maps a journaled event onto them (replay), the live
    # path calls them directly (no event object unless the change is journaled).

    def apply(self, e: LeaseEvent) -> None:
        kind = e.kind
        if kind is LeaseEventKind.CLAIMED:
            self.claim(e.seq, e.lease_id, e.node, e.at, e.deliveries)
        elif kind is LeaseEventKind.ACKED:
            self.end(e.seq, e.lease_id)
        elif kind is LeaseEventKind.RELEASED:
            self.release(e.seq, e.lease_id, e.at)
        elif kind is LeaseEventKind.EXTENDED:
            self.extend(e.seq, e.lease_id, e.at)
        else:  # DEAD_LETTERED carries the new total: replay-safe
            self.dead_lettered = max(self.dead_lettered, e.deliveries)

    def claim(self, seq: int, lease_id: str, node: str, deadline: int, deliveries: int) -> Lease:
        """Lease job ``seq`` (fresh, reclaimed or delayed) to ``node`` until ``deadline``."""
        return self.claim_many([seq], [lease_id], node, deadline, [deliveries])[0]

    def claim_many(
        self, seqs: list[int], lease_ids: list[str], node: str, deadline: int, deliveries: list[int]
    ) -> list[Lease]:
        """:meth:`claim` for several jobs leased to one claimer at once (one pass)."""
        free, delayed, leases, counts, expiry = (
            self._free,
            self.delayed,
            self.leases,
            self.deliveries,
            self._expiry,
        )
        out = []
        replaced: list[Lease] = []
        push = heapq.heappush
        for seq, lease_id, n in zip(seqs, lease_ids, deliveries, strict=True):
            if free:
                free.discard(seq)  # its freelist entry is skipped lazily
            if delayed:
                delayed.pop(seq, None)
            old = leases.get(seq)
            if old is not None:  # a replayed claim over a lease not ended in the log
                replaced.append(old)
            lease = leases[seq] = Lease(node, lease_id, deadline, n)
            counts[seq] = n
            push(expiry, (deadline, seq, lease_id))
            out.append(lease)
        if seqs:
            self.cursor = max(self.cursor, *seqs)
            self._hold(node, len(seqs))
            for old in replaced:
                self._hold(old.node, -1)
        return out

    def end(self, seq: int, lease_id: str) -> Lease | None:
        """Lease ``lease_id`` on ``seq`` ends (acked): the lease, or ``None`` if it was not
        the current one."""
        lease = self.leases.get(seq)
        if lease is None or lease.lease_id != lease_id:
            return None
        del self.leases[seq]
        self._let_go(lease)
        if lease.holder is not None:
            lease.holder.lease_ended(seq)
        return lease

    def end_many(self, ended: Iterable[tuple[int, str]]) -> None:
        """:meth:`end` for several ``(seq, lease_id)`` at once (an ack): the holder counts
        change once per node, then each ended lease's holder hears of it, in order."""
        leases = self.leases
        dropped: dict[str, int] = {}
        held: list[tuple[LeaseHolder, int]] = []
        for seq, lease_id in ended:
            lease = leases.get(seq)
            if lease is None or lease.lease_id != lease_id:
                continue
            del leases[seq]
            dropped[lease.node] = dropped.get(lease.node, 0) + 1
            if lease.holder is not None:
                held.append((lease.holder, seq))
        for node, n in dropped.items():
            self._hold(node, -n)
        for holder, seq in held:
            holder.lease_ended(seq)

    def release(self, seq: int, lease_id: str, at: int) -> None:
        """Lease ``lease_id`` on ``seq`` ends and the job is claimable again: now (``at <= 0``)
        or from ``at`` (a delayed nack)."""
        if self.end(seq, lease_id) is not None:
            self._make_claimable(seq, at)

    def extend(self, seq: int, lease_id: str, deadline: int) -> None:
        """Lease ``lease_id`` on ``seq`` now runs until ``deadline`` (set, not added)."""
        lease = self.leases.get(seq)
        if lease is not None and lease.lease_id == lease_id:
            lease.deadline = deadline
            heapq.heappush(self._expiry, (deadline, seq, lease_id))

    def delay(self, seq: int, due: int) -> None:
        """Job ``seq``, just appended (or replayed) with a write delay, is not claimable before
        ``due``. (A job already leased — a replayed claim — or delayed is left alone.)"""
        if seq not in self.leases and seq not in self.delayed:
            self.delayed[seq] = due
            heapq.heappush(self._due, (due, seq))

    def pass_delayed(self, seq: int) -> None:
        """Fresh job ``seq`` (the next past the cursor) is delayed: the cursor moves over it,
        as a claim's pick does, and it goes on the freelist when it comes due."""
        assert seq in self.delayed and seq > self.cursor
        self.cursor = seq

    def _ended(self, lease: Lease, seq: int) -> None:
        if lease.holder is not None:
            lease.holder.lease_ended(seq)

    def _make_claimable(self, seq: int, at: int) -> None:
        if at > 0 and seq not in self.delayed:
            self.delayed[seq] = at
            heapq.heappush(self._due, (at, seq))
        elif at <= 0:
            self._push_free(seq)

    def _push_free(self, seq: int) -> None:
        if seq not in self._free:
            self._free.add(seq)
            self._freelist.append(seq)
            heap = self._free_heap
            if len(heap) > 2 * len(self._free) + 64:  # mostly stale entries: rebuild
                heap[:] = self._free
                heapq.heapify(heap)
            else:
                heapq.heappush(heap, seq)

    def _let_go(self, lease: Lease) -> None:
        """``lease`` left ``leases``: its node holds one fewer."""
        self._hold(lease.node, -1)

    def _hold(self, node: str, change: int) -> None:
        """``node`` holds ``change`` more leases (fewer if negative): ``_holding`` and
        ``_ranked`` follow."""
        old = self._holding.get(node, 0)
        new = old + change
        ranked = self._ranked
        if old:
            del ranked[bisect.bisect_left(ranked, (-old, node))]
        if new > 0:
            self._holding[node] = new
            bisect.insort(ranked, (-new, node))
        else:
            del self._holding[node]

    # -- lazy time ---------------------------------------------------------------------------

    def expire(self, now: int) -> None:
        """Leases past their deadline (``now > deadline``) and delays that are due become
        claimable (freelist)."""
        expiry = self._expiry
        while expiry and expiry[0][0] < now:
            deadline, seq, lease_id = heapq.heappop(expiry)
            lease = self.leases.get(seq)
            if lease is not None and lease.lease_id == lease_id and lease.deadline == deadline:
                del self.leases[seq]
                self._let_go(lease)
                self._push_free(seq)
                self._ended(lease, seq)
        due = self._due
        while due and due[0][0] <= now:
            at, seq = heapq.heappop(due)
            if self.delayed.get(seq) == at:
                del self.delayed[seq]
                if seq <= self.cursor:  # else a delayed write never passed over: fresh again
                    self._push_free(seq)

    def next_change_at(self) -> int | None:
        """The earliest time (ms) at which :meth:`expire` will free a job: a live lease's
        deadline + 1 or a delayed job's due time; ``None`` when neither is pending. Stale heap
        entries (extended, released or acked leases; re-delayed jobs) are dropped on the way."""
        expiry, due = self._expiry, self._due
        while expiry:
            deadline, seq, lease_id = expiry[0]
            lease = self.leases.get(seq)
            if lease is not None and lease.lease_id == lease_id and lease.deadline == deadline:
                break
            heapq.heappop(expiry)
        while due and self.delayed.get(due[0][1]) != due[0][0]:
            heapq.heappop(due)
        times = ([expiry[0][0] + 1] if expiry else []) + ([due[0][0]] if due else [])
        return min(times) if times else None

    def pop_reclaimable(self) -> int | None:
        """The next seq on the reclaim freelist, or ``None``."""
        while self._freelist:
            seq = self._freelist.popleft()
            if seq in self._free:
                self._free.discard(seq)
                return seq
        return None

    def peek_reclaimable(self, n: int) -> list[int]:
        """Up to ``n`` seqs :meth:`pop_reclaimable` would return next (changes nothing)."""
        out: list[int] = []
        for seq in self._freelist:
            if len(out) >= n:
                break
            if seq in self._free:
                out.append(seq)
        return out

    # -- the jobs log ------------------------------------------------------------------------

    def discard(self, seq: int) -> None:
        """The job left the jobs log (acked, deleted, evicted, expired): forget it."""
        self.deliveries.pop(seq, None)
        self.delayed.pop(seq, None)
        self.held_back.discard(seq)
        self._free.discard(seq)
        lease = self.leases.pop(seq, None)
        if lease is not None:
            self._let_go(lease)
            self._ended(lease, seq)
            if self.lease_dropped is not None:
                self.lease_dropped()

    def discard_many(self, seqs: Iterable[int]) -> None:
        """:meth:`discard` for each of ``seqs``, in order (the structures that are empty — no
        delayed, held-back or reclaimable job, the usual case of a draining queue — are not
        looked into)."""
        deliveries, delayed, held_back, free, leases = (
            self.deliveries,
            self.delayed,
            self.held_back,
            self._free,
            self.leases,
        )
        for seq in seqs:
            deliveries.pop(seq, None)
            if delayed:
                delayed.pop(seq, None)
            if held_back:
                held_back.discard(seq)
            if free:
                free.discard(seq)
            if leases:
                lease = leases.pop(seq, None)
                if lease is not None:
                    self._let_go(lease)
                    self._ended(lease, seq)
                    if self.lease_dropped is not None:
                        self.lease_dropped()

    def reconcile(self, live_seqs: Iterable[int]) -> None:
        """After recovery: a live job at or below the claim cursor that is neither leased,
        delayed nor on the freelist was handed out under leases that were not replayed (they
        were not durable then) — make it claimable again, so no job is ever stranded."""
        for seq in live_seqs:
            if seq > self.cursor:
                break
            if seq not in self.leases and seq not in self.delayed and seq not in self.held_back:
                self._push_free(seq)

    def hold_back(self, seq: int) -> None:
        """A poison job's dead-letter move failed: keep it out of circulation until a retry."""
        self._free.discard(seq)
        self.held_back.add(seq)
        self.dead_letter_failures += 1

    def release_held(self, seq: int) -> None:
        """A held-back job is no longer poison (the queue's config changed): claimable again."""
        if seq in self.held_back:
            self.held_back.discard(seq)
            self._push_free(seq)

    def oldest_reclaimable(self, live: Callable[[int], bool]) -> int | None:
        """The lowest seq on the reclaim freelist whose job is ``live``, or ``None``. (A seq
        whose job left the log is normally discarded with it; one that is not yet is dropped
        from the heap here — :meth:`pop_reclaimable`'s callers skip it the same way.)"""
        heap, free = self._free_heap, self._free
        while heap and (heap[0] not in free or not live(heap[0])):
            heapq.heappop(heap)
        return heap[0] if heap else None

    def holders(self, most: int) -> tuple[list[tuple[str, int]], int]:
        """The nodes holding leases now as ``(node, leases)``, most leases first (then by
        node), at most ``most`` of them; and how many nodes hold leases."""
        return [(node, -n) for n, node in self._ranked[:most]], len(self._holding)

    def counters(self, live_jobs: int) -> tuple[int, int]:
        """``(ready, in_flight)``; jobs waiting out a write's or a nack's delay, or held back
        after a failed dead-letter move, count in neither."""
        in_flight = len(self.leases)
        return max(0, live_jobs - in_flight - len(self.delayed) - len(self.held_back)), in_flight

    # -- snapshots ---------------------------------------------------------------------------

    def image(self, with_leases: bool, shift: int = 0) -> QueueImage:
        """The projection for a snapshot: the counter always; for ``leases_durable`` queues the
        leases, deliveries, every delayed job and the cursor; for the others the delayed writes
        not yet due (``due``: delayed jobs never delivered — a write's delay is durable like the
        write), the rest starting afresh after a restart. Times are written ``+ shift`` (the
        wall clock minus the steady clock the projection runs on: wall instants)."""
        if not with_leases:
            due = [[seq, at + shift] for seq, at in self.delayed.items() if not self.deliveries.get(seq)]
            return QueueImage(self.dead_lettered, due=due or None)
        return QueueImage(  # ``delayed`` holds the delayed writes too
            dead_lettered=self.dead_lettered,
            leases=[
                [seq, lease.node, lease.lease_id, lease.deadline + shift, lease.deliveries]
                for seq, lease in self.leases.items()
            ],
            deliveries=[[seq, n] for seq, n in self.deliveries.items()],
            delayed=[[seq, at + shift] for seq, at in self.delayed.items()],
            free=[seq for seq in self._freelist if seq in self._free],
            cursor=self.cursor,
        )

    def restore(self, image: QueueImage, live: Callable[[int], bool]) -> None:
        """Reinstate a snapshot's projection once the topic's records are loaded. Jobs waiting
        out a delay are restored only if still ``live`` (an ephemeral queue's records, say, do
        not survive the restart their delays were saved for)."""
        self.dead_lettered = image.dead_lettered
        for seq, n in image.deliveries or ():
            self.deliveries[seq] = n
        for seq, node, lease_id, deadline, deliveries in image.leases or ():
            self.claim(seq, lease_id, node, deadline, deliveries)
        for seq, at in image.delayed or ():
            if live(seq):
                self._make_claimable(seq, at)
        for seq, at in image.due or ():
            if live(seq):
                self.delay(seq, at)
        for seq in image.free or ():
            self._push_free(seq)
        self.cursor = max(self.cursor, image.cursor)
