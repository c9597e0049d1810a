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
