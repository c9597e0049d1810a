"""A full disk, with the real mechanism: ``topics serve`` with its data directory on a 16 MiB
tmpfs, written until the file system is full.

The write that meets ``ENOSPC`` and every later one are refused with the contract's envelope
(``503 not_ready``, ``detail.wal_read_only``); nothing is half-applied (a batch is readable whole
or not at all); reads are served meanwhile and ``/v0/ready`` says why writes are refused; the
log says it once. Once space is freed and the server restarted, every acknowledged record is
there and writes are taken again (the space given back: the filler file deleted, and the
tmpfs grown — a checkpoint copies the WAL's records into segments before the WAL is trimmed, so
a restart's final checkpoint needs room for them twice).
"""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.server.processes import ServerProcess

from .mounts import resize_tmpfs, tmpfs
from .storage_client import (
    assert_batches_whole,
    assert_read_only_refusal,
    read_all,
    write_batch,
    write_until_refused,
)

MAX_BATCHES = 2_000
"""More than 16 MiB of batches: the file system fills long before."""


def test_full_disk_refuses_writes_serves_reads_and_loses_nothing(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", "16m") as disk:
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (2 << 20))  # the space given back before the restart
        server = ServerProcess(
            disk / "data", env={"TOPICS_LOG_LEVEL": "info"}, log_path=tmp_path / "server.log"
        )
        try:
            server.start()
            http = httpx.Client(base_url=server.url, timeout=30)
            assert http.put("/v0/topics/f", json={"durability": "fsync"}).status_code == 201
            acked = write_until_refused(http, "f", range(MAX_BATCHES), "the file system never filled up")
            assert acked, "not one batch fitted"
            # every later write is refused the same way, whatever it is
            assert_read_only_refusal(write_batch(http, "f", MAX_BATCHES))
            assert_read_only_refusal(http.put("/v0/topics/g", json={}))
            # reads are served, and say nothing half-applied
            assert_batches_whole(read_all(http, "f"), acked)
            ready = http.get("/v0/ready")
            assert ready.status_code == 503 and ready.json()["error"]["detail"]["wal_read_only"] is True
            assert "topics_wal_read_only 1" in http.get("/v0/metrics").text
            http.close()
            server.stop()

            filler.unlink()  # space returns; restart
            resize_tmpfs(disk, "64m")
            server.start()
            http = httpx.Client(base_url=server.url, timeout=30)
            assert_batches_whole(read_all(http, "f"), acked)
            assert write_batch(http, "f", MAX_BATCHES + 1).status_code in (200, 201)
            http.close()
        finally:
            server.stop()
    log = (tmp_path / "server.log").read_text()
    assert log.count("write-ahead log is read-only") == 1, log[-3000:]
    assert "No space left on device" in log
