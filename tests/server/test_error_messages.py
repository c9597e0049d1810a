"""Errors that teach (issue 26): every 400 a schema rule produces says ``<field>: <problem>``,
names the field in ``detail.field`` and says what would be right — an enum's values, "an
integer", the missing field's own name, the field a misspelt one probably meant.

The words come from ``topics_server.schema_errors`` over msgspec's messages; these cases pin
one of each kind, through the real app (bodies, nested records, path and query parameters).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from .conftest import assert_error

CASES: list[tuple[str, str, Any, str, str]] = [
    # (method, path, body, detail.field, message)
    ("PUT", "/v0/topics/a", {"durability": "durable"}, "durability",
     "durability: 'durable' is not one of ephemeral, memory, disk, fsync"),
    ("PUT", "/v0/topics/a", {"type": "stream"}, "type", "type: 'stream' is not one of log, queue"),
    ("PUT", "/v0/topics/a", {"cap_records": "10"}, "cap_records",
     "cap_records: must be an integer, not a string"),
    ("PUT", "/v0/topics/a", {"cap_records": 1.5}, "cap_records", "cap_records: must be an integer, not 1.5"),
    ("PUT", "/v0/topics/a", {"cap_records": -1}, "cap_records", "cap_records: must be at least 0"),
    ("PUT", "/v0/topics/a", {"cap_recrods": 10}, "cap_recrods",
     "cap_recrods: is not a known field; did you mean cap_records?"),
    ("POST", "/v0/topics/a", {"records": [{"data": 1, "tga": "x"}]}, "records[0].tga",
     "records[0].tga: is not a known field; did you mean tag?"),
    ("POST", "/v0/topics/a", {}, "records", "records: is required"),
    ("POST", "/v0/topics/a", {"records": [{"tag": "x"}]}, "records[0].data", "records[0].data: is required"),
    ("POST", "/v0/topics/a", {"records": [{"data": 1, "tag": 5}]}, "records[0].tag",
     "records[0].tag: must be a string, not an integer"),
    ("POST", "/v0/topics/a", [], "body", "body: must be an object, not an array"),
    ("POST", "/v0/topics/a", {"records": [{"data": 1}], "delay_ms": 1.5}, "delay_ms",
     "delay_ms: must be an integer, not a fraction"),
    ("POST", "/v0/topics/a/diff", {"include_tags": "yes"}, "include_tags",
     "include_tags: must be true or false, not a string"),
    ("POST", "/v0/topics/a/diff", {"node": 5}, "node", "node: must be a string or an array, not an integer"),
    ("POST", "/v0/topics/a/diff", {"limt": 5}, "limt", "limt: is not a known field; did you mean limit?"),
    ("POST", "/v0/topics/a/delete", {"match": ["tag", "Regex", "x"]}, "match[1]",
     "match[1]: 'Regex' is not one of Eq, Glob"),
    ("POST", "/v0/topics/a/delete", {}, "body", "body: must have at least 1 of before_seq, match"),
    ("POST", "/v0/watch", {"topics": {}}, "topics", "topics: must have at least 1 entry"),
    ("POST", "/v0/watch", {"topics": {"a": {}}, "consistency": "strict"}, "consistency",
     "consistency: 'strict' is not one of eventual, strong"),
    ("PUT", "/v0/routers/r", {"source": "a"}, "dest", "dest: is required"),
    ("PUT", "/v0/topics/bad%20name", {}, "topic",
     "parameter topic: must match the pattern ^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$, not 'bad name'"),
    ("GET", "/v0/topics?page_size=abc", None, "page_size",
     "query parameter page_size: must be an integer, not 'abc'"),
    ("GET", "/v0/topics/a?touch=maybe", None, "touch",
     "query parameter touch: must be true or false, not 'maybe'"),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "body", "field", "message"), CASES)
async def test_a_schema_error_names_its_field_and_teaches(
    client: httpx.AsyncClient, method: str, path: str, body: Any, field: str, message: str
) -> None:
    await client.put("/v0/topics/a", json={})
    kwargs = {"json": body} if body is not None else {}
    error = assert_error(await client.request(method, path, **kwargs), 400, "invalid_request")
    assert (error["message"], error["detail"]["field"]) == (message, field)


async def test_an_unknown_field_with_no_near_miss_lists_the_known_ones(client: httpx.AsyncClient) -> None:
    error = assert_error(await client.put("/v0/topics/a", json={"zzz": 1}), 400, "invalid_request")
    assert error["message"].startswith("zzz: is not a known field (known: type, ttl_ms, cap_records, ")
