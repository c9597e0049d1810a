"""One topic: its records, retention, deletes, and the read (diff) scan.

Storage model (in memory)
    ``_slots[i]`` holds the record with seq ``_base + i`` or ``None`` once it is gone (evicted,
    expired or deleted). Slots always extend to ``head_seq``. ``_live`` indexes the first live
    slot (or ``len(_slots)`` when the topic is empty); everything before it is dead and is sliced
    off in bulk once it makes up half the list, so front removal is amortized O(1).

Watermarks
    ``earliest_seq`` — seq of the first live record, ``head_seq + 1`` when empty.
    ``evict_floor``  — one past the highest seq lost *involuntarily* (cap or TTL). Deletes never
    move it. ``evict_floor <= earliest_seq`` always. A reader whose ``from_seq + 1 <
    evict_floor`` gets a tombstone; one that fell only into a deleted gap advances silently.

Timestamps are made monotonic per topic (``$ts = max(now, last $ts)``), so TTL-expired records are
always a prefix of the live records and expiry pops from the front.

Retention decisions (documented): cap eviction is exact and per record in memory; when the newest
record alone exceeds ``cap_bytes`` under ``discard:"old"`` it is kept (the topic never evicts the
record it just acknowledged down to nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from .config import Discard, TopicConfig, TopicType
from .errors import TopicFull
from .idempotency import IdempotencyWindow
from .leases import QueueState
from .matching import TagMatch
from .records import PreparedRecord, Record
from .results import Diff, Tombstone
from .storage.formats import TopicImage
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


@dataclass
class Topic:
    name: str
    config: TopicConfig
    created_ms: int
    previous_head: int | None = None
    """Head seq of the incarnation this topic replaced (delete + recreate), for ``recreated``."""

    id: int = 0
    """Interned numeric id of this incarnation; storage keys everything by it, never by name."""
    head_seq: int = 0
    """Highest visible seq."""
    reserved_seq: int = 0
    """Highest seq handed out: ``>= head_seq``; above it while fsync-class writes await their
    fsync, or after an ephemeral restart skipped seqs that may have been handed out."""
    pending_count: int = 0
    pending_bytes: int = 0
    seq_reserved_durable: int = 0
    """Seqs up to here are covered by a durable SEQ_RESERVE frame (classes acked before
    durability: a restart after a crash resumes above it)."""
    seq_reserved_submitted: int = 0
    reservation: Any = None
    """Durability future of the newest SEQ_RESERVE frame."""
    creation_durable: bool = True
    """False while the create frame of a topic created lazily by a write is not yet durable."""
    sealed_upto: int = 0
    """Records with seq <= this are in sealed segments (or gone); the rest are only in the WAL."""
    hot_bytes: int = 0
    hot_since_ms: int | None = None
    count: int = 0
    bytes: int = 0
    evict_floor: int = 1
    last_write_ts: int | None = None
    last_read_ts: int | None = None
    _last_ts: int = 0
    _base: int = 1
    _live: int = 0
    _slots: list[Record | None] = field(default_factory=list)
    _losses: list[LossRun] = field(default_factory=list)
    tags: TagIndex = field(default_factory=TagIndex)
    idempotency: IdempotencyWindow = field(default_factory=IdempotencyWindow)
    pending_keys: dict[str, Any] = field(default_factory=dict)
    queue: QueueState | None = None
    """The lease projection when ``type`` is ``queue``."""

    def __post_init__(self) -> None:
        if self.config.type is TopicType.QUEUE:
            self.queue = QueueState()

    """Idempotency key -> durability future of a keyed write still awaiting its fsync."""

    # -- watermarks ---------------------------------------------------------------------------

    @property
    def earliest_seq(self) -> int:
        if self.count == 0:
            return self.head_seq + 1
        return self._base + self._live

    @property
    def next_seq(self) -> int:
        return self.reserved_seq + 1

    def record(self, seq: int) -> Record | None:
        i = seq - self._base
        if i < self._live or i >= len(self._slots):
            return None
        return self._slots[i]

    def is_live(self, seq: int) -> bool:
        return self.record(seq) is not None

    # -- writes -------------------------------------------------------------------------------

    def plan_append(self, batch: list[PreparedRecord], now_ms: int) -> list[Record]:
        """Reserve contiguous seqs for the whole batch and build its records (not yet visible).

        Raises :class:`TopicFull` (nothing reserved) on a full ``discard:"reject"`` topic;
        records planned but not yet applied (awaiting fsync) count toward the cap.
        """
        self.expire(now_ms)
        ts = max(now_ms, self._last_ts)
        first = self.reserved_seq + 1
        seq = first
        for r in batch:
            r.seq, r.ts = seq, ts
            seq += 1
        records = batch
        size = sum(r.size for r in records)
        if self.config.discard is Discard.REJECT:
            self._check_room(len(records) + self.pending_count, size + self.pending_bytes)
        self.reserved_seq = first + len(records) - 1
        self._last_ts = ts
        return records

    def apply_append(self, records: list[Record], now_ms: int) -> None:
        """Make planned, replayed or loaded records visible (ascending seqs, gaps allowed).
        Records at or below ``head_seq`` are already present and skipped, so replaying a frame
        twice is harmless."""
        skip = max(0, self.head_seq - records[0].seq + 1)
        if skip:
            records = records[skip:]
            if not records:
                return
        slots, tags = self._slots, self.tags
        if self.count == 0 and not slots:
            self._base = records[0].seq
        if self.count == 0:
            self._live = records[0].seq - self._base
        added_bytes = 0
        for r in records:
            gap = r.seq - (self._base + len(slots))
            if gap:  # seqs that never became records here (deleted before sealing, ephemeral)
                slots.extend([None] * gap)
            slots.append(r)
            added_bytes += r.size
            if r.tag is not None:
                tags.add(r.tag, r.seq)
        self.count += len(records)
        self.bytes += added_bytes
        if self.hot_since_ms is None:
            self.hot_since_ms = records[0].ts
        self.hot_bytes += added_bytes
        self.head_seq = records[-1].seq
        self.reserved_seq = max(self.reserved_seq, self.head_seq)
        self._last_ts = max(self._last_ts, records[-1].ts)
        self.last_write_ts = max(self.last_write_ts or 0, now_ms)
        if self.config.discard is Discard.OLD:
            self._evict_over_cap()

    def hot_records(self) -> list[Record]:
        """Live records not yet sealed into a segment (``seq > sealed_upto``), ascending."""
        start = max(self.sealed_upto + 1, self.earliest_seq) - self._base
        return [r for r in self._slots[max(start, self._live) :] if r is not None]

    def mark_sealed(self) -> None:
        self.sealed_upto = self.head_seq
        self.hot_bytes = 0
        self.hot_since_ms = None

    def image(self, segments: list[str], final: bool = False) -> TopicImage:
        """The topic's snapshot entry: everything but its records, which are in ``segments``.
        ``final`` (clean shutdown): the seq reservation collapses to the head, so the next
        start resumes exactly here."""
        return TopicImage(
            id=self.id,
            name=self.name,
            config=self.config.to_wire(),
            created_ms=self.created_ms,
            previous_head=self.previous_head,
            head_seq=self.head_seq,
            reserved_seq=self.reserved_seq,
            seq_reserved_durable=self.reserved_seq if final else self.seq_reserved_submitted,
            evict_floor=self.evict_floor,
            losses=[[run.reason, run.last, run.count] for run in self._losses],
            last_write_ts=self.last_write_ts,
            last_read_ts=self.last_read_ts,
            last_ts=self._last_ts,
            idempotency=self.idempotency.entries(),
            queue=self.queue.image(self.config.leases_durable) if self.queue is not None else None,
            segments=segments,
        )

    def advance_head(self, seq: int) -> None:
        """Recovery: the head moves to ``seq`` though the seqs above the last live record hold
        nothing (deleted before sealing, or an ephemeral topic's lost records)."""
        if seq <= self.head_seq:
            return
        if self.count == 0:
            self._slots.clear()
            self._base, self._live = seq + 1, 0
        else:
            self._slots.extend([None] * (seq - (self._base + len(self._slots)) + 1))
        self.head_seq = seq
        self.reserved_seq = max(self.reserved_seq, seq)

    def restore(self, image: TopicImage) -> None:
        """Recovery: reinstate a snapshot entry after its segments' records are loaded."""
        self.advance_head(image.head_seq)
        self.reserved_seq = max(self.reserved_seq, image.reserved_seq, self.head_seq)
        self.seq_reserved_durable = self.seq_reserved_submitted = image.seq_reserved_durable
        self.evict_floor = image.evict_floor
        self._losses = [LossRun(reason, last, count) for reason, last, count in image.losses]
        self.last_write_ts, self.last_read_ts = image.last_write_ts, image.last_read_ts
        self._last_ts = max(self._last_ts, image.last_ts)
        self.idempotency.restore(image.idempotency)
        if self.queue is not None and image.queue is not None:
            self.queue.restore(image.queue)
        self.sealed_upto = self.head_seq
        self.hot_bytes = 0

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

    def _over_cap(self) -> bool:
        cfg = self.config
        return bool(
            (cfg.cap_records and self.count > cfg.cap_records)
            or (cfg.cap_bytes and self.bytes > cfg.cap_bytes)
        )

    def _evict_over_cap(self) -> None:
        while self.count > 1 and self._over_cap():
            self._lose_front("cap")
        self._compact()

    def expire(self, now_ms: int) -> None:
        """Drop the TTL-expired prefix: records *older than* ``ttl_ms`` (``now - $ts > ttl_ms``)."""
        ttl = self.config.ttl_ms
        if not ttl or self.count == 0:
            return
        limit = now_ms - ttl
        slots = self._slots
        while self.count and slots[self._live].ts < limit:  # type: ignore[union-attr]
            self._lose_front("ttl")
        self._compact()

    def enforce_retention(self, now_ms: int) -> None:
        """Apply the current caps and TTL now (after a config change tightened them)."""
        self.expire(now_ms)
        if self.config.discard is Discard.OLD:
            self._evict_over_cap()

    def _lose_front(self, reason: str) -> None:
        r = self._slots[self._live]
        assert r is not None
        self._kill(self._live, r)
        self.evict_floor = r.seq + 1
        runs = self._losses
        if runs and runs[-1].reason == reason:
            runs[-1].last = r.seq
            runs[-1].count += 1
        else:
            runs.append(LossRun(reason, r.seq, 1))
            if len(runs) > _MAX_LOSS_RUNS:
                merged = LossRun("mixed", runs[1].last, runs[0].count + runs[1].count)
                runs[:2] = [merged]
        self._skip_dead_front()

    def _kill(self, index: int, r: Record) -> None:
        self._slots[index] = None
        self.count -= 1
        self.bytes -= r.size
        if r.tag is not None:
            self.tags.note_removed(1, self.is_live)
        if self.queue is not None:
            self.queue.discard(r.seq)

    def live_seqs(self) -> Iterator[int]:
        """Seqs of the live records, ascending."""
        for r in self._slots[self._live :]:
            if r is not None:
                yield r.seq

    def next_live_after(self, seq: int) -> Record | None:
        """The first live record with a seq greater than ``seq``."""
        slots = self._slots
        for i in range(max(seq + 1 - self._base, self._live), len(slots)):
            r = slots[i]
            if r is not None:
                return r
        return None

    def _skip_dead_front(self) -> None:
        slots, n = self._slots, len(self._slots)
        i = self._live
        while i < n and slots[i] is None:
            i += 1
        self._live = i

    def _compact(self) -> None:
        """Slice off the dead front once it is at least half of the slot list."""
        dead = self._live
        if dead > 1024 and dead * 2 >= len(self._slots):
            del self._slots[:dead]
            self._base += dead
            self._live = 0

    # -- deletes ------------------------------------------------------------------------------

    def plan_delete(self, before_seq: int | None, match: TagMatch | None) -> list[int]:
        """The live seqs a delete removes, ascending: below the point-in-time bound
        (``head_seq + 1``, or ``before_seq`` if lower) and, with ``match``, tagged to match."""
        bound = self.head_seq + 1
        if before_seq is not None:
            bound = min(bound, before_seq)
        if match is None:
            candidates: list[int] | range = range(self.earliest_seq, bound)
        elif match.exact is not None:
            candidates = self.tags.eq(match.exact, bound)
        else:
            candidates = sorted(self.tags.prefix(match.prefix or "", bound))
        return [
            seq
            for seq in candidates
            if (r := self.record(seq)) is not None and (match is None or match.matches(r.tag))
        ]

    def apply_delete(self, seqs: Iterable[int]) -> int:
        """Delete these seqs where still live; return how many were. Silent and permanent:
        never a tombstone, ``evict_floor`` untouched."""
        deleted = 0
        base, slots = self._base, self._slots
        for seq in seqs:
            i = seq - base
            if i < self._live or i >= len(slots):
                continue
            r = slots[i]
            if r is None:
                continue
            self._kill(i, r)
            deleted += 1
        self._skip_dead_front()
        self._compact()
        return deleted

    # -- reads --------------------------------------------------------------------------------

    def tombstone_for(self, from_seq: int) -> Tombstone | None:
        """The gap marker for a reader at ``from_seq`` (exclusive cursor), if it lost records:
        iff ``from_seq + 1 < evict_floor`` — for every cursor, 0 ("from earliest") included
        (ruling 1) — or the topic was recreated below the reader's cursor."""
        if self.previous_head is not None and from_seq > self.head_seq:
            return Tombstone(
                from_seq + 1,
                max(from_seq + 1, self.previous_head),
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

    def read(self, from_seq: int, opts: ReadOptions) -> Diff:
        """Records after ``from_seq``: expired, deleted and own-node records skipped, but the
        cursor advances past them (``next_from_seq`` = seq of the last examined slot). Stops at
        ``limit`` records, at the byte budget (never before the first record) or at the scan
        bound."""
        tombstone = self.tombstone_for(from_seq)
        if tombstone is not None and tombstone.reason == "recreated":
            from_seq = 0
        cursor = min(max(from_seq, self.earliest_seq - 1), self.head_seq)
        slots = self._slots
        i = cursor + 1 - self._base
        end = len(slots)
        stop = min(end, i + opts.max_scan)
        nodes = opts.nodes if self.config.dedupe_node else None
        limit, budget = opts.limit, opts.max_bytes
        tags, meta, data = opts.include_tags, opts.include_meta, opts.include_data
        out: list[bytes] = []
        size = 0
        start = i
        while i < stop:
            r = slots[i]
            if r is None or (nodes is not None and r.node in nodes):
                i += 1
                continue
            encoded = r.encode(tags, meta, data)
            size += len(encoded) + 1
            if size > budget and out:
                break
            out.append(encoded)
            i += 1
            if len(out) >= limit:
                break
        next_from_seq = self._base + i - 1 if i > start else cursor
        return Diff(self.name, out, next_from_seq, tombstone, i - start, self.head_seq, self.earliest_seq)
