"""One router: its config, its durable progress and its forwarding state.

Invariants: ``cursor`` only grows while ``source`` and ``dest`` stay the same (a ``PUT`` moving
the router to another source restarts it at that source's head); every source seq at or below
``cursor`` was copied, filtered out, hop-capped or reported lost (after a crash, as far as the
surviving log says: a lost step is redone). ``forwarded_total`` and ``source_trimmed`` only grow.
:meth:`Router.payload` is the durable part (a ``ROUTER_PUT`` frame or snapshot entry); the rest
is rebuilt at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..matching import TagMatch
from ..storage.formats import RouterPayload
from .config import RouterConfig


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
        """Copies carry ``meta._topics_router``: the key of an ``exactly_once`` router, the hop
        count of a router on a cycle."""
        return self.config.guarantee == "exactly_once" or self.on_cycle

    def payload(self) -> RouterPayload:
        """The durable part: definition and progress (a ``ROUTER_PUT`` frame, a snapshot entry)."""
        return RouterPayload(
            self.id,
            self.name,
            self.config.to_stored(),
            self.cursor,
            self.forwarded_total,
            self.source_trimmed,
        )
