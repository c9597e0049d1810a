"""Model-based property tests for cursor / tombstone / retention arithmetic (§0.10, §3, §4.5, §5).

A hypothesis state machine drives one topic through random appends (tags, nodes), record
deletes (before_seq / Eq / Glob / bare string / AND), config changes (cap_records, cap_bytes,
ttl_ms, discard) and ManualClock advances, while an independent model tracks every appended
record's fate: live, ``deleted``, or lost involuntarily (``cap`` / ``ttl``). The model derives
``earliest_seq``, ``evict_floor``, ``count`` and ``bytes`` itself (record sizes are computed from
the §0.4 wire shape, not taken from the engine).

Checked after every step and on every read:
  * topic state (count, bytes, earliest_seq, head_seq, next_seq) equals the model;
    evict_floor equals the model's and ``evict_floor <= earliest_seq``;
  * a page holds exactly the first ``limit`` eligible records after the cursor, ascending and
    unique; never a deleted, evicted, expired or own-node record;
  * ``next_from_seq`` is the seq of the last examined record (>= cursor, monotonic) and
    ``caught_up`` iff it equals ``head_seq``;
  * a tombstone is present iff ``from_seq > 0 and from_seq + 1 < evict_floor`` with
    ``gap_from == from_seq + 1``, ``gap_to == earliest_seq - 1``, the reason of exactly the
    involuntary losses it spans, and ``true_missed <= missed_estimate <= gap size``;
  * a persistent reader accounts for every seq it passes: each one was returned, or filtered as
    its own node, or deleted, or evicted inside a tombstone it was given (the only silent loss
    being evictions skipped by a ``from_seq = 0`` read, which means "from earliest retained").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from topics_engine import Engine, ManualClock
from topics_engine.errors import TopicFull

from .conftest import T0, fields, recs, seqs

TOPIC = "prop"
ME = "me"
TAGS = [None, "a:1", "a:2", "b:1", ""]
NODES = [None, ME, "other"]

PROPERTY_SETTINGS = settings(
    max_examples=250,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def wire_size(seq: int, ts: int, node: str | None, tag: str | None, payload: Any) -> int:
    """A record's retained size — the unit of ``bytes`` / ``cap_bytes`` (records.py): its wire
    object's length plus one separator byte."""
    obj: dict[str, Any] = {"$seq": seq, "$ts": ts}
    if node is not None:
        obj["$node"] = node
    if tag is not None:
        obj["$tag"] = tag
    obj["data"] = payload
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()) + 1


@dataclass
class MRec:
    seq: int
    ts: int
    node: str | None
    tag: str | None
    payload: Any
    size: int
    fate: str = "live"  # live | deleted | cap | ttl


@dataclass
class MConfig:
    cap_records: int = 0
    cap_bytes: int = 0
    ttl_ms: int = 0
    discard: str = "old"


class TopicModel:
    def __init__(self) -> None:
        self.recs: dict[int, MRec] = {}
        self.alive: dict[int, MRec] = {}  # the live subset, in seq order
        self.head = 0
        self.cfg = MConfig()
        self.evict_floor = 1

    # -- derived watermarks -------------------------------------------------------------------

    def live(self) -> list[MRec]:
        return list(self.alive.values())  # dict order == seq order

    @property
    def count(self) -> int:
        return len(self.alive)

    @property
    def bytes(self) -> int:
        return sum(r.size for r in self.live())

    @property
    def earliest(self) -> int:
        live = self.live()
        return live[0].seq if live else self.head + 1

    # -- retention ------------------------------------------------------------------------------

    def _lose(self, r: MRec, reason: str) -> None:
        r.fate = reason
        del self.alive[r.seq]
        self.evict_floor = r.seq + 1

    def expire(self, now: int) -> None:
        if not self.cfg.ttl_ms:
            return
        for r in self.live():
            if now - r.ts <= self.cfg.ttl_ms:
                break
            self._lose(r, "ttl")

    def _over_cap(self) -> bool:
        c = self.cfg
        return bool(
            (c.cap_records and self.count > c.cap_records) or (c.cap_bytes and self.bytes > c.cap_bytes)
        )

    def evict(self) -> None:
        while self.count > 1 and self._over_cap():
            self._lose(next(iter(self.alive.values())), "cap")

    # -- operations -----------------------------------------------------------------------------

    def append(self, batch: list[tuple[str | None, str | None, int]], now: int) -> bool:
        """Apply an append; False when a discard:"reject" topic must refuse it."""
        self.expire(now)
        new = [
            MRec(
                self.head + 1 + i,
                now,
                node,
                tag,
                payload,
                wire_size(self.head + 1 + i, now, node, tag, payload),
            )
            for i, (tag, node, payload) in enumerate(batch)
        ]
        c = self.cfg
        if c.discard == "reject" and (
            (c.cap_records and self.count + len(new) > c.cap_records)
            or (c.cap_bytes and self.bytes + sum(r.size for r in new) > c.cap_bytes)
        ):
            return False
        for r in new:
            self.recs[r.seq] = r
            self.alive[r.seq] = r
        self.head += len(new)
        if c.discard == "old":
            self.evict()
        return True

    def put(self, fields: dict[str, Any], now: int) -> None:
        new = MConfig(**{**self.cfg.__dict__, **fields})
        if new == self.cfg:
            return
        self.expire(now)  # the old TTL's expiries stand
        self.cfg = new
        self.expire(now)
        if new.discard == "old":
            self.evict()

    def delete(self, before_seq: int | None, match: Any, now: int) -> int:
        self.expire(now)
        bound = self.head + 1 if before_seq is None else min(before_seq, self.head + 1)
        n = 0
        for r in self.live():
            if r.seq >= bound or not _matches(match, r.tag):
                continue
            r.fate = "deleted"
            del self.alive[r.seq]
            n += 1
        return n

    # -- tombstone oracle ---------------------------------------------------------------------

    def expected_tombstone(self, from_seq: int) -> dict[str, Any] | None:
        """A tombstone iff ``from_seq + 1 < evict_floor``, for every cursor (0 too)."""
        if from_seq + 1 >= self.evict_floor:
            return None
        gap_from, gap_to = from_seq + 1, self.earliest - 1
        lost = [r for r in self.recs.values() if r.fate in ("cap", "ttl") and gap_from <= r.seq]
        reasons = {r.fate for r in lost}
        return {
            "gap_from": gap_from,
            "gap_to": gap_to,
            "reason": reasons.pop() if len(reasons) == 1 else "mixed",
            "true_missed": len(lost),
            "earliest_seq": self.earliest,
            "head_seq": self.head,
        }


def _matches(match: Any, tag: str | None) -> bool:
    if match is None:
        return True
    if tag is None:
        return False
    if isinstance(match, str):
        return tag == match
    _, op, operand = match
    return tag == operand if op == "Eq" else tag.startswith(operand[:-1])


match_strategy = st.one_of(
    st.none(),
    st.sampled_from(["a:1", "a:2", "b:1", "", "zz"]),
    st.tuples(st.just("tag"), st.just("Eq"), st.sampled_from(["a:1", "b:1", "", "a"])).map(list),
    st.tuples(st.just("tag"), st.just("Glob"), st.sampled_from(["a:*", "*", "b*", "a:1*", "q*"])).map(list),
)

record_strategy = st.tuples(st.sampled_from(TAGS), st.sampled_from(NODES), st.integers(0, 99_999))


class TopicMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock(T0)
        self.engine = Engine(self.clock)
        self.model = TopicModel()
        self.reader_cursor = 0

    @initialize(
        cap_records=st.sampled_from([0, 1, 3, 6]),
        ttl_ms=st.sampled_from([0, 0, 150, 400]),
        discard=st.sampled_from(["old", "old", "reject"]),
    )
    def create(self, cap_records: int, ttl_ms: int, discard: str) -> None:
        fields = {"cap_records": cap_records, "ttl_ms": ttl_ms, "discard": discard}
        assert self.engine.put_topic(TOPIC, fields).created
        self.model.put(fields, self.clock.now_ms())

    @property
    def now(self) -> int:
        return self.clock.now_ms()

    # -- mutations ------------------------------------------------------------------------------

    @rule(batch=st.lists(record_strategy, min_size=1, max_size=5))
    def append(self, batch: list[tuple[str | None, str | None, int]]) -> None:
        records = [
            {"data": payload, **({"tag": tag} if tag is not None else {}), **({"node": node} if node else {})}
            for tag, node, payload in batch
        ]
        expect_ok = self.model.append(batch, self.now)
        if not expect_ok:
            try:
                self.engine.append(TOPIC, records)
            except TopicFull as err:
                assert err.code == "topic_full"
            else:
                raise AssertionError("discard:reject topic over cap accepted a write")
            return
        result = self.engine.append(TOPIC, records)
        assert (result.first_seq, result.last_seq) == (self.model.head - len(batch) + 1, self.model.head)
        assert result.head_seq == self.model.head and not result.created and not result.deduped

    @rule(ms=st.sampled_from([1, 10, 50, 149, 150, 151, 400, 1000]))
    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule(
        field=st.sampled_from(["cap_records", "cap_bytes", "ttl_ms", "discard"]),
        data=st.data(),
    )
    def reconfigure(self, field: str, data: st.DataObject) -> None:
        choices: dict[str, list[Any]] = {
            "cap_records": [0, 1, 2, 4, 8],
            "cap_bytes": [0, 120, 250, 500],
            "ttl_ms": [0, 100, 300, 2000],
            "discard": ["old", "reject"],
        }
        value = data.draw(st.sampled_from(choices[field]), label=field)
        result = self.engine.put_topic(TOPIC, {field: value})
        assert not result.created
        self.model.put({field: value}, self.now)

    @rule(
        before=st.one_of(st.none(), st.integers(0, 40)),
        match=match_strategy,
    )
    def delete(self, before: int | None, match: Any) -> None:
        if before is None and match is None:
            return
        expected = self.model.delete(before, match, self.now)
        r = fields(self.engine.delete_records(TOPIC, before_seq=before, match=match))
        assert r["deleted"] == expected
        m = self.model
        assert (r["earliest_seq"], r["head_seq"], r["count"], r["bytes"]) == (
            m.earliest,
            m.head,
            m.count,
            m.bytes,
        )

    # -- reads ----------------------------------------------------------------------------------

    def _check_page(self, cursor: int, limit: int, node: str | None) -> tuple[int, list[int], Any]:
        """One diff from ``cursor``; checks it against the model; returns (next, seqs, tombstone)."""
        m = self.model
        m.expire(self.now)
        expected_ts = m.expected_tombstone(cursor)
        page = self.engine.diff(TOPIC, from_seq=cursor, limit=limit, node=node, include_tags=True)
        read = page
        got = recs(read)
        got_seqs = [r["$seq"] for r in got]

        eligible = [r.seq for r in m.live() if r.seq > cursor and not (node is not None and r.node == node)]
        assert got_seqs == eligible[:limit], (cursor, got_seqs, eligible)
        for r in got:
            mr = m.recs[r["$seq"]]
            assert mr.fate == "live"
            assert r["data"] == mr.payload and r["$ts"] == mr.ts
            assert r.get("$node") == mr.node and r.get("$tag") == mr.tag
        expected_next = eligible[limit - 1] if len(eligible) >= limit else m.head
        assert read.next_from_seq == expected_next
        assert read.next_from_seq >= cursor
        assert page.caught_up == (read.next_from_seq == m.head)
        assert (read.head_seq, read.earliest_seq) == (m.head, m.earliest)

        ts = read.tombstone
        if expected_ts is None:
            assert ts is None, (cursor, m.evict_floor, ts)
        else:
            assert ts is not None, (cursor, m.evict_floor)
            assert (ts.gap_from, ts.gap_to, ts.earliest_seq, ts.head_seq) == (
                expected_ts["gap_from"],
                expected_ts["gap_to"],
                expected_ts["earliest_seq"],
                expected_ts["head_seq"],
            )
            assert ts.reason == expected_ts["reason"]
            assert expected_ts["true_missed"] <= ts.missed_estimate <= ts.gap_to - ts.gap_from + 1
            assert all(s > ts.gap_to for s in got_seqs)
        return read.next_from_seq, got_seqs, ts

    @rule(limit=st.integers(1, 4))
    def reader_step(self, limit: int) -> None:
        """The persistent, node-filtering consumer takes one page."""
        self._reader_page(limit)

    def _reader_page(self, limit: int) -> bool:
        cursor = self.reader_cursor
        nxt, got, ts = self._check_page(cursor, limit, ME)
        returned = set(got)
        for s in range(cursor + 1, nxt + 1):
            r = self.model.recs[s]
            if s in returned:
                continue
            if r.fate == "live":
                assert r.node == ME, f"seq {s} skipped but live and not own-node"
            elif r.fate in ("cap", "ttl"):
                covered = ts is not None and ts.gap_from <= s <= ts.gap_to
                assert covered or cursor == 0, f"seq {s} lost ({r.fate}) without a tombstone"
            else:
                assert r.fate == "deleted"
        self.reader_cursor = nxt
        return nxt == self.model.head

    @rule(data=st.data(), limit=st.integers(1, 5), filtered=st.booleans())
    def full_scan(self, data: st.DataObject, limit: int, filtered: bool) -> None:
        """Read the whole topic page by page from a random cursor."""
        cursor = data.draw(st.integers(0, self.model.head), label="from_seq")
        node = ME if filtered else None
        start = cursor
        seen: list[int] = []
        first = True
        for _ in range(1000):
            nxt, got, ts = self._check_page(cursor, limit, node)
            if not first:
                assert ts is None  # at most one tombstone per traversal
            first = False
            seen += got
            assert nxt >= cursor
            cursor = nxt
            if cursor == self.model.head:
                break
        else:
            raise AssertionError("scan never caught up")
        assert seen == sorted(set(seen))
        live = {r.seq for r in self.model.live() if not (node and r.node == node)}
        assert set(seen) == {s for s in live if s > start}
        if start == 0:
            # seen ∪ filtered ∪ deleted ∪ evicted == every appended seq, as a partition
            by_fate: dict[str, set[int]] = {"live": set(), "deleted": set(), "cap": set(), "ttl": set()}
            for r in self.model.recs.values():
                by_fate[r.fate].add(r.seq)
            filtered_out = by_fate["live"] - set(seen)
            assert set(seen) | filtered_out | by_fate["deleted"] | by_fate["cap"] | by_fate["ttl"] == set(
                range(1, self.model.head + 1)
            )
            assert all(self.model.recs[s].node == node for s in filtered_out)

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def state_matches_model(self) -> None:
        m = self.model
        m.expire(self.now)
        s = self.engine.topic_state(TOPIC, touch=False)
        assert (s.head_seq, s.next_seq, s.count, s.bytes, s.earliest_seq) == (
            m.head,
            m.head + 1,
            m.count,
            m.bytes,
            m.earliest,
        )
        topic = self.engine._topics[TOPIC]
        assert topic.evict_floor == m.evict_floor
        assert topic.evict_floor <= topic.earliest_seq

    @precondition(lambda self: self.model.head > 0)
    @rule()
    def reader_drains(self) -> None:
        for _ in range(10_000):
            if self._reader_page(3):
                return
        raise AssertionError("reader never caught up")


TopicMachine.TestCase.settings = PROPERTY_SETTINGS
test_topic_state_machine = TopicMachine.TestCase


# -- delete + recreate ---------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(
    old_len=st.integers(1, 30),
    new_len=st.integers(0, 30),
    cursor_back=st.integers(0, 30),
)
def test_stale_cursor_after_recreate(old_len: int, new_len: int, cursor_back: int) -> None:
    """A consumer of the old incarnation at cursor c (1 <= c <= old head): if c is past the new
    head it gets a ``recreated`` tombstone and is moved to the new incarnation's start; a cursor
    within the new head cannot be told apart from a new-incarnation cursor and reads on."""
    engine = Engine(ManualClock(T0))
    engine.append(TOPIC, [{"data": i} for i in range(old_len)])
    cursor = max(1, old_len - cursor_back)
    engine.delete_topic(TOPIC)
    engine.put_topic(TOPIC, {})
    if new_len:
        engine.append(TOPIC, [{"data": -i} for i in range(new_len)])
    page = engine.diff(TOPIC, from_seq=cursor, limit=1000)
    got = seqs(page)
    if cursor > new_len:
        assert page.tombstone is not None and page.tombstone.reason == "recreated"
        assert got == list(range(1, new_len + 1))
    else:
        assert page.tombstone is None
        assert got == list(range(cursor + 1, new_len + 1))
    assert page.caught_up and page.next_from_seq == new_len


# -- a long seeded run: slot compaction and the tag index's lazy sweep -----------------------------


def _scan_all(engine: Engine, model: TopicModel, from_seq: int, limit: int) -> list[int]:
    seen: list[int] = []
    cursor = from_seq
    for i in range(100_000):
        page = engine.diff(TOPIC, from_seq=cursor, limit=limit, touch=False)
        expected = model.expected_tombstone(cursor) if i == 0 else None
        ts = page.tombstone
        assert (ts is None) == (expected is None), (cursor, model.evict_floor)
        if ts is not None and expected is not None:
            assert (ts.gap_from, ts.gap_to, ts.reason) == (
                expected["gap_from"],
                expected["gap_to"],
                expected["reason"],
            )
        got = seqs(page)
        seen += got
        assert page.next_from_seq >= cursor
        cursor = page.next_from_seq
        if page.caught_up:
            break
    assert cursor == model.head
    return seen


def test_long_seeded_run_matches_model() -> None:
    """Thousands of seqs so the dead front is sliced off (>1024 dead slots) and the tag index is
    swept mid-operation; the engine must keep agreeing with the model across those rebuilds."""
    import random

    rng = random.Random(20240607)
    clock = ManualClock(T0)
    engine = Engine(clock)
    model = TopicModel()
    engine.put_topic(TOPIC, {"cap_records": 150})
    model.put({"cap_records": 150}, clock.now_ms())
    tags = ["a:1", "a:2", "b:1", None, "c"]
    for step in range(1500):
        op = rng.random()
        now = clock.now_ms()
        if op < 0.6:
            batch = [
                (rng.choice(tags), rng.choice(NODES), rng.randrange(1000)) for _ in range(rng.randint(1, 12))
            ]
            ok = model.append(batch, now)
            records = [
                {"data": p, **({"tag": t} if t is not None else {}), **({"node": n} if n else {})}
                for t, n, p in batch
            ]
            if ok:
                assert engine.append(TOPIC, records).last_seq == model.head
            else:
                try:
                    engine.append(TOPIC, records)
                except TopicFull:
                    pass
                else:
                    raise AssertionError("reject topic accepted a write over cap")
        elif op < 0.75:
            match = rng.choice(["a:1", ["tag", "Glob", "a:*"], ["tag", "Eq", "b:1"], None, "c"])
            before = rng.choice([None, max(0, model.head - rng.randrange(200))])
            if before is None and match is None:
                match = "c"
            assert engine.delete_records(TOPIC, before_seq=before, match=match).deleted == model.delete(
                before, match, now
            )
        elif op < 0.85:
            clock.advance(rng.choice([1, 50, 300, 2000]))
        else:
            field, value = rng.choice(
                [
                    ("cap_records", rng.choice([0, 20, 150, 300])),
                    ("cap_bytes", rng.choice([0, 3000, 20_000])),
                    ("ttl_ms", rng.choice([0, 500, 5000])),
                    ("discard", rng.choice(["old", "old", "reject"])),
                ]
            )
            if field == "cap_records" and value == 0 and model.cfg.cap_bytes == 0:
                value = 300  # keep the live set bounded so the model stays cheap
            engine.put_topic(TOPIC, {field: value})
            model.put({field: value}, clock.now_ms())
        if step % 25 == 0:
            model.expire(clock.now_ms())
            s = engine.topic_state(TOPIC, touch=False)
            assert (s.head_seq, s.count, s.bytes, s.earliest_seq) == (
                model.head,
                model.count,
                model.bytes,
                model.earliest,
            )
            assert engine._topics[TOPIC].evict_floor == model.evict_floor
        if step % 150 == 0 and model.head:
            cursor = rng.randrange(model.head + 1)
            seen = _scan_all(engine, model, cursor, rng.choice([7, 100, 1000]))
            assert seen == [r.seq for r in model.live() if r.seq > cursor]
    topic = engine._topics[TOPIC]
    assert topic.log._firsts[0] > 1, "the run never released a batch from the front"
    assert model.head > 3000
    assert _scan_all(engine, model, 0, 1000) == [r.seq for r in model.live()]
