"""When acknowledgements wait (WAL persistence; docs/DECISIONS.md, "Control-plane durability"): a
write that lazily creates a non-``fsync`` topic acks like any write of its class; an explicit PUT
waits for its frame."""

from __future__ import annotations

from pathlib import Path

import pytest
from topics_engine import ManualClock

from .harness import T0, app_client, flush, open_node


@pytest.mark.parametrize("durability", ["ephemeral", "memory", "disk"])
async def test_lazily_created_topic_write_is_not_fsync_gated(tmp_path: Path, durability: str) -> None:
    node = await open_node(tmp_path, ManualClock(T0))
    try:
        r = node.engine.append("new", [{"data": 1}], config={"durability": durability})
        assert r.created and r.wait is None  # acked at once, like every write of its class
        r = node.engine.append("new", [{"data": 2}])
        assert r.wait is None
        await flush(node)
        assert node.engine.topic_state("new").count == 2
    finally:
        node.close()


async def test_lazily_created_fsync_topic_write_waits_for_its_fsync(tmp_path: Path) -> None:
    node = await open_node(tmp_path, ManualClock(T0))
    try:
        r = node.engine.append("new", [{"data": 1}], config={"durability": "fsync"})
        assert r.wait is not None
        assert await r.wait >= 0
    finally:
        node.close()


async def test_explicit_put_waits_for_its_frame(tmp_path: Path) -> None:
    node = await open_node(tmp_path, ManualClock(T0))
    try:
        put = node.engine.put_topic("t", {"durability": "disk"})
        assert put.wait is not None
        await put.wait
        assert node.engine.append("t", [{"data": 1}]).wait is None  # its reservation is durable
    finally:
        node.close()


async def test_lazily_created_write_reports_no_fsync_over_http(tmp_path: Path) -> None:
    async with app_client(tmp_path, ManualClock(T0)) as (client, _):
        r = await client.post("/v0/topics/lazy", json={"records": [{"data": 1}]})
        assert r.status_code == 201
        assert r.json()["performance"]["fsync_ms"] == 0
