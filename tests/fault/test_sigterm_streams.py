"""A graceful stop (SIGTERM) ends every open stream cleanly, against a real ``topics serve``.

While an SSE watch stream, a ``/work`` stream and a WebSocket are open, SIGTERM: the SSE streams
get a final ``event: error`` with code 503 and their terminating zero-length chunk (a client sees
a well-formed end, never an "incomplete chunked read"), the WebSocket a close frame 1001 "going
away", and the process exits 0 well within its drain time.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
from pathlib import Path

import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect as ws_connect

from tests.server.processes import ServerProcess

from .rawhttp import Chunked, connect, get, read_head

SSE = {"Accept": "text/event-stream"}


def _open_sse(port: int, path: str) -> tuple[socket.socket, Chunked]:
    sock = connect(port)
    sock.sendall(get(path, SSE))
    status, headers, rest = read_head(sock)
    assert status == 200 and headers.get("transfer-encoding") == "chunked", (status, headers)
    return sock, Chunked(sock, rest)


def _last_event(payload: bytes) -> tuple[str, dict[str, object]]:
    frames = [f for f in payload.decode().split("\n\n") if f.strip() and not f.startswith(":")]
    last = frames[-1].splitlines()
    name = next(line[7:] for line in last if line.startswith("event: "))
    data = next(line[6:] for line in last if line.startswith("data: "))
    return name, json.loads(data)


def test_sigterm_ends_sse_work_and_websocket_streams_cleanly(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data").start()
    try:
        assert server.proc is not None
        http = httpx.Client(base_url=server.url, timeout=10)
        assert http.put("/v0/topics/events", json={}).status_code in (200, 201)
        assert http.put("/v0/topics/jobs", json={"type": "queue"}).status_code == 201
        r = http.post("/v0/topics/jobs", json={"records": [{"data": {"i": i}} for i in range(3)]})
        assert r.status_code in (200, 201), r.text
        r = http.post("/v0/watch", json={"topics": {"events": {}}})
        assert r.status_code == 200, r.text
        wid = r.json()["wid"]

        watch_sock, watch = _open_sse(server.port, f"/v0/watch/{wid}")
        watch.read_until(b"event: caught-up")
        work_sock, work = _open_sse(server.port, "/v0/topics/jobs/work?node=w1&max=3")
        work.read_until(b"event: job")
        with ws_connect(f"ws://127.0.0.1:{server.port}/v0/ws", open_timeout=10) as ws:
            ws.send(json.dumps({"op": "subscribe", "request_id": "s1", "topic": "events"}))
            assert json.loads(ws.recv(10))["op"] == "subscribed"

            server.proc.send_signal(signal.SIGTERM)
            for chunked in (watch, work):
                payload = chunked.read_to_end()  # raises Incomplete if the stream is cut
                name, data = _last_event(payload)
                assert name == "error" and data["code"] == 503, payload[-300:]
            with contextlib.suppress(ConnectionClosed):  # frames until the close frame
                while True:
                    ws.recv(10)
            assert ws.protocol.close_rcvd is not None, "no close frame"
            assert ws.protocol.close_rcvd.code == 1001
        for sock in (watch_sock, work_sock):
            sock.close()
        assert server.proc.wait(30) == 0
    finally:
        server.stop()
