"""A storage directory made read-only mid-run, with the real mechanism: a read-only bind mount
over the data directory's ``segments`` or ``snapshots`` (``chmod`` does not stop root).

The segment seal (``segments``: ``TOPICS_SEGMENT_MAX_EVENTS`` is small) or the checkpoint's
snapshot (``snapshots``: ``TOPICS_CHECKPOINT_WAL_BYTES`` is small) meets ``EROFS``: the WAL turns
read-only, as for any failed storage write (docs/STORAGE.md, "Failures") — writes refused with the
contract's envelope, reads served, ``/v0/ready`` and ``topics_wal_read_only`` say so, one log
line. Once the directory is writable again and the server restarted, every acknowledged record
is there and writes are taken again.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.server.processes import ServerProcess

from .mounts import ReadOnlyBind
from .storage_client import (
    assert_batches_whole,
    assert_read_only_refusal,
    read_all,
    write_batch,
    write_until_refused,
)

MAX_BATCHES = 500
"""Far more batches than a seal or a checkpoint needs to fall due."""
PAUSE_S = 0.02
"""Between batches: the server looks for a due checkpoint once a second, so the batches span
at least 10 s of those looks however fast the disk takes them."""

TRIGGERS = {
    "segments": {"TOPICS_SEGMENT_MAX_EVENTS": "200"},
    "snapshots": {"TOPICS_CHECKPOINT_WAL_BYTES": str(256 << 10)},
}


@pytest.mark.parametrize("directory", sorted(TRIGGERS))
def test_read_only_storage_directory_turns_writes_away_and_loses_nothing(
    tmp_path: Path, directory: str
) -> None:
    data = tmp_path / "data"
    env = {"TOPICS_LOG_LEVEL": "info", **TRIGGERS[directory]}
    server = ServerProcess(data, env=env, log_path=tmp_path / "server.log")
    bind: ReadOnlyBind | None = None
    try:
        server.start()
        http = httpx.Client(base_url=server.url, timeout=30)
        assert http.put("/v0/topics/f", json={"durability": "fsync"}).status_code == 201
        assert write_batch(http, "f", 0).status_code in (200, 201)
        bind = ReadOnlyBind(data / directory)
        bind.read_only()
        acked = {0} | write_until_refused(
            http, "f", range(1, MAX_BATCHES), f"nothing was written to {directory}", PAUSE_S
        )
        assert_read_only_refusal(write_batch(http, "f", MAX_BATCHES))
        assert_batches_whole(read_all(http, "f"), acked)  # reads are served
        ready = http.get("/v0/ready")
        assert ready.status_code == 503 and ready.json()["error"]["detail"]["wal_read_only"] is True
        assert "topics_wal_read_only 1" in http.get("/v0/metrics").text
        http.close()
        server.stop()

        bind.read_write()
        server.start()
        http = httpx.Client(base_url=server.url, timeout=30)
        assert_batches_whole(read_all(http, "f"), acked)
        assert write_batch(http, "f", MAX_BATCHES + 1).status_code in (200, 201)
        assert http.get("/v0/ready").status_code == 200
        http.close()
    finally:
        server.stop()
        if bind is not None:
            bind.release()
    log = (tmp_path / "server.log").read_text()
    assert log.count("write-ahead log is read-only") == 1, log[-3000:]
    assert "Read-only file system" in log
