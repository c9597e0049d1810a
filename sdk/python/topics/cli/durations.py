"""Durations on the command line: ``500ms``, ``30s``, ``1.5m``, ``2h``, ``1d`` (a number and a
unit; ``0`` alone is allowed), as whole milliseconds — what ``topics pub --delay`` takes."""

from __future__ import annotations

import argparse
import re

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
