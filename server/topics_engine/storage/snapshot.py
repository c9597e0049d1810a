"""Snapshot files (checkpoints): the engine's metadata at a WAL position, written atomically.

File ``snapshots/<lsn:020d>.snap``::

    b"TSNP" | u8 version | u32 crc32(body) | body

The body is the snapshot schema of ``formats`` (:class:`formats.SnapshotImage`): every topic's
config and watermarks and the sealed segments that hold its records. Recovery loads the newest
snapshot whose CRC checks, its segments, and then replays WAL frames with a greater LSN.
Writing is temp file -> fsync -> rename -> fsync of the directory, so a crash leaves either the
previous snapshot or the new one; older snapshots are removed only after the new one is durable.
"""

from __future__ import annotations

import logging
import struct
import zlib
from pathlib import Path

from .formats import SnapshotImage, decode_snapshot, encode_snapshot
from .fs import FileSystem

log = logging.getLogger("topics.storage")

MAGIC = b"TSNP"
VERSION = 1
HEADER = struct.Struct("<4sBI")
SUFFIX = ".snap"


def snapshot_name(lsn: int) -> str:
    return f"{lsn:020d}{SUFFIX}"


def write_snapshot(fs: FileSystem, directory: Path, image: SnapshotImage) -> Path:
    body = encode_snapshot(image)
    path = directory / snapshot_name(image.lsn)
    fs.write_atomic(path, HEADER.pack(MAGIC, VERSION, zlib.crc32(body)) + body)
    for name in fs.listdir(directory):
        if (name.endswith(SUFFIX) and name != path.name) or name.endswith(".tmp"):
            fs.remove(directory / name)
    return path


def read_latest_snapshot(fs: FileSystem, directory: Path) -> SnapshotImage | None:
    """The newest valid snapshot's state, or ``None``; corrupt ones are skipped (and logged)."""
    names = sorted((n for n in fs.listdir(directory) if n.endswith(SUFFIX)), reverse=True)
    for name in names:
        buf = fs.read_bytes(directory / name)
        if len(buf) >= HEADER.size:
            magic, version, crc = HEADER.unpack_from(buf)
            body = buf[HEADER.size :]
            if magic == MAGIC and version == VERSION and zlib.crc32(body) == crc:
                return decode_snapshot(body)
        log.error("snapshot %s is corrupt; trying an older one", name)
    return None
