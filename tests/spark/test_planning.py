"""Options and offset planning, without Spark: every bad option names itself and the accepted
forms; seq ranges cover each seq exactly once; micro-batch caps share a budget fairly."""

from __future__ import annotations

import doctest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topics_spark import OptionError
from topics_spark.offsets import SEQS_PER_PARTITION, Position, capped, plan, resolve
from topics_spark.options import EARLIEST, LATEST, read_options, write_options


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({}, "topic"),
        ({"topic": "a", "topicPrefix": "b"}, "topic/topicPrefix"),
        ({"topics": "a,,b"}, "topics"),
        ({"topic": "a", "startingOffsets": "first"}, "startingOffsets"),
        ({"topic": "a", "startingOffsets": '{"a": -3}'}, "startingOffsets"),
        ({"topic": "a", "startingOffsets": '{"a": "5"}'}, "startingOffsets"),
        ({"topic": "a", "startingOffsets": '{"b": 5}'}, "startingOffsets"),
        ({"topic": "a", "endingOffsets": "earliest"}, "endingOffsets"),
        ({"topic": "a", "endingOffsets": '{"a": -2}'}, "endingOffsets"),
        ({"topic": "a", "minPartitions": "0"}, "minPartitions"),
        ({"topic": "a", "minPartitions": "many"}, "minPartitions"),
        ({"topic": "a", "failOnDataLoss": "yes"}, "failOnDataLoss"),
        ({"topic": "a", "includeMeta": "1"}, "includeMeta"),
        ({"topic": "a", "pageSize": "1001"}, "pageSize"),
        ({"topic": "a", "timeout": "-1"}, "timeout"),
        ({"topic": "a", "url": "localhost:4000"}, "url"),
        ({"topic": "a", "maxOffsetsPerTrigger": "10"}, "maxOffsetsPerTrigger"),  # batch has no triggers
        ({"topic": "a", "startingOffset": "earliest"}, "startingOffset"),  # a typo is not ignored
        ({"topic": "a", "startingTimestamp": "yesterday"}, "startingTimestamp"),
        ({"topic": "a", "startingTimestamp": "-1"}, "startingTimestamp"),
        ({"topic": "a", "startingOffsetsByTimestamp": '{"a": "1"}'}, "startingOffsetsByTimestamp"),
        ({"topic": "a", "startingOffsetsByTimestamp": '{"b": 1}'}, "startingOffsetsByTimestamp"),
        ({"topic": "a", "startingOffsetsByTimestamp": "[1]"}, "startingOffsetsByTimestamp"),
        ({"topic": "a", "endingTimestamp": "1.5"}, "endingTimestamp"),
    ],
)
def test_bad_read_options_name_the_option(options: dict[str, str], option: str) -> None:
    with pytest.raises(OptionError, match=f"^option {option}: .*; accepted: ") as err:
        read_options(options)
    assert err.value.option == option


def test_a_misspelt_option_is_named_with_the_likely_one() -> None:
    with pytest.raises(OptionError, match="did you mean startingOffsets"):
        read_options({"topic": "a", "startingoffset": "earliest"})
    assert read_options({"topic": "a", "checkpointLocation": "/tmp/x"}).topics == ("a",)  # Spark's own


def test_read_options_forms_and_defaults() -> None:
    opts = read_options({"TOPICS": "a, b", "startingOffsets": '{"a": 100, "b": -2}', "includeTags": "False"})
    assert opts.topics == ("a", "b") and opts.prefix is None
    assert opts.starting == {"a": 100, "b": EARLIEST} and opts.ending == "latest"
    assert (opts.fail_on_data_loss, opts.include_meta, opts.include_tags, opts.page_size) == (
        True,
        True,
        False,
        1000,
    )
    assert read_options({"path": "clicks"}).topics == ("clicks",)  # load("clicks")
    assert read_options({"topicPrefix": "orders."}).prefix == "orders."
    stream = read_options({"topic": "a", "maxOffsetsPerTrigger": "500"}, streaming=True)
    assert stream.max_offsets_per_trigger == 500
    with pytest.raises(OptionError, match="^option endingOffsets"):
        read_options({"topic": "a", "endingOffsets": "latest"}, streaming=True)


def test_time_options_forms_and_precedence() -> None:
    opts = read_options({"topics": "a,b", "startingOffsetsByTimestamp": '{"a": 1700000000000}'})
    assert (opts.starting_times, opts.ending_time) == ({"a": 1700000000000}, None)
    both = {"topics": "a,b", "startingOffsetsByTimestamp": '{"a": 5}', "startingTimestamp": "7"}
    assert read_options(both).starting_times == 7  # startingTimestamp wins, as Kafka's does
    assert read_options({"topic": "a", "endingTimestamp": "9"}).ending_time == 9
    assert read_options({"topic": "a", "startingTimestamp": "3"}, streaming=True).starting_times == 3
    with pytest.raises(OptionError, match="^option endingTimestamp"):
        read_options({"topic": "a", "endingTimestamp": "9"}, streaming=True)


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"topic": "a,b"}, "topic"),
        ({"topic": "a", "dataFormat": "avro"}, "dataFormat"),
        ({"topic": "a", "writeId": "x" * 129}, "writeId"),
        ({"topic": "a", "batchRows": "0"}, "batchRows"),
        ({"topic": "a", "dataFormats": "json"}, "dataFormats"),  # a typo
    ],
)
def test_bad_write_options_name_the_option(options: dict[str, str], option: str) -> None:
    with pytest.raises(OptionError, match=f"^option {option}: "):
        write_options(options)


def test_resolve() -> None:
    now = {"a": Position(earliest=70, head=120), "b": Position(earliest=0, head=0)}
    assert resolve("earliest", now, default=EARLIEST) == {"a": 70, "b": 0}
    assert resolve("latest", now, default=EARLIEST) == {"a": 120, "b": 0}
    assert resolve({"a": 10}, now, default=LATEST) == {"a": 10, "b": 0}
    assert resolve({"a": -1, "b": -2}, now, default=EARLIEST) == {"a": 120, "b": 0}


def test_offsets_of_a_prefix_read_must_be_under_the_prefix() -> None:
    assert read_options({"topicPrefix": "pp.", "startingOffsets": '{"pp.b": 5}'}).starting == {"pp.b": 5}
    with pytest.raises(OptionError, match=r"^option startingOffsets: .*not zz\.typo"):
        read_options({"topicPrefix": "pp.", "startingOffsets": '{"pp.b": 5, "zz.typo": 3}'})


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from("abcde"),
        st.tuples(st.integers(0, 400_000), st.integers(0, 400_000)),
        min_size=1,
    ),
    st.integers(1, 40),
)
def test_plan_covers_every_seq_exactly_once(bounds: dict[str, tuple[int, int]], min_partitions: int) -> None:
    starts = {t: min(a, b) for t, (a, b) in bounds.items()}
    ends = {t: max(a, b) for t, (a, b) in bounds.items()}
    ranges = plan(starts, ends, min_partitions)
    assert ranges == plan(starts, ends, min_partitions)  # deterministic
    for topic in bounds:
        mine = [r for r in ranges if r.topic == topic]
        size = ends[topic] - starts[topic]
        if size == 0:
            assert not mine
            continue
        assert mine[0].start == starts[topic] and mine[-1].end == ends[topic]
        assert all(r.start < r.end and r.end - r.start <= SEQS_PER_PARTITION for r in mine)
        assert all(x.end == y.start for x, y in zip(mine, mine[1:], strict=False))  # contiguous
    total = sum(ends[t] - starts[t] for t in bounds)
    assert len(ranges) >= min(min_partitions, total)


def test_plan_skips_a_topic_new_to_a_stream_and_rereads_a_recreated_one() -> None:
    ranges = plan({"old": 0, "recreated": 50}, {"old": 300_000, "new": 300_000, "recreated": 4}, 4)
    assert not [r for r in ranges if r.topic == "new"]  # its end is where it starts
    assert [(r.start, r.end) for r in ranges if r.topic == "recreated"] == [(0, 4)]  # seqs restarted
    assert len([r for r in ranges if r.topic == "old"]) >= 3


def test_capped_never_starves_a_small_topic() -> None:
    assert capped({"big": 0, "small": 0}, {"big": 1_000_000, "small": 1}, 1000) == {"big": 999, "small": 1}
    many = capped(dict.fromkeys(["big", "a", "b", "c"], 0), {"big": 1_000_000, "a": 5, "b": 5, "c": 5}, 1000)
    assert all(many[t] >= 1 for t in "abc") and sum(many.values()) == 1000


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from("abcde"), st.tuples(st.integers(0, 1000), st.integers(0, 1000)), min_size=1
    ),
    st.integers(1, 2000),
)
def test_capped_shares_the_budget_and_always_progresses(
    bounds: dict[str, tuple[int, int]], budget: int
) -> None:
    starts = {t: min(a, b) for t, (a, b) in bounds.items()}
    heads = {t: max(a, b) for t, (a, b) in bounds.items()}
    ends = capped(starts, heads, budget)
    taken = {t: ends[t] - starts[t] for t in bounds}
    waiting = sum(heads[t] - starts[t] for t in bounds)
    assert all(0 <= taken[t] <= heads[t] - starts[t] for t in bounds)
    assert sum(taken.values()) == min(budget, waiting)
    assert capped(starts, heads, None) == heads
    backlogged = [t for t in bounds if heads[t] > starts[t]]
    if budget >= len(backlogged):
        assert all(taken[t] >= 1 for t in backlogged)  # nobody starved


def test_the_options_module_examples_run() -> None:
    import topics_spark.options

    result = doctest.testmod(topics_spark.options)
    assert result.attempted and not result.failed
