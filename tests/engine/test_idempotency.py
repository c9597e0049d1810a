"""§0.8 write dedupe: (topic, idempotency_key) -> original seqs for idempotency_window_ms."""

from __future__ import annotations

from topics_engine import Engine, ManualClock
from topics_engine.errors import TopicFull

from .conftest import data, raises_topics, seqs


def test_retry_in_window_returns_original_seqs(engine: Engine, clock: ManualClock) -> None:
    first = engine.append("t", data(3), idempotency_key="k1")
    assert (first.first_seq, first.last_seq, first.deduped, first.created) == (1, 3, False, True)
    engine.append("t", data(2))  # someone else writes in between
    clock.advance(60_000)
    retry = engine.append("t", data(3), idempotency_key="k1")
    assert (retry.first_seq, retry.last_seq, retry.deduped, retry.created) == (1, 3, True, False)
    assert retry.head_seq == 5  # current head, nothing appended
    assert retry.count == 3
    assert engine.topic_state("t").count == 5


def test_dedupe_ignores_the_retried_payload(engine: Engine) -> None:
    engine.append("t", data(1), idempotency_key="k")
    retry = engine.append("t", data(4, start=50), idempotency_key="k")
    assert retry.deduped and (retry.first_seq, retry.last_seq) == (1, 1)
    assert seqs(engine.diff("t")) == [1]


def test_different_keys_both_append(engine: Engine) -> None:
    engine.append("t", data(1), idempotency_key="a")
    r = engine.append("t", data(1), idempotency_key="b")
    assert not r.deduped and r.first_seq == 2


def test_keys_are_scoped_per_topic(engine: Engine) -> None:
    engine.append("t1", data(2), idempotency_key="k")
    r = engine.append("t2", data(1), idempotency_key="k")
    assert not r.deduped and r.first_seq == 1


def test_window_expiry(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"idempotency_window_ms": 1000})
    engine.append("t", data(1), idempotency_key="k")
    clock.advance(999)
    assert engine.append("t", data(1), idempotency_key="k").deduped
    clock.advance(1)  # the window has fully elapsed
    r = engine.append("t", data(1), idempotency_key="k")
    assert not r.deduped and r.first_seq == 2
    # the new write starts a new window for the same key
    clock.advance(500)
    again = engine.append("t", data(1), idempotency_key="k")
    assert again.deduped and again.first_seq == 2


def test_default_window_is_120s(engine: Engine, clock: ManualClock) -> None:
    engine.append("t", data(1), idempotency_key="k")
    clock.advance(119_999)
    assert engine.append("t", data(1), idempotency_key="k").deduped
    clock.advance(1)
    assert not engine.append("t", data(1), idempotency_key="k").deduped


def test_window_applies_per_key(engine: Engine, clock: ManualClock) -> None:
    engine.put_topic("t", {"idempotency_window_ms": 100})
    engine.append("t", data(1), idempotency_key="old")
    clock.advance(60)
    engine.append("t", data(1), idempotency_key="new")
    clock.advance(60)  # "old" is 120 ms old, "new" 60 ms
    assert not engine.append("t", data(1), idempotency_key="old").deduped
    assert engine.append("t", data(1), idempotency_key="new").deduped


def test_zero_window_disables_dedupe(engine: Engine) -> None:
    engine.put_topic("t", {"idempotency_window_ms": 0})
    engine.append("t", data(1), idempotency_key="k")
    assert not engine.append("t", data(1), idempotency_key="k").deduped


def test_dedupe_survives_eviction_of_the_original_records(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 1})
    engine.append("t", data(2), idempotency_key="k")
    engine.append("t", data(3))
    retry = engine.append("t", data(2), idempotency_key="k")
    assert retry.deduped and (retry.first_seq, retry.last_seq, retry.head_seq) == (1, 2, 5)


def test_deduped_retry_on_full_reject_topic_succeeds(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 2, "discard": "reject"})
    engine.append("t", data(2), idempotency_key="k")
    retry = engine.append("t", data(2), idempotency_key="k")  # not a new write: no topic_full
    assert retry.deduped and retry.first_seq == 1


def test_failed_write_is_not_remembered(engine: Engine) -> None:
    engine.put_topic("t", {"cap_records": 1, "discard": "reject"})
    engine.append("t", data(1))
    with raises_topics(TopicFull, "topic_full"):
        engine.append("t", data(1), idempotency_key="k")
    engine.put_topic("t", {"cap_records": 10})
    r = engine.append("t", data(1), idempotency_key="k")
    assert not r.deduped and r.first_seq == 2


def test_window_change_via_put_applies(engine: Engine, clock: ManualClock) -> None:
    engine.append("t", data(1), idempotency_key="k")
    clock.advance(5000)
    engine.put_topic("t", {"idempotency_window_ms": 1000})
    assert not engine.append("t", data(1), idempotency_key="k").deduped
