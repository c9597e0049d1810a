"""§0.5 error table: every engine error class carries the contract's status and code."""

from __future__ import annotations

import pytest
from topics_engine import TopicsError
from topics_engine import errors as e

CONTRACT = [
    (e.InvalidRequest, 400, "invalid_request"),
    (e.BatchTooLarge, 400, "batch_too_large"),
    (e.RecordTooLarge, 400, "record_too_large"),
    (e.Unauthorized, 401, "unauthorized"),
    (e.Forbidden, 403, "forbidden"),
    (e.TopicNotFound, 404, "topic_not_found"),
    (e.RouterNotFound, 404, "router_not_found"),
    (e.NotFound, 404, "not_found"),  # §7 watch session (wid) unknown or GC'd
    (e.MethodNotAllowed, 405, "method_not_allowed"),
    (e.NotAcceptable, 406, "not_acceptable"),
    (e.RouterCycle, 409, "router_cycle"),
    (e.TopicExistsIncompatible, 409, "topic_exists_incompatible"),
    (e.TopicNotEmpty, 409, "topic_not_empty"),
    (e.NotAQueue, 409, "not_a_queue"),
    (e.PayloadTooLarge, 413, "payload_too_large"),
    (e.UnsupportedMediaType, 415, "unsupported_media_type"),
    (e.TopicFull, 422, "topic_full"),
    (e.Throttled, 429, "throttled"),
    (e.Internal, 500, "internal"),
    (e.NotReady, 503, "not_ready"),
    (e.ShuttingDown, 503, "shutting_down"),
]


@pytest.mark.parametrize(("cls", "status", "code"), CONTRACT, ids=[c[2] for c in CONTRACT])
def test_status_and_code(cls: type[TopicsError], status: int, code: str) -> None:
    assert issubclass(cls, TopicsError)
    assert (cls.status, cls.code) == (status, code)


def test_every_class_is_in_the_table() -> None:
    assert set(e.all_error_classes()) == {c for c, _, _ in CONTRACT}


def test_codes_are_unique_snake_case() -> None:
    codes = [c for _, _, c in CONTRACT]
    assert len(codes) == len(set(codes))
    assert all(c == c.lower() and " " not in c for c in codes)


def test_topic_not_found_carries_detail() -> None:
    err = e.TopicNotFound("jobs")
    assert err.detail == {"topic": "jobs"} and "jobs" in err.message
