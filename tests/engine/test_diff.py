"""§3 reads (diff): cursor semantics, limits, caught_up, §4.5 node filtering."""

from __future__ import annotations

import pytest
from topics_engine import Engine, Limits, ManualClock
from topics_engine.errors import InvalidRequest, TopicNotFound
from topics_engine.topic import ReadBudget

from .conftest import data, raises_topics, read_all, record_bytes, recs, seqs


def test_diff_never_autocreates(engine: Engine) -> None:
    with raises_topics(TopicNotFound, "topic_not_found"):
        engine.diff("nope")
    assert engine.topic_count == 0


def test_empty_topic_is_caught_up(engine: Engine) -> None:
    engine.put_topic("t", {})
    page = engine.diff("t")
    assert recs(page) == [] and page.next_from_seq == 0 and page.head_seq == 0
    assert page.caught_up and page.tombstone is None and page.earliest_seq == 1


def test_from_seq_is_exclusive(engine: Engine) -> None:
    engine.append("t", data(5))
    assert seqs(engine.diff("t", from_seq=0)) == [1, 2, 3, 4, 5]
    assert seqs(engine.diff("t", from_seq=3)) == [4, 5]
    tail = engine.diff("t", from_seq=5)  # pass head_seq to tail
    assert recs(tail) == [] and tail.caught_up and tail.next_from_seq == 5


def test_paging_next_from_seq_and_caught_up(engine: Engine) -> None:
    engine.append("t", data(10))
    p1 = engine.diff("t", limit=4)
    assert seqs(p1) == [1, 2, 3, 4] and p1.next_from_seq == 4 and not p1.caught_up
    p2 = engine.diff("t", from_seq=4, limit=4)
    assert seqs(p2) == [5, 6, 7, 8] and not p2.caught_up
    p3 = engine.diff("t", from_seq=8, limit=4)
    assert seqs(p3) == [9, 10] and p3.next_from_seq == 10 and p3.caught_up
    assert p3.head_seq == 10 and p3.earliest_seq == 1


def test_exact_limit_at_end_is_caught_up(engine: Engine) -> None:
    engine.append("t", data(4))
    page = engine.diff("t", limit=4)
    assert page.next_from_seq == 4 and page.caught_up


def test_tail_from_next_seq_minus_one_gets_only_new(engine: Engine) -> None:
    engine.append("t", data(3))
    cursor = engine.topic_state("t").next_seq - 1
    engine.append("t", data(2, start=10))
    assert [r["data"] for r in recs(engine.diff("t", from_seq=cursor))] == [10, 11]


@pytest.mark.parametrize(("asked", "got"), [(0, 256), (-3, 256), (1, 1), (1000, 1000), (5000, 1000)])
def test_limit_defaults_and_clamps(engine: Engine, asked: int, got: int) -> None:
    engine.append("t", data(1500))
    assert len(recs(engine.diff("t", limit=asked))) == got


def test_limit_clamps_follow_configured_limits(clock: ManualClock) -> None:
    eng = Engine(clock, Limits(max_limit=5, default_limit=2))
    eng.append("t", data(10))
    assert len(recs(eng.diff("t"))) == 2
    assert len(recs(eng.diff("t", limit=100))) == 5


@pytest.mark.parametrize(
    ("limit", "max_batch_bytes", "got"),
    [
        (None, None, (20, 3_000)),  # not given: this use's defaults
        (0, 0, (20, 1 << 20)),  # 0: the default limit, and 1 MiB for the bytes
        (-4, -4, (20, 1 << 20)),
        (7, 9, (7, 9)),
        (5_000, 1 << 40, (100, 8 << 20)),  # clamped to max_limit and 8 MiB
        (1e30, 2.0, (100, 2)),
    ],
)
def test_read_budget_resolves_defaults_zero_and_clamps(
    limit: int | None, max_batch_bytes: int | None, got: tuple[int, int]
) -> None:
    """The one rule set of diff and watch budgets; each use brings its own defaults."""
    assert ReadBudget(20, 3_000).resolve(limit, max_batch_bytes, 100) == ReadBudget(*got)
    with raises_topics(InvalidRequest, "invalid_request"):
        ReadBudget(20, 3_000).resolve(None, 1.5, 100)


def test_wait_ms_clamp(engine: Engine) -> None:
    assert engine.clamp_wait_ms(-5) == 0
    assert engine.clamp_wait_ms(0) == 0
    assert engine.clamp_wait_ms(1234) == 1234
    assert engine.clamp_wait_ms(10**9) == 30_000


def test_max_scan_bounds_work_but_cursor_still_advances(clock: ManualClock) -> None:
    eng = Engine(clock, Limits(max_scan_per_read=3))
    eng.append("t", [{"data": i, "node": "me"} for i in range(7)] + [{"data": "x"}])
    cursor, pages = 0, 0
    while True:
        page = eng.diff("t", from_seq=cursor, node="me")
        pages += 1
        assert page.scanned <= 3
        assert page.next_from_seq > cursor or page.caught_up
        cursor = page.next_from_seq
        if page.caught_up:
            break
    assert pages == 3 and cursor == 8


def test_reads_are_read_only(engine: Engine) -> None:
    engine.append("t", data(3))
    for _ in range(3):
        assert seqs(engine.diff("t", from_seq=1)) == [2, 3]
    assert engine.topic_state("t").count == 3


def test_negative_from_seq_is_rejected(engine: Engine) -> None:
    """from_seq is a u64 (§3.1): a negative cursor is a type error -> 400, never a fake gap."""
    engine.append("t", data(3))
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.diff("t", from_seq=-5)


# -- §4.5 node loop-prevention ---------------------------------------------------------------


def _mixed(engine: Engine) -> None:
    engine.append(
        "t",
        [
            {"data": 0, "node": "a"},
            {"data": 1, "node": "b"},
            {"data": 2},
            {"data": 3, "node": "a"},
            {"data": 4, "node": "ab"},
            {"data": 5, "node": "A"},
            {"data": 6, "node": "a"},
        ],
    )


def test_node_filter_drops_own_records_and_advances_cursor(engine: Engine) -> None:
    _mixed(engine)
    page = engine.diff("t", node="a")
    assert [r["data"] for r in recs(page)] == [1, 2, 4, 5]  # byte-exact, no prefix, case-sensitive
    assert page.next_from_seq == 7 and page.caught_up  # trailing own record still advanced


def test_node_filter_with_limit_never_rescans(engine: Engine) -> None:
    _mixed(engine)
    got, pages = read_all(engine, "t", limit=1, node="a")
    assert [r["data"] for r in got] == [1, 2, 4, 5]
    cursors = [p.next_from_seq for p in pages]
    assert cursors == sorted(cursors) and len(set(cursors)) == len(cursors)


def test_page_of_only_own_records_is_empty_but_advances(engine: Engine) -> None:
    engine.append("t", [{"data": i} for i in range(3)], node="me")
    engine.append("t", [{"data": "other"}])
    page = engine.diff("t", node="me", limit=1)
    assert [r["data"] for r in recs(page)] == ["other"]
    assert page.next_from_seq == 4
    engine.append("t", [{"data": "mine"}], node="me")
    page = engine.diff("t", from_seq=4, node="me")
    assert recs(page) == [] and page.next_from_seq == 5 and page.caught_up
    assert page.tombstone is None  # filtering is silent


def test_node_filter_accepts_a_set(engine: Engine) -> None:
    _mixed(engine)
    assert [r["data"] for r in recs(engine.diff("t", node=["a", "b"]))] == [2, 4, 5]
    assert [r["data"] for r in recs(engine.diff("t", node=[]))] == list(range(7))


def test_dedupe_node_false_disables_filtering(engine: Engine) -> None:
    engine.put_topic("t", {"dedupe_node": False})
    _mixed(engine)
    assert [r["data"] for r in recs(engine.diff("t", node="a"))] == list(range(7))


@pytest.mark.parametrize("node", [5, ["a", 1], {"a": 1}, True])
def test_bad_node_filter_is_400(engine: Engine, node: object) -> None:
    engine.append("t", data(1))
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.diff("t", node=node)


# -- byte budget (docs/DECISIONS.md, "Diff byte budget") --------------------------------------


def test_max_batch_bytes_bounds_a_page(engine: Engine) -> None:
    """The budget counts each record's encoded bytes plus its separator."""
    engine.append("t", [{"data": "x" * 100} for _ in range(50)])
    sizes = [len(r) + 1 for r in record_bytes(engine.diff("t", limit=1000))]
    page = engine.diff("t", limit=1000, max_batch_bytes=sum(sizes[:10]))
    assert seqs(page) == list(range(1, 11))
    assert page.next_from_seq == 10 and not page.caught_up
    budget = sum(sizes[10:20]) + sizes[20] // 2
    nxt = engine.diff("t", from_seq=page.next_from_seq, limit=1000, max_batch_bytes=budget)
    assert seqs(nxt) == list(range(11, 21))


def test_max_batch_bytes_always_delivers_one_record(engine: Engine) -> None:
    engine.append("t", [{"data": "x" * 5000}, {"data": 1}])
    page = engine.diff("t", max_batch_bytes=10)
    assert seqs(page) == [1] and page.next_from_seq == 1


@pytest.mark.parametrize("budget", [0, 10**12])
def test_max_batch_bytes_zero_means_default_and_huge_is_clamped(engine: Engine, budget: int) -> None:
    """0 is the 1 MiB default; anything above 8 MiB is clamped to 8 MiB, never an error."""
    engine.append("t", [{"data": "y" * 9000} for _ in range(1000)])  # ~9 MB of records
    page = engine.diff("t", limit=1000, max_batch_bytes=budget)
    sizes = [len(r) + 1 for r in record_bytes(page)]
    total = sum(sizes)
    cap = (1 << 20) if budget == 0 else (8 << 20)
    assert total <= cap < total + sizes[0] + 9100


def test_max_batch_bytes_must_be_an_integer(engine: Engine) -> None:
    engine.append("t", data(1))
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.diff("t", max_batch_bytes="big")
    assert seqs(engine.diff("t", max_batch_bytes=-5)) == [1]  # clamped like limit: the default
