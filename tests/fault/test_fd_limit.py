"""The descriptor limit reached, with the real mechanism: ``topics serve`` under a low
``RLIMIT_NOFILE``, and more connections than it may hold.

Past its connection limit (the descriptor limit less ``transport.FD_RESERVE``, kept for storage)
new connections are refused (closed at once), the connections already open keep being served —
writes too: storage still has descriptors — the server logs one line per episode, not one per
refusal, and does not spin; once connections close, new ones are served again.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx
from topics_server.transport import FD_RESERVE, connection_limit

from bench.proc import open_fds, wait_idle
from tests.server.processes import ServerProcess

from .rawhttp import connect, get, read_head

NOFILE = 200


def _request(sock: socket.socket, raw: bytes) -> int:
    sock.sendall(raw)
    status, headers, rest = read_head(sock)
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        rest += sock.recv(65536)
    return status


def _refused(sock: socket.socket) -> bool:
    """The server closed this connection without answering."""
    try:
        sock.sendall(get("/v0/health"))
        return sock.recv(1024) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def test_descriptor_limit_refuses_new_connections_and_recovers(tmp_path: Path) -> None:
    limit = connection_limit(NOFILE)
    server = ServerProcess(tmp_path / "data", env={"TOPICS_LOG_LEVEL": "info"}, nofile=NOFILE).start()
    try:
        assert server.proc is not None
        pid = server.proc.pid
        http = httpx.Client(base_url=server.url, timeout=10)
        assert http.put("/v0/topics/f", json={"durability": "fsync"}).status_code == 201
        http.close()
        held = [connect(server.port) for _ in range(limit)]
        for sock in held[:: max(1, limit // 10)]:
            assert _request(sock, get("/v0/health")) == 200
        extra = []
        for _ in range(3):  # several episodes' worth of refusals: still one log line
            for _ in range(20):
                extra.append(connect(server.port))
            assert all(_refused(sock) for sock in extra[-20:])
        assert NOFILE - open_fds(pid) >= FD_RESERVE // 2  # storage's reserve is still free
        # the connections already open are served, writes included (storage has descriptors)
        body = b'{"records":[{"data":{"at":"limit"}}]}'
        post = (
            b"POST /v0/topics/f HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        assert _request(held[0], post) in (200, 201)
        assert _request(held[-1], get("/v0/topics/f")) == 200
        wait_idle(pid)  # at the limit, not spinning on accept
        for sock in held + extra:
            sock.close()
        deadline = time.monotonic() + 30
        while True:  # served again once connections closed (the close reaches the server)
            sock = connect(server.port)
            try:
                if not _refused_or_served(sock):
                    break
            finally:
                sock.close()
            assert time.monotonic() < deadline, "never served again"
            time.sleep(0.05)
        wait_idle(pid)
    finally:
        server.stop()
    log = Path(f"{server.data_dir}.log").read_text()
    assert log.count("connection limit reached") == 1, log
    assert log.count("connection limit episode over") == 1, log


def _refused_or_served(sock: socket.socket) -> bool:
    """True if refused, False once served with a 200."""
    try:
        return _request(sock, get("/v0/health")) != 200
    except (ConnectionError, OSError):
        return True
