"""The client's contract points, against scripted answers (``httpx.MockTransport``): retries and
their delays, what is never retried, headers, tolerant parsing, the error envelope."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest
import topics
from topics import _transport

STATE = {
    "topic": "t",
    "type": "log",
    "head_seq": 0,
    "earliest_seq": 1,
    "next_seq": 1,
    "count": 0,
    "bytes": 0,
    "config": {
        "type": "log",
        "ttl_ms": 0,
        "cap_records": 0,
        "cap_bytes": 0,
        "discard": "old",
        "durable": False,
        "durability": "disk",
        "priority": None,
        "auto_priority": True,
        "auto_create": True,
        "idempotency_window_ms": 120000,
        "dedupe_node": True,
        "lease_ms": 30000,
        "claim_jitter_ms": 0,
        "max_deliveries": 0,
        "dead_letter": None,
        "leases_durable": False,
    },
    "effective_priority": 0,
    "last_write_ts": None,
    "last_read_ts": None,
    "performance": {"server_total_ms": 0.1},
}


def error(status: int, code: str, detail: dict[str, Any] | None = None, **headers: str) -> httpx.Response:
    body = {
        "error": {"code": code, "message": code.replace("_", " "), **({"detail": detail} if detail else {})}
    }
    return httpx.Response(status, json=body, headers=headers)


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(_transport.random, "uniform", lambda a, b: b)  # no jitter: exact delays
    monkeypatch.setattr("topics.client.time.sleep", slept.append)
    return slept


def scripted(
    answers: list[httpx.Response | Exception], seen: list[httpx.Request]
) -> Callable[..., topics.Client]:
    it: Iterator[httpx.Response | Exception] = iter(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = next(it)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def make(**kwargs: Any) -> topics.Client:
        return topics.Client("http://topics.test", transport=httpx.MockTransport(handler), **kwargs)

    return make


def test_throttled_is_retried_after_the_servers_advice(sleeps: list[float]) -> None:
    seen: list[httpx.Request] = []
    client = scripted(
        [
            error(429, "throttled", {"retry_after_ms": 250}, **{"Retry-After": "1"}),
            error(503, "not_ready", None, **{"Retry-After": "2"}),
            httpx.Response(200, json=STATE),
        ],
        seen,
    )()
    assert client.topic("t").head_seq == 0
    assert sleeps == [pytest.approx(0.275), pytest.approx(2.2)]  # detail.retry_after_ms wins over the header
    assert len(seen) == 3


def test_retries_run_out_into_the_typed_error(sleeps: list[float]) -> None:
    seen: list[httpx.Request] = []
    client = scripted(
        [error(429, "throttled", {"limit": "max_topics", "max": 1}, **{"Retry-After": "1"})] * 2, seen
    )(retries=1)
    with pytest.raises(topics.Throttled) as err:
        client.topic("t")
    assert (err.value.retry_after, err.value.detail["limit"]) == (1.0, "max_topics")
    assert len(seen) == 2


def test_wal_read_only_is_never_retried(sleeps: list[float]) -> None:
    seen: list[httpx.Request] = []
    client = scripted([error(503, "not_ready", {"wal_read_only": True})], seen)()
    with pytest.raises(topics.NotReady) as err:
        client.append("t", 1)
    assert err.value.detail == {"wal_read_only": True}
    assert len(seen) == 1 and sleeps == []


def test_a_broken_connection_repeats_idempotent_calls_only(sleeps: list[float]) -> None:
    seen: list[httpx.Request] = []
    client = scripted([httpx.ReadError("reset"), httpx.Response(200, json=STATE)], seen)()
    assert client.topic("t").topic == "t"
    claim = scripted([httpx.ReadError("reset")], seen)()
    with pytest.raises(topics.ConnectionError) as err:
        claim.claim("q", "w")  # a repeated claim could lease twice
    assert isinstance(err.value.__cause__, httpx.ReadError)
    refused = scripted(
        [httpx.ConnectError("refused"), httpx.Response(200, json={"topic": "q", "claimed": []})], seen
    )()
    assert refused.claim("q", "w") == []  # never sent: safe to repeat anything


def test_appends_carry_an_idempotency_key_kept_across_retries(sleeps: list[float]) -> None:
    seen: list[httpx.Request] = []
    ok = {
        "topic": "t",
        "first_seq": 1,
        "last_seq": 1,
        "head_seq": 1,
        "count": 1,
        "created": True,
        "deduped": False,
        "performance": {},
    }
    client = scripted([httpx.ReadError("reset"), httpx.Response(201, json=ok)], seen)()
    result = client.append("t", {"x": 1})
    assert result.seqs == [1]  # rebuilt from first..last when the server left seqs out
    keys = [orjson.loads(r.content)["idempotency_key"] for r in seen]
    assert len(keys) == 2 and keys[0] == keys[1] and len(keys[0]) == 32


def test_headers_env_fallbacks_and_no_gzip(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []
    monkeypatch.setenv("TOPICS_URL", "http://from-env:1234/")
    monkeypatch.setenv("TOPICS_API_KEY", "sekrit")

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"status": "ok", "version": "9", "uptime_ms": 1})

    client = topics.Client(transport=httpx.MockTransport(handler))
    client.health()
    request = seen[0]
    assert str(request.url) == "http://from-env:1234/v0/health"
    assert request.headers["authorization"] == "Bearer sekrit"
    assert request.headers["accept-encoding"] == "identity"
    monkeypatch.delenv("TOPICS_URL")
    monkeypatch.delenv("TOPICS_API_KEY")
    assert topics.Client().settings.url == "http://127.0.0.1:4000"
    assert topics.Client().settings.api_key is None


def test_unknown_fields_and_enum_values_are_carried_not_rejected() -> None:
    state = dict(STATE, type="stream", brand_new_field={"x": 1})
    state["config"] = dict(STATE["config"], durability="quantum", another=True)  # type: ignore[call-overload]
    client = topics.Client(
        "http://t", transport=httpx.MockTransport(lambda r: httpx.Response(200, json=state))
    )
    got = client.topic("t")
    assert (got.type, got.config.durability) == ("stream", "quantum")


def test_error_envelopes_unknown_codes_and_non_json() -> None:
    answers = iter(
        [
            error(409, "brand_new_conflict", {"why": 1}),
            httpx.Response(502, text="<html>bad gateway</html>"),
            httpx.Response(200, text="not json"),
        ]
    )
    client = topics.Client("http://t", retries=0, transport=httpx.MockTransport(lambda r: next(answers)))
    with pytest.raises(topics.TopicsError) as unknown:
        client.topic("t")
    assert type(unknown.value) is topics.TopicsError
    assert (unknown.value.status, unknown.value.code, unknown.value.detail) == (
        409,
        "brand_new_conflict",
        {"why": 1},
    )
    with pytest.raises(topics.TopicsError) as proxy:
        client.topic("t")
    assert (proxy.value.status, proxy.value.code) == (502, "http_502")
    with pytest.raises(topics.TopicsError) as garbled:
        client.topic("t")
    assert garbled.value.code == "bad_response"


def test_unreachable_server_is_a_connection_error() -> None:
    with (
        topics.Client("http://127.0.0.1:9", retries=0, timeout=2) as client,
        pytest.raises(topics.ConnectionError),
    ):
        client.health()


async def test_async_client_retries_too(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []

    async def sleep(delay: float) -> None:
        slept.append(delay)

    monkeypatch.setattr("topics.client.asyncio.sleep", sleep)
    answers = iter([error(429, "throttled", {"retry_after_ms": 10}), httpx.Response(200, json=STATE)])
    async with topics.AsyncClient(
        "http://t", transport=httpx.MockTransport(lambda r: next(answers))
    ) as client:
        assert (await client.topic("t")).topic == "t"
    assert len(slept) == 1 and 0.01 <= slept[0] <= 0.011
