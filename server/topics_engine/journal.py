"""How engine mutations reach storage, per durability class (§0.10).

The engine decides every mutation synchronously and hands it to a journal, which either makes
it visible now or defers visibility until it is durable:

=============  ==========================  =================================================
class          records (append / delete)   ack
=============  ==========================  =================================================
``ephemeral``  never written                at once
``memory``     WAL frame, visible at once  at once (best effort, like ``disk``)
``disk``       WAL frame, visible at once  at once; group-committed shortly after
``fsync``      WAL frame, visible only     after the group fsync (``fsync_ms`` real)
               once fsynced
=============  ==========================  =================================================

For the classes acked before durability (``ephemeral``, ``memory``, ``disk``) a
``SEQ_RESERVE`` frame, fsynced ahead of use, records how far seqs may have been handed out, so
a crash that loses the un-fsynced tail never leads to a seq being reused.

Topic create/configure/delete frames are written for every class and the control-plane call
waits for their fsync. Seq assignment and frame submission happen in the same synchronous call,
so the WAL holds frames in seq order and recovery never reorders, skips or duplicates a seq.

:class:`MemoryJournal` applies everything at once and writes nothing (the in-memory engine used
by unit tests and by ``TOPICS_DATA_DIR``-less embedding).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import orjson

from .config import Durability
from .errors import NotReady
from .queue import LeaseEvent
from .records import PreparedRecord, Record
from .storage.frames import FrameType, encode_append, encode_delete, encode_pair, to_ranges
from .storage.segments import SegmentStore
from .storage.wal import Wal, WalFailed
from .topic import Topic

if TYPE_CHECKING:
    from .checkpoint import Checkpointer

Durable = asyncio.Future[float] | None
"""Resolves with the fsync milliseconds once durable; ``None`` when the ack needs no wait."""

SEQ_RESERVE_BLOCK = 1 << 16


class Journal(Protocol):
    def check_writable(self) -> None: ...

    def topic_put(self, topic: Topic, now_ms: int) -> Durable: ...

    def topic_delete(self, topic: Topic) -> Durable: ...

    def append(
        self,
        topic: Topic,
        batch: list[PreparedRecord],
        records: list[Record],
        key: str | None,
        apply: Callable[[], None],
    ) -> Durable: ...

    def delete(self, topic: Topic, seqs: list[int], apply: Callable[[], None]) -> Durable: ...

    def lease_events(self, topic: Topic, events: list[LeaseEvent], always: bool = False) -> Durable:
        """Queue lease-log events: journaled for ``leases_durable`` queues (or ``always``)."""

    def applied(self, topic: Topic, now_ms: int) -> None:
        """Records just became visible on ``topic`` (a chance to seal a segment)."""

    def deleted(self, topic: Topic, seqs: list[int]) -> None:
        """``seqs`` were just deleted from ``topic`` (sealed ones get their on-disk flag)."""


class MemoryJournal:
    """No storage: every change is visible and acknowledged at once."""

    def check_writable(self) -> None:
        return None

    def topic_put(self, topic: Topic, now_ms: int) -> Durable:
        return None

    def topic_delete(self, topic: Topic) -> Durable:
        return None

    def append(
        self,
        topic: Topic,
        batch: list[PreparedRecord],
        records: list[Record],
        key: str | None,
        apply: Callable[[], None],
    ) -> Durable:
        apply()
        return None

    def delete(self, topic: Topic, seqs: list[int], apply: Callable[[], None]) -> Durable:
        apply()
        return None

    def lease_events(self, topic: Topic, events: list[LeaseEvent], always: bool = False) -> Durable:
        return None

    def applied(self, topic: Topic, now_ms: int) -> None:
        return None

    def deleted(self, topic: Topic, seqs: list[int]) -> None:
        return None


def topic_put_payload(topic: Topic, ts: int) -> bytes:
    return orjson.dumps(
        {
            "ts": ts,
            "id": topic.id,
            "name": topic.name,
            "config": topic.config.to_wire(),
            "created_ms": topic.created_ms,
            "previous_head": topic.previous_head,
        }
    )


class WalJournal:
    """Writes through a :class:`Wal`; visibility and acks per durability class."""

    def __init__(self, wal: Wal, segments: SegmentStore) -> None:
        self.wal = wal
        wal.error_for = self._error_for
        self.segments = segments
        self.checkpointer: Checkpointer | None = None
        self._flips: dict[int, list[int]] = {}
        self._unapplied: dict[int, None] = {}
        """LSNs of fsync-class frames submitted but not yet applied, in submission order."""

    def checkpoint_lsn(self) -> int:
        """The highest LSN a snapshot taken now may claim: below every unapplied frame."""
        for lsn in self._unapplied:
            return lsn - 1
        return self.wal.next_lsn - 1

    def _error_for(self, error: BaseException) -> BaseException:
        """A write that was waiting when the WAL failed: 503 ``not_ready``, like later writes."""
        try:
            self.check_writable()
        except NotReady as not_ready:
            return not_ready
        return WalFailed(f"write-ahead log I/O error: {error}")

    def check_writable(self) -> None:
        if self.wal.read_only:
            raise NotReady(
                f"writes are refused: the write-ahead log hit an I/O error ({self.wal.failed}) "
                "and is read-only; reads still work — fix the disk and restart the server",
                {"wal_read_only": True, "retry_after_ms": 5000},
            )

    def _submit(
        self,
        frame_type: FrameType,
        payload: bytes,
        *,
        wait: bool = False,
        on_durable: Callable[[], None] | None = None,
    ) -> Durable:
        try:
            lsn, future = self.wal.submit(frame_type, payload, wait=wait, on_durable=on_durable)
        except WalFailed:
            self.check_writable()
            raise
        if future is None:
            return None
        if on_durable is not None:
            self._unapplied[lsn] = None
            future.add_done_callback(lambda _: self._unapplied.pop(lsn, None))
        return future

    def topic_put(self, topic: Topic, now_ms: int) -> Durable:
        durable = self._submit(FrameType.TOPIC_PUT, topic_put_payload(topic, now_ms), wait=True)
        if topic.config.durability is not Durability.FSYNC:
            self._reserve(topic, topic.reserved_seq)  # so the first write need not wait for one
        return durable

    def topic_delete(self, topic: Topic) -> Durable:
        payload = orjson.dumps({"id": topic.id, "name": topic.name, "head": topic.reserved_seq})
        return self._submit(FrameType.TOPIC_DELETE, payload, wait=True)

    def append(
        self,
        topic: Topic,
        batch: list[PreparedRecord],
        records: list[Record],
        key: str | None,
        apply: Callable[[], None],
    ) -> Durable:
        durability = topic.config.durability
        if durability is Durability.FSYNC:
            payload = encode_append(topic.id, records[0].seq, records[0].ts, batch, key)
            return self._submit(FrameType.APPEND, payload, on_durable=apply)
        # acked before it is durable: reserve the seqs first, so a crash that loses this write
        # cannot hand its seqs out again
        durable = self._reserve(topic, records[-1].seq)
        if durability is not Durability.EPHEMERAL:
            payload = encode_append(topic.id, records[0].seq, records[0].ts, batch, key)
            self._submit(FrameType.APPEND, payload)
        apply()
        return durable

    def delete(self, topic: Topic, seqs: list[int], apply: Callable[[], None]) -> Durable:
        durability = topic.config.durability
        if durability is Durability.EPHEMERAL or not seqs:
            apply()
            return None
        payload = encode_delete(topic.id, to_ranges(seqs))
        if durability is Durability.FSYNC:
            return self._submit(FrameType.DELETE, payload, on_durable=apply)
        self._submit(FrameType.DELETE, payload)
        apply()
        return None

    def lease_events(self, topic: Topic, events: list[LeaseEvent], always: bool = False) -> Durable:
        durability = topic.config.durability
        if not events or durability is Durability.EPHEMERAL or not (always or topic.config.leases_durable):
            return None
        payload = orjson.dumps({"topic": topic.id, "events": [e.to_row() for e in events]})
        return self._submit(FrameType.LEASE, payload, wait=durability is Durability.FSYNC)

    def applied(self, topic: Topic, now_ms: int) -> None:
        if self.checkpointer is not None:
            self.checkpointer.maybe_seal(topic, now_ms)

    def deleted(self, topic: Topic, seqs: list[int]) -> None:
        """Sealed records' delete flags are flipped at the next checkpoint, in one pass per
        segment: until that checkpoint trims the WAL, the durable ``DELETE`` frame is the
        witness (replay re-applies it), so an ack or delete never pays a segment fsync."""
        sealed = [seq for seq in seqs if seq <= topic.sealed_upto]
        if sealed and topic.config.durability is not Durability.EPHEMERAL:
            self._flips.setdefault(topic.id, []).extend(sealed)

    def take_flips(self) -> dict[int, list[int]]:
        """The sealed deletes since the last call (topic id -> seqs), for a checkpoint."""
        flips, self._flips = self._flips, {}
        return flips

    def _reserve(self, topic: Topic, last_seq: int) -> Durable:
        """Keep the durable seq reservation of a topic whose writes are acked before they are
        durable (``ephemeral``, ``memory``, ``disk``) a block ahead of use, so a restart
        resumes above every seq that may have been handed out — even when the un-fsynced tail
        was lost. The next block is reserved when a quarter of the current one is used, so it
        is durable long before it is needed (48k seqs of headroom); only a batch that outruns
        it waits for the new reservation's fsync before it is acked."""
        if last_seq + SEQ_RESERVE_BLOCK * 3 // 4 >= topic.seq_reserved_submitted:
            reserved = last_seq + SEQ_RESERVE_BLOCK
            topic.seq_reserved_submitted = reserved

            def durable() -> None:
                topic.seq_reserved_durable = max(topic.seq_reserved_durable, reserved)

            payload = encode_pair(topic.id, reserved)
            topic.reservation = self._submit(FrameType.SEQ_RESERVE, payload, on_durable=durable)
        if last_seq > topic.seq_reserved_durable:
            reservation: Durable = topic.reservation
            return reservation
        return None
