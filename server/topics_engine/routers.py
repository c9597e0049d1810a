"""Routers (§6): durable, asynchronous forwarding of every record appended to a ``source``
topic into a ``dest`` topic.

Forwarding is off the source's write path: an append to a source notifies the :class:`Hub`,
which marks the source's routers due; a pump scheduled on the event loop then copies what each
router has not examined yet — at most :data:`FORWARD_BATCH` records per pass, routers taking
turns, so requests interleave with forwarding however many routers there are. Per source,
records are forwarded in seq order.

Derived copies (ruling 17): a forwarding step logs a ``ROUTER`` frame naming the source seqs it
copied and the dest seqs and ``$ts`` they got — never the copies' bytes — so one source append is
one WAL write whatever the fan-out. Replay re-derives the copies from the source records with
the same dest seqs. The frame is written after the source records' own frames (one ordered
log), so a surviving step always finds its source records: a dest's copies are exactly as
durable as the source's. The router's cursor (the last source seq it examined) and total ride in
the same frame, and routers are a section of the snapshot.

Each copy gets a fresh ``$seq`` and ``$ts`` in dest and carries ``data``, ``meta``, ``$node``
and ``$tag`` (the latter two unless ``preserve_*`` is false). Two kinds of router stamp
``meta._topics_router`` — ``{"router", "source", "seq", "hops"}``:

- ``exactly_once`` routers: the stamp is the copy's stable idempotency key. When a router
  starts (after recovery), it looks up its newest key in dest and moves its cursor past it, so a
  copy already in dest is never appended again — as long as that copy is still retained there.
- routers on a directed cycle (only possible with ``allow_cycle``): ``hops`` counts how often a
  record was forwarded; a record that has made :data:`HOP_CAP` hops is not forwarded again
  (ruling 18). Routers outside cycles leave ``meta`` untouched.

Backpressure: a ``discard: "reject"`` dest that is full refuses a step; the router keeps its
cursor and retries with a growing delay (:data:`RETRY_MS`). A source that evicted records the
router had not examined yet (cap or TTL) makes it reserve one dest seq as a ``source_trim``
marker, so dest readers get a tombstone instead of silently missing records.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from . import listing
from .config import Durability
from .engine import Engine
from .errors import (
    Internal,
    InvalidRequest,
    RouterCycle,
    RouterNotFound,
    Throttled,
    TopicExistsIncompatible,
    TopicFull,
    TopicNotFound,
    TopicsError,
    cap_reached,
)
from .graphs import strongly_connected
from .listing import decode_cursor, effective_prefixes, encode_cursor, names_after
from .matching import TagMatch, parse_match
from .names import ROUTER_NAME_RE, check_topic_name
from .records import NewRecords, Record, encode
from .results import AckWait, TopicDeleted
from .storage import formats
from .storage.formats import ForwardPayload, RouterPayload
from .topic import Topic

log = logging.getLogger("topics.routers")

FORWARD_BATCH = 1000
"""Most records one router copies in one step (one dest append, one WAL frame)."""
HOP_CAP = 8
"""A record forwarded this many times along a cycle is not forwarded again (ruling 18)."""
RETRY_MS = (10, 1000)
"""Backoff of a refused step (full reject dest, read-only WAL): first retry, longest delay."""
GUARANTEES = ("at_least_once", "exactly_once")
STAMP = "_topics_router"
_STAMP_NEEDLE = b'"_topics_router"'
KEY_LOOKBACK = 100_000
"""How many of dest's newest records an ``exactly_once`` router searches for its newest key."""


@dataclass(frozen=True, slots=True)
class RouterConfig:
    """What a ``PUT`` defines (``create_dest`` is an action of the PUT, not stored)."""

    source: str
    dest: str
    preserve_node: bool = True
    preserve_tag: bool = True
    filter: Any = None
    allow_cycle: bool = False
    guarantee: str = "at_least_once"

    def to_wire(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "dest": self.dest,
            "preserve_node": self.preserve_node,
            "preserve_tag": self.preserve_tag,
            "filter": self.filter,
            "allow_cycle": self.allow_cycle,
            "guarantee": self.guarantee,
        }


@dataclass(eq=False, slots=True)
class Router:
    id: int
    name: str
    config: RouterConfig
    cursor: int
    """The last source seq examined: everything at or below it was copied or skipped."""
    forwarded_total: int = 0
    source_trimmed: int = 0
    match: TagMatch | None = None
    on_cycle: bool = False
    """The route is part of a directed cycle: copies carry a hop count."""
    retry_ms: int = 0
    """Delay before the next retry of a refused step; 0 while steps succeed."""
    blocked: bool = False
    """Waiting for a retry timer (a refused step): not pumped until it fires."""
    last_error: str | None = None

    @property
    def stamps(self) -> bool:
        return self.config.guarantee == "exactly_once" or self.on_cycle

    def payload(self) -> RouterPayload:
        return RouterPayload(
            self.id, self.name, self.config.to_wire(), self.cursor, self.forwarded_total, self.source_trimmed
        )


@dataclass(slots=True)
class RouterState:
    """A router as ``GET`` reports it: its config, progress and lag."""

    router: Router
    source_head_seq: int

    @property
    def cursor(self) -> int:
        return self.router.cursor

    @property
    def lag(self) -> int:
        """Source records above the cursor (``head_seq - cursor``): not examined yet."""
        return max(0, self.source_head_seq - self.router.cursor)


@dataclass(slots=True)
class RouterPut:
    router: Router
    created: bool
    wait: AckWait = None


@dataclass(slots=True)
class RouterPage:
    routers: list[Router]
    next_cursor: str | None


@dataclass(slots=True)
class RouterDeleted:
    name: str
    deleted: bool
    wait: AckWait = None


@dataclass(slots=True)
class _Graph:
    """Routes as a directed graph of topic names (one edge per router)."""

    edges: dict[str, dict[str, int]] = field(default_factory=dict)
    """source -> dest -> how many routers take that route."""

    def add(self, source: str, dest: str) -> None:
        out = self.edges.setdefault(source, {})
        out[dest] = out.get(dest, 0) + 1

    def remove(self, source: str, dest: str) -> None:
        out = self.edges[source]
        out[dest] -= 1
        if not out[dest]:
            del out[dest]
        if not out:
            del self.edges[source]

    def path(self, start: str, goal: str) -> list[str] | None:
        """A shortest route ``start -> .. -> goal`` (breadth-first), or ``None``."""
        parents: dict[str, str | None] = {start: None}
        frontier = [start]
        while frontier:
            nxt: list[str] = []
            for node in frontier:
                for dest in self.edges.get(node, ()):
                    if dest in parents:
                        continue
                    parents[dest] = node
                    if dest == goal:
                        route = [dest]
                        back: str | None = node
                        while back is not None:
                            route.append(back)
                            back = parents[back]
                        return route[::-1]
                    nxt.append(dest)
            frontier = nxt
        return None

    def cyclic_nodes(self) -> set[str]:
        """Topics on a directed cycle: in a strongly connected component of two or more, or
        with a route to themselves."""
        out: set[str] = set()
        for component in strongly_connected(self.edges):
            if len(component) > 1 or component[0] in self.edges.get(component[0], ()):
                out.update(component)
        return out


def _bool(fields: dict[str, Any], name: str, default: bool) -> bool:
    value = fields.get(name, default)
    if not isinstance(value, bool):
        raise InvalidRequest(f"{name} must be a boolean", {"field": name})
    return value


def parse_router_config(fields: dict[str, Any]) -> tuple[RouterConfig, TagMatch | None, bool]:
    """A PUT body -> ``(config, filter, create_dest)``; 400 ``invalid_request`` on bad fields."""
    for name in ("source", "dest"):
        value = fields.get(name)
        if value is None:
            raise InvalidRequest(f"{name} is required", {"field": name})
        if not isinstance(value, str):
            raise InvalidRequest(f"{name} must be a topic name", {"field": name})
        check_topic_name(value, name)
    if fields["source"] == fields["dest"]:
        raise InvalidRequest(
            "source and dest must differ (a router into its own source would loop)", {"field": "dest"}
        )
    guarantee = fields.get("guarantee", "at_least_once")
    if guarantee not in GUARANTEES:
        raise InvalidRequest('guarantee must be "at_least_once" or "exactly_once"', {"field": "guarantee"})
    raw_filter = fields.get("filter")
    if isinstance(raw_filter, tuple):
        raw_filter = list(raw_filter)
    match = parse_match(raw_filter, "filter") if raw_filter is not None else None
    config = RouterConfig(
        source=fields["source"],
        dest=fields["dest"],
        preserve_node=_bool(fields, "preserve_node", True),
        preserve_tag=_bool(fields, "preserve_tag", True),
        filter=raw_filter,
        allow_cycle=_bool(fields, "allow_cycle", False),
        guarantee=guarantee,
    )
    return config, match, _bool(fields, "create_dest", True)


def check_router_name(name: str) -> str:
    if not ROUTER_NAME_RE.fullmatch(name):
        raise InvalidRequest(
            f"invalid router name {name!r}: use 1-255 characters from A-Z a-z 0-9 . _ : - > "
            'starting with a letter or digit (by convention "<source>-><dest>")',
            {"field": "router", "value": name},
        )
    return name


class Routers:
    """The router registry and its forwarding pump (on the engine's loop)."""

    def __init__(self, engine: Engine, *, autorun: bool = True, max_routers: int = 0) -> None:
        self.engine = engine
        self.max_routers = max_routers
        """``TOPICS_MAX_ROUTERS`` (§11; 0: unlimited): only a new router counts."""
        self._by_name: dict[str, Router] = {}
        self._by_id: dict[int, Router] = {}
        self._names: list[str] = []
        self._by_source: dict[str, list[Router]] = {}
        self._graph = _Graph()
        self.next_id = 1
        self._due: dict[Router, None] = {}
        self._scheduled = False
        self._autorun = autorun

    # -- registry -----------------------------------------------------------------------------

    @property
    def count(self) -> int:
        return len(self._by_name)

    @property
    def forwarded_total(self) -> int:
        """Copies the current routers have appended, all together."""
        return sum(router.forwarded_total for router in self._by_id.values())

    def get(self, name: str) -> Router:
        router = self._by_name.get(name)
        if router is None:
            raise RouterNotFound(f'router "{name}" does not exist', {"router": name})
        return router

    def all(self) -> list[Router]:
        return [self._by_name[name] for name in self._names]

    def _add(self, router: Router) -> None:
        self._by_name[router.name] = router
        self._by_id[router.id] = router
        bisect.insort(self._names, router.name)
        self._link(router)
        self.next_id = max(self.next_id, router.id + 1)

    def _remove(self, router: Router) -> None:
        self._unlink(router)
        del self._by_name[router.name]
        del self._by_id[router.id]
        del self._names[bisect.bisect_left(self._names, router.name)]
        self._due.pop(router, None)

    def _link(self, router: Router) -> None:
        source = router.config.source
        routers = self._by_source.setdefault(source, [])
        if not routers:
            self.engine.hub.listen(source, self)
        routers.append(router)
        self._graph.add(source, router.config.dest)
        self._mark_cycles()

    def _unlink(self, router: Router) -> None:
        source = router.config.source
        routers = self._by_source[source]
        routers.remove(router)
        if not routers:
            del self._by_source[source]
            self.engine.hub.unlisten(source, self)
        self._graph.remove(source, router.config.dest)
        self._mark_cycles()

    def _mark_cycles(self) -> None:
        cyclic = (
            self._graph.cyclic_nodes() if any(r.config.allow_cycle for r in self._by_id.values()) else set()
        )
        for router in self._by_id.values():
            router.on_cycle = router.config.source in cyclic and router.config.dest in cyclic

    # -- the API (§6) -------------------------------------------------------------------------

    def put(self, name: str, fields: dict[str, Any]) -> RouterPut:
        """Create (201) or reconfigure (200) a router. A missing source is created with the
        default config; a missing dest too unless ``create_dest`` is false (404). Changing
        ``source`` or ``dest`` restarts the router at the new source's head (ruling 16)."""
        check_router_name(name)
        config, match, create_dest = parse_router_config(fields)
        engine = self.engine
        current = self._by_name.get(name)
        if current is not None and current.config == config:
            return RouterPut(current, False)
        if not create_dest and engine.topic(config.dest) is None:
            raise TopicNotFound(config.dest)
        moved = current is None or (current.config.source, current.config.dest) != (
            config.source,
            config.dest,
        )
        if moved:
            self._check_fan_in(name, config)
            self._check_cycle(current, config)
        engine.persistence.check_writable()
        if current is None:
            self._check_room()
        missing = [n for n in dict.fromkeys((config.source, config.dest)) if engine.topic(n) is None]
        engine.check_topic_room(len(missing))  # all or none: a refused router leaves no topic
        for topic_name in missing:
            engine.put_topic(topic_name, {})
        source = engine.get(config.source)
        if current is None:
            router = Router(self.next_id, name, config, source.head_seq, match=match)
            self._add(router)
        else:
            router = current
            self._unlink(router)
            router.config, router.match = config, match
            if moved:
                router.cursor = source.head_seq
            self._link(router)
            router.retry_ms, router.blocked = 0, False
        wait = engine.persistence.router_change(formats.encode_router_put(router.payload()))
        self._wake(router)
        return RouterPut(router, current is None, wait)

    def _check_room(self) -> None:
        """429 ``throttled`` when a new router would exceed ``max_routers``."""
        if self.max_routers and len(self._by_name) >= self.max_routers:
            raise cap_reached(
                "max_routers",
                self.max_routers,
                f"{len(self._by_name)} routers exist; delete one or raise TOPICS_MAX_ROUTERS",
            )

    def _check_fan_in(self, name: str, config: RouterConfig) -> None:
        for other in self._by_name.values():
            if (
                other.name != name
                and other.config.dest == config.dest
                and other.config.source != config.source
            ):
                raise TopicExistsIncompatible(
                    f'topic "{config.dest}" is already the destination of router "{other.name}" '
                    f'from "{other.config.source}"; a derived destination has a single source',
                    {"reason": "router_dest_fan_in", "dest": config.dest, "router": other.name},
                )

    def _check_cycle(self, current: Router | None, config: RouterConfig) -> None:
        if config.allow_cycle:
            return
        graph = self._graph
        if current is not None:
            graph.remove(current.config.source, current.config.dest)
        try:
            route = graph.path(config.dest, config.source)
        finally:
            if current is not None:
                graph.add(current.config.source, current.config.dest)
        if route is not None:
            cycle = [config.source, *route]
            raise RouterCycle(
                f"this router would close the cycle {' -> '.join(cycle)}; set allow_cycle: true "
                "for an intentional multi-master loop (records stop after 8 hops)",
                {"cycle": cycle},
            )

    def state(self, name: str) -> RouterState:
        router = self.get(name)
        source = self.engine.topic(router.config.source)
        return RouterState(router, source.head_seq if source is not None else router.cursor)

    def page(
        self,
        prefix: str = "",
        source: str | None = None,
        dest: str | None = None,
        page_size: int = 0,
        cursor: str | None = None,
        within: tuple[str, ...] = (),
    ) -> RouterPage:
        """One page of routers in name order, filtered by name prefix, source and dest;
        ``within`` (an API key's prefix allowlist; empty: any) hides every other name."""
        size = listing.page_size(page_size)
        after = decode_cursor(cursor) if cursor is not None else None
        page: list[Router] = []
        for name in names_after(self._names, effective_prefixes(prefix, within), after):
            router = self._by_name[name]
            if (source is None or router.config.source == source) and (
                dest is None or router.config.dest == dest
            ):
                if len(page) == size:
                    return RouterPage(page, encode_cursor(page[-1].name))
                page.append(router)
        return RouterPage(page, None)

    def delete(self, name: str) -> RouterDeleted:
        """Remove a router; forwarding stops at once, copies already in dest stay."""
        check_router_name(name)
        router = self._by_name.get(name)
        if router is None:
            return RouterDeleted(name, False)
        self.engine.persistence.check_writable()
        self._remove(router)
        wait = self.engine.persistence.router_change(formats.encode_router_delete(router.id))
        return RouterDeleted(name, True, wait)

    def delete_topic(self, name: str, if_empty: bool = False) -> TopicDeleted:
        """Delete a topic (§1.4) and every router with it as source or dest."""
        result = self.engine.delete_topic(name, if_empty)
        if result.deleted:
            for router in self.naming(name):
                self._remove(router)
                self.engine.persistence.router_change(formats.encode_router_delete(router.id))
                result.routers_removed.append(router.name)
        return result

    def naming(self, topic: str) -> list[Router]:
        """The routers with ``topic`` as their source or dest, in name order."""
        return [r for r in self.all() if topic in (r.config.source, r.config.dest)]

    # -- forwarding ---------------------------------------------------------------------------

    def topic_changed(self, name: str) -> None:
        """Hub listener: ``name`` (a source) has new records."""
        for router in self._by_source.get(name, ()):
            if not router.blocked:
                self._due[router] = None
        self._schedule()

    def _wake(self, router: Router) -> None:
        router.blocked = False
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
            if self._by_id.get(router.id) is not router or router.blocked:
                continue
            try:
                n, more = self._step(router)
            except TopicsError as err:
                self._refused(router, err)
                continue
            except Exception as err:  # noqa: BLE001 — a bug must not stop every other router
                log.exception("router %s: forwarding step failed", router.name)
                self._refused(router, Internal(str(err)))
                continue
            copied += n
            router.retry_ms, router.last_error = 0, None
            if more:
                self._due[router] = None
        return copied

    def drain(self) -> int:
        """Pump until nothing is due (forwarding without an event loop, e.g. in tests)."""
        total = 0
        while self._due:
            total += self.pump()
        return total

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
            if self._by_id.get(router.id) is router:
                self._wake(router)

        self.engine.clock.call_later(delay, retry)

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
        picked = [r for r in records if self._forwards(router, r)]
        more = len(entries) == FORWARD_BATCH
        if not picked:
            self._advance(router, dest, last_seq)
            return 0, more
        while True:
            try:
                self._copy(router, dest, picked, last_seq)
                break
            except (TopicFull, Throttled):
                if len(picked) == 1:
                    raise
                # a full ``reject`` dest (or the total-bytes quota): copy what fits, so a backlog
                # over its cap still drains
                picked = picked[: len(picked) // 2]
                last_seq, more = picked[-1].seq, True
        router.cursor = last_seq
        router.forwarded_total += len(picked)
        return len(picked), more

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

    def _forwards(self, router: Router, record: Record) -> bool:
        if router.match is not None and not router.match.matches(record.tag):
            return False
        return not (router.on_cycle and hops_of(record) >= HOP_CAP)

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

    # -- start-up, replay and snapshots -------------------------------------------------------

    def start(self) -> None:
        """After recovery: ``exactly_once`` routers skip copies already in dest; every router
        catches up from its cursor."""
        for router in self.all():
            if router.config.guarantee == "exactly_once":
                dest = self.engine.topic(router.config.dest)
                if dest is not None:
                    newest = newest_key(dest, router)
                    if newest is not None and newest > router.cursor:
                        log.info(
                            "router %s: dest already holds copies up to source seq %d", router.name, newest
                        )
                        router.cursor = newest
            self._due[router] = None
        self._schedule()

    def apply_put(self, p: RouterPayload) -> None:
        """Replay a ``ROUTER_PUT`` frame or a snapshot entry."""
        config, match, _ = parse_router_config(p.config)
        router = self._by_id.get(p.id)
        if router is None:
            router = Router(p.id, p.name, config, p.cursor, p.forwarded_total, p.source_trimmed, match)
            self._add(router)
            return
        self._unlink(router)
        router.config, router.match, router.cursor = config, match, p.cursor
        self._link(router)

    def apply_delete(self, router_id: int) -> None:
        router = self._by_id.get(router_id)
        if router is not None:
            self._remove(router)

    def apply_forward(self, p: ForwardPayload) -> None:
        """Replay a forwarding step: the router's progress, and the copies re-derived from the
        source into their dest seqs (unless dest already holds them, or is ``ephemeral``)."""
        router = self._by_id.get(p.router_id)
        if router is None:
            return
        if p.trimmed and p.cursor > router.cursor:  # not counted in a snapshot yet
            router.source_trimmed += p.trimmed
        router.cursor = max(router.cursor, p.cursor)
        router.forwarded_total = max(router.forwarded_total, p.forwarded_total)
        dest = self.engine.topic_by_id(p.dest_id)
        source = self.engine.topic(router.config.source)
        if dest is None or dest.config.durability is Durability.EPHEMERAL:
            return
        if p.trimmed:
            dest.apply_hole(p.first_dest_seq, p.trimmed)
            return
        if source is None:
            return
        seqs = [seq for a, b in p.copied for seq in range(a, b + 1)]
        first = p.first_dest_seq
        if first + len(seqs) - 1 <= dest.head_seq:
            return
        for offset, run in _present_runs(source, seqs):
            copies = derive(router, run, p.stamped)
            dest.apply_append(encode(copies, first + offset, p.ts), p.ts)

    def finish_replay(self) -> None:
        """Routers whose source or dest no longer exists are gone (their topic's delete frame
        survived a crash that lost the routers' delete frames)."""
        for router in self.all():
            if (
                self.engine.topic(router.config.source) is None
                or self.engine.topic(router.config.dest) is None
            ):
                self._remove(router)

    def images(self) -> list[RouterPayload]:
        return [router.payload() for router in self.all()]


def _present_runs(source: Topic, seqs: list[int]) -> Iterator[tuple[int, list[Record]]]:
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


def hops_of(record: Record) -> int:
    """How many times ``record`` was forwarded along a cycle (its stamp's ``hops``; 0 if none)."""
    meta = record.meta_json
    if meta is None or _STAMP_NEEDLE not in meta:
        return 0
    stamp = orjson.loads(meta).get(STAMP)
    hops = stamp.get("hops") if isinstance(stamp, dict) else None
    return hops if isinstance(hops, int) else 0


def derive(router: Router, records: list[Record], stamped: bool | None = None) -> NewRecords:
    """The copies of ``records`` a router appends to dest (deterministic: replay re-derives the
    same bytes). ``stamped`` overrides the router's current stamping (replay of a step)."""
    cfg = router.config
    stamp = router.stamps if stamped is None else stamped
    datas = [r.data_json for r in records]
    tags = [r.tag for r in records] if cfg.preserve_tag else None
    nodes = [r.node for r in records] if cfg.preserve_node else None
    if stamp:
        metas: list[bytes | None] | None = [_stamped_meta(router, r) for r in records]
    else:
        metas = [r.meta_json for r in records]
    return NewRecords(
        datas,
        tags if tags is not None and any(t is not None for t in tags) else None,
        nodes if nodes is not None and any(n is not None for n in nodes) else None,
        metas if metas is not None and any(m is not None for m in metas) else None,
    )


def _stamped_meta(router: Router, record: Record) -> bytes:
    meta_json = record.meta_json
    meta: dict[str, Any] = orjson.loads(meta_json) if meta_json is not None else {}
    meta[STAMP] = {
        "router": router.name,
        "source": router.config.source,
        "seq": record.seq,
        "hops": hops_of(record) + 1,
    }
    return orjson.dumps(meta)


def newest_key(dest: Topic, router: Router) -> int | None:
    """The source seq of the newest copy in ``dest`` stamped by ``router`` (its exactly-once
    key), searching the newest :data:`KEY_LOOKBACK` records; ``None`` if there is none."""
    seqs = deque(dest.live_seqs(), maxlen=KEY_LOOKBACK)  # the newest, in bounded memory
    for seq in reversed(seqs):
        record = dest.record(seq)
        meta = record.meta_json if record is not None else None
        if meta is None or _STAMP_NEEDLE not in meta:
            continue
        stamp = orjson.loads(meta).get(STAMP)
        if (
            isinstance(stamp, dict)
            and stamp.get("router") == router.name
            and stamp.get("source") == router.config.source
            and isinstance(stamp.get("seq"), int)
        ):
            seq_found: int = stamp["seq"]
            return seq_found
    return None
