"""Engine fixtures: a real :class:`Engine` on a :class:`ManualClock` — no sleeps, no I/O."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest
from topics_engine import Engine, Limits, ManualClock
from topics_engine.engine import DiffResult
from topics_engine.errors import TopicsError

T0 = 1_700_000_000_000


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
def engine(clock: ManualClock) -> Engine:
    return Engine(clock, Limits())


def recs(result: DiffResult) -> list[dict[str, Any]]:
    """The decoded record objects of a diff, in wire order."""
    return [orjson.loads(b) for b in result.read.records]


def seqs(result: DiffResult) -> list[int]:
    return [r["$seq"] for r in recs(result)]


def data(n: int, start: int = 0) -> list[dict[str, Any]]:
    """``n`` simple records whose data is their index (``start`` onwards)."""
    return [{"data": start + i} for i in range(n)]


def read_all(
    engine: Engine, topic: str, from_seq: int = 0, limit: int = 1000, **kw: Any
) -> tuple[list[dict[str, Any]], list[DiffResult]]:
    """Page through the topic from ``from_seq`` until caught up; returns records and pages."""
    out: list[dict[str, Any]] = []
    pages: list[DiffResult] = []
    cursor = from_seq
    for _ in range(10_000):
        page = engine.diff(topic, from_seq=cursor, limit=limit, **kw)
        pages.append(page)
        out.extend(recs(page))
        cursor = page.read.next_from_seq
        if page.caught_up:
            return out, pages
    raise AssertionError("reader never caught up")


@contextmanager
def raises_topics(cls: type[TopicsError], status: int, code: str) -> Iterator[list[TopicsError]]:
    """Assert the block raises exactly ``cls`` carrying the contract's status and code."""
    caught: list[TopicsError] = []
    with pytest.raises(cls) as info:
        yield caught
    err = info.value
    assert type(err) is cls, f"expected {cls.__name__}, got {type(err).__name__}"
    assert err.status == status
    assert err.code == code
    assert err.message
    caught.append(err)
