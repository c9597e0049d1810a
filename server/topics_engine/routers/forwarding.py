"""The forwarding pump: copies what each router has not examined yet from its source to its dest.

Forwarding is off the source's write path: an append to a source notifies the engine's hub,
which marks the source's routers due (:meth:`Forwarder.topic_changed`); a pass scheduled on the
event loop (:meth:`Forwarder.pump`) then lets each due router take one step — at most
:data:`FORWARD_BATCH` records per pass, routers taking turns, so requests interleave with
forwarding however many routers there are.

Invariants:

- Per source, records are copied in seq order, and a step moves the router's cursor to the
  last source seq it examined.
- One step is one dest append and one ``ROUTER`` WAL frame naming the source seqs it copied and
  the dest seqs and ``$ts`` they got — never the copies' bytes (docs/DECISIONS.md, "Derived
  copies"); the frame follows the source records' frames in the one ordered log, so replay
  (:func:`replay_step`) always finds them. A step whose records were all filtered out logs its
  cursor alone.
- A refused step (full ``discard: "reject"`` dest, the bytes quota, a read-only WAL) changes
  nothing: the router keeps its cursor and retries with a growing delay (:data:`RETRY_MS`).
- A source that evicted records the router had not examined yet (cap or TTL) makes the router
  reserve one dest seq as a ``source_trim`` marker, so dest readers get a tombstone instead of
  silently missing records.
"""

from __future__ import annotations

import asyncio
import logging

from ..coldreads import ColdChunk, ColdRead, ColdReads
from ..engine import Engine
from ..errors import Internal, Throttled, TopicFull, TopicsError
from ..records import Record, encode
from ..storage import formats
from ..storage.coldstore import strict
from ..storage.formats import ForwardPayload
from ..topic import Topic
from .copies import HOP_CAP, derive, hops_of, present_runs
from .router import Router

log = logging.getLogger("topics.routers")

FORWARD_BATCH = 1000
"""Most records one router copies in one step (one dest append, one WAL frame)."""
RETRY_MS = (10, 1000)
"""Backoff of a refused step (full reject dest, read-only WAL): first retry, longest delay."""


class Forwarder:
    """The pump over the attached routers (on the engine's loop), listening on their sources.

    A router is attached while it is registered (:meth:`attach` / :meth:`detach`); only an
    attached router is ever stepped or woken by its retry timer."""

    def __init__(self, engine: Engine, *, autorun: bool = True) -> None:
        self.engine = engine
        self._by_source: dict[str, dict[Router, None]] = {}
        """source -> its attached routers, in the order they were attached."""
        self._due: dict[Router, None] = {}
        """Routers to step, in turn order."""
        self._scheduled = False
        self._autorun = autorun
        self._loaded: dict[Router, ColdReads] = {}
        """Routers whose step met cold source records: the chunks loaded for them, pinned."""
        self._loading: set[asyncio.Task[None]] = set()
        """Schedule passes on the running loop; without, only :meth:`pump` / :meth:`drain` run."""

    # -- attached routers ---------------------------------------------------------------------

    def attach(self, router: Router) -> None:
        """Listen on the router's source (the first router of a source subscribes to the hub)."""
        source = router.config.source
        routers = self._by_source.setdefault(source, {})
        if not routers:
            self.engine.hub.listen(source, self)
        routers[router] = None

    def detach(self, router: Router) -> None:
        """Stop listening for the router (the last router of a source unsubscribes). It stays
        due if it was: a router detached to be reconfigured is attached again at once."""
        source = router.config.source
        routers = self._by_source[source]
        del routers[router]
        if not routers:
            del self._by_source[source]
            self.engine.hub.unlisten(source, self)

    def forget(self, router: Router) -> None:
        """A removed router is no longer due (and lets go of what it loaded)."""
        self._due.pop(router, None)
        loaded = self._loaded.pop(router, None)
        if loaded is not None:
            loaded.release()

    def _attached(self, router: Router) -> bool:
        return router in self._by_source.get(router.config.source, ())

    # -- scheduling ---------------------------------------------------------------------------

    def topic_changed(self, name: str) -> None:
        """Hub listener: ``name`` (a source) has new records."""
        for router in self._by_source.get(name, ()):
            if not router.blocked:
                self._due[router] = None
        self._schedule()

    def wake(self, router: Router) -> None:
        """Make ``router`` due now, even if it waits for a retry."""
        router.blocked = False
        self._due[router] = None
        self._schedule()

    def resume(self, routers: list[Router]) -> None:
        """After recovery: every router is due, to catch up from its cursor."""
        for router in routers:
            self._due[router] = None
        self._schedule()

    def _schedule(self) -> None:
        if self._scheduled or not self._due or not self._autorun:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (recovery on a worker thread, synchronous tests): pump() by hand
        self._scheduled = True
        loop.call_soon(self._run)

    def _run(self) -> None:
        self._scheduled = False
        with strict():  # on the event loop: a cold source record is loaded, never read here
            self.pump()
        self._schedule()

    def pump(self) -> int:
        """One forwarding pass: due routers take one step each, in turn, until the pass copied
        :data:`FORWARD_BATCH` records; the rest stay due, first in line for the next pass (so a
        pass holds the loop for about one step whatever the number of routers). Returns the
        records copied."""
        copied = 0
        due, self._due = list(self._due), {}
        for i, router in enumerate(due):
            if copied >= FORWARD_BATCH:
                self._due = dict.fromkeys(due[i:]) | self._due
                break
            if not self._attached(router) or router.blocked:
                continue
            n, more = self._try_step(router)
            copied += n
            if more:
                self._due[router] = None
        return copied

    def drain(self) -> int:
        """Pump until nothing is due (forwarding without an event loop, e.g. in tests)."""
        total = 0
        while self._due:
            total += self.pump()
        return total

    def _try_step(self, router: Router) -> tuple[int, bool]:
        """:meth:`_step`, a refusal or failure turned into a retry with backoff."""
        try:
            n, more = self._step(router)
        except ColdRead as miss:
            self._load_cold(router, miss.chunks)
            return 0, False
        except TopicsError as err:
            self._refused(router, err)
            return 0, False
        except Exception as err:  # noqa: BLE001 — a bug must not stop every other router
            log.exception("router %s: forwarding step failed", router.name)
            self._refused(router, Internal(str(err)))
            return 0, False
        router.retry_ms, router.last_error = 0, None
        loaded = self._loaded.pop(router, None)
        if loaded is not None:
            loaded.release()
        return n, more

    def _load_cold(self, router: Router, chunks: list[ColdChunk]) -> None:
        """The step met source records that are cold: load them off the event loop (pinned
        until the router's next step goes through), then make the router due again."""
        router.blocked = True
        reads = self._loaded.get(router)
        if reads is None:
            reads = self._loaded[router] = ColdReads()
        reads.missing = chunks

        async def load() -> None:
            try:
                await reads.load()
            except Exception as err:  # noqa: BLE001 — a lost segment, a closing reader pool
                log.error("router %s: reading cold source records failed: %s", router.name, err)
                if self._attached(router):
                    self._refused(router, Internal(f"reading cold source records failed: {err}"))
                return
            if self._attached(router):
                self.wake(router)
            else:
                self._loaded.pop(router, None)
                reads.release()

        task = asyncio.ensure_future(load())
        self._loading.add(task)
        task.add_done_callback(self._loading.discard)

    def _refused(self, router: Router, err: TopicsError) -> None:
        """A refused step (full ``reject`` dest, read-only WAL): keep the cursor, retry later."""
        delay = min(max(router.retry_ms * 2, RETRY_MS[0]), RETRY_MS[1])
        if router.last_error != err.code:
            log.warning(
                "router %s -> %s: forwarding refused (%s: %s); retrying with backoff",
                router.config.source,
                router.config.dest,
                err.code,
                err.message,
            )
        router.retry_ms, router.blocked, router.last_error = delay, True, err.code

        def retry() -> None:
            if self._attached(router):
                self.wake(router)

        self.engine.clock.call_later(delay, retry)

    # -- one step -----------------------------------------------------------------------------

    def _step(self, router: Router) -> tuple[int, bool]:
        """Copy up to :data:`FORWARD_BATCH` records the router has not examined. Returns the
        number copied and whether more remain."""
        engine = self.engine
        source = engine.topic(router.config.source)
        dest = engine.topic(router.config.dest)
        if source is None or dest is None:
            return 0, False
        source.expire(engine.clock.now_ms())
        if source.evict_floor > router.cursor + 1:
            self._trimmed(router, source, dest)
            return 0, True
        entries = source.live_after(router.cursor, FORWARD_BATCH)
        if not entries:
            router.cursor = max(router.cursor, source.head_seq)  # seqs above hold nothing
            return 0, False
        last_seq = entries[-1][0].first_seq + entries[-1][1]
        records = [Record(batch, i) for batch, i in entries]
        picked = [r for r in records if _forwards(router, r)]
        more = len(entries) == FORWARD_BATCH
        if not picked:
            self._advance(router, dest, last_seq)
            return 0, more
        picked, last_seq, more = self._copy_what_fits(router, dest, picked, last_seq, more)
        router.cursor = last_seq
        router.forwarded_total += len(picked)
        return len(picked), more

    def _copy_what_fits(
        self, router: Router, dest: Topic, picked: list[Record], last_seq: int, more: bool
    ) -> tuple[list[Record], int, bool]:
        """Copy ``picked``, halving it while a full ``reject`` dest (or the total-bytes quota)
        refuses, so a backlog over its cap still drains; a single refused record raises.
        Returns the records copied, the last source seq examined, and whether more remain."""
        while True:
            try:
                self._copy(router, dest, picked, last_seq)
                return picked, last_seq, more
            except (TopicFull, Throttled):
                if len(picked) == 1:
                    raise
                picked = picked[: len(picked) // 2]
                last_seq, more = picked[-1].seq, True

    def _copy(self, router: Router, dest: Topic, picked: list[Record], last_seq: int) -> None:
        """Append the copies of ``picked`` to dest; the step examined source seqs up to ``last_seq``."""
        copied = formats.to_ranges([r.seq for r in picked])
        stamped = router.stamps

        def describe(first_dest_seq: int, ts: int) -> bytes:
            return formats.encode_forward(
                ForwardPayload(
                    router.id,
                    last_seq,
                    router.forwarded_total + len(picked),
                    dest.id,
                    first_dest_seq,
                    ts,
                    0,
                    copied,
                    stamped,
                )
            )

        self.engine.append_derived(dest, derive(router, picked), describe)

    def _advance(self, router: Router, dest: Topic, cursor: int) -> None:
        """Log a step that copied nothing (all filtered out): the cursor still moves durably."""
        router.cursor = cursor
        payload = ForwardPayload(router.id, cursor, router.forwarded_total, dest.id, 0, 0, 0, [])
        self.engine.persistence.router_change(formats.encode_forward(payload), wait=False)

    def _trimmed(self, router: Router, source: Topic, dest: Topic) -> None:
        """The source lost records the router had not examined: mark the loss in dest."""
        stone = source.tombstone_for(router.cursor)
        missed = stone.missed_estimate if stone is not None else 0
        cursor = source.evict_floor - 1
        total = router.forwarded_total

        def describe(seq: int, ts: int) -> bytes:
            return formats.encode_forward(
                ForwardPayload(router.id, cursor, total, dest.id, seq, ts, max(1, missed), [])
            )

        self.engine.append_derived(dest, None, describe, trimmed=max(1, missed))
        log.warning(
            "router %s: source %s evicted %d records before they were forwarded; dest %s gets a "
            "source_trim tombstone",
            router.name,
            source.name,
            missed,
            dest.name,
        )
        router.cursor = cursor
        router.source_trimmed += max(1, missed)


def replay_step(router: Router, source: Topic | None, dest: Topic, p: ForwardPayload) -> None:
    """Replay a forwarding step into ``dest``: its ``source_trim`` marker, or the copies
    re-derived from the source records into the dest seqs the step gave them (unless dest
    already holds them). A source record gone since leaves its dest seq empty."""
    if p.trimmed:
        dest.apply_hole(p.first_dest_seq, p.trimmed)
        return
    if source is None:
        return
    seqs = [seq for a, b in p.copied for seq in range(a, b + 1)]
    first = p.first_dest_seq
    if first + len(seqs) - 1 <= dest.head_seq:
        return
    for offset, run in present_runs(source, seqs):
        copies = derive(router, run, p.stamped)
        dest.apply_append(encode(copies, first + offset, p.ts), p.ts)


def _forwards(router: Router, record: Record) -> bool:
    """Whether the router copies ``record``: its tag passes the filter, and on a cycle it has
    not made :data:`~.copies.HOP_CAP` hops yet."""
    if router.match is not None and not router.match.matches(record.tag):
        return False
    return not (router.on_cycle and hops_of(record) >= HOP_CAP)
