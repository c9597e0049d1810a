"""The router registry: ``PUT``/``GET``/``DELETE``/list, WAL replay and snapshot images.

Invariants:

- A router is in every index (by name, by id, the sorted names, the route graph) and attached to
  the forwarder, or in none of them.
- A registered router's source and dest exist: a ``PUT`` creates missing ones,
  :meth:`Routers.delete_topic` removes a deleted topic's routers, and replay drops a router
  whose topic is gone (:meth:`Routers.finish_replay`).
- Every change is logged before it is acknowledged: ``ROUTER_PUT`` (the router's definition and
  cursor) and ``ROUTER_DELETE`` frames, and forwarding steps (see ``forwarding``); routers are
  also a section of the snapshot (:meth:`Routers.images`). Replay (``apply_*``) rebuilds the
  same routers, cursors and copies.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

from .. import listing
from ..config import Durability
from ..engine import Engine
from ..errors import RouterNotFound, TopicNotFound, cap_reached
from ..listing import decode_cursor, effective_prefixes, encode_cursor, names_after
from ..matching import TagMatch
from ..results import AckWait, TopicDeleted
from ..storage import formats
from ..storage.formats import ForwardPayload, RouterPayload
from .config import RouterConfig, check_router_name, parse_router_config, stored_router_config
from .copies import newest_key
from .forwarding import Forwarder, replay_step
from .graph import RouteGraph, check_cycle, check_fan_in, mark_cycles
from .router import Router

log = logging.getLogger("topics.routers")


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


class Routers:
    """The router registry and its forwarding pump (on the engine's loop)."""

    def __init__(self, engine: Engine, *, autorun: bool = True, max_routers: int = 0) -> None:
        self.engine = engine
        self.max_routers = max_routers
        """``TOPICS_MAX_ROUTERS`` (a resource cap; 0: unlimited): only a new router counts."""
        self._by_name: dict[str, Router] = {}
        self._by_id: dict[int, Router] = {}
        self._names: list[str] = []
        """Every router name, sorted (pages are in name order)."""
        self._graph = RouteGraph()
        self._forwarder = Forwarder(engine, autorun=autorun)
        self.next_id = 1
        """The id of the next new router (ids are never reused)."""

    # -- lookups ------------------------------------------------------------------------------

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
        """Every router, in name order."""
        return [self._by_name[name] for name in self._names]

    def naming(self, topic: str) -> list[Router]:
        """The routers with ``topic`` as their source or dest, in name order."""
        return [r for r in self.all() if topic in (r.config.source, r.config.dest)]

    # -- the API ------------------------------------------------------------------------------

    def put(self, name: str, fields: dict[str, Any]) -> RouterPut:
        """Create (201) or reconfigure (200) a router. A missing source is created with the
        default config; a missing dest too unless ``create_dest`` is false (404). Changing
        ``source`` or ``dest`` restarts the router at the new source's head (docs/DECISIONS.md, "Router PUT").
        Everything is checked before anything changes: a refused PUT leaves no trace."""
        check_router_name(name)
        config, match, create_dest = parse_router_config(fields)
        current = self._by_name.get(name)
        if current is not None and current.config.extra:  # a newer server's keys stay
            config = dataclasses.replace(config, extra=current.config.extra)
        if current is not None and current.config == config:
            return RouterPut(current, False)
        if not create_dest and self.engine.topic(config.dest) is None:
            raise TopicNotFound(config.dest)
        moved = current is None or _route(current.config) != _route(config)
        if moved:
            check_fan_in(self._by_name.values(), name, config)
            check_cycle(self._graph, current, config)
        self.engine.persistence.check_writable()
        if current is None:
            self._check_room()
        self._create_topics(config)
        router = self._define(name, current, config, match, moved)
        wait = self.engine.persistence.router_change(formats.encode_router_put(router.payload()))
        self._forwarder.wake(router)
        return RouterPut(router, current is None, wait)

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
        """Delete a topic and every router with it as source or dest."""
        result = self.engine.delete_topic(name, if_empty)
        if result.deleted:
            for router in self.naming(name):
                self._remove(router)
                self.engine.persistence.router_change(formats.encode_router_delete(router.id))
                result.routers_removed.append(router.name)
        return result

    # -- forwarding ---------------------------------------------------------------------------

    def pump(self) -> int:
        """One forwarding pass (see :meth:`Forwarder.pump`); returns the records copied."""
        return self._forwarder.pump()

    def drain(self) -> int:
        """Pump until nothing is due (forwarding without an event loop, e.g. in tests)."""
        return self._forwarder.drain()

    def start(self) -> None:
        """After recovery: ``exactly_once`` routers skip copies already in dest; every router
        catches up from its cursor."""
        routers = self.all()
        for router in routers:
            if router.config.guarantee == "exactly_once":
                self._skip_copied(router)
        self._forwarder.resume(routers)

    # -- replay and snapshots -----------------------------------------------------------------

    def apply_put(self, p: RouterPayload) -> None:
        """Replay a ``ROUTER_PUT`` frame or a snapshot entry (its stored config is read
        tolerantly: ``stored_router_config``).

        Replay may re-run frames a snapshot already reflects (its LSN stays below an ``fsync``
        append still waiting when it was cut): another router holding ``p.name`` (an id put
        later, or earlier and deleted since) is removed first — the later frames put it back —
        so every index stays consistent."""
        config, match = stored_router_config(p.config, p.name)
        router = self._by_id.get(p.id)
        holder = self._by_name.get(p.name)
        if holder is not None and holder is not router:
            self._remove(holder)
        if router is not None and router.name != p.name:  # ids are never reused: defensive
            self._remove(router)
            router = None
        if router is None:
            router = Router(p.id, p.name, config, p.cursor, p.forwarded_total, p.source_trimmed, match)
            self._add(router)
            return
        self._unlink(router)
        router.config, router.match, router.cursor = config, match, p.cursor
        self._link(router)

    def apply_delete(self, router_id: int) -> None:
        """Replay a ``ROUTER_DELETE`` frame (of an id no longer present: nothing)."""
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
        if dest is None or dest.config.durability is Durability.EPHEMERAL:
            return
        replay_step(router, self.engine.topic(router.config.source), dest, p)

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
        """The snapshot's routers section, in name order."""
        return [router.payload() for router in self.all()]

    # -- internals ----------------------------------------------------------------------------

    def _check_room(self) -> None:
        """429 ``throttled`` when a new router would exceed ``max_routers``."""
        if self.max_routers and len(self._by_name) >= self.max_routers:
            raise cap_reached(
                "max_routers",
                self.max_routers,
                f"{len(self._by_name)} routers exist; delete one or raise TOPICS_MAX_ROUTERS",
            )

    def _create_topics(self, config: RouterConfig) -> None:
        """Create a missing source and dest with the default config: both, or (the topic cap
        refusing) neither — a refused router leaves no topic."""
        engine = self.engine
        missing = [n for n in dict.fromkeys((config.source, config.dest)) if engine.topic(n) is None]
        engine.check_topic_room(len(missing))
        for topic_name in missing:
            engine.put_topic(topic_name, {})

    def _define(
        self, name: str, current: Router | None, config: RouterConfig, match: TagMatch | None, moved: bool
    ) -> Router:
        """Register a new router at its source's head, or reconfigure ``current`` (back at the
        new source's head when ``moved``, its cursor kept otherwise; a pending retry is dropped)."""
        head = self.engine.get(config.source).head_seq
        if current is None:
            router = Router(self.next_id, name, config, head, match=match)
            self._add(router)
            return router
        self._unlink(current)
        current.config, current.match = config, match
        if moved:
            current.cursor = head
        self._link(current)
        current.retry_ms, current.blocked = 0, False
        return current

    def _skip_copied(self, router: Router) -> None:
        """Move an ``exactly_once`` router's cursor past the newest copy dest already holds."""
        dest = self.engine.topic(router.config.dest)
        if dest is None:
            return
        newest = newest_key(dest, router)
        if newest is not None and newest > router.cursor:
            log.info("router %s: dest already holds copies up to source seq %d", router.name, newest)
            router.cursor = newest

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
        self._forwarder.forget(router)

    def _link(self, router: Router) -> None:
        """Put the router's route in the graph and attach it to the forwarder."""
        self._forwarder.attach(router)
        self._graph.add(router.config.source, router.config.dest)
        mark_cycles(self._graph, self._by_id.values())

    def _unlink(self, router: Router) -> None:
        self._forwarder.detach(router)
        self._graph.remove(router.config.source, router.config.dest)
        mark_cycles(self._graph, self._by_id.values())


def _route(config: RouterConfig) -> tuple[str, str]:
    return config.source, config.dest
