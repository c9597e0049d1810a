"""The SDK's result types: plain dataclasses, built from the server's JSON by the adapter
(:mod:`topics._generated`). Field names follow the contract without its ``$`` sigil
(``$seq`` → ``seq``). Enum-like fields (``type``, ``durability``, ``reason``…) are plain strings,
so a value a newer server adds is carried through, never a parse error.

>>> r = Record(seq=7, ts=1748450001000, data={"id": 1}, tag="order:1")
>>> (r.seq, r.data["id"], r.node)
(7, 1, None)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec


@dataclass(slots=True)
class TopicConfig:
    """A topic's full, resolved configuration as the server reports it."""

    type: str
    ttl_ms: int
    cap_records: int
    cap_bytes: int
    discard: str
    durable: bool
    durability: str
    priority: int | None
    auto_priority: bool
    auto_create: bool
    idempotency_window_ms: int
    dedupe_node: bool
    lease_ms: int
    claim_jitter_ms: int
    max_deliveries: int
    dead_letter: str | None
    leases_durable: bool
    max_in_flight: int = 0
    """Queue only: the most jobs leased at once (0 = no cap)."""


@dataclass(slots=True)
class TopicInfo:
    """The answer to ``create_topic``: ``created`` is true only if this call made the topic."""

    topic: str
    created: bool
    config: TopicConfig


@dataclass(slots=True)
class QueueHolder:
    """A node holding leases on a queue, and how many."""

    node: str
    in_flight: int


@dataclass(slots=True)
class QueueCounters:
    """A queue's counters: claimable now, leased now, moved to the dead-letter topic;
    and its health: jobs waiting out a nack delay, how long the oldest claimable job has
    waited (ms), and the nodes holding leases (most first, at most 100;
    ``holders_truncated`` when more do)."""

    ready: int
    in_flight: int
    dead_lettered: int
    delayed: int = 0
    oldest_ready_age_ms: int = 0
    holders: list[QueueHolder] = field(default_factory=list)
    holders_truncated: bool = False


@dataclass(slots=True)
class Lease:
    """An active lease on a queue's job (:meth:`topics.Client.leases`)."""

    seq: int
    node: str
    lease_id: str
    deadline: int
    deliveries: int


@dataclass(slots=True)
class TopicState:
    """One topic's state. ``earliest_seq`` is ``head_seq + 1`` when the topic is empty;
    ``queue`` is ``None`` on a log."""

    topic: str
    type: str
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
    """One entry of ``list_topics``."""

    topic: str
    type: str
    head_seq: int
    earliest_seq: int
    count: int
    bytes: int
    durable: bool
    durability: str
    effective_priority: int


@dataclass(slots=True)
class TopicDeletion:
    """The answer to ``delete_topic``: ``deleted`` is false when the topic did not exist;
    ``routers_removed`` and ``schedules_removed`` name the routers and schedules that went with
    it."""

    topic: str
    deleted: bool
    routers_removed: list[str] = field(default_factory=list)
    schedules_removed: list[str] = field(default_factory=list)


@dataclass(slots=True)
class AppendResult:
    """Seqs assigned by a write. ``seqs`` is contiguous ``first_seq..last_seq``; ``deduped`` is
    true when an idempotency key matched an earlier write (those are its seqs; nothing was
    appended again). For ``append_many`` the fields cover every chunk: ``deduped`` only if all
    chunks were, ``created`` if any chunk created the topic."""

    topic: str
    seqs: list[int]
    first_seq: int
    last_seq: int
    head_seq: int
    count: int
    created: bool
    deduped: bool


class Record(
    msgspec.Struct,
    rename={"seq": "$seq", "ts": "$ts", "tag": "$tag", "node": "$node", "delay_ms": "$delay_ms"},
):
    """A stored record. ``tag``/``node``/``meta`` are ``None`` when absent (``tag`` also when the
    read did not ask for tags; ``meta`` when it did not ask for meta); ``delay_ms`` is a delayed
    queue job's write delay (0 when it had none).

    A ``msgspec.Struct`` rather than a dataclass (the one result type that is): record pages are
    decoded straight into it, in C, faster than ``orjson.loads`` builds plain dicts — a dataclass
    per record cost reads 80 % over raw HTTP (docs/BENCHMARKS.md "SDK"). It reads like one:
    keyword construction, attributes, ``==``, ``repr``; ``msgspec.structs.asdict(record)``.
    """

    seq: int
    ts: int
    data: Any = None
    tag: str | None = None
    node: str | None = None
    meta: dict[str, Any] | None = None
    delay_ms: int = 0


class RawRecord(
    msgspec.Struct,
    rename={"seq": "$seq", "ts": "$ts", "tag": "$tag", "node": "$node", "delay_ms": "$delay_ms"},
):
    """A stored record whose ``data`` and ``meta`` are left as the JSON text the server sent,
    never decoded — what :meth:`topics.Client.read_raw` yields, for pipelines that pass JSON on
    (the Spark connector's ``data``/``meta`` columns). Both are ``msgspec.Raw`` buffers:
    ``bytes(r.data)`` is the text; ``meta`` is empty when the record has none (or the read did
    not ask for it).

    >>> r = RawRecord(seq=7, ts=1748450001000, data=msgspec.Raw(b'{"id":1}'))
    >>> (r.seq, bytes(r.data), bytes(r.meta))
    (7, b'{"id":1}', b'')
    """

    seq: int
    ts: int
    data: msgspec.Raw = msgspec.Raw(b"null")
    tag: str | None = None
    node: str | None = None
    meta: msgspec.Raw = msgspec.Raw(b"")
    delay_ms: int = 0


@dataclass(slots=True)
class Job:
    """A leased queue job. Pass it back to ``ack``/``nack``/``extend``: its
    ``lease_id`` fences a stale worker (an ack after the lease moved on is skipped).
    ``delay_ms``: the write delay it was appended with (0: none); it became claimable at
    ``ts + delay_ms``."""

    topic: str
    seq: int
    data: Any
    lease_id: str
    deadline: int
    deliveries: int
    ts: int
    tag: str | None = None
    node: str | None = None
    meta: dict[str, Any] | None = None
    delay_ms: int = 0


@dataclass(slots=True)
class AckResult:
    """``acked`` jobs were completed (deleted); ``skipped`` seqs were not held by this node."""

    topic: str
    acked: int
    skipped: list[int]
    ready: int
    in_flight: int


@dataclass(slots=True)
class NackResult:
    """``nacked`` jobs were released for (delayed) reclaim; ``skipped`` were not held."""

    topic: str
    nacked: int
    skipped: list[int]
    ready: int
    in_flight: int


@dataclass(slots=True)
class DeadLetterResult:
    """``moved`` jobs went to the queue's dead-letter topic now; ``skipped`` were not held."""

    topic: str
    moved: list[int]
    skipped: list[int]
    ready: int
    in_flight: int


@dataclass(slots=True)
class ExtendResult:
    """``deadlines`` maps each extended seq to its new absolute deadline (ms)."""

    topic: str
    extended: int
    skipped: list[int]
    deadlines: dict[int, int]


@dataclass(slots=True)
class RouterInfo:
    """A router's definition; ``created`` is set on the answer to ``put_router`` only.
    ``forwarded_total``/``cursor``/``lag`` are filled by ``router()`` and ``list_routers()``."""

    router: str
    source: str
    dest: str
    guarantee: str
    preserve_node: bool | None = None
    preserve_tag: bool | None = None
    filter: Any = None
    allow_cycle: bool | None = None
    created: bool | None = None
    forwarded_total: int | None = None
    cursor: int | None = None
    lag: int | None = None


@dataclass(slots=True)
class ScheduleFailure:
    """Why a schedule's last run attempt failed (the append's error ``code`` and ``message``),
    and when (``at_ms``); it is retried."""

    code: str
    message: str
    at_ms: int


@dataclass(slots=True)
class ScheduleInfo:
    """A schedule (an extension): it appends ``records`` to ``topic`` on ``cron`` (UTC) or every
    ``every_ms``. ``next_run_ms`` is the next due time not run yet (``None``: a cron no day
    matches), ``last_run_ms`` the due time of the last run. ``created`` is set on the answer to
    ``put_schedule`` only; ``records`` and ``node`` are not in ``list_schedules``' summaries."""

    schedule: str
    topic: str
    missed: str
    next_run_ms: int | None
    last_run_ms: int | None
    runs_total: int
    cron: str | None = None
    every_ms: int | None = None
    records: list[dict[str, Any]] | None = None
    node: str | None = None
    last_error: ScheduleFailure | None = None
    created: bool | None = None


@dataclass(slots=True)
class ConsumerInfo:
    """A named consumer of ``topic`` (an extension): its committed ``cursor`` — the last seq it
    has read — the topic's ``head_seq``, the ``lag`` between them and when the cursor was last
    set (``committed_at_ms``). ``created`` is set on the answer to ``put_consumer`` only."""

    consumer: str
    topic: str
    cursor: int
    head_seq: int
    lag: int
    committed_at_ms: int
    created: bool | None = None


@dataclass(slots=True)
class Health:
    """``GET /v0/health``."""

    status: str
    version: str
    uptime_ms: int


@dataclass(slots=True)
class Identity:
    """``GET /v0/whoami``: what the client's API key allows. ``auth`` is ``"keys"`` when the
    server checks keys, ``"dev"`` when it has none (then ``key_id`` and ``key`` are ``None`` and
    every scope is granted). ``prefixes`` empty: any name. Never the key's secret.

    >>> me = Identity(auth="keys", key_id=3, key="key #3", scopes=["read"], prefixes=["tenant42."])
    >>> (me.may("read"), me.may("write"), me.allows("tenant42.orders"), me.allows("other"))
    (True, False, True, False)
    """

    auth: str
    key_id: int | None
    key: str | None
    scopes: list[str]
    """Sorted: any of ``admin``, ``delete``, ``read``, ``write``."""
    prefixes: list[str]
    """Byte prefixes of the topic/router/schedule names the key may use; empty: any name."""

    def may(self, scope: str) -> bool:
        """Whether the key holds ``scope``."""
        return scope in self.scopes

    def allows(self, name: str) -> bool:
        """Whether ``name`` is inside the key's allowlist (a plain prefix match)."""
        return not self.prefixes or name.startswith(tuple(self.prefixes))


@dataclass(slots=True)
class Readiness:
    """``GET /v0/ready`` when ready (a not-ready server raises ``NotReady``)."""

    status: str
    wal_replay_complete: bool
    topics: int


# -- watch events ------------------------------------------------------------------------------


@dataclass(slots=True)
class Records:
    """New records of one topic, in seq order (a watch event). ``head_seq`` is the topic's head
    when they were sent (lag = ``head_seq - records[-1].seq``)."""

    topic: str
    records: list[Record]
    head_seq: int


@dataclass(slots=True)
class Tombstone:
    """Records ``gap_from..gap_to`` (inclusive) of ``topic`` were lost before this reader got
    to them (``reason``: ``cap``, ``ttl``, ``mixed``, ``recreated``, ``source_trim``,
    ``from_seq_too_old``…). A watch event, and what ``read(on_gap="skip")`` counts."""

    topic: str
    gap_from: int
    gap_to: int
    reason: str
    missed_estimate: int | None = None
    earliest_seq: int | None = None
    head_seq: int | None = None


@dataclass(slots=True)
class CaughtUp:
    """The watch has delivered everything of ``topic`` up to ``head_seq``; it is live now."""

    topic: str
    head_seq: int


@dataclass(slots=True)
class TopicDeleted:
    """The watched topic was deleted; the watch goes on with its other topics."""

    topic: str
    head_seq: int | None = None
    reason: str | None = None


WatchEvent = Records | Tombstone | CaughtUp | TopicDeleted
"""What iterating a :class:`topics.Watch` yields."""
