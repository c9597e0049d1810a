#!/usr/bin/env python3
"""Live fan-out benchmark: write→deliver latency over SSE watch streams and ``/v0/ws``, and the
replay rate of a backlog.

    python bench/watch_bench.py [--quick] [--out results.json] [--watchers 1,10,100,1000]
        [--ws-subscribers 1,100] [--rate 200] [--seconds 10] [--warmup 1] [--procs 4]
        [--skip-sse] [--skip-ws] [--skip-replay] [--replay-records 1000000] [--no-pin]

Every scenario gets a fresh ``topics serve`` (a subprocess on 127.0.0.1, free port, its own
temporary ``TOPICS_DATA_DIR``; started with the helpers of ``bench/http_bench.py``). On a machine
with >= 2 CPUs the server is pinned to CPU 0 (taskset) and this process and its load processes
to CPU 1 (``--no-pin`` to disable). Watchers are spread over ``--procs`` load processes
(``multiprocessing``, spawn; ``bench/watch_load.py``), each running uvloop with raw-socket
watchers (the chunked SSE body and WebSocket frames are parsed by hand — no client library).

Scenarios:

* ``sse`` — for each N in ``--watchers``: topic ``bench-watch`` (``durability: disk``), N watch
  sessions ``POST /v0/watch {"topics":{"bench-watch":{"tail":true}}}`` (consistency
  ``eventual``, the default), each streamed by one ``GET stream_url``. Once every stream is live
  (its first ``caught-up``), one writer (this process) appends single records
  ``POST /v0/topics/bench-watch`` at a fixed ``--rate`` for ``--warmup`` + ``--seconds``
  seconds, open loop: each record is sent at its slot without waiting for earlier replies, up to
  ``--writer-inflight`` (4) unanswered over as many keep-alive connections (a slot that finds
  them all taken is late; the achieved rate is reported and a shortfall is a warning). Each
  record's ``data`` is ~100 B: ``{"t": time.time_ns() at send, "k": index, "pad": ...}``. A
  watcher takes ``receive time - t`` for every record with ``k`` past the warm-up; the
  percentiles pool every (record, watcher) pair. ``fanout_spread`` is, per record, the last
  watcher's receive time minus the first's: on one server core, the time one record's fan-out
  takes.
* ``ws`` — for each N in ``--ws-subscribers``: N sockets ``subscribe`` with ``tail: true``; one
  more socket (this process) ``publish``-es single records the same way (pipelined, at most
  ``--writer-inflight`` unacknowledged).
* ``replay`` — ``--replay-records`` records of ~100 B (``bench/payloads.py``) appended in
  batches of 1000 (4 connections), then one SSE watcher from ``from_seq`` 0 with ``limit`` 1000
  and ``max_batch_bytes`` 0 (the server default, 1 MiB) reads until its ``caught-up``:
  records/s and server CPU. The reader checks each frame without decoding its records (its
  ``from_seq`` continues the last frame's ``to_seq`` and it holds ``to_seq - from_seq``
  records), so it keeps up with the server; ``--replay-full-parse`` decodes every record.

Measured per live scenario over the window from the first write until every watcher has seen the
last seq: latency p50/p90/p99/p99.9/max (ms), delivered records and ``record`` frames, and per
watcher that seqs were contiguous from its start to the last seq (``duplicates``, ``gaps``,
``missing_at_end`` must all be 0); server CPU seconds (``/proc/<pid>/stat`` utime+stime) and its
CPU per delivered frame and per delivered record; the load processes' CPU seconds (and this
process's, the writer's) — a client CPU utilisation near 1.0 means the one client core, not the
server, was the limit; ``foreign_cpu_util`` is what the rest of the machine used meanwhile;
``server.idle_cpu_util`` the server's CPU over 1 s with every stream open before the writes.
A writer that fell short of the rate, or a saturated client core, is listed under ``warnings``.

The goal checked: **1000 SSE watchers, p99 write→deliver <= 5 ms** (``goal`` in the JSON; null
when 1000 watchers were not run). JSON goes to stdout (and ``--out``), progress and a summary to
stderr. Exit status 1 if a watcher lost, duplicated or missed a record, a request failed, or a
stream could not be opened; a missed goal or a warning does not change it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import os
import signal
import statistics
import sys
import tempfile
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import aiohttp  # noqa: E402
import orjson  # noqa: E402

from bench import watch_load  # noqa: E402
from bench.http_bench import (  # noqa: E402
    CLIENT_CPU,
    HEADERS,
    SERVER_CPU,
    Server,
    append_fn,
    can_pin,
    cpu_seconds,
    drive,
    emit_result,
    git,
    log,
    machine_busy_seconds,
    machine_facts,
    percentile,
    rss_mb,
    servers,
    topics_server,
)
from bench.payloads import data_size  # noqa: E402

TOPIC = "bench-watch"
REPLAY_TOPIC = "bench-replay"
GOAL_WATCHERS = 1000
GOAL_P99_MS = 5.0
PAD = b"x" * 58
"""Padding so a live record's data is ~100 B: {"t":<19 digits>,"k":<n>,"pad":"xx…"}."""
READY_TIMEOUT_S = 120.0
DRAIN_TIMEOUT_S = 60.0
IDLE_S = 1.0
"""Before the writes: server CPU with every stream open and nothing written (``idle_cpu_util``),
the floor under the per-frame numbers at a low rate."""


@dataclass(frozen=True)
class Plan:
    watchers: tuple[int, ...]
    ws_subscribers: tuple[int, ...]
    rate: float
    seconds: float
    warmup_s: float
    procs: int
    writer_inflight: int
    replay_records: int
    replay_batch: int
    replay_limit: int
    replay_full_parse: bool
    skip_sse: bool
    skip_ws: bool
    skip_replay: bool

    @property
    def records(self) -> int:
        return round(self.rate * (self.warmup_s + self.seconds))

    @property
    def warmup_records(self) -> int:
        return round(self.rate * self.warmup_s)


FULL: dict[str, Any] = {
    "watchers": (1, 10, 100, 1000),
    "ws": (1, 100),
    "seconds": 10.0,
    "warmup": 1.0,
    "replay": 1_000_000,
}
QUICK: dict[str, Any] = {
    "watchers": (1, 10, 100),
    "ws": (1, 100),
    "seconds": 3.0,
    "warmup": 0.5,
    "replay": 50_000,
}


# --------------------------------------------------------------------------------------------
# small helpers


def live_data(k: int) -> bytes:
    return b'{"t":%d,"k":%d,"pad":"%s"}' % (time.time_ns(), k, PAD)


def ms(ns: float) -> float:
    return round(ns / 1e6, 3)


def latency_summary(lat_ns: list[float]) -> dict[str, Any]:
    if not lat_ns:
        return {"samples": 0}
    return {
        "samples": len(lat_ns),
        "p50_ms": ms(percentile(lat_ns, 50)),
        "p90_ms": ms(percentile(lat_ns, 90)),
        "p99_ms": ms(percentile(lat_ns, 99)),
        "p999_ms": ms(percentile(lat_ns, 99.9)),
        "max_ms": ms(lat_ns[-1]),
        "min_ms": ms(lat_ns[0]),
        "mean_ms": ms(sum(lat_ns) / len(lat_ns)),
    }


def secs_summary(lat_s: list[float]) -> dict[str, Any]:
    s = sorted(lat_s)
    if not s:
        return {"samples": 0}
    return {
        "samples": len(s),
        "p50_ms": round(percentile(s, 50) * 1000, 3),
        "p99_ms": round(percentile(s, 99) * 1000, 3),
        "max_ms": round(s[-1] * 1000, 3),
    }


def server_log_issues(server: Server) -> list[str]:
    """Lines of the server's log (level warning) other than its start-up line."""
    with contextlib.suppress(OSError):
        lines = server.log_path.read_text(errors="replace").splitlines()
        return [ln[:300] for ln in lines if ln.strip() and "listening on" not in ln][:20]
    return []


class CpuWindow:
    """CPU seconds of the server, the load processes and this process over one window."""

    def __init__(self, server: Server, worker_pids: list[int]) -> None:
        self.server, self.pids = server, worker_pids
        self.t0 = time.perf_counter()
        self.s0 = cpu_seconds(server.pid)
        self.w0 = {pid: sum(cpu_seconds(pid)[:2]) for pid in worker_pids}
        self.m0 = time.process_time()
        self.b0 = machine_busy_seconds()

    def stop(self) -> dict[str, Any]:
        elapsed = time.perf_counter() - self.t0
        s1 = cpu_seconds(self.server.pid)
        w1 = {pid: sum(cpu_seconds(pid)[:2]) for pid in self.pids}
        m1, b1 = time.process_time(), machine_busy_seconds()
        server_cpu = max(0.0, s1[0] + s1[1] - self.s0[0] - self.s0[1])
        workers = {pid: max(0.0, w1[pid] - self.w0[pid]) for pid in self.pids}
        workers_cpu = sum(workers.values())
        own = m1 - self.m0
        return {
            "window_s": elapsed,
            "server_cpu_s": server_cpu,
            "server_sys_s": max(0.0, s1[1] - self.s0[1]),
            "server_main_thread_s": max(0.0, s1[2] - self.s0[2]),
            "workers_cpu_s": workers_cpu,
            "workers_cpu_s_each": [round(v, 3) for v in workers.values()],
            "main_cpu_s": max(0.0, own),
            "foreign_cpu_s": max(0.0, b1 - self.b0 - server_cpu - workers_cpu - own),
        }


# --------------------------------------------------------------------------------------------
# load processes


class Workers:
    """The load processes of one scenario and their pipes."""

    def __init__(self, specs: list[dict[str, Any]]) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conns: list[Any] = []
        self.procs: list[Any] = []
        for spec in specs:
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=watch_load.worker_main, args=(child, spec), daemon=True)
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    async def gather(self, expect: str, timeout_s: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout_s

        def recv(conn: Any) -> dict[str, Any]:
            left = max(0.0, deadline - time.monotonic())
            if not conn.poll(left):
                raise TimeoutError(f"no {expect!r} from a load process within {timeout_s:.0f}s")
            msg: dict[str, Any] = conn.recv()
            if msg.get("msg") != expect:
                raise RuntimeError(f"load process sent {msg.get('msg')!r}, expected {expect!r}")
            return msg

        return list(await asyncio.gather(*(asyncio.to_thread(recv, c) for c in self.conns)))

    def send(self, msg: dict[str, Any]) -> None:
        for conn in self.conns:
            with contextlib.suppress(OSError, ValueError):
                conn.send(msg)

    def stop(self) -> None:
        self.send({"msg": "stop"})
        for proc in self.procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
        for conn in self.conns:
            conn.close()


def split(items: list[Any], parts: int) -> list[list[Any]]:
    return [chunk for chunk in (items[i::parts] for i in range(parts)) if chunk]


# --------------------------------------------------------------------------------------------
# HTTP set-up


async def put_topic(http: aiohttp.ClientSession, server: Server, topic: str) -> dict[str, Any]:
    async with http.put(
        f"{server.base}/v0/topics/{topic}", data=orjson.dumps({"durability": "disk"}), headers=HEADERS
    ) as resp:
        raw = await resp.read()
        if resp.status not in (200, 201):
            raise RuntimeError(f"PUT {topic}: {resp.status} {raw[:300]!r}")
    config: dict[str, Any] = orjson.loads(raw)["config"]
    return config


async def topic_head(http: aiohttp.ClientSession, server: Server, topic: str) -> int:
    async with http.get(f"{server.base}/v0/topics/{topic}", headers=HEADERS) as resp:
        raw = await resp.read()
        if resp.status != 200:
            raise RuntimeError(f"GET {topic}: {resp.status} {raw[:300]!r}")
    head: int = orjson.loads(raw)["head_seq"]
    return head


async def create_watch(http: aiohttp.ClientSession, server: Server, body: dict[str, Any]) -> dict[str, Any]:
    async with http.post(f"{server.base}/v0/watch", data=orjson.dumps(body), headers=HEADERS) as resp:
        raw = await resp.read()
        if resp.status != 200:
            raise RuntimeError(f"POST /v0/watch: {resp.status} {raw[:300]!r}")
    doc: dict[str, Any] = orjson.loads(raw)
    return doc


async def create_sessions(http: aiohttp.ClientSession, server: Server, n: int) -> list[tuple[str, int]]:
    """N tail sessions on TOPIC: (stream_url, from_seq) each."""
    out: list[tuple[str, int]] = []
    sem = asyncio.Semaphore(16)

    async def one() -> None:
        async with sem:
            doc = await create_watch(http, server, {"topics": {TOPIC: {"tail": True}}})
        out.append((doc["stream_url"], doc["topics"][TOPIC]["from_seq"]))

    await asyncio.gather(*(one() for _ in range(n)))
    return out


# --------------------------------------------------------------------------------------------
# writers (one record per request, at a fixed rate, open loop)


class Pacer:
    """Send slots at a fixed rate: ``await pacer.wait(k)`` sleeps until slot ``k``, or returns at
    once when the writer is already past it (a late slot: the writer had to wait for a free
    in-flight place). Open loop: a send never waits for an earlier reply unless ``inflight``
    requests are outstanding."""

    def __init__(self, rate: float, inflight: int) -> None:
        self.interval = 1.0 / rate
        self.start = time.perf_counter()
        self.last_send = self.start
        self.late = 0
        self.slots = asyncio.Semaphore(inflight)
        self.max_inflight = 0
        self.inflight = 0

    async def wait(self, k: int) -> None:
        target = self.start + k * self.interval
        delay = target - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        try:
            await asyncio.wait_for(self.slots.acquire(), 60)
        except TimeoutError:
            raise RuntimeError("the writer stalled: no reply to any in-flight write for 60 s") from None
        if time.perf_counter() - target > self.interval:
            self.late += 1
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        self.last_send = time.perf_counter()

    def release(self) -> None:
        self.inflight -= 1
        self.slots.release()

    def facts(self, records: int) -> dict[str, Any]:
        span = self.last_send - self.start + self.interval
        return {
            "records": records,
            "elapsed_s": span,
            "rate_achieved_per_s": records / span,
            "late_slots": self.late,
            "max_inflight": self.max_inflight,
        }


async def write_http(server: Server, plan: Plan) -> dict[str, Any]:
    """Single-record appends over up to ``writer_inflight`` keep-alive connections."""
    url = f"{server.base}/v0/topics/{TOPIC}"
    lat: list[float] = []
    state: dict[str, Any] = {"errors": 0, "first_error": None, "last_seq": 0}
    pacer = Pacer(plan.rate, plan.writer_inflight)
    connector = aiohttp.TCPConnector(limit=plan.writer_inflight)
    timeout = aiohttp.ClientTimeout(total=60)

    async def post(http: aiohttp.ClientSession, k: int) -> None:
        try:
            body = b'{"records":[{"data":%s}]}' % live_data(k)
            t0 = time.perf_counter()
            async with http.post(url, data=body, headers=HEADERS) as resp:
                raw = await resp.read()
                status = resp.status
            lat.append(time.perf_counter() - t0)
            if status not in (200, 201):
                raise RuntimeError(f"HTTP {status}: {raw[:300]!r}")
            state["last_seq"] = max(state["last_seq"], orjson.loads(raw)["last_seq"])
        except (TimeoutError, aiohttp.ClientError, RuntimeError) as exc:
            state["errors"] += 1
            state["first_error"] = state["first_error"] or repr(exc)
        finally:
            pacer.release()

    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        tasks = []
        pacer.start = time.perf_counter()
        for k in range(plan.records):
            await pacer.wait(k)
            tasks.append(asyncio.create_task(post(http, k)))
        await asyncio.gather(*tasks)
    return {**pacer.facts(plan.records), **state, "request_latency": secs_summary(lat)}


async def write_ws(server: Server, plan: Plan) -> dict[str, Any]:
    """Single-record ``publish`` commands on one socket, pipelined (up to ``writer_inflight``
    unacknowledged); the ack latency is taken when the ack arrives."""
    loop = asyncio.get_running_loop()
    host, port = "127.0.0.1", server.port
    pacer = Pacer(plan.rate, plan.writer_inflight)
    sent: dict[str, float] = {}
    lat: list[float] = []
    state: dict[str, Any] = {"errors": 0, "first_error": None, "last_seq": 0}
    all_acked = loop.create_future()

    def on_message(doc: dict[str, Any]) -> None:
        t0 = sent.pop(doc.get("request_id") or "", None)
        if t0 is None:
            return
        lat.append(time.perf_counter() - t0)
        pacer.release()
        if doc.get("op") == "ack":
            state["last_seq"] = max(state["last_seq"], doc["last_seq"])
        else:
            state["errors"] += 1
            state["first_error"] = state["first_error"] or repr(doc)[:300]
        if not sent and flags["sent_all"] and not all_acked.done():
            all_acked.set_result(None)

    flags = {"sent_all": False}
    _, pub = await loop.create_connection(
        lambda: watch_load.WSClient(host, port, None, on_message), host, port
    )
    await asyncio.wait_for(pub.upgraded, 30)
    topic = TOPIC.encode()
    try:
        pacer.start = time.perf_counter()
        for k in range(plan.records):
            await pacer.wait(k)
            rid = b"p%d" % k
            msg = b'{"op":"publish","request_id":"%s","topic":"%s","records":[{"data":%s}]}' % (
                rid,
                topic,
                live_data(k),
            )
            sent[rid.decode()] = time.perf_counter()
            pub.send(msg)
        flags["sent_all"] = True
        if sent:
            try:
                await asyncio.wait_for(all_acked, 60)
            except TimeoutError:
                state["errors"] += len(sent)
                state["first_error"] = (
                    state["first_error"] or f"{len(sent)} publishes unacknowledged after 60 s"
                )
    finally:
        pub.close()
    if pub.errors:
        state["errors"] += len(pub.errors)
        state["first_error"] = state["first_error"] or pub.errors[0]
    return {**pacer.facts(plan.records), **state, "request_latency": secs_summary(lat)}


# --------------------------------------------------------------------------------------------
# live scenarios


async def live(kind: str, n: int, plan: Plan, pin: bool, root: Path) -> dict[str, Any]:
    """One fan-out run: ``kind`` "sse" (N watch streams, HTTP writer) or "ws" (N subscriber
    sockets, a publishing socket)."""
    workdir = root / f"{kind}-{n}"
    workdir.mkdir()
    problems: list[str] = []
    with servers([lambda: topics_server(pin, workdir)]) as (server,):
        connector = aiohttp.TCPConnector(limit=16)
        async with aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=60)
        ) as http:
            config = await put_topic(http, server, TOPIC)
            base = {
                "host": "127.0.0.1",
                "port": server.port,
                "kind": kind,
                "warmup": plan.warmup_records,
                "records": plan.records,
            }
            procs = min(plan.procs, n)
            if kind == "sse":
                sessions = await create_sessions(http, server, n)
                specs = [{**base, "streams": part} for part in split(sessions, procs)]
            else:
                specs = [
                    {**base, "topic": TOPIC, "count": len(part)} for part in split(list(range(n)), procs)
                ]
            log(f"{kind} x{n}: opening {n} streams in {len(specs)} load processes")
            workers = Workers(specs)
            try:
                ready = await workers.gather("ready", READY_TIMEOUT_S)
                opened = sum(r["open"] for r in ready)
                failed = sum(r["failed"] for r in ready)
                if failed:
                    errs = [e for r in ready for e in r["errors"]]
                    problems.append(f"{failed} of {n} streams failed to open: {errs[:3]}")
                log(f"{kind} x{n}: {opened} streams live; writing {plan.records} records at {plan.rate:g}/s")
                idle = CpuWindow(server, workers.pids)
                await asyncio.sleep(IDLE_S)  # a baseline: streams open, nothing written
                idle_cpu = idle.stop()
                window = CpuWindow(server, workers.pids)
                if kind == "sse":
                    writer = await write_http(server, plan)
                else:
                    writer = await write_ws(server, plan)
                last_seq = writer["last_seq"] or await topic_head(http, server, TOPIC)
                workers.send({"msg": "finish", "last_seq": last_seq, "timeout_s": DRAIN_TIMEOUT_S})
                done = await workers.gather("done", DRAIN_TIMEOUT_S + 30)
                cpu = window.stop()
                if any(d["timed_out"] for d in done):
                    problems.append(
                        f"some watchers had not seen seq {last_seq} {DRAIN_TIMEOUT_S:.0f}s after the write"
                    )
                workers.send({"msg": "report"})
                reports = await workers.gather("report", 120)
            finally:
                workers.stop()
            rss = rss_mb(server.pid)
    issues = server_log_issues(server)
    return summarize_live(
        kind, n, plan, config, opened, writer, last_seq, cpu, idle_cpu, reports, rss, issues, problems
    )


def summarize_live(
    kind: str,
    n: int,
    plan: Plan,
    config: dict[str, Any],
    opened: int,
    writer: dict[str, Any],
    last_seq: int,
    cpu: dict[str, Any],
    idle_cpu: dict[str, Any],
    reports: list[dict[str, Any]],
    rss: float | None,
    issues: list[str],
    problems: list[str],
) -> dict[str, Any]:
    lat_arr = array("q")
    for r in reports:
        lat_arr.frombytes(r["latencies_ns"])
    lat: list[float] = sorted(lat_arr)
    del lat_arr
    per_watcher = sorted(x for r in reports for x in r["per_watcher_p99_ns"])
    spread = fanout_spread(reports, plan.warmup_records)

    def total(key: str) -> int:
        return sum(int(r[key]) for r in reports)

    records, frames = total("records"), total("frames")
    dups, gaps, missing = total("duplicates"), total("gaps"), total("missing_at_end")
    incomplete, error_count = total("incomplete_watchers"), total("error_count")
    stream_errors = [e for r in reports for e in r["errors"]][:5]
    expected = opened * writer["records"]
    if writer["errors"]:
        problems.append(f"writer: {writer['errors']} failed writes, first: {writer['first_error']}")
    if dups or gaps or missing or incomplete:
        problems.append(
            f"delivery: {dups} duplicates, {gaps} records skipped, {missing} missing at the end "
            f"({incomplete} watchers incomplete)"
        )
    if error_count:
        problems.append(f"{error_count} stream errors, first: {stream_errors[:2]}")
    window, server_cpu, workers_cpu = cpu["window_s"], cpu["server_cpu_s"], cpu["workers_cpu_s"]
    client_cpu = workers_cpu + cpu["main_cpu_s"]
    client_util = client_cpu / window if window else None
    warnings: list[str] = []
    if writer["rate_achieved_per_s"] < 0.95 * plan.rate:
        warnings.append(
            f"the writer fell behind: {writer['rate_achieved_per_s']:.0f}/s of {plan.rate:g}/s "
            f"({writer['late_slots']} late slots, all {plan.writer_inflight} in-flight places taken)"
        )
    if client_util is not None and client_util >= 0.9:
        warnings.append(
            f"the client core was saturated (CPU util {client_util:.2f}): latencies include "
            "queueing in the load processes"
        )
    out: dict[str, Any] = {
        "transport": "sse" if kind == "sse" else "websocket",
        "watchers": n,
        "streams_open": opened,
        "client_processes": len(reports),
        "topic_config": {"durability": config.get("durability"), "type": config.get("type")},
        "consistency": "eventual" if kind == "sse" else None,
        "rate_target_per_s": plan.rate,
        "rate_achieved_per_s": round(writer["rate_achieved_per_s"], 1),
        "seconds": plan.seconds,
        "warmup_s": plan.warmup_s,
        "records_written": writer["records"],
        "records_measured_per_watcher": writer["records"] - plan.warmup_records,
        "last_seq": last_seq,
        "latency": latency_summary(lat),
        "fanout_spread": spread,
        "per_watcher_p99_ms": {
            "median": ms(statistics.median(per_watcher)) if per_watcher else None,
            "max": ms(per_watcher[-1]) if per_watcher else None,
        },
        "delivered": {
            "records": records,
            "expected": expected,
            "frames": frames,
            "records_per_frame": round(records / frames, 2) if frames else None,
            "duplicates": dups,
            "gaps": gaps,
            "missing_at_end": missing,
            "incomplete_watchers": incomplete,
            "records_min_per_watcher": min((r["records_min"] for r in reports), default=0),
            "records_max_per_watcher": max((r["records_max"] for r in reports), default=0),
            "bytes_in": total("bytes_in"),
            "contiguous_no_loss_no_dup": not (dups or gaps or missing or incomplete) and records == expected,
        },
        "stream_errors": error_count,
        "stream_error_samples": stream_errors,
        "writer": {
            "kind": f"HTTP POST /v0/topics/{{t}}, 1 record, open loop, <= {plan.writer_inflight} in flight "
            "(keep-alive connections)"
            if kind == "sse"
            else f"WebSocket publish, 1 record, open loop, <= {plan.writer_inflight} unacknowledged",
            "errors": writer["errors"],
            "first_error": writer["first_error"],
            "late_slots": writer["late_slots"],
            "inflight_limit": plan.writer_inflight,
            "max_inflight": writer["max_inflight"],
            "request_latency": writer["request_latency"],
        },
        "window_s": round(window, 3),
        "server": {
            "cpu_s": round(server_cpu, 3),
            "cpu_util": round(server_cpu / window, 3) if window else None,
            "sys_s": round(cpu["server_sys_s"], 3),
            "main_thread_cpu_s": round(cpu["server_main_thread_s"], 3),
            "cpu_us_per_frame": round(server_cpu / frames * 1e6, 2) if frames else None,
            "cpu_us_per_delivered_record": round(server_cpu / records * 1e6, 2) if records else None,
            "cpu_us_per_written_record": round(server_cpu / writer["records"] * 1e6, 1),
            "idle_cpu_util": round(max(0.0, idle_cpu["server_cpu_s"]) / idle_cpu["window_s"], 3),
            "rss_mb_at_end": rss,
            "log_issues": issues,
        },
        "client": {
            "load_processes_cpu_s": round(workers_cpu, 3),
            "load_processes_cpu_s_each": cpu["workers_cpu_s_each"],
            "writer_process_cpu_s": round(cpu["main_cpu_s"], 3),
            "cpu_util": round(client_util, 3) if client_util is not None else None,
            "saturated": client_util is not None and client_util >= 0.9,
        },
        "foreign_cpu_util": round(cpu["foreign_cpu_s"] / window, 3) if window else None,
        "problems": problems,
        "warnings": warnings,
    }
    lt = out["latency"]
    log(
        f"{kind} x{n}: p50 {lt.get('p50_ms')} p99 {lt.get('p99_ms')} p99.9 {lt.get('p999_ms')} ms; "
        f"{records}/{expected} records in {frames} frames; server {out['server']['cpu_s']} s "
        f"({out['server']['cpu_us_per_frame']} us/frame); client util {out['client']['cpu_util']}"
        + (f"; PROBLEMS {problems}" if problems else "")
        + (f"; WARNINGS {warnings}" if warnings else "")
    )
    return out


def fanout_spread(reports: list[dict[str, Any]], warmup: int) -> dict[str, Any]:
    """Per measured record: last receive over all watchers minus the first (ns → ms summary)."""
    first: array[int] | None = None
    last: array[int] | None = None
    for r in reports:
        f, la = array("q"), array("q")
        f.frombytes(r["spread_first_ns"])
        la.frombytes(r["spread_last_ns"])
        if first is None or last is None:
            first, last = f, la
            continue
        for k, (a, b) in enumerate(zip(f, la, strict=True)):
            if a and (not first[k] or a < first[k]):
                first[k] = a
            if b > last[k]:
                last[k] = b
    if first is None or last is None:
        return {"samples": 0}
    spreads: list[float] = sorted(last[k] - first[k] for k in range(warmup, len(first)) if first[k])
    out = latency_summary(spreads)
    out["what"] = "per record: last watcher's receive time minus the first watcher's"
    return out


# --------------------------------------------------------------------------------------------
# backlog replay


async def replay(plan: Plan, pin: bool, root: Path) -> dict[str, Any]:
    workdir = root / "replay"
    workdir.mkdir()
    problems: list[str] = []
    loop = asyncio.get_running_loop()
    with servers([lambda: topics_server(pin, workdir)]) as (server,):
        connector = aiohttp.TCPConnector(limit=8)
        async with aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=120)
        ) as http:
            await put_topic(http, server, REPLAY_TOPIC)
            requests = -(-plan.replay_records // plan.replay_batch)
            log(f"replay: appending {requests * plan.replay_batch} records in batches of {plan.replay_batch}")
            fill = await drive(http, append_fn(server, REPLAY_TOPIC, plan.replay_batch), requests, 4, 1800.0)
            if fill["errors"]:
                raise RuntimeError(f"replay fill failed: {fill['first_error']}")
            head = await topic_head(http, server, REPLAY_TOPIC)
            if head != requests * plan.replay_batch:
                problems.append(f"head_seq {head} after appending {requests * plan.replay_batch} records")
            log(f"replay: {head} records in {fill['elapsed_s']:.1f}s; reading them back over SSE")
            await asyncio.sleep(1.0)  # let the append's background work (WAL, segments) settle
            body = {
                "topics": {REPLAY_TOPIC: {"from_seq": 0}},
                "limit": plan.replay_limit,
                "max_batch_bytes": 0,
            }
            doc = await create_watch(http, server, body)
        caught_up: asyncio.Future[None] = loop.create_future()

        def on_caught_up(ev: dict[str, Any]) -> None:
            if ev.get("head_seq", 0) >= head and not caught_up.done():
                caught_up.set_result(None)

        tally = watch_load.Tally(0, 0)
        window = CpuWindow(server, [])
        _, proto = await loop.create_connection(
            lambda: watch_load.SSEWatcher(
                "127.0.0.1", server.port, doc["stream_url"], tally, on_caught_up, not plan.replay_full_parse
            ),
            "127.0.0.1",
            server.port,
        )
        try:
            await asyncio.wait_for(caught_up, 600)
        except TimeoutError:
            problems.append(f"no caught-up within 600 s ({tally.records} records read)")
        cpu = window.stop()
        proto.close()
        rss = rss_mb(server.pid)
    issues = server_log_issues(server)
    elapsed, server_cpu = cpu["window_s"], cpu["server_cpu_s"]
    missing = max(0, head + 1 - tally.expect)
    if tally.dups or tally.lost or missing:
        problems.append(f"replay: {tally.dups} duplicates, {tally.lost} skipped, {missing} missing")
    if tally.errors:
        problems.append(f"replay stream errors: {tally.errors[:2]}")
    out = {
        "records": head,
        "record_data_bytes": data_size(),
        "fill": {
            "batch": plan.replay_batch,
            "seconds": round(fill["elapsed_s"], 2),
            "records_per_s": round(head / fill["elapsed_s"]) if fill["elapsed_s"] else None,
        },
        "watch": {"from_seq": 0, "limit": plan.replay_limit, "max_batch_bytes": 0},
        "seconds": round(elapsed, 3),
        "records_read": tally.records,
        "records_per_s": round(tally.records / elapsed) if elapsed else None,
        "frames": tally.frames,
        "records_per_frame": round(tally.records / tally.frames, 1) if tally.frames else None,
        "mb_per_s": round(proto.bytes_in / elapsed / 1e6, 1) if elapsed else None,
        "bytes_in": proto.bytes_in,
        "contiguous_no_loss_no_dup": not (tally.dups or tally.lost or missing) and tally.records == head,
        "server": {
            "cpu_s": round(server_cpu, 3),
            "cpu_util": round(server_cpu / elapsed, 3) if elapsed else None,
            "cpu_us_per_record": round(server_cpu / tally.records * 1e6, 3) if tally.records else None,
            "cpu_us_per_frame": round(server_cpu / tally.frames * 1e6, 1) if tally.frames else None,
            "rss_mb_at_end": rss,
            "log_issues": issues,
        },
        "client": {
            "cpu_s": round(cpu["main_cpu_s"], 3),
            "cpu_util": round(cpu["main_cpu_s"] / elapsed, 3) if elapsed else None,
            "parse": "full (every record decoded and its seq checked)"
            if plan.replay_full_parse
            else "light (each frame's from_seq/to_seq continue the last and it holds to_seq - from_seq "
            "records; records not decoded)",
            "note": "one raw-socket SSE reader in the benchmark process",
        },
        "foreign_cpu_util": round(cpu["foreign_cpu_s"] / elapsed, 3) if elapsed else None,
        "problems": problems,
    }
    log(
        f"replay: {tally.records} records in {elapsed:.2f}s = {out['records_per_s']} rec/s, "
        f"{tally.frames} frames; server {out['server']['cpu_s']} s "
        f"({out['server']['cpu_us_per_record']} us/rec)" + (f"; PROBLEMS {problems}" if problems else "")
    )
    return out


# --------------------------------------------------------------------------------------------
# run


async def benchmark(plan: Plan, pin: bool, root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not plan.skip_sse:
        out["sse"] = {str(n): await live("sse", n, plan, pin, root) for n in plan.watchers}
    if not plan.skip_ws:
        out["ws"] = {str(n): await live("ws", n, plan, pin, root) for n in plan.ws_subscribers}
    if not plan.skip_replay:
        out["replay"] = await replay(plan, pin, root)
    return out


def goal(result: dict[str, Any]) -> dict[str, Any]:
    run = result.get("sse", {}).get(str(GOAL_WATCHERS))
    p99 = run["latency"].get("p99_ms") if run else None
    return {
        "description": f"{GOAL_WATCHERS} SSE watchers on one eventual (durability disk) topic: "
        f"write->deliver p99 <= {GOAL_P99_MS:g} ms",
        "threshold_ms": GOAL_P99_MS,
        "p99_ms": p99,
        "pass": (p99 <= GOAL_P99_MS) if p99 is not None else None,
        "note": None if run else f"not measured: {GOAL_WATCHERS} watchers not in --watchers",
    }


def collect_problems(result: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for kind in ("sse", "ws"):
        for n, run in result.get(kind, {}).items():
            problems += [f"{kind} x{n}: {p}" for p in run["problems"]]
    if "replay" in result:
        problems += [f"replay: {p}" for p in result["replay"]["problems"]]
    return problems


def collect_warnings(result: dict[str, Any]) -> list[str]:
    return [
        f"{kind} x{n}: {w}"
        for kind in ("sse", "ws")
        for n, run in result.get(kind, {}).items()
        for w in run["warnings"]
    ]


def print_summary(result: dict[str, Any]) -> None:
    def p(line: str) -> None:
        print(line, file=sys.stderr)

    p("")
    p(
        f"{'scenario':10s} {'p50 ms':>8s} {'p99 ms':>8s} {'p99.9 ms':>9s} {'max ms':>8s} {'delivered':>11s} "
        f"{'frames':>9s} {'spread99':>8s} {'rate/s':>6s} {'srv util':>8s} {'us/frame':>8s} {'cli util':>8s} "
        f"{'ok':>3s}"
    )
    for kind in ("sse", "ws"):
        for n, r in result.get(kind, {}).items():
            lt, d = r["latency"], r["delivered"]
            p(
                f"{kind + ' x' + n:10s} {lt.get('p50_ms', 0):8.3f} {lt.get('p99_ms', 0):8.3f} "
                f"{lt.get('p999_ms', 0):9.3f} {lt.get('max_ms', 0):8.2f} {d['records']:11d} {d['frames']:9d} "
                f"{r['fanout_spread'].get('p99_ms', 0):8.2f} {r['rate_achieved_per_s']:6.0f} "
                f"{r['server']['cpu_util'] or 0:8.2f} {r['server']['cpu_us_per_frame'] or 0:8.1f} "
                f"{r['client']['cpu_util'] or 0:8.2f} {'yes' if d['contiguous_no_loss_no_dup'] else 'NO':>3s}"
            )
    rp = result.get("replay")
    if rp:
        p(
            f"replay: {rp['records_read']} records in {rp['seconds']} s = {rp['records_per_s']} rec/s "
            f"({rp['mb_per_s']} MB/s, {rp['frames']} frames); server {rp['server']['cpu_s']} s CPU, "
            f"{rp['server']['cpu_us_per_record']} us/record"
        )
    g = result["goal"]
    verdict = "NOT MEASURED" if g["pass"] is None else ("PASS" if g["pass"] else "FAIL")
    p(f"\nGOAL {verdict}: {g['description']} (p99 {g['p99_ms']} ms)")
    for warning in result.get("warnings", []):
        p(f"WARNING: {warning}")
    for prob in result.get("problems", []):
        p(f"PROBLEM: {prob}")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: watchers 1,10,100, 3 s (+0.5 s warm-up), replay 50k"
    )
    parser.add_argument("--out", type=Path, help="also write the JSON result to this file")
    parser.add_argument("--watchers", type=_ints, help="SSE watcher counts (default 1,10,100,1000)")
    parser.add_argument("--ws-subscribers", type=_ints, help="WebSocket subscriber counts (default 1,100)")
    parser.add_argument(
        "--rate", type=float, default=200.0, help="records/s the writer appends (default 200)"
    )
    parser.add_argument("--seconds", type=float, help="measured seconds per live scenario (default 10)")
    parser.add_argument("--warmup", type=float, help="unmeasured seconds of writes first (default 1)")
    parser.add_argument("--procs", type=int, default=4, help="load processes for the watchers (default 4)")
    parser.add_argument(
        "--writer-inflight",
        type=int,
        default=4,
        help="writes the writer may have unanswered (HTTP: connections; WS: pipelined publishes; default 4)",
    )
    parser.add_argument("--replay-records", type=int, help="backlog size for the replay (default 1,000,000)")
    parser.add_argument(
        "--replay-full-parse",
        action="store_true",
        help="replay reader decodes every record (default: checks each frame's from_seq/to_seq and "
        "counts its records, so the reader is not the bottleneck)",
    )
    parser.add_argument("--skip-sse", action="store_true", help="skip the SSE fan-out scenarios")
    parser.add_argument("--skip-ws", action="store_true", help="skip the WebSocket scenarios")
    parser.add_argument("--skip-replay", action="store_true", help="skip the backlog replay")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server/clients to separate CPUs")
    args = parser.parse_args(argv)

    defaults = QUICK if args.quick else FULL
    plan = Plan(
        watchers=args.watchers or defaults["watchers"],
        ws_subscribers=args.ws_subscribers or defaults["ws"],
        rate=args.rate,
        seconds=args.seconds if args.seconds is not None else defaults["seconds"],
        warmup_s=args.warmup if args.warmup is not None else defaults["warmup"],
        procs=max(1, args.procs),
        writer_inflight=max(1, args.writer_inflight),
        replay_records=args.replay_records or defaults["replay"],
        replay_batch=1000,
        replay_limit=1000,
        replay_full_parse=args.replay_full_parse,
        skip_sse=args.skip_sse,
        skip_ws=args.skip_ws,
        skip_replay=args.skip_replay,
    )
    if plan.rate <= 0 or plan.seconds <= 0:
        parser.error("--rate and --seconds must be positive")

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so servers get stopped
    nofile = watch_load.raise_nofile()  # inherited by the server and the load processes
    pin = not args.no_pin and can_pin()
    if pin:
        os.sched_setaffinity(0, {CLIENT_CPU})
    started = time.time()
    import uvloop

    result: dict[str, Any] = {
        "benchmark": "topics watch_bench",
        "mode": "quick" if args.quick else "full",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "commit": git("rev-parse", "--short", "HEAD"),
        "cpu_count": os.cpu_count(),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "machine": machine_facts(pin),
        "pinning": {"server_cpu": SERVER_CPU, "clients_cpu": CLIENT_CPU} if pin else None,
        "client": f"raw-socket SSE/WebSocket watchers (bench/watch_load.py) on uvloop in up to {plan.procs} "
        "load processes (multiprocessing, spawn); writer/publisher and set-up (aiohttp) in the main process",
        "open_files_soft_limit": nofile,
        "plan": {
            **plan.__dict__,
            "live_records_per_scenario": plan.records,
            "warmup_records": plan.warmup_records,
            "live_record_data_bytes": len(live_data(10**6)),
            "replay_record_data_bytes": data_size(),
            "latency": "receive time (time.time_ns() when the bytes reached the load process) minus "
            "send time (time.time_ns() just before the write was sent), per record per watcher",
        },
    }
    with (
        tempfile.TemporaryDirectory(prefix="topics-wbench-") as tmp,
        asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
    ):
        result.update(runner.run(benchmark(plan, pin, Path(tmp))))
    result["goal"] = goal(result)
    result["problems"] = collect_problems(result)
    result["warnings"] = collect_warnings(result)
    emit_result(result, started, args.out)
    print_summary(result)
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
