"""Engine fixtures: a real :class:`Engine` on a :class:`ManualClock`, no sleeps.

The ``engine`` fixture is parametrized over both persistences — in memory, and the write-ahead
log in a temporary data directory — so one behaviour suite holds for both (as ``eventsourcing``
runs one recorder test case over every backend). The WAL's completions are delivered on an event
loop the sync tests never run: classes acknowledged at once (the default ``disk``) behave as in
production, and :func:`settle` drives the loop until everything submitted is durable (what a
client awaiting an ``fsync`` write would see).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from topics_engine import Engine, Limits, ManualClock
from topics_engine.datadir.directory import DataDirectory
from topics_engine.datadir.sealing import SegmentPolicy
from topics_engine.errors import TopicsError
from topics_engine.results import Diff

T0 = 1_700_000_000_000


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


PERSISTENCES = ["in-memory", "wal", "wal-cold"]
"""``wal-cold``: the WAL with tiny segments sealed at once (on the calling thread) and a 64 KiB
cache, so nearly every read finds its records cold — in their segment files — and reads them
back (``storage.coldstore``)."""

COLD_SEGMENTS = SegmentPolicy(max_events=8, max_bytes=4 << 10, max_age_ms=1)


@pytest.fixture(params=PERSISTENCES)
def engine(request: pytest.FixtureRequest, clock: ManualClock, tmp_path: Path) -> Iterator[Engine]:
    engine = Engine(clock, Limits())
    if request.param == "in-memory":
        yield engine
        return
    loop = asyncio.new_event_loop()
    if request.param == "wal-cold":
        datadir = DataDirectory(
            tmp_path / "data", segment_policy=COLD_SEGMENTS, cache_bytes=64 << 10, inline_segments=True
        )
    else:
        datadir = DataDirectory(tmp_path / "data")
    datadir.lock()
    for _ in datadir.recover(engine):
        pass
    datadir.open(engine, loop)
    _LOOPS[engine] = (loop, datadir)
    try:
        yield engine
    finally:
        del _LOOPS[engine]
        datadir.close()
        loop.close()


_LOOPS: dict[Engine, tuple[asyncio.AbstractEventLoop, DataDirectory]] = {}


def settle(engine: Engine) -> None:
    """WAL persistence: run the completions of everything submitted so far (fsync-class
    mutations become visible, as for a client that awaited them). In memory: nothing to do."""
    if engine in _LOOPS:
        loop, datadir = _LOOPS[engine]
        assert datadir.wal is not None
        loop.run_until_complete(datadir.wal.run_task(lambda: None))


def fields(result: Any) -> dict[str, Any]:
    """A result dataclass as a dict, without its ``wait`` (what the HTTP layer renders)."""
    out = dataclasses.asdict(result)
    out.pop("wait", None)
    return out


def recs(result: Diff) -> list[dict[str, Any]]:
    """The decoded record objects of a diff, in wire order."""
    out: list[dict[str, Any]] = orjson.loads(b"[" + result.records_json() + b"]")
    assert len(out) == result.count
    return out


def split_records(joined: bytes) -> list[bytes]:
    """``rec,rec,...`` (top-level JSON objects joined by commas) -> each record's exact bytes."""
    out: list[bytes] = []
    depth, in_string, escaped, start = 0, False, False, 0
    for i, c in enumerate(joined):
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:  # backslash
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x7B, 0x5B):
            depth += 1
        elif c in (0x7D, 0x5D):
            depth -= 1
            if depth == 0:
                out.append(joined[start : i + 1])
                start = i + 2  # past the separating comma
    return out


def record_bytes(result: Diff) -> list[bytes]:
    """Each record of a diff as the exact bytes served."""
    out = split_records(result.records_json())
    assert len(out) == result.count
    return out


def seqs(result: Diff) -> list[int]:
    return [r["$seq"] for r in recs(result)]


def data(n: int, start: int = 0) -> list[dict[str, Any]]:
    """``n`` simple records whose data is their index (``start`` onwards)."""
    return [{"data": start + i} for i in range(n)]


def read_all(
    engine: Engine, topic: str, from_seq: int = 0, limit: int = 1000, **kw: Any
) -> tuple[list[dict[str, Any]], list[Diff]]:
    """Page through the topic from ``from_seq`` until caught up; returns records and pages."""
    out: list[dict[str, Any]] = []
    pages: list[Diff] = []
    cursor = from_seq
    for _ in range(10_000):
        page = engine.diff(topic, from_seq=cursor, limit=limit, **kw)
        pages.append(page)
        out.extend(recs(page))
        cursor = page.next_from_seq
        if page.caught_up:
            return out, pages
    raise AssertionError("reader never caught up")


@contextmanager
def raises_topics(cls: type[TopicsError], code: str) -> Iterator[list[TopicsError]]:
    """Assert the block raises exactly ``cls`` carrying the contract's code."""
    caught: list[TopicsError] = []
    with pytest.raises(cls) as info:
        yield caught
    err = info.value
    assert type(err) is cls, f"expected {cls.__name__}, got {type(err).__name__}"
    assert err.code == code
    assert err.message
    caught.append(err)
