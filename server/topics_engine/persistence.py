"""The seam between engine decisions and storage: how a mutation is persisted, and when it
becomes visible and may be acknowledged, per durability class (the topic config's ``durability``).

The engine decides every mutation synchronously, then hands it to its :class:`Persistence`,
which either applies it at once or defers the apply until the mutation is durable:

=============  ==========================  =================================================
class          records (append / delete)   acknowledgement
=============  ==========================  =================================================
``ephemeral``  never written                at once
``memory``     logged, visible at once      at once (best effort, like ``disk``)
``disk``       logged, visible at once      at once; group-committed shortly after
``fsync``      logged, visible only once    after the group fsync (``fsync_ms`` real)
               durable
=============  ==========================  =================================================

An operation returns an :data:`AckWait`: ``None`` when the acknowledgement need not wait, or a
future resolved with the fsync milliseconds once the mutation is durable (failed with
``NotReady`` if storage failed). Two implementations: :class:`InMemory` here (nothing is
stored; everything is visible and acknowledged at once — unit tests and embedding without a
data directory) and ``datadir.walpersistence.WalPersistence`` (the write-ahead log).

This module imports nothing that imports it back: the engine depends on the protocol, storage
implementations depend on the engine's model, never the other way round.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from .leases import LeaseEvent
from .results import AckWait
from .storage.formats import RecordBatch
from .topic import Topic


class Persistence(Protocol):
    def check_writable(self) -> None:
        """Raise ``NotReady`` if nothing can be persisted now (a read-only write-ahead log)."""

    def mark(self) -> int:
        """Where the log stands: what is submitted from now on comes after it (the ``since``
        of :meth:`write_queued`)."""

    def write_queued(self, since: int | None = None) -> None:
        """Write what was submitted and not yet written, now: called before an answer that
        acknowledges it leaves (a ``disk`` write is acknowledged once its bytes are in the page
        cache, so a process crash cannot take it back). Raises ``NotReady`` if what was
        submitted after :meth:`mark` returned ``since`` (default: what is queued now) is not
        written: the answer must be a refusal, not an acknowledgement. A failed write of
        frames submitted before ``since`` is not this answer's (a read stays a read)."""

    def topic_put(self, topic: Topic, now_ms: int, *, lazy: bool = False) -> AckWait:
        """A topic was created or reconfigured. ``lazy``: created by a write, whose ack follows
        its own class rather than waiting for the create to be durable (docs/DECISIONS.md,
        "Control-plane durability")."""

    def topic_delete(self, topic: Topic) -> AckWait: ...

    def append(self, topic: Topic, batch: RecordBatch, key: str | None, apply: Callable[[], None]) -> AckWait:
        """Persist a planned ``batch`` (seqs and ``$ts`` assigned, records encoded) and run
        ``apply`` to make it visible — now, or once durable for the ``fsync`` class."""

    def forward(self, topic: Topic, last_seq: int, payload: bytes, apply: Callable[[], None]) -> None:
        """Log a router's forwarding step into ``topic`` (a ``ROUTER`` frame: the copies are
        derived, their bytes not logged) whose seqs end at ``last_seq``, and run ``apply`` —
        now, or once durable for the ``fsync`` class. Nobody waits for it."""

    def router_change(self, payload: bytes, wait: bool = True) -> AckWait:
        """Log a router's creation, reconfiguration, removal or progress; with ``wait`` the
        future resolves once durable."""

    def schedule_change(self, payload: bytes, wait: bool = True) -> AckWait:
        """Log a schedule's creation, reconfiguration, removal or run (a ``SCHEDULE`` frame);
        with ``wait`` the future resolves once durable."""

    def consumer_change(self, payload: bytes, wait: bool = True) -> AckWait:
        """Log a named consumer's creation, commit, repositioning or removal (a ``CONSUMER``
        frame, for a topic of any class); with ``wait`` the future resolves once durable."""

    def delete(self, topic: Topic, seqs: list[int], apply: Callable[[], None]) -> AckWait:
        """Persist the permanent delete of live ``seqs`` and run ``apply`` (now, or once durable)."""

    def logs_leases(self, topic: Topic) -> bool:
        """Whether lease changes of this queue are journaled (``leases_durable`` on a class that
        logs at all): callers build :class:`LeaseEvent` s only then."""

    def lease_events(self, topic: Topic, events: list[LeaseEvent], always: bool = False) -> AckWait:
        """Journal lease-log events: those of a queue that :meth:`logs_leases` (or ``always``:
        dead-letter counters)."""

    def when_durable(self, topic: Topic, callback: Callable[[], None]) -> None:
        """Call ``callback`` once everything submitted for ``topic`` so far is durable — riding
        the group commit, never hastening it. At once for classes whose visible records are
        all there is (``fsync``: visible only once durable; ``ephemeral``: never durable)."""

    def strong_head(self, topic: Topic, durable_seq: int) -> int:
        """The highest seq a ``consistency: "strong"`` reader may see, every seq up to
        ``durable_seq`` being known durable (the engine tracks it): the durable prefix for
        ``disk``/``memory``, the head for the other classes (docs/DECISIONS.md, "Strong watches")."""

    def applied(self, topic: Topic, now_ms: int) -> None:
        """Records just became visible on ``topic`` (a chance to seal a segment)."""

    def deleted(self, topic: Topic, seqs: list[int]) -> None:
        """``seqs`` were just deleted from ``topic`` (sealed ones get their on-disk flag)."""


class InMemory:
    """No storage: every change is visible and acknowledged at once."""

    def check_writable(self) -> None:
        return None

    def mark(self) -> int:
        return 0

    def write_queued(self, since: int | None = None) -> None:
        return None

    def topic_put(self, topic: Topic, now_ms: int, *, lazy: bool = False) -> AckWait:
        return None

    def topic_delete(self, topic: Topic) -> AckWait:
        return None

    def append(self, topic: Topic, batch: RecordBatch, key: str | None, apply: Callable[[], None]) -> AckWait:
        apply()
        return None

    def delete(self, topic: Topic, seqs: list[int], apply: Callable[[], None]) -> AckWait:
        apply()
        return None

    def forward(self, topic: Topic, last_seq: int, payload: bytes, apply: Callable[[], None]) -> None:
        apply()

    def router_change(self, payload: bytes, wait: bool = True) -> AckWait:
        return None

    def schedule_change(self, payload: bytes, wait: bool = True) -> AckWait:
        return None

    def consumer_change(self, payload: bytes, wait: bool = True) -> AckWait:
        return None

    def logs_leases(self, topic: Topic) -> bool:
        return False

    def when_durable(self, topic: Topic, callback: Callable[[], None]) -> None:
        callback()

    def strong_head(self, topic: Topic, durable_seq: int) -> int:
        return topic.head_seq

    def lease_events(self, topic: Topic, events: list[LeaseEvent], always: bool = False) -> AckWait:
        return None

    def applied(self, topic: Topic, now_ms: int) -> None:
        return None

    def deleted(self, topic: Topic, seqs: list[int]) -> None:
        return None
