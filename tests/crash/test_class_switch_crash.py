"""A topic's class switched in place over HTTP, then ``kill -9`` or SIGTERM and a restart of a
real ``topics serve`` (docs/DECISIONS.md, "Switching a topic's class"): records written as
ephemeral are durable once the switch to a durable class answered; records written under a
durable class stay durable after a switch to ephemeral, those written as ephemeral do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from tests.server.processes import ServerProcess

from ..fault.storage_client import read_all

SMALL_SEGMENTS = {"TOPICS_SEGMENT_MAX_EVENTS": "25"}
"""Seals fall due after a few writes, so sealed and unsealed records are both at stake."""


def _write(http: httpx.Client, topic: str, values: range, per_write: int = 4) -> None:
    items = list(values)
    for at in range(0, len(items), per_write):
        r = http.post(
            f"/v0/topics/{topic}", json={"records": [{"data": v} for v in items[at : at + per_write]]}
        )
        assert r.status_code in (200, 201), r.text


def _put(http: httpx.Client, topic: str, body: dict[str, Any]) -> None:
    r = http.put(f"/v0/topics/{topic}", json=body)
    assert r.status_code in (200, 201), r.text


def _data(http: httpx.Client, topic: str) -> list[Any]:
    return [record["data"] for record in read_all(http, topic)]


def test_ephemeral_records_survive_kill_9_once_the_switch_to_disk_answered(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", env=SMALL_SEGMENTS)
    try:
        server.start()
        with httpx.Client(base_url=server.url, timeout=30) as http:
            _put(http, "t", {"durability": "ephemeral"})
            _write(http, "t", range(40))
            _put(http, "t", {"durability": "disk"})
            _write(http, "t", range(40, 50))
        server.kill()
        server.start()
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert _data(http, "t") == list(range(50))
            assert http.get("/v0/topics/t").json()["config"]["durability"] == "disk"
    finally:
        server.stop()


def test_disk_records_survive_a_switch_to_ephemeral_and_restarts_the_ephemeral_ones_do_not(
    tmp_path: Path,
) -> None:
    """The SIGTERM's final checkpoint trims the WAL: the disk records it did not seal before
    would be gone after it."""
    server = ServerProcess(tmp_path / "data", env=SMALL_SEGMENTS)
    try:
        server.start()
        with httpx.Client(base_url=server.url, timeout=30) as http:
            _put(http, "t", {"durability": "disk"})
            _write(http, "t", range(30))  # a seal, and an unsealed tail
            _put(http, "t", {"durability": "ephemeral"})
            _write(http, "t", range(30, 36))
            assert _data(http, "t") == list(range(36))
        server.stop()
        server.start()
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert _data(http, "t") == list(range(30))
        server.kill()
        server.start()
        with httpx.Client(base_url=server.url, timeout=30) as http:
            assert _data(http, "t") == list(range(30))
    finally:
        server.stop()
