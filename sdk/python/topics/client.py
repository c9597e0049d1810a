"""``topics.Client`` (blocking) and ``topics.AsyncClient`` (asyncio): the same methods, one
sending with ``httpx.Client``, the other with ``httpx.AsyncClient`` (a test holds them to the
same names and signatures). The operations themselves are in :mod:`topics._ops`, written once.

The examples below run against a server at ``TOPICS_URL`` (the test suite runs them).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, Self, TypeVar, overload

import httpx

from . import _ops as ops
from . import tracing
from ._transport import AsyncSender, Call, Sender, Settings, make_async_http, make_sync_http
from .errors import TopicsError
from .models import (
    AckResult,
    AppendResult,
    ConsumerInfo,
    DeadLetterResult,
    ExtendResult,
    Health,
    Identity,
    Job,
    Lease,
    NackResult,
    RawRecord,
    Readiness,
    Record,
    RouterInfo,
    ScheduleInfo,
    Tombstone,
    TopicDeletion,
    TopicInfo,
    TopicState,
    TopicSummary,
)
from .typed import TypedJob, TypedRecord, typed_jobs, typed_record, validator
from .watch import AsyncWatch, Watch, WatchOptions

T = TypeVar("T")
R = TypeVar("R")
M = TypeVar("M")


class _ReadProgress:
    """Where a read is (shared by the sync and async iterators)."""

    _state: ops.ReadState

    @property
    def position(self) -> int:
        """The cursor after the last record handed out: pass it as ``from_seq`` to resume."""
        return self._state.position

    @property
    def gaps(self) -> list[Tombstone]:
        """The tombstones crossed with ``on_gap="skip"``."""
        return self._state.gaps

    @property
    def missed(self) -> int:
        """The records lost in ``gaps``."""
        return self._state.missed

    @property
    def trimmed(self) -> Tombstone | None:
        """For a read from the start (cursor 0, or ``from_ts`` before the earliest record): the
        server's tombstone for the records the topic no longer kept (cap, TTL) when the read
        began — reading from the earliest retained record is no loss, so it is neither raised
        nor in ``gaps``. ``None`` when nothing was trimmed or the read resumed from a cursor."""
        return self._state.trimmed


class ReadIterator(_ReadProgress, Generic[R]):
    """The records of one ``Client.read`` (or ``read_raw``), in seq order, fetched a page at a
    time.

    ``position`` is the cursor after the last record handed out (pass it as ``from_seq`` to
    resume); ``gaps`` lists the tombstones crossed with ``on_gap="skip"`` and ``missed`` counts
    the records they lost.
    """

    def __init__(self, client: Client, state: ops.ReadState, steps: ops.Steps, model: Any = None) -> None:
        self._state = state
        self._items: Iterator[R] = client._items(steps)
        if model is not None:  # raw records in, each validated as it is handed out
            validate = validator(model, state.topic)
            raw: Iterator[Any] = self._items
            self._items = (typed_record(r, validate) for r in raw)  # type: ignore[misc]

    def __iter__(self) -> Iterator[R]:
        return self._items  # ``for`` runs the generator itself: no method call per record

    def __next__(self) -> R:
        return next(self._items)


class AsyncReadIterator(_ReadProgress, Generic[R]):
    """``AsyncClient.read``'s records: :class:`ReadIterator` with ``async for``."""

    def __init__(
        self, client: AsyncClient, state: ops.ReadState, steps: ops.Steps, model: Any = None
    ) -> None:
        self._state = state
        self._items: AsyncIterator[R] = client._items(steps)
        if model is not None:  # raw records in, each validated as it is handed out
            validate = validator(model, state.topic)
            araw: AsyncIterator[Any] = self._items
            self._items = (typed_record(r, validate) async for r in araw)  # type: ignore[misc]

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> R:
        return await anext(self._items)


Reader = Callable[..., ops.Steps]
"""A consume's read: ``reader(state, before_wait=...)`` (see :func:`ops.read`)."""
"""The steps of a read from (and moving) a :class:`ops.ReadState`."""


class _Consuming(Generic[R]):
    """What :class:`ConsumeIterator` and :class:`AsyncConsumeIterator` share: which consumer,
    when to commit, and how far it may commit.

    Commit points: a record handed out is *handled* once the caller asks for the next one; every
    ``commit_every`` handled records the cursor is committed up to the last of them, and once
    more when the iterator is closed (the last record handed out counts as handled then) or runs
    out. Leaving a ``with`` block by an exception commits only the records before the one in
    hand, which is delivered again — at least once, never lost."""

    def __init__(
        self, topic: str, consumer: str, commit_every: int, cursor: ops.Steps, reader: Reader
    ) -> None:
        if commit_every < 1:
            raise ValueError("commit_every must be at least 1")
        self.topic = topic
        self.consumer = consumer
        self.commit_every = commit_every
        self.committed: int | None = None
        """The cursor committed last (``None`` until the consumer is looked up, at the first
        record asked for)."""
        self.closed = False
        self._cursor = cursor
        """The steps that find (or create) the consumer and return its committed cursor."""
        self._reader = reader
        self._state: ops.ReadState | None = None
        self._handled = 0
        """Records handed out since the last commit."""
        self._before = 0
        """The cursor before the record in hand (everything up to it handled)."""

    @property
    def position(self) -> int:
        """The cursor after the last record handed out (what closing commits)."""
        if self._state is None:
            return self.committed or 0
        return self._state.position

    @property
    def gaps(self) -> list[Tombstone]:
        """The tombstones crossed with ``on_gap="skip"``."""
        return [] if self._state is None else self._state.gaps

    def _begin(self, cursor: int) -> ops.Steps:
        """The consumer's committed ``cursor`` is known: the read's steps from there."""
        self.committed = cursor
        self._state = ops.ReadState(self.topic, cursor, committed=True)  # owed all after it
        return self._reader(self._state, before_wait=self._idle_commit)

    def _idle_commit(self) -> Call[ConsumerInfo] | None:
        """Before a follower waits for new records: the commit of everything handed out — all
        of it is handled, since the caller asked for more — so an idle consumer shows no lag and
        a restart delivers nothing twice."""
        call = self._commit_call(None)
        if call is not None:
            parse = call.parse
            call.parse = lambda body: self._committed(parse(body))
        return call

    def _commit_call(self, upto: int | None) -> Call[ConsumerInfo] | None:
        """The commit of ``upto`` (default: :attr:`position`), or ``None`` when nothing new
        would be committed."""
        upto = self.position if upto is None else upto
        if self.committed is None or upto <= self.committed:
            return None
        return ops.commit(self.topic, self.consumer, upto, False)

    def _committed(self, info: ConsumerInfo) -> ConsumerInfo:
        self.committed = info.cursor
        self._handled = 0
        return info


class ConsumeIterator(_Consuming[R]):
    """The records of ``Client.consume``: a named consumer's, from its committed cursor, in seq
    order. Iterate it (``for record in it``); it commits as you go — every ``commit_every``
    records and when closed (use ``with``, or call :meth:`close`) or exhausted — so a restarted
    reader, or another process taking over, goes on after the last commit. A read that is caught
    up ends the iteration, unless it follows. ``committed`` is the cursor committed last,
    ``position`` the one closing would commit."""

    def __init__(
        self, client: Client, topic: str, consumer: str, commit_every: int, cursor: ops.Steps, reader: Reader
    ) -> None:
        super().__init__(topic, consumer, commit_every, cursor, reader)
        self._client = client
        self._items: Iterator[R] | None = None

    def __iter__(self) -> Self:
        return self

    def __next__(self) -> R:
        if self.closed:
            raise StopIteration
        if self._items is None:
            self._items = self._client._items(self._begin(self._client._result(self._cursor)))
        if self._handled >= self.commit_every:
            self.commit()
        self._before = self.position
        try:
            record = next(self._items)
        except StopIteration:
            self.commit()
            raise
        self._handled += 1
        return record

    def commit(self, upto: int | None = None) -> ConsumerInfo | None:
        """Commits the cursor up to the last record handed out (or ``upto``); ``None`` when
        there was nothing new to commit. Raises :class:`topics.CursorBehind` if another reader
        of the same consumer committed further."""
        call = self._commit_call(upto)
        return None if call is None else self._committed(self._client._call(call))

    def close(self) -> None:
        """Commits the last record handed out and stops."""
        if not self.closed:
            self.closed = True
            self.commit()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is not None and not self.closed:
            self.closed = True
            # the record in hand was not handled: delivered again. A commit refused now must
            # not hide the exception that ended the block.
            with contextlib.suppress(TopicsError):
                self.commit(self._before)
            return
        self.close()


class AsyncConsumeIterator(_Consuming[R]):
    """``AsyncClient.consume``'s records: :class:`ConsumeIterator` with ``async for`` and
    ``async with``."""

    def __init__(
        self,
        client: AsyncClient,
        topic: str,
        consumer: str,
        commit_every: int,
        cursor: ops.Steps,
        reader: Reader,
    ) -> None:
        super().__init__(topic, consumer, commit_every, cursor, reader)
        self._client = client
        self._items: AsyncIterator[R] | None = None

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> R:
        if self.closed:
            raise StopAsyncIteration
        if self._items is None:
            self._items = self._client._items(self._begin(await self._client._result(self._cursor)))
        if self._handled >= self.commit_every:
            await self.commit()
        self._before = self.position
        try:
            record = await anext(self._items)
        except StopAsyncIteration:
            await self.commit()
            raise
        self._handled += 1
        return record

    async def commit(self, upto: int | None = None) -> ConsumerInfo | None:
        """:meth:`ConsumeIterator.commit`, awaited."""
        call = self._commit_call(upto)
        return None if call is None else self._committed(await self._client._call(call))

    async def close(self) -> None:
        """:meth:`ConsumeIterator.close`, awaited."""
        if not self.closed:
            self.closed = True
            await self.commit()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is not None and not self.closed:
            self.closed = True
            with contextlib.suppress(TopicsError):  # as ConsumeIterator.__exit__
                await self.commit(self._before)
            return
        await self.close()


def _reader(
    wait_ms: int | None,
    node: str | Sequence[str] | None,
    include_meta: bool,
    include_tags: bool,
    on_gap: ops.OnGap,
    page_size: int,
) -> Reader:
    """A consume's read from the consumer's cursor (following with ``wait_ms``)."""
    return functools.partial(
        ops.read,
        to_seq=None,
        node=node,
        include_meta=include_meta,
        include_tags=include_tags,
        on_gap=on_gap,
        page_size=page_size,
        wait_ms=wait_ms,
    )


def _poll_ms(settings: Settings) -> int:
    """How long a following consume long-polls per request: :data:`ops.POLL_MS`, at most half
    the client's ``timeout`` (so the answer always comes before the client gives up)."""
    return max(1, min(ops.POLL_MS, int(settings.timeout * 500)))


def _advance(steps: ops.Steps, answer: Any, error: BaseException | None) -> Any:
    """The next step of ``steps``: the answer to its last call sent in, or its error thrown in
    (so an operation can handle, e.g., a chunk too big)."""
    if error is not None:
        return steps.throw(error)
    return steps.send(answer)


class Client:
    """A blocking client for one topics server.

    ``url`` and ``api_key`` fall back to ``TOPICS_URL`` / ``TOPICS_API_KEY``, then
    ``http://127.0.0.1:4000`` and no key. ``timeout`` (seconds) bounds each request; ``retries``
    is how many times a refused (429/503) or broken call is tried again, with backoff. Pass
    ``http_client`` (an ``httpx.Client`` you own) or ``transport`` to control the connection.
    Use it as a context manager, or call :meth:`close`.

    >>> import topics
    >>> with topics.Client() as client:
    ...     client.health().status
    'ok'
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        http_client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.settings = Settings.resolve(url, api_key, timeout, retries)
        self._owns_http = http_client is None
        self.http = http_client if http_client is not None else make_sync_http(self.settings, transport)
        self.sender = Sender(self.http, self.settings, time.sleep)
        """Sends one request with the retries: what the client's watches are given."""

    # -- plumbing --------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connections (not an ``http_client`` you passed in)."""
        if self._owns_http:
            self.http.close()

    def _call(self, call: Call[T]) -> T:
        return self.sender.send(call)

    def _result(self, steps: ops.Steps) -> Any:
        answer, error = None, None
        while True:
            try:
                step = _advance(steps, answer, error)
            except StopIteration as stop:
                return stop.value
            answer, error = None, None
            try:
                answer = self._call(step)
            except TopicsError as exc:
                error = exc

    def _items(self, steps: ops.Steps) -> Iterator[Any]:
        answer, error = None, None
        while True:
            try:
                step = _advance(steps, answer, error)
            except StopIteration:
                return
            answer, error = None, None
            if isinstance(step, ops.Items):
                yield from step
                continue
            try:
                answer = self._call(step)
            except TopicsError as exc:
                error = exc

    # -- topics ----------------------------------------------------------------------------

    def create_topic(self, name: str, **config: Any) -> TopicInfo:
        """Creates topic ``name``, or updates the fields of ``config`` given (an idempotent PUT:
        fields left out keep their value). ``config`` takes the ``TopicConfig`` fields: ``type`` (``"log"``
        or ``"queue"``), ``ttl_ms``, ``cap_records``, ``cap_bytes``, ``discard``, ``durability``,
        ``lease_ms``, ``max_deliveries``, ``dead_letter``…

        >>> info = client.create_topic("orders", durability="fsync")
        >>> (info.topic, info.config.durability)
        ('orders', 'fsync')
        >>> client.create_topic("jobs", type="queue", max_deliveries=3, dead_letter="jobs.dlq").config.type
        'queue'
        """
        return self._call(ops.create_topic(name, config))

    def topic(self, name: str, *, touch: bool | None = None) -> TopicState:
        """The state of topic ``name``: ``head_seq``, ``earliest_seq``, ``count``, ``bytes``,
        ``config`` and, on a queue, ``queue`` counters. ``touch=False`` does not count as a read
        for auto-priority. Raises :class:`topics.TopicNotFound`.

        >>> _ = client.create_topic("sensors", cap_records=1000)
        >>> state = client.topic("sensors")
        >>> (state.head_seq, state.config.cap_records)
        (0, 1000)
        """
        return self._call(ops.topic(name, touch))

    def list_topics(
        self, prefix: str | None = None, *, page_size: int | None = None
    ) -> Iterator[TopicSummary]:
        """Every topic (whose name starts with ``prefix``), in name order, paging as it goes.

        >>> for n in ("ls-a", "ls-b"):
        ...     _ = client.create_topic(n)
        >>> [t.topic for t in client.list_topics(prefix="ls-")]
        ['ls-a', 'ls-b']
        """
        return self._items(ops.list_topics(prefix, page_size))

    def delete_topic(self, name: str, if_empty: bool = False) -> TopicDeletion:
        """Deletes topic ``name``, its records and the routers using it. ``deleted`` is false if
        it did not exist; ``if_empty=True`` raises :class:`topics.TopicNotEmpty` instead of
        deleting records.

        >>> client.delete_topic("scratch").deleted
        False
        """
        return self._call(ops.delete_topic(name, if_empty))

    # -- writes ----------------------------------------------------------------------------

    def append(
        self,
        topic: str,
        data: Any,
        *,
        tag: str | None = None,
        node: str | None = None,
        meta: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        create: bool | None = None,
        config: Mapping[str, Any] | None = None,
        delay_ms: int | None = None,
    ) -> AppendResult:
        """Appends one record (``data``: any JSON value) and returns its seq. A missing topic is
        created (unless ``create=False`` or its ``auto_create`` is off), with ``config`` if
        given. Without an ``idempotency_key`` a fresh one is sent, so the SDK's retries never
        write twice; give your own to make a retry of your own safe too. ``delay_ms`` (queue
        topics only): the job is not claimable before ``delay_ms`` after the write (at most
        24 h; a log topic refuses it with ``NotAQueue``).

        >>> client.append("events", {"id": 1, "total": 9.5}, tag="order:1").seqs
        [1]
        """
        record = ops.record_body(data, tag, node, meta, delay_ms)
        with tracing.producing(topic, "append", 1) as carrier:
            if carrier is not None:
                record = tracing.stamped(record, carrier)
            return self._call(
                ops.append(topic, [record], idempotency_key=idempotency_key, create=create, config=config)
            )

    def append_many(
        self,
        topic: str,
        records: Iterable[Mapping[str, Any]],
        *,
        node: str | None = None,
        idempotency_key: str | None = None,
        create: bool | None = None,
        config: Mapping[str, Any] | None = None,
        delay_ms: int | None = None,
    ) -> AppendResult:
        """Appends ``records`` — mappings with ``data`` and optionally ``tag``, ``node``,
        ``meta``, ``delay_ms`` (a queue job's own delay; ``delay_ms=`` is every record's
        default) — in as many requests as the server's limits need, each atomic with its own
        idempotency key (``<idempotency_key>.<n>``). Chunks before a failing one stay written;
        calling again with the same ``idempotency_key`` completes the job without duplicates.

        >>> records = [{"data": {"cpu": i}, "tag": f"host:{i}"} for i in range(3)]
        >>> result = client.append_many("metrics", records)
        >>> (result.first_seq, result.last_seq)
        (1, 3)
        """
        count = len(records) if isinstance(records, list) else 0
        with tracing.producing(topic, "append_many", count) as carrier:
            if carrier is not None:
                records = tracing.stamped_all(records, carrier)
            return self._result(  # type: ignore[no-any-return]
                ops.append_many(
                    topic,
                    records,
                    node=node,
                    idempotency_key=idempotency_key,
                    create=create,
                    config=config,
                    delay_ms=delay_ms,
                )
            )

    # -- reads -----------------------------------------------------------------------------

    @overload
    def read(
        self,
        topic: str,
        from_seq: int = 0,
        *,
        from_ts: int | datetime | None = None,
        to_seq: int | None = None,
        node: str | Sequence[str] | None = None,
        include_meta: bool = True,
        include_tags: bool = True,
        on_gap: ops.OnGap = "raise",
        page_size: int = ops.READ_PAGE,
        model: None = None,
    ) -> ReadIterator[Record]: ...

    @overload
    def read(
        self,
        topic: str,
        from_seq: int = 0,
        *,
        from_ts: int | datetime | None = None,
        to_seq: int | None = None,
        node: str | Sequence[str] | None = None,
        include_meta: bool = True,
        include_tags: bool = True,
        on_gap: ops.OnGap = "raise",
        page_size: int = ops.READ_PAGE,
        model: type[M],
    ) -> ReadIterator[TypedRecord[M]]: ...

    def read(
        self,
        topic: str,
        from_seq: int = 0,
        *,
        from_ts: int | datetime | None = None,
        to_seq: int | None = None,
        node: str | Sequence[str] | None = None,
        include_meta: bool = True,
        include_tags: bool = True,
        on_gap: ops.OnGap = "raise",
        page_size: int = ops.READ_PAGE,
        model: Any = None,
    ) -> ReadIterator[Any]:
        """The records after ``from_seq`` (an exclusive cursor: 0 reads from the start) — or,
        with ``from_ts`` (ms since the epoch, or a datetime), from the first record written at
        or after that time — up to ``to_seq`` (inclusive) or the current head, a page at a
        time. Records written by ``node`` are skipped. Lost records are never skipped
        silently: a tombstone raises :class:`topics.DataLoss` (``on_gap="raise"``), or is
        recorded in the iterator's ``gaps`` and reading goes on (``on_gap="skip"``). A read
        from the start (``from_seq=0``) of a capped or TTL topic starts at its earliest
        retained record: what was trimmed before is no loss to it (the iterator's ``trimmed``).

        ``model`` (a pydantic model, a dataclass…: :mod:`topics.typed`): records come as
        :class:`topics.TypedRecord` objects whose ``data`` is validated into it as each is handed
        out; one that does not validate raises :class:`topics.InvalidRecord` (the ones before it
        were delivered; ``position`` is then its seq, so a read resumed from it goes on past it).

        >>> _ = client.append_many("clicks", [{"data": i} for i in range(3)])
        >>> [(r.seq, r.data) for r in client.read("clicks", 1)]
        [(2, 1), (3, 2)]
        """
        args = (topic, from_seq, from_ts, to_seq, node, include_meta, include_tags, on_gap, page_size)
        if model is not None:
            return ReadIterator(self, *ops.reading(*args, raw=True), model=model)
        return ReadIterator(self, *ops.reading(*args, raw=False))

    def read_raw(
        self,
        topic: str,
        from_seq: int = 0,
        *,
        from_ts: int | datetime | None = None,
        to_seq: int | None = None,
        node: str | Sequence[str] | None = None,
        include_meta: bool = True,
        include_tags: bool = True,
        on_gap: ops.OnGap = "raise",
        page_size: int = ops.READ_PAGE,
    ) -> ReadIterator[RawRecord]:
        """:meth:`read`, yielding :class:`topics.RawRecord` objects: ``data`` and ``meta`` stay the
        JSON text the server sent (nothing decoded), for passing records on unchanged.

        >>> _ = client.append("raw", {"a": [1, 2.5]})
        >>> [bytes(r.data) for r in client.read_raw("raw")]
        [b'{"a":[1,2.5]}']
        """
        args = (topic, from_seq, from_ts, to_seq, node, include_meta, include_tags, on_gap, page_size)
        return ReadIterator(self, *ops.reading(*args, raw=True))

    def cursor_at(self, topic: str, when: int | datetime) -> int:
        """The cursor a read from time ``when`` (ms since the epoch, or a datetime) starts
        after — Kafka's ``offsetsForTimes``: pass it as ``from_seq``. The seq just before the
        first record written at or after ``when``; 0 (from the start) when that is the oldest
        record kept; the head when nothing was written since.

        >>> _ = client.append("moments", "a")
        >>> client.cursor_at("moments", 0), client.cursor_at("moments", 2**53)
        (0, 1)
        """
        return self._call(ops.cursor_at(topic, when))

    def delete_records(self, topic: str, *, before_seq: int | None = None, tag: str | None = None) -> int:
        """Permanently deletes the records below ``before_seq`` and/or with tag ``tag`` (exact,
        or a prefix with a trailing ``*``: ``"order:*"``); both given, both must hold. Returns
        how many were deleted. Readers skip deleted records silently (no tombstone).

        >>> chat = [{"data": "hi", "tag": "chat-42:1"}, {"data": "yo", "tag": "chat-7:1"}]
        >>> _ = client.append_many("chat", chat)
        >>> client.delete_records("chat", tag="chat-42:*")
        1
        """
        return self._call(ops.delete_records(topic, before_seq, tag))

    def watch(
        self,
        topics: Mapping[str, int | str | datetime] | Iterable[str],
        *,
        node: str | None = None,
        include_meta: bool = False,
        include_tags: bool = True,
        heartbeat_ms: int = 15_000,
        consistency: str = "eventual",
        limit: int | None = None,
    ) -> Watch:
        """Follows ``topics`` live: a map of topic → cursor (the seq after which to start,
        ``"tail"`` for only new records, or a datetime to start at the first record written at
        or after it; a plain list of names means ``"tail"``). Iterate the
        returned :class:`topics.Watch` for :class:`topics.Records`, :class:`topics.Tombstone`,
        :class:`topics.CaughtUp` and :class:`topics.TopicDeleted` events; it reconnects by
        itself and resumes exactly where it was. Close it (or use ``with``) to stop.

        >>> _ = client.append_many("feed", [{"data": i} for i in range(4)])
        >>> with client.watch({"feed": 2}) as watch:
        ...     first = next(iter(watch))
        >>> (first.topic, [r.seq for r in first.records])
        ('feed', [3, 4])
        """
        options = WatchOptions.of(topics, node, include_meta, include_tags, heartbeat_ms, consistency, limit)
        return Watch(self.sender, options)

    # -- queues ----------------------------------------------------------------------------

    @overload
    def claim(
        self, queue: str, node: str, *, max: int = 1, lease_ms: int | None = None, model: None = None
    ) -> list[Job]: ...

    @overload
    def claim(
        self, queue: str, node: str, *, max: int = 1, lease_ms: int | None = None, model: type[M]
    ) -> list[TypedJob[M]]: ...

    def claim(
        self, queue: str, node: str, *, max: int = 1, lease_ms: int | None = None, model: Any = None
    ) -> list[Job] | list[TypedJob[Any]]:
        """Leases up to ``max`` ready jobs of ``queue`` to worker ``node`` for ``lease_ms`` (the
        queue's ``lease_ms`` by default). Fewer (or none) means the queue is (nearly) empty.
        With ``model`` the jobs are :class:`topics.TypedJob` objects, ``data`` validated into it;
        a job that does not validate raises :class:`topics.InvalidRecord`, which carries it
        (``job``) and every job the claim leased (``claimed``, all still held: settle them).

        >>> _ = client.create_topic("resize", type="queue")
        >>> _ = client.append("resize", {"file": "a.png"})
        >>> [job.data for job in client.claim("resize", "worker-1", max=10)]
        [{'file': 'a.png'}]
        """
        jobs = self._call(ops.claim(queue, node, max, lease_ms))
        return jobs if model is None else typed_jobs(jobs, model, queue)

    def ack(self, queue: str, node: str, jobs: Iterable[Job | int]) -> AckResult:
        """Completes (deletes) ``jobs`` — :class:`topics.Job` objects (fenced by their lease) or
        seqs. A job whose lease ``node`` no longer holds is skipped (listed in ``skipped``).

        >>> _ = client.create_topic("thumbs", type="queue")
        >>> _ = client.append("thumbs", {"file": "b.png"})
        >>> jobs = client.claim("thumbs", "worker-1")
        >>> client.ack("thumbs", "worker-1", jobs).acked
        1
        """
        return self._result(ops.ack(queue, node, jobs))  # type: ignore[no-any-return]

    def nack(self, queue: str, node: str, jobs: Iterable[Job | int], *, delay_ms: int = 0) -> NackResult:
        """Releases ``jobs`` for another delivery after ``delay_ms``.

        >>> _ = client.create_topic("emails", type="queue")
        >>> _ = client.append("emails", {"to": "ada@example.com"})
        >>> jobs = client.claim("emails", "worker-2")
        >>> client.nack("emails", "worker-2", jobs, delay_ms=5000).nacked
        1
        """
        return self._result(ops.nack(queue, node, jobs, delay_ms))  # type: ignore[no-any-return]

    def dead_letter(
        self, queue: str, node: str, jobs: Iterable[Job | int], *, reason: str | None = None
    ) -> DeadLetterResult:
        """Moves ``jobs`` (held by ``node``) to the queue's dead-letter topic now, whatever their
        delivery count — a permanent failure; ``reason`` is stored in their ``meta`` as
        ``$dead_letter_reason``. A queue without a ``dead_letter`` topic raises
        :class:`topics.NoDeadLetter`.

        >>> _ = client.create_topic("imports", type="queue", dead_letter="imports.dlq")
        >>> _ = client.append("imports", {"file": "broken.csv"})
        >>> jobs = client.claim("imports", "worker-3")
        >>> client.dead_letter("imports", "worker-3", jobs, reason="not a CSV").moved
        [1]
        >>> [r.meta["$dead_letter_reason"] for r in client.read("imports.dlq")]
        ['not a CSV']
        """
        return self._result(ops.dead_letter(queue, node, jobs, reason))  # type: ignore[no-any-return]

    def extend(
        self, queue: str, node: str, jobs: Iterable[Job | int], *, lease_ms: int | None = None
    ) -> ExtendResult:
        """Pushes the lease deadline of ``jobs`` to now + ``lease_ms`` (the queue's ``lease_ms``
        by default) — the heartbeat of a long job.

        >>> _ = client.create_topic("reports", type="queue")
        >>> _ = client.append("reports", {"month": "2026-10"})
        >>> jobs = client.claim("reports", "worker-3")
        >>> client.extend("reports", "worker-3", jobs, lease_ms=60_000).extended
        1
        """
        return self._result(ops.extend(queue, node, jobs, lease_ms))  # type: ignore[no-any-return]

    def redrive(
        self,
        dead_letter_topic: str,
        *,
        to: str | None = None,
        limit: int | None = None,
        filter: Callable[[Record], bool] | None = None,
        dry_run: bool = False,
    ) -> int:
        """Moves dead-lettered jobs back to the queue they came from (``meta.$dead_letter_from``,
        or ``to``), oldest first, at most ``limit``, only those ``filter(record)`` accepts, and
        returns how many. Each is appended first and deleted second, so a crash in between
        duplicates a job rather than losing it. ``dry_run=True`` only counts.

        >>> _ = client.create_topic("pdfs", type="queue", max_deliveries=1, dead_letter="pdfs.dlq")
        >>> _ = client.append("pdfs", {"file": "c.pdf"})
        >>> _ = client.nack("pdfs", "worker-4", client.claim("pdfs", "worker-4"))
        >>> client.claim("pdfs", "worker-4")  # a second delivery: dead-lettered instead
        []
        >>> client.redrive("pdfs.dlq")
        1
        >>> [job.data for job in client.claim("pdfs", "worker-4")]
        [{'file': 'c.pdf'}]
        """
        return self._result(ops.redrive(dead_letter_topic, to, limit, filter, dry_run))  # type: ignore[no-any-return]

    def leases(self, queue: str, *, node: str | None = None) -> Iterator[Lease]:
        """The active leases of ``queue`` (only ``node``'s, if given), ascending by seq,
        paging as it goes — who holds which job. The queue's health (delayed jobs, the oldest
        claimable job's age, the nodes holding leases) is in :meth:`topic`'s ``queue``.

        >>> _ = client.create_topic("renders", type="queue")
        >>> _ = client.append_many("renders", [{"data": {"frame": 1}}, {"data": {"frame": 2}}])
        >>> _ = client.claim("renders", "worker-7", max=2)
        >>> [(lease.seq, lease.node) for lease in client.leases("renders")]
        [(1, 'worker-7'), (2, 'worker-7')]
        >>> client.topic("renders").queue.holders
        [QueueHolder(node='worker-7', in_flight=2)]
        """
        return self._items(ops.leases(queue, node))

    # -- routers ---------------------------------------------------------------------------

    def put_router(self, name: str, source: str, dest: str, **options: Any) -> RouterInfo:
        """Creates or updates router ``name`` copying every record of ``source`` to ``dest``
        (router options: ``filter``, ``preserve_node``, ``preserve_tag``, ``create_dest``,
        ``allow_cycle``, ``guarantee``).

        >>> client.put_router("orders->audit", "orders", "audit").created
        True
        """
        return self._call(ops.put_router(name, source, dest, options))

    def router(self, name: str) -> RouterInfo:
        """Router ``name`` with its progress (``forwarded_total``, ``cursor``, ``lag``).

        >>> _ = client.put_router("a->b", "a", "b")
        >>> client.router("a->b").dest
        'b'
        """
        return self._call(ops.router(name))

    def list_routers(
        self, prefix: str | None = None, *, source: str | None = None, dest: str | None = None
    ) -> Iterator[RouterInfo]:
        """Every router (by name ``prefix``, ``source`` or ``dest``), paging as it goes.

        >>> _ = client.put_router("x->y", "x", "y")
        >>> [r.router for r in client.list_routers(source="x")]
        ['x->y']
        """
        return self._items(ops.list_routers(prefix, source, dest))

    def delete_router(self, name: str) -> bool:
        """Deletes router ``name``; false if there was none.

        >>> _ = client.put_router("p->q", "p", "q")
        >>> client.delete_router("p->q")
        True
        """
        return self._call(ops.delete_router(name))

    # -- schedules -------------------------------------------------------------------------

    def put_schedule(
        self,
        name: str,
        topic: str,
        records: Iterable[Mapping[str, Any]],
        *,
        cron: str | None = None,
        every_ms: int | None = None,
        node: str | None = None,
        missed: str | None = None,
    ) -> ScheduleInfo:
        """Creates or updates schedule ``name``: it appends ``records`` (mappings with ``data``
        and optionally ``tag``, ``node``, ``meta``, as for :meth:`append_many`) to ``topic`` on
        ``cron`` (five fields, UTC) or every ``every_ms`` — give exactly one. ``missed``:
        ``"skip"`` (default) or ``"once"``, what happens to the due times that passed while the
        server was down. A missing topic is created.

        >>> s = client.put_schedule("nightly", "jobs", [{"data": {"task": "report"}}], cron="0 2 * * *")
        >>> (s.created, s.cron, s.runs_total)
        (True, '0 2 * * *', 0)
        """
        return self._call(
            ops.put_schedule(name, topic, records, cron=cron, every_ms=every_ms, node=node, missed=missed)
        )

    def schedule(self, name: str) -> ScheduleInfo:
        """Schedule ``name`` with its progress (``next_run_ms``, ``last_run_ms``,
        ``runs_total``, ``last_error``).

        >>> _ = client.put_schedule("beat", "health", [{"data": "ping"}], every_ms=5000)
        >>> client.schedule("beat").records
        [{'data': 'ping'}]
        """
        return self._call(ops.schedule(name))

    def list_schedules(
        self, prefix: str | None = None, *, topic: str | None = None
    ) -> Iterator[ScheduleInfo]:
        """Every schedule (by name ``prefix`` or ``topic``), paging as it goes.

        >>> _ = client.put_schedule("tick", "clock", [{"data": 1}], every_ms=1000)
        >>> [s.schedule for s in client.list_schedules(topic="clock")]
        ['tick']
        """
        return self._items(ops.list_schedules(prefix, topic))

    def delete_schedule(self, name: str) -> bool:
        """Deletes schedule ``name`` (what it appended stays); false if there was none.

        >>> _ = client.put_schedule("once-a-day", "jobs", [{"data": 1}], cron="@daily")
        >>> client.delete_schedule("once-a-day")
        True
        """
        return self._call(ops.delete_schedule(name))

    # -- named consumers -------------------------------------------------------------------

    def put_consumer(
        self,
        topic: str,
        name: str,
        *,
        from_seq: int | None = None,
        from_ts: int | datetime | None = None,
        force: bool = False,
    ) -> ConsumerInfo:
        """Creates named consumer ``name`` of ``topic`` (an admin key): a cursor the server
        keeps — the last seq the consumer has read — at ``from_seq``, before the first record
        stamped at or after ``from_ts`` (ms since the epoch, or a datetime), or before the first
        record. An existing consumer is left as it is unless ``force=True`` repositions it.

        >>> _ = client.append_many("invoices", [{"data": i} for i in range(5)])
        >>> c = client.put_consumer("invoices", "billing", from_seq=2)
        >>> (c.created, c.cursor, c.lag)
        (True, 2, 3)
        """
        return self._call(ops.put_consumer(topic, name, from_seq, from_ts, force))

    def consumer(self, topic: str, name: str) -> ConsumerInfo:
        """Named consumer ``name`` of ``topic``: its committed ``cursor``, the topic's
        ``head_seq`` and the ``lag`` between them. Raises :class:`topics.ConsumerNotFound`.

        >>> _ = client.append("payments", {"amount": 5})
        >>> _ = client.put_consumer("payments", "ledger")
        >>> client.consumer("payments", "ledger").lag
        1
        """
        return self._call(ops.consumer(topic, name))

    def list_consumers(self, topic: str, prefix: str | None = None) -> Iterator[ConsumerInfo]:
        """The named consumers of ``topic`` (by name ``prefix``), paging as it goes.

        >>> _ = client.append("visits", {"page": "/"})
        >>> for name in ("stats", "search"):
        ...     _ = client.put_consumer("visits", name)
        >>> [c.consumer for c in client.list_consumers("visits")]
        ['search', 'stats']
        """
        return self._items(ops.list_consumers(topic, prefix))

    def commit(self, topic: str, name: str, seq: int, *, force: bool = False) -> ConsumerInfo:
        """Moves consumer ``name``'s cursor to ``seq`` (the last seq it has handled). Forward
        only: a lower ``seq`` raises :class:`topics.CursorBehind` unless ``force=True``; above
        the topic's head raises :class:`topics.CursorBeyondHead`. Answered once durable.

        >>> _ = client.append_many("refunds", [{"data": i} for i in range(3)])
        >>> _ = client.put_consumer("refunds", "auditor")
        >>> client.commit("refunds", "auditor", 2).lag
        1
        """
        return self._call(ops.commit(topic, name, seq, force))

    def delete_consumer(self, topic: str, name: str) -> bool:
        """Deletes named consumer ``name`` of ``topic`` (an admin key); false if there was none.

        >>> _ = client.append("alerts", {"level": "warn"})
        >>> _ = client.put_consumer("alerts", "pager")
        >>> client.delete_consumer("alerts", "pager")
        True
        """
        return self._call(ops.delete_consumer(topic, name))

    def consume(
        self,
        topic: str,
        consumer: str,
        *,
        commit_every: int = ops.COMMIT_EVERY,
        follow: bool = False,
        create: bool = True,
        from_seq: int | None = None,
        from_ts: int | datetime | None = None,
        node: str | Sequence[str] | None = None,
        include_meta: bool = True,
        include_tags: bool = True,
        on_gap: ops.OnGap = "raise",
        page_size: int = ops.READ_PAGE,
    ) -> ConsumeIterator[Record]:
        """Reads ``topic`` as named consumer ``consumer``: from its committed cursor, committing
        as you go — every ``commit_every`` records handed out and when the iterator is closed
        (use ``with``) or exhausted — so a restarted reader, or another process taking over,
        continues after the last commit (at least once: records after it are read again).
        Caught up, the iteration ends; with ``follow=True`` it waits for new records instead
        (long-polls) until you close it. A missing consumer is created (``create``; at
        ``from_seq``/``from_ts``, else before the first record), which needs an admin key;
        otherwise :class:`topics.ConsumerNotFound` says how to create it. ``node``,
        ``include_*``, ``on_gap`` and ``page_size`` are :meth:`read`'s.

        >>> _ = client.append_many("shipments", [{"data": {"box": i}} for i in range(5)])
        >>> with client.consume("shipments", consumer="labels", commit_every=2) as it:
        ...     boxes = [r.data["box"] for r in it]
        >>> (boxes, client.consumer("shipments", "labels").cursor)
        ([0, 1, 2, 3, 4], 5)
        >>> _ = client.append("shipments", {"box": 5})
        >>> [r.data["box"] for r in client.consume("shipments", consumer="labels")]
        [5]
        """
        wait_ms = _poll_ms(self.settings) if follow else None
        reader = _reader(wait_ms, node, include_meta, include_tags, on_gap, page_size)
        cursor = ops.consumer_cursor(topic, consumer, create, from_seq, from_ts)
        return ConsumeIterator(self, topic, consumer, commit_every, cursor, reader)

    # -- probes ----------------------------------------------------------------------------

    def health(self) -> Health:
        """Liveness: ``status``, ``version``, ``uptime_ms``.

        >>> client.health().status
        'ok'
        """
        return self._call(ops.health())

    def ready(self) -> Readiness:
        """Readiness; raises :class:`topics.NotReady` while the server replays its log (after
        the client's retries).

        >>> client.ready().status
        'ready'
        """
        return self._call(ops.ready())

    def whoami(self) -> Identity:
        """What the client's API key allows: its ``key`` label, ``scopes`` and name
        ``prefixes`` (``auth == "dev"``, every scope, when the server has no keys). Raises
        :class:`topics.Unauthorized` for a missing or unknown key.

        >>> me = client.whoami()
        >>> (me.auth, me.scopes, me.may("admin"))
        ('dev', ['admin', 'delete', 'read', 'write'], True)
        """
        return self._call(ops.whoami())


class AsyncClient:
    """The asyncio twin of :class:`Client`: the same methods as coroutines (iterators become
    async iterators). Use ``async with``, or ``await client.close()``.

    >>> import asyncio, topics
    >>> async def main():
    ...     async with topics.AsyncClient() as client:
    ...         await client.append("async-demo", {"hello": "world"})
    ...         return [r.data async for r in client.read("async-demo")]
    >>> asyncio.run(main())
    [{'hello': 'world'}]
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        http_client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = Settings.resolve(url, api_key, timeout, retries)
        self._owns_http = http_client is None
        self.http = http_client if http_client is not None else make_async_http(self.settings, transport)
        self.sender = AsyncSender(self.http, self.settings, asyncio.sleep)
        """Sends one request with the retries: what the client's watches and workers are given."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Closes the connections (not an ``http_client`` you passed in)."""
        if self._owns_http:
            await self.http.aclose()

    async def _call(self, call: Call[T]) -> T:
        return await self.sender.send(call)

    async def _result(self, steps: ops.Steps) -> Any:
        answer, error = None, None
        while True:
            try:
                step = _advance(steps, answer, error)
            except StopIteration as stop:
                return stop.value
            answer, error = None, None
            try:
                answer = await self._call(step)
            except TopicsError as exc:
                error = exc

    async def _items(self, steps: ops.Steps) -> AsyncIterator[Any]:
        answer, error = None, None
        while True:
            try:
                step = _advance(steps, answer, error)
            except StopIteration:
                return
            answer, error = None, None
            if isinstance(step, ops.Items):
                for item in step:
                    yield item
                continue
            try:
                answer = await self._call(step)
            except TopicsError as exc:
                error = exc

    async def create_topic(self, name: str, **config: Any) -> TopicInfo:
        """:meth:`Client.create_topic`, awaited."""
        return await self._call(ops.create_topic(name, config))

    async def topic(self, name: str, *, touch: bool | None = None) -> TopicState:
        """:meth:`Client.topic`, awaited."""
        return await self._call(ops.topic(name, touch))

    def list_topics(
        self, prefix: str | None = None, *, page_size: int | None = None
    ) -> AsyncIterator[TopicSummary]:
        """:meth:`Client.list_topics` with ``async for``."""
        return self._items(ops.list_topics(prefix, page_size))

    async def delete_topic(self, name: str, if_empty: bool = False) -> TopicDeletion:
        """:meth:`Client.delete_topic`, awaited."""
        return await self._call(ops.delete_topic(name, if_empty))

    async def append(
        self,
        topic: str,
        data: Any,
        *,
        tag: str | None = None,
        node: str | None = None,
        meta: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
        create: bool | None = None,
        config: Mapping[str, Any] | None = None,
        delay_ms: int | None = None,
    ) -> AppendResult:
        """:meth:`Client.append`, awaited."""
        record = ops.record_body(data, tag, node, meta, delay_ms)
        with tracing.producing(topic, "append", 1) as carrier:
            if carrier is not None:
                record = tracing.stamped(record, carrier)
            return await self._call(
                ops.append(topic, [record], idempotency_key=idempotency_key, create=create, config=config)
            )

    async def append_many(
        self,
        topic: str,
        records: Iterable[Mapping[str, Any]],
        *,
        node: str | None = None,
        idempotency_key: str | None = None,
        create: bool | None = None,
        config: Mapping[str, Any] | None = None,
        delay_ms: int | None = None,
    ) -> AppendResult:
        """:meth:`Client.append_many`, awaited."""
        count = len(records) if isinstance(records, list) else 0
        with tracing.producing(topic, "append_many", count) as carrier:
            if carrier is not None:
                records = tracing.stamped_all(records, carrier)
            return await self._result(  # type: ignore[no-any-return]
                ops.append_many(
                    topic,
                    records,
                    node=node,
                    idempotency_key=idempotency_key,
                    create=create,
                    config=config,
                    delay_ms=delay_ms,
                )
            )

    @overload
    def read(
        self,
        topic: str,
        from_seq: int = 0,
        *,
        from_ts: int | datetime | None = None,
        to_seq: int | None = None,
        node: str | Sequence[str] | None = None,
        include_meta: bool = True,
        include_tags: bool = True,
        on_gap: ops.OnGap = "raise",
        page_size: int = ops.READ_PAGE,
        model: None = None,
    ) -> AsyncReadIterator[Record]: ...

    @overload
    def read(
        self,
        topic: str,
        from_seq: int = 0,
        *,
        from_ts: int | datetime | None = None,
        to_seq: int | None = None,
        node: str | Sequence[str] | None = None,
        include_meta: bool = True,
        include_tags: bool = True,
        on_gap: ops.OnGap = "raise",
        page_size: int = ops.READ_PAGE,
        model: type[M],
    ) -> AsyncReadIterator[TypedRecord[M]]: ...

    def read(
        self,
        topic: str,
        from_seq: int = 0,
        *,
        from_ts: int | datetime | None = None,
        to_seq: int | None = None,
        node: str | Sequence[str] | None = None,
        include_meta: bool = True,
        include_tags: bool = True,
        on_gap: ops.OnGap = "raise",
        page_size: int = ops.READ_PAGE,
        model: Any = None,
    ) -> AsyncReadIterator[Any]:
        """:meth:`Client.read` with ``async for``."""
        args = (topic, from_seq, from_ts, to_seq, node, include_meta, include_tags, on_gap, page_size)
        if model is not None:
            return AsyncReadIterator(self, *ops.reading(*args, raw=True), model=model)
        return AsyncReadIterator(self, *ops.reading(*args, raw=False))

    def read_raw(
        self,
        topic: str,
        from_seq: int = 0,
        *,
        from_ts: int | datetime | None = None,
        to_seq: int | None = None,
        node: str | Sequence[str] | None = None,
        include_meta: bool = True,
        include_tags: bool = True,
        on_gap: ops.OnGap = "raise",
        page_size: int = ops.READ_PAGE,
    ) -> AsyncReadIterator[RawRecord]:
        """:meth:`Client.read_raw` with ``async for``."""
        args = (topic, from_seq, from_ts, to_seq, node, include_meta, include_tags, on_gap, page_size)
        return AsyncReadIterator(self, *ops.reading(*args, raw=True))

    async def cursor_at(self, topic: str, when: int | datetime) -> int:
        """:meth:`Client.cursor_at`."""
        return await self._call(ops.cursor_at(topic, when))

    async def delete_records(
        self, topic: str, *, before_seq: int | None = None, tag: str | None = None
    ) -> int:
        """:meth:`Client.delete_records`, awaited."""
        return await self._call(ops.delete_records(topic, before_seq, tag))

    def watch(
        self,
        topics: Mapping[str, int | str | datetime] | Iterable[str],
        *,
        node: str | None = None,
        include_meta: bool = False,
        include_tags: bool = True,
        heartbeat_ms: int = 15_000,
        consistency: str = "eventual",
        limit: int | None = None,
    ) -> AsyncWatch:
        """:meth:`Client.watch` with ``async with`` / ``async for``."""
        options = WatchOptions.of(topics, node, include_meta, include_tags, heartbeat_ms, consistency, limit)
        return AsyncWatch(self.sender, options)

    @overload
    async def claim(
        self, queue: str, node: str, *, max: int = 1, lease_ms: int | None = None, model: None = None
    ) -> list[Job]: ...

    @overload
    async def claim(
        self, queue: str, node: str, *, max: int = 1, lease_ms: int | None = None, model: type[M]
    ) -> list[TypedJob[M]]: ...

    async def claim(
        self, queue: str, node: str, *, max: int = 1, lease_ms: int | None = None, model: Any = None
    ) -> list[Job] | list[TypedJob[Any]]:
        """:meth:`Client.claim`, awaited."""
        jobs = await self._call(ops.claim(queue, node, max, lease_ms))
        return jobs if model is None else typed_jobs(jobs, model, queue)

    async def ack(self, queue: str, node: str, jobs: Iterable[Job | int]) -> AckResult:
        """:meth:`Client.ack`, awaited."""
        return await self._result(ops.ack(queue, node, jobs))  # type: ignore[no-any-return]

    async def nack(
        self, queue: str, node: str, jobs: Iterable[Job | int], *, delay_ms: int = 0
    ) -> NackResult:
        """:meth:`Client.nack`, awaited."""
        return await self._result(ops.nack(queue, node, jobs, delay_ms))  # type: ignore[no-any-return]

    async def dead_letter(
        self, queue: str, node: str, jobs: Iterable[Job | int], *, reason: str | None = None
    ) -> DeadLetterResult:
        """:meth:`Client.dead_letter`, awaited."""
        return await self._result(ops.dead_letter(queue, node, jobs, reason))  # type: ignore[no-any-return]

    async def extend(
        self, queue: str, node: str, jobs: Iterable[Job | int], *, lease_ms: int | None = None
    ) -> ExtendResult:
        """:meth:`Client.extend`, awaited."""
        return await self._result(ops.extend(queue, node, jobs, lease_ms))  # type: ignore[no-any-return]

    async def redrive(
        self,
        dead_letter_topic: str,
        *,
        to: str | None = None,
        limit: int | None = None,
        filter: Callable[[Record], bool] | None = None,
        dry_run: bool = False,
    ) -> int:
        """:meth:`Client.redrive`, awaited."""
        return await self._result(ops.redrive(dead_letter_topic, to, limit, filter, dry_run))  # type: ignore[no-any-return]

    async def put_router(self, name: str, source: str, dest: str, **options: Any) -> RouterInfo:
        """:meth:`Client.put_router`, awaited."""
        return await self._call(ops.put_router(name, source, dest, options))

    async def router(self, name: str) -> RouterInfo:
        """:meth:`Client.router`, awaited."""
        return await self._call(ops.router(name))

    def leases(self, queue: str, *, node: str | None = None) -> AsyncIterator[Lease]:
        """:meth:`Client.leases` with ``async for``."""
        return self._items(ops.leases(queue, node))

    def list_routers(
        self, prefix: str | None = None, *, source: str | None = None, dest: str | None = None
    ) -> AsyncIterator[RouterInfo]:
        """:meth:`Client.list_routers` with ``async for``."""
        return self._items(ops.list_routers(prefix, source, dest))

    async def delete_router(self, name: str) -> bool:
        """:meth:`Client.delete_router`, awaited."""
        return await self._call(ops.delete_router(name))

    async def put_schedule(
        self,
        name: str,
        topic: str,
        records: Iterable[Mapping[str, Any]],
        *,
        cron: str | None = None,
        every_ms: int | None = None,
        node: str | None = None,
        missed: str | None = None,
    ) -> ScheduleInfo:
        """:meth:`Client.put_schedule`, awaited."""
        return await self._call(
            ops.put_schedule(name, topic, records, cron=cron, every_ms=every_ms, node=node, missed=missed)
        )

    async def schedule(self, name: str) -> ScheduleInfo:
        """:meth:`Client.schedule`, awaited."""
        return await self._call(ops.schedule(name))

    def list_schedules(
        self, prefix: str | None = None, *, topic: str | None = None
    ) -> AsyncIterator[ScheduleInfo]:
        """:meth:`Client.list_schedules` with ``async for``."""
        return self._items(ops.list_schedules(prefix, topic))

    async def delete_schedule(self, name: str) -> bool:
        """:meth:`Client.delete_schedule`, awaited."""
        return await self._call(ops.delete_schedule(name))

    async def put_consumer(
        self,
        topic: str,
        name: str,
        *,
        from_seq: int | None = None,
        from_ts: int | datetime | None = None,
        force: bool = False,
    ) -> ConsumerInfo:
        """:meth:`Client.put_consumer`, awaited."""
        return await self._call(ops.put_consumer(topic, name, from_seq, from_ts, force))

    async def consumer(self, topic: str, name: str) -> ConsumerInfo:
        """:meth:`Client.consumer`, awaited."""
        return await self._call(ops.consumer(topic, name))

    def list_consumers(self, topic: str, prefix: str | None = None) -> AsyncIterator[ConsumerInfo]:
        """:meth:`Client.list_consumers` with ``async for``."""
        return self._items(ops.list_consumers(topic, prefix))

    async def commit(self, topic: str, name: str, seq: int, *, force: bool = False) -> ConsumerInfo:
        """:meth:`Client.commit`, awaited."""
        return await self._call(ops.commit(topic, name, seq, force))

    async def delete_consumer(self, topic: str, name: str) -> bool:
        """:meth:`Client.delete_consumer`, awaited."""
        return await self._call(ops.delete_consumer(topic, name))

    def consume(
        self,
        topic: str,
        consumer: str,
        *,
        commit_every: int = ops.COMMIT_EVERY,
        follow: bool = False,
        create: bool = True,
        from_seq: int | None = None,
        from_ts: int | datetime | None = None,
        node: str | Sequence[str] | None = None,
        include_meta: bool = True,
        include_tags: bool = True,
        on_gap: ops.OnGap = "raise",
        page_size: int = ops.READ_PAGE,
    ) -> AsyncConsumeIterator[Record]:
        """:meth:`Client.consume` with ``async with`` / ``async for``."""
        wait_ms = _poll_ms(self.settings) if follow else None
        reader = _reader(wait_ms, node, include_meta, include_tags, on_gap, page_size)
        cursor = ops.consumer_cursor(topic, consumer, create, from_seq, from_ts)
        return AsyncConsumeIterator(self, topic, consumer, commit_every, cursor, reader)

    async def health(self) -> Health:
        """:meth:`Client.health`, awaited."""
        return await self._call(ops.health())

    async def ready(self) -> Readiness:
        """:meth:`Client.ready`, awaited."""
        return await self._call(ops.ready())

    async def whoami(self) -> Identity:
        """:meth:`Client.whoami`, awaited."""
        return await self._call(ops.whoami())
