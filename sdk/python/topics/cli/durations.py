"""Durations and points in time on the command line. A duration is ``500ms``, ``30s``,
``1.5m``, ``2h``, ``1d`` (a number and a unit; ``0`` alone is allowed), as whole milliseconds —
what ``topics pub --delay`` takes; a point in time is ISO 8601 (``2026-11-27T10:00:00Z``), or a
duration ago (``read --since 10m``)."""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta

_UNIT_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def duration_ms(value: str) -> int:
    """``value`` as milliseconds (rounded to the nearest); ``argparse.ArgumentTypeError`` naming
    the accepted forms otherwise.

    >>> [duration_ms(v) for v in ("0", "250ms", "30s", "1.5m", "2h", "1d")]
    [0, 250, 30000, 90000, 7200000, 86400000]
    """
    text = value.strip().lower()
    if text == "0":
        return 0
    match = _DURATION.fullmatch(text)
    if match is None:
        raise argparse.ArgumentTypeError(
            f"expected a duration such as 500ms, 30s, 10m, 2h or 1d, got {value!r}"
        )
    number, unit = match.groups()
    return round(float(number) * _UNIT_MS[unit])


def time_ago(value: str) -> datetime:
    """``--since``: the moment ``value`` (a duration) before now."""
    return datetime.now(UTC) - timedelta(milliseconds=duration_ms(value))


def point_in_time(value: str) -> datetime:
    """``--from-time``: an ISO 8601 date or date and time; without an offset it is local time
    (``Z`` or ``+02:00`` say otherwise)."""
    try:
        return datetime.fromisoformat(value.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO 8601 time such as 2026-11-27T10:00:00Z, got {value!r}"
        ) from None
