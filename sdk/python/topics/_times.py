"""Points in time the SDK accepts (a read's ``from_ts``, a watch's start): milliseconds since
the Unix epoch — the unit of every ``$ts`` — or a :class:`datetime.datetime`."""

from __future__ import annotations

from datetime import datetime


def epoch_ms(when: int | datetime) -> int:
    """``when`` in ms since the epoch. A naive datetime is local time, as
    :meth:`datetime.timestamp` reads it; pass an aware one (``tzinfo=UTC``) to be exact."""
    if isinstance(when, datetime):
        return max(0, round(when.timestamp() * 1000))
    if isinstance(when, bool) or not isinstance(when, int) or when < 0:
        raise ValueError(f"a time is ms since the epoch (an int >= 0) or a datetime, got {when!r}")
    return when
