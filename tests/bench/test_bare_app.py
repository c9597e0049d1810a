"""The benchmark's bare-Starlette baseline answers like topics does (shape only, no timing)."""

from __future__ import annotations

import httpx
import orjson

from bench.bare_app import app
from bench.payloads import append_body, diff_body


def _client() -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bare.test")


async def test_bare_app_health_append_and_diff() -> None:
    async with _client() as client:
        assert (await client.get("/health")).status_code == 200

        resp = await client.post(
            "/v0/topics/t", content=append_body(0, 100), headers={"Content-Type": "application/json"}
        )
        assert resp.status_code == 200
        body = orjson.loads(resp.content)
        assert body["count"] == 100 and len(body["seqs"]) == 100 and "performance" in body

        for limit in (256, 1000):
            resp = await client.post(
                "/v0/topics/t/diff",
                content=diff_body(12345, limit),
                headers={"Content-Type": "application/json"},
            )
            assert resp.status_code == 200
            body = orjson.loads(resp.content)
            assert len(body["records"]) == limit
            assert set(body["records"][0]) == {"$seq", "$ts", "data"}
