"""§2 writes: seq assignment, atomicity, lazy create, inline config, batch limits."""

from __future__ import annotations

from typing import Any

import pytest
from topics_engine import Engine, Limits, ManualClock
from topics_engine.datadir.walpersistence import WalPersistence
from topics_engine.errors import (
    BatchTooLarge,
    InvalidRequest,
    RecordTooLarge,
    TopicFull,
    TopicNotFound,
)

from .conftest import T0, data, raises_topics, recs, settle


def test_seqs_are_contiguous_in_array_order(engine: Engine) -> None:
    r1 = engine.append("t", data(3))
    assert (r1.first_seq, r1.last_seq, r1.head_seq, r1.created, r1.deduped) == (1, 3, 3, True, False)
    r2 = engine.append("t", data(2, start=3))
    assert (r2.first_seq, r2.last_seq, r2.head_seq, r2.created) == (4, 5, 5, False)
    assert [(r["$seq"], r["data"]) for r in recs(engine.diff("t"))] == [(i + 1, i) for i in range(5)]


def test_append_result_wire(engine: Engine) -> None:
    r = engine.append("t", data(3))
    assert (r.topic, r.first_seq, r.last_seq, r.head_seq, r.count) == ("t", 1, 3, 3, 3)
    assert (r.created, r.deduped, r.wait) == (True, False, None)


def test_records_carry_commit_ts_and_are_stored_verbatim(engine: Engine, clock: ManualClock) -> None:
    payloads: list[Any] = [{"nested": [1, 2, {"x": None}]}, [1, "a"], "s", 1.5, True, None, 0]
    engine.append("t", [{"data": p} for p in payloads])
    got = recs(engine.diff("t"))
    assert [r["data"] for r in got] == payloads
    assert all(r["$ts"] == T0 for r in got)


def test_ts_never_goes_backwards(engine: Engine, clock: ManualClock) -> None:
    engine.append("t", data(1))
    clock.advance(5)
    engine.append("t", data(1))
    assert [r["$ts"] for r in recs(engine.diff("t"))] == [T0, T0 + 5]


def test_wire_key_order_and_optional_keys(engine: Engine) -> None:
    engine.append(
        "t",
        [
            {"data": {"a": 1}, "tag": "tg", "node": "n1", "meta": {"trace": "z"}},
            {"data": None},
        ],
    )
    full = [list(r) for r in recs(engine.diff("t", include_tags=True, include_meta=True))]
    assert full == [["$seq", "$ts", "$node", "$tag", "data", "meta"], ["$seq", "$ts", "data"]]
    plain = recs(engine.diff("t"))  # include_tags defaults false, include_meta true
    assert list(plain[0]) == ["$seq", "$ts", "$node", "data", "meta"]
    assert plain[1] == {"$seq": 2, "$ts": T0, "data": None}  # data always present, may be null
    nometa = recs(engine.diff("t", include_meta=False, include_tags=True))
    assert list(nometa[0]) == ["$seq", "$ts", "$node", "$tag", "data"]


def test_batch_node_defaults_and_record_node_overrides(engine: Engine) -> None:
    engine.append("t", [{"data": 1}, {"data": 2, "node": "mine"}], node="batch")
    assert [r["$node"] for r in recs(engine.diff("t"))] == ["batch", "mine"]


def test_lazy_create_with_inline_config(engine: Engine) -> None:
    r = engine.append("t", data(1), config={"cap_records": 7, "durability": "memory"})
    assert r.created
    cfg = engine.topic_state("t").config
    assert cfg.cap_records == 7 and cfg.durability == "memory"


def test_inline_config_ignored_when_topic_exists(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 5})
    r = engine.append("t", data(1), config={"cap_records": 1, "type": "queue"})
    assert not r.created
    cfg = engine.topic_state("t").config
    assert cfg.cap_records == 5 and cfg.type == "log"


def test_invalid_inline_config_on_create_is_400_and_creates_nothing(engine: Engine) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.append("t", data(1), config={"cap_records": "lots"})
    assert engine.topic_count == 0


def test_create_false_on_absent_topic_is_404(engine: Engine) -> None:
    with raises_topics(TopicNotFound, "topic_not_found") as caught:
        engine.append("t", data(1), create=False)
    assert caught[0].detail == {"topic": "t"}
    assert engine.topic_count == 0


def test_create_false_on_existing_topic_appends(engine: Engine) -> None:
    engine.put_topic("t", {})
    assert engine.append("t", data(1), create=False).first_seq == 1


def test_auto_create_only_governs_creation(engine: Engine) -> None:
    engine.put_topic("t", {"auto_create": False})
    assert engine.append("t", data(1)).first_seq == 1  # the topic exists: writes are fine
    engine.delete_topic("t")
    assert engine.append("t", data(1)).created  # a brand-new name defaults to auto_create true


def test_rejected_lazy_create_leaves_no_topic(engine: Engine) -> None:
    with raises_topics(TopicFull, "topic_full"):
        engine.append("t", data(3), config={"cap_records": 2, "discard": "reject"})
    assert engine.topic_count == 0
    with raises_topics(TopicNotFound, "topic_not_found"):
        engine.topic_state("t")


def test_bad_topic_name_is_400(engine: Engine) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.append("bad name", data(1))
    assert engine.topic_count == 0


@pytest.mark.parametrize(
    "records",
    [
        [],
        None,
        {"data": 1},
        "x",
        [1],
        [{"tag": "no-data"}],
        [{"data": 1, "extra": True}],
        [{"data": 1, "$seq": 5}],
        [{"data": 1, "tag": 5}],
        [{"data": 1, "node": ["a"]}],
        [{"data": 1, "meta": "not-an-object"}],
        [{"data": 1, "meta": [1]}],
        [{"data": 1}, {"data": 2, "tag": 3}],
    ],
)
def test_malformed_batches_are_400_and_atomic(engine: Engine, records: Any) -> None:
    engine.append("t", data(1))
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.append("t", records)
    assert engine.topic_state("t").head_seq == 1


def test_batch_node_must_be_string(engine: Engine) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.append("t", data(1), node=5)


def test_batch_record_limit(clock: ManualClock) -> None:
    eng = Engine(clock, Limits(max_batch_records=3))
    assert eng.append("t", data(3)).last_seq == 3
    with raises_topics(BatchTooLarge, "batch_too_large"):
        eng.append("t", data(4))
    assert eng.topic_state("t").head_seq == 3


def test_default_batch_limit_is_10000(engine: Engine) -> None:
    assert engine.append("t", data(10_000)).last_seq == 10_000
    with raises_topics(BatchTooLarge, "batch_too_large"):
        engine.append("t", data(10_001))


def test_record_bytes_limit_counts_data_plus_meta(clock: ManualClock) -> None:
    eng = Engine(clock, Limits(max_record_bytes=20, max_meta_bytes=100))
    eng.append("t", [{"data": "x" * 18}])  # '"xxx…"' is 20 bytes
    with raises_topics(RecordTooLarge, "record_too_large"):
        eng.append("t", [{"data": "x" * 19}])
    with raises_topics(RecordTooLarge, "record_too_large"):
        eng.append("t", [{"data": "x" * 10, "meta": {"k": "v"}}])
    # the whole batch is refused: nothing from the valid first record was appended
    with raises_topics(RecordTooLarge, "record_too_large"):
        eng.append("t", [{"data": 1}, {"data": "y" * 50}])
    assert eng.topic_state("t").head_seq == 1


def test_default_record_limit_is_1_mib(engine: Engine) -> None:
    engine.append("t", [{"data": "x" * (1024 * 1024 - 2)}])
    with raises_topics(RecordTooLarge, "record_too_large"):
        engine.append("t", [{"data": "x" * (1024 * 1024 - 1)}])


def test_meta_limits(engine: Engine) -> None:
    engine.append("t", [{"data": 1, "meta": {str(i): i for i in range(64)}}])
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.append("t", [{"data": 1, "meta": {str(i): i for i in range(65)}}])
    with raises_topics(RecordTooLarge, "record_too_large"):
        engine.append("t", [{"data": 1, "meta": {"big": "x" * (16 * 1024)}}])
    assert engine.topic_state("t").head_seq == 1


def test_tag_and_node_limits_count_characters(engine: Engine) -> None:
    """TOPICS_MAX_TAG_BYTES / TOPICS_MAX_NODE_BYTES count code points, as the served schema's
    ``maxLength`` does (docs/DECISIONS.md, "Tag and node limits count characters")."""
    engine.append("t", [{"data": 1, "tag": "t" * 256, "node": "n" * 128}])
    engine.append("t", [{"data": 1, "tag": "é" * 256, "node": "𝓷" * 128}])  # 512 and 512 bytes
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.append("t", [{"data": 1, "tag": "t" * 257}])
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.append("t", [{"data": 1, "tag": "é" * 257}])
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.append("t", [{"data": 1, "node": "n" * 129}])
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.append("t", data(1), node="é" * 129)
    assert engine.topic_state("t").count == 2


@pytest.mark.parametrize("key", ["", "k" * 257, 5])
def test_bad_idempotency_key_is_400(engine: Engine, key: Any) -> None:
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.append("t", data(1), idempotency_key=key)
    assert engine.topic_count == 0


def test_idempotency_key_of_256_chars_is_ok(engine: Engine) -> None:
    assert engine.append("t", data(1), idempotency_key="k" * 256).first_seq == 1


def test_discard_old_write_always_succeeds(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 2})
    for i in range(5):
        r = engine.append("t", data(1, start=i))
        assert r.first_seq == i + 1
    assert [r["data"] for r in recs(engine.diff("t"))] == [3, 4]


def test_discard_reject_is_422_all_or_nothing(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 3, "discard": "reject"})
    engine.append("t", data(2))
    with raises_topics(TopicFull, "topic_full"):
        engine.append("t", data(2))  # would make 4 > 3: none of the two is appended
    s = engine.topic_state("t")
    assert (s.head_seq, s.count) == (2, 2)
    assert engine.append("t", data(1)).first_seq == 3  # exactly fills the cap
    with raises_topics(TopicFull, "topic_full"):
        engine.append("t", data(1))
    assert engine.topic_state("t").head_seq == 3  # no seq was consumed by rejected writes


def test_a_retried_write_is_checked_like_a_new_one(engine: Engine) -> None:
    """A retry inside the idempotency window is answered from the window only when its records
    pass the same limits: bad input is refused, never "deduped"."""
    first = engine.append("t", [{"data": 1, "tag": "a"}], idempotency_key="k")
    with raises_topics(InvalidRequest, "invalid_request"):
        engine.append("t", [{"data": 1, "tag": "t" * 257}], idempotency_key="k")
    again = engine.append("t", [{"data": 1, "tag": "a"}], idempotency_key="k")
    assert (again.first_seq, again.deduped) == (first.first_seq, True)


def test_an_apply_left_for_later_makes_the_records_readable_only_when_run(engine: Engine) -> None:
    """``apply_later`` (a transport that writes the answer first): the seqs are taken and the
    result is final, but the records are readable only once the caller runs what was left."""
    engine.append("t", data(1))
    later: list[Any] = []
    result = engine.append("t", data(2, start=1), apply_later=later)
    assert (result.first_seq, result.last_seq, result.head_seq) == (2, 3, 3)
    assert len(later) == 1 and engine.get("t").count == 1
    assert seqs_of(engine) == [1]
    later.pop()()
    assert seqs_of(engine) == [1, 2, 3] and engine.get("t").count == 3
    assert engine.append("t", data(1, start=3)).first_seq == 4


def test_an_fsync_write_asked_to_apply_later_still_applies_once_durable(engine: Engine) -> None:
    """The list only takes an apply run during the append itself: one that waits for its
    ``fsync`` (the WAL) is not left there, and runs when the sync lands, as always."""
    if not isinstance(engine.persistence, WalPersistence):
        pytest.skip("in memory, nothing waits for an fsync")
    engine.put_topic("f", {"durability": "fsync"})
    later: list[Any] = []
    engine.append("f", data(2), apply_later=later)
    assert later == [] and seqs_of(engine, "f") == []
    settle(engine)
    assert seqs_of(engine, "f") == [1, 2]


def seqs_of(engine: Engine, topic: str = "t") -> list[int]:
    return [r["$seq"] for r in recs(engine.diff(topic))]
