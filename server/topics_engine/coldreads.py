"""Reading records without blocking the event loop on a disk.

A topic's sealed records may be cold (only in their segment file, see ``storage.coldstore``).
The engine's reads are synchronous; run on the event loop they go through here:

- :func:`read_without_blocking` (a request: diff, claim, ...) runs the read *strictly*: a chunk
  not in memory raises ``ColdRead`` instead of being read; the chunks it names are loaded on a
  reader thread while the request awaits, pinned, and the read runs again;
- :class:`ColdReads` does the same for a stream whose reads run in synchronous pumps (a watch,
  a WebSocket): :meth:`ColdReads.attempt` runs a read strictly and, on a miss, remembers what to
  load; the stream's task then awaits :meth:`ColdReads.load` and pumps again.

A read run so must be safe to repeat: it changes nothing before its first record access (or
only what a repeat sets again, such as expiring a TTL prefix).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from .storage.coldstore import ColdChunk, ColdRead, strict
from .storage.formats import RecordBatch
from .topic import DeletePlan

T = TypeVar("T")


__all__ = [
    "ColdChunk",
    "ColdChunkLost",
    "ColdRead",
    "ColdReads",
    "examine_cold",
    "preload",
    "preload_now",
    "read_strictly",
    "read_without_blocking",
]


class ColdChunkLost(OSError):
    """A live record's segment file is gone: never expected (a segment is dropped only once no
    record in it is live); the read fails rather than retry forever."""


EXAMINE_GROUP = 64
"""Cold chunks a tag delete reads at a time (what it keeps of them is the matching seqs)."""


class ColdReads:
    """One reader's cold chunk loads: what its last strict read missed, and the chunks it loaded
    and pins until a read goes through (whatever the shared cache evicts meanwhile)."""

    def __init__(self) -> None:
        self.missing: list[ColdChunk] = []
        self._pinned: list[ColdChunk] = []
        self._tried: set[tuple[Path, int]] = set()
        """Chunks loaded since the last read went through (pinned, or found gone)."""

    def attempt(self, read: Callable[[], T]) -> T:
        """Run ``read`` strictly; on a miss remember the chunks to load and re-raise
        ``ColdRead``. A read that goes through releases the pins of earlier loads."""
        try:
            with strict():
                result = read()
        except ColdRead as miss:
            self.missing = miss.chunks
            raise
        self.missing = []
        self.release()
        return result

    @property
    def idle(self) -> bool:
        """Nothing to load and nothing pinned: a read elsewhere may stand for this reader's."""
        return not self.missing and not self._pinned

    def progresses(self) -> bool:
        """Whether the last miss names a chunk this reader has not loaded yet: loading it moves
        the read on, while a miss of loaded chunks only would repeat forever (their segment
        file is gone though a record in them is live)."""
        return any(chunk.key not in self._tried for chunk in self.missing)

    async def load(self) -> None:
        """Load what the last attempt missed (on a reader thread) and pin it. Raises
        :class:`ColdChunkLost` when it names only chunks loaded before (see :meth:`progresses`)."""
        chunks = self.missing
        if not chunks:
            return
        if not self.progresses():
            self.missing = []
            raise ColdChunkLost(f"{chunks[0].path}: the segment file of a live record is gone")
        self.missing = []
        batches = await chunks[0].store.load(chunks)
        for chunk, batch in zip(chunks, batches, strict=True):
            self._tried.add(chunk.key)
            if batch is not None:
                self.pin(chunk, batch)

    def pin(self, chunk: ColdChunk, batch: RecordBatch) -> None:
        """Keep ``batch`` (``chunk``'s) available until :meth:`release`."""
        chunk.store.pin(chunk, batch)
        self._pinned.append(chunk)

    def release(self) -> None:
        pinned, self._pinned = self._pinned, []
        self._tried = set()
        for chunk in pinned:
            chunk.store.unpin(chunk)


async def read_without_blocking(read: Callable[[], T]) -> T:
    """Run the synchronous ``read`` on the event loop without blocking it on a disk (see the
    module docstring); returns what ``read`` returns."""
    reads = ColdReads()
    try:
        while True:
            try:
                return reads.attempt(read)
            except ColdRead:
                await reads.load()  # ColdChunkLost if a file it needs is gone
    finally:
        reads.release()


def read_strictly(read: Callable[[], T]) -> T:
    """Run ``read`` now if everything it needs is in memory; else raise ``ColdRead`` (having
    changed nothing a repeat would not set again): the caller goes on with
    :func:`read_without_blocking`."""
    with strict():
        return read()


def preload_now(chunks: Sequence[ColdChunk]) -> tuple[ColdReads, list[ColdChunk]]:
    """Pin the chunks that can be had without waiting for a disk (cached, or in the OS page
    cache); returns the pins and the chunks still to load off the event loop (:func:`preload`)."""
    reads = ColdReads()
    missing: list[ColdChunk] = []
    try:
        for chunk in chunks:
            batch = chunk.store.read_now(chunk)
            if batch is None:
                missing.append(chunk)
            else:
                reads.pin(chunk, batch)
    except BaseException:
        reads.release()
        raise
    return reads, missing


async def preload(chunks: Sequence[ColdChunk], reads: ColdReads | None = None) -> ColdReads:
    """Load ``chunks`` (on a reader thread) and pin them until the returned reads'
    :meth:`ColdReads.release` — for a step that cannot be repeated (a claim), whose cold
    chunks are known beforehand. ``reads``: pins to add them to (e.g. :func:`preload_now`'s)."""
    reads = reads if reads is not None else ColdReads()
    reads.missing = list(chunks)
    try:
        await reads.load()
    except BaseException:
        reads.release()
        raise
    return reads


async def examine_cold(plan: DeletePlan) -> None:
    """Examine a delete plan's cold chunks: each group of :data:`EXAMINE_GROUP` read on a
    reader thread (or found in memory), its matches kept and its records let go, so a tag
    delete over a cold backlog holds one group at a time."""
    cold, plan.cold = plan.cold, []
    for start in range(0, len(cold), EXAMINE_GROUP):
        group = cold[start : start + EXAMINE_GROUP]
        reads, missing = preload_now([chunk for _, chunk in group])
        try:
            if missing:
                reads.missing = missing
                await reads.load()  # pinned with the rest: a cache eviction meanwhile loses none
            for first_seq, chunk in group:
                batch = chunk.store.cached(chunk)
                if batch is not None:
                    plan.examine(first_seq, batch)
                elif plan.topic.log.holds_live(first_seq):
                    raise ColdChunkLost(f"{chunk.path}: the segment file of a live record is gone")
        finally:
            reads.release()
