"""Named consumers (an extension, issue 25): a reader names itself and the server keeps how far
it got — its committed cursor — so a restarted consumer, or another process taking over,
continues where the last commit left off, and operators see who is behind (``lag``). Peers:
Kafka consumer groups' committed offsets, Redis ``XREADGROUP``'s last-delivered id, NATS
durable consumers.

A consumer belongs to a topic (``Topic.consumers``, ``consumerset``): deleting the topic
deletes its consumers, a recreated topic starts with none. Its cursor is the exclusive
``from_seq`` of a diff — the last seq already read — and moves only by:

- ``PUT`` (:meth:`Consumers.put`): creates the consumer at ``from_seq``, at the seq just before
  the first live record stamped at or after ``from_ts`` (``Topic.seq_before_ts``), or — with
  neither — before the first live record ("nothing read yet": ``earliest_seq - 1``). A ``PUT`` on
  an existing consumer leaves it alone unless ``force`` repositions it the same way.
- commit (:meth:`Consumers.commit`): moves the cursor to ``seq``; forward only unless ``force``
  (``409 cursor_behind``), never above the head (``409 cursor_beyond_head``).

Durability: every change is a ``CONSUMER`` frame in the WAL (for a topic of any durability
class: consumers are control-plane state, like a topic's config), and the operation is
acknowledged once its frame is durable (the WAL's group commit). So an acknowledged commit
survives ``kill -9``; a commit not yet acknowledged when the server died is either in the log
or not, and replay applies the frames in order: after a crash a committed cursor is the last
durable one — never below an acknowledged commit. The consumers are also a section of the
snapshot (:func:`images`, :func:`restore`).

The cap ``max_consumers`` (``TOPICS_MAX_CONSUMERS``) counts the consumers of every topic
(``Usage.consumers``); only a new consumer is refused (``429``, ``detail.limit:
"max_consumers"``).
"""

from __future__ import annotations

from dataclasses import dataclass

from . import listing
from .engine import Engine
from .errors import CursorBehind, CursorBeyondHead, InvalidRequest, cap_reached
from .jsonvalues import to_int
from .listing import decode_cursor, encode_cursor, names_after
from .names import check_consumer_name
from .results import AckWait
from .storage import formats
from .storage.formats import ConsumerPayload
from .topic import Topic

TS_MAX = 2**63 - 1
"""The largest ``from_ts`` (epoch milliseconds, a signed 64-bit integer)."""


@dataclass(slots=True)
class ConsumerState:
    """What ``GET`` answers for a consumer: its cursor against its topic's head."""

    consumer: str
    topic: str
    cursor: int
    head_seq: int
    committed_at_ms: int

    @property
    def lag(self) -> int:
        """Records (seqs) written after the cursor: ``head_seq - cursor``, as a diff's ``lag``."""
        return max(0, self.head_seq - self.cursor)


@dataclass(slots=True)
class ConsumerPut:
    state: ConsumerState
    created: bool
    wait: AckWait = None


@dataclass(slots=True)
class ConsumerCommitted:
    state: ConsumerState
    wait: AckWait = None


@dataclass(slots=True)
class ConsumerPage:
    consumers: list[ConsumerState]
    next_cursor: str | None


@dataclass(slots=True)
class ConsumerDeleted:
    topic: str
    consumer: str
    deleted: bool
    wait: AckWait = None


def state_of(topic: Topic, name: str) -> ConsumerState:
    """Consumer ``name`` of ``topic`` (404 ``consumer_not_found`` if absent)."""
    consumer = topic.consumers.require(topic.name, name)
    return ConsumerState(name, topic.name, consumer.cursor, topic.head_seq, consumer.committed_at_ms)


class Consumers:
    """The named-consumer operations (on the engine's loop)."""

    def __init__(self, engine: Engine, *, max_consumers: int = 0) -> None:
        self.engine = engine
        self.max_consumers = max_consumers
        """``TOPICS_MAX_CONSUMERS`` (0: unlimited): only a new consumer counts."""

    @property
    def count(self) -> int:
        """Consumers over every topic."""
        return self.engine.usage.consumers

    # -- reads ----------------------------------------------------------------------------------

    def state(self, topic: str, name: str) -> ConsumerState:
        check_consumer_name(name)
        return state_of(self._topic(topic), name)

    def cursor(self, topic: str, name: str) -> int:
        """Consumer ``name``'s committed cursor: where a read on its behalf starts (exclusive);
        409 ``no_such_consumer`` if the topic has none of that name (a consumer named in a read's
        body, not in the path: ``ConsumerSet.read_cursor``)."""
        check_consumer_name(name)
        return self._topic(topic).consumers.read_cursor(topic, name)

    def page(
        self, topic: str, prefix: str = "", page_size: int = 0, cursor: str | None = None
    ) -> ConsumerPage:
        """One page of the topic's consumers in name order, by name ``prefix``."""
        size = listing.page_size(page_size)
        after = decode_cursor(cursor) if cursor is not None else None
        t = self._topic(topic)
        page: list[ConsumerState] = []
        for name in names_after(t.consumers.names(), [prefix], after):
            if len(page) == size:
                return ConsumerPage(page, encode_cursor(page[-1].consumer))
            page.append(state_of(t, name))
        return ConsumerPage(page, None)

    # -- changes --------------------------------------------------------------------------------

    def put(
        self,
        topic: str,
        name: str,
        *,
        from_seq: int | None = None,
        from_ts: int | None = None,
        force: bool = False,
    ) -> ConsumerPut:
        """Create consumer ``name`` (``created``), or reposition an existing one when ``force``;
        without ``force`` an existing consumer is left as it is. Its cursor: ``from_seq``, the
        seq before the first live record stamped at or after ``from_ts``, or — with neither —
        before the first live record. Everything is checked before anything changes."""
        check_consumer_name(name)
        if from_seq is not None and from_ts is not None:
            raise InvalidRequest("give from_seq or from_ts, not both", {"field": "from_ts"})
        t = self._topic(topic)
        current = t.consumers.get(name)
        if current is not None and not force:
            # answered once the consumer is durable: its creating frame may still be pending
            # (a concurrent PUT's), so the same state is logged again, changing nothing
            again = ConsumerPayload(t.id, name, current.cursor, current.committed_at_ms)
            persistence = self.engine.persistence
            persistence.check_writable()
            wait = persistence.consumer_change(formats.encode_consumer_set(again))
            return ConsumerPut(state_of(t, name), False, wait)
        engine = self.engine
        now = engine.clock.now_ms()
        t.expire(now)
        if from_seq is not None:
            held = None if current is None else current.cursor
            cursor = self._within_head(t, name, to_int(from_seq, "from_seq"), "from_seq", held)
        elif from_ts is not None:
            # a real cursor, never the diff's 0 ("from the earliest", which would report the
            # records evicted before the consumer existed as its loss on every read)
            cursor = t.seq_before_ts(to_int(from_ts, "from_ts", high=TS_MAX)) or t.earliest_seq - 1
        else:
            cursor = t.earliest_seq - 1
        engine.persistence.check_writable()
        if current is None:
            self._check_room()
        wait = self._set(t, name, cursor, now)
        return ConsumerPut(state_of(t, name), current is None, wait)

    def commit(self, topic: str, name: str, seq: int, *, force: bool = False) -> ConsumerCommitted:
        """Move consumer ``name``'s cursor to ``seq``: ``409 cursor_beyond_head`` above the
        topic's head; ``409 cursor_behind`` below the committed cursor unless ``force``
        (committing the cursor it holds is allowed: it only renews ``committed_at_ms``)."""
        check_consumer_name(name)
        seq = to_int(seq, "seq")
        t = self._topic(topic)
        consumer = t.consumers.require(topic, name)
        self._within_head(t, name, seq, "seq", consumer.cursor)
        if seq < consumer.cursor and not force:
            raise CursorBehind(
                f'consumer "{name}" has committed {consumer.cursor}; a commit of {seq} would move '
                'it back — commit a later seq, or send "force": true to rewind it',
                {
                    "topic": topic,
                    "consumer": name,
                    "field": "seq",
                    "cursor": consumer.cursor,
                    "seq": seq,
                    "head_seq": t.head_seq,
                },
            )
        self.engine.persistence.check_writable()
        wait = self._set(t, name, seq, self.engine.clock.now_ms())
        return ConsumerCommitted(state_of(t, name), wait)

    def delete(self, topic: str, name: str) -> ConsumerDeleted:
        """Remove consumer ``name`` (idempotent: ``deleted`` False if there was none)."""
        check_consumer_name(name)
        t = self._topic(topic)
        persistence = self.engine.persistence
        persistence.check_writable()
        deleted = t.drop_consumer(name)
        # logged even when there was none: the answer then waits for a concurrent delete's
        # frame still pending (the WAL keeps order), so "gone" is never undone by a crash
        wait = persistence.consumer_change(formats.encode_consumer_delete(t.id, name))
        return ConsumerDeleted(topic, name, deleted, wait)

    # -- internals ------------------------------------------------------------------------------

    def _topic(self, name: str) -> Topic:
        return self.engine.get(name)

    def _set(self, topic: Topic, name: str, cursor: int, now: int) -> AckWait:
        topic.set_consumer(name, cursor, now)
        payload = formats.encode_consumer_set(ConsumerPayload(topic.id, name, cursor, now))
        return self.engine.persistence.consumer_change(payload)

    @staticmethod
    def _within_head(topic: Topic, name: str, seq: int, field: str, cursor: int | None) -> int:
        """``seq`` if it is at most the topic's head, else ``409 cursor_beyond_head`` (its
        detail names the consumer's ``cursor`` when it has one)."""
        if seq <= topic.head_seq:
            return seq
        detail = {
            "topic": topic.name,
            "consumer": name,
            "field": field,
            "seq": seq,
            "head_seq": topic.head_seq,
        }
        if cursor is not None:
            detail["cursor"] = cursor
        raise CursorBeyondHead(
            f'{field} {seq} is above the head of topic "{topic.name}" ({topic.head_seq}): a '
            "consumer's cursor is the last seq it has read, so it cannot pass the last seq written",
            detail,
        )

    def _check_room(self) -> None:
        """429 ``throttled`` when a new consumer would exceed ``max_consumers``."""
        count = self.count
        if self.max_consumers and count >= self.max_consumers:
            raise cap_reached(
                "max_consumers",
                self.max_consumers,
                f"{count} consumers exist; delete one or raise TOPICS_MAX_CONSUMERS",
            )


# -- replay and snapshots ------------------------------------------------------------------------


def apply_frame(engine: Engine, kind: int, payload: bytes | memoryview) -> None:
    """Replay a ``CONSUMER`` frame of ``kind`` (``CONSUMER_SET`` or ``CONSUMER_DELETE``; the
    caller refuses other kinds). Frames carry a consumer's whole state, so applying them in
    order leaves each consumer as the last one set it — also when replay re-runs frames a
    snapshot already reflects. A frame of a topic no longer live is skipped (deleted since)."""
    p = formats.decode_consumer(payload)
    topic = engine.topic_by_id(p.topic_id)
    if topic is None:
        return
    if kind == formats.CONSUMER_SET:
        topic.set_consumer(p.name, p.cursor, p.committed_at_ms)
    else:
        topic.drop_consumer(p.name)


def images(engine: Engine) -> list[ConsumerPayload]:
    """The snapshot's consumers section: every live topic's consumers, by topic, in name order."""
    return [
        ConsumerPayload(topic.id, c.name, c.cursor, c.committed_at_ms)
        for topic in engine.topics()
        for c in topic.consumers
    ]


def restore(engine: Engine, rows: list[ConsumerPayload]) -> None:
    """Load a snapshot's consumers section (after its topics are registered)."""
    for p in rows:
        topic = engine.topic_by_id(p.topic_id)
        if topic is not None:
            topic.set_consumer(p.name, p.cursor, p.committed_at_ms)
