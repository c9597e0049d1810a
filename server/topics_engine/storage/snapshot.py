"""Snapshot files (checkpoints): the engine's metadata at a WAL position, written atomically.

File ``snapshots/<lsn:020d>.snap``::

    b"TSNP" | u8 version (4) | u32 crc32(body) | body

The body is the snapshot schema of ``formats`` (:class:`formats.SnapshotImage`, JSON, naming
its version too): every topic's config and watermarks and the sealed segments that hold its
records, the routers, the schedules and the named consumers. Versions (``versions.SNAPSHOT``):
this server writes 4 and reads 1 to 4 (version 1 lacks each topic's ``skipped`` ranges: none;
versions 1 and 2 lack the schedules and a queue's ``due`` delayed writes: none; versions 1 to 3
lack the named consumers: none — an older server refuses a newer snapshot rather than drop
what it added). A snapshot of a version it does not read raises
``versions.UnsupportedFormat`` — it is never skipped as corrupt, for an older snapshot would
then silently stand in for it. The CRC covers the body only, not the header: a damaged version
byte reads as an unknown version, so the refusal says "upgrade topics ... or the file is
damaged".

Recovery loads the newest snapshot whose CRC checks, its segments, and then replays WAL frames
with a greater LSN. Writing is temp file -> fsync -> rename -> fsync of the directory, so a crash
leaves either the previous snapshot or the new one; older snapshots are removed only after the
new one is durable.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

from .checksum import crc32
from .formats import SnapshotImage, decode_snapshot, encode_snapshot
from .fs import FileSystem
from .versions import SNAPSHOT

log = logging.getLogger("topics.storage")

MAGIC = b"TSNP"
VERSION = SNAPSHOT.current
HEADER = struct.Struct("<4sBI")
SUFFIX = ".snap"
VERSION_HEAD = 5
"""Bytes that name a snapshot's format: the magic and the version byte."""


def snapshot_version(head: bytes) -> int | None:
    """The format version named by a snapshot file's first :data:`VERSION_HEAD` bytes
    (``None``: no snapshot magic — a corrupt file)."""
    if len(head) < VERSION_HEAD or head[:4] != MAGIC:
        return None
    return head[4]


def snapshot_name(lsn: int) -> str:
    return f"{lsn:020d}{SUFFIX}"


def write_snapshot(fs: FileSystem, directory: Path, image: SnapshotImage) -> Path:
    body = encode_snapshot(image)
    path = directory / snapshot_name(image.lsn)
    fs.write_atomic(path, HEADER.pack(MAGIC, VERSION, crc32(body)) + body)
    for name in fs.listdir(directory):
        if (name.endswith(SUFFIX) and name != path.name) or name.endswith(".tmp"):
            fs.remove(directory / name)
    return path


def read_latest_snapshot(fs: FileSystem, directory: Path) -> SnapshotImage | None:
    """The newest valid snapshot's state, or ``None``; corrupt ones are skipped (and logged).
    Raises ``versions.UnsupportedFormat`` for a snapshot of a version this server does not read."""
    names = sorted((n for n in fs.listdir(directory) if n.endswith(SUFFIX)), reverse=True)
    for name in names:
        buf = fs.read_bytes(directory / name)
        version = snapshot_version(buf[:VERSION_HEAD])
        if version is not None:
            SNAPSHOT.check(directory / name, version)
        if version is not None and len(buf) >= HEADER.size:
            _, _, crc = HEADER.unpack_from(buf)
            body = buf[HEADER.size :]
            if crc32(body) == crc:
                return decode_snapshot(body, version)
        log.error("snapshot %s is corrupt; trying an older one", name)
    return None
