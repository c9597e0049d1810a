"""Routes as a directed graph of topic names, and the two rules it enforces on a ``PUT``.

- Fan-in: a dest has a single source — every router into a topic comes from the same source
  (a derived topic's records are copies of one other topic's).
- Cycles: a router may close a directed cycle only with ``allow_cycle``; the routers on a cycle
  then stamp a hop count on their copies (see ``copies``).

Invariant: :class:`RouteGraph` holds exactly one edge per registered router (the registry adds
and removes them with the routers), so ``on_cycle`` (:func:`mark_cycles`) and both checks see
the current routes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import RouterCycle, TopicExistsIncompatible
from ..graphs import strongly_connected
from .config import RouterConfig
from .copies import HOP_CAP
from .router import Router


@dataclass(slots=True)
class RouteGraph:
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
                        return _route_to(dest, parents)
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


def check_fan_in(routers: Iterable[Router], name: str, config: RouterConfig) -> None:
    """409 ``topic_exists_incompatible`` when another router brings records from another source
    into ``config.dest`` (the first such router in ``routers`` is named)."""
    for other in routers:
        if other.name != name and other.config.dest == config.dest and other.config.source != config.source:
            raise TopicExistsIncompatible(
                f'topic "{config.dest}" is already the destination of router "{other.name}" '
                f'from "{other.config.source}"; a derived destination has a single source',
                {"reason": "router_dest_fan_in", "dest": config.dest, "router": other.name},
            )


def check_cycle(graph: RouteGraph, current: Router | None, config: RouterConfig) -> None:
    """409 ``router_cycle`` when the route ``config.source -> config.dest`` would close a
    directed cycle and ``allow_cycle`` is off. ``current`` is the router being reconfigured: its
    old route is left out of the check (and is back in ``graph`` afterwards)."""
    if config.allow_cycle:
        return
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
            f"for an intentional multi-master loop (records stop after {HOP_CAP} hops)",
            {"cycle": cycle},
        )


def mark_cycles(graph: RouteGraph, routers: Iterable[Router]) -> None:
    """Set each router's ``on_cycle``: both its topics are on a directed cycle of ``graph``.
    Hop counts are for cycles someone allowed: without any ``allow_cycle`` router, no router is
    on a cycle (and the graph is not searched)."""
    routers = list(routers)
    cyclic = graph.cyclic_nodes() if any(r.config.allow_cycle for r in routers) else set()
    for router in routers:
        router.on_cycle = router.config.source in cyclic and router.config.dest in cyclic


def _route_to(goal: str, parents: dict[str, str | None]) -> list[str]:
    """The route from the search's start to ``goal``, following ``parents`` back."""
    route = [goal]
    back = parents[goal]
    while back is not None:
        route.append(back)
        back = parents[back]
    return route[::-1]
