"""§10 queue endpoints over HTTP (in-process app, manual clock): claim / ack / nack / extend —
every success body and every error status and code — plus the queue sub-object of topic state
and the immutability of ``type``.

The /work SSE stream needs a real socket (httpx's ASGI transport buffers whole responses):
see test_work_stream.py.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from topics_engine import ManualClock

from .conftest import assert_error

LEASE_ID = re.compile(r"^lease_[0-9a-f]+$")
ENDPOINTS = ("claim", "ack", "nack", "extend")
COUNTERS = ("ready", "in_flight", "dead_lettered")
"""The queue counters of §10.7 (the health fields are checked on their own)."""
HEALTH = ("delayed", "oldest_ready_age_ms", "holders", "holders_truncated")
"""The queue health fields (an extension) every response echoing the counters carries."""
# A request body each endpoint accepts (so only the topic can make it fail).
VALID: dict[str, dict[str, Any]] = {
    "claim": {"node": "w"},
    "ack": {"node": "w", "seqs": [1]},
    "nack": {"node": "w", "seqs": [1]},
    "extend": {"node": "w", "seqs": [1], "lease_ms": 1000},
}
# A request body each endpoint rejects with 400 invalid_request on a healthy queue.
INVALID: dict[str, dict[str, Any]] = {
    "claim": {"max": "lots"},
    "ack": {"node": 7, "seqs": "all"},
    "nack": {},
    "extend": {"node": "w", "seqs": [1]},
}


async def _queue(client: httpx.AsyncClient, name: str = "q", **config: Any) -> None:
    r = await client.put(f"/v0/topics/{name}", json={"type": "queue", **config})
    assert r.status_code == 201, r.text


async def _produce(client: httpx.AsyncClient, name: str, records: list[dict[str, Any]]) -> list[int]:
    r = await client.post(f"/v0/topics/{name}", json={"records": records})
    assert r.status_code in (200, 201), r.text
    return list(r.json()["seqs"])


async def _jobs(client: httpx.AsyncClient, name: str, n: int) -> list[int]:
    return await _produce(client, name, [{"data": {"job": i}} for i in range(n)])


async def _claim(client: httpx.AsyncClient, name: str = "q", **body: Any) -> dict[str, Any]:
    r = await client.post(f"/v0/topics/{name}/claim", json={"node": "w", **body})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def _post(client: httpx.AsyncClient, name: str, op: str, **body: Any) -> dict[str, Any]:
    r = await client.post(f"/v0/topics/{name}/{op}", json=body)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    return dict(r.json())


def _health(
    *, delayed: int = 0, age: int = 0, holders: list[tuple[str, int]] | None = None
) -> dict[str, Any]:
    """The health fields of a queue's counters, for exact comparisons."""
    listed = [{"node": node, "in_flight": n} for node, n in holders or []]
    return {"delayed": delayed, "oldest_ready_age_ms": age, "holders": listed, "holders_truncated": False}


async def _queue_state(client: httpx.AsyncClient, name: str = "q") -> dict[str, Any]:
    r = await client.get(f"/v0/topics/{name}", params={"touch": "false"})
    assert r.status_code == 200, r.text
    queue = r.json()["queue"]
    return {name: queue[name] for name in COUNTERS}


async def _live_records(client: httpx.AsyncClient, name: str) -> list[dict[str, Any]]:
    r = await client.post(f"/v0/topics/{name}/diff", json={"include_tags": True, "limit": 1000})
    assert r.status_code == 200, r.text
    return list(r.json()["records"])


async def _live_seqs(client: httpx.AsyncClient, name: str) -> list[int]:
    return [rec["$seq"] for rec in await _live_records(client, name)]


def _perf(body: dict[str, Any]) -> dict[str, Any]:
    perf = body["performance"]
    assert isinstance(perf, dict) and isinstance(perf["server_total_ms"], int | float)
    return perf


# ---------------------------------------------------------------------------------------------
# claim
# ---------------------------------------------------------------------------------------------


async def test_claim_body_carries_record_and_lease_fields(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    await _queue(client, lease_ms=30_000)
    produced_at = clock.now_ms()
    seqs = await _produce(
        client,
        "q",
        [
            {"data": {"type": "resize", "url": "s3://b/x.png"}, "tag": "job-1", "meta": {"trace": "z9"}},
            {"data": None},
            {"data": [1, 2, 3], "node": "producer-1"},
        ],
    )
    clock.advance(250)
    body = await _claim(client, max=16)
    assert set(body) == {"topic", "claimed", "count", "ready", *HEALTH, "performance"}
    assert body["topic"] == "q"
    assert body["count"] == len(body["claimed"]) == 3
    assert body["ready"] == 0
    _perf(body)
    jobs = body["claimed"]
    assert [j["$seq"] for j in jobs] == seqs  # ascending by $seq
    first, second, third = jobs
    assert first["$tag"] == "job-1" and first["meta"] == {"trace": "z9"}
    assert first["data"] == {"type": "resize", "url": "s3://b/x.png"}
    # $tag / meta / $node omitted when absent (§0.4); data kept even when null
    assert "$tag" not in second and "meta" not in second and "$node" not in second
    assert second["data"] is None
    assert third["$node"] == "producer-1" and third["data"] == [1, 2, 3]
    for job in jobs:
        assert {"$seq", "$ts", "data", "lease_id", "deadline", "deliveries"} <= set(job)
        assert job["$ts"] == produced_at
        assert LEASE_ID.match(job["lease_id"]), job
        assert job["deadline"] == clock.now_ms() + 30_000  # claim_ts + effective lease_ms
        assert job["deliveries"] == 1
    assert len({j["lease_id"] for j in jobs}) == 3


async def test_claim_defaults_to_one_job_and_reports_ready(client: httpx.AsyncClient) -> None:
    await _queue(client)
    seqs = await _jobs(client, "q", 4)
    body = await _claim(client)  # max defaults to 1
    assert body["count"] == 1 and [j["$seq"] for j in body["claimed"]] == seqs[:1]
    assert body["ready"] == 3
    body = await _claim(client, max=0)  # 0 means the default 1
    assert [j["$seq"] for j in body["claimed"]] == seqs[1:2]
    assert body["ready"] == 2


async def test_claim_max_is_clamped_not_rejected(client: httpx.AsyncClient) -> None:
    await _queue(client)
    await _jobs(client, "q", 3)
    body = await _claim(client, max=50_000)
    assert body["count"] == 3 and body["ready"] == 0


async def test_claim_on_an_empty_queue_is_200_with_nothing(client: httpx.AsyncClient) -> None:
    await _queue(client)
    body = await _claim(client, max=8)
    assert body["claimed"] == [] and body["count"] == 0 and body["ready"] == 0
    _perf(body)


async def test_claim_lease_ms_overrides_topic_default_and_is_clamped(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    await _queue(client, lease_ms=5_000)
    await _jobs(client, "q", 4)
    now = clock.now_ms()
    assert (await _claim(client))["claimed"][0]["deadline"] == now + 5_000  # topic default
    assert (await _claim(client, lease_ms=1_234))["claimed"][0]["deadline"] == now + 1_234
    assert (await _claim(client, lease_ms=5))["claimed"][0]["deadline"] == now + 100  # low clamp
    big = await _claim(client, lease_ms=10**12)
    assert big["claimed"][0]["deadline"] == now + 86_400_000  # high clamp


async def test_claimed_jobs_are_not_claimable_until_the_lease_expires(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    await _queue(client)
    seqs = await _jobs(client, "q", 3)
    first = await _claim(client, max=2, lease_ms=1_000)
    assert [j["$seq"] for j in first["claimed"]] == seqs[:2]
    other = await _claim(client, node="w2", max=10)
    assert [j["$seq"] for j in other["claimed"]] == seqs[2:]
    assert (await _claim(client, node="w3", max=10))["count"] == 0
    clock.advance(1_000)  # deadline reached, not passed: still leased
    assert (await _claim(client, node="w3", max=10))["count"] == 0
    clock.advance(1)
    again = await _claim(client, node="w3", max=10)
    assert [j["$seq"] for j in again["claimed"]] == seqs[:2]
    assert all(j["deliveries"] == 2 for j in again["claimed"])
    assert {j["lease_id"] for j in again["claimed"]}.isdisjoint(j["lease_id"] for j in first["claimed"])


async def test_reclaimed_jobs_are_served_before_fresh_ones(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    await _queue(client)
    seqs = await _jobs(client, "q", 2)
    await _claim(client, lease_ms=100)  # seqs[0]
    clock.advance(101)
    await _jobs(client, "q", 1)
    body = await _claim(client, max=1)
    assert [j["$seq"] for j in body["claimed"]] == [seqs[0]]
    assert body["claimed"][0]["deliveries"] == 2


# ---------------------------------------------------------------------------------------------
# ack
# ---------------------------------------------------------------------------------------------


async def test_ack_deletes_held_jobs_and_reports_counters(client: httpx.AsyncClient) -> None:
    await _queue(client)
    seqs = await _jobs(client, "q", 5)
    claimed = await _claim(client, max=3)
    held = [j["$seq"] for j in claimed["claimed"]]
    body = await _post(client, "q", "ack", node="w", seqs=held[:2])
    assert set(body) == {"topic", "acked", "skipped", "ready", "in_flight", *HEALTH, "performance"}
    assert body["topic"] == "q"
    assert body["acked"] == 2 and body["skipped"] == []  # skipped is always present
    assert body["ready"] == 2 and body["in_flight"] == 1
    _perf(body)
    state = (await client.get("/v0/topics/q")).json()
    assert state["count"] == 3
    assert state["queue"] == {"ready": 2, "in_flight": 1, "dead_lettered": 0, **_health(holders=[("w", 1)])}
    # the ack is the delete: the jobs log no longer holds them
    assert await _live_seqs(client, "q") == [s for s in seqs if s not in held[:2]]


async def test_ack_skips_what_the_node_does_not_hold_and_is_idempotent(client: httpx.AsyncClient) -> None:
    await _queue(client)
    seqs = await _jobs(client, "q", 3)
    await _claim(client, max=1)  # w holds seqs[0]
    await _claim(client, node="other", max=1)  # other holds seqs[1]; seqs[2] never claimed
    body = await _post(client, "q", "ack", node="w", seqs=[seqs[1], seqs[2], 999, seqs[0]])
    assert body["acked"] == 1
    assert body["skipped"] == [seqs[1], seqs[2], 999]
    again = await _post(client, "q", "ack", node="w", seqs=[seqs[0]])
    assert again["acked"] == 0 and again["skipped"] == [seqs[0]]
    assert again["ready"] == 1 and again["in_flight"] == 1


async def test_ack_after_expiry_and_reclaim_is_skipped(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await _queue(client)
    [seq] = await _jobs(client, "q", 1)
    await _claim(client, node="slow", lease_ms=100)
    clock.advance(150)
    # expired but not yet reclaimed: no longer leased to "slow" either
    late = await _post(client, "q", "ack", node="slow", seqs=[seq])
    assert late["acked"] == 0 and late["skipped"] == [seq]
    reclaimed = await _claim(client, node="fast")
    assert reclaimed["claimed"][0]["deliveries"] == 2
    late = await _post(client, "q", "ack", node="slow", seqs=[seq])
    assert late["acked"] == 0 and late["skipped"] == [seq]
    ok = await _post(client, "q", "ack", node="fast", seqs=[seq])
    assert ok["acked"] == 1 and ok["ready"] == 0 and ok["in_flight"] == 0


async def test_ack_lease_ids_fence_stale_tokens(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await _queue(client)
    seqs = await _jobs(client, "q", 2)
    first = (await _claim(client, max=2, lease_ms=100))["claimed"]
    stale = {j["$seq"]: j["lease_id"] for j in first}
    clock.advance(101)
    fresh = {j["$seq"]: j["lease_id"] for j in (await _claim(client, max=2))["claimed"]}  # same node
    body = await _post(client, "q", "ack", node="w", seqs=seqs, lease_ids=[stale[seqs[0]], fresh[seqs[1]]])
    assert body["acked"] == 1 and body["skipped"] == [seqs[0]]
    body = await _post(client, "q", "ack", node="w", seqs=[seqs[0]], lease_ids=[fresh[seqs[0]]])
    assert body["acked"] == 1 and body["skipped"] == []


# ---------------------------------------------------------------------------------------------
# nack
# ---------------------------------------------------------------------------------------------


async def test_nack_releases_for_immediate_reclaim(client: httpx.AsyncClient) -> None:
    await _queue(client)
    seqs = await _jobs(client, "q", 2)
    await _claim(client, max=2)
    body = await _post(client, "q", "nack", node="w", seqs=[seqs[0], 77])
    assert set(body) == {"topic", "nacked", "skipped", "ready", "in_flight", *HEALTH, "performance"}
    assert body["topic"] == "q" and body["nacked"] == 1 and body["skipped"] == [77]
    assert body["ready"] == 1 and body["in_flight"] == 1
    _perf(body)
    again = await _claim(client, node="w2")
    assert again["claimed"][0]["$seq"] == seqs[0] and again["claimed"][0]["deliveries"] == 2


async def test_nack_skipped_is_present_even_when_empty(client: httpx.AsyncClient) -> None:
    await _queue(client)
    [seq] = await _jobs(client, "q", 1)
    await _claim(client)
    body = await _post(client, "q", "nack", node="w", seqs=[seq], delay_ms=0)
    assert body["nacked"] == 1 and body["skipped"] == []


async def test_delayed_nack_is_invisible_until_the_delay_elapses(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    await _queue(client)
    [seq] = await _jobs(client, "q", 1)
    await _claim(client)
    body = await _post(client, "q", "nack", node="w", seqs=[seq], delay_ms=5_000)
    assert body["nacked"] == 1 and body["ready"] == 0 and body["in_flight"] == 0
    assert (await _claim(client, node="w2"))["count"] == 0
    clock.advance(4_999)
    assert (await _queue_state(client))["ready"] == 0
    assert (await _claim(client, node="w2"))["count"] == 0
    clock.advance(1)
    assert (await _queue_state(client))["ready"] == 1
    again = await _claim(client, node="w2")
    assert again["claimed"][0]["$seq"] == seq and again["claimed"][0]["deliveries"] == 2


async def test_nack_by_a_non_holder_or_stale_token_is_skipped(client: httpx.AsyncClient) -> None:
    await _queue(client)
    [seq] = await _jobs(client, "q", 1)
    await _claim(client)
    body = await _post(client, "q", "nack", node="intruder", seqs=[seq])
    assert body["nacked"] == 0 and body["skipped"] == [seq]
    body = await _post(client, "q", "nack", node="w", seqs=[seq], lease_ids=["lease_00"])
    assert body["nacked"] == 0 and body["skipped"] == [seq]
    assert body["in_flight"] == 1


# ---------------------------------------------------------------------------------------------
# extend
# ---------------------------------------------------------------------------------------------


async def test_extend_sets_deadline_from_now(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await _queue(client)
    seqs = await _jobs(client, "q", 2)
    claimed = (await _claim(client, max=1, lease_ms=1_000))["claimed"][0]
    clock.advance(900)
    body = await _post(client, "q", "extend", node="w", seqs=[seqs[0], seqs[1]], lease_ms=2_000)
    assert set(body) == {"topic", "extended", "skipped", "deadlines", "performance"}
    assert body["topic"] == "q" and body["extended"] == 1
    assert body["skipped"] == [seqs[1]]  # never claimed
    assert body["deadlines"] == {str(seqs[0]): clock.now_ms() + 2_000}  # sets, not adds
    _perf(body)
    # the lease now outlives its original deadline ...
    clock.advance(1_500)
    assert [j["$seq"] for j in (await _claim(client, node="w2", max=5))["claimed"]] == [seqs[1]]
    # ... and then expires at the extended one; extending did not count a delivery
    clock.advance(501)
    again = (await _claim(client, node="w2", max=5))["claimed"]
    assert [j["$seq"] for j in again] == [seqs[0]]
    assert again[0]["deliveries"] == claimed["deliveries"] + 1 == 2


async def test_extend_lease_ms_is_clamped_and_skipped_always_present(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    await _queue(client)
    [seq] = await _jobs(client, "q", 1)
    await _claim(client)
    body = await _post(client, "q", "extend", node="w", seqs=[seq], lease_ms=1)
    assert body["skipped"] == [] and body["deadlines"] == {str(seq): clock.now_ms() + 100}
    body = await _post(client, "q", "extend", node="w", seqs=[seq], lease_ms=10**12)
    assert body["deadlines"] == {str(seq): clock.now_ms() + 86_400_000}


async def test_extend_of_an_expired_reclaimed_lease_is_skipped(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    await _queue(client)
    [seq] = await _jobs(client, "q", 1)
    await _claim(client, node="slow", lease_ms=100)
    clock.advance(101)
    await _claim(client, node="fast")
    body = await _post(client, "q", "extend", node="slow", seqs=[seq], lease_ms=10_000)
    assert body["extended"] == 0 and body["skipped"] == [seq] and body["deadlines"] == {}


# ---------------------------------------------------------------------------------------------
# 400 invalid_request / batch_too_large
# ---------------------------------------------------------------------------------------------

BAD_BODIES = [
    ("claim", {}),
    ("claim", {"max": 2}),
    ("claim", {"node": ""}),
    ("claim", {"node": 5}),
    ("claim", {"node": None}),
    ("claim", {"node": "w", "max": "8"}),
    ("claim", {"node": "w", "max": 1.5}),
    ("claim", {"node": "w", "max": -1}),
    ("claim", {"node": "w", "lease_ms": "30s"}),
    ("claim", {"node": "w", "lease_ms": -5}),
    ("claim", {"node": "w" * 129}),
    ("ack", {"seqs": [1]}),
    ("ack", {"node": "", "seqs": [1]}),
    ("ack", {"node": "w"}),
    ("ack", {"node": "w", "seqs": []}),
    ("ack", {"node": "w", "seqs": 1}),
    ("ack", {"node": "w", "seqs": ["1"]}),
    ("ack", {"node": "w", "seqs": [1.5]}),
    ("ack", {"node": "w", "seqs": [-1]}),
    ("ack", {"node": "w", "seqs": [None]}),
    ("ack", {"node": "w", "seqs": [1], "lease_ids": [7]}),
    ("ack", {"node": "w", "seqs": [1], "lease_ids": "lease_aa"}),
    ("nack", {"seqs": [1]}),
    ("nack", {"node": "w"}),
    ("nack", {"node": "w", "seqs": ["x"]}),
    ("nack", {"node": "w", "seqs": [1], "delay_ms": "soon"}),
    ("nack", {"node": "w", "seqs": [1], "delay_ms": -1}),
    ("extend", {"node": "w", "seqs": [1]}),  # lease_ms is required on extend
    ("extend", {"seqs": [1], "lease_ms": 1000}),
    ("extend", {"node": "w", "lease_ms": 1000}),
    ("extend", {"node": "w", "seqs": [{}], "lease_ms": 1000}),
    ("extend", {"node": "w", "seqs": [1], "lease_ms": "1000"}),
    ("claim", {"node": "w", "unknown_field": 1}),
    ("ack", {"node": "w", "seqs": [1], "max": 3}),
]


@pytest.mark.parametrize(
    ("op", "body"), BAD_BODIES, ids=[f"{op}-{i}" for i, (op, _) in enumerate(BAD_BODIES)]
)
async def test_bad_fields_are_400_invalid_request(
    client: httpx.AsyncClient, op: str, body: dict[str, Any]
) -> None:
    await _queue(client)
    await _jobs(client, "q", 2)
    await _claim(client, max=2)
    before = (await client.get("/v0/topics/q", params={"touch": "false"})).json()
    assert_error(await client.post(f"/v0/topics/q/{op}", json=body), 400, "invalid_request")
    after = (await client.get("/v0/topics/q", params={"touch": "false"})).json()
    assert (after["count"], after["queue"]) == (before["count"], before["queue"])  # nothing happened


@pytest.mark.parametrize("op", ENDPOINTS)
async def test_non_json_body_is_400(client: httpx.AsyncClient, op: str) -> None:
    await _queue(client)
    r = await client.post(
        f"/v0/topics/q/{op}", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert_error(r, 400, "invalid_request")


@pytest.mark.parametrize("op", ["ack", "nack", "extend"])
async def test_more_than_1000_seqs_is_400_batch_too_large(client: httpx.AsyncClient, op: str) -> None:
    await _queue(client)
    await _jobs(client, "q", 1)
    await _claim(client)
    body = {**VALID[op], "seqs": list(range(1, 1002))}
    error = assert_error(await client.post(f"/v0/topics/q/{op}", json=body), 400, "batch_too_large")
    assert isinstance(error["message"], str)
    # exactly 1000 is fine
    ok = await _post(client, "q", op, **{**VALID[op], "seqs": list(range(1, 1001))})
    assert len(ok["skipped"]) == 999


# ---------------------------------------------------------------------------------------------
# 404 topic_not_found / 409 not_a_queue (checked before the body's fields)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ENDPOINTS)
async def test_missing_topic_is_404_and_never_auto_created(client: httpx.AsyncClient, op: str) -> None:
    error = assert_error(await client.post(f"/v0/topics/ghost/{op}", json=VALID[op]), 404, "topic_not_found")
    assert error["detail"] == {"topic": "ghost"}
    assert_error(await client.get("/v0/topics/ghost"), 404, "topic_not_found")


@pytest.mark.parametrize("op", ENDPOINTS)
async def test_missing_topic_with_an_invalid_body_is_still_404(client: httpx.AsyncClient, op: str) -> None:
    assert_error(await client.post(f"/v0/topics/ghost/{op}", json=INVALID[op]), 404, "topic_not_found")
    assert_error(await client.get("/v0/topics/ghost"), 404, "topic_not_found")


@pytest.mark.parametrize("op", ENDPOINTS)
async def test_log_topic_is_409_not_a_queue(client: httpx.AsyncClient, op: str) -> None:
    await _produce(client, "plain", [{"data": 1}])
    error = assert_error(await client.post(f"/v0/topics/plain/{op}", json=VALID[op]), 409, "not_a_queue")
    assert error["detail"] == {"topic": "plain"}
    state = (await client.get("/v0/topics/plain")).json()
    assert state["type"] == "log" and state["count"] == 1


@pytest.mark.parametrize("op", ENDPOINTS)
async def test_log_topic_with_an_invalid_body_is_still_409(client: httpx.AsyncClient, op: str) -> None:
    """§10: the topic is resolved (404/409) before the endpoint's own fields are judged."""
    await client.put("/v0/topics/plain", json={})
    assert_error(await client.post(f"/v0/topics/plain/{op}", json=INVALID[op]), 409, "not_a_queue")
    assert_error(
        await client.post(f"/v0/topics/plain/{op}", json={**VALID[op], "nope": True}), 409, "not_a_queue"
    )


@pytest.mark.parametrize("op", ["ack", "nack", "extend"])
async def test_log_topic_with_an_oversized_batch_is_409(client: httpx.AsyncClient, op: str) -> None:
    await client.put("/v0/topics/plain", json={})
    body = {**VALID[op], "seqs": list(range(1, 1002))}
    assert_error(await client.post(f"/v0/topics/plain/{op}", json=body), 409, "not_a_queue")


async def test_deleted_queue_answers_404(client: httpx.AsyncClient) -> None:
    await _queue(client)
    await _jobs(client, "q", 1)
    assert (await client.delete("/v0/topics/q")).status_code == 200
    for op in ENDPOINTS:
        assert_error(await client.post(f"/v0/topics/q/{op}", json=VALID[op]), 404, "topic_not_found")


async def test_recreated_as_log_answers_409(client: httpx.AsyncClient) -> None:
    await _queue(client)
    assert (await client.delete("/v0/topics/q")).status_code == 200
    await client.put("/v0/topics/q", json={"type": "log"})
    for op in ENDPOINTS:
        assert_error(await client.post(f"/v0/topics/q/{op}", json=VALID[op]), 409, "not_a_queue")


async def test_errors_carry_a_performance_block(client: httpx.AsyncClient) -> None:
    r = await client.post("/v0/topics/ghost/claim", json=VALID["claim"])
    assert r.status_code == 404 and "server_total_ms" in r.json()["performance"]


# ---------------------------------------------------------------------------------------------
# topic state and type immutability
# ---------------------------------------------------------------------------------------------


async def test_queue_sub_object_in_topic_state(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await _queue(client)
    r = await client.get("/v0/topics/q")
    state = r.json()
    assert state["type"] == "queue" and state["config"]["type"] == "queue"
    assert state["queue"] == {"ready": 0, "in_flight": 0, "dead_lettered": 0, **_health()}
    seqs = await _jobs(client, "q", 4)
    assert (await _queue_state(client)) == {"ready": 4, "in_flight": 0, "dead_lettered": 0}
    await _claim(client, max=3, lease_ms=1_000)
    assert (await _queue_state(client)) == {"ready": 1, "in_flight": 3, "dead_lettered": 0}
    await _post(client, "q", "ack", node="w", seqs=[seqs[0]])
    assert (await _queue_state(client)) == {"ready": 1, "in_flight": 2, "dead_lettered": 0}
    clock.advance(1_001)  # the leases expire lazily; GET still reports them as ready
    assert (await _queue_state(client)) == {"ready": 3, "in_flight": 0, "dead_lettered": 0}


async def test_dead_lettered_counter(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await _queue(client, max_deliveries=1, dead_letter="q.dlq")
    [seq] = await _produce(client, "q", [{"data": {"poison": True}, "tag": "p1", "meta": {"k": "v"}}])
    await _claim(client, lease_ms=100)
    clock.advance(101)
    body = await _claim(client)
    assert body["count"] == 0
    assert (await _queue_state(client)) == {"ready": 0, "in_flight": 0, "dead_lettered": 1}
    dlq = (await client.get("/v0/topics/q.dlq")).json()
    assert dlq["type"] == "log" and dlq["count"] == 1 and "queue" not in dlq
    [moved] = await _live_records(client, "q.dlq")
    assert moved["data"] == {"poison": True} and moved["$tag"] == "p1"
    assert moved["meta"] == {
        "k": "v",
        "$dead_letter_from": "q",
        "$dead_letter_src_seq": seq,
        "$dead_letter_deliveries": 1,
    }
    assert await _live_seqs(client, "q") == []


async def test_log_topic_state_has_no_queue_sub_object(client: httpx.AsyncClient) -> None:
    await _produce(client, "plain", [{"data": 1}])
    state = (await client.get("/v0/topics/plain")).json()
    assert state["type"] == "log" and "queue" not in state


async def test_type_is_immutable(client: httpx.AsyncClient) -> None:
    await _queue(client)
    assert_error(await client.put("/v0/topics/q", json={"type": "log"}), 409, "topic_exists_incompatible")
    await client.put("/v0/topics/plain", json={"type": "log"})
    assert_error(
        await client.put("/v0/topics/plain", json={"type": "queue"}), 409, "topic_exists_incompatible"
    )
    # queue-only fields stay mutable, and type survives a PUT that omits it
    r = await client.put("/v0/topics/q", json={"lease_ms": 2_000})
    assert r.status_code == 200 and r.json()["config"]["type"] == "queue"
    assert r.json()["config"]["lease_ms"] == 2_000
    assert (await client.get("/v0/topics/q")).json()["type"] == "queue"
    assert (await client.get("/v0/topics/plain")).json()["type"] == "log"


async def test_produce_auto_creates_a_log_not_a_queue(client: httpx.AsyncClient) -> None:
    await _produce(client, "auto", [{"data": 1}])
    assert_error(await client.post("/v0/topics/auto/claim", json=VALID["claim"]), 409, "not_a_queue")


# ---------------------------------------------------------------------------------------------
# queue health and the leases list (extensions)
# ---------------------------------------------------------------------------------------------


async def _health_of(client: httpx.AsyncClient, name: str = "q") -> dict[str, Any]:
    r = await client.get(f"/v0/topics/{name}", params={"touch": "false"})
    assert r.status_code == 200, r.text
    queue = r.json()["queue"]
    return {field: queue[field] for field in HEALTH}


async def test_queue_health_follows_claims_nacks_and_time(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    await _queue(client, lease_ms=10_000)
    assert await _health_of(client) == _health()
    first = await _jobs(client, "q", 3)
    clock.advance(500)
    later = await _jobs(client, "q", 2)
    clock.advance(1_000)
    assert await _health_of(client) == _health(age=1_500)  # the oldest job waits since it was written
    a = await _claim(client, node="a", max=2)
    assert [j["$seq"] for j in a["claimed"]] == first[:2]
    # first[2] is the oldest claimable job now: written with the first two
    assert {field: a[field] for field in HEALTH} == _health(age=1_500, holders=[("a", 2)])
    b = await _claim(client, node="b", max=2)
    assert {field: b[field] for field in HEALTH} == _health(age=1_000, holders=[("a", 2), ("b", 2)])
    nacked = await _post(client, "q", "nack", node="a", seqs=[first[0]], delay_ms=5_000)
    assert {field: nacked[field] for field in HEALTH} == _health(
        delayed=1, age=1_000, holders=[("b", 2), ("a", 1)]
    )
    acked = await _post(client, "q", "ack", node="b", seqs=[first[2], later[0]])
    assert {field: acked[field] for field in HEALTH} == _health(delayed=1, age=1_000, holders=[("a", 1)])
    clock.advance(5_000)  # the nack delay is over: first[0] is claimable again, and the oldest
    assert await _health_of(client) == _health(age=6_500, holders=[("a", 1)])
    clock.advance(10_001)  # a's remaining lease expires
    assert await _health_of(client) == _health(age=16_501)
    state = await _queue_state(client)
    assert state == {"ready": 3, "in_flight": 0, "dead_lettered": 0}


async def test_holders_list_the_100_busiest_nodes(client: httpx.AsyncClient) -> None:
    await _queue(client)
    await _jobs(client, "q", 103)
    await _claim(client, node="n-busy", max=2)
    for k in range(101):
        await _claim(client, node=f"n{k:03d}", max=1)
    r = await client.get("/v0/topics/q")
    queue = r.json()["queue"]
    assert queue["in_flight"] == 103 and queue["holders_truncated"] is True
    assert queue["holders"][0] == {"node": "n-busy", "in_flight": 2}
    assert [h["node"] for h in queue["holders"][1:]] == [f"n{k:03d}" for k in range(99)]  # ties by name
    metrics = (await client.get("/v0/metrics")).text
    assert 'topics_topic_queue_holders{topic="q"} 102.0' in metrics


async def test_leases_lists_who_holds_what_page_by_page(
    client: httpx.AsyncClient, clock: ManualClock
) -> None:
    await _queue(client, lease_ms=10_000)
    seqs = await _jobs(client, "q", 7)
    a = await _claim(client, node="a", max=3)
    b = await _claim(client, node="b", max=3)
    await _post(client, "q", "extend", node="b", seqs=[seqs[4]], lease_ms=60_000)
    await _post(client, "q", "ack", node="a", seqs=[seqs[1]])
    r = await client.get("/v0/topics/q/leases", params={"page_size": 2})
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["leases"] == [
        {
            "seq": seqs[0],
            "node": "a",
            "lease_id": a["claimed"][0]["lease_id"],
            "deadline": a["claimed"][0]["deadline"],
            "deliveries": 1,
        },
        {
            "seq": seqs[2],
            "node": "a",
            "lease_id": a["claimed"][2]["lease_id"],
            "deadline": a["claimed"][2]["deadline"],
            "deliveries": 1,
        },
    ]
    assert page["next_cursor"] == str(seqs[2])
    _perf(page)
    rest = (await client.get("/v0/topics/q/leases", params={"cursor": page["next_cursor"]})).json()
    assert [(x["seq"], x["node"]) for x in rest["leases"]] == [(seqs[3], "b"), (seqs[4], "b"), (seqs[5], "b")]
    assert (
        rest["leases"][1]["deadline"] == clock.now_ms() + 60_000
        and rest["leases"][0]["lease_id"] == b["claimed"][0]["lease_id"]
    )
    assert "next_cursor" not in rest
    only_b = (await client.get("/v0/topics/q/leases", params={"node": "b", "cursor": str(seqs[3])})).json()
    assert [x["seq"] for x in only_b["leases"]] == [seqs[4], seqs[5]]
    clock.advance(10_001)  # every lease but the extended one expires: not listed any more
    left = (await client.get("/v0/topics/q/leases")).json()
    assert [x["seq"] for x in left["leases"]] == [seqs[4]]


async def test_leases_answers_like_every_queue_endpoint(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/v0/topics/nope/leases"), 404, "topic_not_found")
    r = await client.put("/v0/topics/log", json={})
    assert r.status_code == 201, r.text
    assert_error(await client.get("/v0/topics/log/leases", params={"cursor": "x"}), 409, "not_a_queue")
    await _queue(client)
    assert_error(await client.get("/v0/topics/q/leases", params={"cursor": "x"}), 400, "invalid_request")
    assert_error(await client.get("/v0/topics/q/leases", params={"page_size": -1}), 400, "invalid_request")
    r = await client.get("/v0/topics/q/leases", params={"cursor": "99999999999999999999", "page_size": 0})
    assert r.status_code == 200 and r.json()["leases"] == []


# ---------------------------------------------------------------------------------------------
# explicit dead-letter moves (an extension)
# ---------------------------------------------------------------------------------------------


async def test_dead_letter_moves_held_jobs_now_with_the_reason(client: httpx.AsyncClient) -> None:
    await _queue(client, dead_letter="q.dlq", max_deliveries=5)
    seqs = await _produce(
        client, "q", [{"data": {"job": 1}, "tag": "t1", "meta": {"trace": "z9"}}, {"data": 2}]
    )
    jobs = (await _claim(client, node="w", max=2))["claimed"]
    body = await _post(
        client,
        "q",
        "dead_letter",
        node="w",
        seqs=[seqs[0], seqs[1], 99],
        lease_ids=[jobs[0]["lease_id"], "lease_stale", "x"],
        reason="not a PNG",
    )
    assert body["moved"] == [seqs[0]] and body["skipped"] == [seqs[1], 99]
    assert (body["ready"], body["in_flight"]) == (0, 1) and body["holders"] == [{"node": "w", "in_flight": 1}]
    _perf(body)
    [moved] = await _live_records(client, "q.dlq")
    assert moved["data"] == {"job": 1} and moved["$tag"] == "t1"
    assert moved["meta"] == {
        "trace": "z9",
        "$dead_letter_from": "q",
        "$dead_letter_deliveries": 1,
        "$dead_letter_src_seq": seqs[0],
        "$dead_letter_reason": "not a PNG",
    }
    assert await _live_seqs(client, "q") == [seqs[1]]
    assert await _queue_state(client) == {"ready": 0, "in_flight": 1, "dead_lettered": 1}


async def test_a_refused_dead_letter_move_moves_nothing(client: httpx.AsyncClient) -> None:
    r = await client.put("/v0/topics/full.dlq", json={"cap_records": 1, "discard": "reject"})
    assert r.status_code == 201, r.text
    await _produce(client, "full.dlq", [{"data": 0}])
    await _queue(client, dead_letter="full.dlq")
    seqs = await _jobs(client, "q", 2)
    await _claim(client, node="w", max=2)
    r = await client.post("/v0/topics/q/dead_letter", json={"node": "w", "seqs": seqs})
    assert_error(r, 422, "topic_full")
    assert await _live_seqs(client, "q") == seqs  # nothing moved, every lease stands
    assert await _queue_state(client) == {"ready": 0, "in_flight": 2, "dead_lettered": 0}
    assert (await _post(client, "q", "ack", node="w", seqs=seqs))["acked"] == 2


async def test_dead_letter_without_a_dead_letter_topic_or_on_a_log(client: httpx.AsyncClient) -> None:
    await _queue(client)
    [seq] = await _jobs(client, "q", 1)
    await _claim(client, node="w")
    r = await client.post("/v0/topics/q/dead_letter", json={"node": "w", "seqs": [seq]})
    error = assert_error(r, 409, "no_dead_letter")
    assert error["detail"] == {"topic": "q"}
    r = await client.put("/v0/topics/log", json={})
    assert r.status_code == 201
    assert_error(await client.post("/v0/topics/log/dead_letter", json={"seqs": "bad"}), 409, "not_a_queue")
    assert_error(await client.post("/v0/topics/nope/dead_letter", json={}), 404, "topic_not_found")
    long = {"node": "w", "seqs": [seq], "reason": "x" * 1025}
    assert_error(await client.post("/v0/topics/q/dead_letter", json=long), 400, "invalid_request")


# -- delayed writes (an extension: docs/DECISIONS.md, "Delayed jobs") ----------------------------


async def test_a_write_delay_holds_jobs_back_until_due(client: httpx.AsyncClient, clock: ManualClock) -> None:
    await _queue(client)
    r = await client.post(
        "/v0/topics/q",
        json={
            "records": [{"data": 1}, {"data": 2, "delay_ms": 0}, {"data": 3, "delay_ms": 900}],
            "delay_ms": 300,
        },
    )
    assert r.status_code == 200, r.text
    first, second, third = r.json()["seqs"]
    records = (await client.post("/v0/topics/q/diff", json={})).json()["records"]
    assert [rec.get("$delay_ms") for rec in records] == [300, None, 900]
    state = (await client.get("/v0/topics/q")).json()["queue"]
    assert (state["ready"], state["delayed"]) == (1, 2)
    assert [j["$seq"] for j in (await _claim(client, max=10))["claimed"]] == [second]
    clock.advance(300)
    [job] = (await _claim(client, max=10))["claimed"]
    assert (job["$seq"], job["$delay_ms"]) == (first, 300)
    clock.advance(600)
    assert [j["$seq"] for j in (await _claim(client, max=10))["claimed"]] == [third]


@pytest.mark.parametrize(
    "body",
    [
        {"records": [{"data": 1, "delay_ms": 5}]},
        {"records": [{"data": 1}], "delay_ms": 5},
        {"records": [{"data": 1}], "delay_ms": 0},
    ],
)
async def test_a_write_delay_on_a_log_is_refused(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    r = await client.post("/v0/topics/plain", json={"records": [{"data": 0}]})
    assert r.status_code == 201
    error = assert_error(await client.post("/v0/topics/plain", json=body), 409, "not_a_queue")
    assert error["detail"] == {"topic": "plain", "field": "delay_ms"}
    assert (await client.get("/v0/topics/plain")).json()["head_seq"] == 1
    assert_error(await client.post("/v0/topics/fresh", json=body), 409, "not_a_queue")
    assert (await client.get("/v0/topics/fresh")).status_code == 404  # not created either


async def test_a_negative_write_delay_is_refused_by_the_schema(client: httpx.AsyncClient) -> None:
    await _queue(client)
    r = await client.post("/v0/topics/q", json={"records": [{"data": 1, "delay_ms": -1}]})
    assert_error(r, 400, "invalid_request")
