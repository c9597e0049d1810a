"""Model-based property test of a topic whose records are cold (``storage.coldstore``).

A hypothesis state machine drives one topic on a :class:`DataDirectory` with tiny segments
sealed inline and a tiny cache (8 KiB, or none at all), so nearly every record lives only in
its segment file and every read reads it back: appends (single records and batches, some
tagged, some with ``$node`` or ``meta``), deletes by seq list (``Engine.delete_seqs``, the path
of queue acks), by ``before_seq`` and by tag (``Eq``, ``Glob`` prefix), config changes
(``cap_records``, ``cap_bytes``, ``ttl_ms``) with ``ManualClock`` advances, checkpoints, and
restarts — a clean close (with or without a checkpoint first) or a crash (as
``tests/storage/harness.crash`` leaves the files), then a new engine recovered from the same
directory.

An independent model keeps every live record's exact wire bytes
(``{"$seq","$ts"[,"$node"][,"$tag"],"data"[,"meta"]}``, compact JSON) and applies the rules
``topic.py`` documents: a TTL drops the prefix older than ``ttl_ms``; cap eviction takes the
oldest records, exact in counts and bytes, and keeps at least the newest; ``bytes`` is the sum
of ``len(record) + 1``. After every step:

  * ``count``, ``bytes``, ``earliest_seq``, ``head_seq`` and ``evict_floor`` equal the model's;
  * a full diff from 0 in pages, and one from a random cursor, serve exactly the model's live
    records after the cursor, byte for byte, each page the prefix ``limit`` and
    ``max_batch_bytes`` allow; a tombstone iff ``from_seq + 1 < evict_floor``;
  * a delete reports exactly the model's matching live records;
  * a seek by time (``from_ts``) starts where the model's rule says and reads what a read from
    that cursor reads.

A crash may raise the head (seqs reserved before it are never handed out again): the model
takes the recovered head, which must not be below its own, and keeps every record.

The record log's own invariants (:func:`check_log`) hold after every step too. A second machine
(:class:`DeferredColdTopicMachine`) lets sealed chunks go cold only when a ``release`` step says
(as the segment thread's completion would): every other step can run between a seal's export and
its release, when the hot chunks each joined batch covers become one cold chunk
(``RecordLog.make_cold``) keeping the deletes and front evictions made meanwhile.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from topics_engine import Engine, Limits, ManualClock
from topics_engine.datadir.directory import DataDirectory
from topics_engine.datadir.sealing import SegmentPolicy
from topics_engine.matching import TagMatch
from topics_engine.recordlog import TsRuns
from topics_engine.topic import Topic

from ..storage import harness
from .conftest import T0, record_bytes

TOPIC = "cold"
TAGS = [None, None, "a:1", "a:2", "b:1", ""]
NODES = [None, None, None, "n1"]
TINY = SegmentPolicy(max_events=8, max_bytes=4 << 10, max_age_ms=60_000)

COLD_SETTINGS = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    derandomize=True,
    # no shrink phase: every step does file work, and shrinking a 30-step failure takes minutes;
    # a failure prints the whole run instead
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@dataclass
class MRec:
    seq: int
    ts: int
    tag: str | None
    wire: bytes

    @property
    def size(self) -> int:
        return len(self.wire) + 1


def wire_of(seq: int, ts: int, node: str | None, tag: str | None, data: Any, meta: Any) -> bytes:
    obj: dict[str, Any] = {"$seq": seq, "$ts": ts}
    if node is not None:
        obj["$node"] = node
    if tag is not None:
        obj["$tag"] = tag
    obj["data"] = data
    if meta is not None:
        obj["meta"] = meta
    return orjson.dumps(obj)


def matches(match: Any, tag: str | None) -> bool:
    if tag is None:
        return False
    _, op, operand = match
    return bool(tag == operand if op == "Eq" else tag.startswith(operand[:-1]))


class Model:
    def __init__(self) -> None:
        self.alive: dict[int, MRec] = {}  # insertion order == seq order
        self.head = 0
        self.evict_floor = 1
        self.cap_records = 0
        self.cap_bytes = 0
        self.ttl_ms = 0
        self.last_ts = 0  # the newest $ts ever given

    @property
    def count(self) -> int:
        return len(self.alive)

    @property
    def bytes(self) -> int:
        return sum(r.size for r in self.alive.values())

    @property
    def earliest(self) -> int:
        return next(iter(self.alive)) if self.alive else self.head + 1

    def live(self) -> list[MRec]:
        return list(self.alive.values())

    def _lose_front(self) -> None:
        seq = next(iter(self.alive))
        del self.alive[seq]
        self.evict_floor = seq + 1

    def expire(self, now: int) -> None:
        if not self.ttl_ms:
            return
        while self.alive and now - next(iter(self.alive.values())).ts > self.ttl_ms:
            self._lose_front()

    def evict(self) -> None:
        while self.count > 1 and (
            (self.cap_records and self.count > self.cap_records)
            or (self.cap_bytes and self.bytes > self.cap_bytes)
        ):
            self._lose_front()

    def append(self, records: list[tuple[str | None, str | None, Any, Any]], now: int) -> None:
        self.expire(now)
        for tag, node, data, meta in records:
            self.head += 1
            self.alive[self.head] = MRec(self.head, now, tag, wire_of(self.head, now, node, tag, data, meta))
        self.last_ts = now
        self.evict()

    def cursor_for_ts(self, from_ts: int) -> int:
        """Where a seek by time starts (the exclusive cursor), by the rules ``Topic.seq_before_ts``
        documents: 0 at or below the oldest live record (or, with nothing live, when a record
        ever had ``$ts >= from_ts``); the head above the newest."""
        live = self.live()
        if not live:
            return 0 if from_ts <= self.last_ts else self.head
        first = next((r for r in live if r.ts >= from_ts), None)
        if first is None:
            return self.head
        return 0 if first is live[0] else first.seq - 1

    def put(self, field: str, value: int, now: int) -> None:
        self.expire(now)  # the old TTL's expiries stand
        setattr(self, field, value)
        self.expire(now)
        self.evict()

    def delete(self, before: int | None, match: Any, now: int) -> list[int]:
        self.expire(now)
        bound = self.head + 1 if before is None else min(before, self.head + 1)
        gone = [r.seq for r in self.live() if r.seq < bound and (match is None or matches(match, r.tag))]
        for seq in gone:
            del self.alive[seq]
        return gone


class Node:
    """One "process": an engine recovered from ``path`` over a data directory of tiny segments
    sealed inline, and its event loop (which the sync calls never run, as in the engine suite).

    ``deferred``: a seal's segment is written at once (on the calling thread, in submission
    order, as the segment thread would), but its chunks go cold only when the test says
    (:meth:`release`) — or before a checkpoint's own release, which the segment thread's order
    puts after every earlier seal's: everything the event loop does between a seal's export and
    its release can happen in between."""

    def __init__(self, path: Path, clock: ManualClock, cache_bytes: int, deferred: bool = False) -> None:
        self.loop = asyncio.new_event_loop()
        self.engine = Engine(clock, Limits())
        self.datadir = DataDirectory(path, segment_policy=TINY, cache_bytes=cache_bytes, inline_segments=True)
        self.datadir.lock()
        for _ in self.datadir.recover(self.engine):
            pass
        self.datadir.open(self.engine, self.loop)
        self.pending: list[Callable[[], None]] = []
        """Releases of written segments not run yet, oldest first (``deferred``)."""
        if deferred:
            sealer = self.datadir.sealer
            assert sealer is not None
            run_inline = sealer.run

            def run(fn: Callable[[], Any], then: Callable[[Any], None] | None = None) -> asyncio.Future[Any]:
                if then is None:  # a checkpoint's file work: it releases its own segments after
                    future = run_inline(fn)
                    self.release(len(self.pending))
                    return future
                return run_inline(fn, lambda result: self.pending.append(lambda: then(result)))

            sealer.run = run  # type: ignore[method-assign]

    def release(self, n: int = 1) -> None:
        """Run the ``n`` oldest pending releases (segments durable: their chunks go cold)."""
        for _ in range(n):
            self.pending.pop(0)()

    def flush(self) -> None:
        wal = self.datadir.wal
        assert wal is not None
        self.loop.run_until_complete(wal.run_task(lambda: None))

    def checkpoint(self) -> None:
        self.loop.run_until_complete(self.datadir.checkpoint())

    def close(self) -> None:
        self.flush()
        self.datadir.close()
        self.loop.close()

    def crash(self) -> None:
        self.flush()  # every frame reached the disk: a crash loses nothing acknowledged
        harness.crash(harness.Node(self.engine, self.datadir))
        self.datadir.cold.close()
        self.loop.close()


record_strategy = st.tuples(
    st.sampled_from(TAGS),
    st.sampled_from(NODES),
    st.one_of(
        st.integers(-5, 10_000),
        st.builds(lambda i, n: {"i": i, "pad": "x" * n}, st.integers(0, 999), st.integers(0, 400)),
    ),
    st.one_of(st.none(), st.none(), st.builds(lambda t: {"trace": f"t{t}"}, st.integers(0, 99))),
)

match_strategy = st.one_of(
    st.tuples(st.just("tag"), st.just("Eq"), st.sampled_from(["a:1", "a:2", "b:1", "", "a"])).map(list),
    st.tuples(st.just("tag"), st.just("Glob"), st.sampled_from(["a:*", "*", "b*", "a:1*", "q*"])).map(list),
)


class ColdTopicMachine(RuleBasedStateMachine):
    deferred = False
    """Whether sealed chunks go cold only when the :meth:`release` rule says (see :class:`Node`)."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="topics-cold-props-"))
        self.clock = ManualClock(T0)
        self.model = Model()
        self.cache_bytes = 0
        self.node: Node | None = None

    @initialize(
        cache_bytes=st.sampled_from([0, 8 << 10]),
        fill=st.lists(record_strategy, min_size=16, max_size=80),
        spread=st.sampled_from([0, 1, 3]),
    )
    def start(
        self, cache_bytes: int, fill: list[tuple[str | None, str | None, Any, Any]], spread: int
    ) -> None:
        """A new directory and topic, with a backlog (one record per write: sealed segment by
        segment as it grows), so every run starts with cold records; with a ``spread``, every
        third record is written that many ms after the one before (``$ts`` steps to seek to)."""
        self.cache_bytes = cache_bytes
        self.node = Node(self.dir / "data", self.clock, cache_bytes, self.deferred)
        assert self.engine.put_topic(TOPIC, {}).created
        for i, record in enumerate(fill):
            if i % 3 == 2:
                self.clock.advance(spread)
            self.append([record])

    def teardown(self) -> None:
        try:
            if self.node is not None:
                self.node.close()
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def engine(self) -> Engine:
        assert self.node is not None
        return self.node.engine

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    # -- mutations ------------------------------------------------------------------------------

    @rule(record=record_strategy)
    def append_one(self, record: tuple[str | None, str | None, Any, Any]) -> None:
        self.append([record])

    @rule(batch=st.lists(record_strategy, min_size=1, max_size=16))
    def append(self, batch: list[tuple[str | None, str | None, Any, Any]]) -> None:
        records: list[dict[str, Any]] = []
        for tag, node, data, meta in batch:
            rec: dict[str, Any] = {"data": data}
            if tag is not None:
                rec["tag"] = tag
            if node is not None:
                rec["node"] = node
            if meta is not None:
                rec["meta"] = meta
            records.append(rec)
        self.model.append(batch, self.now)
        result = self.engine.append(TOPIC, records)
        assert (result.first_seq, result.last_seq) == (self.model.head - len(batch) + 1, self.model.head)

    @rule(ms=st.sampled_from([1, 40, 150, 400, 2500]))
    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule(
        field=st.sampled_from(["cap_records", "cap_bytes", "ttl_ms"]),
        data=st.data(),
    )
    def reconfigure(self, field: str, data: st.DataObject) -> None:
        choices = {
            "cap_records": [0, 0, 3, 12, 40],
            "cap_bytes": [0, 0, 300, 2_000, 9_000],
            "ttl_ms": [0, 0, 200, 1_000, 5_000],
        }
        value = data.draw(st.sampled_from(choices[field]), label=field)
        assert not self.engine.put_topic(TOPIC, {field: value}).created
        self.model.put(field, value, self.now)

    @precondition(lambda self: self.model.count > 0)
    @rule(data=st.data())
    def delete_seq_list(self, data: st.DataObject) -> None:
        """The delete path of queue acks: exactly these live seqs."""
        self.model.expire(self.now)
        live = [r.seq for r in self.model.live()]
        if not live:
            return
        picked = sorted(data.draw(st.sets(st.sampled_from(live), min_size=1, max_size=8), label="seqs"))
        topic = self.engine.get(TOPIC)
        topic.expire(self.now)
        result = self.engine.delete_seqs(topic, picked)
        for seq in picked:
            del self.model.alive[seq]
        assert result.deleted == len(picked)
        self._check_counts(result)

    @rule(before=st.one_of(st.none(), st.none(), st.integers(0, 120)), match=match_strategy)
    def delete_by_tag(self, before: int | None, match: Any) -> None:
        expected = self.model.delete(before, match, self.now)
        result = self.engine.delete_records(TOPIC, before_seq=before, match=match)
        assert result.deleted == len(expected), (match, before, expected)
        self._check_counts(result)

    @precondition(lambda self: self.model.head > 0)
    @rule(data=st.data())
    def delete_before(self, data: st.DataObject) -> None:
        before = max(0, self.model.earliest + data.draw(st.integers(-2, 10), label="past_earliest"))
        expected = self.model.delete(before, None, self.now)
        result = self.engine.delete_records(TOPIC, before_seq=before)
        assert result.deleted == len(expected)
        self._check_counts(result)

    def _check_counts(self, result: Any) -> None:
        m = self.model
        assert (result.earliest_seq, result.head_seq, result.count, result.bytes) == (
            m.earliest,
            m.head,
            m.count,
            m.bytes,
        )

    # -- storage ----------------------------------------------------------------------------------

    @precondition(lambda self: self.node is not None and self.node.pending)
    @rule(data=st.data())
    def release(self, data: st.DataObject) -> None:
        """Segments written earlier are durable now: their chunks go cold (deferred only)."""
        assert self.node is not None
        self.node.release(data.draw(st.integers(1, len(self.node.pending)), label="releases"))

    @rule()
    def checkpoint(self) -> None:
        assert self.node is not None
        self.node.checkpoint()

    @rule(how=st.sampled_from(["clean", "checkpoint", "crash"]))
    def restart(self, how: str) -> None:
        assert self.node is not None
        if how == "checkpoint":
            self.node.checkpoint()
        if how == "crash":
            self.node.crash()
        else:
            self.node.close()
        self.node = None
        self.node = Node(self.dir / "data", self.clock, self.cache_bytes, self.deferred)
        head = self.engine.get(TOPIC).head_seq
        if how == "crash":
            assert head >= self.model.head  # a crash may skip seqs, never reuse them
            self.model.head = head
        else:
            assert head == self.model.head
        topic = self.engine.get(TOPIC)
        assert topic.log.resident()[0] <= topic.head_seq - topic.hot.sealed_upto
        # the next write continues above the head
        assert self.engine.topic_state(TOPIC, touch=False).next_seq == head + 1

    # -- reads ------------------------------------------------------------------------------------

    def _expected_page(self, cursor: int, limit: int, budget: int) -> list[MRec]:
        out: list[MRec] = []
        used = 0
        for r in self.model.live():
            if r.seq <= cursor:
                continue
            if len(out) >= limit or (out and used + r.size > budget):
                break
            out.append(r)
            used += r.size
        return out

    def _scan(self, cursor: int, limit: int, max_batch_bytes: int) -> None:
        """Page from ``cursor`` until caught up; every page is checked against the model."""
        m = self.model
        m.expire(self.now)
        budget = max_batch_bytes or (1 << 20)
        start = cursor
        served: list[bytes] = []
        for page_no in range(10_000):
            page = self.engine.diff(
                TOPIC,
                from_seq=cursor,
                limit=limit,
                include_tags=True,
                max_batch_bytes=max_batch_bytes,
                touch=False,
            )
            expected = self._expected_page(cursor, limit, budget)
            got = record_bytes(page)
            assert got == [r.wire for r in expected], (cursor, limit, budget)
            assert (page.head_seq, page.earliest_seq) == (m.head, m.earliest)
            ts = page.tombstone
            if page_no == 0 and cursor + 1 < m.evict_floor:
                assert ts is not None, (cursor, m.evict_floor)
                assert (ts.gap_from, ts.gap_to) == (cursor + 1, m.earliest - 1)
            else:
                assert ts is None, (cursor, m.evict_floor, ts)
            remaining = [r for r in m.live() if r.seq > cursor]
            nxt = page.next_from_seq
            # the cursor moves to the last seq examined: past the records served and perhaps
            # past dead seqs after them, never past a live record not served
            assert (expected[-1].seq if expected else cursor) <= nxt <= m.head
            if len(remaining) > len(expected):
                assert nxt < remaining[len(expected)].seq
            assert page.caught_up == (nxt == m.head)
            served += got
            cursor = nxt
            if page.caught_up:
                break
        else:
            raise AssertionError("reader never caught up")
        assert served == [r.wire for r in m.live() if r.seq > start]

    @rule(limit=st.sampled_from([1, 3, 7, 50, 1000]), max_batch_bytes=st.sampled_from([0, 1, 300, 2_000]))
    def full_diff(self, limit: int, max_batch_bytes: int) -> None:
        self._scan(0, limit, max_batch_bytes)

    @rule(data=st.data(), limit=st.sampled_from([1, 4, 16, 1000]))
    def diff_from_cursor(self, data: st.DataObject, limit: int) -> None:
        cursor = data.draw(st.integers(0, self.model.head + 2), label="from_seq")
        cursor = min(cursor, self.model.head)
        self._scan(cursor, limit, 0)

    @rule(data=st.data(), limit=st.sampled_from([1, 5, 1000]))
    def diff_from_time(self, data: st.DataObject, limit: int) -> None:
        """A seek by time lands where the model says, and reads exactly what a read from that
        cursor reads (tombstone included); from there the pages match the model."""
        m = self.model
        m.expire(self.now)
        stamps = sorted({r.ts for r in m.live()} | {0, T0, m.last_ts})
        base = data.draw(st.sampled_from(stamps), label="near")
        from_ts = max(0, base + data.draw(st.sampled_from([-1, 0, 0, 1]), label="offset"))
        page = self.engine.diff(TOPIC, from_ts=from_ts, limit=limit, include_tags=True, touch=False)
        expected = m.cursor_for_ts(from_ts)
        assert page.from_seq == expected, (from_ts, page.from_seq, expected)
        same = self.engine.diff(TOPIC, from_seq=expected, limit=limit, include_tags=True, touch=False)
        assert record_bytes(page) == record_bytes(same)
        assert (page.next_from_seq, page.tombstone) == (same.next_from_seq, same.tombstone)
        self._scan(expected, limit, 0)

    # -- invariants -------------------------------------------------------------------------------

    @invariant()
    def state_matches_model(self) -> None:
        if self.node is None:
            return
        m = self.model
        m.expire(self.now)
        s = self.engine.topic_state(TOPIC, touch=False)
        assert (s.head_seq, s.count, s.bytes, s.earliest_seq) == (m.head, m.count, m.bytes, m.earliest)
        topic = self.engine.get(TOPIC)
        assert topic.evict_floor == m.evict_floor
        settled = not self.node.pending
        if settled:  # the records really are cold: only the unsealed tail stays in memory
            assert topic.log.resident()[0] <= topic.head_seq - topic.hot.sealed_upto
        check_log(topic, settled)
        cold = self.node.datadir.cold
        assert cold.cache.bytes <= cold.cache.capacity

    @invariant()
    def full_read_matches_model(self) -> None:
        if self.node is None:
            return
        self._scan(0, 1000, 0)


def check_log(topic: Topic, settled: bool) -> None:
    """The record log's invariants (``recordlog``): chunks ascend without overlap, ``_firsts``
    mirrors them, each chunk's ``live`` counts its records at or above ``front`` not flagged,
    no wholly dead chunk leads, ``cold_chunks`` counts the cold ones; a chunk with a live
    record holds what its resident ``ends`` and ``$ts`` runs say (a cold one's tag summary
    admits its live records' tags), and the tag index holds every live tagged record of a hot
    chunk and no live record of a cold one. ``settled`` (no release pending): every sealed
    chunk is cold."""
    log = topic.log
    chunks = log._chunks
    assert log._firsts == [ch.first_seq for ch in chunks]
    last = 0
    for ch in chunks:
        assert ch.first_seq > last and ch.count == len(ch.ends) > 0
        last = ch.first_seq + ch.count - 1
        assert 0 <= ch.front <= ch.count
        assert ch.live == ch.dead_flags().count(0)
        if settled and last <= topic.hot.sealed_upto:
            assert not ch.is_hot, (ch.first_seq, ch.count, topic.hot.sealed_upto)
        if not ch.live:  # never read again (its segment may be gone: every flag set)
            continue
        batch = ch.batch()
        assert (batch.first_seq, batch.count) == (ch.first_seq, ch.count)
        if not ch.is_hot:
            assert isinstance(ch.ts_runs, TsRuns)
            assert list(ch.ts_runs) == list(batch.ts_runs) and ch.ends == batch.ends
            live_tags = {t for i, t in enumerate(batch.tags or []) if t is not None and ch.is_live(i)}
            assert all(
                ch.tag_summary is not None and ch.tag_summary.may_match(TagMatch(tag, None))
                for tag in live_tags
            )
        elif batch.tags is not None:
            for i, tag in enumerate(batch.tags):
                if tag is not None and ch.is_live(i):
                    assert ch.first_seq + i in topic.tags.eq(tag, ch.first_seq + i + 1)
    assert last <= log.head_seq
    assert not chunks or chunks[0].live > 0
    assert log.cold_chunks == sum(not ch.is_hot for ch in chunks)
    for tag, seqs in topic.tags._seqs.items():  # the index covers the hot chunks only
        assert seqs == sorted(seqs), tag
        for seq in seqs:
            at = log._at(seq)
            assert at is None or not at[0].is_live(at[1]) or at[0].is_hot, (tag, seq)


ColdTopicMachine.TestCase.settings = COLD_SETTINGS
test_cold_topic_state_machine = ColdTopicMachine.TestCase


class DeferredColdTopicMachine(ColdTopicMachine):
    """The same topic, its sealed chunks going cold only when :meth:`release` says: deletes,
    evictions, checkpoints and restarts happen between a seal's export and its release (when
    ``RecordLog.make_cold`` turns the hot chunks each joined batch covers into one cold chunk)."""

    deferred = True


DeferredColdTopicMachine.TestCase.settings = COLD_SETTINGS
test_cold_topic_released_late = DeferredColdTopicMachine.TestCase
