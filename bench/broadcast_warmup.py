"""What one message's broadcast to N watchers costs, message by message, timed inside the server.

    python -m bench.broadcast_warmup [--subscribers 1000] [--messages 60] [--interval-ms 20]
                                     [--out FILE]

Peerbench's P5 (``../shared/peerbench/run.sh p5``) measures write-to-deliver latency at N = 1000
from a client; its p99 is set by the tail. This script looks at where a message's time goes on
the server. It starts ``topics serve`` (this checkout, a fresh data directory) pinned to CPU 0,
with :func:`topics_server.streams._broadcast` and :func:`topics_server.broadcast.send_all`
wrapped to time every call; opens N watch sessions on one ``disk`` topic and their SSE streams
from this process (pinned to CPU 1, reading every socket through epoll as the harness's client
does); then appends one record at a time, ``--interval-ms`` apart, and waits until every
subscriber has it.

Prints one JSON object: for each message, the server's time in ``send_all`` (the kernel's sends,
the GIL released), in the rest of its pump batches (Python: ``_PumpBatch._run``'s grouping by
share key, then each broadcast's read, framing and commits — not the hub's wake-ups before
them), and the client-side delivery spread (first and last subscriber to receive it); and the
same per subscriber, averaged over messages 0-5, 6-12 and 13 on. Server and client clocks are
both ``time.monotonic`` (CLOCK_MONOTONIC, shared by processes).

The server side runs as ``python -m bench.broadcast_warmup serve LOG``: the wrapped server,
which writes its timings to LOG when it exits (SIGTERM).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench.http_bench import CLIENT_CPU, SERVER_CPU, can_pin
from bench.output import emit
from bench.watch_load import raise_nofile

HOST = "127.0.0.1"
SETUP_TIMEOUT_S = 10.0
PHASES = ((0, 5), (6, 12), (13, None))


# -- the server, wrapped ---------------------------------------------------------------------------


def serve_instrumented(log_path: str) -> int:
    """Run ``topics serve`` with the broadcast timed; the timings go to ``log_path`` at exit as
    JSON lines ``[kind, start, members, seconds]`` (kind ``S``: one pump batch, its streams;
    ``X``: one ``send_all`` inside it, its sockets)."""
    from topics_server import streams
    from topics_server.cli import main

    timings: list[tuple[str, float, int, float]] = []
    run_batch, send_all = streams._PumpBatch._run, streams.send_all

    def timed_batch(batch: Any) -> None:
        start, due = time.monotonic(), len(batch._due)
        run_batch(batch)
        timings.append(("S", start, due, time.monotonic() - start))

    def timed_send_all(fds: list[int], data: bytes) -> list[int]:
        start = time.monotonic()
        sent = send_all(fds, data)
        timings.append(("X", start, len(fds), time.monotonic() - start))
        return sent

    def dump() -> None:
        with open(log_path, "w") as out:
            for row in timings:
                out.write(json.dumps(row) + "\n")

    streams._PumpBatch._run, streams.send_all = timed_batch, timed_send_all  # type: ignore[method-assign]
    atexit.register(dump)
    return main(["serve"])


# -- the client ------------------------------------------------------------------------------------


def _request(sock: socket.socket, method: str, path: str, body: Any = None) -> Any:
    payload = b"" if body is None else orjson.dumps(body)
    head = f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
    sock.sendall(f"{head}Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
    data = b""
    while b"\r\n\r\n" not in data:
        data += _received(sock)
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    length = int(head_bytes.lower().split(b"content-length:")[1].split(b"\r\n")[0])
    while len(rest) < length:
        rest += _received(sock)
    status = int(head_bytes[9:12])
    if status >= 300:
        raise RuntimeError(f"{method} {path}: {status} {rest[:200]!r}")
    return orjson.loads(rest)


def _received(sock: socket.socket) -> bytes:
    """The next bytes from a blocking socket (its timeout applies); the peer closing is an error."""
    data = sock.recv(65536)
    if not data:
        raise RuntimeError("the server closed the connection")
    return data


def _connect(port: int) -> socket.socket:
    return socket.create_connection((HOST, port), timeout=SETUP_TIMEOUT_S)


def _subscribe(port: int, topic: str) -> socket.socket:
    """One watch session's SSE stream, read up to its ``caught-up`` event."""
    with _connect(port) as control:
        url = _request(control, "POST", "/v0/watch", {"topics": {topic: {"tail": True}}})["stream_url"]
    sock = _connect(port)
    try:
        sock.sendall(f"GET {url} HTTP/1.1\r\nHost: {HOST}\r\nAccept: text/event-stream\r\n\r\n".encode())
        seen = b""
        while b"caught-up" not in seen:
            seen += _received(sock)
    except BaseException:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def _wait_ready(port: int, deadline_s: float = 60.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with socket.create_connection((HOST, port), timeout=1) as sock:
                if _request(sock, "GET", "/v0/health")["status"] == "ok":
                    return
        except (OSError, RuntimeError, KeyError, IndexError):
            time.sleep(0.1)
    raise RuntimeError("the server did not become ready")


def _deliver(
    writer: socket.socket, subscribers: list[socket.socket], msg: int, timeout_s: float = 5.0
) -> tuple[float, float, float]:
    """Append message ``msg`` and read until every subscriber holds it: (sent, first, last)."""
    marker = b"M%d;" % msg
    selector = selectors.DefaultSelector()
    tails = {}
    for sock in subscribers:
        selector.register(sock, selectors.EVENT_READ)
        tails[sock] = b""
    sent = time.monotonic()
    _request(writer, "POST", "/v0/topics/p5", {"records": [{"data": marker.decode()}]})
    waiting, first, last = set(subscribers), 0.0, 0.0
    while waiting and time.monotonic() < sent + timeout_s:
        for key, _ in selector.select(0.05):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            data = tails[sock] + sock.recv(65536)
            if sock in waiting and marker in data:
                now = time.monotonic()
                first, last = first or now, now
                waiting.discard(sock)
            tails[sock] = data[-16:]
    selector.close()
    if waiting:
        raise RuntimeError(f"message {msg}: {len(waiting)} subscribers never got it")
    return sent, first, last


def _phase(rows: list[dict[str, Any]], lo: int, hi: int | None, n: int) -> dict[str, float]:
    chosen = [r for r in rows if r["msg"] >= lo and (hi is None or r["msg"] <= hi)]
    if not chosen:
        return {}

    def mean(key: str) -> float:
        return round(sum(r[key] for r in chosen) / len(chosen) / n, 3)

    return {"send_all_us_per_subscriber": mean("send_all_us"), "python_us_per_subscriber": mean("python_us")}


def run(subscribers: int, messages: int, interval_ms: int, pin: bool = True) -> dict[str, Any]:
    """The measurement (``pin``: the server on CPU 0, this process on CPU 1, where the machine
    has both)."""
    with tempfile.TemporaryDirectory(prefix="broadcast-warmup-") as tmp:
        port = _free_port()
        log_path = Path(tmp) / "timings.jsonl"
        env = {**os.environ, "TOPICS_PORT": str(port), "TOPICS_HOST": HOST, "TOPICS_LOG_LEVEL": "warning"}
        env["TOPICS_DATA_DIR"] = str(Path(tmp) / "data")
        command = [sys.executable, "-m", "bench.broadcast_warmup", "serve", str(log_path)]
        server = subprocess.Popen(
            ["taskset", "-c", str(SERVER_CPU), *command] if pin else command,
            env=env,
            cwd=Path(__file__).resolve().parent.parent,
        )
        opened: list[socket.socket] = []
        try:
            if pin:
                os.sched_setaffinity(0, {CLIENT_CPU})
            _wait_ready(port)
            writer = _connect(port)
            opened.append(writer)
            _request(writer, "PUT", "/v0/topics/p5", {"durability": "disk"})
            subs = []
            for _ in range(subscribers):
                subs.append(_subscribe(port, "p5"))
                opened.append(subs[-1])
            spans = []
            for msg in range(messages):
                spans.append((msg, *_deliver(writer, subs, msg)))
                time.sleep(interval_ms / 1000)
        finally:
            for sock in opened:
                sock.close()
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        timings = [json.loads(line) for line in log_path.read_text().splitlines()]
    rows = []
    for msg, sent, first, last in spans:
        inside = [t for t in timings if sent <= t[1] <= last]
        send_s = sum(t[3] for t in inside if t[0] == "X")
        batches_s = sum(t[3] for t in inside if t[0] == "S")
        rows.append(
            {
                "msg": msg,
                "broadcasts": sum(1 for t in inside if t[0] == "X"),
                "send_all_us": round(send_s * 1e6, 1),
                "python_us": round((batches_s - send_s) * 1e6, 1),
                "first_ms": round((first - sent) * 1e3, 3),
                "last_ms": round((last - sent) * 1e3, 3),
            }
        )
    phases = {f"{lo}-{hi if hi is not None else ''}": _phase(rows, lo, hi, subscribers) for lo, hi in PHASES}
    return {
        "subscribers": subscribers,
        "messages": messages,
        "interval_ms": interval_ms,
        "phases": phases,
        "per_message": rows,
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "serve":
        return serve_instrumented(sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=60)
    parser.add_argument("--interval-ms", type=int, default=20)
    parser.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = parser.parse_args()
    raise_nofile()  # the server inherits it: N watchers are N descriptors on both sides
    result = run(args.subscribers, args.messages, args.interval_ms, pin=can_pin())
    emit(result, args.out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
