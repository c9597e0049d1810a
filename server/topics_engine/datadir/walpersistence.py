"""Persistence through the write-ahead log: visibility and acknowledgements per durability
class (the table in ``topics_engine.persistence``).

For the classes acknowledged before durability (``ephemeral``, ``memory``, ``disk``) a
``SEQ_RESERVE`` frame, fsynced ahead of use, records how far seqs may have been handed out, so a
crash that loses the un-fsynced tail never leads to a seq being reused: after a crash the topic
resumes above its reservation (docs/DECISIONS.md, "Seqs are never reused"). The reservation is
kept as small as the ack path allows — enough for what the topic hands out in
:data:`RESERVE_HORIZON_S` (a fsync takes milliseconds), between :data:`RESERVE_MIN` and
:data:`RESERVE_MAX` seqs — so a quiet topic jumps by about a thousand seqs after a crash, a busy
one by what it writes in a tenth of a second. A topic created lazily by a write is an exception
(docs/DECISIONS.md, "Control-plane durability"): until its create frame is durable the topic
itself would not survive a crash, so its first writes do not wait for a reservation. Each
topic's reservation is a :class:`SeqReservation` kept here, by topic id, and changed nowhere else
(recovery's replayed values are handed over at construction; a checkpoint reads them).

Topic create/configure/delete frames are written for every class, and an explicit ``PUT`` or
``DELETE`` waits for its frame's fsync. Seq assignment and frame submission happen in the same
synchronous call, so the WAL holds frames in seq order and recovery never reorders, skips or
duplicates a seq.

Sealed records deleted since the last checkpoint are collected here (:meth:`take_flips`): the
checkpoint flips their on-disk delete flags in one pass per segment, and until then the durable
``DELETE`` frame is the witness (replay re-applies it), so an ack never pays a segment fsync.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..config import Durability
from ..errors import NotReady
from ..leases import LeaseEvent
from ..results import AckWait
from ..storage import formats
from ..storage.formats import RecordBatch
from ..storage.frames import FrameType
from ..storage.wal import Wal, WalFailed
from ..topic import Topic
from .sealing import holds_unlogged

RESERVE_MIN = 1 << 10
RESERVE_MAX = 1 << 16
RESERVE_HORIZON_S = 0.1
"""A reservation covers what the topic handed out in this long (at its recent rate)."""


@dataclass(slots=True)
class _ReserveRate:
    block: int = RESERVE_MIN
    since_seq: int = 0
    since_s: float = 0.0


@dataclass(slots=True)
class SeqReservation:
    """How far one topic's seqs are covered by ``SEQ_RESERVE`` frames (the classes acked before
    durability reserve; ``fsync`` topics keep what an earlier class reserved).

    Owned by :class:`WalPersistence`: only it changes a reservation (``_reserve``, and
    ``topic_put`` for a lazily created topic). Recovery does not touch one: it replays the
    frames into ``ReplayReport.reserved``, the values the persistence starts from.

    Invariants: ``durable <= submitted``; ``future`` is the durability of the frame that
    reserved ``submitted``."""

    submitted: int = 0
    """The highest seq a submitted ``SEQ_RESERVE`` frame covers (what a snapshot records: a
    checkpoint writes it only once the frames before its cut are durable)."""
    durable: int = 0
    """Seqs up to here are covered by a durable frame: a restart after a crash resumes above."""
    future: AckWait = None
    """Durability of the newest frame: what a write beyond ``durable`` waits for."""
    creation_durable: bool = True
    """False while the create frame of a topic created lazily by a write is not yet durable
    (docs/DECISIONS.md, "Control-plane durability"): its writes wait for no reservation then."""
    rate: _ReserveRate | None = None
    """How the next reservation is sized; from the topic's first reservation on."""


Seal = Callable[[Topic, int], None]
"""Called after records became visible on a topic, at a time: seals a segment if one is due."""


def read_only_error(error: BaseException | None) -> NotReady:
    """What a write gets once the WAL failed: 503 ``not_ready`` with ``wal_read_only`` — it does
    not clear until a restart, so it carries no retry hint (docs/DECISIONS.md, "WAL failure is fail-stop")."""
    return NotReady(
        f"writes are refused: the write-ahead log hit an I/O error ({error}) and is read-only; "
        "reads still work — fix the disk and restart the server",
        {"wal_read_only": True},
    )


Checkpoint = Callable[[], Awaitable[None]]
"""Takes a checkpoint now (``DataDirectory.checkpoint``): returns once its snapshot is durable."""


class WalPersistence:
    def __init__(
        self,
        wal: Wal,
        seal: Seal,
        reserved: dict[int, int] | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        """``reserved``: topic id -> the durable seq reservation recovery replayed.
        ``checkpoint``: what makes the records a topic wrote as ephemeral durable when its class
        turns durable (:meth:`topic_put`)."""
        self.wal = wal
        self._seal = seal
        self._checkpoint = checkpoint
        self._background: set[asyncio.Future[None]] = set()
        self._applying: dict[int, asyncio.Future[float]] = {}
        """Topic id -> the ack of its last write whose apply waits for its fsync (an ``fsync``
        write, or one queued behind such): a write that follows applies after it
        (:meth:`_after_earlier`)."""
        self._flips: dict[int, list[int]] = {}
        self._reservations = {tid: SeqReservation(seq, seq) for tid, seq in (reserved or {}).items()}
        self._unapplied: dict[int, None] = {}
        """LSNs of fsync-class frames submitted but not yet applied, in submission order."""

    def checkpoint_lsn(self) -> int:
        """The highest LSN a snapshot taken now may claim: below every unapplied frame."""
        for lsn in self._unapplied:
            return lsn - 1
        return self.wal.next_lsn - 1

    def reservation(self, topic: Topic) -> SeqReservation:
        """``topic``'s seq reservation (made, reserving nothing, on first use)."""
        reservation = self._reservations.get(topic.id)
        if reservation is None:
            reservation = self._reservations[topic.id] = SeqReservation()
        return reservation

    def reserved_seqs(self) -> dict[int, int]:
        """Topic id -> the highest seq its submitted ``SEQ_RESERVE`` frames cover (for a
        snapshot; a topic absent reserved nothing)."""
        return {tid: reservation.submitted for tid, reservation in self._reservations.items()}

    def check_writable(self) -> None:
        if self.wal.read_only:
            raise read_only_error(self.wal.failed)

    def mark(self) -> int:
        return self.wal.next_lsn

    def write_queued(self, since: int | None = None) -> None:
        if not self.wal.write_queued(since):
            raise read_only_error(self.wal.failed)

    def _submit(
        self,
        frame_type: FrameType,
        payload: bytes | list[bytes],
        *,
        wait: bool = False,
        on_durable: Callable[[], None] | None = None,
        applies: bool = True,
    ) -> AckWait:
        """Submit a frame; ``on_durable`` runs once it is durable. ``applies``: that callback
        makes the frame's effect visible (an ``fsync``-class mutation), so until it runs the
        frame is unapplied; ``False`` for bookkeeping callbacks (the state already holds the
        effect)."""
        try:
            lsn, future = self.wal.submit(frame_type, payload, wait=wait, on_durable=on_durable)
        except WalFailed:
            raise read_only_error(self.wal.failed) from None
        return self._track(lsn, future, on_durable if applies else None)

    def _track(self, lsn: int, future: AckWait, apply: Callable[[], None] | None) -> AckWait:
        """An ack future; a frame whose apply (``apply``) waits for durability is remembered as
        unapplied: a checkpoint's snapshot stays below it, so replay applies it. A frame whose
        effect the state already holds must not count: a snapshot below it would have replay
        apply it — and every later frame — a second time, over a state that already has them
        (an older config re-applied evicts what a later one kept)."""
        if future is None:
            return None
        if apply is not None:
            self._unapplied[lsn] = None
            future.add_done_callback(lambda _: self._unapplied.pop(lsn, None))
        return future

    def topic_put(self, topic: Topic, now_ms: int, *, lazy: bool = False) -> AckWait:
        payload = formats.encode_topic_put(
            formats.TopicPutPayload(
                now_ms, topic.id, topic.name, topic.config.to_stored(), topic.created_ms, topic.previous_head
            )
        )
        if lazy:
            reservation = self.reservation(topic)
            reservation.creation_durable = False

            def created() -> None:
                reservation.creation_durable = True

            wait = self._submit(FrameType.TOPIC_PUT, payload, on_durable=created, applies=False)
        else:
            wait = self._submit(FrameType.TOPIC_PUT, payload, wait=True)
        durability = topic.config.durability
        if durability is not Durability.FSYNC:
            self._reserve(topic, topic.reserved_seq)  # so the first write need not wait for one
        if lazy:
            return None
        if durability is not Durability.EPHEMERAL and self._checkpoint is not None and holds_unlogged(topic):
            return self._then_checkpoint(wait)
        return wait

    def _then_checkpoint(self, wait: AckWait) -> asyncio.Future[float]:
        """``wait``, then a checkpoint: the ack of a switch from ``ephemeral`` to a durable
        class, which answers once the records the topic wrote as ephemeral are sealed in a
        segment a durable snapshot lists (docs/DECISIONS.md, "Switching a topic's class").
        Fails with the read-only refusal if the checkpoint cannot be written."""
        checkpoint, wal = self._checkpoint, self.wal
        assert checkpoint is not None
        done: asyncio.Future[float] = wal.loop.create_future()

        def fail(err: BaseException | None) -> None:
            if not done.done():
                done.set_exception(err if isinstance(err, NotReady) else read_only_error(wal.failed or err))

        def checkpointed(ms: float, f: asyncio.Future[None]) -> None:
            err = None if f.cancelled() else f.exception()
            if f.cancelled() or err is not None or wal.read_only:
                fail(err)
            elif not done.done():
                done.set_result(ms)

        def durable(f: asyncio.Future[float] | None) -> None:
            if f is not None and (f.cancelled() or f.exception() is not None):
                fail(None if f.cancelled() else f.exception())
                return
            ms = 0.0 if f is None else f.result()
            task = asyncio.ensure_future(checkpoint(), loop=wal.loop)
            self._background.add(task)  # the loop keeps only a weak reference
            task.add_done_callback(self._background.discard)
            task.add_done_callback(lambda t: checkpointed(ms, t))

        if wait is None:
            durable(None)
        else:
            wait.add_done_callback(durable)
        return done

    def topic_delete(self, topic: Topic) -> AckWait:
        self._reservations.pop(topic.id, None)
        self._applying.pop(topic.id, None)
        payload = formats.encode_topic_delete(topic.id, topic.name, topic.reserved_seq)
        return self._submit(FrameType.TOPIC_DELETE, payload, wait=True)

    def append(self, topic: Topic, batch: RecordBatch, key: str | None, apply: Callable[[], None]) -> AckWait:
        durability = topic.config.durability
        earlier = self._earlier_apply(topic)
        if durability is Durability.FSYNC or (earlier is not None and durability is not Durability.EPHEMERAL):
            # visible once durable; behind an fsync write still waiting (the topic switched
            # class meanwhile), this one too, so the topic's writes apply in seq order
            return self._applying_until(topic, self._submit_append(topic, batch, key, on_durable=apply))
        # acked before it is durable: reserve the seqs first, so a crash that loses this write
        # cannot hand its seqs out again
        wait = self._reserve(topic, batch.last_seq)
        if durability is not Durability.EPHEMERAL:
            self._submit_append(topic, batch, key)
        if earlier is not None:
            return self._after_earlier(topic, earlier, apply)
        apply()
        return wait

    def _earlier_apply(self, topic: Topic) -> asyncio.Future[float] | None:
        """The ack of ``topic``'s last write still waiting to apply, if any."""
        earlier = self._applying.get(topic.id)
        if earlier is not None and earlier.done():
            del self._applying[topic.id]
            return None
        return earlier

    def _applying_until(self, topic: Topic, wait: AckWait) -> AckWait:
        """Note ``wait`` (an ack resolved once its write applied) as ``topic``'s last pending apply."""
        if wait is not None:
            self._applying[topic.id] = wait
        return wait

    def _after_earlier(
        self, topic: Topic, earlier: asyncio.Future[float], apply: Callable[[], None]
    ) -> asyncio.Future[float]:
        """An ``ephemeral`` write behind one still waiting for its fsync: applied, and acked,
        right after it (never before: its seqs are higher). Fails as the earlier one does."""
        done: asyncio.Future[float] = self.wal.loop.create_future()

        def run(prior: asyncio.Future[float]) -> None:
            if prior.cancelled() or prior.exception() is not None:
                done.set_exception(read_only_error(self.wal.failed))
                return
            apply()
            done.set_result(0.0)

        earlier.add_done_callback(run)
        self._applying[topic.id] = done
        return done

    def _submit_append(
        self, topic: Topic, batch: RecordBatch, key: str | None, on_durable: Callable[[], None] | None = None
    ) -> AckWait:
        head = formats.append_head(topic.id, key)
        try:
            lsn, future = self.wal.submit_batch(FrameType.APPEND, head, batch, on_durable=on_durable)
        except WalFailed:
            raise read_only_error(self.wal.failed) from None
        return self._track(lsn, future, on_durable)

    def forward(self, topic: Topic, last_seq: int, payload: bytes, apply: Callable[[], None]) -> None:
        durability = topic.config.durability
        earlier = self._earlier_apply(topic)
        if durability is Durability.FSYNC or (earlier is not None and durability is not Durability.EPHEMERAL):
            self._applying_until(topic, self._submit(FrameType.ROUTER, payload, on_durable=apply))
            return
        self._reserve(topic, last_seq)  # a crash losing this frame never reuses these seqs
        self._submit(FrameType.ROUTER, payload)
        if earlier is not None:
            self._after_earlier(topic, earlier, apply)
            return
        apply()

    def router_change(self, payload: bytes, wait: bool = True) -> AckWait:
        return self._submit(FrameType.ROUTER, payload, wait=wait)

    def schedule_change(self, payload: bytes, wait: bool = True) -> AckWait:
        return self._submit(FrameType.SCHEDULE, payload, wait=wait)

    def consumer_change(self, payload: bytes, wait: bool = True) -> AckWait:
        return self._submit(FrameType.CONSUMER, payload, wait=wait)

    def delete(self, topic: Topic, seqs: list[int], apply: Callable[[], None]) -> AckWait:
        durability = topic.config.durability
        if durability is Durability.EPHEMERAL:
            # the records it logged before it became ephemeral stay durable: so do their deletes
            logged = [seq for seq in seqs if seq <= max(topic.hot.sealed_upto, topic.hot.logged_upto)]
            if logged:
                self._submit(FrameType.DELETE, formats.encode_delete(topic.id, formats.to_ranges(logged)))
            apply()
            return None
        if not seqs:
            apply()
            return None
        payload = formats.encode_delete(topic.id, formats.to_ranges(seqs))
        if durability is Durability.FSYNC:
            return self._submit(FrameType.DELETE, payload, on_durable=apply)
        self._submit(FrameType.DELETE, payload)
        apply()
        return None

    def logs_leases(self, topic: Topic) -> bool:
        return topic.config.leases_durable and topic.config.durability is not Durability.EPHEMERAL

    def lease_events(self, topic: Topic, events: list[LeaseEvent], always: bool = False) -> AckWait:
        durability = topic.config.durability
        if not events or durability is Durability.EPHEMERAL or not (always or topic.config.leases_durable):
            return None
        payload = formats.encode_lease(topic.id, [e.to_row() for e in events])
        return self._submit(FrameType.LEASE, payload, wait=durability is Durability.FSYNC)

    def when_durable(self, topic: Topic, callback: Callable[[], None]) -> None:
        if topic.config.durability in (Durability.DISK, Durability.MEMORY):
            self.wal.after_sync(self.wal.next_lsn - 1, callback)
        else:
            callback()

    def strong_head(self, topic: Topic, durable_seq: int) -> int:
        if topic.config.durability in (Durability.DISK, Durability.MEMORY):
            return min(topic.head_seq, durable_seq)
        return topic.head_seq

    def applied(self, topic: Topic, now_ms: int) -> None:
        self._seal(topic, now_ms)

    def deleted(self, topic: Topic, seqs: list[int]) -> None:
        upto = topic.hot.sealed_upto
        sealed = [seq for seq in seqs if seq <= upto]
        if sealed:  # an ephemeral topic's too: records it logged before it became ephemeral
            self._flips.setdefault(topic.id, []).extend(sealed)

    def take_flips(self) -> dict[int, list[int]]:
        """The sealed deletes since the last call (topic id -> seqs), for a checkpoint."""
        flips, self._flips = self._flips, {}
        return flips

    def clean_stop(self, heads: dict[int, int]) -> None:
        """The last frame of a clean shutdown: the exact heads of ephemeral topics."""
        self.wal.submit(FrameType.CLEAN_STOP, formats.encode_clean_stop(heads))

    def _reserve(self, topic: Topic, last_seq: int) -> AckWait:
        """Keep the durable seq reservation of a topic whose writes are acked before they are
        durable ahead of use, so a restart resumes above every seq that may have been handed
        out — even when the un-fsynced tail was lost. The next reservation is submitted when a
        quarter of the current one is used, so it is durable long before it is needed; only a
        batch that outruns it waits for the new reservation's fsync before it is acked."""
        r = self.reservation(topic)
        rate = r.rate
        if rate is None:
            rate = r.rate = _ReserveRate(since_seq=last_seq, since_s=time.monotonic())
        if last_seq + rate.block * 3 // 4 >= r.submitted:
            rate.block = self._next_block(rate, last_seq)
            reserved = r.submitted = last_seq + rate.block

            def durable() -> None:
                r.durable = max(r.durable, reserved)

            payload = formats.encode_seq_reserve(topic.id, reserved)
            r.future = self._submit(FrameType.SEQ_RESERVE, payload, on_durable=durable, applies=False)
        if last_seq > r.durable and r.creation_durable:
            return r.future
        return None

    @staticmethod
    def _next_block(rate: _ReserveRate, last_seq: int) -> int:
        """Size a reservation for the seqs the topic hands out in ``RESERVE_HORIZON_S``."""
        now = time.monotonic()
        elapsed = now - rate.since_s
        used = last_seq - rate.since_seq
        rate.since_seq, rate.since_s = last_seq, now
        wanted = used / elapsed * RESERVE_HORIZON_S if elapsed > 0 else RESERVE_MAX
        block = RESERVE_MIN
        while block < wanted and block < RESERVE_MAX:
            block <<= 1
        return block
