"""The per-process server context handlers receive: the engine and the features composed over
it (queues, routers, schedules, named consumers, watch sessions, the frame cache streams share), its data
directory, and the process lifecycle (recovering -> ready -> shutting down)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from dataclasses import dataclass, field
from importlib import metadata

from topics_engine import Engine, Queues
from topics_engine.consumers import Consumers
from topics_engine.datadir import CacheView, DataDirectory, WalView
from topics_engine.routers import Routers
from topics_engine.schedules import Schedules
from topics_engine.watch import Watches

from .accounting import RequestStats
from .admission import Admission
from .bodies import decode_records
from .settings import Caps
from .throttle import Throttle, monitor
from .watchframes import FrameCache

VERSION = metadata.version("topics")
"""The installed package's version (pyproject.toml): ``/v0/health``, ``topics version``."""

log = logging.getLogger("topics.server")
FREEZE_INTERVAL_S = 0.5


def freeze_long_lived() -> None:
    """Collect garbage, then freeze every surviving object out of future collections.

    Stored data is long-lived and acyclic, but CPython's cyclic collector would otherwise walk
    all of it on every full collection. Records live in chunk buffers now, not one object each,
    yet every stored batch still keeps ~4 tracked objects (its ``_Chunk``, ``RecordBatch`` and
    arrays), besides the interpreter's own ~68k: measured with ``bench/gc_policy.py``
    (docs/BENCHMARKS.md, "The cyclic collector"), 108k tracked objects at 1M recovered records
    and 190k at 3M, a full collection 85–150 ms of CPU — and without freezing, batched appends
    trigger one every ~20 s. Freezing right after a collection keeps only what was allocated
    since the last freeze in the collector's generations (every pause ≤ ~5 ms there); data is
    still freed normally by reference counting when evicted or deleted. Cycles alive at a
    freeze that die later are left to :class:`Freezer`'s sweeps.
    """
    gc.collect()
    gc.freeze()


SWEEP_MIN_INTERVAL_S = 60.0
SWEEP_MAX_INTERVAL_S = 600.0
SWEEP_PAUSE_RATIO = 1000.0


class Freezer:
    """Freezes long-lived objects every ``FREEZE_INTERVAL_S`` and sweeps what froze and died since.

    A freeze keeps in the collector's generations only what was allocated since the last one,
    so cycles alive at a freeze that die later are never collected by it: a client connection's
    protocol and its parser, a stream's task and futures, an exception and its traceback — each
    connection that outlives a freeze left a few KiB behind for good (a soak with clients
    connecting and dropping grew ~60 MB an hour at constant data). A *sweep* unfreezes
    everything, runs a full collection and freezes again: it frees those cycles, in a pause
    proportional to every live object. Sweeps are spaced ``SWEEP_PAUSE_RATIO`` times the CPU
    time the last one took on the event loop's thread apart (so they take at most ~0.1 % of
    it; CPU time, not wall time, so a machine busy with other work does not stretch the
    spacing), and at least ``SWEEP_MIN_INTERVAL_S`` and at most ``SWEEP_MAX_INTERVAL_S``.
    """

    def __init__(self, now: float) -> None:
        self.next_sweep = now + SWEEP_MIN_INTERVAL_S
        self.sweeps = 0
        self.last_pause_s = 0.0
        self.last_cpu_s = 0.0
        self.last_freed = 0

    def tick(self, now: float) -> None:
        if now >= self.next_sweep:
            self.sweep(now)
        else:
            freeze_long_lived()

    def sweep(self, now: float) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        gc.unfreeze()
        self.last_freed = gc.collect()
        gc.freeze()
        self.last_pause_s = time.perf_counter() - started
        self.last_cpu_s = time.thread_time() - cpu
        self.sweeps += 1
        interval = SWEEP_PAUSE_RATIO * self.last_cpu_s
        self.next_sweep = now + min(SWEEP_MAX_INTERVAL_S, max(SWEEP_MIN_INTERVAL_S, interval))
        log.debug(
            "gc sweep: %d objects freed in %.1f ms (%.1f ms CPU), %d frozen",
            self.last_freed,
            self.last_pause_s * 1000,
            self.last_cpu_s * 1000,
            gc.get_freeze_count(),
        )


@dataclass
class ServerContext:
    engine: Engine
    datadir: DataDirectory | None = None
    max_watch_topics: int = 256
    caps: Caps = field(default_factory=Caps)
    throttle_enabled: bool = True
    monitor_pressure: bool = False
    """Sample the event loop's lag for the throttle (a server on the system clock; tests on a
    manual clock feed :class:`Throttle` themselves)."""
    queues: Queues = field(init=False)
    routers: Routers = field(init=False)
    schedules: Schedules = field(init=False)
    consumers: Consumers = field(init=False)
    watches: Watches = field(init=False)
    frames: FrameCache = field(init=False)
    admission: Admission = field(init=False)
    throttle: Throttle = field(init=False)
    requests: RequestStats = field(default_factory=RequestStats)
    """What the server counted about the requests it served (``accounting``)."""
    started: float = field(default_factory=time.monotonic)
    ready: bool = False
    replay_progress: float = 0.0
    shutting_down: bool = False
    checkpoint_interval_s: float = 1.0
    _recovery: asyncio.Task[None] | None = None
    _recovery_work: asyncio.Future[None] | None = None
    """Recovery's worker thread: a stop waits for it before the data directory is unlocked."""
    _checkpoints: asyncio.Task[None] | None = None
    _freezer: asyncio.Task[None] | None = None
    _monitor: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self.queues = Queues(self.engine)
        self.routers = Routers(self.engine, max_routers=self.caps.max_routers)
        self.schedules = Schedules(self.engine, decode=decode_records, max_schedules=self.caps.max_schedules)
        self.consumers = Consumers(self.engine, max_consumers=self.caps.max_consumers)
        self.watches = Watches(self.engine, self.max_watch_topics, max_sessions=self.caps.max_watch_sessions)
        self.frames = FrameCache()
        self.admission = Admission(self.caps)
        self.throttle = Throttle(self.engine.clock, self.throttle_enabled)

    def cache_view(self) -> CacheView:
        """The cold-record cache and cold reads (zeros in memory)."""
        return self.datadir.cache_view() if self.datadir is not None else CacheView.of(None)

    def wal_view(self) -> WalView:
        """The write-ahead log's counters and state (zeros in memory and until the data
        directory is open)."""
        return self.datadir.wal_view() if self.datadir is not None else WalView.of(None)

    @property
    def wal_read_only(self) -> bool:
        return self.wal_view().read_only

    def _wal_depth(self) -> int:
        return self.wal_view().queue_depth

    @property
    def uptime_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    async def start(self) -> None:
        """Lock the data directory and start recovery in the background; without a store the
        (in-memory) engine is ready at once."""
        if self.monitor_pressure and self.throttle_enabled:
            self._monitor = asyncio.create_task(monitor(self.throttle, self._wal_depth))
        if self.datadir is None:
            self.ready = True
            self.routers.start()
            self.schedules.start()
            return
        self.datadir.lock()
        self._recovery = asyncio.create_task(self._recover(self.datadir))

    async def _recover(self, store: DataDirectory) -> None:
        started = time.monotonic()

        def recover() -> None:
            gc.disable()  # recovery allocates millions of acyclic records: don't rescan them
            try:
                for progress in store.recover(self.engine, self.routers, self.schedules):
                    self.replay_progress = progress
                    if self.shutting_down:
                        # a stop: end at this yield, where no file work is half done (the next
                        # start recovers from the same files)
                        return
            finally:
                gc.enable()

        # On a worker thread, so the event loop binds the port and answers the probes (503
        # with progress) meanwhile; nothing else touches the engine until ``ready``. Shielded:
        # cancelling this task must not let a stop unlock the directory under a running thread.
        self._recovery_work = asyncio.ensure_future(asyncio.to_thread(recover))
        await asyncio.shield(self._recovery_work)
        if self.shutting_down:
            return
        freeze_long_lived()
        store.open(self.engine, asyncio.get_running_loop())
        self.routers.start()  # catch up from the recovered cursors
        self.schedules.start()  # missed due times skipped or run once, then the timer
        self.replay_progress = 1.0
        self.ready = True
        log.info("ready: recovery took %.0f ms", (time.monotonic() - started) * 1000)
        self._checkpoints = asyncio.create_task(self._checkpoint_when_due(store))
        self._freezer = asyncio.create_task(self._freeze_periodically())

    async def _freeze_periodically(self) -> None:
        """Keep the collector's generations small: a collection then costs time proportional
        to what was allocated in the last ``FREEZE_INTERVAL_S``, not to every stored record; now
        and then a sweep frees the cycles that froze and died since (:class:`Freezer`)."""
        freezer = Freezer(time.monotonic())
        while True:
            await asyncio.sleep(FREEZE_INTERVAL_S)
            freezer.tick(time.monotonic())

    async def _checkpoint_when_due(self, store: DataDirectory) -> None:
        """Checkpoint whenever the WAL has grown by ``checkpoint_wal_bytes`` since the last; and
        let the heap's free pages decay back to the system (``DataDirectory.decay_heap``)."""
        while True:
            await asyncio.sleep(self.checkpoint_interval_s)
            store.decay_heap()
            if store.checkpoint_due(self.engine.clock.steady_ms()):
                try:
                    await store.checkpoint()
                except Exception:  # noqa: BLE001 — logged; the WAL turns read-only on I/O errors
                    log.exception("checkpoint failed")

    async def wait_ready(self) -> None:
        if self._recovery is not None:
            await self._recovery

    async def stop(self) -> None:
        """Shutdown after requests drained: a final checkpoint (so restart replays nothing),
        then flush and close the WAL."""
        self.shutting_down = True
        self.schedules.stop()  # no run after the final checkpoint
        for task in (self._recovery, self._checkpoints, self._freezer, self._monitor):
            if task is not None and not task.done():
                task.cancel()
        if self.datadir is None:
            return
        if self._recovery_work is not None and not self._recovery_work.done():
            # the recovery thread stops at its next yield (shutting_down); unlock only after
            with contextlib.suppress(Exception):
                await self._recovery_work
        if self.ready:
            try:
                await self.datadir.checkpoint(final=True)
            except Exception:  # noqa: BLE001 — the WAL still holds everything; replay covers it
                log.exception("final checkpoint failed; the next start replays the WAL")
        self.datadir.close()
