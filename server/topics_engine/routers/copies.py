"""What a router's copy of a source record is: :func:`derive`, the ``meta._topics_router`` stamp
and the hop count it carries.

Invariant: :func:`derive` is deterministic — the same router, records and ``stamped`` flag give
the same bytes — because the WAL logs only which source seqs a step copied, and replay re-derives
the copies from the source records (docs/DECISIONS.md, "Derived copies"). Anything a copy holds
must therefore come from the source record and the router's stored config, never from the time
or other state.

The stamp is ``{"router", "source", "seq", "hops"}``: the idempotency key of an
``exactly_once`` router (:func:`newest_key` finds the newest one in dest at start-up) and the
hop count of a router on a cycle (:func:`hops_of`; a record with :data:`HOP_CAP` hops is not
forwarded again). Routers that do not stamp leave ``meta`` verbatim. See docs/DECISIONS.md,
"Where the hop count lives".
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import Any, TypeVar

import orjson

from ..records import NewRecords, Record
from ..topic import Topic
from .router import Router

HOP_CAP = 8
"""A record forwarded this many times along a cycle is not forwarded again (docs/DECISIONS.md,
"Router PUT")."""
STAMP = "_topics_router"
"""The ``meta`` key of a copy's stamp."""
_STAMP_NEEDLE = b'"_topics_router"'
"""Searched for in a record's ``meta`` bytes before parsing them: most records carry no stamp."""
KEY_LOOKBACK = 100_000
"""How many of dest's newest records an ``exactly_once`` router searches for its newest key."""

_T = TypeVar("_T")


def derive(router: Router, records: list[Record], stamped: bool | None = None) -> NewRecords:
    """The copies of ``records`` a router appends to dest (deterministic: replay re-derives the
    same bytes). ``stamped`` overrides the router's current stamping (replay of a step)."""
    cfg = router.config
    stamp = router.stamps if stamped is None else stamped
    datas = [r.data_json for r in records]
    tags = [r.tag for r in records] if cfg.preserve_tag else None
    nodes = [r.node for r in records] if cfg.preserve_node else None
    if stamp:
        metas: list[bytes | None] = [_stamped_meta(router, r) for r in records]
    else:
        metas = [r.meta_json for r in records]
    return NewRecords(datas, _present(tags), _present(nodes), _present(metas))


def hops_of(record: Record) -> int:
    """How many times ``record`` was forwarded along a cycle (its stamp's ``hops``; 0 if none)."""
    stamp = _stamp(record)
    hops = stamp.get("hops") if stamp is not None else None
    return hops if isinstance(hops, int) else 0


def newest_key(dest: Topic, router: Router) -> int | None:
    """The source seq of the newest copy in ``dest`` stamped by ``router`` (its exactly-once
    key), searching the newest :data:`KEY_LOOKBACK` records; ``None`` if there is none."""
    seqs = deque(dest.live_seqs(), maxlen=KEY_LOOKBACK)  # the newest, in bounded memory
    for seq in reversed(seqs):
        record = dest.record(seq)
        stamp = _stamp(record) if record is not None else None
        if (
            stamp is not None
            and stamp.get("router") == router.name
            and stamp.get("source") == router.config.source
            and isinstance(stamp.get("seq"), int)
        ):
            seq_found: int = stamp["seq"]
            return seq_found
    return None


def present_runs(source: Topic, seqs: list[int]) -> Iterator[tuple[int, list[Record]]]:
    """Runs of consecutive copied seqs whose source records are still stored, with the offset
    of each run's first copy (a record missing now leaves its dest seq empty)."""
    run: list[Record] = []
    start = 0
    for offset, seq in enumerate(seqs):
        record = source.record(seq)
        if record is None:
            if run:
                yield start, run
            run = []
            continue
        if not run:
            start = offset
        run.append(record)
    if run:
        yield start, run


def _stamped_meta(router: Router, record: Record) -> bytes:
    """``record``'s ``meta`` with this router's stamp set (one more hop than the record had)."""
    meta_json = record.meta_json
    meta: dict[str, Any] = orjson.loads(meta_json) if meta_json is not None else {}
    meta[STAMP] = {
        "router": router.name,
        "source": router.config.source,
        "seq": record.seq,
        "hops": hops_of(record) + 1,
    }
    return orjson.dumps(meta)


def _stamp(record: Record) -> dict[str, Any] | None:
    """``record``'s router stamp, if its ``meta`` has one that is an object."""
    meta = record.meta_json
    if meta is None or _STAMP_NEEDLE not in meta:
        return None
    stamp = orjson.loads(meta).get(STAMP)
    return stamp if isinstance(stamp, dict) else None


def _present(values: list[_T | None] | None) -> list[_T | None] | None:
    """``values``, or ``None`` when it holds nothing but ``None`` (the column is absent)."""
    return values if values is not None and any(v is not None for v in values) else None
