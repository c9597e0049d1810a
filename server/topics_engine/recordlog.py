"""A topic's stored records: a list of chunks, each an immutable :class:`RecordBatch` of
consecutive seqs plus the flags of its records that were deleted since.

Layout
    ``_chunks[k]`` holds seqs ``first_seq .. first_seq + count - 1``; chunks ascend by seq and
    may leave gaps between them — seqs that never held a record here (skipped after a crash,
    an ephemeral topic's lost records, records deleted before they were sealed). A gap costs
    nothing: no memory per skipped seq, and a read crosses it by stepping to the next chunk
    (docs/DECISIONS.md, "Seqs are never reused"). ``_firsts`` mirrors the chunks' first seqs for bisection.

Liveness
    Record ``i`` of a chunk is live iff ``i >= chunk.front`` (records below ``front`` were
    evicted from the front of the topic: cap or TTL) and its delete flag is clear. Eviction
    only ever takes the oldest live records, so everything below the first live record is
    gone; chunks wholly gone are dropped, which is how memory is released (eviction is
    chunk-granular in memory, exact in counts).

Appends
    A write becomes one chunk. Small writes merge in tiers: when the last :data:`MERGE_FANOUT`
    chunks are all of one tier (a small write is tier 0), hold consecutive seqs with nothing
    deleted and fit in :data:`MERGE_MAX_BYTES`, they become one new batch of the next tier (the
    old ones are never mutated — readers and the segment thread may hold them). Single-record
    writes thus end up in chunks of hundreds of records; each record is copied about twice.

Hot and cold
    A chunk is hot (its batch in memory) until its segment is durable; then it goes cold
    (:meth:`RecordLog.make_cold`): the batch leaves memory and :meth:`_Chunk.batch` reads it back
    through the shared cache (``storage.coldstore``). Seqs, record sizes (``ends``), ``$ts``
    runs, flags and a summary of its tags (``tags.ChunkTags``) stay resident, so counting,
    sizing, eviction and deletes by seq never read a record; a tag delete reads the cold
    chunks whose summaries may match (:meth:`cold_tag_candidates`). Reads do read records, and
    in a strict read (the event loop's) a chunk not in memory raises ``ColdRead`` naming the
    chunks the read's budget reaches (:meth:`_cold_ahead`). A segment's chunk is a run of
    exported hot chunks joined (:func:`join_small`, up to :data:`MERGE_MAX_BYTES`); when it is
    durable those hot chunks become that one cold chunk. Chunks exported for sealing never
    merge again (``frozen_upto``), so they are still the chunks the join covers then.

Every record here has ``seq <= head_seq``; ``head_seq`` may exceed the last stored seq.
"""

from __future__ import annotations

import bisect
import itertools
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from .matching import TagMatch
from .records import Record, record_bytes
from .storage.coldstore import ColdChunk, ColdRead
from .storage.formats import RecordBatch
from .storage.segments import ChunkIndex
from .tags import ChunkTags

MERGE_FANOUT = 16
READ_AHEAD_CHUNKS = 64
"""The most cold chunks one read loads in one go."""
MERGE_MAX_BYTES = 64 << 10
"""Chunks merge only while the result stays below this size ..."""
MERGE_SMALL_BYTES = 4 << 10
"""... and only writes smaller than this merge at all (larger writes are chunks already)."""
_NEVER = 1 << 30
"""The tier of a chunk that never merges."""


class _Chunk:
    """One stored batch and its liveness. A chunk is **hot** (its :class:`RecordBatch` in
    memory) or **cold** (sealed: ``cold`` says where its batch is, read back through the shared
    cache). Either way ``first_seq``, ``count``, ``ends`` (record sizes), ``ts_runs`` and the
    flags stay resident, and a cold chunk keeps a summary of its tags (``tag_summary``):
    counting, sizing, eviction and deletes by seq never read a record."""

    __slots__ = (
        "_batch",
        "cold",
        "first_seq",
        "count",
        "ends",
        "ts_runs",
        "tag_summary",
        "front",
        "dead",
        "live",
        "tier",
    )

    def __init__(self, batch: RecordBatch, tier: int = _NEVER) -> None:
        self._batch: RecordBatch | None = batch
        self.cold: ColdChunk | None = None
        self.first_seq = batch.first_seq
        self.count = batch.count
        self.ends = batch.ends
        self.ts_runs: Sequence[tuple[int, int]] = batch.ts_runs
        """``(ordinal, $ts)`` runs (``RecordBatch.ts_runs``); a cold chunk's in a :class:`TsRuns`."""
        self.tag_summary: ChunkTags | None = None
        """A cold chunk's tags, summarized (``None``: hot, or no record has a tag)."""
        self.tier = tier
        self.front = 0
        self.dead: bytearray | None = None
        self.live = batch.count

    @classmethod
    def sealed(cls, index: ChunkIndex, cold: ColdChunk) -> _Chunk:
        """A cold chunk from a segment's index (recovery): no record byte is read."""
        ch = cls.__new__(cls)
        ch._batch, ch.cold = None, cold
        ch.first_seq, ch.count = index.first_seq, index.count
        ch.ends, ch.ts_runs = compact_ends(index.ends), TsRuns.of(index.ts_runs)
        ch.tag_summary = ChunkTags(index.tags) if index.tags is not None else None
        ch.tier, ch.front, ch.dead, ch.live = _NEVER, 0, None, index.count
        return ch

    @property
    def is_hot(self) -> bool:
        return self._batch is not None

    def batch(self) -> RecordBatch:
        """The records: in memory, or read back (cached; see ``storage.coldstore``)."""
        if self._batch is not None:
            return self._batch
        assert self.cold is not None
        return self.cold.store.batch(self.cold)

    def go_cold(self, cold: ColdChunk) -> RecordBatch:
        """The batch is durable in its segment: release it (returned, for the cache)."""
        batch = self._batch
        assert batch is not None
        self.tag_summary = ChunkTags(batch.tags) if batch.tags is not None else None
        self.ts_runs = TsRuns.of(self.ts_runs)
        self.ends = compact_ends(self.ends)
        self._batch, self.cold = None, cold
        return batch

    def has_indexed_tags(self) -> bool:
        """Whether a record of the chunk is in the topic's tag index (a hot chunk with tags)."""
        return self._batch is not None and self._batch.tags is not None

    def indexed_tags(self) -> Sequence[str | None] | None:
        """The records' tags (``None`` for an untagged record) if the chunk is hot and tagged
        — what :meth:`is_indexed_tag` looks up — else ``None``."""
        return self._batch.tags if self._batch is not None else None

    def is_indexed_tag(self, i: int) -> bool:
        """Whether record ``i`` is in the topic's tag index (hot and tagged)."""
        if self._batch is None:
            return False
        tags = self._batch.tags
        return tags is not None and tags[i] is not None

    def start(self, i: int) -> int:
        return self.ends[i - 1] + 1 if i else 0

    def size(self, i: int) -> int:
        return self.ends[i] - self.start(i) + 1

    def is_live(self, i: int) -> bool:
        return i >= self.front and (self.dead is None or not self.dead[i])

    def next_live(self, i: int) -> int:
        """The first live ordinal at or after ``i`` (``count`` if none)."""
        i = max(i, self.front)
        if self.dead is None or i >= self.count:
            return min(i, self.count)
        j = self.dead.find(0, i)
        return self.count if j < 0 else j

    def live_from(self, i: int) -> int:
        """How many records at ordinals ``i`` and after are live."""
        if i <= self.front:
            return self.live
        if i >= self.count:
            return 0
        return self.count - i if self.dead is None else self.dead.count(0, i, self.count)

    def any_live(self, i: int, n: int) -> bool:
        """Whether a record in ordinals ``[i, n)`` is live."""
        i = max(i, self.front)
        if i >= n:
            return False
        return self.dead is None or self.dead.find(0, i, n) >= 0

    def dead_flags(self) -> bytes:
        """One byte per record: 1 if gone (evicted or deleted)."""
        flags = bytearray(self.dead) if self.dead is not None else bytearray(self.count)
        flags[: self.front] = b"\x01" * self.front
        return bytes(flags)


class TsRuns(Sequence[tuple[int, int]]):
    """A cold chunk's ``$ts`` runs, compact: one array of ``ordinal, $ts - base`` pairs, where
    ``base`` is the first run's ``$ts`` — 4 bytes a value while the chunk spans less than 49
    days (8 otherwise), where a list of tuples costs about 120 bytes a run. A sealed chunk of
    joined small writes has a run per write, and it stays resident as long as the chunk is
    retained. Read-only; indexing (negative too) yields ``(ordinal, $ts)`` like the list it
    replaces."""

    __slots__ = ("_pairs", "_base")

    def __init__(self, pairs: array[int], base: int) -> None:
        self._pairs = pairs
        self._base = base

    @classmethod
    def of(cls, runs: Sequence[tuple[int, int]]) -> TsRuns:
        if isinstance(runs, TsRuns):
            return runs
        base = runs[0][1] if runs else 0
        pairs = [value for at, ts in runs for value in (at, ts - base)]
        narrow = min(pairs, default=0) >= 0 and max(pairs, default=0) < 1 << 32
        return cls(array("I" if narrow else "q", pairs), base)

    def __len__(self) -> int:
        return len(self._pairs) >> 1

    def __getitem__(self, k: int) -> tuple[int, int]:  # type: ignore[override]  # no slices
        n = len(self._pairs) >> 1
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError(k)
        return self._pairs[2 * k], self._base + self._pairs[2 * k + 1]


def compact_ends(ends: array[int]) -> array[int]:
    """A cold chunk's record ends, 2 bytes each when its records fit in 64 KiB (a chunk of
    joined small writes does: :data:`MERGE_MAX_BYTES`), else as they are (4 bytes). Ends
    ascend, so the last is the largest.

    Narrowed by slicing bytes, not value by value (``array("H", ends)`` converts each value
    through a Python int: ~35 ns a record, 8 % of a batched-append load's CPU when every
    chunk goes cold): each value is below 2**16, so its two low-order bytes hold it whole."""
    if ends.typecode == "H" or (ends and ends[-1] >= 1 << 16):
        return ends
    raw, size = ends.tobytes(), ends.itemsize
    low = 0 if sys.byteorder == "little" else size - 2
    narrow = bytearray(2 * len(ends))
    narrow[0::2] = raw[low::size]
    narrow[1::2] = raw[low + 1 :: size]
    out = array("H")
    out.frombytes(narrow)
    return out


@dataclass(slots=True)
class Gone:
    """Records removed from the front (eviction) or by delete: how many, their bytes, the
    highest seq removed, and how many of them were in the tag index."""

    count: int = 0
    bytes: int = 0
    last_seq: int = 0
    tagged: int = 0


@dataclass(slots=True)
class Scan:
    """A read: ``parts`` are byte strings each holding one or more whole record objects
    (``,``-separated), ``count`` records in all; ``last_seq`` is the last seq examined."""

    parts: list[bytes | memoryview]
    count: int
    last_seq: int
    scanned: int


class RecordLog:
    def __init__(self) -> None:
        self._chunks: list[_Chunk] = []
        self._firsts: list[int] = []
        self.head_seq = 0
        """Highest seq stored (or skipped to): the next record's seq is above it."""
        self.cold_chunks = 0
        """How many stored chunks are cold (0: every read is served from memory)."""
        self.frozen_upto = 0
        """Chunks starting at or below this seq were exported for sealing: they never merge
        again, so the hot chunks a sealed (joined) chunk covers are still those chunks when it
        goes cold (:meth:`make_cold`)."""

    # -- lookup -----------------------------------------------------------------------------------

    def _find(self, seq: int) -> tuple[int, int]:
        """``(k, i)``: the chunk and ordinal of the first stored seq ``>= seq`` (``k`` may be
        ``len(chunks)``: nothing at or after ``seq``)."""
        k = bisect.bisect_right(self._firsts, seq) - 1
        if k < 0:
            return 0, 0
        ch = self._chunks[k]
        i = seq - ch.first_seq
        if i < ch.count:
            return k, i
        return k + 1, 0

    def _at(self, seq: int) -> tuple[_Chunk, int] | None:
        k, i = self._find(seq)
        if k < len(self._chunks):
            ch = self._chunks[k]
            if ch.first_seq + i == seq:
                return ch, i
        return None

    def is_live(self, seq: int) -> bool:
        at = self._at(seq)
        return at is not None and at[0].is_live(at[1])

    def record(self, seq: int) -> Record | None:
        """The live record ``seq``, materialized (``None`` if gone or never stored)."""
        at = self.locate(seq)
        return None if at is None else Record(*at)

    def locate(self, seq: int) -> tuple[RecordBatch, int] | None:
        """``(batch, ordinal)`` of the live record ``seq`` (``None`` if gone or never stored)."""
        at = self._at(seq)
        if at is None or not at[0].is_live(at[1]):
            return None
        return at[0].batch(), at[1]

    def live_after(self, seq: int, n: int) -> list[tuple[RecordBatch, int]]:
        """``(batch, ordinal)`` of up to ``n`` live records with seqs above ``seq``, ascending
        (a chunk with nothing deleted is taken as one range)."""
        out: list[tuple[RecordBatch, int]] = []
        k, i = self._find(seq + 1)
        chunks = self._chunks
        while k < len(chunks) and len(out) < n:
            ch = chunks[k]
            dead, count = ch.dead, ch.count
            i = max(i, ch.front)
            if not ch.any_live(i, count):
                k, i = k + 1, 0
                continue
            try:
                batch = ch.batch()
            except ColdRead:
                raise ColdRead(self._cold_ahead(k, n - len(out), 1 << 62)) from None
            while i < count and len(out) < n:
                end = count
                if dead is not None:  # the run of live records from the next live one
                    i = dead.find(0, i)
                    if i < 0:
                        break
                    end = dead.find(1, i)
                    if end < 0:
                        end = count
                end = min(end, i + n - len(out))
                out.extend((batch, j) for j in range(i, end))
                i = end
            k, i = k + 1, 0
        return out

    def live_sizes(self) -> Iterator[int]:
        """The sizes of the live records, oldest first (lazily: a caller that stops early pays
        for what it read)."""
        for ch in self._chunks:
            i = ch.next_live(ch.front)
            while i < ch.count:
                yield ch.size(i)
                i = ch.next_live(i + 1)

    def first_live(self) -> tuple[_Chunk, int] | None:
        for ch in self._chunks:
            i = ch.next_live(ch.front)
            if i < ch.count:
                return ch, i
        return None

    def first_live_seq(self) -> int | None:
        at = self.first_live()
        return None if at is None else at[0].first_seq + at[1]

    def live_seqs(self) -> Iterator[int]:
        for ch in self._chunks:
            i = ch.next_live(ch.front)
            while i < ch.count:
                yield ch.first_seq + i
                i = ch.next_live(i + 1)

    # -- appends ----------------------------------------------------------------------------------

    def append(self, batch: RecordBatch) -> tuple[int, int]:
        """Store a batch; records at or below ``head_seq`` are already here and skipped (replay
        is idempotent). Returns ``(records, bytes)`` added."""
        if batch.last_seq <= self.head_seq:
            return 0, 0
        if batch.first_seq <= self.head_seq:
            batch = slice_batch(batch, self.head_seq + 1 - batch.first_seq)
        self.head_seq = batch.last_seq
        self._chunks.append(_Chunk(batch, 0 if len(batch.blob) < MERGE_SMALL_BYTES else _NEVER))
        self._firsts.append(batch.first_seq)
        self._merge_tail()
        return batch.count, len(batch.blob) + 1

    def _merge_tail(self) -> None:
        chunks = self._chunks
        while len(chunks) >= MERGE_FANOUT:
            tier = chunks[-1].tier
            if tier == _NEVER or chunks[-MERGE_FANOUT].tier != tier:
                return
            tail = chunks[-MERGE_FANOUT:]
            if tail[0].first_seq <= self.frozen_upto:
                return
            expected, size = tail[0].first_seq, 0
            for c in tail:
                if c.tier != tier or c.first_seq != expected or c.dead is not None or c.front:
                    return
                expected += c.count
                size += c.ends[-1] + 1
            if size > MERGE_MAX_BYTES:
                return
            chunks[-MERGE_FANOUT:] = [_Chunk(merge_batches([c.batch() for c in tail]), tier + 1)]
            del self._firsts[-(MERGE_FANOUT - 1) :]

    def skip_to(self, seq: int) -> None:
        """The head moves to ``seq`` without records (recovery: seqs that may have been handed
        out before a crash are never handed out again). Costs nothing per skipped seq."""
        self.head_seq = max(self.head_seq, seq)

    # -- removals ---------------------------------------------------------------------------------

    def delete_many(self, seqs: Iterable[int]) -> tuple[list[int], int, int]:
        """Mark the live records among ``seqs`` deleted (consecutive seqs in one chunk are
        found with one lookup). Returns the seqs deleted, their bytes and how many were
        tagged."""
        deleted: list[int] = []
        size = tagged = 0
        ch: _Chunk | None = None
        first = count = 0
        dead: bytearray | None = None
        ends: Sequence[int] = ()
        tags: Sequence[str | None] | None = None  # the chunk's record tags if it is in the tag index
        for seq in seqs:
            if ch is None or not 0 <= seq - first < count:
                at = self._at(seq)
                if at is None:
                    continue
                ch = at[0]
                first, count, ends, dead = ch.first_seq, ch.count, ch.ends, ch.dead
                tags = ch.indexed_tags()
            i = seq - first
            if i < ch.front or (dead is not None and dead[i]):
                continue
            if dead is None:
                dead = ch.dead = bytearray(count)
            dead[i] = 1
            ch.live -= 1
            size += ends[i] - (ends[i - 1] + 1 if i else 0) + 1
            if tags is not None and tags[i] is not None:
                tagged += 1
            deleted.append(seq)
        if deleted:
            self._drop_dead_front()
        return deleted, size, tagged

    def front_ts(self) -> int | None:
        """``$ts`` of the oldest live record."""
        at = self.first_live()
        return None if at is None else _ts_of(at[0].ts_runs, at[1])

    def live_at_or_after(self, seq: int) -> tuple[int, int] | None:
        """``(seq, $ts)`` of the first live record at or after ``seq`` (``None`` if none),
        from what is resident: no record is read."""
        k, i = self._find(seq)
        chunks = self._chunks
        while k < len(chunks):
            ch = chunks[k]
            i = ch.next_live(i)
            if i < ch.count:
                return ch.first_seq + i, _ts_of(ch.ts_runs, i)
            k, i = k + 1, 0
        return None

    def first_live_at_or_after_ts(self, ts: int) -> int | None:
        """The seq of the first live record with ``$ts >= ts`` (``None`` if none), from what is
        resident: a bisection over the chunks by their newest ``$ts`` (``$ts`` never decreases
        along a topic), then over the chunk's ``$ts`` runs; no record is read. Deleted records
        after it are stepped over a chunk at a time."""
        chunks = self._chunks
        k = bisect.bisect_left(chunks, ts, key=_newest_ts)
        if k == len(chunks):
            return None
        ch = chunks[k]
        i = _first_at_or_after(ch.ts_runs, ch.count, ch.front, ts)
        at = self.live_at_or_after(ch.first_seq + i)  # i == count: from the next chunk on
        return None if at is None else at[0]

    def ts_of(self, seq: int) -> int | None:
        """``$ts`` of the live record ``seq`` (``None`` if gone), without reading it."""
        at = self._at(seq)
        if at is None or not at[0].is_live(at[1]):
            return None
        return _ts_of(at[0].ts_runs, at[1])

    def evict_front(
        self, *, records: int = 0, ts_before: int | None = None, seqs: list[int] | None = None
    ) -> Gone:
        """Evict the oldest live records: ``records`` of them, or all with ``$ts < ts_before``.
        Whole chunks go at once; ``seqs`` (if given) collects every evicted seq."""
        gone = Gone()
        while self._chunks and (records > gone.count or ts_before is not None):
            ch = self._chunks[0]
            start = ch.next_live(ch.front)
            if start >= ch.count:
                self._drop_first()
                continue
            end = ch.count
            if ts_before is not None:
                end = _first_at_or_after(ch.ts_runs, ch.count, start, ts_before)
                if end == start:
                    break
            if records:
                end = min(end, self._ordinal_after_live(ch, start, records - gone.count))
            self._evict_range(ch, start, end, gone, seqs)
            if end < ch.count:
                ch.front = end
                break  # the n-th record or the first young one is inside this chunk
            self._drop_first()
        self._drop_dead_front()
        return gone

    def _ordinal_after_live(self, ch: _Chunk, start: int, n: int) -> int:
        """The ordinal just past the ``n``-th live record of ``ch`` from ``start`` (or count)."""
        if ch.dead is None:
            return min(ch.count, start + n)
        i = start
        while n and i < ch.count:
            if not ch.dead[i]:
                n -= 1
            i += 1
        return i

    def _evict_range(self, ch: _Chunk, start: int, end: int, gone: Gone, seqs: list[int] | None) -> None:
        dead = ch.dead
        if dead is None and seqs is None and not ch.has_indexed_tags():
            n = end - start
            size = ch.ends[end - 1] - ch.start(start) + 1
            gone.count += n
            gone.bytes += size
            gone.last_seq = ch.first_seq + end - 1
            ch.live -= n
            return
        for i in range(start, end):
            if dead is not None and dead[i]:
                continue
            size = ch.size(i)
            gone.count += 1
            gone.bytes += size
            gone.last_seq = ch.first_seq + i
            if ch.is_indexed_tag(i):
                gone.tagged += 1
            if seqs is not None:
                seqs.append(ch.first_seq + i)
            ch.live -= 1

    def _drop_first(self) -> None:
        cold = self._chunks[0].cold
        if cold is not None:
            self.cold_chunks -= 1
            cold.store.forget(cold)
        del self._chunks[0]
        del self._firsts[0]

    def _drop_dead_front(self) -> None:
        """Release chunks at the front that hold no live record any more."""
        while self._chunks and self._chunks[0].live == 0:
            self._drop_first()

    # -- reads ------------------------------------------------------------------------------------

    def scan(
        self,
        after: int,
        *,
        limit: int,
        max_bytes: int,
        max_scan: int,
        nodes: frozenset[str] | None = None,
        include_tags: bool = False,
        include_meta: bool = True,
        include_data: bool = True,
        upto: int | None = None,
    ) -> Scan:
        """Live records with seq > ``after``, ascending: at most ``limit`` records, at most
        ``max_bytes`` of them (never fewer than one when one is available), examining at most
        ``max_scan`` slots, none above ``upto`` (default: the head). Records whose ``$node`` is
        in ``nodes`` are skipped. Runs of records that need no per-record change are single
        slices of their batch."""
        end = self.head_seq if upto is None else min(upto, self.head_seq)
        out = Scan([], 0, after, 0)
        budget = [max_bytes]
        chunks = self._chunks
        k, i = self._find(after + 1)
        while k < len(chunks) and chunks[k].first_seq <= end and out.count < limit and out.scanned < max_scan:
            try:
                more = self._scan_chunk(
                    chunks[k],
                    i,
                    end,
                    out,
                    limit,
                    budget,
                    max_scan,
                    nodes,
                    (include_tags, include_meta, include_data),
                )
            except ColdRead:
                raise ColdRead(self._cold_ahead(k, limit - out.count, budget[0])) from None
            if not more:
                return out
            k, i = k + 1, 0
        if k >= len(chunks) or chunks[k].first_seq > end:
            out.last_seq = max(out.last_seq, end)  # everything up to the bound examined
        return out

    def _scan_chunk(
        self,
        ch: _Chunk,
        i: int,
        end: int,
        out: Scan,
        limit: int,
        budget: list[int],
        max_scan: int,
        nodes: frozenset[str] | None,
        includes: tuple[bool, bool, bool],
    ) -> bool:
        """Scan one chunk from ordinal ``i`` up to seq ``end``; False when the read is complete.
        ``includes``: ``(include_tags, include_meta, include_data)``."""
        include_tags, include_meta, include_data = includes
        first = ch.first_seq
        n = min(ch.count, end - first + 1)
        if not ch.any_live(i, n):  # nothing to read here: no need for the records
            if n > i:
                step = min(n - i, max_scan - out.scanned)
                out.scanned += step
                out.last_seq = first + i + step - 1
                return step == n - i
            return True
        b = ch.batch()
        node_of = b.nodes if nodes else None
        whole = (
            include_data
            and (include_tags or b.tag_at is None)
            and (include_meta or b.meta_at is None)
            and node_of is None
        )
        if i < ch.front:
            out.scanned += ch.front - i
            out.last_seq = first + ch.front - 1
            i = ch.front
        ends, dead = b.ends, ch.dead
        while i < n:
            if out.count >= limit or out.scanned >= max_scan:
                return False
            if dead is not None and dead[i]:
                j = dead.find(0, i, n)
                j = n if j < 0 else j
                j = min(j, i + max_scan - out.scanned)
                out.scanned += j - i
                out.last_seq = first + j - 1
                i = j
                continue
            if not whole:
                if node_of is not None and node_of[i] in nodes:  # type: ignore[operator]
                    out.scanned += 1
                    out.last_seq = first + i
                    i += 1
                    continue
                rec = record_bytes(b, i, include_tags, include_meta, include_data)
                if len(rec) + 1 > budget[0] and out.count:
                    return False
                out.parts.append(rec)
                budget[0] -= len(rec) + 1
                out.count += 1
                out.scanned += 1
                out.last_seq = first + i
                i += 1
                continue
            stop = n
            if dead is not None:
                d = dead.find(1, i, n)
                if d >= 0:
                    stop = d
            stop = min(stop, i + limit - out.count, i + max_scan - out.scanned)
            start = b.start(i)
            if ends[stop - 1] - start + 1 > budget[0]:
                fit = bisect.bisect_right(ends, start - 1 + budget[0], i, stop)
                if fit == i:
                    if out.count:
                        return False
                    fit = i + 1  # a response always holds at least one record
                stop = fit
                full = True
            else:
                full = False
            out.parts.append(memoryview(b.blob)[start : ends[stop - 1]])
            budget[0] -= ends[stop - 1] - start + 1
            out.count += stop - i
            out.scanned += stop - i
            out.last_seq = first + stop - 1
            i = stop
            if full:
                return False
        return True

    # -- cold chunks ------------------------------------------------------------------------------

    def resident(self) -> tuple[int, int]:
        """``(records, bytes)`` of the chunks whose batches are in memory (hot: not sealed
        yet, or never sealed — an ephemeral topic, a server without a data directory)."""
        records = size = 0
        for ch in self._chunks:
            if ch.is_hot:
                records += ch.count
                size += ch.ends[-1] + 1
        return records, size

    def _cold_ahead(self, k: int, records: int, size: int, most: int = READ_AHEAD_CHUNKS) -> list[ColdChunk]:
        """The cold chunks not in memory that a read from chunk ``k`` needs for about
        ``records`` records or ``size`` bytes (at least chunk ``k``'s), looking at ``most``
        chunks: loaded in one go."""
        out: list[ColdChunk] = []
        for ch in itertools.islice(self._chunks, k, k + most):
            if records <= 0 or (size <= 0 and out):
                break
            if ch.live == 0:
                continue
            if ch.cold is not None and not ch.cold.store.in_memory(ch.cold):
                out.append(ch.cold)
            records -= ch.live
            size -= ch.ends[-1] + 1
        return out

    def cold_after(self, seq: int, n: int) -> list[ColdChunk]:
        """The cold chunks not in memory holding the next ``n`` live records above ``seq`` (what
        :meth:`live_after` will read), for a caller to load before it reads."""
        k, i = self._find(seq + 1)
        out: list[ColdChunk] = []
        for ch in itertools.islice(self._chunks, k, None):
            if n <= 0:
                break
            live, i = ch.live_from(i), 0  # in the first chunk, only the records above ``seq``
            if not live:
                continue
            if ch.cold is not None and not ch.cold.store.in_memory(ch.cold):
                out.append(ch.cold)
            n -= live
        return out

    def cold_at(self, seqs: Iterable[int]) -> list[ColdChunk]:
        """The cold chunks not in memory holding these live records."""
        out: dict[int, ColdChunk] = {}
        for seq in seqs:
            at = self._at(seq)
            if at is None or not at[0].is_live(at[1]):
                continue
            cold = at[0].cold
            if cold is not None and id(cold) not in out and not cold.store.in_memory(cold):
                out[id(cold)] = cold
        return list(out.values())

    def cold_tag_candidates(self, match: TagMatch, below: int) -> list[tuple[int, ColdChunk]]:
        """``(first_seq, cold)`` of the cold chunks holding a live record below ``below`` that
        may match ``match`` (their tag summaries cannot rule it out): a tag delete examines
        their records (:meth:`tag_matches`)."""
        out: list[tuple[int, ColdChunk]] = []
        for ch in self._chunks:
            if ch.first_seq >= below:
                break
            summary, cold = ch.tag_summary, ch.cold
            if cold is None or summary is None or ch.live == 0 or not summary.may_match(match):
                continue
            out.append((ch.first_seq, cold))
        return out

    def freeze(self, seq: int) -> None:
        """Chunks up to ``seq`` are (about to be) sealed: they never merge again."""
        self.frozen_upto = max(self.frozen_upto, seq)

    def holds_live(self, first_seq: int) -> bool:
        """Whether a chunk starting at ``first_seq`` is stored and holds a live record."""
        at = self._at(first_seq)
        return at is not None and at[1] == 0 and at[0].live > 0

    def tag_matches(self, first_seq: int, batch: RecordBatch, match: TagMatch, below: int) -> list[int]:
        """The live seqs below ``below`` of the chunk starting at ``first_seq`` whose tags (in
        ``batch``, the chunk's records) match ``match``; none if that chunk is gone."""
        at = self._at(first_seq)
        tags = batch.tags
        if at is None or at[1] != 0 or tags is None:
            return []
        ch = at[0]
        n = min(ch.count, below - first_seq)
        return [first_seq + i for i in range(n) if ch.is_live(i) and match.matches(tags[i])]

    def make_cold(self, sealed: RecordBatch, cold: ColdChunk) -> bool:
        """The records of ``sealed`` are durable where ``cold`` says: the hot chunks holding
        them become one cold chunk — one chunk, or a run of them the segment thread joined into
        ``sealed`` (:func:`join_small`) — and their batches leave memory. What happened to those
        records since they were exported is kept: deletes (the chunks' flags, joined) and an
        eviction from the front (whole chunks dropped, a ``front``). ``False`` when those
        chunks are not all here as exported (evicted meanwhile, or a chunk only partly sealed):
        nothing changes then."""
        first, last = sealed.first_seq, sealed.last_seq
        k = bisect.bisect_left(self._firsts, first)
        m = bisect.bisect_right(self._firsts, last)
        members = self._chunks[k:m]
        if not members or (k and self._chunks[k - 1].first_seq + self._chunks[k - 1].count > first):
            return False
        if members[0].first_seq != first and k:  # only an eviction drops chunks, from the front
            return False
        expected = members[0].first_seq
        for ch in members:
            if not ch.is_hot or ch.first_seq != expected:
                return False
            expected += ch.count
        if expected != last + 1:
            return False
        if len(members) == 1 and members[0].first_seq == first:
            members[0].go_cold(cold)
        else:
            self._chunks[k:m] = [_joined(sealed, members, cold)]
            self._firsts[k:m] = [first]
        self.cold_chunks += 1
        self._drop_dead_front()
        return True

    def load_sealed(self, index: ChunkIndex, cold: ColdChunk, gone: bytes) -> tuple[int, int]:
        """Recovery: a sealed chunk, from its segment's index, whose records flagged in ``gone``
        (one byte per record) are dead; its records stay on disk. Returns ``(live records,
        live bytes)`` added."""
        if index.first_seq <= self.head_seq:  # overlaps what is stored: take the records
            return self.load(cold.store.batch(cold), gone)
        ch = _Chunk.sealed(index, cold)
        self.head_seq = index.first_seq + index.count - 1
        self._chunks.append(ch)
        self.cold_chunks += 1
        self._firsts.append(ch.first_seq)
        size = ch.ends[-1] + 1
        i = gone.find(1)
        while i >= 0:
            if ch.dead is None:
                ch.dead = bytearray(ch.count)
            ch.dead[i] = 1
            ch.live -= 1
            size -= ch.size(i)
            i = gone.find(1, i + 1)
        live = ch.live
        self._drop_dead_front()
        return live, size

    # -- sealing ----------------------------------------------------------------------------------

    def export(self, after: int, upto: int | None = None) -> tuple[list[RecordBatch], bytes]:
        """The stored batches holding seqs > ``after`` and starting at or below ``upto`` (default:
        every one; a partly covered first batch is cut), and one gone-flag per record of them —
        what a segment seals. They never merge again (:meth:`freeze`)."""
        k, i = self._find(after + 1)
        batches: list[RecordBatch] = []
        flags: list[bytes] = []
        upto = self.head_seq if upto is None else upto
        if upto <= after:
            return batches, b""
        self.freeze(upto)
        for ch in self._chunks[k:]:
            if ch.first_seq > upto:
                break
            batch, f = ch.batch(), ch.dead_flags()
            if i:
                batch, f = slice_batch(batch, i), f[i:]
                i = 0
            batches.append(batch)
            flags.append(f)
        return batches, b"".join(flags)

    def load(self, batch: RecordBatch, gone: bytes) -> tuple[int, int]:
        """Recovery: store a sealed batch whose records flagged in ``gone`` (one byte per
        record) are dead. Returns ``(live records, live bytes)`` added."""
        added, size = self.append(batch)
        if not added:
            return 0, 0
        skip = batch.count - added
        ch = self._chunks[-1]
        offset = ch.count - added  # the batch may have been merged into earlier chunks
        live = added
        i = gone.find(1, skip)
        while i >= 0:
            if ch.dead is None:
                ch.dead = bytearray(ch.count)
            j = offset + i - skip
            ch.dead[j] = 1
            s = ch.size(j)
            ch.live -= 1
            live -= 1
            size -= s
            i = gone.find(1, i + 1)
        self._drop_dead_front()
        return live, size


def _joined(sealed: RecordBatch, members: list[_Chunk], cold: ColdChunk) -> _Chunk:
    """The cold chunk of ``sealed``, whose records the hot chunks ``members`` held (the first
    ones may be gone: evicted from the front): their liveness carried over."""
    ch = _Chunk(sealed)
    ch.go_cold(cold)
    ch.front = members[0].first_seq - sealed.first_seq + members[0].front
    ch.live = sum(m.live for m in members)
    if any(m.dead is not None for m in members):
        dead = ch.dead = bytearray(ch.count)
        for m in members:
            if m.dead is not None:
                at = m.first_seq - sealed.first_seq
                dead[at : at + m.count] = m.dead
    return ch


def join_small(batches: list[RecordBatch], most: int = MERGE_MAX_BYTES) -> list[RecordBatch]:
    """``batches`` (a topic's exported hot batches, ascending) with each run of consecutive
    seqs joined into batches of up to ``most`` bytes (a batch that size or bigger stays as it
    is). Run on the segment thread before sealing: a cold chunk keeps its descriptor, index
    entry and cache handle resident whatever its size, so fewer, bigger sealed chunks keep a
    cold topic's memory small against its bytes (``bench/cold_index.py``); the join copies the
    small batches' bytes once. Record order and count are unchanged (a segment's per-record
    flags still line up)."""
    out: list[RecordBatch] = []
    run: list[RecordBatch] = []
    size = 0
    for batch in batches:
        n = len(batch.blob) + 1
        if run and (n >= most or batch.first_seq != run[-1].last_seq + 1 or size + n > most):
            out.append(run[0] if len(run) == 1 else merge_batches(run))
            run, size = [], 0
        if n >= most:
            out.append(batch)
        else:
            run.append(batch)
            size += n
    if run:
        out.append(run[0] if len(run) == 1 else merge_batches(run))
    return out


def _first_at_or_after(ts_runs: Sequence[tuple[int, int]], count: int, start: int, ts: int) -> int:
    """The first ordinal ``>= start`` whose ``$ts >= ts`` (``count`` if none) in a chunk of
    ``count`` records with these ``$ts`` runs; ``$ts`` never decreases along a topic, so the
    runs are bisected by their ``$ts``."""
    k = bisect.bisect_left(ts_runs, ts, key=_run_ts)
    return count if k == len(ts_runs) else max(start, ts_runs[k][0])


def _run_ts(run: tuple[int, int]) -> int:
    return run[1]


def _newest_ts(ch: _Chunk) -> int:
    """``$ts`` of a chunk's last record (its newest: ``$ts`` never decreases along a topic)."""
    return ch.ts_runs[-1][1]


def _ts_of(ts_runs: Sequence[tuple[int, int]], i: int) -> int:
    """``$ts`` of record ``i``: that of the last run starting at or before it."""
    return ts_runs[bisect.bisect_right(ts_runs, (i, _TS_MAX)) - 1][1]


_TS_MAX = 1 << 64
"""Above every ``$ts``: ``(i, _TS_MAX)`` sorts after every run starting at ``i``."""


def slice_batch(batch: RecordBatch, i: int) -> RecordBatch:
    """Records ``i ..`` of ``batch`` as a batch of their own (rare: replay overlaps, sealing a
    partly sealed chunk)."""
    cut = batch.start(i)
    ends = array("I", (e - cut for e in batch.ends[i:]))
    runs = [(max(0, at - i), ts) for at, ts in batch.ts_runs]
    runs = [r for k, r in enumerate(runs) if k + 1 == len(runs) or runs[k + 1][0] > 0]
    return RecordBatch(
        batch.first_seq + i,
        batch.blob[cut:],
        ends,
        batch.data_at[i:],
        runs,
        batch.tag_at[i:] if batch.tag_at is not None else None,
        batch.tags[i:] if batch.tags is not None else None,
        batch.nodes[i:] if batch.nodes is not None else None,
        batch.meta_at[i:] if batch.meta_at is not None else None,
    )


def merge_batches(batches: list[RecordBatch]) -> RecordBatch:
    """Batches of consecutive seqs as one batch."""
    first = batches[0]
    ends = array("I", first.ends)
    data_at = array("H", first.data_at)
    runs = list(first.ts_runs)
    shift, offset = len(first.blob) + 1, first.count
    for b in batches[1:]:
        ends.extend([e + shift for e in b.ends])
        data_at.extend(b.data_at)
        for at, ts in b.ts_runs:
            if ts != runs[-1][1]:
                runs.append((at + offset, ts))
        shift += len(b.blob) + 1
        offset += b.count
    counts = [b.count for b in batches]
    return RecordBatch(
        first.first_seq,
        b",".join([b.blob for b in batches]),
        ends,
        data_at,
        runs,
        _concat_arrays([b.tag_at for b in batches], counts, "H"),
        _concat_lists([b.tags for b in batches], counts),
        _concat_lists([b.nodes for b in batches], counts),
        _concat_arrays([b.meta_at for b in batches], counts, "I"),
    )


def _concat_arrays(columns: list[array[int] | None], counts: list[int], typecode: str) -> array[int] | None:
    if all(c is None for c in columns):
        return None
    out = array(typecode)
    for column, n in zip(columns, counts, strict=True):
        if column is None:
            out.extend([0] * n)
        else:
            out.extend(column)
    return out


def _concat_lists(columns: list[list[str | None] | None], counts: list[int]) -> list[str | None] | None:
    if all(c is None for c in columns):
        return None
    out: list[str | None] = []
    for column, n in zip(columns, counts, strict=True):
        out.extend(column if column is not None else [None] * n)
    return out
