"""Decoded subscription requests (a ``POST /v0/watch`` body, a WebSocket ``subscribe``) as the
watch engine's options and start positions: one reading of the fields for both — and the one
lagging hook both streams give their :class:`StreamLoop`, and how many records a read delivers."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
from topics_engine.errors import InvalidRequest
from topics_engine.watch import RecordsEvent, Step, Subscription, TopicStart, WatchOptions

from .bodies import opt


def watch_options(body: Any, max_limit: int) -> WatchOptions:
    """The stream options of a decoded ``WatchRequest`` (or WebSocket ``subscribe``)."""
    return WatchOptions.resolve(
        max_limit,
        node=opt(body.node),
        limit=opt(body.limit),
        max_batch_bytes=opt(body.max_batch_bytes),
        heartbeat_ms=opt(getattr(body, "heartbeat_ms", msgspec.UNSET)),
        include_meta=opt(body.include_meta),
        include_tags=opt(body.include_tags),
        include_data=opt(body.include_data),
        consistency=opt(getattr(body, "consistency", msgspec.UNSET)),
    )


def topic_starts(topics: dict[str, Any]) -> dict[str, TopicStart]:
    """``{name: WatchTopicOptions}`` -> where each topic starts. A ``consumer`` excludes
    ``from_seq``, ``tail`` and ``from_ts`` (the spec says so for a watch entry; a WebSocket
    ``subscribe`` of one ``topic`` is checked here)."""
    return {name: _start(name, spec) for name, spec in topics.items()}


def _start(name: str, spec: Any) -> TopicStart:
    consumer = opt(getattr(spec, "consumer", msgspec.UNSET))
    if consumer is not None:
        for other in ("from_seq", "tail", "from_ts"):
            if opt(getattr(spec, other)) is not None:
                raise InvalidRequest(
                    f"{other}: `consumer` and `{other}` exclude each other: the watch of {name!r} "
                    "starts after the consumer's committed cursor",
                    {"field": other},
                )
        return TopicStart(consumer=consumer)
    return TopicStart(opt(spec.from_seq) or 0, bool(opt(spec.tail)), opt(spec.from_ts))


def positions_body(sub: Subscription) -> dict[str, dict[str, int]]:
    """Each watched topic's resolved start and watermarks (``POST /v0/watch``, ``subscribed``)."""
    return {
        name: {"from_seq": p.from_seq, "head_seq": p.topic.head_seq, "earliest_seq": p.topic.earliest_seq}
        for name, p in sub.positions.items()
    }


def lagged(subs: Iterable[Subscription]) -> None:
    """The lagging hook of the watch stream and the WebSocket: the client stayed blocked
    past the grace period, so a loss each position meets on its next read is reported as
    ``from_seq_too_old`` — as after a reconnect — not silently skipped."""
    for sub in subs:
        for position in sub.positions.values():
            position.fresh = True


def records_in(step: Step) -> int:
    """The records a read delivers (``topics_records_pushed_total``)."""
    n = 0
    for ev in step.events:
        if isinstance(ev, RecordsEvent):
            n += ev.count
    return n
