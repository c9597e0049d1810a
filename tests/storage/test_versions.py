"""Stored formats that survive upgrades (issue 22).

- Every WAL, segment and snapshot file names its format version (``storage.versions``). A file
  of a newer version than this server reads refuses the data directory with a message naming
  the file, the version found, the versions read and "upgrade topics" — before anything in the
  directory changes (never read as corrupt, skipped, truncated or set aside).
- Older versions are read as they are: a headerless (version 1) WAL file, a version 1 snapshot
  (the golden set, ``test_golden.py``, covers a whole version 1 directory).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import orjson
import pytest
from topics_engine import Engine, Limits, ManualClock
from topics_engine.datadir import DataDirectory, UnsupportedFormat
from topics_engine.storage.fs import FileSystem
from topics_engine.storage.versions import SEGMENT, SNAPSHOT, WAL
from topics_engine.storage.wal import WAL_HEADER, wal_file_name, wal_files, wal_frames

from .harness import T0, crash, diff_data, flush, open_node


def files_of(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


async def written(path: Path, clock: ManualClock) -> None:
    """A data directory with a snapshot, its segments and a WAL tail, left as a crash leaves it."""
    node = await open_node(path, clock)
    e = node.engine
    await e.put_topic("log", {"durability": "disk"}).wait
    e.append("log", [{"data": i} for i in range(5)])
    await flush(node)
    await node.store.checkpoint()
    e.append("log", [{"data": i} for i in range(5, 7)])
    await flush(node)
    crash(node)


def victim(path: Path, kind: str) -> Path:
    """A file of ``kind`` in the data directory at ``path``."""
    pattern = {"wal": "wal/*.wal", "segment": "segments/*/*.seg", "snapshot": "snapshots/*.snap"}[kind]
    return sorted(path.glob(pattern))[-1]


FORMATS = {"wal": WAL, "segment": SEGMENT, "snapshot": SNAPSHOT}


@pytest.mark.parametrize("kind", sorted(FORMATS))
async def test_a_file_of_a_newer_version_refuses_the_data_directory_untouched(
    tmp_path: Path, kind: str
) -> None:
    clock = ManualClock(T0)
    await written(tmp_path, clock)
    path = victim(tmp_path, kind)
    raw = bytearray(path.read_bytes())
    assert raw[4] == FORMATS[kind].current  # magic (4 bytes), then the version byte
    newer = FORMATS[kind].current + 1
    raw[4] = newer
    path.write_bytes(bytes(raw))
    before = files_of(tmp_path)

    store = DataDirectory(tmp_path)
    store.lock()
    try:
        with pytest.raises(UnsupportedFormat) as refused:
            for _ in store.recover(Engine(clock, Limits())):
                pass
    finally:
        store.close()
    message = str(refused.value)
    assert str(path) in message
    assert f"version {newer} is newer" in message
    assert f"reads version {FORMATS[kind].current}" in message or "reads versions" in message
    assert "upgrade topics" in message
    assert files_of(tmp_path) == before  # nothing truncated, removed or set aside

    raw[4] = FORMATS[kind].current  # the same directory, as this server wrote it, opens
    path.write_bytes(bytes(raw))
    node = await open_node(tmp_path, clock)
    try:
        assert diff_data(node.engine, "log") == list(range(7))
    finally:
        node.close()


async def test_a_headerless_version_1_wal_file_is_read_and_never_appended_to(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    await node.engine.put_topic("log", {"durability": "disk"}).wait
    node.engine.append("log", [{"data": i} for i in range(3)])
    await flush(node)
    crash(node)
    ((_, old),) = wal_files(FileSystem(), tmp_path / "wal")
    v2 = old.read_bytes()
    assert v2.startswith(WAL_HEADER)
    old.write_bytes(v2[len(WAL_HEADER) :])  # as a server before WAL headers wrote it
    v1 = old.read_bytes()

    node = await open_node(tmp_path, clock)
    assert diff_data(node.engine, "log") == [0, 1, 2]
    node.engine.append("log", [{"data": 3}])
    await flush(node)
    crash(node)
    files = wal_files(FileSystem(), tmp_path / "wal")
    assert files[0][1] == old and old.read_bytes() == v1  # read as it is, not appended to
    assert all(path.read_bytes().startswith(WAL_HEADER) for _, path in files[1:])

    node = await open_node(tmp_path, clock)
    try:
        assert diff_data(node.engine, "log") == [0, 1, 2, 3]
    finally:
        node.close()


async def test_a_torn_wal_header_is_a_torn_tail(tmp_path: Path) -> None:
    """A new WAL file whose first write (header and frames) was torn inside the header holds no
    frame: it is cut like any torn tail, and the log continues in it, header first."""
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    await node.engine.put_topic("log", {"durability": "fsync"}).wait
    await node.engine.append("log", [{"data": 1}]).wait
    crash(node)
    ((_, path),) = wal_files(FileSystem(), tmp_path / "wal")
    last = list(wal_frames(path.read_bytes()))[-1].lsn
    torn = tmp_path / "wal" / wal_file_name(last + 1)
    torn.write_bytes(WAL_HEADER[:3])

    node = await open_node(tmp_path, clock)
    assert node.store.report.truncated_bytes == 3
    await node.engine.append("log", [{"data": 2}]).wait
    crash(node)
    assert torn.read_bytes().startswith(WAL_HEADER)
    node = await open_node(tmp_path, clock)
    try:
        assert diff_data(node.engine, "log") == [1, 2]
    finally:
        node.close()


async def test_a_version_1_snapshot_loads_without_skipped_ranges(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    await written(tmp_path, clock)
    path = victim(tmp_path, "snapshot")
    raw = path.read_bytes()
    body = orjson.loads(raw[9:])
    body["version"] = 1
    for topic in body["topics"]:
        del topic["skipped"]  # the field version 2 added
    v1_body = orjson.dumps(body)
    path.write_bytes(struct.pack("<4sBI", b"TSNP", 1, zlib.crc32(v1_body)) + v1_body)

    node = await open_node(tmp_path, clock)
    try:
        assert diff_data(node.engine, "log") == list(range(7))
        assert node.engine._topics["log"].skipped == []
    finally:
        node.close()
