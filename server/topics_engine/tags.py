"""Per-topic tag index: tag -> ascending seqs, for point (``Eq``) and prefix (``Glob``) deletes.

Scope: the records in memory (hot chunks). A chunk that goes cold leaves the index
(:meth:`TagIndex.forget_range`) and keeps a :class:`ChunkTags` summary instead, so the index
never grows with retained records; a tag delete reads the cold chunks the summaries cannot rule
out (``RecordLog.cold_tag_matches``).

Invariant: every *live* tagged record of a hot chunk has its seq in its tag's list, and each list
is ascending.
Entries of records that died since (evicted, expired, deleted) are removed lazily: lookups take
an ``is_live`` check, and :meth:`sweep` drops dead entries once as many have died as are live,
so upkeep is amortized O(1) per removed record and appends stay O(1).
The sorted key list used by prefix scans is rebuilt only when a prefix lookup needs it after new
tags appeared, so a stream of unique tags does not pay an O(n) sorted insert per append.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Callable, Iterable, Iterator

from .matching import TagMatch


class TagIndex:
    def __init__(self) -> None:
        self._seqs: dict[str, list[int]] = {}
        self._sorted_tags: list[str] | None = []
        self._entries = 0
        self._dead = 0

    def add(self, tag: str, seq: int) -> None:
        seqs = self._seqs.get(tag)
        if seqs is None:
            self._seqs[tag] = [seq]
            self._sorted_tags = None
        else:
            seqs.append(seq)
        self._entries += 1

    def note_removed(self, n: int, is_live: Callable[[int], bool]) -> None:
        """Record that ``n`` tagged records died; sweep when dead entries reach the live ones."""
        self._dead += n
        if self._dead * 2 >= self._entries and self._dead > 64:
            self.sweep(is_live)

    def sweep(self, is_live: Callable[[int], bool]) -> None:
        kept: dict[str, list[int]] = {}
        entries = 0
        for tag, seqs in self._seqs.items():
            live = [s for s in seqs if is_live(s)]
            if live:
                kept[tag] = live
                entries += len(live)
        if len(kept) != len(self._seqs):
            self._sorted_tags = None
        self._seqs, self._entries, self._dead = kept, entries, 0

    def eq(self, tag: str, below: int) -> list[int]:
        """Seqs (possibly dead) tagged exactly ``tag`` with seq < ``below``."""
        seqs = self._seqs.get(tag)
        if not seqs:
            return []
        return seqs[: bisect.bisect_left(seqs, below)]

    def prefix(self, prefix: str, below: int) -> list[int]:
        """Seqs (possibly dead) whose tag starts with ``prefix`` and seq < ``below``."""
        if self._sorted_tags is None:
            self._sorted_tags = sorted(self._seqs)
        tags = self._sorted_tags
        found: list[int] = []
        i = bisect.bisect_left(tags, prefix)
        while i < len(tags) and tags[i].startswith(prefix):
            found.extend(self.eq(tags[i], below))
            i += 1
        return found

    def forget_range(self, tags: Iterable[str], first: int, last: int) -> None:
        """The records ``first .. last`` with these tags left the index's scope (their chunk
        went cold: its tags are kept by a :class:`ChunkTags` instead). Older records may still
        be in memory (a chunk that never went cold), so only this range goes."""
        for tag in set(tags):
            seqs = self._seqs.get(tag)
            if seqs is None:
                continue
            lo = bisect.bisect_left(seqs, first)
            hi = bisect.bisect_right(seqs, last, lo)
            if hi == lo:
                continue
            del seqs[lo:hi]
            if not seqs:
                del self._seqs[tag]
                self._sorted_tags = None
            self._entries -= hi - lo
        self._dead = min(self._dead, self._entries)


_INTERNED_STRINGS_DIE = sys.implementation.name == "cpython" and not (3, 12) <= sys.version_info < (3, 12, 6)
"""Whether an interned string is freed once unused: every CPython but 3.12.0–3.12.5, which made
interned strings immortal (a stream of distinct tags would then stay in memory for good)."""


def _shared(tag: str) -> str:
    """One string object for equal tags across chunks (interned) where that frees them again."""
    return sys.intern(tag) if _INTERNED_STRINGS_DIE else tag


class ChunkTags:
    """What a cold chunk keeps of its records' tags, to skip it in a tag delete without reading
    it: the distinct tags when there are at most :data:`MAX_LISTED` (exact for ``Eq`` and
    ``Glob``), else a Bloom filter of them (``Eq`` only: no false negatives, about 1 % false
    positives at 10 bits a tag; a ``Glob`` must read such a chunk). The tags themselves stay in
    the chunk's records (and its segment's index).

    A chunk keeps this as long as any of its records is retained, so the listed tags are a
    sorted tuple (a quarter of a frozenset's size at these lengths) of interned strings
    (chunks that share a tag share one string)."""

    __slots__ = ("_listed", "_bloom", "_bits")

    MAX_LISTED = 16
    HASHES = 7

    def __init__(self, tags: Iterable[str | None]) -> None:
        distinct = {t for t in tags if t is not None}
        self._listed: tuple[str, ...] | None = None
        self._bloom = b""
        self._bits = 0
        if len(distinct) <= self.MAX_LISTED:
            self._listed = tuple(sorted(map(_shared, distinct)))
            return
        bits = max(64, len(distinct) * 10)
        bloom = bytearray((bits + 7) // 8)
        for tag in distinct:
            for bit in self._positions(tag, bits):
                bloom[bit >> 3] |= 1 << (bit & 7)
        self._bloom, self._bits = bytes(bloom), bits

    def _positions(self, tag: str, bits: int) -> Iterator[int]:
        h1 = hash(tag)
        h2 = hash((tag, 0x9E3779B9)) | 1
        for k in range(self.HASHES):
            yield (h1 + k * h2) % bits

    def may_match(self, match: TagMatch) -> bool:
        """Whether a record of the chunk may match (``False``: certainly none does)."""
        if self._listed is not None:
            return any(match.matches(tag) for tag in self._listed)
        if match.exact is None:
            return True
        bloom = self._bloom
        return all(bloom[bit >> 3] & (1 << (bit & 7)) for bit in self._positions(match.exact, self._bits))
