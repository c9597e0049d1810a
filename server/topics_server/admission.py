"""The concurrency caps: long-lived streams (SSE GETs and WebSockets — instance-wide and per
key) and requests in flight per key.

Every admitted unit is a :class:`Slot` the caller holds for the request's or the stream's
lifetime. Releasing is idempotent, and a slot that is dropped without being released (an exit
path nobody foresaw: a task cancelled before it started, a reply never sent) releases itself
when it is garbage-collected — so capacity can never leak. Invariant: each counter equals the
number of live, unreleased slots of its kind. Per-key caps apply only with auth on (there is a
key to attribute use to); streams count against the stream caps, never the in-flight cap.
"""

from __future__ import annotations

from collections.abc import Callable

from topics_engine.errors import cap_reached

from .auth import Principal
from .settings import Caps


class Slot:
    """One unit of a capped resource, held until :meth:`release`."""

    __slots__ = ("_release",)

    def __init__(self, release: Callable[[], None]) -> None:
        self._release: Callable[[], None] | None = release

    def release(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            release()

    def __del__(self) -> None:
        self.release()


class Admission:
    """The live counts behind the stream and in-flight caps."""

    def __init__(self, caps: Caps) -> None:
        self.caps = caps
        self.sse_connections = 0
        """Open SSE streams and WebSockets (metrics: ``topics_sse_connections``)."""
        self.streams_by_key: dict[int, int] = {}
        self.inflight_by_key: dict[int, int] = {}

    def open_stream(self, principal: Principal | None) -> Slot:
        """A stream slot, or 429 ``throttled`` naming the cap that is full."""
        caps = self.caps
        if caps.max_sse_connections and self.sse_connections >= caps.max_sse_connections:
            raise cap_reached("max_sse_connections", caps.max_sse_connections, "too many open streams")
        key = principal.key_id if principal is not None else None
        if key is not None:
            held = self.streams_by_key.get(key, 0)
            if caps.max_sse_connections_per_key and held >= caps.max_sse_connections_per_key:
                raise cap_reached(
                    "max_sse_connections_per_key",
                    caps.max_sse_connections_per_key,
                    f"{principal.label} has too many open streams",  # type: ignore[union-attr]
                )
            self.streams_by_key[key] = held + 1
        self.sse_connections += 1
        return Slot(lambda: self._close_stream(key))

    def _close_stream(self, key: int | None) -> None:
        self.sse_connections -= 1
        if key is not None:
            _decrement(self.streams_by_key, key)

    def begin_request(self, principal: Principal) -> Slot:
        """An in-flight slot for ``principal``'s request, or 429 ``throttled``."""
        key, cap = principal.key_id, self.caps.max_inflight_per_key
        held = self.inflight_by_key.get(key, 0)
        if cap and held >= cap:
            raise cap_reached(
                "max_inflight_per_key", cap, f"{principal.label} has too many requests in flight"
            )
        self.inflight_by_key[key] = held + 1
        return Slot(lambda: _decrement(self.inflight_by_key, key))

    @property
    def inflight(self) -> int:
        return sum(self.inflight_by_key.values())


def _decrement(counts: dict[int, int], key: int) -> None:
    left = counts[key] - 1
    if left:
        counts[key] = left
    else:
        del counts[key]
