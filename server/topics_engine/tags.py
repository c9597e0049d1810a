"""Per-topic tag index: tag -> ascending seqs, for point (``Eq``) and prefix (``Glob``) deletes.

Invariant: every *live* tagged record's seq is in its tag's list, and each list is ascending.
Entries of records that died since (evicted, expired, deleted) are removed lazily: lookups take
an ``is_live`` check, and :meth:`sweep` drops dead entries once as many have died as are live,
so upkeep is amortized O(1) per removed record and appends stay O(1).
The sorted key list used by prefix scans is rebuilt only when a prefix lookup needs it after new
tags appeared, so a stream of unique tags does not pay an O(n) sorted insert per append.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable


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
