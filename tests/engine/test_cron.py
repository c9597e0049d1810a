"""The cron language of schedules (``topics_engine.schedules.cron``): what each field allows,
the errors for what it does not, that every string the spec's pattern admits parses, and the
fire times — checked against a brute-force walk over every minute."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from topics_engine.errors import InvalidRequest
from topics_engine.schedules import PATTERN, Cron, parse_cron
from topics_engine.schedules.cron import HORIZON_YEARS

from .conftest import raises_topics

MINUTE = 60_000


def ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)  # type: ignore[misc]


# -- the fields ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "minutes", "hours", "days", "months", "weekdays"),
    [
        ("* * * * *", range(60), range(24), range(1, 32), range(1, 13), range(7)),
        ("*/15 0 1 1 0", [0, 15, 30, 45], [0], [1], [1], [0]),
        ("5,10-12 1-3/2 31 jan,DEC Mon", [5, 10, 11, 12], [1, 3], [31], [1, 12], [1]),
        ("0 22-2 * * *", [0], [22, 23, 0, 1, 2], range(1, 32), range(1, 13), range(7)),  # wraps
        ("0 22-2/2 * * fri-mon", [0], [22, 0, 2], range(1, 32), range(1, 13), [5, 6, 0, 1]),
        ("50/5 * * * 7", [50, 55], range(24), range(1, 32), range(1, 13), [0]),  # a/s: a-max/s
        ("00 05 09 Sep SUN", [0], [5], [9], [9], [0]),
        ("0 0 * * 0-7", [0], [0], range(1, 32), range(1, 13), range(7)),
        ("@hourly", [0], range(24), range(1, 32), range(1, 13), range(7)),
        ("@weekly", [0], [0], range(1, 32), range(1, 13), [0]),
        ("@yearly", [0], [0], [1], [1], range(7)),
    ],
)
def test_field_values(
    text: str, minutes: object, hours: object, days: object, months: object, weekdays: object
) -> None:
    cron = parse_cron(text)
    got = (cron.minutes, cron.hours, cron.days, cron.months, cron.weekdays)
    want = tuple(tuple(sorted(v)) for v in (minutes, hours, days, months, weekdays))  # type: ignore[call-overload]
    assert got == want


def test_the_day_fields_or_rule() -> None:
    """Both day fields restricted: either matches (Vixie); one starting with ``*``: both must."""
    assert parse_cron("0 0 1 * mon").either_day
    assert not parse_cron("0 0 */2 * mon").either_day
    assert not parse_cron("0 0 1 * *").either_day
    either = parse_cron("0 0 13 * fri")
    assert either.day_matches(datetime(2026, 3, 13, tzinfo=UTC))  # a Friday the 13th
    assert either.day_matches(datetime(2026, 3, 6, tzinfo=UTC))  # a Friday
    assert either.day_matches(datetime(2026, 4, 13, tzinfo=UTC))  # a Monday the 13th
    both = parse_cron("0 0 */2 * fri")
    assert both.day_matches(datetime(2026, 3, 13, tzinfo=UTC))
    assert not both.day_matches(datetime(2026, 3, 6, tzinfo=UTC))  # a Friday, even day


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "has 0 fields; give five"),
        ("* * * *", "has 4 fields; give five"),
        ("* * * * * *", "has 6 fields; give five"),
        (" * * * * *", "spaces before or after"),
        ("60 * * * *", "minute field '60': 60 is out of range 0-59"),
        ("* 24 * * *", "hour field '24': 24 is out of range 0-23"),
        ("* * 0 * *", "day of month field '0': 0 is out of range 1-31"),
        ("* * * 13 *", "month field '13': 13 is out of range 1-12"),
        ("* * * * 8", "day of week field '8': 8 is out of range 0-7"),
        ("*/0 * * * *", "minute field '*/0': step '0' must be a whole number from 1 to 99"),
        ("*/100 * * * *", "step '100'"),
        ("* * * foo *", "'foo' is not a name; use jan, feb"),
        ("* * * * funday", "'funday' is not a name; use sun, mon"),
        ("1-2-3 * * * *", "'1-2-3' is not a value"),
        ("1,,2 * * * *", "minute field '1,,2'"),
        ("@reboot", "'@reboot' is not a shorthand; use one of @yearly"),
        ("? * * * *", "minute field '?'"),
    ],
)
def test_malformed_expressions_are_refused_naming_the_problem(text: str, problem: str) -> None:
    with raises_topics(InvalidRequest, "invalid_request") as caught:
        parse_cron(text)
    assert problem in caught[0].message
    assert caught[0].message.startswith("cron: ")
    assert caught[0].detail == {"field": "cron", "value": text}


def test_the_pattern_is_an_ecma_pattern_anchored_both_ends() -> None:
    assert PATTERN.startswith("^") and PATTERN.endswith("$")
    assert "\\d" not in PATTERN and "(?i" not in PATTERN  # plain ECMA-262: no classes, no flags
    assert re.fullmatch(PATTERN[1:-1], "*/5 * * * *")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.from_regex(PATTERN, fullmatch=True))
def test_every_string_the_pattern_admits_parses(text: str) -> None:
    """The spec's pattern is the language: a fuzzer generating from it never sends a refused
    expression (ruling 23)."""
    cron = parse_cron(text)
    for values, low, high in [
        (cron.minutes, 0, 59),
        (cron.hours, 0, 23),
        (cron.days, 1, 31),
        (cron.months, 1, 12),
        (cron.weekdays, 0, 6),
    ]:
        assert values and all(low <= v <= high for v in values), text


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" */,-0123456789abcdefjmnorstuvwy@", max_size=20))
def test_a_string_parses_exactly_when_the_pattern_admits_it(text: str) -> None:
    admitted = re.fullmatch(PATTERN[1:-1], text) is not None
    try:
        parse_cron(text)
        parsed = True
    except InvalidRequest:
        parsed = False
    assert parsed == admitted, text


# -- fire times ----------------------------------------------------------------------------------


def fires(cron: Cron, t: datetime) -> bool:
    """The brute-force oracle: does ``cron`` fire at minute ``t``?"""
    return (
        t.minute in cron.minutes and t.hour in cron.hours and t.month in cron.months and cron.day_matches(t)
    )


WINDOW = timedelta(days=9)
"""How far the brute force walks, minute by minute (past it, the answer must lie beyond)."""


def walk_forward(cron: Cron, t_ms: int) -> int | None:
    t = datetime.fromtimestamp(t_ms // MINUTE * 60, UTC) + timedelta(minutes=1)
    end = t + WINDOW
    while t < end:
        if fires(cron, t):
            return int(t.timestamp() * 1000)
        t += timedelta(minutes=1)
    return None


def walk_back(cron: Cron, t_ms: int) -> int | None:
    t = datetime.fromtimestamp(t_ms // MINUTE * 60, UTC)
    end = t - WINDOW
    while t > end:
        if fires(cron, t):
            return int(t.timestamp() * 1000)
        t -= timedelta(minutes=1)
    return None


FREQUENT = st.sampled_from(
    [
        "* * * * *",
        "*/7 * * * *",
        "59 23 * * *",
        "0 0 * * mon",
        "30 4 1,15 * fri",
        "0 22-2/3 * * *",
        "*/20 8-17 * * mon-fri",
        "15 */6 */2 * *",
        "0 12 29 2 *",
        "0 0 31 * *",
        "5 4 * * sun,sat",
        "1-3 0 1 * wed",
        "@daily",
        "@hourly",
    ]
)
INSTANTS = st.integers(min_value=ms(1999, 12, 1), max_value=ms(2101, 3, 1))


@settings(max_examples=150, deadline=None)
@given(st.one_of(FREQUENT, st.from_regex(PATTERN, fullmatch=True)), INSTANTS)
def test_next_after_is_the_first_minute_a_walk_finds(text: str, t_ms: int) -> None:
    cron = parse_cron(text)
    found = walk_forward(cron, t_ms)
    got = cron.next_after(t_ms)
    if found is not None:
        assert got == found, (text, t_ms)
    else:  # nothing in the window: the answer lies beyond it, and fires there
        assert got is None or got >= t_ms + WINDOW / timedelta(milliseconds=1), (text, t_ms)
    if got is not None:
        assert got > t_ms and got % MINUTE == 0
        assert fires(cron, datetime.fromtimestamp(got / 1000, UTC))


@settings(max_examples=150, deadline=None)
@given(st.one_of(FREQUENT, st.from_regex(PATTERN, fullmatch=True)), INSTANTS)
def test_latest_at_or_before_is_the_last_minute_a_walk_finds(text: str, t_ms: int) -> None:
    cron = parse_cron(text)
    found = walk_back(cron, t_ms)
    got = cron.latest_at_or_before(t_ms)
    if found is not None:
        assert got == found, (text, t_ms)
    else:
        assert got is None or got <= t_ms - WINDOW / timedelta(milliseconds=1), (text, t_ms)
    if got is not None:
        assert got <= t_ms and got % MINUTE == 0
        assert fires(cron, datetime.fromtimestamp(got / 1000, UTC))
        assert cron.next_after(got - 1) == got


def test_rare_and_impossible_days() -> None:
    leap = parse_cron("0 0 29 2 *")
    assert leap.next_after(ms(2025, 3, 1)) == ms(2028, 2, 29)
    assert leap.next_after(ms(2096, 3, 1)) == ms(2104, 2, 29)  # 2100 is not a leap year
    assert leap.latest_at_or_before(ms(2028, 2, 28)) == ms(2024, 2, 29)
    never = parse_cron("0 0 30 2 *")  # valid, as in Vixie cron; it never fires
    assert never.next_after(ms(2025, 1, 1)) is None
    assert never.latest_at_or_before(ms(2025, 1, 1)) is None
    assert HORIZON_YEARS >= 8  # leap days are at most 8 years apart
    # both restricted: the 30th of February never comes, but Mondays of February do
    either = parse_cron("0 0 30 2 mon")
    assert either.next_after(ms(2026, 1, 1)) == ms(2026, 2, 2)


@pytest.mark.parametrize(
    ("text", "never"),
    [
        ("* * 31 2,4,6,9,11 *", True),  # no month of the list has a 31st
        ("0 0 30 2 *", True),
        ("0 0 30,31 feb */2", True),  # a day must match both day fields: still none
        ("0 0 29 2 *", False),
        ("0 0 30 2 mon", False),  # either day field: the Mondays of February
        ("0 0 31 2,3 *", False),
        ("0 0 */30 2 *", False),  # the 1st
    ],
)
def test_an_expression_no_day_matches_is_known_at_parse_time(text: str, never: bool) -> None:
    """It answers at once, instead of searching the whole horizon on every read."""
    cron = parse_cron(text)
    assert cron.never is never
    assert (cron.next_after(ms(2026, 1, 1)) is None) is never
    assert (cron.latest_at_or_before(ms(2026, 1, 1)) is None) is never


def test_the_horizon_spans_a_non_leap_century_year() -> None:
    """A 29 February that must also be a Sunday (``*/7``: the AND rule): none from 2089 to 2127
    (2100 is no leap year), so a 28-year horizon missed it."""
    cron = parse_cron("0 0 29 2 */7")
    assert cron.next_after(ms(2089, 3, 1)) == ms(2128, 2, 29)
    assert cron.latest_at_or_before(ms(2128, 2, 28)) == ms(2088, 2, 29)
    assert HORIZON_YEARS >= 400


def test_fire_times_are_utc_minutes() -> None:
    cron = parse_cron("30 2 * * *")
    assert cron.next_after(ms(2026, 3, 29, 1, 0)) == ms(2026, 3, 29, 2, 30)  # no DST in UTC
    assert cron.next_after(ms(2026, 3, 29, 2, 30)) == ms(2026, 3, 30, 2, 30)  # strictly after
    assert cron.next_after(ms(2026, 3, 29, 2, 29) + 59_999) == ms(2026, 3, 29, 2, 30)
    assert cron.latest_at_or_before(ms(2026, 3, 29, 2, 30) + 59_999) == ms(2026, 3, 29, 2, 30)
    assert parse_cron("59 23 31 12 *").next_after(ms(2026, 12, 31, 23, 59)) == ms(2027, 12, 31, 23, 59)
