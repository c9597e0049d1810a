"""Watching topics: resumable, pull-based reads of many topics for one consumer.

A :class:`Subscription` holds a :class:`Position` per watched topic — the consumer's cursor
into that topic's record store — and the read options they share. Nothing is buffered per
consumer: the topic is the shared buffer. When records become readable the engine's hub wakes
the subscription, which marks the topic dirty; its stream then reads from the cursor
(:meth:`Subscription.next_step`), sends what the :class:`Step` holds, and commits it. A slow
consumer simply reads later, in bigger batches (up to ``limit`` / ``max_bytes``); a writer never
waits for it. A ``strong`` subscription reads only the durable prefix (docs/DECISIONS.md, "Strong watches").

A :class:`WatchSession` (``POST /v0/watch``) is a subscription with an unguessable id, a TTL and
at most one open stream; :class:`Watches` keeps them. The WebSocket data plane uses bare
subscriptions. Both are features over the engine, like ``queues``.

Resume tokens (docs/DECISIONS.md, "Watch ids"): a stream frame's ``id`` is the whole per-topic
cursor map as unpadded base64url JSON (:func:`encode_cursors`); above :data:`MAX_INLINE_CURSORS`
topics an opaque ``~`` token (the map deflated), still self-contained so any session can resolve it.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import secrets
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import orjson

from .engine import Engine, NodeFilter, node_set
from .errors import InvalidRequest, NotFound, TopicNotFound, cap_reached
from .jsonvalues import to_int
from .names import check_topic_name
from .results import Diff, Tombstone
from .topic import ReadBudget, ReadOptions, Topic

log = logging.getLogger("topics.watch")

Consistency = Literal["eventual", "strong"]
"""What a watcher reads: everything visible, or only the durable prefix (``strong``)."""
DEFAULT_LIMIT = 256
DEFAULT_MAX_BYTES = 256 << 10
DEFAULT_BUDGET = ReadBudget(DEFAULT_LIMIT, DEFAULT_MAX_BYTES)
"""A watch's read budget when the request gives none; ``max_batch_bytes: 0`` means
:data:`ZERO_MAX_BYTES` (docs/DECISIONS.md, "Watch tombstones and budget")."""
HEARTBEAT_MS = (1_000, 15_000, 60_000)
"""Lowest, default and highest ``heartbeat_ms``."""
SESSION_TTL_MS = 300_000
MAX_INLINE_CURSORS = 64
MAX_TOKEN_JSON_BYTES = 4 << 20
"""A deflated resume token never inflates past this (a token is client input)."""
WID_RE = re.compile(r"[A-Za-z0-9_-]{1,256}")
"""What can be a wid at all (a URL-safe segment); whether one names a session is a 404 question
(docs/DECISIONS.md, "Watch ids"): ids are opaque to clients, so they exist or not."""
CURSOR_RE = re.compile(r"~?[A-Za-z0-9_-]+")
"""What can be a stream id at all: unpadded base64url, ``~`` first for a deflated map."""


# -- options -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WatchOptions:
    nodes: frozenset[str] | None = None
    """Loop prevention: records written by these nodes are not delivered (``dedupe_node``)."""
    limit: int = DEFAULT_LIMIT
    max_bytes: int = DEFAULT_MAX_BYTES
    heartbeat_ms: int = HEARTBEAT_MS[1]
    include_meta: bool = True
    include_tags: bool = False
    include_data: bool = True
    strong: bool = False
    _hash: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        fields = (self.nodes, self.limit, self.max_bytes, self.heartbeat_ms, self.include_meta)
        more = (self.include_tags, self.include_data, self.strong)
        object.__setattr__(self, "_hash", hash(fields + more))

    def __hash__(self) -> int:  # computed once: options key every shared read
        return self._hash

    @classmethod
    def resolve(
        cls,
        max_limit: int,
        *,
        node: NodeFilter = None,
        limit: int | None = None,
        max_batch_bytes: int | None = None,
        heartbeat_ms: int | None = None,
        include_meta: bool | None = None,
        include_tags: bool | None = None,
        include_data: bool | None = None,
        consistency: Consistency | None = None,
    ) -> WatchOptions:
        """Defaults, clamps and checks of the watch options (``None`` = not given); values
        are checked whatever their declared type (direct callers may pass anything)."""
        budget = DEFAULT_BUDGET.resolve(limit, max_batch_bytes, max_limit)
        beat = HEARTBEAT_MS[1] if heartbeat_ms is None else to_int(heartbeat_ms, "heartbeat_ms", clamp=True)
        if consistency not in (None, "eventual", "strong"):
            raise InvalidRequest('consistency must be "eventual" or "strong"', {"field": "consistency"})
        options = cls(
            nodes=node_set(node),
            limit=budget.limit,
            max_bytes=budget.max_bytes,
            heartbeat_ms=min(max(beat, HEARTBEAT_MS[0]), HEARTBEAT_MS[2]),
            include_meta=True if include_meta is None else bool(include_meta),
            include_tags=bool(include_tags),
            include_data=True if include_data is None else bool(include_data),
            strong=consistency == "strong",
        )
        if len(_OPTIONS) >= _MAX_OPTIONS:  # values are client-chosen: keep the table bounded
            _OPTIONS.clear()
        return _OPTIONS.setdefault(options, options)  # equal options are one object

    def read_options(self, upto: int, max_scan: int) -> ReadOptions:
        return ReadOptions(
            limit=self.limit,
            nodes=self.nodes,
            include_tags=self.include_tags,
            include_meta=self.include_meta,
            include_data=self.include_data,
            max_bytes=self.max_bytes,
            max_scan=max_scan,
            upto=upto,
        )


_OPTIONS: dict[WatchOptions, WatchOptions] = {}
"""Distinct options values resolved recently (a handful in practice), so equal options are one
object and shared-read keys compare by identity."""
_MAX_OPTIONS = 1024


# -- what a read produces ------------------------------------------------------------------------


@dataclass(slots=True)
class RecordsEvent:
    """``record``: records after ``from_seq`` up to ``to_seq`` (the last seq examined).
    ``parts`` are the records' stored bytes (comma-separated JSON objects); ``share_key`` is the
    same for every reader that got exactly these bytes, so their frame can be built once."""

    topic: str
    parts: list[bytes | memoryview]
    count: int
    from_seq: int
    to_seq: int
    head_seq: int
    share_key: tuple[Any, ...]

    @property
    def cursor(self) -> int:
        return self.to_seq


@dataclass(slots=True)
class TombstoneEvent:
    """``tombstone``: records the reader had not read were lost; its cursor moves to
    ``gap_to`` — or to 0 for ``recreated`` (the cursor was past the new incarnation's head, or
    in seqs a crash made it skip: ``Topic.tombstone_for``; the reader starts it over). The
    first cap/TTL loss after a connect has reason ``from_seq_too_old`` (docs/DECISIONS.md,
    "Watch tombstones and budget")."""

    topic: str
    tombstone: Tombstone
    cursor: int


@dataclass(slots=True)
class CaughtUpEvent:
    """``caught-up``: the reader reached the head (each backlog → live transition)."""

    topic: str
    head_seq: int
    cursor: int


@dataclass(slots=True)
class TopicDeletedEvent:
    """``topic-deleted``: terminal for this topic; the rest of the subscription goes on (a
    topic recreated under the name is not followed)."""

    topic: str
    head_seq: int
    cursor: int
    reason: str = "deleted"


Event = RecordsEvent | TombstoneEvent | CaughtUpEvent | TopicDeletedEvent


@dataclass(slots=True)
class Position:
    """One watched topic: the incarnation watched and the consumer's cursor into it."""

    name: str
    topic: Topic
    cursor: int
    """Exclusive: the next record delivered has a greater seq."""
    from_seq: int
    """Where the subscription started (echoed by ``POST /v0/watch``)."""
    fresh: bool = True
    """No read since the stream (re)connected: a tombstone now is ``from_seq_too_old``."""
    live: bool = False
    """Caught up, announced, and no backlog since."""


@dataclass(slots=True)
class Step:
    """One read of one topic, to send and then :meth:`Subscription.commit`."""

    position: Position
    events: list[Event]
    cursor: int
    live: bool
    more: bool
    """Not caught up: the topic stays dirty and is read again (after the other dirty ones)."""
    ended: bool = False


# -- subscriptions -------------------------------------------------------------------------------


class SharedReads:
    """Reads shared by subscriptions: many consumers at the same cursor of the same topic
    version, with the same options, get the very same :class:`Diff` (one scan, and one
    ``share_key`` the server encodes its frame under once). Bounded: the oldest entries go
    first (a new version of a topic makes its older entries useless anyway)."""

    def __init__(self, capacity: int = 1024, max_bytes: int = 16 << 20) -> None:
        self.capacity = capacity
        self.max_bytes = max_bytes
        """What the kept reads may hold of record bytes: a read holds its records' batches (cold
        ones included), so a watch replaying a cold backlog must not keep them all alive."""
        self._reads: OrderedDict[tuple[Any, ...], tuple[Diff, int]] = OrderedDict()
        self._bytes = 0
        self.hits = 0

    def read(
        self, topic: Topic, cursor: int, options: WatchOptions, upto: int, max_scan: int
    ) -> tuple[Diff, tuple[Any, ...]]:
        key = (topic.id, topic.version, cursor, upto, options)
        kept = self._reads.get(key)
        if kept is not None:
            self.hits += 1
            return kept[0], key
        diff = topic.read(cursor, options.read_options(upto, max_scan))
        size = _held_bytes(diff)
        reads = self._reads
        reads[key] = (diff, size)
        self._bytes += size
        while len(reads) > self.capacity or (self._bytes > self.max_bytes and len(reads) > 1):
            _, (_, old) = reads.popitem(last=False)
            self._bytes -= old
        return diff, key


def _held_bytes(diff: Diff) -> int:
    """What a kept read holds alive: each part is a slice of a whole batch's blob (or bytes of
    its own), so the distinct blobs count whole."""
    held: dict[int, int] = {}
    for part in diff.parts:
        owner = part.obj if isinstance(part, memoryview) else part
        held[id(owner)] = len(owner)  # type: ignore[arg-type]
    return sum(held.values())


class TopicStart:
    """Where a subscription starts on one topic: after ``from_seq`` (0 = from the earliest), at
    the head when ``tail``, with ``from_ts`` at the first live record with ``$ts >= from_ts``
    (:meth:`Topic.seq_before_ts`), or after named consumer ``consumer``'s committed cursor (an
    extension, issue 25; 409 ``no_such_consumer`` if the topic has no such consumer) — both
    resolved when the subscription is made."""

    __slots__ = ("from_seq", "tail", "from_ts", "consumer")

    def __init__(
        self, from_seq: int = 0, tail: bool = False, from_ts: int | None = None, consumer: str | None = None
    ) -> None:
        self.from_seq, self.tail, self.from_ts, self.consumer = from_seq, tail, from_ts, consumer

    def cursor(self, topic: Topic) -> int:
        if self.consumer is not None:
            return topic.consumers.read_cursor(topic.name, self.consumer)
        if self.from_ts is not None:
            return topic.seq_before_ts(self.from_ts)
        return topic.head_seq if self.tail else self.from_seq


class Subscription:
    """Positions on several topics, read with one set of options."""

    def __init__(self, engine: Engine, options: WatchOptions, reads: SharedReads | None = None) -> None:
        self.engine = engine
        self.options = options
        self.reads = reads or SharedReads(capacity=16)
        self.positions: dict[str, Position] = {}
        self.dirty: dict[str, None] = {}
        """Topics that may have something to read, in the order they became so."""
        self.wake: Callable[[], None] | None = None
        self.attached = False

    # -- membership ------------------------------------------------------------------------

    def add(self, name: str, topic: Topic, cursor: int) -> Position:
        """Watch ``name`` from ``cursor`` (replacing its position if it was watched)."""
        self.remove(name)
        position = self.positions[name] = Position(name, topic, cursor, cursor)
        if self.attached:
            self._follow(position)
            self.topic_changed(name)
        return position

    def remove(self, name: str) -> None:
        position = self.positions.pop(name, None)
        self.dirty.pop(name, None)
        if position is not None and self.attached:
            self._unfollow(position)

    def attach(self, wake: Callable[[], None]) -> None:
        """A stream starts serving this subscription: follow every topic; every position is
        read afresh (tombstones on connect are ``from_seq_too_old``, caught-up re-announced)."""
        if self.attached:
            self.detach()
        self.attached = True
        self.wake = wake
        for position in self.positions.values():
            position.fresh, position.live = True, False
            self._follow(position)
            self.dirty[position.name] = None
        wake()

    def detach(self) -> None:
        if not self.attached:
            return
        self.attached = False
        self.wake = None
        for position in self.positions.values():
            self._unfollow(position)

    def _follow(self, position: Position) -> None:
        self.engine.hub.listen(position.name, self)
        if self.options.strong:
            self.engine.watch_strong(position.topic, +1)

    def _unfollow(self, position: Position) -> None:
        self.engine.hub.unlisten(position.name, self)
        if self.options.strong:
            self.engine.watch_strong(position.topic, -1)

    def topic_changed(self, name: str) -> None:
        """The hub's wake-up: ``name`` has something new (or went away). A topic already dirty
        is left as it is: its stream was woken when it became dirty and reads it before it idles
        again (a stream blocked on a client that does not read costs each append one lookup)."""
        if name in self.positions and name not in self.dirty:
            self.dirty[name] = None
            if self.wake is not None:
                self.wake()

    # -- reading ---------------------------------------------------------------------------

    def cursors(self) -> dict[str, int]:
        return {name: p.cursor for name, p in self.positions.items()}

    def rewind(self, cursors: dict[str, int]) -> None:
        """Move positions back to ``cursors`` (a ``Last-Event-ID``): never forward."""
        for name, cursor in cursors.items():
            position = self.positions.get(name)
            if position is not None and 0 <= cursor < position.cursor:
                position.cursor, position.live = cursor, False
                self.dirty[name] = None

    def next_step(self) -> Step | None:
        """Read the topic that became dirty first (``None`` when nothing is dirty)."""
        while self.dirty:
            name = next(iter(self.dirty))
            position = self.positions.get(name)
            if position is None:
                del self.dirty[name]
                continue
            step = self.read(position)  # may raise ColdRead: the topic stays dirty for the retry
            self.dirty.pop(name, None)
            return step
        return None

    def read(self, position: Position) -> Step:
        engine, topic = self.engine, position.topic
        if not engine.is_current(topic):
            head = topic.head_seq
            return Step(
                position,
                [TopicDeletedEvent(position.name, head, position.cursor)],
                position.cursor,
                False,
                False,
                True,
            )
        now = engine.clock.now_ms()
        topic.expire(now)
        topic.last_read_ts = now  # a stream is a reader (auto-priority)
        upto = engine.strong_head(topic) if self.options.strong else topic.head_seq
        diff, key = self.reads.read(
            topic, position.cursor, self.options, upto, engine.limits.max_scan_per_read
        )
        events: list[Event] = []
        cursor = position.cursor
        if diff.tombstone is not None:
            stone = diff.tombstone
            if stone.reason == "recreated":
                cursor = 0  # the read started the new incarnation over
            else:
                if position.fresh:
                    stone = replace(stone, reason="from_seq_too_old")
                cursor = max(cursor, stone.gap_to)
            events.append(TombstoneEvent(position.name, stone, cursor))
        if diff.count:
            events.append(
                RecordsEvent(
                    position.name,
                    diff.records_parts(),
                    diff.count,
                    cursor,
                    diff.next_from_seq,
                    diff.head_seq,
                    key,
                )
            )
        cursor = max(cursor, diff.next_from_seq)
        caught_up = cursor >= upto
        if caught_up and not position.live:
            events.append(CaughtUpEvent(position.name, upto, cursor))  # strong: the durable head
        return Step(position, events, cursor, caught_up, more=not caught_up)

    def only_dirty(self) -> Position | None:
        """The position to read next when it is the subscription's only one and the only topic
        dirty (the common live watch: a step that may be shared with other subscriptions)."""
        positions, dirty = self.positions, self.dirty
        if len(positions) != 1 or len(dirty) != 1:
            return None
        return positions.get(next(iter(dirty)))

    def share_key(self, position: Position) -> tuple[Any, ...]:
        """Equal for subscriptions whose next read at ``position`` is the very same read: the
        topic (by identity: one incarnation), the cursor, ``live`` and ``fresh``, and the
        options (interned: one object for equal options)."""
        topic, options = id(position.topic), id(self.options)
        return (position.name, topic, position.cursor, position.live, position.fresh, options)

    def commit_same(self, position: Position, step: Step) -> None:
        """Commit at ``position`` a step read at the very same place for another subscription —
        the same topic, cursor, ``live`` and ``fresh``, and the same options, hence the same
        read — whose frames went out to this one too: what :meth:`next_step` then
        :meth:`commit` of its own read would do. Only for a step neither ``more`` nor ``ended``."""
        self.dirty.pop(position.name, None)
        position.fresh = False
        position.cursor, position.live = step.cursor, step.live

    def commit(self, step: Step) -> None:
        """The step's frames went out: its position moves on."""
        position = step.position
        position.fresh = False
        if step.ended:
            self.remove(position.name)
            return
        position.cursor, position.live = step.cursor, step.live
        if step.more:
            self.dirty[position.name] = None


# -- sessions -------------------------------------------------------------------------------------


@dataclass(eq=False)
class WatchSession:
    wid: str
    sub: Subscription
    last_access_ms: int
    """When a request last touched the session, on the steady clock (``Clock.steady_ms``)."""
    ttl_ms: int = SESSION_TTL_MS
    owner: object | None = None
    """The stream serving this session now (at most one: a second takes over; docs/DECISIONS.md,
    "Takeover")."""
    creator: object = None
    """Who created the session (the server's API key identity; ``None`` without auth)."""

    def event_id(self, overrides: tuple[str, int] | None = None) -> str:
        """The resume token of the session's cursors now (with one topic's cursor overridden:
        the frame about to go out)."""
        positions = self.sub.positions
        if overrides is not None and len(positions) == 1 and overrides[0] in positions:
            token = _SINGLE_TOPIC_IDS.get(overrides)
            if token is None:
                if len(_SINGLE_TOPIC_IDS) >= 4096:
                    _SINGLE_TOPIC_IDS.clear()
                token = _SINGLE_TOPIC_IDS[overrides] = encode_cursors({overrides[0]: overrides[1]})
            return token
        cursors = self.sub.cursors()
        if overrides is not None:
            cursors[overrides[0]] = overrides[1]
        return encode_cursors(cursors)

    @staticmethod
    def resolve(token: str) -> dict[str, int] | None:
        """The cursor map of a resume token (``None`` if it is malformed)."""
        return decode_cursors(token)


_SINGLE_TOPIC_IDS: dict[tuple[str, int], str] = {}
"""Tokens of one-topic cursor maps (the common watch), shared by every session."""


def encode_cursors(cursors: dict[str, int]) -> str:
    """Unpadded base64url JSON of the map; above :data:`MAX_INLINE_CURSORS` topics ``~`` +
    unpadded base64url of the deflated JSON (opaque, but self-contained: any session — or a new
    ``POST /v0/watch`` after a restart — resolves it)."""
    raw = orjson.dumps(cursors)
    if len(cursors) > MAX_INLINE_CURSORS:
        return "~" + base64.urlsafe_b64encode(zlib.compress(raw, 6)).rstrip(b"=").decode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def decode_cursors(token: str) -> dict[str, int] | None:
    """A cursor map from a token of :func:`encode_cursors`; ``None`` if it is not one."""
    deflated = token.startswith("~")
    body = token[1:] if deflated else token
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        if deflated:
            inflater = zlib.decompressobj()
            raw = inflater.decompress(raw, MAX_TOKEN_JSON_BYTES)
            if inflater.unconsumed_tail:
                return None
        value = orjson.loads(raw)
    except (binascii.Error, ValueError, zlib.error, orjson.JSONDecodeError):
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and type(v) is int and v >= 0 for k, v in value.items()
    ):
        return None
    return value


class Watches:
    """The watch sessions of this process."""

    def __init__(
        self,
        engine: Engine,
        max_topics: int = 256,
        session_ttl_ms: int = SESSION_TTL_MS,
        *,
        max_sessions: int = 0,
    ) -> None:
        self.engine = engine
        self.max_topics = max_topics
        self.max_sessions = max_sessions
        """``TOPICS_MAX_WATCH_SESSIONS`` (a resource cap; 0: unlimited); idle sessions are reclaimed first."""
        self.session_ttl_ms = session_ttl_ms
        self._sessions: dict[str, WatchSession] = {}
        self.reads = SharedReads()

    def __len__(self) -> int:
        return len(self._sessions)

    def subscribe(
        self,
        topics: dict[str, TopicStart],
        options: WatchOptions,
        lenient: bool = False,
        resume: dict[str, int] | None = None,
    ) -> Subscription:
        """A subscription on ``topics``: every name checked
        first (400 for a bad name or too many topics, 404 ``topic_not_found`` for an unknown
        one unless ``lenient`` drops it), so nothing is added when one fails. ``resume``
        (cursors by topic) overrides the starts of the topics it names."""
        if not topics:
            raise InvalidRequest("topics must name at least one topic", {"field": "topics"})
        if len(topics) > self.max_topics:
            raise InvalidRequest(
                f"a watch may name at most {self.max_topics} topics (TOPICS_MAX_WATCH_TOPICS); "
                f"got {len(topics)}",
                {"field": "topics", "max": self.max_topics},
            )
        found: list[tuple[str, Topic, int]] = []
        for name, start in topics.items():
            check_topic_name(name)
            topic = self.engine.topic(name)
            if topic is None:
                if lenient:
                    continue
                raise TopicNotFound(name)
            if start.from_ts is not None:
                topic.expire(self.engine.clock.now_ms())  # as a diff does before it seeks
            cursor = resume[name] if resume and name in resume else start.cursor(topic)
            found.append((name, topic, cursor))
        sub = Subscription(self.engine, options, self.reads)
        for name, topic, cursor in found:
            sub.add(name, topic, cursor)
        return sub

    def create(
        self,
        topics: dict[str, TopicStart],
        options: WatchOptions,
        cursor: str | None = None,
        lenient: bool = False,
        creator: object = None,
    ) -> WatchSession:
        """A new session on ``topics`` (see :meth:`subscribe`); ``cursor`` (a resume token of
        an earlier session) overrides the start of the topics it names. ``creator`` (opaque: the
        server's API key identity) is kept on the session for its streams to check."""
        self.collect()
        if self.max_sessions and len(self._sessions) >= self.max_sessions:
            raise cap_reached(
                "max_watch_sessions",
                self.max_sessions,
                f"{len(self._sessions)} watch sessions exist; idle ones are reclaimed after their "
                "session_ttl_ms",
            )
        resume: dict[str, int] = {}
        if cursor is not None:
            resume = self._resume_position(cursor)
        sub = self.subscribe(topics, options, lenient, resume)
        wid = "wid_" + secrets.token_urlsafe(16)
        session = WatchSession(wid, sub, self.engine.clock.steady_ms(), self.session_ttl_ms, creator=creator)
        self._sessions[wid] = session
        return session

    @staticmethod
    def _resume_position(cursor: str) -> dict[str, int]:
        """The cursor map a ``POST /v0/watch`` ``cursor`` names: 400 outside the stream-id
        alphabet, 404 ``not_found`` for a string of it that names no position (a stream id is
        opaque to clients, like a wid: it names a position or not)."""
        if not CURSOR_RE.fullmatch(cursor):
            raise InvalidRequest(
                "cursor must be a stream id: A-Z, a-z, 0-9, _ and -, optionally after one ~",
                {"field": "cursor"},
            )
        decoded = decode_cursors(cursor)
        if decoded is None:
            raise NotFound(
                "cursor names no resume position: pass the id: of a frame of this server's watch "
                "stream unchanged, or omit it",
                {"field": "cursor"},
            )
        return decoded

    def session(self, wid: str) -> WatchSession:
        """The live session ``wid``: 400 if it cannot be a wid at all (outside the URL-safe
        alphabet, or over 256 characters), 404 ``not_found`` if it names no live session
        (unknown, reclaimed or never issued: the client creates a new one)."""
        if not WID_RE.fullmatch(wid):
            raise InvalidRequest(
                "malformed watch id: at most 256 characters of A-Z, a-z, 0-9, _ and -", {"field": "wid"}
            )
        self.collect()
        session = self._sessions.get(wid)
        if session is None:
            raise NotFound(
                f"watch session {wid} does not exist or was reclaimed after {self.session_ttl_ms} ms "
                "without a stream; POST /v0/watch again (its cursor field resumes where you were)",
                {"wid": wid},
            )
        session.last_access_ms = self.engine.clock.steady_ms()
        return session

    def collect(self) -> int:
        """Reclaim sessions with no open stream, idle for their TTL (run on every create and
        stream open); returns how many. Idleness is measured on the steady clock."""
        now = self.engine.clock.steady_ms()
        expired = [
            wid for wid, s in self._sessions.items() if s.owner is None and now - s.last_access_ms >= s.ttl_ms
        ]
        for wid in expired:
            self._sessions.pop(wid).sub.detach()
        return len(expired)

    def open(self, session: WatchSession, owner: object, wake: Callable[[], None]) -> object | None:
        """``owner`` (a stream) takes the session; returns the stream it took it from."""
        previous, session.owner = session.owner, owner
        session.last_access_ms = self.engine.clock.steady_ms()
        session.sub.attach(wake)
        return previous

    def close(self, session: WatchSession, owner: object) -> None:
        """``owner``'s stream ended; the session lives on for its TTL."""
        session.last_access_ms = self.engine.clock.steady_ms()
        if session.owner is owner:
            session.owner = None
            session.sub.detach()
