"""What a cold chunk keeps resident, compact (``recordlog.TsRuns``, ``recordlog.compact_ends``):
the same values as the lists and arrays they replace, in the narrowest array that holds them,
and the wide form whenever a value would not fit (never a value cut short)."""

from __future__ import annotations

import bisect
from array import array

import pytest
from topics_engine.recordlog import TsRuns, compact_ends

T = 1_700_000_000_000


@pytest.mark.parametrize(
    ("runs", "at_code", "ts_code"),
    [
        ([(0, T)], "H", "I"),
        ([(0, T), (3, T + 1), (9, T + 1_000)], "H", "I"),
        ([(0, T), (70_000, T + 5)], "I", "I"),  # an ordinal past 65 535
        ([(0, T), (1, T + (1 << 32))], "H", "q"),  # a chunk spanning more than 49 days
        ([(0, T), (1, T - 1)], "H", "q"),  # $ts stepped back (never along a topic; still exact)
    ],
)
def test_ts_runs_hold_every_run_exactly(runs: list[tuple[int, int]], at_code: str, ts_code: str) -> None:
    compact = TsRuns.of(runs)
    assert (compact._at.typecode, compact._ts.typecode) == (at_code, ts_code)
    assert len(compact) == len(runs)
    assert list(compact) == runs
    assert compact[-1] == runs[-1] and compact[-len(runs)] == runs[0]
    with pytest.raises(IndexError):
        compact[len(runs)]
    assert TsRuns.of(compact) is compact


def test_ts_runs_bisect_as_the_list_does() -> None:
    runs = [(0, T), (4, T + 2), (5, T + 2_000), (11, T + 2_001)]
    compact = TsRuns.of(runs)
    for i in range(13):
        probe = (i, 1 << 64)
        assert bisect.bisect_right(compact, probe) == bisect.bisect_right(runs, probe)
    for ts in (T - 1, T, T + 1, T + 2_000, T + 9_999):
        key = lambda run: run[1]  # noqa: E731
        assert bisect.bisect_left(compact, ts, key=key) == bisect.bisect_left(runs, ts, key=key)


def test_ends_take_two_bytes_while_the_records_fit_in_64_kib() -> None:
    small = array("I", [10, 500, 65_535])
    assert compact_ends(small).typecode == "H" and compact_ends(small) == small
    large = array("I", [10, 65_536])
    assert compact_ends(large) is large
    assert compact_ends(array("I")).typecode == "H"
