#!/usr/bin/env python3
"""Mixed-load soak of ``topics serve``: losses, errors, RSS and descriptors over time.

    python bench/soak.py --duration SECONDS [--seed 1] [--uncapped] [--no-restarts]
                         [--rate 1.0] [--plot FILE.png] [--json FILE] [--trace-dir DIR]

Starts its own server (``bench/crash_harness.ServerProcess``) over a fresh data directory on a
free loopback port and runs, for ``--duration`` seconds, from outside and over HTTP only:

* writers appending to ``fsync`` and ``disk`` topics (one capped, one with a TTL, one with tag
  deletes each), with an idempotency key per append; a deleter removing old tag groups;
* a router copying the capped fsync topic into another topic;
* a producer enqueueing jobs into an fsync queue with a dead-letter topic, served by an SDK
  ``topics.Worker`` whose handler fails 10 % of jobs (``Permanent``: to the dead-letter topic)
  the first time it sees them (so a redriven job succeeds); a redriver moving the dead letters
  back now and then (a filter that left some in place would stop redrive from deleting the
  later ones exactly: ``docs/SDK.md``, Queues);
* 20 SDK ``watch`` sessions (SSE) and 5 WebSocket subscribers (``bench/watch_load``) connecting,
  reading for a random while and dropping; named consumers (SDK ``consume``) reading and
  committing;
* periodic restarts in the first 40 % of the run, alternating SIGTERM and kill -9, on the same
  port (the SDK clients reconnect by themselves);
* a sampler every second: RSS (``/proc/<pid>/status``), open descriptors (``/proc/<pid>/fd``),
  ``/v0/health`` latency, and from ``/v0/metrics`` ``topics_throttle_pressure`` (the server's
  smoothed event-loop lag over its 10 ms budget: the event-loop lag, read from outside), the
  retained bytes of every topic, the chunk cache's bytes and the allocator gauges
  (``topics_malloc_*``: glibc's arenas; ``topics_python_allocated_blocks``).

Every topic is capped (records) unless ``--uncapped``. The queue and its dead-letter topic are
not: acks and redrives bound them.

At the end the load stops, the queue is drained, and it checks:

* ``lost_fsync_records``: every acked record of an fsync topic is read back with its payload,
  or is accounted for: evicted by its cap (at least ``cap_records`` later records were acked and
  it is below the topic's ``earliest_seq``), expired by its TTL, or removed by a tag delete sent
  after it;
* ``lost_jobs``: every acked job was completed by the handler or is in the dead-letter topic;
  ``duplicate_jobs`` (a job completed twice) is reported, and gated to 0 only without restarts
  (a kill -9 or a SIGTERM can end a lease whose ack did not land);
* ``undocumented_errors``: no HTTP status other than 2xx and the documented ``429`` (the
  throttle), and no transport error outside a restart window;
* ``no_fd_growth`` / ``no_stale_sockets``: at two quiet points (load paused, readers gone) —
  after the warm-up of the final restart-free phase and at the end — the server's descriptors
  other than sockets (segment files, the WAL, pipes) do not grow, and none of its TCP sockets is
  in CLOSE_WAIT (a client gone, the server still holding the connection); the sockets of the
  clients that stay connected (the Worker, the writers' keep-alive pool) vary with their pools
  and are reported;
* ``rss_slope_mb_per_h``: the least-squares slope of RSS over the final restart-free phase after
  its warm-up (``max(60 s, 30 %)`` of that phase; a restart resets RSS, so earlier lifetimes are
  reported but not judged). Gated (< 5 MB/h capped; uncapped, the growth of RSS outside the
  chunk cache — whose filling up to ``TOPICS_CACHE_BYTES`` is a configured budget, sampled from
  ``/v0/metrics`` — below 10 % of the retained-bytes growth) only when the judged window is at
  least 10 minutes: a short run reports it. Beside it, ``rss.allocator`` reports (not gated) the
  slopes of malloc's bytes in use, free, heap and mmapped, and of RSS beyond malloc's live
  blocks, over the same window: where a growth sits (see ``allocator_slopes``).

The JSON summary is printed last (and written to ``--json``); exit status 0 only when every
check holds. ``--plot`` draws RSS, retained bytes, RSS split by the allocator gauges and
descriptors over time (needs matplotlib: ``pip install -e '.[bench]'``). ``--trace-dir`` runs
the server under tracemalloc (``bench/traced_serve.py``) and leaves its snapshots there.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import topics  # noqa: E402

from bench.crash_harness import ServerProcess, free_port  # noqa: E402
from bench.http_bench import percentile  # noqa: E402
from bench.proc import open_fds, rss_bytes  # noqa: E402
from bench.watch_load import Tally, open_ws_subscriber, raise_nofile  # noqa: E402

OK = (200, 201)
DOCUMENTED = (429,)
RESTART_GRACE_S = 5.0
JUDGE_MIN_S = 600.0
SLOPE_LIMIT_MB_H = 5.0
UNCAPPED_RATIO = 0.10
CAP_RECORDS = 5_000
TTL_MS = 120_000
QUEUE = "soak.jobs"
DLQ = "soak.jobs.dlq"


@dataclass
class TopicPlan:
    name: str
    durability: str
    cap: bool = False
    ttl: bool = False
    tag_deletes: bool = False

    def config(self, capped: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"durability": self.durability}
        if self.ttl:
            body["ttl_ms"] = TTL_MS
        if capped or self.cap:
            body["cap_records"] = CAP_RECORDS
        return body


def plans(capped: bool) -> list[TopicPlan]:
    return [
        TopicPlan("soak.fsync.cap", "fsync", cap=capped),
        TopicPlan("soak.fsync.ttl", "fsync", ttl=True),
        TopicPlan("soak.fsync.tags", "fsync", tag_deletes=True),
        TopicPlan("soak.disk.cap", "disk", cap=capped),
        TopicPlan("soak.disk.ttl", "disk", ttl=True),
        TopicPlan("soak.disk.tags", "disk", tag_deletes=True),
        TopicPlan("soak.routed", "disk"),  # the router's dest: written by the server only
    ]


@dataclass
class Acked:
    seq: int
    uid: str
    tag: str | None
    sent_mono: float
    acked_wall: float


@dataclass
class TopicLog:
    plan: TopicPlan
    acked: list[Acked] = field(default_factory=list)
    deleted_tags: dict[str, float] = field(default_factory=dict)  # tag -> sent (monotonic)
    group: int = 0


@dataclass
class Sample:
    t: float
    life: int
    rss_mb: float
    fds: int
    health_ms: float | None
    pressure: float | None = None
    retained_mb: float | None = None
    cache_mb: float | None = None
    # from the allocator gauges (docs/METRICS.md, "Where the memory sits"); None without glibc
    malloc_heap_mb: float | None = None
    malloc_mmap_mb: float | None = None
    malloc_in_use_mb: float | None = None
    malloc_free_mb: float | None = None
    python_blocks: int | None = None


MEMORY_GAUGES = {
    "topics_malloc_heap_bytes": "malloc_heap_mb",
    "topics_malloc_mmap_bytes": "malloc_mmap_mb",
    "topics_malloc_in_use_bytes": "malloc_in_use_mb",
    "topics_malloc_free_bytes": "malloc_free_mb",
}
"""The scraped allocator gauges (bytes) -> the :class:`Sample` field (MB) each is kept in."""


class Soak:
    def __init__(self, args: argparse.Namespace, data_dir: Path) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        self.capped = not args.uncapped
        self.topics = {p.name: TopicLog(p) for p in plans(self.capped)}
        argv = None
        if args.trace_dir:
            argv = [sys.executable, str(Path(__file__).with_name("traced_serve.py")), str(args.trace_dir)]
        env = {"TOPICS_LOG_LEVEL": os.environ.get("TOPICS_LOG_LEVEL", "warning")}
        self.server = ServerProcess(data_dir, data_dir.parent / "server.log", env, argv)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.up = asyncio.Event()
        self.load_on = asyncio.Event()
        self.stopping = False
        self.life = 0
        self.restart_window: tuple[float, float] = (0.0, 0.0)  # monotonic, while restarting
        self.t0 = 0.0
        self.samples: list[Sample] = []
        self.statuses: Counter[str] = Counter()
        self.undocumented: Counter[str] = Counter()
        self.expected_disconnects = 0
        self.restarts: list[dict[str, Any]] = []
        self.quiet_fds: list[dict[str, float]] = []
        # jobs
        self.jobs_acked: set[str] = set()
        self.jobs_done: Counter[str] = Counter()
        self.jobs_failed_once: set[str] = set()
        self.redriven = 0
        self.worker_stats: list[dict[str, int]] = []
        # readers
        self.watch_sessions = 0
        self.watch_records = 0
        self.watch_tombstones = 0
        self.ws_sessions = 0
        self.ws_records = 0
        self.consumer_sessions = 0
        self.consumer_records = 0
        self.last_retained: float | None = None
        self.last_pressure: float | None = None
        self.last_cache: float | None = None
        self.last_memory: dict[str, Any] = {}  # Sample field -> its value at the last scrape
        self.sampler_done = threading.Event()

    # ---- classification -------------------------------------------------------------------

    def in_restart(self) -> bool:
        a, b = self.restart_window
        now = time.monotonic()
        return not self.up.is_set() or a <= now <= b + RESTART_GRACE_S

    def status(self, what: str, code: int) -> None:
        self.statuses[f"{what} {code}"] += 1
        if code not in OK and code not in DOCUMENTED and not (code >= 500 and self.in_restart()):
            self.undocumented[f"{what} {code}"] += 1

    def transport_error(self, what: str, exc: BaseException) -> None:
        if self.in_restart() or self.stopping:
            self.expected_disconnects += 1
        else:
            self.undocumented[f"{what} {type(exc).__name__}"] += 1

    async def post(self, http: httpx.AsyncClient, what: str, path: str, body: Any) -> httpx.Response | None:
        """``POST path`` with its status counted under ``what``; ``None`` on a transport error
        (counted as expected during a restart, else as undocumented)."""
        try:
            r = await http.post(path, json=body)
        except httpx.TransportError as exc:
            self.transport_error(what, exc)
            return None
        self.status(what, r.status_code)
        return r

    async def gate(self) -> None:
        """Wait until the server is up and the load is on."""
        while not (self.up.is_set() and self.load_on.is_set()) and not self.stopping:
            await asyncio.sleep(0.05)

    async def pace(self, per_s: float) -> None:
        await asyncio.sleep(self.rng.expovariate(per_s * self.args.rate))

    def uid(self, *parts: object) -> str:
        return "/".join(str(p) for p in (self.args.seed, *parts))

    # ---- set-up ---------------------------------------------------------------------------

    async def configure(self, http: httpx.AsyncClient) -> None:
        for log in self.topics.values():
            r = await http.put(f"/v0/topics/{log.plan.name}", json=log.plan.config(self.capped))
            assert r.status_code in OK, r.text
        r = await http.put(f"/v0/topics/{DLQ}", json={"durability": "fsync"})
        assert r.status_code in OK, r.text
        queue = {"type": "queue", "durability": "fsync", "dead_letter": DLQ, "max_deliveries": 5}
        r = await http.put(f"/v0/topics/{QUEUE}", json={**queue, "lease_ms": 10_000})
        assert r.status_code in OK, r.text
        async with topics.AsyncClient(self.base) as client:
            await client.put_router("soak.route", "soak.fsync.cap", "soak.routed")

    # ---- load: writers, deletes -----------------------------------------------------------

    async def writer(self, http: httpx.AsyncClient, log: TopicLog, wid: int) -> None:
        n_op = 0
        while not self.stopping:
            await self.gate()
            await self.pace(8.0)
            if self.stopping:
                return
            n = self.rng.choice((1, 1, 2, 3, 5))
            if log.plan.tag_deletes and self.rng.random() < 0.05:
                log.group += 1
            tag = f"g{log.group}" if log.plan.tag_deletes else None
            uids = [self.uid(log.plan.name, wid, n_op, k) for k in range(n)]
            n_op += 1
            pads = [self.rng.choice((16, 200, 500, 1000, 2000)) for _ in uids]
            records = [
                {"data": {"id": u, "pad": "x" * p}, **({"tag": tag} if tag else {})}
                for u, p in zip(uids, pads, strict=True)
            ]
            sent = time.monotonic()
            body = {"records": records, "idempotency_key": uids[0]}
            r = await self.post(http, "append", f"/v0/topics/{log.plan.name}", body)
            if r is None:
                continue
            if r.status_code not in OK:
                await asyncio.sleep(0.05)
                continue
            acked = r.json()
            seqs = acked.get("seqs") or list(range(acked["first_seq"], acked["last_seq"] + 1))
            now = time.time()
            log.acked.extend(Acked(s, u, tag, sent, now) for s, u in zip(seqs, uids, strict=True))

    async def tag_deleter(self, http: httpx.AsyncClient, log: TopicLog) -> None:
        deleted_upto = 0
        while not self.stopping:
            await self.gate()
            await self.pace(0.5)
            if self.stopping or log.group - deleted_upto < 3:
                continue
            deleted_upto += 1
            tag = f"g{deleted_upto}"
            log.deleted_tags[tag] = time.monotonic()
            await self.post(http, "delete", f"/v0/topics/{log.plan.name}/delete", {"match": tag})

    # ---- load: jobs -----------------------------------------------------------------------

    async def producer(self, http: httpx.AsyncClient) -> None:
        n = 0
        while not self.stopping:
            await self.gate()
            await self.pace(10.0)
            if self.stopping:
                return
            jids = [self.uid("job", n, k) for k in range(self.rng.choice((1, 1, 2, 4)))]
            n += 1
            body = {"records": [{"data": {"jid": j}} for j in jids], "idempotency_key": jids[0]}
            r = await self.post(http, "enqueue", f"/v0/topics/{QUEUE}", body)
            if r is not None and r.status_code in OK:
                self.jobs_acked.update(jids)

    def poison(self, jid: str) -> bool:
        return hashlib.blake2b(jid.encode(), digest_size=2).digest()[0] < 26  # ~10 %

    async def handle(self, job: topics.Job) -> None:
        jid = job.data["jid"]
        if self.poison(jid) and jid not in self.jobs_failed_once:
            self.jobs_failed_once.add(jid)
            raise topics.Permanent("soak: a poison job, the first time")
        await asyncio.sleep(0.002)
        self.jobs_done[jid] += 1

    async def worker(self, done: asyncio.Event) -> None:
        """One SDK Worker for the whole run; a fresh one if its run ends with an error."""
        while not done.is_set():
            async with topics.AsyncClient(self.base, timeout=10.0, retries=5) as client:
                w = topics.Worker(
                    client,
                    QUEUE,
                    self.handle,
                    node="soak-worker",
                    concurrency=4,
                    backoff=topics.Backoff.fixed(100),
                    shutdown_grace_s=5.0,
                )
                run = asyncio.create_task(w.run_async())
                stop = asyncio.create_task(done.wait())
                await asyncio.wait({run, stop}, return_when=asyncio.FIRST_COMPLETED)
                if not run.done():
                    w.stop()
                try:
                    await run
                except Exception as exc:  # noqa: BLE001 - the worker gave up: note it, start anew
                    self.transport_error("worker", exc)
                    await asyncio.sleep(1.0)
                stop.cancel()
                stats = dataclasses.asdict(w.stats)
                self.worker_stats.append({k: v for k, v in stats.items() if type(v) is int})

    async def redriver(self) -> None:
        while not self.stopping:
            await self.gate()
            await asyncio.sleep(self.rng.uniform(5.0, 15.0))
            if self.stopping:
                return
            try:
                async with topics.AsyncClient(self.base, timeout=10.0) as client:
                    self.redriven += await client.redrive(DLQ, limit=200)
            except topics.Throttled:  # the documented 429: the next round is the retry
                self.status("redrive", 429)
            except (topics.TopicsError, httpx.TransportError) as exc:
                self.transport_error("redrive", exc)

    # ---- load: readers --------------------------------------------------------------------

    async def watcher(self, i: int) -> None:
        names = ["soak.fsync.cap", "soak.disk.cap", "soak.fsync.ttl", "soak.routed"]
        while not self.stopping:
            await self.gate()
            chosen = self.rng.sample(names, self.rng.randint(1, 2))
            start: dict[str, int | str] = {n: "tail" for n in chosen}
            if self.rng.random() < 0.2:
                start[chosen[0]] = 0  # a replay from the oldest kept record
            until = time.monotonic() + self.rng.uniform(1.0, 12.0)
            try:
                async with (
                    topics.AsyncClient(self.base, timeout=10.0) as client,
                    client.watch(start, heartbeat_ms=1000) as watch,
                ):
                    self.watch_sessions += 1
                    await asyncio.wait_for(self._drain_watch(watch, until), until - time.monotonic())
            except TimeoutError:
                pass
            except (topics.TopicsError, httpx.TransportError) as exc:
                self.transport_error("watch", exc)
                await asyncio.sleep(0.5)

    async def _drain_watch(self, watch: Any, until: float) -> None:
        async for event in watch:
            if isinstance(event, topics.Records):
                self.watch_records += len(event.records)
            elif isinstance(event, topics.Tombstone):
                self.watch_tombstones += 1
            if self.stopping or not self.load_on.is_set() or time.monotonic() > until:
                return

    async def ws_subscriber(self) -> None:
        while not self.stopping:
            await self.gate()
            tally = Tally(0, 0)
            try:
                sub = await open_ws_subscriber("127.0.0.1", self.port, "soak.fsync.cap", tally)
            except (OSError, TimeoutError) as exc:
                self.transport_error("ws", exc)
                await asyncio.sleep(0.5)
                continue
            self.ws_sessions += 1
            until = time.monotonic() + self.rng.uniform(1.0, 10.0)
            while time.monotonic() < until and not sub.gone and self.load_on.is_set():
                await asyncio.sleep(0.1)
            self.ws_records += tally.records
            if sub.gone and not self.in_restart():
                self.undocumented[f"ws dropped by the server: {tally.errors[:1]}"] += 1
            sub.close()

    async def consumer(self, i: int) -> None:
        topic = "soak.disk.cap"
        while not self.stopping:
            await self.gate()
            want = self.rng.randint(100, 3000)
            got = 0
            try:
                async with (
                    topics.AsyncClient(self.base, timeout=10.0) as client,
                    client.consume(topic, consumer=f"soak-c{i}", commit_every=100, on_gap="skip") as records,
                ):
                    self.consumer_sessions += 1
                    async for _ in records:
                        got += 1
                        if got >= want or not self.load_on.is_set() or self.stopping:
                            break
            except (topics.TopicsError, httpx.TransportError) as exc:
                self.transport_error("consume", exc)
            self.consumer_records += got
            await asyncio.sleep(self.rng.uniform(0.5, 3.0))

    # ---- observation ----------------------------------------------------------------------

    def proc_stats(self) -> tuple[float, int]:
        assert self.server.proc is not None
        pid = self.server.proc.pid
        rss = 0
        with contextlib.suppress(OSError, RuntimeError):  # a process gone or going
            rss = rss_bytes(pid)
        try:
            fds = open_fds(pid)
        except OSError:
            fds = -1
        return rss / (1 << 20), fds

    def sampler(self) -> None:
        """Every second, on its own thread (so the load's event loop does not delay the probe):
        RSS, fds, a ``/v0/health`` round trip; every 5 s a ``/v0/metrics`` scrape."""
        tick = 0
        with httpx.Client(base_url=self.base, timeout=10.0) as http:
            while not self.sampler_done.wait(1.0):
                if not self.up.is_set():
                    continue
                rss, fds = self.proc_stats()
                health_ms = None
                try:
                    t = time.perf_counter()
                    r = http.get("/v0/health")
                    health_ms = (time.perf_counter() - t) * 1000
                    self.status("health", r.status_code)
                    if tick % 5 == 0:
                        self.scrape(http)
                except httpx.TransportError as exc:
                    self.transport_error("health", exc)
                    http.close()
                    http = httpx.Client(base_url=self.base, timeout=10.0)
                tick += 1
                self.samples.append(
                    Sample(
                        round(time.monotonic() - self.t0, 2),
                        self.life,
                        round(rss, 2),
                        fds,
                        None if health_ms is None else round(health_ms, 2),
                        self.last_pressure,
                        self.last_retained,
                        self.last_cache,
                        **self.last_memory,
                    )
                )

    def scrape(self, http: httpx.Client) -> None:
        r = http.get("/v0/metrics")
        self.status("metrics", r.status_code)
        if r.status_code != 200:
            return
        retained = 0.0
        for line in r.text.splitlines():
            if line.startswith("topics_throttle_pressure "):
                self.last_pressure = round(float(line.split()[-1]), 3)
            elif line.startswith("topics_topic_bytes_live{"):
                retained += float(line.split()[-1])
            elif line.startswith("topics_cache_bytes "):
                self.last_cache = round(float(line.split()[-1]) / 2**20, 2)
            elif line.startswith("topics_python_allocated_blocks "):
                self.last_memory["python_blocks"] = int(float(line.split()[-1]))
            elif line.startswith("topics_malloc_"):
                name, _, v = line.partition(" ")
                if name in MEMORY_GAUGES:
                    self.last_memory[MEMORY_GAUGES[name]] = round(float(v) / 2**20, 2)
        self.last_retained = round(retained / 2**20, 2)

    async def quiet_point(self, idle_s: float = 4.0) -> dict[str, int]:
        """Pause the load (readers close their streams), wait, and count the server's
        descriptors: ``files`` (anything but sockets: segments, the WAL, pipes, eventfds),
        ``sockets``, and ``close_wait`` (accepted connections whose client has gone while the
        server holds on: a connection leak). The sockets of the clients that stay connected
        (the Worker, the writers' keep-alive pool, the sampler) vary with their pools, so
        ``files`` and ``close_wait`` are what is judged."""
        self.load_on.clear()
        await asyncio.sleep(idle_s)
        assert self.server.proc is not None
        pid = self.server.proc.pid
        counts = min((fd_kinds(pid) for _ in range(3)), key=lambda c: c["files"])
        self.quiet_fds.append({"t": round(time.monotonic() - self.t0, 1), **counts})
        return counts

    # ---- restarts -------------------------------------------------------------------------

    async def restart(self, how: str) -> None:
        self.up.clear()
        self.restart_window = (time.monotonic(), float("inf"))
        t = time.monotonic() - self.t0
        rc: int | None = None
        if how == "sigterm":
            rc = await asyncio.to_thread(self.server.sigterm)
            if rc != 0:
                self.undocumented[f"SIGTERM exit status {rc}"] += 1
        else:
            self.server.sigkill()
        self.server.start(self.port)
        replay = await self.server.wait_ready(timeout=120.0)
        self.life += 1
        self.restart_window = (self.restart_window[0], time.monotonic())
        self.up.set()
        self.restarts.append({"t": round(t, 1), "how": how, "exit": rc, "ready_s": round(replay, 2)})
        progress(f"restart {len(self.restarts)} at {t:.0f} s by {how}: ready after {replay:.2f} s")

    # ---- the run --------------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        raise_nofile()
        duration = self.args.duration
        self.server.start(self.port)
        await self.server.wait_ready(timeout=120.0)
        self.up.set()
        self.load_on.set()
        self.t0 = time.monotonic()
        limits = httpx.Limits(max_connections=32, max_keepalive_connections=8)
        worker_done = asyncio.Event()
        async with httpx.AsyncClient(base_url=self.base, timeout=15.0, limits=limits) as http:
            await self.configure(http)
            sampler = threading.Thread(target=self.sampler, name="soak-sampler", daemon=True)
            sampler.start()
            tasks = []
            for log in self.topics.values():
                if log.plan.name == "soak.routed":
                    continue
                tasks += [asyncio.create_task(self.writer(http, log, w)) for w in range(2)]
                if log.plan.tag_deletes:
                    tasks.append(asyncio.create_task(self.tag_deleter(http, log)))
            tasks.append(asyncio.create_task(self.producer(http)))
            tasks.append(asyncio.create_task(self.redriver()))
            tasks += [asyncio.create_task(self.watcher(i)) for i in range(20)]
            tasks += [asyncio.create_task(self.ws_subscriber()) for _ in range(5)]
            tasks += [asyncio.create_task(self.consumer(i)) for i in range(3)]
            worker = asyncio.create_task(self.worker(worker_done))

            restart_phase = 0.4 * duration if self.args.restarts else 0.0
            n_restarts = max(2, round(restart_phase / 180)) if self.args.restarts else 0
            plan = [restart_phase * (k + 1) / n_restarts for k in range(n_restarts)]
            for k, at in enumerate(plan):
                await asyncio.sleep(max(0.0, self.t0 + at - time.monotonic()))
                await self.restart("sigterm" if k % 2 == 0 else "sigkill")
            final_start = time.monotonic() - self.t0
            warm = max(60.0, 0.3 * (duration - final_start))
            warm = min(warm, max(0.0, duration - final_start - 10.0))
            await asyncio.sleep(max(0.0, self.t0 + final_start + warm - time.monotonic()))
            fds_warm = await self.quiet_point()
            judged_from = time.monotonic() - self.t0
            self.load_on.set()
            await asyncio.sleep(max(0.0, self.t0 + duration - time.monotonic()))
            fds_end = await self.quiet_point()

            # stop the load, drain the queue, verify
            self.stopping = True
            self.load_on.set()
            progress(f"stopping the load at {time.monotonic() - self.t0:.0f} s")
            await asyncio.gather(*tasks, return_exceptions=True)
            self.sampler_done.set()
            await asyncio.to_thread(sampler.join)
            progress("draining the queue")
            drained = await self.drain_queue(http)
            worker_done.set()
            await worker
            progress("verifying")
            checks = await self.verify(http)
        return self.summary(checks, drained, fds_warm, fds_end, final_start, judged_from)

    async def drain_queue(self, http: httpx.AsyncClient, timeout_s: float = 120.0) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            r = await http.get(f"/v0/topics/{QUEUE}", params={"touch": "false"})
            if r.status_code == 200 and r.json()["count"] == 0:
                return True
            await asyncio.sleep(0.5)
        return False

    async def read_all(self, http: httpx.AsyncClient, name: str) -> tuple[dict[int, Any], dict[str, Any]]:
        got: dict[int, Any] = {}
        cursor = 0
        while True:
            r = await http.post(f"/v0/topics/{name}/diff", json={"from_seq": cursor, "limit": 1000})
            assert r.status_code == 200, r.text
            body = r.json()
            for rec in body["records"]:
                got[rec["$seq"]] = rec.get("data")
            nxt = body["next_from_seq"]
            if body.get("caught_up") or nxt <= cursor:
                break
            cursor = nxt
        st = await http.get(f"/v0/topics/{name}", params={"touch": "false"})
        assert st.status_code == 200, st.text
        return got, st.json()

    async def verify(self, http: httpx.AsyncClient) -> dict[str, Any]:
        out: dict[str, Any] = {"topics": {}}
        lost_total = 0
        now = time.time()
        for log in self.topics.values():
            if log.plan.durability != "fsync":
                continue
            got, state = await self.read_all(http, log.plan.name)
            capped = self.capped or log.plan.cap
            seqs = sorted(a.seq for a in log.acked)
            rank = {s: len(seqs) - 1 - i for i, s in enumerate(seqs)}  # acked records after s
            why: Counter[str] = Counter()
            lost: list[int] = []
            for a in log.acked:
                if a.seq in got:
                    data = got[a.seq]
                    why["read" if isinstance(data, dict) and data.get("id") == a.uid else "mismatch"] += 1
                elif a.tag is not None and log.deleted_tags.get(a.tag, -1.0) >= a.sent_mono:
                    why["tag_deleted"] += 1
                elif log.plan.ttl and a.acked_wall + TTL_MS / 1000 < now + 2.0:
                    why["ttl_expired"] += 1
                elif capped and rank[a.seq] >= CAP_RECORDS and a.seq < state["earliest_seq"]:
                    why["cap_evicted"] += 1
                else:
                    lost.append(a.seq)
            lost_total += len(lost) + why["mismatch"]
            out["topics"][log.plan.name] = {
                "acked": len(log.acked),
                **dict(why),
                "lost": len(lost),
                "lost_first": lost[:10],
                "head_seq": state["head_seq"],
                "earliest_seq": state["earliest_seq"],
                "count": state["count"],
            }
        dead, _ = await self.read_all(http, DLQ)
        dead_jids = {d["jid"] for d in dead.values() if isinstance(d, dict)}
        lost_jobs = sorted(self.jobs_acked - set(self.jobs_done) - dead_jids)
        out["lost_fsync_records"] = lost_total
        out["jobs"] = {
            "acked": len(self.jobs_acked),
            "completed": len(self.jobs_done),
            "dead_lettered_at_end": len(dead_jids),
            "failed_first_time": len(self.jobs_failed_once),
            "redriven": self.redriven,
            "duplicates": sum(n - 1 for n in self.jobs_done.values() if n > 1),
            "lost": len(lost_jobs),
            "lost_first": lost_jobs[:10],
        }
        return out

    # ---- summary --------------------------------------------------------------------------

    def summary(
        self,
        checks: dict[str, Any],
        drained: bool,
        fds_warm: dict[str, int],
        fds_end: dict[str, int],
        final_start: float,
        judged_from: float,
    ) -> dict[str, Any]:
        a = self.args
        final = [s for s in self.samples if s.life == self.life and s.t >= judged_from]
        window = (final[-1].t - final[0].t) if len(final) > 1 else 0.0
        slope = _slope([(s.t / 3600, s.rss_mb) for s in final])
        retained_slope = _slope([(s.t / 3600, s.retained_mb) for s in final if s.retained_mb is not None])
        outside_cache = _slope([(s.t / 3600, s.rss_mb - s.cache_mb) for s in final if s.cache_mb is not None])
        lifetimes = []
        for life in range(self.life + 1):
            ss = [s for s in self.samples if s.life == life]
            if len(ss) > 1:
                lifetimes.append(
                    {
                        "life": life,
                        "from_s": ss[0].t,
                        "to_s": ss[-1].t,
                        "rss_mb_first": ss[0].rss_mb,
                        "rss_mb_last": ss[-1].rss_mb,
                        "rss_mb_max": max(s.rss_mb for s in ss),
                        "rss_slope_mb_per_h": _round(_slope([(s.t / 3600, s.rss_mb) for s in ss])),
                    }
                )
        health = sorted(s.health_ms for s in self.samples if s.health_ms is not None)
        lag = sorted(s.pressure * 10 for s in self.samples if s.pressure is not None)
        judged = window >= JUDGE_MIN_S
        if self.capped:
            rss_ok = slope is not None and slope < SLOPE_LIMIT_MB_H
            rss_rule = f"RSS slope < {SLOPE_LIMIT_MB_H} MB/h"
        else:
            rss_ok = (
                outside_cache is not None
                and retained_slope is not None
                and outside_cache < max(SLOPE_LIMIT_MB_H, UNCAPPED_RATIO * retained_slope)
            )
            rss_rule = (
                f"slope of RSS outside the chunk cache < max({SLOPE_LIMIT_MB_H}, {UNCAPPED_RATIO} x "
                "retained-bytes slope) MB/h"
            )
        jobs = checks["jobs"]
        dup_ok = jobs["duplicates"] == 0 or bool(self.restarts)
        results = {
            "no_lost_fsync_records": checks["lost_fsync_records"] == 0,
            "no_lost_jobs": jobs["lost"] == 0,
            "queue_drained": drained,
            "no_duplicate_jobs_without_restarts": dup_ok,
            "no_undocumented_errors": not self.undocumented,
            "no_fd_growth": fds_end["files"] <= fds_warm["files"],
            "no_stale_sockets": fds_end["close_wait"] == 0 and fds_warm["close_wait"] == 0,
            "rss_flat": rss_ok if judged else None,
        }
        ok = all(v for v in results.values() if v is not None)
        return {
            "tool": "bench/soak.py",
            "seed": a.seed,
            "duration_s": a.duration,
            "mode": "capped" if self.capped else "uncapped",
            "rate": a.rate,
            "restarts": self.restarts,
            "cap_records": CAP_RECORDS if self.capped else None,
            "ttl_ms": TTL_MS,
            "fsync": checks["topics"],
            "lost_fsync_records": checks["lost_fsync_records"],
            "jobs": jobs,
            "worker_runs": self.worker_stats,
            "readers": {
                "watch_sessions": self.watch_sessions,
                "watch_records": self.watch_records,
                "watch_tombstones": self.watch_tombstones,
                "ws_sessions": self.ws_sessions,
                "ws_records": self.ws_records,
                "consumer_sessions": self.consumer_sessions,
                "consumer_records": self.consumer_records,
            },
            "statuses": dict(sorted(self.statuses.items())),
            "undocumented_errors": dict(self.undocumented),
            "expected_disconnects": self.expected_disconnects,
            "fds": {
                "quiet_after_warmup": fds_warm,
                "quiet_at_end": fds_end,
                "files_growth": fds_end["files"] - fds_warm["files"],
            },
            "rss": {
                "method": "least squares over the final restart-free lifetime, after its warm-up",
                "final_lifetime_from_s": round(final_start, 1),
                "judged_from_s": round(judged_from, 1),
                "judged_window_s": round(window, 1),
                "slope_mb_per_h": _round(slope),
                "retained_slope_mb_per_h": _round(retained_slope),
                "outside_cache_slope_mb_per_h": _round(outside_cache),
                "rule": rss_rule
                + (" (judged)" if judged else f" (not judged: window < {JUDGE_MIN_S:.0f} s)"),
                "mb_at_judged_start": final[0].rss_mb if final else None,
                "mb_at_end": final[-1].rss_mb if final else None,
                "mb_max": max((s.rss_mb for s in self.samples), default=None),
                "retained_mb_at_end": self.last_retained,
                "cache_mb_at_end": self.last_cache,
                "allocator": allocator_slopes(final),
                "lifetimes": lifetimes,
            },
            "health_ms": _pcts(health),
            "event_loop_lag_ms": {
                "source": "topics_throttle_pressure x 10 ms (smoothed), every 5 s",
                **_pcts(lag),
            },
            "samples": [list(vars(s).values()) for s in self.samples],
            "sample_fields": list(Sample.__dataclass_fields__),
            "checks": results,
            "ok": ok,
        }


def allocator_slopes(final: list[Sample]) -> dict[str, Any]:
    """Over the judged window: the least-squares slopes (MB/h) of glibc's arenas — bytes in use,
    free, the arenas' total and the mmapped blocks — and of RSS beyond malloc's live blocks
    (RSS - in use - mmap). Free bytes are the arenas' free chunks *resident or not*: a
    ``malloc_trim`` (after a seal, or after the chunk cache churned) gives their whole pages back
    to the system but leaves them counted, so neither "free" nor "RSS - heap - mmap" follows
    resident memory once trims run. RSS - in use - mmap is what is resident beyond malloc's live
    blocks: CPython's pymalloc arenas (which it maps itself), C extensions' own mappings, thread
    stacks, the pages of mapped files — and the free chunks' pages no trim gave back.
    ``python_blocks_per_h`` (the slope of sys.getallocatedblocks()) tells whether Python objects
    are what grows. All ``None`` without glibc's mallinfo2 (or without scrapes)."""

    def slope(value: Callable[[Sample], float | None]) -> float | None:
        return _round(_slope([(s.t / 3600, value(s)) for s in final]))

    def beyond(s: Sample) -> float | None:
        if s.malloc_in_use_mb is None or s.malloc_mmap_mb is None:
            return None
        return s.rss_mb - s.malloc_in_use_mb - s.malloc_mmap_mb

    blocks = _slope([(s.t / 3600, s.python_blocks) for s in final])
    return {
        "source": "/v0/metrics topics_malloc_* (glibc mallinfo2, every arena) every 5 s",
        "in_use_slope_mb_per_h": slope(lambda s: s.malloc_in_use_mb),
        "free_slope_mb_per_h": slope(lambda s: s.malloc_free_mb),
        "heap_slope_mb_per_h": slope(lambda s: s.malloc_heap_mb),
        "mmap_slope_mb_per_h": slope(lambda s: s.malloc_mmap_mb),
        "beyond_malloc_in_use_slope_mb_per_h": slope(beyond),
        "python_blocks_per_h": None if blocks is None else round(blocks),
        "at_end": {f: getattr(final[-1], f) for f in (*MEMORY_GAUGES.values(), "python_blocks")}
        if final
        else None,
    }


def fd_kinds(pid: int) -> dict[str, int]:
    """The descriptors of ``pid`` by kind, and how many of its TCP sockets are in CLOSE_WAIT."""
    files = 0
    inodes: set[str] = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
            else:
                files += 1
    close_wait = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                cols = line.split()
                if len(cols) > 9 and cols[3] == "08" and cols[9] in inodes:
                    close_wait += 1
    return {"files": files, "sockets": len(inodes), "close_wait": close_wait}


def progress(text: str) -> None:
    print(f"soak: {text}", file=sys.stderr, flush=True)


def _slope(points: list[tuple[float, float | None]]) -> float | None:
    pts = [(x, y) for x, y in points if y is not None]
    if len(pts) < 3:
        return None
    mx = statistics.fmean(x for x, _ in pts)
    my = statistics.fmean(y for _, y in pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return None if den == 0 else sum((x - mx) * (y - my) for x, y in pts) / den


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 2)


def _pcts(xs: list[float]) -> dict[str, float | None]:
    """p50, p99 (nearest rank, as every benchmark reports them) and max of the sorted ``xs``."""
    if not xs:
        return {"p50": None, "p99": None, "max": None}
    return {"p50": round(percentile(xs, 50), 2), "p99": round(percentile(xs, 99), 2), "max": round(xs[-1], 2)}


def plot(summary: dict[str, Any], path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no plot: matplotlib is not installed (pip install -e '.[bench]')"
    fields = summary["sample_fields"]
    rows = [dict(zip(fields, s, strict=True)) for s in summary["samples"]]
    t = [r["t"] / 60 for r in rows]
    fig, ax = plt.subplots(3, 1, figsize=(9, 9), sharex=True)
    ax[0].plot(t, [r["rss_mb"] for r in rows], lw=1, label="RSS (MB)")
    ax[0].plot(t, [r["retained_mb"] for r in rows], lw=1, label="retained bytes (MB)")
    ax[0].plot(t, [r["cache_mb"] for r in rows], lw=1, label="chunk cache (MB)")
    for r in summary["restarts"]:
        ax[0].axvline(r["t"] / 60, color="grey", ls=":", lw=1)
    ax[0].axvline(summary["rss"]["judged_from_s"] / 60, color="green", ls="--", lw=1, label="judged from")
    ax[0].set_ylabel("MB")
    ax[0].legend(loc="upper left")
    slope = summary["rss"]["slope_mb_per_h"]
    ax[0].set_title(
        f"topics soak ({summary['mode']}, {summary['duration_s'] / 60:.0f} min): "
        f"RSS slope {slope} MB/h after warm-up; dotted: restarts"
    )
    _plot_allocator(ax[1], t, rows)
    ax[2].plot(t, [r["fds"] for r in rows], lw=1, color="tab:red", label="open fds")
    ax[2].set_ylabel("fds")
    ax[2].set_xlabel("minutes")
    ax[2].legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return None


def _plot_allocator(ax: Any, t: list[float], rows: list[dict[str, Any]]) -> None:
    """RSS split by the allocator gauges: malloc's bytes in use, free (resident or not), mmapped,
    and what is resident beyond malloc's live blocks (see :func:`allocator_slopes`); empty for a
    result file from before them or a server without glibc."""

    def beyond(r: dict[str, Any]) -> float | None:
        in_use, mmap = r.get("malloc_in_use_mb"), r.get("malloc_mmap_mb")
        return None if in_use is None or mmap is None else r["rss_mb"] - in_use - mmap

    for field_, label in (
        ("malloc_in_use_mb", "malloc in use"),
        ("malloc_free_mb", "malloc free (resident or trimmed)"),
        ("malloc_mmap_mb", "malloc mmapped blocks"),
    ):
        ax.plot(t, [r.get(field_) for r in rows], lw=1, label=label)
    ax.plot(t, [beyond(r) for r in rows], lw=1, label="RSS - malloc in use - mmapped (pymalloc, code, ...)")
    ax.set_ylabel("MB")
    ax.legend(loc="upper left")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, required=True, help="seconds of load")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--uncapped", action="store_true", help="no caps: retained bytes grow")
    ap.add_argument("--restarts", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--rate", type=float, default=1.0, help="multiplies every load rate")
    ap.add_argument("--plot", type=Path, default=None, help="write a PNG of RSS/retained/allocator/fds")
    ap.add_argument("--json", type=Path, default=None, help="write the summary here too")
    ap.add_argument("--trace-dir", type=Path, default=None, help="run the server under tracemalloc")
    ap.add_argument("--data-dir", type=Path, default=None, help="default: a temporary directory")
    args = ap.parse_args()
    logging.getLogger("topics.worker").setLevel(logging.ERROR)  # the poison jobs' failures
    with tempfile.TemporaryDirectory(prefix="topics-soak-") as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        data_dir.mkdir(parents=True, exist_ok=True)
        soak = Soak(args, data_dir)
        try:
            summary = asyncio.run(soak.run())
        finally:
            soak.server.kill()
        if not summary["ok"]:
            print(f"server log tail:\n{soak.server.log_tail()}", file=sys.stderr)
    if args.plot:
        note = plot(summary, args.plot)
        if note:
            print(note, file=sys.stderr)
    text = json.dumps(summary)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    print(text)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
