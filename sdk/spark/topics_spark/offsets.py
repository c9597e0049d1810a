"""Offsets and partition planning, on the driver: where each topic stands (one call per topic,
or one listing for a prefix), the concrete cursors a read starts and ends at, how a
micro-batch is capped by ``maxOffsetsPerTrigger``, and how ``(start, end]`` seq ranges are cut
into tasks.

An offset is a cursor, the contract's ``from_seq``: the last seq consumed. A range
``(start, end]`` holds the records with ``start < seq <= end``; its bounds are fixed when it is
planned, so a task executed again reads exactly the same rows. Pure functions over plain data
except :func:`positions`, which asks the server.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import topics

from .options import EARLIEST, LATEST, Connection, Offsets, ReadOptions

SEQS_PER_PARTITION = 100_000
"""A task reads at most about this many seqs (more partitions when a range is larger)."""


@dataclass(frozen=True, slots=True)
class Position:
    """Where one topic stands: ``earliest`` is the cursor before its earliest retained record
    (``earliest_seq - 1``), ``head`` its last assigned seq."""

    earliest: int
    head: int


@dataclass(frozen=True, slots=True)
class SeqRange:
    """One task's share of a topic: the records with ``start < seq <= end``."""

    topic: str
    start: int
    end: int


def client(conn: Connection) -> topics.Client:
    """A blocking SDK client for ``conn`` (429/503 retried honouring ``Retry-After``)."""
    return topics.Client(conn.url, api_key=conn.api_key, timeout=conn.timeout)


def positions(conn: Connection, opts: ReadOptions, *, missing_ok: bool) -> dict[str, Position]:
    """The read's topics and where they stand now: every topic under ``opts.prefix`` (one
    listing), or each named topic. A named topic that does not exist raises
    :class:`topics.TopicNotFound`, unless ``missing_ok`` (a stream waiting for it: left out)."""
    with client(conn) as c:
        if opts.prefix is not None:
            return {s.topic: Position(s.earliest_seq - 1, s.head_seq) for s in c.list_topics(opts.prefix)}
        out: dict[str, Position] = {}
        for name in opts.topics:
            try:
                state = c.topic(name, touch=False)
            except topics.TopicNotFound:
                if not missing_ok:
                    raise
                continue  # a stream waits for it: it enters like a new topic once it exists
            out[name] = Position(state.earliest_seq - 1, state.head_seq)
        return out


def resolve(spec: str | Offsets, now: Mapping[str, Position], *, default: int) -> Offsets:
    """Concrete cursors for every topic in ``now``: ``"earliest"``/``"latest"`` for all, or a
    JSON map whose missing topics take ``default`` (``EARLIEST`` or ``LATEST``)."""
    out: Offsets = {}
    for name in sorted(now):
        want = (
            spec.get(name, default)
            if isinstance(spec, dict)
            else (EARLIEST if spec == "earliest" else LATEST)
        )
        pos = now[name]
        out[name] = pos.earliest if want == EARLIEST else pos.head if want == LATEST else want
    return out


def at_times(conn: Connection, times: int | Mapping[str, int], now: Mapping[str, Position]) -> Offsets:
    """The cursors where reads from these times start, for the topics in ``now`` (``times`` an
    int: every one; a map: the topics it names), as the server resolves a ``from_ts``: the seq
    before the first record written at or after the time, the head when there is none, and
    ``EARLIEST`` (not 0) when that record is the oldest retained one — a start by time is not
    behind what was evicted, so no loss is reported for it."""
    wanted = (
        {t: times for t in now} if isinstance(times, int) else {t: ts for t, ts in times.items() if t in now}
    )
    out: Offsets = {}
    with client(conn) as c:
        for name in sorted(wanted):
            try:
                cursor = c.cursor_at(name, wanted[name])
            except topics.TopicNotFound:
                continue  # deleted since it was listed
            out[name] = EARLIEST if cursor == 0 else cursor
    return out


@dataclass(frozen=True, slots=True)
class Loss:
    """Seqs ``first..last`` of ``topic`` a reader at some cursor will never see (``reason`` as
    the server's tombstone says: ``cap``, ``ttl``, ``recreated``…)."""

    topic: str
    first: int
    last: int
    reason: str


def probe(conn: Connection, cursors: Mapping[str, int]) -> dict[str, topics.DataLoss]:
    """The tombstone a reader at each cursor meets first, if any, as the server reports it: one
    ``diff`` of one record per cursor — a cursor 0 included (the SDK's ``trimmed``: a stream's
    committed offset is owed every record after it). Topics that do not exist are left out."""
    out: dict[str, topics.DataLoss] = {}
    if not cursors:
        return out
    with client(conn) as c:
        for name in sorted(cursors):
            try:
                first = c.read_raw(name, cursors[name], page_size=1, include_meta=False, include_tags=False)
                next(iter(first), None)
                if first.trimmed is not None:  # a committed cursor 0 is owed seq 1 on: a loss
                    t = first.trimmed
                    missed = t.missed_estimate if t.missed_estimate is not None else t.gap_to - t.gap_from + 1
                    raise topics.DataLoss(name, t.gap_from, t.gap_to, t.reason, missed)
            except topics.DataLoss as lost:
                out[name] = lost
            except topics.TopicNotFound:
                pass
    return out


def probe_losses(conn: Connection, starts: Mapping[str, int], now: Mapping[str, Position]) -> list[Loss]:
    """The losses a read starting at ``starts`` meets at once, as the server reports them, for
    the cursors that may be behind their topic's eviction floor or past its head. Deleted
    records are no loss (the contract skips them silently), so the earliest retained seq alone
    cannot tell: the tombstone does. A cursor past a recreated topic's old head missed nothing."""
    suspects = {t: c for t, c in starts.items() if t in now and not now[t].earliest <= c <= now[t].head}
    return [
        Loss(name, max(lost.gap_from, starts[name] + 1), lost.gap_to, lost.reason)
        for name, lost in probe(conn, suspects).items()
        if not (lost.reason == "recreated" and not lost.missed_estimate)
    ]


def capped(starts: Mapping[str, int], heads: Mapping[str, int], max_seqs: int | None) -> Offsets:
    """The end cursors of the next micro-batch for the topics in ``starts``: each one's head,
    or — when more than ``max_seqs`` seqs are waiting — a share of ``max_seqs``: first one seq
    to every waiting topic (while the budget lasts, smallest backlogs first), so no topic is
    starved by a bigger one; the rest in proportion to the backlogs left, remainders to the
    largest. At least one seq of progress when anything waits."""
    backlog = {t: max(0, heads[t] - starts[t]) for t in sorted(starts)}
    total = sum(backlog.values())
    if max_seqs is None or total <= max_seqs:
        return {t: starts[t] + b for t, b in backlog.items()}
    share = dict.fromkeys(backlog, 0)
    waiting = sorted((t for t, b in backlog.items() if b), key=lambda t: (backlog[t], t))
    for t in waiting[:max_seqs]:
        share[t] = 1
    left = max_seqs - sum(share.values())
    rest = {t: backlog[t] - share[t] for t in backlog}
    rest_total = sum(rest.values())
    if left > 0 and rest_total:
        for t, r in rest.items():
            share[t] += left * r // rest_total
        spare = max_seqs - sum(share.values())
        for t in sorted(rest, key=lambda t: (-rest[t], t)):
            if spare <= 0:
                break
            if share[t] < backlog[t]:
                share[t] += 1
                spare -= 1
    return {t: starts[t] + share[t] for t in backlog}


def plan(starts: Mapping[str, int], ends: Mapping[str, int], min_partitions: int) -> list[SeqRange]:
    """Cuts each topic's ``(starts[t], ends[t]]`` into contiguous, non-overlapping ranges that
    cover it exactly: at least ``min_partitions`` in all (shared in proportion to the topics'
    sizes, never more than a topic's seqs) and at most about :data:`SEQS_PER_PARTITION` seqs
    each. An end *behind* its start (a stream's topic recreated: seqs restart at 1) is read as
    ``(0, end]``; a topic absent from ``starts`` (new to a stream: ``end`` is where it starts)
    gets no range. Deterministic: the same arguments always give the same ranges, in topic order."""
    bounds = {t: (0 if ends[t] < starts[t] else starts[t], ends[t]) for t in sorted(ends) if t in starts}
    sizes = {t: end - start for t, (start, end) in bounds.items() if end > start}
    total = sum(sizes.values())
    if not total:
        return []
    counts = _shares(sizes, max(min_partitions, math.ceil(total / SEQS_PER_PARTITION)))
    out: list[SeqRange] = []
    for name, size in sizes.items():
        start, parts = bounds[name][0], counts[name]
        out.extend(
            SeqRange(name, start + size * i // parts, start + size * (i + 1) // parts) for i in range(parts)
        )
    return out


def _shares(sizes: Mapping[str, int], wanted: int) -> dict[str, int]:
    """How many ranges each topic is cut into: ``wanted`` in all, in proportion to the sizes
    (largest remainders first), at least one and enough for :data:`SEQS_PER_PARTITION` each,
    never more than a topic's seqs (so fewer than ``wanted`` only when there are fewer seqs)."""
    total = sum(sizes.values())
    quota = {t: wanted * size / total for t, size in sizes.items()}
    counts = {
        t: min(size, max(1, math.floor(quota[t]), math.ceil(size / SEQS_PER_PARTITION)))
        for t, size in sizes.items()
    }
    order = sorted(sizes, key=lambda t: (-(quota[t] - math.floor(quota[t])), -sizes[t], t))
    while sum(counts.values()) < wanted:
        growable = [t for t in order if counts[t] < sizes[t]]
        if not growable:
            break
        for t in growable[: wanted - sum(counts.values())]:
            counts[t] += 1
    return counts


def check_order(starts: Mapping[str, int], ends: Mapping[str, int]) -> None:
    """Raises when a topic's ending offset (as asked, before clamping to the head) is before
    its starting offset."""
    for name in sorted(ends):
        if ends[name] < starts.get(name, 0):
            raise ValueError(
                f'endingOffsets for topic "{name}" ({ends[name]}) is before its startingOffsets '
                f"({starts[name]}): nothing to read between them"
            )


def clamp(ends: Mapping[str, int], now: Mapping[str, Position]) -> Offsets:
    """Ending cursors no further than each topic's head at planning time, so a task executed
    later cannot see records appended after the read was planned."""
    return {t: min(seq, now[t].head) for t, seq in ends.items() if t in now}


def as_offset(cursors: Iterable[tuple[str, int]]) -> Offsets:
    """A Spark offset: topic → cursor, sorted by topic (stable JSON, nothing else in it)."""
    return dict(sorted(cursors))
