"""What engine operations return: plain dataclasses, no wire format.

The HTTP layer (``topics_server.wire``) turns these into response bodies. The one exception
is record payloads: a record's JSON object is encoded once by the engine (``records``) and
results carry those bytes, so a read never re-encodes a record.

``wait`` fields are :data:`AckWait` values: ``None``, or a future the caller awaits
before acknowledging (fsync-class mutations). Fields described as "after" are read once the
mutation is applied — for an fsync-class delete, that is after ``wait`` resolved.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from .config import Durability, TopicConfig, TopicType

AckWait = asyncio.Future[float] | None
"""What an acknowledgement waits for: ``None`` (nothing), or a future resolved with the group
commit's fsync milliseconds once the mutation is durable (failed with ``NotReady`` if storage
failed)."""


@dataclass(slots=True)
class TopicPut:
    topic: str
    created: bool
    config: TopicConfig
    wait: AckWait = None


@dataclass(slots=True)
class QueueCounters:
    """A queue's counters (the ``queue`` object of a topic's state) and its health (extensions,
    docs/DECISIONS.md)."""

    ready: int
    in_flight: int
    dead_lettered: int
    delayed: int = 0
    """Jobs not claimable yet: waiting out a write's or a nack's ``delay_ms``."""
    oldest_ready_age_ms: int = 0
    """How long the oldest claimable job has been in the queue (now - its ``$ts``); 0 if none."""
    holders: list[tuple[str, int]] = field(default_factory=list)
    """``(node, in_flight)`` of the nodes holding leases, most first, at most ``MAX_HOLDERS``."""
    holders_truncated: bool = False
    holder_count: int = 0
    """How many nodes hold leases (all of them, not only those listed)."""


@dataclass(slots=True)
class TopicState:
    topic: str
    type: TopicType
    head_seq: int
    earliest_seq: int
    next_seq: int
    count: int
    bytes: int
    config: TopicConfig
    effective_priority: int
    last_write_ts: int | None
    last_read_ts: int | None
    queue: QueueCounters | None = None


@dataclass(slots=True)
class TopicSummary:
    topic: str
    type: TopicType
    head_seq: int
    earliest_seq: int
    count: int
    bytes: int
    durability: Durability
    effective_priority: int

    @property
    def durable(self) -> bool:
        return self.durability is Durability.FSYNC


@dataclass(slots=True)
class TopicPage:
    topics: list[TopicSummary]
    next_cursor: str | None
    """Present only when more topics follow this page."""


@dataclass(slots=True)
class TopicDeleted:
    topic: str
    deleted: bool
    routers_removed: list[str] = field(default_factory=list)
    schedules_removed: list[str] = field(default_factory=list)
    """Schedules appending to the topic, removed with it (an extension)."""
    wait: AckWait = None


@dataclass(slots=True)
class Appended:
    topic: str
    first_seq: int
    last_seq: int
    head_seq: int
    created: bool
    deduped: bool
    wait: AckWait = None

    @property
    def count(self) -> int:
        return self.last_seq - self.first_seq + 1


@dataclass(slots=True)
class Tombstone:
    """A gap marker (a tombstone): seqs ``gap_from..gap_to`` (inclusive) were lost to cap/TTL, or the
    topic was recreated."""

    gap_from: int
    gap_to: int
    reason: str
    missed_estimate: int
    earliest_seq: int
    head_seq: int


@dataclass(slots=True)
class Diff:
    """One read from a cursor: the records' JSON objects (encoded once, at append) and the
    watermarks. ``parts`` each hold one or more whole records, ``,``-separated (a run of stored
    records is one slice); ``count`` records in all."""

    topic: str
    parts: list[bytes | memoryview]
    count: int
    next_from_seq: int
    tombstone: Tombstone | None
    scanned: int
    head_seq: int
    earliest_seq: int
    from_seq: int
    """The exclusive cursor the read started after: the one asked for, or what a ``from_ts``
    resolved to (0 after a ``recreated`` tombstone: the read restarted from the earliest)."""

    @property
    def caught_up(self) -> bool:
        return self.next_from_seq >= self.head_seq

    def records_json(self) -> bytes:
        """The records as the inside of a JSON array: ``rec,rec,...``."""
        return b",".join(self.parts)

    def records_parts(self) -> list[bytes | memoryview]:
        """:meth:`records_json` as buffers to write in order (no copy of the record bytes)."""
        parts = self.parts
        if len(parts) <= 1:
            return list(parts)
        out: list[bytes | memoryview] = [parts[0]]
        for part in parts[1:]:
            out.append(b",")
            out.append(part)
        return out

    @property
    def lag(self) -> int:
        return max(0, self.head_seq - self.next_from_seq)


@dataclass(slots=True)
class RecordsDeleted:
    """A records delete; the watermarks are the topic's state after it was applied."""

    topic: str
    deleted: int
    earliest_seq: int = 0
    head_seq: int = 0
    count: int = 0
    bytes: int = 0
    wait: AckWait = None


@dataclass(slots=True)
class LeaseInfo:
    """An active lease on a queue's job (``GET /v0/topics/{q}/leases``)."""

    seq: int
    node: str
    lease_id: str
    deadline: int
    deliveries: int


@dataclass(slots=True)
class LeasePage:
    leases: list[LeaseInfo]
    next_after: int | None
    """The seq the next page starts after; ``None`` on the last page."""
