"""Cross-cutting HTTP behaviour: probes, envelope for framework errors, method/route errors."""

from __future__ import annotations

import httpx

from .conftest import assert_error


async def test_probes_and_aliases(client: httpx.AsyncClient) -> None:
    for path in ("/v0/health", "/healthz"):
        body = (await client.get(path)).json()
        assert body["status"] == "ok" and body["version"] == "0.1.0" and isinstance(body["uptime_ms"], int)
    for path in ("/v0/ready", "/readyz"):
        r = await client.get(path)
        assert r.status_code == 200
        assert (
            r.json()["status"] == "ready"
            and r.json()["wal_replay_complete"] is True
            and r.json()["topics"] == 0
        )


async def test_unknown_route_and_wrong_method(client: httpx.AsyncClient) -> None:
    assert_error(await client.get("/v0/nothing-here"), 404, "not_found")
    assert_error(await client.get("/v1/topics"), 404, "not_found")
    r = await client.patch("/v0/topics/x", json={})
    assert_error(r, 405, "method_not_allowed")
    assert set(r.headers["allow"].split(", ")) == {"GET", "PUT", "POST", "DELETE"}


async def test_every_json_response_has_performance(client: httpx.AsyncClient) -> None:
    responses = [
        await client.put("/v0/topics/perf", json={}),
        await client.get("/v0/topics/perf"),
        await client.get("/v0/topics/absent"),
        await client.get("/v0/health"),
    ]
    for r in responses:
        assert isinstance(r.json()["performance"]["server_total_ms"], float)


async def test_unexpected_exception_is_500_internal_without_trace(make_client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from topics_engine import Engine

    def boom(self: Engine, name: str, touch: bool = True) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(Engine, "topic_state", boom)
    async with make_client() as c:
        r = await c.get("/v0/topics/x")
        error = assert_error(r, 500, "internal")
        assert "secret" not in r.text and "Traceback" not in r.text
        assert "detail" not in error


async def test_large_json_responses_are_gzipped_when_asked(client: httpx.AsyncClient) -> None:
    """Ruling 10: above a small threshold, a JSON response honours Accept-Encoding: gzip."""
    await client.post("/v0/topics/z", json={"records": [{"data": "x" * 200} for _ in range(50)]})
    big = await client.post("/v0/topics/z/diff", json={}, headers={"Accept-Encoding": "gzip"})
    assert big.headers["content-encoding"] == "gzip"
    assert int(big.headers["content-length"]) < len(big.content)  # httpx decoded it
    assert len(big.json()["records"]) == 50
    plain = await client.post("/v0/topics/z/diff", json={}, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.json() == {
        **big.json(),
        "performance": plain.json()["performance"],
    }
    refused = await client.post("/v0/topics/z/diff", json={}, headers={"Accept-Encoding": "gzip;q=0"})
    assert "content-encoding" not in refused.headers
    small = await client.get("/v0/topics/z", headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in small.headers  # below the threshold: not worth the CPU


async def test_page_size_zero_is_the_default(client: httpx.AsyncClient) -> None:
    for i in range(3):
        await client.put(f"/v0/topics/p{i}", json={})
    r = await client.get("/v0/topics", params={"page_size": 0})
    assert r.status_code == 200 and len(r.json()["topics"]) == 3
    assert_error(await client.get("/v0/topics", params={"page_size": -1}), 400, "invalid_request")


async def test_diff_accepts_max_batch_bytes(client: httpx.AsyncClient) -> None:
    await client.post("/v0/topics/b", json={"records": [{"data": "x" * 100} for _ in range(20)]})
    r = await client.post("/v0/topics/b/diff", json={"max_batch_bytes": 1})
    assert r.status_code == 200 and len(r.json()["records"]) == 1 and r.json()["next_from_seq"] == 1
