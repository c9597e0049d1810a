"""Format versions of the data directory's files: which version each kind of file is written in,
and which versions this server reads. The one place to change when a format changes.

Every WAL, segment and snapshot file starts with a magic and a ``u8`` format version:

========== ================== ======= ========== =================================================
kind       header             writes  reads      older versions
========== ================== ======= ========== =================================================
WAL file   ``b"TWAL"`` u8     2       1, 2       1: no header — frames from byte 0 (read as is;
                                                 never appended to: the next frame opens a v2 file)
segment    ``b"TSEG"`` u8 ..  4       3, 4       3: whole-body CRC, no chunk index — read by
                                                 reading the whole file once at recovery (1 and
                                                 2 predate every released data directory)
snapshot   ``b"TSNP"`` u8 ..  4       1, 2, 3, 4 1: no ``skipped`` per topic (read as none);
                                                 1, 2: no queue ``due`` (delayed writes: none)
                                                 and no ``schedules`` (read as none);
                                                 1, 2, 3: no ``consumers`` (read as none)
========== ================== ======= ========== =================================================

The rule for a version found in a file (:meth:`FileFormat.check`): a readable one is read as
that version; any other refuses the data directory with :class:`UnsupportedFormat`, a message
naming the file, the version found and the versions this server reads — for a newer one, "upgrade
topics ... or the file is damaged" (a snapshot's CRC does not cover its header, so a flipped
version byte reads as a newer version). Such a file is never taken for a corrupt or torn one:
it is neither skipped, nor truncated, nor set aside, and recovery checks every file's version
before it changes anything (``datadir.recovery.check_versions``).

To change a format: bump ``current``, keep reading the old version (or convert it) and add it
to ``readable``, describe both in docs/STORAGE.md ("Formats and versions"), and add a golden
data directory for the new version.

What an older reader must still refuse clearly: a new WAL frame type, a new ``ROUTER`` (or
``SCHEDULE``, or ``CONSUMER``) frame kind, a new enum value of a stored config (topic ``type``,
``durability``, ``discard``; router ``guarantee``; schedule ``missed``; a filter operator) or a
value outside a field's old range. This server refuses each with :class:`UnsupportedFormat`
("upgrade topics") — never reading it as a default, a torn tail or a skippable frame. So a
change may add such values without a version bump only if refusing them on an older server is
acceptable; a change whose records an older server must still read *differently* needs a version
bump. New keys in a stored config are the tolerant exception: older readers keep them
(``extra``) and write them back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class UnsupportedFormat(Exception):
    """A file of the data directory is in a format version this server cannot read: the server
    must not start on it (nothing is changed)."""


@dataclass(frozen=True, slots=True)
class FileFormat:
    kind: str
    """What the file is, as messages name it."""
    current: int
    """The version this server writes."""
    readable: frozenset[int]
    """Every version this server reads (``current`` among them)."""

    def check(self, path: Path, found: int) -> None:
        """Return if ``found`` is readable; else raise :class:`UnsupportedFormat`."""
        if found in self.readable:
            return
        versions = sorted(self.readable)
        reads = ("versions " if len(versions) > 1 else "version ") + ", ".join(map(str, versions))
        if found > self.current:
            raise UnsupportedFormat(
                f"{path}: {self.kind} format version {found} is newer than this server supports "
                f"(it reads {reads}); the file was written by a newer topics server — "
                "upgrade topics to open this data directory, or the file is damaged (a header "
                "byte is not covered by every file's CRC)"
            )
        raise UnsupportedFormat(
            f"{path}: {self.kind} format version {found} is older than this server reads (it reads "
            f"{reads}); open the data directory with an older topics server first, or restore "
            "it from a backup"
        )


WAL = FileFormat("WAL file", current=2, readable=frozenset({1, 2}))
SEGMENT = FileFormat("segment", current=4, readable=frozenset({3, 4}))
SNAPSHOT = FileFormat("snapshot", current=4, readable=frozenset({1, 2, 3, 4}))
