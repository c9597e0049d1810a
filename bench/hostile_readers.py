#!/usr/bin/env python3
"""Hostile readers: watchers that never read and ``/work`` streams that never ack (nor read),
while records are written — what each stalled connection costs the server, whether other clients
are served meanwhile, and whether the server is idle once they are gone.

    python bench/hostile_readers.py [--watchers 1000] [--workers 1000] [--rate 500]
        [--record-bytes 1024] [--seconds 20] [--work-max 16] [--out PATH]

One ``topics serve`` (a subprocess on 127.0.0.1, a temporary data directory, its descriptor
limit raised to fit every connection, the per-key stream cap off) and, in this process:

1. set-up: a log topic ``events`` and a queue ``jobs`` holding ``--work-max`` jobs per worker
   (``--record-bytes`` each); one watch session per watcher (``POST /v0/watch``). Then the
   server's RSS (``/proc/<pid>/status`` VmRSS) is the **baseline**.
2. the hostile connections, raw sockets with a 4 KiB receive buffer that are never read:
   ``--watchers`` ``GET /v0/watch/:wid`` streams and ``--workers`` ``GET /v0/topics/jobs/work``
   streams (``max=--work-max``; no job is ever acked). Every one is checked to have got its
   response head (the server holds it open).
3. for ``--seconds`` (under the 30 s slow-consumer timeout, so every stalled stream stays open
   throughout): a writer appends ``--record-bytes`` records to ``events`` at ``--rate`` per
   second (paced, one record per request; every watcher gets every record, fanned out), a probe
   sends ``GET /v0/health`` every 20 ms on its own keep-alive connection (latency p50/p99/max,
   failures), and the server's RSS is sampled every 250 ms.
4. the hostile sockets close; the server's CPU time (``/proc/<pid>/stat`` utime + stime) is
   sampled over 2 s windows until it uses under a fifth of a core (``settled_within_s``), then
   over one more 2 s window (``cpu_fraction_then``: idle, no busy loop), and its RSS then.

Reported: RSS baseline, peak and after; **per stalled connection** ``(peak - baseline) /
connections`` (the budget: 256 KiB, docs/SECURITY.md); the health probe's latency (goal: p99 <
50 ms); records acked by the writer; the idle CPU after. JSON to stdout and to ``--out`` (default
``bench/results/hostile-<git short sha>.json``); progress to stderr.

:func:`open_stalled`, :func:`Episode` and the ``/proc`` helpers are also what the suite's
``tests/fault/test_hostile_readers.py`` runs, with fewer connections.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import h2.config  # noqa: E402
import h2.connection  # noqa: E402
import h2.events  # noqa: E402
import h2.settings  # noqa: E402
import httpx  # noqa: E402

from bench.crash_harness import ServerProcess  # noqa: E402
from bench.http_bench import emit_result, log, percentile, result_path, run_header  # noqa: E402
from bench.proc import cpu_ticks, rss_bytes, wait_idle  # noqa: E402
from bench.watch_load import raise_nofile  # noqa: E402

STALL_RCVBUF = 4096
"""The hostile sockets' receive buffer: small, so the server's sends stall soon."""
MAX_WINDOW = (1 << 31) - 1
"""The largest HTTP/2 flow-control window (RFC 9113 §6.9.1)."""
BUDGET_PER_CONNECTION = 256 << 10
"""The documented most server memory one stalled connection may cost (docs/SECURITY.md)."""
HEALTH_INTERVAL_S = 0.020
RSS_INTERVAL_S = 0.25
HEALTH_GOAL_P99_MS = 50.0


def open_stalled(port: int, path: str) -> socket.socket:
    """A ``GET path`` (an SSE stream) on a socket with a tiny receive buffer, its response head
    read, then never read again."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, STALL_RCVBUF)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: hostile\r\nAccept: text/event-stream\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(1)  # byte by byte: nothing past the head is taken off the socket
        if not chunk:
            raise ConnectionError(f"{path}: closed before its head: {head!r}")
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        raise ConnectionError(f"{path}: {head[:200]!r}")
    return sock


def open_stalled_h2(port: int, paths: list[str]) -> socket.socket:
    """One h2c connection (prior knowledge) with a tiny receive buffer that opens a ``GET``
    SSE stream on each of ``paths``, grants the server the largest flow-control windows HTTP/2
    allows (so only the socket holds the server back), reads until every stream's response
    head came, then never reads again."""
    config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
    conn = h2.connection.H2Connection(config)
    conn.initiate_connection()
    conn.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: MAX_WINDOW})
    conn.increment_flow_control_window(MAX_WINDOW - 65_535)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, STALL_RCVBUF)
    sock.settimeout(30)
    sock.connect(("127.0.0.1", port))
    heads: set[int] = set()
    for path in paths:
        stream_id = conn.get_next_available_stream_id()
        headers = [(":method", "GET"), (":scheme", "http"), (":authority", "hostile"), (":path", path)]
        conn.send_headers(stream_id, [*headers, ("accept", "text/event-stream")], end_stream=True)
    sock.sendall(conn.data_to_send())
    while len(heads) < len(paths):
        data = sock.recv(65536)
        if not data:
            raise RuntimeError("the server closed the h2c connection")
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                status = dict(event.headers).get(":status")
                if status != "200":
                    raise RuntimeError(f"stream {event.stream_id}: status {status}")
                heads.add(event.stream_id)
            elif isinstance(event, h2.events.StreamReset | h2.events.ConnectionTerminated):
                raise RuntimeError(f"h2c: {event}")
        sock.sendall(conn.data_to_send())
    return sock


@dataclass
class Episode:
    """One hostile episode against a running server (``port``, its ``pid``)."""

    port: int
    pid: int
    watchers: int
    workers: int
    record_bytes: int = 1024
    work_max: int = 16
    sockets: list[socket.socket] = field(default_factory=list)
    wids: list[str] = field(default_factory=list)
    baseline_rss: int = 0
    rss_samples: list[int] = field(default_factory=list)
    health_ms: list[float] = field(default_factory=list)
    health_failures: int = 0
    written: int = 0
    write_failures: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_up(self) -> None:
        """The topics, the queue's jobs, one watch session per watcher; then the baseline RSS."""
        pad = "x" * max(0, self.record_bytes - 40)
        with httpx.Client(base_url=self.base, timeout=60) as http:
            for name, config in (("events", {}), ("jobs", {"type": "queue"})):
                r = http.put(f"/v0/topics/{name}", json=config)
                if r.status_code not in (200, 201):
                    raise RuntimeError(f"PUT {name}: {r.status_code} {r.text[:300]}")
            jobs = self.workers * self.work_max
            for start in range(0, jobs, 500):
                n = min(500, jobs - start)
                body = {"records": [{"data": {"j": start + i, "pad": pad}} for i in range(n)]}
                r = http.post("/v0/topics/jobs", json=body)
                if r.status_code not in (200, 201):
                    raise RuntimeError(f"jobs: {r.status_code} {r.text[:300]}")
            for _ in range(self.watchers):
                r = http.post("/v0/watch", json={"topics": {"events": {}}})
                if r.status_code != 200:
                    raise RuntimeError(f"POST /v0/watch: {r.status_code} {r.text[:300]}")
                self.wids.append(r.json()["wid"])
        self.baseline_rss = rss_bytes(self.pid)

    def open_hostile(self) -> None:
        for wid in self.wids:
            self.sockets.append(open_stalled(self.port, f"/v0/watch/{wid}"))
        for i in range(self.workers):
            self.sockets.append(
                open_stalled(self.port, f"/v0/topics/jobs/work?node=w{i}&max={self.work_max}")
            )

    def run_load(self, seconds: float, rate: float, records: int | None = None) -> None:
        """The writer, the health probe and the RSS sampler, for ``seconds`` — or, with
        ``records``, until the writer has written that many (however long it takes)."""
        stop = threading.Event()
        writer = threading.Thread(target=self._write, args=(stop, rate, records), daemon=True)
        threads = [
            writer,
            threading.Thread(target=self._probe, args=(stop,), daemon=True),
            threading.Thread(target=self._sample, args=(stop,), daemon=True),
        ]
        for t in threads:
            t.start()
        if records is None:
            time.sleep(seconds)
        else:
            writer.join()
        stop.set()
        for t in threads:
            t.join(30)

    def _write(self, stop: threading.Event, rate: float, records: int | None = None) -> None:
        pad = "x" * max(0, self.record_bytes - 40)
        interval = 1.0 / rate
        with httpx.Client(base_url=self.base, timeout=30) as http:
            next_at = time.monotonic()
            while not stop.is_set() and (records is None or self.written < records):
                try:
                    r = http.post(
                        "/v0/topics/events", json={"records": [{"data": {"n": self.written, "pad": pad}}]}
                    )
                    if r.status_code in (200, 201):
                        self.written += 1
                    else:
                        self.write_failures += 1
                except httpx.HTTPError:
                    self.write_failures += 1
                next_at += interval
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                else:
                    next_at = time.monotonic()  # behind: do not burst to catch up

    def _probe(self, stop: threading.Event) -> None:
        with httpx.Client(base_url=self.base, timeout=10) as http:
            while not stop.is_set():
                started = time.perf_counter()
                try:
                    ok = http.get("/v0/health").status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    self.health_ms.append((time.perf_counter() - started) * 1000)
                else:
                    self.health_failures += 1
                time.sleep(HEALTH_INTERVAL_S)

    def _sample(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.rss_samples.append(rss_bytes(self.pid))
            time.sleep(RSS_INTERVAL_S)

    def close_hostile(self) -> None:
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()
        self.sockets = []

    @property
    def connections(self) -> int:
        return self.watchers + self.workers

    def per_connection_bytes(self) -> float:
        """The server's RSS growth over the episode's peak, per hostile connection."""
        peak = max(self.rss_samples, default=self.baseline_rss)
        return max(0, peak - self.baseline_rss) / max(1, self.connections)

    def report(self) -> dict[str, Any]:
        lat = sorted(self.health_ms)
        peak = max(self.rss_samples, default=self.baseline_rss)
        return {
            "watchers": self.watchers,
            "workers": self.workers,
            "record_bytes": self.record_bytes,
            "work_max": self.work_max,
            "records_written": self.written,
            "write_failures": self.write_failures,
            "rss_baseline_mb": round(self.baseline_rss / 2**20, 1),
            "rss_peak_mb": round(peak / 2**20, 1),
            "per_connection_kib": round(self.per_connection_bytes() / 1024, 1),
            "budget_per_connection_kib": BUDGET_PER_CONNECTION // 1024,
            "health": {
                "probes": len(lat),
                "failures": self.health_failures,
                "p50_ms": round(percentile(lat, 50), 2),
                "p99_ms": round(percentile(lat, 99), 2),
                "max_ms": round(lat[-1], 2) if lat else None,
            },
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--work-max", type=int, default=16)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    started = time.time()
    connections = args.watchers + args.workers
    raise_nofile()
    result: dict[str, Any] = run_header("hostile readers", False, False, started)
    with tempfile.TemporaryDirectory(prefix="topics-hostile-") as tmp:
        env = {"TOPICS_LOG_LEVEL": "warning", "TOPICS_MAX_SSE_CONNECTIONS_PER_KEY": "0"}
        server = ServerProcess(Path(tmp) / "data", Path(tmp) / "server.log", env, nofile=connections + 512)
        server.start()
        try:
            asyncio.run(server.wait_ready())
            assert server.proc is not None
            proc = server.proc
            episode = Episode(
                server.port, proc.pid, args.watchers, args.workers, args.record_bytes, args.work_max
            )
            log("set-up: topics, jobs, watch sessions")
            episode.set_up()
            log(f"opening {connections} hostile connections")
            episode.open_hostile()
            log(f"load for {args.seconds} s at {args.rate} records/s")
            episode.run_load(args.seconds, args.rate)
            result["episode"] = episode.report()
            episode.close_hostile()
            log("waiting for the server to be idle")
            hz = os.sysconf("SC_CLK_TCK")
            settled = time.monotonic()
            wait_idle(proc.pid)
            settled_s = time.monotonic() - settled
            before = cpu_ticks(proc.pid)
            time.sleep(2.0)
            result["after"] = {
                "settled_within_s": round(settled_s, 1),
                "cpu_fraction_then": round((cpu_ticks(proc.pid) - before) / (2.0 * hz), 3),
                "rss_mb": round(rss_bytes(proc.pid) / 2**20, 1),
            }
        finally:
            server.sigterm(timeout=30)
    report = result["episode"]
    result["goals"] = {
        "per_connection_within_budget": report["per_connection_kib"] <= BUDGET_PER_CONNECTION / 1024,
        "health_p99_under_50ms": report["health"]["p99_ms"] < HEALTH_GOAL_P99_MS,
        "no_health_failures": report["health"]["failures"] == 0,
    }
    emit_result(result, started, args.out or result_path("hostile"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
