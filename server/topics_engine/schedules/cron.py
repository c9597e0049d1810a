"""Five-field cron expressions, in UTC: parsing, and the fire time after (or at or before) an
instant, computed by jumping over whole months, days and hours rather than walking minutes.

The language (docs/DECISIONS.md, "Schedules"), exactly :data:`PATTERN` — the pattern the
served spec gives a schedule's ``cron``, so a fuzzer that generates strings from the spec only
ever sends expressions this module accepts::

    minute hour day-of-month month day-of-week      separated by spaces or tabs
    field  := item ("," item)*
    item   := ("*" | value | value "-" value) ["/" step]
    step   := 1..99

========== ======= ==================================================================
field      values  names
========== ======= ==================================================================
minute     0-59
hour       0-23
day (dom)  1-31
month      1-12    ``jan`` .. ``dec`` (any case)
weekday    0-7     ``sun`` .. ``sat`` (any case); 0 and 7 are Sunday
========== ======= ==================================================================

plus the shorthands ``@yearly`` (``@annually``), ``@monthly``, ``@weekly``, ``@daily``
(``@midnight``) and ``@hourly``. Numbers may carry one leading zero (``05``).

Meaning, as Vixie cron's unless noted:

- ``a-b`` is every value from ``a`` to ``b``; when ``a > b`` the range wraps around the field's
  end (``22-2`` is 22, 23, 0, 1, 2 hours; ``fri-mon``) — Vixie refuses such a range, Quartz and
  croniter read it so; accepting it keeps every string the pattern admits meaningful.
- ``x/s`` takes every ``s``-th value of ``x``'s range starting at its first: ``*/15`` is 0, 15,
  30, 45; a single value ``a/s`` is ``a-<field max>/s`` (Quartz, croniter).
- **Day of month and day of week**: if either field begins with ``*`` a day must match both;
  otherwise a day matching either one fires (Vixie's OR rule: ``0 0 1,15 * mon`` fires on the 1st,
  the 15th and every Monday).
- An expression no day ever matches (``0 0 31 2 *``) is valid and never fires
  (:meth:`Cron.next_after` answers ``None``), as in Vixie cron. Only a day of month no month of
  the expression has can make it so (every date falls on every weekday within the 400-year
  Gregorian cycle), and only when a day must match both day fields: :func:`parse_cron` finds
  it (:attr:`Cron.never`), so such an expression answers at once instead of scanning.

Invariants of a :class:`Cron`: every value set is non-empty and inside its field's range;
weekday 7 is stored as 0.
"""

from __future__ import annotations

import bisect
import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from ..errors import InvalidRequest

MINUTE_MS = 60_000
HORIZON_YEARS = 400
"""How far :meth:`Cron.next_after` and :meth:`Cron.latest_at_or_before` look: the Gregorian
calendar repeats every 400 years (weekdays included), so a day an expression matches shows up
within this span or never. (28 years is not enough across a non-leap century year: ``0 0 29 2
*/7`` after 2089 next fires in 2128.) The search stays cheap: it jumps over months, and over
the days of month that are not candidates, so a year costs a few steps."""
MONTH_DAYS = (0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
"""The most days each month (1-12) can have (February: 29)."""

SHORTHANDS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@dataclass(frozen=True, slots=True)
class Field:
    """One of the five fields: its name, range and the regular expression of one value."""

    name: str
    low: int
    high: int
    value: str
    names: tuple[str, ...] = ()


def _any_case(word: str) -> str:
    return "".join(f"[{c.upper()}{c}]" for c in word)


def _names_re(names: tuple[str, ...]) -> str:
    return "|".join(_any_case(n) for n in names)


FIELDS = (
    Field("minute", 0, 59, "[0-5]?[0-9]"),
    Field("hour", 0, 23, "[01]?[0-9]|2[0-3]"),
    Field("day of month", 1, 31, "0?[1-9]|[12][0-9]|3[01]"),
    Field("month", 1, 12, "0?[1-9]|1[0-2]|" + _names_re(MONTH_NAMES), MONTH_NAMES),
    Field("day of week", 0, 7, "0?[0-7]|" + _names_re(DAY_NAMES), DAY_NAMES),
)
_STEP = "[1-9][0-9]?"


def _field_re(f: Field) -> str:
    value = f"(?:{f.value})"
    item = rf"(?:\*|{value}(?:-{value})?)(?:/{_STEP})?"
    return f"{item}(?:,{item})*"


PATTERN = (
    "^(?:@(?:yearly|annually|monthly|weekly|daily|midnight|hourly)|"
    + "[ \\t]+".join(_field_re(f) for f in FIELDS)
    + ")$"
)
"""The accepted language as an ECMA-262 (and Python) regular expression: the ``pattern`` of
``ScheduleConfig.cron`` in ``openapi/v0.yaml`` (a test holds the two equal)."""
_MATCH = re.compile(PATTERN[1:-1])


@dataclass(frozen=True, slots=True)
class Cron:
    """A parsed expression: the allowed values of each field, sorted."""

    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: tuple[int, ...]
    months: tuple[int, ...]
    weekdays: tuple[int, ...]
    """0 = Sunday .. 6 = Saturday (7 read as 0)."""
    either_day: bool
    """Neither day field begins with ``*``: a day matching either fires (Vixie's OR rule)."""
    never: bool = False
    """No day ever matches (a day must match both day fields, and none of the days of month is
    in any of the months): :meth:`next_after` and :meth:`latest_at_or_before` answer ``None``."""

    def day_matches(self, d: datetime) -> bool:
        in_days = d.day in self.days
        in_weekdays = (d.isoweekday() % 7) in self.weekdays
        return in_days or in_weekdays if self.either_day else in_days and in_weekdays

    def next_after(self, t_ms: int) -> int | None:
        """The first fire time strictly after ``t_ms`` (epoch ms; a whole minute), ``None`` if
        none within :data:`HORIZON_YEARS`."""
        if self.never:
            return None
        t = _minute(t_ms // MINUTE_MS * MINUTE_MS) + timedelta(minutes=1)
        stop = min(t.year + HORIZON_YEARS, datetime.max.year - 1)
        while t.year <= stop:
            if t.month not in self.months:
                month = _first_above(self.months, t.month)
                year = t.year if month is not None else t.year + 1
                t = datetime(year, month or self.months[0], 1, tzinfo=UTC)
            elif not self.day_matches(t):
                t = self._day_after(t)
            elif t.hour not in self.hours:
                hour = _first_above(self.hours, t.hour)
                day = datetime(t.year, t.month, t.day, tzinfo=UTC)
                t = day.replace(hour=hour) if hour is not None else day + timedelta(days=1)
            elif t.minute not in self.minutes:
                minute = _first_above(self.minutes, t.minute)
                hour_start = t.replace(minute=0)
                t = hour_start + timedelta(hours=1) if minute is None else hour_start.replace(minute=minute)
            else:
                return _ms(t)
        return None

    def latest_at_or_before(self, t_ms: int) -> int | None:
        """The last fire time at or before ``t_ms`` (epoch ms), ``None`` if none within
        :data:`HORIZON_YEARS`."""
        if self.never:
            return None
        t = _minute(t_ms // MINUTE_MS * MINUTE_MS)
        stop = max(t.year - HORIZON_YEARS, datetime.min.year + 1)
        while t.year >= stop:
            if t.month not in self.months:
                month = _last_below(self.months, t.month)
                year = t.year if month is not None else t.year - 1
                t = _month_end(year, month or self.months[-1])
            elif not self.day_matches(t):
                t = self._day_before(t)
            elif t.hour not in self.hours:
                hour = _last_below(self.hours, t.hour)
                day_end = datetime(t.year, t.month, t.day, 23, 59, tzinfo=UTC)
                t = day_end.replace(hour=hour) if hour is not None else day_end - timedelta(days=1)
            elif t.minute not in self.minutes:
                minute = _last_below(self.minutes, t.minute)
                hour_end = t.replace(minute=59)
                t = hour_end.replace(minute=minute) if minute is not None else hour_end - timedelta(hours=1)
            else:
                return _ms(t)
        return None

    def _day_after(self, t: datetime) -> datetime:
        """The start of the next day after ``t``'s that may match: with the AND rule, the next
        day of month of the list (or the next month's first day), else the next day."""
        if not self.either_day:
            day = _first_above(self.days, t.day)
            if day is not None and day <= calendar.monthrange(t.year, t.month)[1]:
                return datetime(t.year, t.month, day, tzinfo=UTC)
            year, month = (t.year + 1, 1) if t.month == 12 else (t.year, t.month + 1)
            return datetime(year, month, 1, tzinfo=UTC)
        return datetime(t.year, t.month, t.day, tzinfo=UTC) + timedelta(days=1)

    def _day_before(self, t: datetime) -> datetime:
        """The last minute of the latest day before ``t``'s that may match (as
        :meth:`_day_after`, backwards)."""
        if not self.either_day:
            day = _last_below(self.days, t.day)
            if day is not None:
                return datetime(t.year, t.month, day, 23, 59, tzinfo=UTC)
            return datetime(t.year, t.month, 1, 23, 59, tzinfo=UTC) - timedelta(days=1)
        return datetime(t.year, t.month, t.day, 23, 59, tzinfo=UTC) - timedelta(days=1)


def parse_cron(text: str, field: str = "cron") -> Cron:
    """``text`` parsed; 400 ``invalid_request`` naming ``field`` and the problem otherwise."""
    if not isinstance(text, str) or not _MATCH.fullmatch(text):
        problem = cron_problem(text) if isinstance(text, str) else "must be a string"
        raise InvalidRequest(f"{field}: {problem}", {"field": field, "value": text})
    expanded = SHORTHANDS.get(text, text)
    parts = expanded.split()
    values = [_values(f, part) for f, part in zip(FIELDS, parts, strict=True)]
    weekdays = tuple(sorted({d % 7 for d in values[4]}))
    either_day = not parts[2].startswith("*") and not parts[4].startswith("*")
    days, months = values[2], values[3]
    return Cron(
        text,
        values[0],
        values[1],
        days,
        months,
        weekdays,
        either_day=either_day,
        never=not either_day and days[0] > max(MONTH_DAYS[m] for m in months),
    )


def cron_problem(text: str) -> str:
    """Why ``text`` is not an expression of :data:`PATTERN`, in words (only asked of one that is
    not)."""
    if text.startswith("@"):
        return f"{text!r} is not a shorthand; use one of {', '.join(SHORTHANDS)}"
    if text != text.strip():
        return "has spaces before or after it; give exactly five fields"
    parts = re.split(r"[ \t]+", text) if text else []
    if len(parts) != len(FIELDS):
        return (
            f"has {len(parts)} fields; give five (minute hour day-of-month month day-of-week, UTC), "
            'e.g. "*/5 * * * *"'
        )
    for f, part in zip(FIELDS, parts, strict=True):
        if not re.fullmatch(_field_re(f), part):
            return f"{f.name} field {part!r}: {_item_problem(f, part)}"
    return "is not a five-field cron expression"  # pragma: no cover — the fields all match


def _item_problem(f: Field, part: str) -> str:
    for item in part.split(","):
        base, slash, step = item.partition("/")
        if slash and not re.fullmatch(_STEP, step):
            return f"step {step!r} must be a whole number from 1 to 99"
        if base == "*":
            continue
        for value in base.split("-", 1) if base.count("-") == 1 else [base]:
            if not re.fullmatch(f"(?:{f.value})", value):
                return _value_problem(f, value)
    return "use values, ranges a-b, lists a,b and steps */s or a-b/s"


def _value_problem(f: Field, value: str) -> str:
    if value.isdigit():
        return f"{value} is out of range {f.low}-{f.high}"
    if f.names and value.isalpha():
        return f"{value!r} is not a name; use {', '.join(f.names)}"
    return f"{value!r} is not a value; use numbers {f.low}-{f.high}" + (
        f" or names ({f.names[0]} .. {f.names[-1]})" if f.names else ""
    )


def _values(f: Field, part: str) -> tuple[int, ...]:
    """The values one field allows (it matched :data:`PATTERN`)."""
    allowed: set[int] = set()
    for item in part.split(","):
        base, _, step_text = item.partition("/")
        step = int(step_text) if step_text else 1
        if base == "*":
            first, last = f.low, f.high
        elif "-" in base:
            a, b = base.split("-")
            first, last = _value(f, a), _value(f, b)
        else:
            first = _value(f, base)
            last = f.high if step_text else first
        wrapped = [*range(first, f.high + 1), *range(f.low, last + 1)]
        allowed.update((wrapped if first > last else range(first, last + 1))[::step])
    return tuple(sorted(allowed))


def _value(f: Field, text: str) -> int:
    if text.isdigit():
        return int(text)
    return f.names.index(text.lower()) + (1 if f.name == "month" else 0)


def _first_above(values: tuple[int, ...], v: int) -> int | None:
    i = bisect.bisect_right(values, v)
    return values[i] if i < len(values) else None


def _last_below(values: tuple[int, ...], v: int) -> int | None:
    i = bisect.bisect_left(values, v)
    return values[i - 1] if i else None


def _minute(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)


def _ms(t: datetime) -> int:
    return (t - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def _month_end(year: int, month: int) -> datetime:
    return datetime(year, month, calendar.monthrange(year, month)[1], 23, 59, tzinfo=UTC)
