"""Routers: durable, asynchronous forwarding of every record appended to a ``source``
topic into a ``dest`` topic.

One concept per module, lowest first:

- ``config`` — a ``PUT`` body parsed into a :class:`RouterConfig`, a stored record read back
  tolerantly (:func:`stored_router_config`); router names.
- ``router`` — :class:`Router`: one router's config, durable progress (its cursor) and
  forwarding state.
- ``copies`` — what a copy is: :func:`derive` (deterministic, so replay re-derives the copies
  from the source records) and the ``meta._topics_router`` stamp — the key of ``exactly_once``
  routers, the hop count of routers on a cycle.
- ``graph`` — the routes as a graph of topic names: the fan-in rule (a dest has a single
  source) and the cycle rule (only with ``allow_cycle``).
- ``forwarding`` — :class:`Forwarder`, the pump: off the source's write path, one step per due
  router in turn, one ``ROUTER`` WAL frame per step naming what was copied (never the copies'
  bytes); backoff of refused steps; ``source_trim`` markers.
- ``registry`` — :class:`Routers`: put/get/delete/list, WAL replay (``apply_*``) and snapshot
  images.

The names other modules use are re-exported here: import them from ``topics_engine.routers``.
"""

from .config import GUARANTEES, RouterConfig, check_router_name, parse_router_config, stored_router_config
from .copies import HOP_CAP, KEY_LOOKBACK, STAMP, derive, hops_of, newest_key
from .forwarding import FORWARD_BATCH, RETRY_MS, Forwarder
from .registry import RouterDeleted, RouterPage, RouterPut, Routers, RouterState
from .router import Router

__all__ = [
    "FORWARD_BATCH",
    "GUARANTEES",
    "HOP_CAP",
    "KEY_LOOKBACK",
    "RETRY_MS",
    "STAMP",
    "Forwarder",
    "Router",
    "RouterConfig",
    "RouterDeleted",
    "RouterPage",
    "RouterPut",
    "RouterState",
    "Routers",
    "check_router_name",
    "derive",
    "hops_of",
    "newest_key",
    "parse_router_config",
    "stored_router_config",
]
