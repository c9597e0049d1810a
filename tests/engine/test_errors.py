"""The engine's error classes: one per wire code, no HTTP statuses (the server maps codes)."""

from __future__ import annotations

import pytest
from topics_engine import TopicsError
from topics_engine import errors as e

ENGINE_CODES = [
    (e.InvalidRequest, "invalid_request"),
    (e.BatchTooLarge, "batch_too_large"),
    (e.RecordTooLarge, "record_too_large"),
    (e.TopicNotFound, "topic_not_found"),
    (e.RouterNotFound, "router_not_found"),
    (e.ScheduleNotFound, "schedule_not_found"),
    (e.ConsumerNotFound, "consumer_not_found"),
    (e.NotFound, "not_found"),
    (e.RouterCycle, "router_cycle"),
    (e.TopicExistsIncompatible, "topic_exists_incompatible"),
    (e.TopicNotEmpty, "topic_not_empty"),
    (e.NotAQueue, "not_a_queue"),
    (e.NoDeadLetter, "no_dead_letter"),
    (e.NoSuchConsumer, "no_such_consumer"),
    (e.CursorBehind, "cursor_behind"),
    (e.CursorBeyondHead, "cursor_beyond_head"),
    (e.TopicFull, "topic_full"),
    (e.Throttled, "throttled"),
    (e.Internal, "internal"),
    (e.NotReady, "not_ready"),
    (e.ShuttingDown, "shutting_down"),
]


@pytest.mark.parametrize(("cls", "code"), ENGINE_CODES, ids=[c[1] for c in ENGINE_CODES])
def test_code(cls: type[TopicsError], code: str) -> None:
    assert issubclass(cls, TopicsError)
    assert cls.code == code
    assert not hasattr(cls, "status"), "statuses belong to the HTTP layer (topics_server.wire)"


def test_every_engine_class_is_listed() -> None:
    engine_classes = {c for c in e.error_classes() if c.__module__ == e.__name__}
    assert engine_classes == {c for c, _ in ENGINE_CODES}


def test_codes_are_unique_snake_case() -> None:
    codes = [c for _, c in ENGINE_CODES]
    assert len(codes) == len(set(codes))
    assert all(c == c.lower() and " " not in c for c in codes)


def test_topic_not_found_carries_detail() -> None:
    err = e.TopicNotFound("jobs")
    assert err.detail == {"topic": "jobs"} and "jobs" in err.message
