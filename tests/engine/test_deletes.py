"""§5 record deletes: before_seq, tag match (Eq / Glob / bare string), AND, point-in-time."""

from __future__ import annotations

from typing import Any

import pytest
from topics_engine import Engine, ManualClock
from topics_engine.errors import InvalidRequest, TopicNotFound

from .conftest import data, fields, raises_topics, read_all, recs, seqs


def _tagged(engine: Engine, tags: list[str | None], topic: str = "t") -> None:
    engine.append(topic, [{"data": i, **({"tag": t} if t is not None else {})} for i, t in enumerate(tags)])


def test_before_seq_deletes_prefix(engine: Engine) -> None:
    engine.append("t", data(10))
    size_before = engine.topic_state("t").bytes
    r = fields(engine.delete_records("t", before_seq=4))
    assert r["deleted"] == 3
    assert (r["topic"], r["earliest_seq"], r["head_seq"], r["count"]) == ("t", 4, 10, 7)
    assert 0 < r["bytes"] < size_before
    s = engine.topic_state("t")
    assert (s.count, s.bytes, s.earliest_seq) == (7, r["bytes"], 4)
    assert seqs(engine.diff("t")) == list(range(4, 11))


def test_before_seq_edges(engine: Engine) -> None:
    engine.append("t", data(5))
    assert engine.delete_records("t", before_seq=0).deleted == 0
    assert engine.delete_records("t", before_seq=1).deleted == 0
    r = fields(engine.delete_records("t", before_seq=10**12))  # beyond head: bounded by head+1
    assert (r["deleted"], r["count"], r["bytes"], r["earliest_seq"], r["head_seq"]) == (5, 0, 0, 6, 5)
    assert engine.delete_records("t", before_seq=10**12).deleted == 0  # already gone


def test_delete_is_silent_for_lagging_readers(engine: Engine) -> None:
    engine.append("t", data(10))
    engine.delete_records("t", before_seq=8)
    got, pages = read_all(engine, "t", from_seq=1, limit=1)
    assert all(p.tombstone is None for p in pages)
    assert [r["$seq"] for r in got] == [8, 9, 10]


def test_deleting_everything_then_appending(engine: Engine) -> None:
    engine.append("t", data(3))
    engine.delete_records("t", before_seq=4)
    s = engine.topic_state("t")
    assert (s.count, s.earliest_seq, s.head_seq, s.next_seq) == (0, 4, 3, 4)
    assert engine.append("t", data(1)).first_seq == 4  # seqs are never reused
    assert seqs(engine.diff("t", from_seq=1)) == [4]
    assert engine.topic_state("t").earliest_seq == 4


def test_middle_delete_leaves_earliest(engine: Engine) -> None:
    _tagged(engine, [None, "x", "x", None])
    r = fields(engine.delete_records("t", match="x"))
    assert (r["deleted"], r["earliest_seq"], r["count"]) == (2, 1, 2)
    assert seqs(engine.diff("t")) == [1, 4]
    page = engine.diff("t", from_seq=1, limit=1)
    assert seqs(page) == [4] and page.next_from_seq == 4  # deleted seqs are skipped


@pytest.mark.parametrize("match", ["job-1", ["tag", "Eq", "job-1"]])
def test_eq_match_and_bare_string(engine: Engine, match: Any) -> None:
    _tagged(engine, ["job-1", "job-10", "job-1", None, "job-2", "Job-1"])
    r = fields(engine.delete_records("t", match=match))
    assert r["deleted"] == 2
    assert [x["$tag"] for x in recs(engine.diff("t", include_tags=True)) if "$tag" in x] == [
        "job-10",
        "job-2",
        "Job-1",
    ]


def test_glob_prefix_match(engine: Engine) -> None:
    _tagged(engine, ["chat-42:a", "chat-42:b", "chat-421", "chat-4", None, "chat-42:", "xchat-42:a"])
    r = fields(engine.delete_records("t", match=["tag", "Glob", "chat-42:*"]))
    assert r["deleted"] == 3
    assert [x["data"] for x in recs(engine.diff("t"))] == [2, 3, 4, 6]


def test_glob_star_alone_matches_every_tagged_record_only(engine: Engine) -> None:
    _tagged(engine, ["a", None, "b", "", None])
    assert engine.delete_records("t", match=["tag", "Glob", "*"]).deleted == 3
    assert [x["data"] for x in recs(engine.diff("t"))] == [1, 4]


def test_untagged_records_are_never_matched(engine: Engine) -> None:
    _tagged(engine, [None, None, "x"])
    assert engine.delete_records("t", match="").deleted == 0
    assert engine.delete_records("t", match=["tag", "Glob", "*"]).deleted == 1
    assert engine.topic_state("t").count == 2


def test_empty_string_tag_is_a_real_tag(engine: Engine) -> None:
    _tagged(engine, ["", None, "a"])
    assert engine.delete_records("t", match="").deleted == 1
    assert engine.topic_state("t").count == 2


def test_match_and_before_seq_are_anded(engine: Engine) -> None:
    # publish v1, v2, v3 of msg-123 then delete everything before v3
    _tagged(engine, ["msg-123", "other", "msg-123", "msg-123"])
    r = fields(engine.delete_records("t", match=["tag", "Eq", "msg-123"], before_seq=4))
    assert r["deleted"] == 2
    assert [x["data"] for x in recs(engine.diff("t"))] == [1, 3]
    assert r["earliest_seq"] == 2


def test_match_is_point_in_time(engine: Engine) -> None:
    _tagged(engine, ["kick", "kick"])
    assert engine.delete_records("t", match="kick").deleted == 2
    _tagged(engine, ["kick"])  # a future record with the same tag is unaffected
    assert seqs(engine.diff("t")) == [3]
    assert engine.topic_state("t").count == 1


def test_deleted_records_are_not_redeleted(engine: Engine) -> None:
    _tagged(engine, ["a", "a", "b"])
    assert engine.delete_records("t", match="a").deleted == 2
    assert engine.delete_records("t", match="a").deleted == 0
    assert engine.delete_records("t", before_seq=4).deleted == 1


def test_match_skips_evicted_and_expired(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"cap_records": 3, "ttl_ms": 1000})
    _tagged(engine, ["x"] * 5)  # 1,2 evicted
    assert engine.delete_records("t", match="x", before_seq=4).deleted == 1  # only seq 3
    clock.advance(1001)
    assert engine.delete_records("t", match="x").deleted == 0  # 4,5 expired first
    assert engine.topic_state("t").count == 0


def test_delete_never_moves_evict_floor(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 4})
    engine.append("t", data(6))  # 1,2 evicted -> evict_floor 3
    engine.delete_records("t", before_seq=6)
    topic = engine._topics["t"]
    assert (topic.evict_floor, topic.earliest_seq) == (3, 6)
    assert engine.diff("t", from_seq=2).tombstone is None
    assert engine.diff("t", from_seq=1).tombstone is not None


def test_many_tag_deletes_keep_index_consistent(engine: Engine) -> None:
    """Enough deaths to trigger the tag index's lazy sweep (and slot compaction) mid-delete."""
    n = 3000
    engine.append("t", [{"data": i, "tag": f"g{i % 7}:{i % 3}"} for i in range(n)])
    engine.delete_records("t", before_seq=1500)
    assert engine.delete_records("t", match=["tag", "Glob", "g1:*"]).deleted == sum(
        1 for i in range(1499, n) if i % 7 == 1
    )
    assert engine.delete_records("t", match="g2:0").deleted == sum(
        1 for i in range(1499, n) if i % 7 == 2 and i % 3 == 0
    )
    expected = [i + 1 for i in range(1499, n) if i % 7 != 1 and not (i % 7 == 2 and i % 3 == 0)]
    got, _ = read_all(engine, "t")
    assert [r["$seq"] for r in got] == expected
    assert engine.topic_state("t").count == len(expected)


def test_delete_on_absent_topic_is_404(engine: Engine) -> None:
    with raises_topics(TopicNotFound, "topic_not_found"):
        engine.delete_records("nope", before_seq=5)
    assert engine.topic_count == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"before_seq": None, "match": None},
        {"before_seq": -1},
        {"before_seq": 1.5},
        {"before_seq": "5"},
        {"before_seq": True},
        {"match": ["tag", "Like", "x"]},
        {"match": ["tag", "Glob", "x"]},  # Glob without trailing *
        {"match": ["tag", "Glob", "a*b*"]},  # only one trailing *
        {"match": ["tag", "Glob", "*a"]},
        {"match": ["node", "Eq", "x"]},
        {"match": ["tag", "Eq"]},
        {"match": ["tag", "Eq", 5]},
        {"match": ["tag", "Eq", "x", "y"]},
        {"match": 5},
        {"match": {"tag": "x"}},
        {"match": ["tag", "Eq", "x"], "before_seq": -3},
    ],
)
def test_bad_delete_requests_are_400(engine: Engine, kwargs: dict[str, Any]) -> None:
    engine.append("t", [{"data": 1, "tag": "x"}])
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.delete_records("t", **kwargs)
    assert engine.topic_state("t").count == 1
