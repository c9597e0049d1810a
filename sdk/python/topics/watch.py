"""``client.watch(...)``: live records of many topics over one SSE stream, as typed events.

A :class:`Watch` creates a watch session (``POST /v0/watch``), opens its stream
(``GET /v0/watch/{wid}``) and turns frames into :class:`~topics.Records`,
:class:`~topics.Tombstone`, :class:`~topics.CaughtUp` and :class:`~topics.TopicDeleted` events.
It keeps its own per-topic cursor (the last seq handed out) and, when the stream ends, breaks
or stays silent past ``2 × heartbeat_ms`` + 5 s, reconnects by itself:

- after the server's ``retry:`` delay (2 s), growing with jitter on repeated failures (≤ 30 s);
- with ``Last-Event-ID`` set to the last frame's ``id`` (an opaque token), so the session
  resumes exactly there;
- if the session is gone (``404``), by creating a new one from its own cursors (a ``429``/``503``
  answer meanwhile, e.g. a restarted server replaying its log, is one more failed reconnect);
- a record at or below its cursor is never handed out again, and a gap is never crossed without
  a :class:`~topics.Tombstone` (the server sends one; the cursor then moves to ``gap_to``).

With ``model=`` each record's ``data`` is validated as its frame is handed out
(:mod:`topics.typed`): the records of a frame before one that does not validate come as a
:class:`~topics.Records` event, then iterating raises :class:`~topics.InvalidRecord` for it
(``record`` set) with the cursor just past it; iterating again goes on after it. A bad record
never stops the watch, and never hides the records around it.

The sync and async classes share :class:`WatchState` and the SSE grammar of :mod:`topics._sse`
(no I/O in either): the state builds the requests, reads the lines and decides on failures; the
classes only send (with the :class:`~topics._transport.Sender` their client gives them), stream
and sleep. Nothing here knows the client.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, Self

import httpx
import msgspec
import orjson

from . import _generated as g
from ._sse import RETRY_DEFAULT_MS, WATCHDOG_SLACK_S, SSEEvent, SSEParser, reconnect_delay_s
from ._times import epoch_ms
from ._transport import AsyncSender, Call, Sender, Settings, error_of, retryable
from .errors import ConnectionError, TopicsError
from .models import CaughtUp, Record, Records, RecordT, Tombstone, TopicDeleted, WatchEvent
from .typed import InvalidRecord, typed_watched, validator

log = logging.getLogger("topics.watch")

MAX_FAILURES = 20
"""Consecutive failed reconnects (no stream opened) before the watch gives up and raises."""

_NO_EVENTS: tuple[WatchEvent, ...] = ()

Event = Records[RecordT] | Tombstone | CaughtUp | TopicDeleted
"""What iterating a watch yields: :data:`topics.WatchEvent`, its records typed by ``model=``."""


@dataclass(slots=True)
class WatchOptions:
    """What to watch and how (the ``POST /v0/watch`` body, minus the cursors)."""

    start: dict[str, int | str | datetime]
    node: str | None
    include_meta: bool
    include_tags: bool
    heartbeat_ms: int
    consistency: str
    limit: int | None
    model: Any = None
    """Validate each record's ``data`` into it (:mod:`topics.typed`); ``None``: plain records."""

    @classmethod
    def of(
        cls,
        topics: Mapping[str, int | str | datetime] | Iterable[str],
        node: str | None,
        include_meta: bool,
        include_tags: bool,
        heartbeat_ms: int,
        consistency: str,
        limit: int | None,
        model: Any = None,
    ) -> WatchOptions:
        start: dict[str, int | str | datetime] = (
            dict(topics) if isinstance(topics, Mapping) else dict.fromkeys(topics, "tail")
        )
        if not start:
            raise ValueError("watch needs at least one topic")
        for topic, pos in start.items():
            if isinstance(pos, datetime) or pos == "tail":
                continue
            if not (isinstance(pos, int) and not isinstance(pos, bool) and pos >= 0):
                raise ValueError(
                    f"watch: the start of {topic!r} must be a seq >= 0, 'tail' or a datetime, got {pos!r}"
                )
        return cls(start, node, include_meta, include_tags, heartbeat_ms, consistency, limit, model)


def _start_entry(cursor: int | str | datetime) -> dict[str, Any]:
    """A ``POST /v0/watch`` topic entry for a cursor not yet resolved (or a seq)."""
    if cursor == "tail":
        return {"tail": True}
    if isinstance(cursor, datetime):
        return {"from_ts": epoch_ms(cursor)}
    return {"from_seq": cursor}


class WatchState:
    """A watch's cursors and session, and what each frame means. No I/O."""

    def __init__(self, options: WatchOptions) -> None:
        self.options = options
        self.cursors: dict[str, int | str | datetime] = dict(options.start)
        """Per topic: the last seq handed out, or — until the first session says where they
        start — ``"tail"`` or the datetime to start from."""
        self.wid: str | None = None
        self.stream_url: str | None = None
        self.last_event_id: str | None = None
        self.retry_ms = RETRY_DEFAULT_MS
        self.failures = 0
        self._validators: dict[str, Callable[[int, bytes], Any]] = {}

    @property
    def active(self) -> bool:
        """False once every watched topic was deleted."""
        return bool(self.cursors)

    def session_call(self) -> Call[tuple[str, str, dict[str, int]]]:
        """The ``POST /v0/watch`` that (re-)creates the session at the current cursors."""
        o = self.options
        topics = {t: _start_entry(c) for t, c in self.cursors.items()}
        body: dict[str, Any] = {
            "topics": topics,
            "include_meta": o.include_meta,
            "include_tags": o.include_tags,
            "heartbeat_ms": o.heartbeat_ms,
            "consistency": o.consistency,
        }
        if o.node is not None:
            body["node"] = o.node
        if o.limit is not None:
            body["limit"] = o.limit
        return Call(g.create_watch_route(body), g.watch_session)

    def opened(self, session: tuple[str, str, dict[str, int]]) -> None:
        self.wid, self.stream_url, positions = session
        for topic, pos in positions.items():
            if not isinstance(self.cursors.get(topic), int):  # "tail" or a time, now resolved
                self.cursors[topic] = pos
        self.last_event_id = None

    def session_lost(self) -> None:
        """The server no longer knows the session (404/410): the next connect re-creates it."""
        self.wid = self.stream_url = None

    def stream_request(self, settings: Settings) -> dict[str, Any]:
        """Keyword arguments for ``httpx``'s ``stream()`` of the session's events: resuming at
        ``Last-Event-ID``, with the watchdog as the read timeout."""
        assert self.stream_url is not None
        headers = settings.headers()
        headers["accept"] = "text/event-stream"
        if self.last_event_id is not None:
            headers["last-event-id"] = self.last_event_id
        return {
            "method": "GET",
            "url": settings.url + self.stream_url,
            "headers": headers,
            "timeout": httpx.Timeout(settings.timeout, read=self.watchdog_s()),
        }

    def watchdog_s(self) -> float:
        """A stream silent for longer than this is dead (the contract's 2 × heartbeat + slack)."""
        return 2 * max(1000, min(60_000, self.options.heartbeat_ms)) / 1000 + WATCHDOG_SLACK_S

    def reconnect_delay_s(self) -> float:
        """The server's ``retry:`` delay, doubled per consecutive failure, with jitter."""
        return reconnect_delay_s(self.retry_ms, self.failures)

    def failed(self, exc: Exception) -> float:
        """A reconnect (or the stream) failed with ``exc``: the delay before the next try.
        Raises ``exc`` when waiting will not cure it (a non-retryable server error), and
        :class:`topics.ConnectionError` after :data:`MAX_FAILURES` failures in a row."""
        if isinstance(exc, TopicsError) and not retryable(exc):
            raise exc
        self.failures += 1
        if self.failures > MAX_FAILURES:
            if isinstance(exc, ConnectionError):
                raise exc
            raise ConnectionError(f"watch: gave up after {MAX_FAILURES} failed reconnects") from exc
        return self.reconnect_delay_s()

    def line(self, parser: SSEParser, line: str) -> Sequence[WatchEvent | _Step]:
        """The events one line of the stream completes (most complete none)."""
        event = parser.feed(line)
        if parser.retry_ms is not None:
            self.retry_ms = parser.retry_ms
        return _NO_EVENTS if event is None else self.handle(event)

    def handle(self, event: SSEEvent) -> Sequence[WatchEvent | _Step]:
        """The events one frame yields (advancing the cursors); empty for none."""
        out = self._records(event.data) if event.event == "record" else self._control(event)
        if event.id is not None:
            self.last_event_id = event.id
        return out

    def _records(self, data: str) -> Sequence[WatchEvent | _Step]:
        try:
            frame = g.record_frame(data)  # one decode (in C): the topic and the records
        except msgspec.DecodeError as exc:
            # never skipped with a warning: its records would be lost without a Tombstone
            raise TopicsError(200, "bad_response", f"unexpected watch record frame: {exc}") from exc
        topic = frame.topic
        cursor = self.cursors.get(topic)
        if cursor is None:
            return _NO_EVENTS  # not (or no longer) watched
        recs = frame.records
        if isinstance(cursor, int):
            recs = [r for r in recs if r.seq > cursor]
        last = recs[-1].seq if recs else None
        known = (frame.to_seq, last, cursor if isinstance(cursor, int) else None)
        new_cursor = max(x for x in known if x is not None)
        head = frame.head_seq if frame.head_seq is not None else new_cursor
        if self.options.model is not None and recs:
            return self._typed(topic, recs, head, new_cursor)
        self.cursors[topic] = new_cursor
        return [Records(topic, recs, head)] if recs else _NO_EVENTS

    def _typed(self, topic: str, recs: list[Record], head: int, end: int) -> list[_Step]:
        """A frame's records validated, as steps to hand out in order: runs of valid records as
        :class:`Records` events, each record that does not validate as its
        :class:`InvalidRecord`; each step carries the cursor once it is handed out (the last one
        the frame's end, ``end``)."""
        validate = self._validators.get(topic)
        if validate is None:
            validate = self._validators[topic] = validator(self.options.model, topic)
        steps: list[_Step] = []
        run: list[Any] = []
        for rec in recs:
            try:
                run.append(typed_watched(rec, validate))
            except InvalidRecord as err:
                if run:
                    steps.append(_Step(topic, run[-1].seq, Records(topic, run, head)))
                    run = []
                steps.append(_Step(topic, rec.seq, err))
        if run:
            steps.append(_Step(topic, run[-1].seq, Records(topic, run, head)))
        steps[-1].cursor = end
        return steps

    def hand_out(self, item: WatchEvent | _Step) -> Any:
        """What iterating hands out for ``item`` (a step moves its topic's cursor first): an
        event, or the :class:`InvalidRecord` to raise."""
        if isinstance(item, _Step):
            self.cursors[item.topic] = item.cursor
            return item.out
        return item

    def _control(self, event: SSEEvent) -> Sequence[WatchEvent]:
        """Every frame but ``record``: tombstone, caught-up, topic-deleted, error."""
        try:
            body = orjson.loads(event.data) if event.data else {}
        except orjson.JSONDecodeError:
            log.warning("watch: ignoring a %s frame that is not JSON", event.event)
            return _NO_EVENTS
        if event.event == "error":
            self._error(body)
            return _NO_EVENTS
        topic = body.get("topic") if isinstance(body, dict) else None
        if topic not in self.cursors:
            return _NO_EVENTS  # not (or no longer) watched, or an event this SDK does not know
        if event.event == "tombstone":
            tomb = g.tombstone(topic, body)
            self.cursors[topic] = tomb.gap_to
            return [tomb]
        if event.event == "caught-up":
            return [CaughtUp(topic, int(body.get("head_seq", 0)))]
        if event.event == "topic-deleted":
            del self.cursors[topic]
            return [TopicDeleted(topic, body.get("head_seq"), body.get("reason"))]
        return _NO_EVENTS

    def _error(self, body: Any) -> None:
        """A ``429`` is advice (the server paces the stream); anything else ends the stream —
        ``409`` superseded (another GET took the session: reconnecting with ``Last-Event-ID``
        takes it back where this watch was), ``408`` slow consumer… — and the watch reconnects."""
        code = body.get("code") if isinstance(body, dict) else None
        if code == 429:
            log.info("watch: the server paces %s under pressure", body.get("topics"))
            return
        if code == 410:
            self.session_lost()
        log.warning("watch: stream error %s; reconnecting", body)
        raise _Reconnect()


@dataclass(slots=True)
class _Step:
    """One hand-out of a typed frame: a :class:`Records` event or an :class:`InvalidRecord`, and
    ``topic``'s cursor once it is handed out (so a watch stopped at a bad record resumes just past
    it, never past records it did not hand out)."""

    topic: str
    cursor: int
    out: Records[Any] | InvalidRecord


class _Reconnect(Exception):
    """The stream said to go away (a terminal ``event: error``), ended, or could not open yet."""


_FAILURES = (httpx.TransportError, _Reconnect, ConnectionError, TopicsError)
"""What a watch survives by reconnecting (:meth:`WatchState.failed` re-raises the rest)."""


def _check_stream(state: WatchState, response: httpx.Response) -> bool:
    """True when the stream opened; False when the session is gone (re-create it); else raises
    the error (:meth:`WatchState.failed` decides whether waiting cures it)."""
    if response.status_code == 200:
        return True
    if response.status_code in (404, 410):
        state.session_lost()
        return False
    raise error_of(response)


class Watch(Generic[RecordT]):
    """A running watch (see :meth:`topics.Client.watch`): iterate it for events; close it (or
    leave its ``with`` block) to stop. Iterating ends only when every watched topic was deleted.
    The session is created when ``watch()`` returns (so ``"tail"`` is the head at that moment).

    ``cursors`` maps each topic to the last seq handed out: keep it to start a later watch
    where this one stopped. With ``model=`` a record that does not validate raises
    :class:`topics.InvalidRecord` from the iteration, which goes on after it when iterated again.
    """

    def __init__(self, sender: Sender, options: WatchOptions) -> None:
        self._sender = sender
        self._state = WatchState(options)
        self._events: Iterator[Any] | None = None
        # the session now, so "tail" means the head when watch() returned
        self._state.opened(sender.send(self._state.session_call()))

    @property
    def cursors(self) -> dict[str, int | str | datetime]:
        return dict(self._state.cursors)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stops the watch and closes its stream (the server reclaims the session later)."""
        if self._events is not None:
            self._events.close()  # type: ignore[attr-defined]
            self._events = None

    def __iter__(self) -> Iterator[Event[RecordT]]:
        if self._events is None:
            self._events = self._run()
        if self._state.options.model is not None:
            return self  # __next__ raises a record that does not validate; the generator goes on
        return self._events  # ``for`` runs the generator itself: no method call per event

    def __next__(self) -> Event[RecordT]:
        if self._events is None:
            self._events = self._run()
        out = next(self._events)
        if isinstance(out, InvalidRecord):
            raise out
        return out  # type: ignore[no-any-return]

    def _run(self) -> Iterator[Any]:
        state, sender = self._state, self._sender
        while state.active:
            try:
                if state.wid is None:
                    state.opened(sender.send(state.session_call()))
                yield from self._stream()
            except _FAILURES as exc:
                time.sleep(state.failed(exc))

    def _stream(self) -> Iterator[Any]:
        state = self._state
        with self._sender.http.stream(**state.stream_request(self._sender.settings)) as rsp:
            if rsp.status_code != 200:
                rsp.read()
            if not _check_stream(state, rsp):
                return
            state.failures = 0
            parser = SSEParser()
            for line in rsp.iter_lines():
                for item in state.line(parser, line):
                    yield state.hand_out(item)
                if not state.active:
                    return
        raise _Reconnect()  # the server ended the stream


class AsyncWatch(Generic[RecordT]):
    """:class:`Watch` for asyncio: ``async with`` and ``async for`` (without ``async with``,
    the session is created, and ``"tail"`` resolved, at the first iteration)."""

    def __init__(self, sender: AsyncSender, options: WatchOptions) -> None:
        self._sender = sender
        self._state = WatchState(options)
        self._events: AsyncIterator[Any] | None = None

    @property
    def cursors(self) -> dict[str, int | str | datetime]:
        return dict(self._state.cursors)

    async def __aenter__(self) -> Self:
        """Creates the session, so ``"tail"`` means the head when the block was entered."""
        if self._state.wid is None:
            self._state.opened(await self._sender.send(self._state.session_call()))
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Stops the watch and closes its stream."""
        if self._events is not None:
            await self._events.aclose()  # type: ignore[attr-defined]
            self._events = None

    def __aiter__(self) -> AsyncIterator[Event[RecordT]]:
        if self._events is None:
            self._events = self._run()
        if self._state.options.model is not None:
            return self  # __anext__ raises a record that does not validate; the generator goes on
        return self._events

    async def __anext__(self) -> Event[RecordT]:
        if self._events is None:
            self._events = self._run()
        out = await anext(self._events)
        if isinstance(out, InvalidRecord):
            raise out
        return out  # type: ignore[no-any-return]

    async def _run(self) -> AsyncIterator[Any]:
        state, sender = self._state, self._sender
        while state.active:
            try:
                if state.wid is None:
                    state.opened(await sender.send(state.session_call()))
                async for event in self._stream():
                    yield event
            except _FAILURES as exc:
                await asyncio.sleep(state.failed(exc))

    async def _stream(self) -> AsyncIterator[Any]:
        state = self._state
        async with self._sender.http.stream(**state.stream_request(self._sender.settings)) as rsp:
            if rsp.status_code != 200:
                await rsp.aread()
            if not _check_stream(state, rsp):
                return
            state.failures = 0
            parser = SSEParser()
            async for line in rsp.aiter_lines():
                for item in state.line(parser, line):
                    yield state.hand_out(item)
                if not state.active:
                    return
        raise _Reconnect()  # the server ended the stream
