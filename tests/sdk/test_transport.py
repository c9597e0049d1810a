"""The client's contract points, against scripted answers (``httpx.MockTransport``): retries and
their delays, what is never retried, headers, tolerant parsing, the error envelope."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import MappingProxyType
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


def test_append_many_and_meta_take_any_mapping(sleeps: list[float]) -> None:
    seen: list[httpx.Request] = []
    ok = {
        "topic": "t",
        "first_seq": 1,
        "last_seq": 2,
        "head_seq": 2,
        "count": 2,
        "created": False,
        "deduped": False,
    }
    client = scripted([httpx.Response(201, json=ok), httpx.Response(201, json=dict(ok, last_seq=1))], seen)()
    records = [MappingProxyType({"data": 1, "tag": "a"}), {"data": 2}]
    assert client.append_many("t", records).seqs == [1, 2]  # orjson alone encodes dicts only
    assert isinstance(records[0], MappingProxyType)  # the caller's list is left alone
    client.append("t", 3, meta=MappingProxyType({"trace": "z"}))
    bodies = [orjson.loads(r.content) for r in seen]
    assert bodies[0]["records"] == [{"data": 1, "tag": "a"}, {"data": 2}]
    assert bodies[1]["records"] == [{"data": 3, "meta": {"trace": "z"}}]


WATCH_SESSION = {
    "wid": "w1",
    "stream_url": "/v0/watch/w1",
    "session_ttl_ms": 60_000,
    "topics": {"t": {"from_seq": 0, "head_seq": 2, "earliest_seq": 1}},
    "performance": {},
}


def sse(*frames: tuple[str, str | None, Any]) -> httpx.Response:
    """A stream of ``(event, id, data)`` frames that then ends."""
    text = "retry: 2000\n\n" + "".join(
        f"{f'id: {fid}' + chr(10) if fid else ''}event: {name}\ndata: {orjson.dumps(data).decode()}\n\n"
        for name, fid, data in frames
    )
    return httpx.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})


def test_watch_reconnects_through_a_refused_session_and_resumes(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("topics.watch.time.sleep", slept.append)
    record = {"$ts": 1, "data": "x"}
    answers = iter(
        [
            httpx.Response(201, json=WATCH_SESSION),
            error(404, "not_found"),  # the session is gone (a restarted server)…
            error(503, "not_ready", {"retry_after_ms": 1}),  # …which is still replaying its log
            httpx.Response(201, json=dict(WATCH_SESSION, wid="w2", stream_url="/v0/watch/w2")),
            sse(
                ("record", "id-1", {"topic": "t", "records": [{"$seq": 1, **record}], "head_seq": 2}),
                ("record", None, {"topic": "other", "records": [{"$seq": 9, **record}]}),  # not watched
            ),
            sse(  # resumed at Last-Event-ID; seq 1 again is not handed out twice
                ("record", "id-2", {"topic": "t", "records": [{"$seq": 1, **record}, {"$seq": 2, **record}]}),
            ),
        ]
    )
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return next(answers)

    client = topics.Client("http://t", retries=0, transport=httpx.MockTransport(handler))
    with client.watch({"t": 0}) as watch:
        events = iter(watch)
        first, second = next(events), next(events)
    assert isinstance(first, topics.Records) and [r.seq for r in first.records] == [1]
    assert isinstance(second, topics.Records) and [r.seq for r in second.records] == [2]
    assert watch.cursors == {"t": 2}
    assert [(r.method, r.url.path) for r in seen] == [
        ("POST", "/v0/watch"),
        ("GET", "/v0/watch/w1"),
        ("POST", "/v0/watch"),
        ("POST", "/v0/watch"),
        ("GET", "/v0/watch/w2"),
        ("GET", "/v0/watch/w2"),
    ]
    assert orjson.loads(seen[3].content)["topics"] == {"t": {"from_seq": 0}}
    assert "last-event-id" not in seen[4].headers and seen[5].headers["last-event-id"] == "id-1"
    assert len(slept) == 2  # after the refused create, and after the first stream ended
