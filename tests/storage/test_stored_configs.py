"""Stored topic and router configs are tolerant records (issue 22): recovery reads them with
``config.stored_config`` and ``routers.stored_router_config``, never with the request rules —
missing keys default, unknown keys are kept and written back by every later frame and snapshot,
and values today's request rules refuse still recover as they were.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from topics_engine import Engine, Limits, ManualClock
from topics_engine.config import DEFAULT_CONFIG, Durability, TopicType
from topics_engine.datadir import DataDirectory, UnsupportedFormat
from topics_engine.matching import TagMatch
from topics_engine.routers import Routers
from topics_engine.storage import formats
from topics_engine.storage.frames import FrameType
from topics_engine.storage.fs import FileSystem
from topics_engine.storage.snapshot import read_latest_snapshot, write_snapshot

from .harness import T0, Node, crash, flush, open_node
from .test_versions import files_of


def routers_of(node: Node) -> Routers:
    assert node.store.routers is not None
    return node.store.routers


async def configured(path: Path, clock: ManualClock) -> None:
    """A data directory whose snapshot holds queue topic ``q`` (dead-lettering to ``dlq``), topic
    ``t`` and router ``q->t`` with a filter; closed after a checkpoint (nothing to replay)."""
    node = await open_node(path, clock)
    await node.engine.put_topic("q", {"type": "queue", "dead_letter": "dlq"}).wait
    await node.engine.put_topic("t", {}).wait
    routers_of(node).put("q->t", {"source": "q", "dest": "t", "filter": ["tag", "Glob", "a*"]})
    await flush(node)
    await node.store.checkpoint()
    node.close()


def patch_snapshot(
    path: Path, topic: dict[str, Any] | None = None, router: dict[str, Any] | None = None
) -> None:
    """Rewrite the snapshot's stored config of topic ``q`` (``topic``: the whole record) and of
    router ``q->t`` (``router``), as a server with other rules could have written them."""
    fs, directory = FileSystem(), path / "snapshots"
    image = read_latest_snapshot(fs, directory)
    assert image is not None
    for t in image.topics:
        if t.name == "q" and topic is not None:
            t.config = topic
    for r in image.routers:
        if r.name == "q->t" and router is not None:
            r.config = router
    write_snapshot(fs, directory, image)


def stored_records(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The snapshot's stored config records of topic ``q`` and router ``q->t``."""
    image = read_latest_snapshot(FileSystem(), path / "snapshots")
    assert image is not None
    (topic,) = [t.config for t in image.topics if t.name == "q"]
    (router,) = [r.config for r in image.routers if r.name == "q->t"]
    return topic, router


async def test_unknown_keys_of_stored_configs_survive_snapshots_and_reconfiguration(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    await configured(tmp_path, clock)
    topic, router = stored_records(tmp_path)
    patch_snapshot(
        tmp_path,
        topic={**topic, "future_knob": {"a": [1, 2]}},
        router={**router, "future_route": "x"},
    )

    node = await open_node(tmp_path, clock)
    q = node.engine._topics["q"]
    assert q.config.extra == {"future_knob": {"a": [1, 2]}}
    assert "future_knob" not in node.engine.topic_state("q").config.to_wire()  # never served
    assert routers_of(node).get("q->t").config.extra == {"future_route": "x"}
    await node.store.checkpoint()
    node.close()
    topic, router = stored_records(tmp_path)
    assert topic["future_knob"] == {"a": [1, 2]} and router["future_route"] == "x"

    # a request reconfigures: the unknown keys go on, through the WAL frames too
    node = await open_node(tmp_path, clock)
    await node.engine.put_topic("q", {"ttl_ms": 60_000}).wait
    routers_of(node).put("q->t", {"source": "q", "dest": "t", "preserve_tag": False})
    await flush(node)
    crash(node)
    node = await open_node(tmp_path, clock)
    try:
        q = node.engine._topics["q"]
        assert q.config.ttl_ms == 60_000 and q.config.extra == {"future_knob": {"a": [1, 2]}}
        r = routers_of(node).get("q->t").config
        assert not r.preserve_tag and r.extra == {"future_route": "x"}
    finally:
        node.close()


async def test_a_stored_config_missing_keys_opens_with_defaults(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    await configured(tmp_path, clock)
    patch_snapshot(tmp_path, topic={"type": "queue", "lease_ms": 5000}, router={"source": "q", "dest": "t"})
    node = await open_node(tmp_path, clock)
    try:
        config = node.engine._topics["q"].config
        assert config == dataclasses.replace(DEFAULT_CONFIG, type=TopicType.QUEUE, lease_ms=5000)
        r = routers_of(node).get("q->t")
        assert (r.config.filter, r.match, r.config.guarantee) == (None, None, "at_least_once")
        assert r.config.preserve_node and r.config.preserve_tag and not r.config.allow_cycle
    finally:
        node.close()


async def test_a_stored_config_that_todays_request_rules_refuse_still_recovers(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    await configured(tmp_path, clock)
    topic, router = stored_records(tmp_path)
    refused_topic = {
        **topic,
        "lease_ms": 5,  # below today's minimum (a request clamps it to 100)
        "priority": 5000,  # outside today's range
        "dead_letter": "no such name!",  # a name today's rules refuse
        "durable": "maybe",  # derived, and not a boolean: ignored
    }
    refused_router = {**router, "filter": ["tag", "Glob", "a"]}  # a malformed Glob: lenient
    patch_snapshot(tmp_path, topic=refused_topic, router=refused_router)
    node = await open_node(tmp_path, clock)
    try:
        config = node.engine._topics["q"].config
        assert (config.lease_ms, config.priority, config.dead_letter) == (5, 5000, "no such name!")
        assert config.durability is Durability.DISK
        r = routers_of(node).get("q->t")
        assert r.config.filter == ["tag", "Glob", "a"] and r.match == TagMatch(exact=None, prefix="a")
    finally:
        node.close()


async def test_replayed_config_frames_are_read_tolerantly_too(tmp_path: Path) -> None:
    """``TOPIC_PUT`` and ``ROUTER_PUT`` frames as a server with other rules could have logged
    them replay without the request rules."""
    clock = ManualClock(T0)
    node = await open_node(tmp_path, clock)
    await node.engine.put_topic("src", {}).wait
    wal = node.store.wal
    assert wal is not None
    topic_id = node.engine.next_topic_id
    stored = {"type": "queue", "claim_jitter_ms": 99_999, "dead_letter": "bad name", "later": True}
    put = formats.TopicPutPayload(T0, topic_id, "odd", stored, T0, None)
    wal.submit(FrameType.TOPIC_PUT, formats.encode_topic_put(put))
    route = {"source": "src", "dest": "odd", "filter": ["tag", "Glob", "x*y*"], "hops": 3}
    router = formats.RouterPayload(routers_of(node).next_id, "src->odd", route, 0)
    wal.submit(FrameType.ROUTER, formats.encode_router_put(router))
    await flush(node)
    crash(node)

    node = await open_node(tmp_path, clock)
    try:
        config = node.engine._topics["odd"].config
        assert (config.type, config.claim_jitter_ms, config.dead_letter) == (
            TopicType.QUEUE,
            99_999,
            "bad name",
        )
        assert config.extra == {"later": True}
        r = routers_of(node).get("src->odd")
        assert r.match == TagMatch(exact=None, prefix="x") and r.config.extra == {"hops": 3}
    finally:
        node.close()


def refused(path: Path, clock: ManualClock) -> str:
    """Recover ``path``, expecting a refusal; every file is left byte-identical. The message."""
    before = files_of(path)
    store = DataDirectory(path)
    store.lock()
    try:
        with pytest.raises(UnsupportedFormat) as err:
            for _ in store.recover(Engine(clock, Limits())):
                pass
    finally:
        store.close()
    assert files_of(path) == before  # nothing truncated, pruned, set aside or rewritten
    return str(err.value)


UNKNOWN_TOPIC_VALUES = [
    ("durability", "quorum"),
    ("type", "stream"),
    ("discard", "block"),
    ("cap_records", -5),
]


@pytest.mark.parametrize(("field", "value"), UNKNOWN_TOPIC_VALUES)
async def test_a_snapshot_config_value_this_server_does_not_know_is_refused(
    tmp_path: Path, field: str, value: Any
) -> None:
    """Not read as the default (and written back): a newer server wrote it."""
    clock = ManualClock(T0)
    await configured(tmp_path, clock)
    topic, _ = stored_records(tmp_path)
    patch_snapshot(tmp_path, topic={**topic, field: value})
    message = refused(tmp_path, clock)
    assert "topic 'q'" in message and f"config.{field} = {value!r}" in message
    assert "upgrade topics" in message


@pytest.mark.parametrize(
    ("field", "value"),
    [("guarantee", "exactly_once_v2"), ("filter", ["tag", "Ne", "a"]), ("filter", ["node", "Eq", "x"])],
)
async def test_a_snapshot_router_value_this_server_does_not_know_is_refused(
    tmp_path: Path, field: str, value: Any
) -> None:
    clock = ManualClock(T0)
    await configured(tmp_path, clock)
    _, router = stored_records(tmp_path)
    patch_snapshot(tmp_path, router={**router, field: value})
    message = refused(tmp_path, clock)
    assert "router 'q->t'" in message and f"{field} = {value!r}" in message
    assert "upgrade topics" in message


async def crashed_with(path: Path, clock: ManualClock, frame_type: int, payload: bytes) -> None:
    """A data directory whose WAL ends with a frame of ``frame_type`` (logged as a newer
    server could have), left as a crash leaves it."""
    node = await open_node(path, clock)
    await node.engine.put_topic("src", {}).wait
    wal = node.store.wal
    assert wal is not None
    wal.submit(frame_type, payload)  # type: ignore[arg-type]
    await flush(node)
    crash(node)


async def test_a_wal_topic_put_with_an_unknown_durability_is_refused(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    put = formats.TopicPutPayload(T0, 99, "odd", {"durability": "quorum"}, T0, None)
    await crashed_with(tmp_path, clock, FrameType.TOPIC_PUT, formats.encode_topic_put(put))
    message = refused(tmp_path, clock)
    assert "topic 'odd'" in message and "config.durability = 'quorum'" in message


async def test_a_wal_topic_put_with_a_negative_cap_is_refused(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    put = formats.TopicPutPayload(T0, 99, "odd", {"cap_records": -5}, T0, None)
    await crashed_with(tmp_path, clock, FrameType.TOPIC_PUT, formats.encode_topic_put(put))
    assert "config.cap_records = -5" in refused(tmp_path, clock)


async def test_a_wal_router_put_with_an_unknown_filter_operator_is_refused(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    route = {"source": "src", "dest": "t", "filter": ["tag", "Ne", "a"]}
    router = formats.RouterPayload(1, "src->t", route, 0)
    await crashed_with(tmp_path, clock, FrameType.ROUTER, formats.encode_router_put(router))
    message = refused(tmp_path, clock)
    assert "router 'src->t'" in message and "['tag', 'Ne', 'a']" in message


async def test_a_wal_frame_of_an_unknown_type_is_refused_not_truncated(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    await crashed_with(tmp_path, clock, 99, b"from the future")
    message = refused(tmp_path, clock)
    assert "frame type 99" in message and "upgrade topics" in message


async def test_a_router_frame_of_an_unknown_kind_is_refused(tmp_path: Path) -> None:
    clock = ManualClock(T0)
    await crashed_with(tmp_path, clock, FrameType.ROUTER, bytes([42]) + b"{}")
    message = refused(tmp_path, clock)
    assert "ROUTER frame kind 42" in message and "upgrade topics" in message
