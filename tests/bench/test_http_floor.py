"""The HTTP floor server answers a topics append the way topics does (status, headers, keys),
so a load generator drives both alike; records are counted, not kept. Shape only, no timing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from bench.http_floor import FloorProtocol, SeqCounter, write_peerbench_repo

APPEND_KEYS = {"topic", "first_seq", "last_seq", "seqs", "head_seq", "count", "created", "deduped"}


def _request(method: str, path: str, body: bytes) -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _response(reader: asyncio.StreamReader) -> tuple[bytes, dict[str, object]]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    return head.split(b"\r\n")[0], orjson.loads(await reader.readexactly(length))


async def test_floor_answers_appends_in_order_with_topics_keys() -> None:
    loop = asyncio.get_running_loop()
    sequence = SeqCounter()
    server = await loop.create_server(lambda: FloorProtocol(sequence), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(_request("PUT", "/v0/topics/p2", b'{"durability":"disk"}'))
        status, body = await _response(reader)
        assert status == b"HTTP/1.1 201 Created" and body["topic"] == "p2"

        one = b'{"records":[{"data":{"k":1}}]}'
        three = b'{"records":[{"data":1},{"data":2},{"data":3}]}'
        writer.write(_request("POST", "/v0/topics/p2", one) + _request("POST", "/v0/topics/p2", three))
        first_status, first = await _response(reader)
        second_status, second = await _response(reader)
        assert first_status == second_status == b"HTTP/1.1 200 OK"
        assert APPEND_KEYS | {"performance"} == set(first) == set(second)
        assert (first["seqs"], second["seqs"]) == ([1], [2, 3, 4])
        assert second["head_seq"] == 4 and second["count"] == 3

        writer.write(b"NOT HTTP\r\n\r\n")
        status, _ = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n", 1)
        assert status == b"HTTP/1.1 400 Bad Request"
    finally:
        writer.close()
        server.close()
        await server.wait_closed()


def test_the_peerbench_wrapper_runs_this_checkout_and_never_replaces_a_real_server(tmp_path: Path) -> None:
    script = write_peerbench_repo(tmp_path / "floor repo")
    text = script.read_text()
    assert script.stat().st_mode & 0o111 and "-m bench.http_floor" in text
    assert write_peerbench_repo(tmp_path / "floor repo") == script  # its own wrapper: rewritten
    real = tmp_path / "checkout" / ".venv" / "bin" / "topics"
    real.parent.mkdir(parents=True)
    real.write_text("#!/usr/bin/python\n# the real topics entry point\n")
    with pytest.raises(SystemExit):
        write_peerbench_repo(tmp_path / "checkout")
    assert "real topics" in real.read_text()
