"""What a cold chunk keeps resident, compact (``recordlog.TsRuns``, ``recordlog.compact_ends``,
``tags.ChunkTags``): the same values as the lists, arrays and sets they replace, in the
narrowest form that holds them, and the wide form whenever a value would not fit (never a value
cut short)."""

from __future__ import annotations

import bisect
from array import array

import pytest
from topics_engine.matching import TagMatch
from topics_engine.recordlog import TsRuns, compact_ends
from topics_engine.tags import ChunkTags

T = 1_700_000_000_000


@pytest.mark.parametrize(
    ("runs", "typecode"),
    [
        ([(0, T)], "I"),
        ([(0, T), (3, T + 1), (9, T + 1_000)], "I"),
        ([(0, T), (70_000, T + 5)], "I"),
        ([(0, T), (1, T + (1 << 32))], "q"),  # a chunk spanning more than 49 days
        ([(0, T), (1, T - 1)], "q"),  # $ts stepped back (never along a topic; still exact)
    ],
)
def test_ts_runs_hold_every_run_exactly(runs: list[tuple[int, int]], typecode: str) -> None:
    compact = TsRuns.of(runs)
    assert compact._pairs.typecode == typecode
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


@pytest.mark.parametrize("typecode", ["I", "L", "q"])
def test_narrowed_ends_keep_every_value_whatever_the_width_they_come_in(typecode: str) -> None:
    """Narrowing slices out each value's two low-order bytes: every value below 2**16, of any
    byte pattern, must come out equal (4- and 8-byte sources alike)."""
    ends = array(typecode, sorted({(i * 7_919) % 65_536 for i in range(3_000)} | {0, 255, 256, 65_535}))
    narrow = compact_ends(ends)
    assert narrow.typecode == "H" and narrow.tolist() == ends.tolist()


def test_a_chunks_listed_tags_match_exactly_and_share_their_strings() -> None:
    a = ChunkTags(["".join(["ten", "ant:1"]), None, "tenant:2", "tenant:1"])
    b = ChunkTags(["".join(["tenant", ":1"])])  # an equal string, another object
    assert a.may_match(TagMatch("tenant:2", None)) and not a.may_match(TagMatch("tenant:3", None))
    assert a.may_match(TagMatch(None, "tenant:")) and not a.may_match(TagMatch(None, "other"))
    assert a._listed == ("tenant:1", "tenant:2")
    assert a._listed is not None and b._listed is not None and a._listed[0] is b._listed[0]


def test_more_tags_than_listed_take_a_bloom_filter_without_false_negatives() -> None:
    tags = [f"t{i}" for i in range(ChunkTags.MAX_LISTED + 1)]
    summary = ChunkTags(tags)
    assert summary._listed is None
    assert all(summary.may_match(TagMatch(tag, None)) for tag in tags)
    assert summary.may_match(TagMatch(None, "zz"))  # a prefix must read such a chunk
