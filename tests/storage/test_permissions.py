"""docs/DECISIONS.md, "Data directory permissions": everything the server creates in its data
directory is private to it — files ``0600``, directories ``0700`` — whatever the process umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from topics_engine import ManualClock

from .harness import T0, flush, open_node


async def test_data_directory_files_are_0600_and_directories_0700(tmp_path: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        data_dir = tmp_path / "nested" / "data"
        node = await open_node(data_dir, ManualClock(T0))
        node.engine.put_topic("t", {"durability": "fsync"})
        for i in range(3):
            node.engine.append("t", [{"data": i}])
        await flush(node)
        assert node.store.checkpointer is not None
        await node.store.checkpoint()
        node.close()
    finally:
        os.umask(old_umask)
    entries = [tmp_path / "nested", *(tmp_path / "nested").rglob("*")]
    kinds = {"file": 0, "dir": 0}
    for path in entries:
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_dir():
            kinds["dir"] += 1
            assert mode == 0o700, (path, oct(mode))
        else:
            kinds["file"] += 1
            assert mode == 0o600, (path, oct(mode))
    assert kinds["dir"] >= 5 and kinds["file"] >= 4  # LOCK, WAL, segment, snapshot
