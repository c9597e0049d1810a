"""One topic: its records, retention, deletes, and the read (diff) scan.

Records live in a :class:`RecordLog` (batches of pre-encoded wire bytes, see ``recordlog``);
this module owns what they mean: counts and bytes, watermarks, caps, TTL, tombstones.

Watermarks
    ``head_seq``     — highest seq visible (records may be absent below it: deleted, evicted,
    or skipped after a crash).
    ``earliest_seq`` — seq of the first live record, ``head_seq + 1`` when empty.
    ``evict_floor``  — one past the highest seq lost *involuntarily* (cap or TTL). Deletes never
    move it. ``evict_floor <= earliest_seq`` always. A reader whose ``from_seq + 1 <
    evict_floor`` gets a tombstone; one that fell only into a deleted gap advances silently.

Timestamps are made monotonic per topic (``$ts = max(now, last $ts)``), so TTL-expired records are
always a prefix of the live records and expiry pops from the front.

Retention decisions (documented): cap eviction is exact in counts and bytes (memory is released
a whole batch at a time); when the newest record alone exceeds ``cap_bytes`` under
``discard:"old"`` it is kept (the topic never evicts the record it just acknowledged down to
nothing).
"""

from __future__ import annotations

import asyncio
import bisect
import builtins
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .config import Discard, Durability, TopicConfig, TopicType
from .consumerset import Consumer, ConsumerSet
from .errors import TopicFull
from .idempotency import IdempotencyWindow
from .jsonvalues import U64_MAX, to_int
from .leases import QueueState
from .matching import TagMatch
from .priority import effective_priority
from .recordlog import Gone, RecordLog
from .records import NO_LIMITS, NewRecords, Record, RecordLimits, encode, write_delays
from .results import Diff, Tombstone
from .storage.coldstore import ColdChunk
from .storage.formats import RecordBatch
from .storage.segments import ChunkIndex
from .tags import TagIndex

_MAX_LOSS_RUNS = 64


@dataclass(slots=True)
class LossRun:
    """A run of involuntary losses with one reason; ``last`` is the highest seq lost in it."""

    reason: str
    last: int
    count: int


@dataclass(slots=True)
class ReadOptions:
    limit: int
    nodes: frozenset[str] | None = None
    include_tags: bool = False
    include_meta: bool = True
    include_data: bool = True
    max_bytes: int = 1 << 20
    """Byte budget for the records of one read (their encoded sizes); at least one record is
    always returned when one is available."""
    max_scan: int = 100_000
    upto: int | None = None
    """Read no record above this seq (a ``strong`` watch reads only what is durable)."""


ZERO_MAX_BYTES = 1 << 20
"""What ``max_batch_bytes: 0`` means, for every read (diff, watch)."""
MAX_BATCH_BYTES = 8 << 20
"""The most ``max_batch_bytes`` a request gets: larger values are clamped to it."""


@dataclass(frozen=True, slots=True)
class ReadBudget:
    """How much one read returns at most: ``limit`` records, and ``max_bytes`` of their encoded
    bytes (soft: at least one record when one is available).

    A use of reads (diff, watch) keeps its defaults as a budget and resolves each request's
    ``limit`` / ``max_batch_bytes`` against them with :meth:`resolve` — the one place the
    request rules live."""

    limit: int
    max_bytes: int

    def resolve(self, limit: int | None, max_batch_bytes: int | None, max_limit: int) -> ReadBudget:
        """The budget of a request, ``self`` being this use's defaults (``None``: not given):

        - ``limit`` absent, 0 or negative: the default; then clamped to ``max_limit``;
        - ``max_batch_bytes`` absent: the default; 0 or negative: :data:`ZERO_MAX_BYTES`; then
          clamped to :data:`MAX_BATCH_BYTES`.

        Raises ``invalid_request`` for a value that is not a whole number (direct callers; the
        server's decoded bodies hold integers)."""
        asked = to_int(limit or 0, "limit", clamp=True) or self.limit
        if max_batch_bytes is None:
            size = self.max_bytes
        else:
            size = to_int(max_batch_bytes, "max_batch_bytes", clamp=True) or ZERO_MAX_BYTES
        return ReadBudget(min(asked, max_limit), min(size, MAX_BATCH_BYTES))


@dataclass(slots=True)
class DeletePlan:
    """A delete's seqs at the moment it was planned: ``found`` (from memory: the live seqs below
    ``bound``, or the tag index's hot records) and the ``cold`` chunks ``(first_seq, where)``
    whose records must be read to find the rest — :meth:`examine` each (in any order, after any
    wait: a chunk gone since contributes nothing), then :meth:`seqs`."""

    topic: Topic
    bound: int
    match: TagMatch | None
    found: list[int] = field(default_factory=list)
    cold: list[tuple[int, ColdChunk]] = field(default_factory=list)

    def examine(self, first_seq: int, batch: RecordBatch) -> None:
        """Add the matching live records of the cold chunk at ``first_seq`` (``batch``: its records)."""
        if self.match is not None:
            self.found.extend(self.topic.log.tag_matches(first_seq, batch, self.match, self.bound))

    def examine_here(self) -> None:
        """Examine every cold chunk, reading it on the calling thread if it is not in memory."""
        for first_seq, cold in self.cold:
            self.examine(first_seq, cold.store.batch(cold))
        self.cold = []

    def seqs(self) -> list[int]:
        """The live seqs to delete, ascending."""
        if self.match is None:
            return self.found  # the live seqs below the bound, just listed
        is_live = self.topic.log.is_live
        return [seq for seq in sorted(set(self.found)) if is_live(seq)]


@dataclass(slots=True)
class PendingWrites:
    """Writes planned on a topic and not applied yet (``fsync`` class: awaiting their fsync).

    Owned by the engine's commit path (``Engine._applier``, ``Engine.append_prepared``): only it
    changes these. The topic reads ``count`` and ``bytes``: a full ``discard:"reject"`` topic
    counts them against its caps, and :meth:`Topic.bytes_after` includes them.

    Invariant: ``count`` and ``bytes`` sum the planned batches whose apply step has not run
    (both 0 when none)."""

    count: int = 0
    bytes: int = 0
    keys: dict[str, asyncio.Future[float]] = field(default_factory=dict)
    """Idempotency key -> durability of a keyed write still awaiting its fsync (a retry of it
    waits for the same future); a key leaves once its fsync settles."""

    def add(self, count: int, size: int) -> None:
        """``count`` records of ``size`` bytes were planned (negative: their apply step ran)."""
        self.count += count
        self.bytes += size


@dataclass(slots=True)
class HotState:
    """What of a topic's records is so far only in the WAL: not yet sealed into a segment.

    Owned by ``datadir.sealing``: only it marks records sealed (``sealing.mark_sealed``, at a
    seal, a checkpoint's cut or a snapshot's restore) and decides from this when to seal. The
    topic's apply path only feeds it (:meth:`added`), and a switch of its class across
    ``ephemeral`` (:meth:`Topic.switch_logging`: :meth:`stopped_logging`,
    :meth:`started_logging`), whatever the persistence (without a data directory nothing is
    ever sealed).

    Records an ``ephemeral`` topic wrote are resident-only, never in the WAL: while the topic is
    ephemeral a seal takes only its records up to ``logged_upto`` (written under a durable
    class: they stay durable); once it is durable again, every record above ``sealed_upto``
    (docs/DECISIONS.md, "Switching a topic's class").

    Invariants: ``sealed_upto <= head_seq``; ``since_ms`` is ``None`` (and ``bytes`` 0) while
    no record was applied since a mark that reached the head."""

    sealed_upto: int = 0
    """Records with seq <= this are in sealed segments (or gone, or about to be sealed); the
    rest are only in the WAL — or, written as ephemeral, only in memory."""
    bytes: int = 0
    """Bytes of the records applied since the mark (deletes and evictions do not lower it)."""
    since_ms: int | None = None
    """``$ts`` of the first record applied since the mark."""
    logged_upto: int = 0
    """While the topic is ephemeral: the highest seq it handed out before its class stopped
    logging records (0: it never logged any) — the records up to here are in the WAL."""
    unlogged_upto: int = 0
    """The highest seq handed out before the topic's class last started logging records: those
    above ``sealed_upto`` and up to here are resident-only until a seal takes them."""

    def added(self, first_ts: int, size: int) -> None:
        """Records of ``size`` bytes, the first stamped ``first_ts``, were applied."""
        if self.since_ms is None:
            self.since_ms = first_ts
        self.bytes += size

    def stopped_logging(self, reserved_seq: int) -> None:
        """The class became ``ephemeral``; every seq up to ``reserved_seq`` was logged."""
        self.logged_upto = reserved_seq

    def started_logging(self, reserved_seq: int) -> None:
        """The class stopped being ``ephemeral``; no seq up to ``reserved_seq`` since
        :meth:`stopped_logging` was."""
        self.unlogged_upto = reserved_seq

    def mark(self, upto: int, head_seq: int) -> None:
        """Every record up to ``upto`` is sealed (``datadir.sealing`` only); the hot counters
        restart once that is every record up to ``head_seq``."""
        self.sealed_upto = max(self.sealed_upto, upto)
        if self.sealed_upto >= head_seq:
            self.bytes = 0
            self.since_ms = None


class Usage:
    """Live records and their bytes, and named consumers, summed over topics: every change to a
    topic's ``count``, ``bytes`` and consumers is added here too, so the totals cost nothing to
    read (the total-bytes quota, the consumer cap, metrics)."""

    __slots__ = ("records", "bytes", "pending", "consumers")

    def __init__(self) -> None:
        self.records = 0
        self.bytes = 0
        self.pending = 0
        """Bytes of planned writes not yet applied (awaiting their fsync)."""
        self.consumers = 0
        """Named consumers (``Topic.consumers``)."""

    def add(self, records: int, size: int) -> None:
        self.records += records
        self.bytes += size


@dataclass
class Topic:
    """One topic's state. Who may change which field:

    - ``name``, ``created_ms``, ``previous_head``: fixed at construction; ``id``: set once, by
      whoever creates the topic (the engine, recovery), before it is registered.
    - ``config``: ``Engine.apply_config`` (which bumps ``version`` with it).
    - The records and what they mean — ``log``, ``count``, ``bytes``, ``tags``, ``evict_floor``,
      the loss runs, ``holes``, ``skipped``, the last ``$ts``, ``last_write_ts``, ``version``
      and ``reserved_seq`` (the seq allocator): only this class's methods. Recovery sets them
      through :meth:`reinstate`, :meth:`advance_head`, :meth:`resume_after_crash` and
      :meth:`reserve_upto`.
    - ``last_read_ts``: the readers (engine reads, watch streams) — auto-priority's input.
    - ``idempotency``: the engine's append path and replay remember keys, a failed fsync forgets
      one; the window's own rules expire them.
    - ``queue``: the queue feature and lease replay drive the projection; this class only drops
      the jobs its deletes and evictions remove.
    - ``usage``: ``Engine.register`` / ``unregister`` attach and detach the engine's totals;
      this class adds every change of ``count``, ``bytes`` and of its consumers to them.
    - ``consumers``: the named consumers' cursors, changed only through :meth:`set_consumer`
      and :meth:`drop_consumer` (by ``topics_engine.consumers`` and recovery).
    - ``pending``: the engine's commit path (:class:`PendingWrites`).
    - ``hot``: ``datadir.sealing`` marks it; the apply path here feeds it (:class:`HotState`).

    Kept by their owners, not here: the seq reservation
    (``datadir.walpersistence.SeqReservation``), the strong-watch state (``engine.StrongWatch``);
    the snapshot record is assembled by ``datadir.checkpoint.topic_image``."""

    name: str
    config: TopicConfig
    created_ms: int
    previous_head: int | None = None
    """Head seq of the incarnation this topic replaced (delete + recreate), for ``recreated``."""

    id: int = 0
    """Interned numeric id of this incarnation; storage keys everything by it, never by name."""
    reserved_seq: int = 0
    """Highest seq handed out: ``>= head_seq``; above it while fsync-class writes await their
    fsync, or after an ephemeral restart skipped seqs that may have been handed out."""
    count: int = 0
    bytes: int = 0
    evict_floor: int = 1
    last_write_ts: int | None = None
    last_read_ts: int | None = None
    _last_ts: int = 0
    log: RecordLog = field(default_factory=RecordLog)
    _losses: list[LossRun] = field(default_factory=list)
    tags: TagIndex = field(default_factory=TagIndex)
    idempotency: IdempotencyWindow = field(default_factory=IdempotencyWindow)
    pending: PendingWrites = field(default_factory=PendingWrites)
    """Writes planned, not yet applied: owned by the engine (see :class:`PendingWrites`)."""
    queue: QueueState | None = None
    """The lease projection when ``type`` is ``queue``."""
    version: int = 0
    """Bumped by every change a read could see (append, delete, eviction, expiry, config):
    equal versions mean equal reads, so a watch frame can be shared."""
    hot: HotState = field(default_factory=HotState)
    """What is not sealed yet: owned by ``datadir.sealing`` (see :class:`HotState`)."""
    usage: Usage = field(default_factory=Usage)
    """The engine's totals this topic's ``count`` and ``bytes`` are part of (shared by every
    registered topic; a topic of its own until registered)."""
    holes: list[tuple[int, int]] = field(default_factory=list)
    """``(seq, missed)`` ascending: seqs a router reserved to mark source records it could not
    copy (the source evicted them first). A reader crossing one gets a ``source_trim``
    tombstone; they hold no record."""
    consumers: ConsumerSet = field(default_factory=ConsumerSet)
    """The named consumers reading this topic (an extension, issue 25): they go with the topic."""
    skipped: list[tuple[int, int]] = field(default_factory=list)
    """``(low, high)`` ascending, only for a recreated, non-ephemeral topic: a crash recovery
    raised the head from ``low`` past cursors the previous incarnation's readers may hold
    (:meth:`resume_after_crash`); ``high`` is the raised head or ``previous_head + 1``,
    whichever is lower. A cursor strictly between ``low`` and ``high`` is at most
    ``previous_head`` and :meth:`tombstone_for` answers ``recreated`` for it. It is usually an
    old reader's, but not always: for a ``disk`` or ``memory`` topic a record of this
    incarnation acknowledged (and read) before its fsync and then lost in the crash leaves its
    reader's cursor above ``low``, possibly inside the range. That reader then re-reads the
    topic from its start — duplicates, never loss. Persisted by snapshots
    (``TopicImage.skipped``)."""

    def __post_init__(self) -> None:
        if self.config.type is TopicType.QUEUE:
            self.queue = QueueState()

    # -- watermarks ---------------------------------------------------------------------------

    def priority(self, now_ms: int) -> int:
        """The effective priority now (the config's ``priority``: manual, or auto-derived from
        read recency)."""
        return effective_priority(self.config, self.last_read_ts, now_ms)

    @property
    def head_seq(self) -> int:
        return self.log.head_seq

    @property
    def earliest_seq(self) -> int:
        if self.count == 0:
            return self.head_seq + 1
        first = self.log.first_live_seq()
        return self.head_seq + 1 if first is None else first

    @property
    def next_seq(self) -> int:
        return self.reserved_seq + 1

    def record(self, seq: int) -> Record | None:
        return self.log.record(seq)

    def locate(self, seq: int) -> tuple[RecordBatch, int] | None:
        """Where the live record ``seq`` is stored: ``(batch, ordinal)``."""
        return self.log.locate(seq)

    def live_after(self, seq: int, n: int) -> list[tuple[RecordBatch, int]]:
        """Up to ``n`` live records above ``seq`` as ``(batch, ordinal)``, ascending."""
        return self.log.live_after(seq, n)

    def is_live(self, seq: int) -> bool:
        return self.log.is_live(seq)

    def pass_delayed(self) -> tuple[int, int] | None:
        """A queue's claim cursor moves over the delayed writes at the front of its fresh jobs
        (claims pass them over anyway; each is passed once, and found from the resident index,
        no record read). Returns ``(seq, $ts)`` of the first fresh job that is not delayed, if
        any."""
        q = self.queue
        if q is None:
            return None
        log = self.log
        fresh = log.live_at_or_after(q.cursor + 1)
        delayed = q.delayed
        while fresh is not None and fresh[0] in delayed:
            q.pass_delayed(fresh[0])
            fresh = log.live_at_or_after(fresh[0] + 1)
        return fresh

    # -- named consumers ----------------------------------------------------------------------

    def set_consumer(self, name: str, cursor: int, at_ms: int) -> Consumer:
        """Set (or create) consumer ``name``'s committed cursor."""
        if self.consumers.set(name, cursor, at_ms):
            self.usage.consumers += 1
        consumer = self.consumers.get(name)
        assert consumer is not None
        return consumer

    def drop_consumer(self, name: str) -> bool:
        """Remove consumer ``name``; False if there was none."""
        if not self.consumers.remove(name):
            return False
        self.usage.consumers -= 1
        return True

    def live_seqs(self) -> Iterator[int]:
        """Seqs of the live records, ascending."""
        return self.log.live_seqs()

    # -- writes -------------------------------------------------------------------------------

    def plan_append(self, new: NewRecords, now_ms: int, limits: RecordLimits = NO_LIMITS) -> RecordBatch:
        """Reserve contiguous seqs for the whole write and encode its records (not yet visible).

        Raises :class:`TopicFull` (nothing reserved) on a full ``discard:"reject"`` topic;
        records planned but not yet applied (awaiting fsync) count toward the cap. A record over
        ``limits`` raises before anything changes.
        """
        self.expire(now_ms)
        ts = max(now_ms, self._last_ts)
        batch = encode(new, self.reserved_seq + 1, ts, limits)
        if self.config.discard is Discard.REJECT:
            pending = self.pending
            self._check_room(batch.count + pending.count, len(batch.blob) + 1 + pending.bytes)
        self.reserved_seq = batch.last_seq
        self._last_ts = ts
        return batch

    def bytes_after(self, batch: RecordBatch) -> int:
        """This topic's bytes (pending writes included) once ``batch`` is applied and the cap
        evictions it causes are done (``discard:"old"``), computed from the sizes of the
        records the eviction would take, oldest first; pending writes are not evictable here
        (they are applied first, so this errs high). Changes nothing."""
        after = self.bytes + self.pending.bytes + len(batch.blob) + 1
        cfg = self.config
        if cfg.discard is not Discard.OLD or not (cfg.cap_records or cfg.cap_bytes):
            return after
        count = self.count + batch.count
        sizes = itertools.chain(
            self.log.live_sizes(), (batch.ends[i] - batch.start(i) + 1 for i in range(batch.count))
        )
        if cfg.cap_records:
            for _ in range(max(0, min(count - cfg.cap_records, count - 1))):
                after -= next(sizes)
                count -= 1
        if cfg.cap_bytes:
            while count > 1 and after > cfg.cap_bytes:
                after -= next(sizes)
                count -= 1
        return after

    def cancel_plan(self, batch: RecordBatch) -> None:
        """Give back the seqs of ``batch``, the newest plan, which will not be applied (a check
        after planning refused the write): the next write gets them, so no seq is skipped."""
        assert batch.last_seq == self.reserved_seq, "only the newest plan can be cancelled"
        self.reserved_seq = batch.first_seq - 1

    def apply_append(self, batch: RecordBatch, now_ms: int, steady_ms: int | None = None) -> None:
        """Make planned, replayed or loaded records visible (ascending seqs, gaps allowed).
        Records at or below ``head_seq`` are already present and skipped, so replaying a frame
        twice is harmless. ``steady_ms`` (a live append: the steady clock now) starts a queue
        job's write delay now on the steady clock; without it (replay) the job is due at
        ``$ts + $delay_ms``, read on the steady clock, which starts at the wall clock."""
        skip = max(0, self.head_seq - batch.first_seq + 1)
        added, size = self.log.append(batch)
        if not added:
            return
        self._added(batch, skip, added, size, steady_ms)
        if self.config.discard is Discard.OLD:
            self._evict_over_cap()
        self.last_write_ts = max(self.last_write_ts or 0, now_ms)

    def plan_hole(self) -> int:
        """Reserve the next seq as a ``source_trim`` marker (applied by :meth:`apply_hole`)."""
        self.reserved_seq += 1
        return self.reserved_seq

    def apply_hole(self, seq: int, missed: int) -> None:
        """Make a planned or replayed ``source_trim`` marker visible (idempotent)."""
        if seq <= self.head_seq:
            return
        self.advance_head(seq)
        self.holes.append((seq, missed))

    def _added(self, batch: RecordBatch, skip: int, added: int, size: int, steady_ms: int | None) -> None:
        self.version += 1
        self.count += added
        self.bytes += size
        self.usage.add(added, size)
        if batch.tags is not None:
            tags, first = self.tags, batch.first_seq
            for i in range(skip, batch.count):
                tag = batch.tags[i]
                if tag is not None:
                    tags.add(tag, first + i)
        self.hot.added(batch.ts_runs[0][1], size)
        self.reserved_seq = max(self.reserved_seq, self.head_seq)
        self._last_ts = max(self._last_ts, batch.ts_runs[-1][1])
        if self.queue is not None:
            delay = self.queue.delay
            first = batch.first_seq
            for seq, due in write_delays(batch, skip):
                if steady_ms is not None:  # due - $ts is the record's delay
                    due = steady_ms + due - batch.ts_of(seq - first)
                delay(seq, due)
            self.pass_delayed()

    def load_sealed(self, index: ChunkIndex, cold: ColdChunk, gone: builtins.bytes) -> None:
        """Recovery: a chunk of a sealed segment, from the segment's index — its records stay on
        disk (``gone`` flags, one per record, mark the ones deleted or evicted)."""
        skip = max(0, self.head_seq - index.first_seq + 1)
        live, size = self.log.load_sealed(index, cold, gone)
        self.count += live
        self.bytes += size
        self.usage.add(live, size)
        if skip and index.tags is not None:  # overlapping what was stored: loaded hot
            for i in range(skip, index.count):
                tag = index.tags[i]
                if tag is not None and not gone[i]:
                    self.tags.add(tag, index.first_seq + i)
        self._last_ts = max(self._last_ts, index.ts_runs[-1][1])
        self.reserved_seq = max(self.reserved_seq, self.head_seq)

    def make_cold(self, sealed: RecordBatch, cold: ColdChunk) -> None:
        """The records of ``sealed`` are durable where ``cold`` says: they leave memory
        (``RecordLog.make_cold``), and their tags the tag index (the chunk keeps a summary).
        Nothing changes if they are not in memory as sealed any more."""
        if self.log.make_cold(sealed, cold) and sealed.tags is not None:
            tags = (tag for tag in sealed.tags if tag is not None)
            self.tags.forget_range(tags, sealed.first_seq, sealed.last_seq)

    def switch_logging(self, logs: bool) -> None:
        """The class switched across ``ephemeral``: it starts (``logs``) or stops logging the
        records. The hot state learns where the logged records end (:class:`HotState`), and the
        chunks stored so far — with the ones planned, awaiting their fsync — never merge with
        later ones, so a seal's bound between them falls between chunks."""
        if logs:
            self.hot.started_logging(self.reserved_seq)
        else:
            self.hot.stopped_logging(self.reserved_seq)
        self.log.freeze(self.reserved_seq)

    def advance_head(self, seq: int) -> None:
        """Recovery: the head moves to ``seq`` though the seqs above the last live record hold
        nothing (deleted before sealing, an ephemeral topic's lost records, or seqs skipped
        after a crash). Costs nothing per skipped seq (docs/DECISIONS.md, "Seqs are never reused")."""
        self.log.skip_to(seq)
        self.reserved_seq = max(self.reserved_seq, self.head_seq)
        self.version += 1

    def resume_after_crash(self, seq: int) -> bool:
        """Recovery after a crash: the head moves up to ``seq`` (the seq reservation), skipping
        seqs that may have been handed out before the crash. For a recreated topic whose skip
        starts below the previous incarnation's head, the skipped range is remembered
        (:attr:`skipped`) so a reader at an old cursor inside it still learns of the
        recreation. Not for an ``ephemeral`` topic: it keeps no record below the raised head,
        so an old cursor misses nothing. Returns whether the head moved."""
        low = self.head_seq
        if seq <= low:
            return False
        self.advance_head(seq)
        old = self.previous_head
        if old is not None and low < old and self.config.durability is not Durability.EPHEMERAL:
            self.skipped.append((low, min(self.head_seq, old + 1)))
        return True

    def _in_skipped(self, cursor: int) -> bool:
        """``cursor`` lies strictly inside a range :meth:`resume_after_crash` skipped."""
        return any(low < cursor < high for low, high in self.skipped)

    def reserve_upto(self, seq: int) -> None:
        """Recovery: seqs up to ``seq`` count as handed out (a snapshot's reservation, the head
        a replayed topic delete recorded), so none is handed out again."""
        self.reserved_seq = max(self.reserved_seq, seq, self.head_seq)

    def reinstate(
        self,
        *,
        head_seq: int,
        reserved_seq: int,
        evict_floor: int,
        losses: Iterable[Sequence[Any]],
        holes: Iterable[Sequence[int]],
        last_write_ts: int | None,
        last_read_ts: int | None,
        last_ts: int,
        skipped: Iterable[Sequence[int]] = (),
    ) -> None:
        """Recovery: reinstate the watermarks a snapshot recorded, once the records of its
        segments are loaded. ``losses`` are ``(reason, last_seq, count)`` runs, ``holes``
        ``(seq, missed)`` markers, ``skipped`` ``(low, high)`` ranges, as :attr:`losses`,
        :meth:`reachable_holes` and :attr:`skipped` give them."""
        self.advance_head(head_seq)
        self.reserve_upto(reserved_seq)
        self.evict_floor = evict_floor
        self._losses = [LossRun(reason, last, count) for reason, last, count in losses]
        self.last_write_ts, self.last_read_ts = last_write_ts, last_read_ts
        self._last_ts = max(self._last_ts, last_ts)
        self.holes = [(seq, missed) for seq, missed in holes]
        self.skipped = [(low, high) for low, high in skipped]

    @property
    def last_ts(self) -> int:
        """The newest ``$ts`` given to a record: the next write's ``$ts`` is at least this."""
        return self._last_ts

    @property
    def losses(self) -> tuple[LossRun, ...]:
        """The runs of involuntary losses (cap, TTL) tombstones report, oldest first."""
        return tuple(self._losses)

    def reachable_holes(self) -> list[tuple[int, int]]:
        """The ``source_trim`` markers a reader can still meet: those at or above
        ``evict_floor`` (a lost prefix's tombstone covers the rest)."""
        return [(seq, missed) for seq, missed in self.holes if seq >= self.evict_floor]

    # -- retention ----------------------------------------------------------------------------

    def _check_room(self, n: int, size: int) -> None:
        cfg = self.config
        if cfg.cap_records and self.count + n > cfg.cap_records:
            raise TopicFull(
                f'topic "{self.name}" holds {self.count} of cap_records={cfg.cap_records}; '
                f'the write of {n} records was rejected (discard is "reject") — consume or '
                "delete records, or raise the cap",
                {"topic": self.name, "cap_records": cfg.cap_records, "count": self.count},
            )
        if cfg.cap_bytes and self.bytes + size > cfg.cap_bytes:
            raise TopicFull(
                f'topic "{self.name}" holds {self.bytes} of cap_bytes={cfg.cap_bytes}; the '
                f'write of {size} bytes was rejected (discard is "reject") — consume or '
                "delete records, or raise the cap",
                {"topic": self.name, "cap_bytes": cfg.cap_bytes, "bytes": self.bytes},
            )

    def _evict_over_cap(self) -> None:
        """Evict the oldest records until the caps hold, keeping at least the newest one."""
        cfg = self.config
        if cfg.cap_records and self.count > cfg.cap_records:
            self._lose("cap", self._evict(records=min(self.count - cfg.cap_records, self.count - 1)))
        if cfg.cap_bytes:
            while self.count > 1 and self.bytes > cfg.cap_bytes:
                self._lose("cap", self._evict(records=1))

    def expire(self, now_ms: int) -> None:
        """Drop the TTL-expired prefix: records *older than* ``ttl_ms`` (``now - $ts > ttl_ms``),
        ``now`` being the topic's write clock — the wall clock, or the last ``$ts`` while a wall
        clock stepped back has not caught up with it (TTL follows ``$ts``: docs/DECISIONS.md,
        "Clock steps")."""
        now_ms = max(now_ms, self._last_ts)
        ttl = self.config.ttl_ms
        if not ttl or self.count == 0:
            return
        oldest = self.log.front_ts()
        if oldest is not None and oldest < now_ms - ttl:
            self._lose("ttl", self._evict(ts_before=now_ms - ttl))

    def enforce_retention(self, now_ms: int) -> None:
        """Apply the current caps and TTL now (after a config change tightened them)."""
        self.expire(now_ms)
        if self.config.discard is Discard.OLD:
            self._evict_over_cap()

    def _evict(self, *, records: int = 0, ts_before: int | None = None) -> Gone:
        seqs: list[int] | None = [] if self.queue is not None else None
        gone = self.log.evict_front(records=records, ts_before=ts_before, seqs=seqs)
        if gone.count:
            self.version += 1
        self.count -= gone.count
        self.bytes -= gone.bytes
        self.usage.add(-gone.count, -gone.bytes)
        if gone.tagged:
            self.tags.note_removed(gone.tagged, self.is_live)
        if self.queue is not None and seqs:
            for seq in seqs:
                self.queue.discard(seq)
        return gone

    def _lose(self, reason: str, gone: Gone) -> None:
        """Record an involuntary loss (cap or TTL) for tombstones."""
        if not gone.count:
            return
        self.evict_floor = max(self.evict_floor, gone.last_seq + 1)
        runs = self._losses
        if runs and runs[-1].reason == reason:
            runs[-1].last = gone.last_seq
            runs[-1].count += gone.count
        else:
            runs.append(LossRun(reason, gone.last_seq, gone.count))
            if len(runs) > _MAX_LOSS_RUNS:
                merged = LossRun("mixed", runs[1].last, runs[0].count + runs[1].count)
                runs[:2] = [merged]

    # -- deletes ------------------------------------------------------------------------------

    def delete_plan(self, before_seq: int | None, match: TagMatch | None) -> DeletePlan:
        """What a delete removes, as far as memory tells (see :class:`DeletePlan`)."""
        bound = self.head_seq + 1
        if before_seq is not None:
            bound = min(bound, before_seq)
        plan = DeletePlan(self, bound, match)
        if match is None:
            for seq in self.log.live_seqs():
                if seq >= bound:
                    break
                plan.found.append(seq)
            return plan
        if match.exact is not None:
            plan.found.extend(self.tags.eq(match.exact, bound))
        else:
            plan.found.extend(self.tags.prefix(match.prefix or "", bound))
        plan.cold = self.log.cold_tag_candidates(match, bound)
        return plan

    def apply_delete(self, seqs: Iterable[int]) -> list[int]:
        """Delete these seqs where still live; return those that were, in the order given.
        Silent and permanent: never a tombstone, ``evict_floor`` untouched."""
        deleted, size, tagged = self.log.delete_many(seqs)
        if deleted:
            self.version += 1
        self.count -= len(deleted)
        self.bytes -= size
        self.usage.add(-len(deleted), -size)
        if self.queue is not None:
            self.queue.discard_many(deleted)
        if tagged:
            self.tags.note_removed(tagged, self.is_live)
        return deleted

    # -- reads --------------------------------------------------------------------------------

    def tombstone_for(self, from_seq: int) -> Tombstone | None:
        """The gap marker for a reader at ``from_seq`` (exclusive cursor), if it lost records:
        iff ``from_seq + 1 < evict_floor`` — for every cursor, 0 ("from earliest") included
        (docs/DECISIONS.md, "Tombstones") — or the topic was recreated below the reader's cursor:
        the cursor is beyond this incarnation's head, or inside a range a crash recovery skipped
        (:attr:`skipped`), so it can only be a cursor of the previous incarnation."""
        if self.previous_head is not None and (from_seq > self.head_seq or self._in_skipped(from_seq)):
            first = min(from_seq + 1, U64_MAX)  # a cursor at the top of the seq space has no next
            return Tombstone(
                first,
                max(first, self.previous_head),
                "recreated",
                max(0, self.previous_head - from_seq),
                self.earliest_seq,
                self.head_seq,
            )
        gap_from = from_seq + 1
        if gap_from >= self.evict_floor:
            return None
        reasons: set[str] = set()
        missed = 0
        for run in self._losses:
            if run.last >= gap_from:
                reasons.add(run.reason)
                missed += min(run.count, run.last - gap_from + 1)
        reason = reasons.pop() if len(reasons) == 1 else "mixed"
        return Tombstone(gap_from, self.earliest_seq - 1, reason, missed, self.earliest_seq, self.head_seq)

    def seq_before_ts(self, ts: int) -> int:
        """The exclusive cursor of a read that starts at the first live record with
        ``$ts >= ts`` (a seek by time): the seq just before that record. ``0`` — from the
        earliest, with the ruling-1 tombstone if records were lost — when that record is the
        oldest live one (``ts`` at or below everything retained), or when nothing is live but a
        record ever written had ``$ts >= ts``; ``head_seq`` (a tail) when no record has.
        Found from resident chunk indexes in O(log chunks): cold records are never read."""
        first = self.log.first_live_seq()
        if first is None:
            return 0 if ts <= self._last_ts else self.head_seq
        seq = self.log.first_live_at_or_after_ts(ts)
        if seq is None:
            return self.head_seq
        return 0 if seq == first else seq - 1

    def _hole_after(self, cursor: int) -> tuple[int, int] | None:
        """The first ``source_trim`` marker above ``cursor``."""
        at = bisect.bisect_right(self.holes, (cursor, 1 << 64))
        return self.holes[at] if at < len(self.holes) else None

    def read(self, from_seq: int, opts: ReadOptions) -> Diff:
        """Records after ``from_seq``: expired, deleted and own-node records skipped, but the
        cursor advances past them (``next_from_seq`` = seq of the last examined slot). Stops at
        ``limit`` records, at the byte budget (never before the first record) or at the scan
        bound; a run of seqs that never held records is crossed at no cost."""
        tombstone = self.tombstone_for(from_seq)
        if tombstone is not None and tombstone.reason == "recreated":
            from_seq = 0
        earliest = self.earliest_seq
        cursor = min(max(from_seq, earliest - 1), self.head_seq)
        upto = opts.upto
        if self.holes:
            # a marker the reader has not passed — even one below ``earliest_seq`` (only deleted
            # records before it), but not one lost with an evicted prefix (its tombstone covers it)
            hole = self._hole_after(max(from_seq, self.evict_floor - 1))
            if hole is not None and hole[0] <= cursor + 1 and tombstone is None:
                tombstone = Tombstone(hole[0], hole[0], "source_trim", hole[1], earliest, self.head_seq)
                cursor = max(cursor, hole[0])
                hole = self._hole_after(cursor)
            if hole is not None:  # stop before the next marker: one tombstone per read
                upto = hole[0] - 1 if upto is None else min(upto, hole[0] - 1)
        nodes = opts.nodes if self.config.dedupe_node else None
        scan = self.log.scan(
            cursor,
            limit=opts.limit,
            max_bytes=opts.max_bytes,
            max_scan=opts.max_scan,
            nodes=nodes,
            include_tags=opts.include_tags,
            include_meta=opts.include_meta,
            include_data=opts.include_data,
            upto=upto,
        )
        return Diff(
            self.name,
            scan.parts,
            scan.count,
            scan.last_seq,
            tombstone,
            scan.scanned,
            self.head_seq,
            earliest,
            from_seq,
        )
