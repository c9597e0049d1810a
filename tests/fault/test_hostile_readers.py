"""Hostile readers against a real ``topics serve``: watchers that never read and ``/work``
streams that never ack nor read (raw sockets with a 4 KiB receive buffer), while records are
written (``bench/hostile_readers.py`` runs the same with 1 000 + 1 000 and measures latency).

- every stalled connection stays within the documented budget: the server's RSS grows by at most
  ``transport.STREAM_BUDGET`` per connection, and the kernel holds at most
  2 × ``transport.STREAM_SNDBUF`` unsent bytes for each (``ss``: its send queue);
- other clients are served meanwhile (every ``/v0/health`` probe answered 200);
- the server does not spin on its stalled streams, and is idle again once they are gone (CPU
  time sampled from ``/proc``: under a fifth of a core over 2 s windows).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import httpx
from topics_server.transport import STREAM_BUDGET, STREAM_SNDBUF

from bench.hostile_readers import Episode, open_stalled_h2
from bench.proc import rss_bytes, wait_idle
from tests.server.processes import ServerProcess

WATCHERS = 200
WORKERS = 200
RECORDS = 400
"""1 KiB records, each to every watcher: 400 KiB per watcher, several times what its buffers
take (kernel and transport), so every watch stream ends up blocked."""


def _send_queues(port: int) -> list[int]:
    """The unsent bytes (Send-Q) of every connection the server has on ``port``."""
    out = subprocess.run(
        ["ss", "-tn", "state", "established", "sport", f"= :{port}"], capture_output=True, text=True
    )
    return [int(line.split()[1]) for line in out.stdout.splitlines()[1:] if line.strip()]


def _sse_connections(base: str) -> int:
    text = httpx.get(f"{base}/v0/metrics", timeout=10).text
    line = next(line for line in text.splitlines() if line.startswith("topics_sse_connections "))
    return int(float(line.split()[1]))


def test_stalled_watchers_and_workers_stay_within_budget(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data") as server:
        assert server.proc is not None
        pid = server.proc.pid
        episode = Episode(server.port, pid, WATCHERS, WORKERS, record_bytes=1024, work_max=64)
        episode.set_up()
        episode.open_hostile()
        try:
            assert _sse_connections(server.url) == WATCHERS + WORKERS
            episode.run_load(seconds=0, rate=1000, records=RECORDS)
            assert episode.written == RECORDS and episode.write_failures == 0
            assert episode.health_ms and episode.health_failures == 0  # others were served
            episode.rss_samples.append(rss_bytes(pid))  # now, besides the sampler's
            per_connection = episode.per_connection_bytes()
            assert per_connection <= STREAM_BUDGET, f"{per_connection / 1024:.0f} KiB per stalled connection"
            if shutil.which("ss"):
                queues = _send_queues(server.port)
                assert len(queues) >= WATCHERS + WORKERS
                assert max(queues) <= 2 * STREAM_SNDBUF, max(queues)
            wait_idle(pid)  # stalled streams cost no CPU
            assert _sse_connections(server.url) == WATCHERS + WORKERS  # all still open
        finally:
            episode.close_hostile()
        deadline = time.monotonic() + 60
        while _sse_connections(server.url):  # every stream noticed its client left
            assert time.monotonic() < deadline, "streams still open"
            time.sleep(0.1)
        wait_idle(pid)  # and nothing spins after them


H2_STREAMS = 50


def test_a_stalled_h2c_connection_stays_within_budget(tmp_path: Path) -> None:
    """One h2c connection carrying 50 watch streams, whose client grants the largest windows
    and never reads: the connection gets the streaming budget (kernel send queue within
    2 × ``STREAM_SNDBUF``, not autotuned to megabytes), RSS stays within the per-stream
    budget, other clients are served, and the server does not spin."""
    with ServerProcess(tmp_path / "data") as server:
        assert server.proc is not None
        pid = server.proc.pid
        episode = Episode(server.port, pid, H2_STREAMS, 0, record_bytes=1024)
        episode.set_up()
        sock = open_stalled_h2(server.port, [f"/v0/watch/{wid}" for wid in episode.wids])
        try:
            assert _sse_connections(server.url) == H2_STREAMS
            episode.run_load(seconds=0, rate=1000, records=RECORDS)
            assert episode.written == RECORDS and episode.write_failures == 0
            assert episode.health_ms and episode.health_failures == 0
            episode.rss_samples.append(rss_bytes(pid))
            growth = max(episode.rss_samples) - episode.baseline_rss
            assert growth <= STREAM_BUDGET * H2_STREAMS, f"{growth / 1024:.0f} KiB for {H2_STREAMS} streams"
            if shutil.which("ss"):
                queues = _send_queues(server.port)
                assert max(queues) <= 2 * STREAM_SNDBUF, max(queues)
            wait_idle(pid)
        finally:
            sock.close()
        deadline = time.monotonic() + 60
        while _sse_connections(server.url):
            assert time.monotonic() < deadline, "streams still open"
            time.sleep(0.1)
        wait_idle(pid)
