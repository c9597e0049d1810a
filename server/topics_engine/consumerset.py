"""The named consumers of one topic (an extension, issue 25): each a cursor the server keeps for
a reader that names itself — the last seq it has read, as the exclusive ``from_seq`` of a diff.

A topic owns its :class:`ConsumerSet` (``Topic.consumers``), so a topic's consumers go with it:
a deleted topic's consumers are gone, a recreated topic starts with none, and no consumer can
outlive its topic — in the live engine, in recovery and in a snapshot alike. The operations
(create, commit, delete, the cap, what is logged) are ``topics_engine.consumers``; this module
only holds the state and finds a consumer.

Invariants: ``_names`` is the sorted list of ``_by_name``'s keys; a consumer's ``cursor`` is at
most the topic's ``head_seq`` when it was set (``consumers`` checks it; heads never go back).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import ConsumerNotFound, NoSuchConsumer


@dataclass(slots=True)
class Consumer:
    """One named consumer: its committed cursor (the last seq it has read; ``0`` before the
    topic's first record) and when the cursor was last set (by the ``PUT`` that created or
    repositioned it, or by a commit)."""

    name: str
    cursor: int
    committed_at_ms: int


class ConsumerSet:
    """A topic's consumers by name, and their names in order (pages list them sorted)."""

    __slots__ = ("_by_name", "_names")

    def __init__(self) -> None:
        self._by_name: dict[str, Consumer] = {}
        self._names: list[str] = []

    def __len__(self) -> int:
        return len(self._by_name)

    def get(self, name: str) -> Consumer | None:
        return self._by_name.get(name)

    def require(self, topic: str, name: str) -> Consumer:
        """The consumer ``name``; 404 ``consumer_not_found`` (saying how to create it) if absent."""
        consumer = self._by_name.get(name)
        if consumer is None:
            raise ConsumerNotFound(
                f'consumer "{name}" of topic "{topic}" does not exist; create it with '
                f"PUT /v0/topics/{topic}/consumers/{name}",
                {"topic": topic, "consumer": name},
            )
        return consumer

    def read_cursor(self, topic: str, name: str) -> int:
        """Consumer ``name``'s committed cursor, for a read on its behalf (a diff's or a watch
        entry's ``consumer``); 409 ``no_such_consumer`` (saying how to create it) if absent."""
        consumer = self._by_name.get(name)
        if consumer is None:
            raise NoSuchConsumer(
                f'topic "{topic}" has no consumer "{name}" to read for; create it with '
                f"PUT /v0/topics/{topic}/consumers/{name}",
                {"topic": topic, "consumer": name},
            )
        return consumer.cursor

    def set(self, name: str, cursor: int, at_ms: int) -> bool:
        """Set consumer ``name``'s cursor (creating it); True if it was created."""
        consumer = self._by_name.get(name)
        if consumer is not None:
            consumer.cursor, consumer.committed_at_ms = cursor, at_ms
            return False
        self._by_name[name] = Consumer(name, cursor, at_ms)
        bisect.insort(self._names, name)
        return True

    def remove(self, name: str) -> bool:
        """Forget consumer ``name``; False if there was none."""
        if self._by_name.pop(name, None) is None:
            return False
        del self._names[bisect.bisect_left(self._names, name)]
        return True

    def names(self) -> list[str]:
        """Every consumer name, sorted (do not modify)."""
        return self._names

    def __iter__(self) -> Iterator[Consumer]:
        """The consumers in name order."""
        by_name = self._by_name
        return (by_name[name] for name in self._names)
