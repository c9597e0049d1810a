#!/usr/bin/env python3
"""Overload benchmark of the elastic CPU-pressure throttle (§0.6): ``TOPICS_THROTTLE=true`` vs
``false`` in one run, under overload and below it.

    python bench/overload_bench.py [--quick] [--seconds 15] [--warmup 3] [--below-seconds 4]
        [--rounds 3] [--connections 128] [--batch 100] [--bg-cap-records 100000] [--no-hostile]
        [--scenarios off,on,on_hostile] [--skip-overload] [--skip-below] [--topics-src DIR]
        [--out PATH] [--no-pin]

Every overload scenario gets a fresh ``topics serve`` (a subprocess on 127.0.0.1, free port, its
own temporary ``TOPICS_DATA_DIR``, ``TOPICS_THROTTLE`` set); on a machine with >= 2 CPUs the
server is pinned to CPU 0 (taskset) and the load generator (this process and its probe process)
to CPU 1 (``--no-pin`` to disable). Topics are ``disk`` durability.

**Overload** (``off``, ``on``, and ``on_hostile`` unless ``--no-hostile``): more offered load than
the server's core can serve, for ``--warmup`` + ``--seconds`` seconds (only the last
``--seconds`` are measured):

* background: ``--connections`` keep-alive connections, each appending batches of ``--batch``
  records (~100 B each, pre-encoded bodies) back-to-back (closed loop) to one of 4 background
  topics with manual priorities 0, -10, -500, -1000 (connection i writes topic i mod 4), each
  capped at ``--bg-cap-records`` records (``cap_records``, oldest discarded; 0: uncapped) so the
  RSS shows what the server buffers rather than what it retains. On a ``429 throttled`` a
  *polite* writer sleeps ``error.detail.retry_after_ms`` (``on``) and a *hostile* one retries at
  once (``on_hostile``). With the throttle off there is no 429 to treat either way, so
  ``off`` is the baseline of both. Reported: records acked/s (total and per topic), 429s (and
  per second), the request latency of admitted writes, and the mean/p99
  ``performance.throttle_wait_ms`` of admitted writes.
* probes, in a separate process (its own event loop, so their timing does not queue behind the
  background connections' callbacks): ``hp``, one record appended to topic ``hp`` (priority 1000)
  every 20 ms, and ``health``, ``GET /v0/health`` every 50 ms — both open loop (each send at its
  slot, whatever the earlier ones are doing); latency p50/p99/max from send to response.
* the server's RSS (``/proc/<pid>/status`` VmRSS) every 500 ms: peak (measured window and the
  whole scenario) and final (at the end of the load).
* a per-second timeline (warm-up included, ``t`` from the first background send): background
  records acked, 429s, probe latencies (max and p50) and RSS — how the throttle behaves over time.
* CPU: server utilisation and this process's (``client_cpu_util`` near 1.0 would mean the
  load generator, not the server, was the limit) from ``/proc``.

**Below overload** (``--rounds`` rounds; in each, both servers — started side by side, one with
the throttle on, one off — run in turn, the order alternating between rounds): ``batch``, 2
connections appending batches of 100 back-to-back to a priority-0 topic, and ``single``, one
connection appending 1 record at a time; ``--below-seconds`` each after 0.5 s of warm-up.
Reported per round and as the median of the rounds: records/s, requests/s, latency p50/p99,
server CPU µs per request, and 429s / throttle waits (both must be 0: the throttle must not
engage without pressure).

JSON goes to stdout and to ``--out`` (default ``bench/results/overload-<git short sha>.json``);
progress and a summary table to stderr. ``goals``, per throttle-on scenario: health p99 < 50 ms,
high-priority append p99 < 50 ms, RSS peak not above the throttle-off peak (+5%). Exit status 1
if a check of the harness failed (``problems``: failed requests other than 429s, failed probes,
no background record acked with the throttle off), not when a goal is missed.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import aiohttp  # noqa: E402
import orjson  # noqa: E402

from bench.http_bench import (  # noqa: E402
    CLIENT_CPU,
    HEADERS,
    Server,
    can_pin,
    emit_result,
    free_port,
    log,
    percentile,
    result_path,
    rss_mb,
    run_header,
    servers,
)
from bench.payloads import append_body, data_size  # noqa: E402
from bench.watch_bench import CpuWindow, secs_summary  # noqa: E402

BG_TOPICS = (("bg0", 0), ("bg1", -10), ("bg2", -500), ("bg3", -1000))
HP_TOPIC, HP_PRIORITY = "hp", 1000
CALM_BATCH_TOPIC, CALM_SINGLE_TOPIC = "calm-batch", "calm-single"
DURABILITY = "disk"
HP_INTERVAL_S = 0.020
HEALTH_INTERVAL_S = 0.050
RSS_INTERVAL_S = 0.5
BODIES_PER_CONNECTION = 4
HEALTH_GOAL_P99_MS = 50.0
HP_GOAL_P99_MS = 50.0
BELOW_WARMUP_S = 0.5
SCENARIOS = {"off": (False, False), "on": (True, False), "on_hostile": (True, True)}
"""Overload scenario -> (throttle on, hostile client)."""
REQUEST_TIMEOUT_S = 60.0
WAIT_KEY = b'"throttle_wait_ms":'
HP_PAD = "x" * 70

FULL: dict[str, Any] = {"seconds": 15.0, "warmup": 3.0, "below_seconds": 4.0, "rounds": 3}
QUICK: dict[str, Any] = {"seconds": 4.0, "warmup": 1.0, "below_seconds": 1.5, "rounds": 1}


@dataclass(frozen=True)
class Plan:
    seconds: float
    warmup_s: float
    below_seconds: float
    rounds: int
    connections: int
    batch: int
    bg_cap_records: int
    scenarios: tuple[str, ...]
    skip_overload: bool
    skip_below: bool


# --------------------------------------------------------------------------------------------
# servers


def overload_server(pin: bool, workdir: Path, throttle: bool, src: Path | None) -> Server:
    """``topics serve`` with ``TOPICS_THROTTLE`` set (from ``src`` on ``PYTHONPATH`` if given:
    a directory holding topics_server/ and topics_engine/, e.g. a scratch copy with other
    throttle constants)."""
    port = free_port()
    data_dir = workdir / "topics-data"
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "TOPICS_PORT": str(port),
        "TOPICS_HOST": "127.0.0.1",
        "TOPICS_DATA_DIR": str(data_dir),
        "TOPICS_LOG_LEVEL": "warning",
        "TOPICS_THROTTLE": "true" if throttle else "false",
    }
    name = f"topics-throttle-{'on' if throttle else 'off'}"
    if src is not None:
        env["PYTHONPATH"] = str(src.resolve())
        argv = [sys.executable, "-m", "topics_server.cli", "serve"]
    else:
        binary = Path(sys.executable).parent / "topics"
        if not binary.exists():
            binary = REPO / ".venv" / "bin" / "topics"
        argv = [str(binary), "serve"]
    return Server(name, argv, env, port, "/v0/ready", pin, workdir)


async def put_topic(http: aiohttp.ClientSession, server: Server, topic: str, config: dict[str, Any]) -> None:
    body = orjson.dumps({"durability": DURABILITY, **config})
    async with http.put(f"{server.base}/v0/topics/{topic}", data=body, headers=HEADERS) as resp:
        raw = await resp.read()
        if resp.status >= 300:
            raise RuntimeError(f"PUT /v0/topics/{topic}: HTTP {resp.status} {raw[:300]!r}")


def throttle_wait_ms(raw: bytes) -> float:
    """``performance.throttle_wait_ms`` of a response (the last occurrence: the performance
    block closes the body), without parsing the whole document."""
    i = raw.rfind(WAIT_KEY)
    if i < 0:
        return 0.0
    j = i + len(WAIT_KEY)
    k = j
    while k < len(raw) and raw[k] not in b",}":
        k += 1
    return float(raw[j:k])


def retry_after_ms(raw: bytes, header: str | None) -> float:
    with contextlib.suppress(ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        return float(orjson.loads(raw)["error"]["detail"]["retry_after_ms"])
    with contextlib.suppress(ValueError, TypeError):
        return float(header or "") * 1000
    return 1000.0


def ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def ms_summary(values_ms: list[float]) -> dict[str, Any]:
    s = sorted(values_ms)
    if not s:
        return {"samples": 0}
    return {
        "samples": len(s),
        "mean_ms": round(sum(s) / len(s), 3),
        "p50_ms": round(percentile(s, 50), 3),
        "p99_ms": round(percentile(s, 99), 3),
        "max_ms": round(s[-1], 3),
    }


# --------------------------------------------------------------------------------------------
# the probe process: high-priority appends and health checks at fixed rates


def probe_main(conn: Any, spec: dict[str, Any]) -> None:
    """Entry point of the probe process: run the probes between ``spec['start_at']`` and
    ``spec['stop_at']`` (``time.perf_counter()`` values: CLOCK_MONOTONIC, shared by the
    processes of one machine) and send back every sample."""
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        conn.send({"msg": "ready"})
        result = runner.run(_probes(spec))
    conn.send({"msg": "done", **result})
    conn.close()


async def _probes(spec: dict[str, Any]) -> dict[str, Any]:
    base, start_at, stop_at = spec["base"], spec["start_at"], spec["stop_at"]
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    samples: dict[str, list[tuple[float, float, int, float]]] = {"hp": [], "health": []}
    errors: dict[str, list[str]] = {"hp": [], "health": []}
    late = {"hp": 0, "health": 0}

    async def one(http: aiohttp.ClientSession, kind: str, k: int) -> None:
        if kind == "hp":
            method, url = "POST", f"{base}/v0/topics/{HP_TOPIC}"
            body: bytes | None = b'{"records":[{"data":{"k":%d,"pad":"%s"}}]}' % (k, HP_PAD.encode())
        else:
            method, url, body = "GET", f"{base}/v0/health", None
        t0 = time.perf_counter()
        try:
            async with http.request(method, url, data=body, headers=HEADERS) as resp:
                raw = await resp.read()
                status = resp.status
        except (TimeoutError, aiohttp.ClientError) as exc:
            status, raw = -1, repr(exc).encode()
        dt = time.perf_counter() - t0
        wait = throttle_wait_ms(raw) if status in (200, 201) else 0.0
        samples[kind].append((t0, dt, status, wait))
        if status not in (200, 201) and len(errors[kind]) < 5:
            errors[kind].append(f"HTTP {status}: {raw[:200]!r}")

    async def ticker(kind: str, interval: float) -> None:
        connector = aiohttp.TCPConnector(limit=32)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
            async with http.get(f"{base}/v0/health", headers=HEADERS) as resp:  # warm a connection
                await resp.read()
            pending: set[asyncio.Task[None]] = set()
            k = 0
            while True:
                slot = start_at + k * interval
                if slot >= stop_at:
                    break
                delay = slot - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                elif -delay > interval:
                    late[kind] += 1
                task = asyncio.create_task(one(http, kind, k))
                pending.add(task)
                task.add_done_callback(pending.discard)
                k += 1
            if pending:
                await asyncio.gather(*pending)

    await asyncio.gather(ticker("hp", HP_INTERVAL_S), ticker("health", HEALTH_INTERVAL_S))
    return {"samples": samples, "errors": errors, "late_slots": late}


class Probes:
    """The probe process of one scenario."""

    def __init__(self, base: str, start_at: float, stop_at: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        spec = {"base": base, "start_at": start_at, "stop_at": stop_at}
        self.proc = ctx.Process(target=probe_main, args=(child, spec), daemon=True)
        self.proc.start()
        child.close()

    async def recv(self, expect: str, timeout_s: float) -> dict[str, Any]:
        def get() -> dict[str, Any]:
            if not self.conn.poll(timeout_s):
                raise TimeoutError(f"no {expect!r} from the probe process within {timeout_s:.0f}s")
            msg: dict[str, Any] = self.conn.recv()
            if msg.get("msg") != expect:
                raise RuntimeError(f"probe process sent {msg.get('msg')!r}, expected {expect!r}")
            return msg

        return await asyncio.to_thread(get)

    def stop(self) -> None:
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=5)
        self.conn.close()


# --------------------------------------------------------------------------------------------
# overload


@dataclass
class Background:
    """What the background writers saw; ``events`` (perf_counter at the response, kind,
    records, throttle wait ms, latency s) feed the measured window and the timeline."""

    ok: list[tuple[float, str, int, float, float]] = field(default_factory=list)
    refused: list[tuple[float, float]] = field(default_factory=list)  # (time, retry_after_ms)
    errors: int = 0
    first_error: str | None = None


async def bg_writer(
    http: aiohttp.ClientSession,
    server: Server,
    topic: str,
    bodies: list[bytes],
    batch: int,
    stop_at: float,
    hostile: bool,
    bg: Background,
) -> None:
    url = f"{server.base}/v0/topics/{topic}"
    i = 0
    while time.perf_counter() < stop_at:
        body = bodies[i % len(bodies)]
        i += 1
        t0 = time.perf_counter()
        try:
            async with http.post(url, data=body, headers=HEADERS) as resp:
                raw = await resp.read()
                status = resp.status
                header = resp.headers.get("Retry-After")
        except (TimeoutError, aiohttp.ClientError) as exc:
            bg.errors += 1
            bg.first_error = bg.first_error or repr(exc)
            await asyncio.sleep(0.05)
            continue
        t1 = time.perf_counter()
        if status in (200, 201):
            bg.ok.append((t1, topic, batch, throttle_wait_ms(raw), t1 - t0))
        elif status == 429:
            retry = retry_after_ms(raw, header)
            bg.refused.append((t1, retry))
            if not hostile:
                await asyncio.sleep(retry / 1000)
        else:
            bg.errors += 1
            bg.first_error = bg.first_error or f"HTTP {status}: {raw[:300]!r}"


async def sample_rss(pid: int, stop_at: float, out: list[tuple[float, float]]) -> None:
    while True:
        rss = rss_mb(pid)
        if rss is not None:
            out.append((time.perf_counter(), rss))
        if time.perf_counter() >= stop_at:
            return
        await asyncio.sleep(RSS_INTERVAL_S)


def timeline(
    t0: float,
    seconds: int,
    bg: Background,
    probes: dict[str, list[tuple[float, float, int, float]]],
    rss: list[tuple[float, float]],
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for s in range(seconds):
        lo, hi = t0 + s, t0 + s + 1
        acked = sum(n for t, _, n, _, _ in bg.ok if lo <= t < hi)
        refused = sum(1 for t, _ in bg.refused if lo <= t < hi)
        row: dict[str, Any] = {"t": s, "bg_acked": acked, "bg_429": refused}
        for kind in ("health", "hp"):
            lat = sorted(dt * 1000 for t, dt, st, _ in probes[kind] if lo <= t < hi and st > 0)
            row[f"{kind}_p50_ms"] = round(percentile(lat, 50), 1) if lat else None
            row[f"{kind}_max_ms"] = round(lat[-1], 1) if lat else None
        in_sec = [v for t, v in rss if lo <= t < hi]
        row["rss_mb"] = max(in_sec) if in_sec else None
        rows.append(row)
    return rows


def background_bodies(connections: int, batch: int) -> list[list[bytes]]:
    """A few distinct pre-encoded bodies per connection (records vary with their index)."""
    per = BODIES_PER_CONNECTION
    return [[append_body((c * per + j) * batch, batch) for j in range(per)] for c in range(connections)]


async def overload_scenario(
    name: str, throttle: bool, hostile: bool, plan: Plan, pin: bool, root: Path, src: Path | None
) -> dict[str, Any]:
    workdir = root / f"overload-{name}"
    workdir.mkdir()
    problems: list[str] = []
    bodies = background_bodies(plan.connections, plan.batch)
    with servers([lambda: overload_server(pin, workdir, throttle, src)]) as (server,):
        async with aiohttp.ClientSession() as http:
            cap = {"cap_records": plan.bg_cap_records} if plan.bg_cap_records else {}
            for topic, priority in BG_TOPICS:
                await put_topic(http, server, topic, {"priority": priority, **cap})
            await put_topic(http, server, HP_TOPIC, {"priority": HP_PRIORITY})
        # The probe process needs ~0.5 s to start; the load starts at `start`, the measured
        # window at `measure_from`.
        start = time.perf_counter() + 1.0
        measure_from = start + plan.warmup_s
        stop_at = measure_from + plan.seconds
        probes = Probes(server.base, start, stop_at)
        try:
            await probes.recv("ready", 30)
            bg = Background()
            rss: list[tuple[float, float]] = []
            connector = aiohttp.TCPConnector(limit=plan.connections)
            timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
            async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
                await asyncio.sleep(max(0.0, start - time.perf_counter()))
                rss_task = asyncio.create_task(sample_rss(server.pid, stop_at, rss))
                writers = [
                    asyncio.create_task(
                        bg_writer(
                            http,
                            server,
                            BG_TOPICS[c % len(BG_TOPICS)][0],
                            bodies[c],
                            plan.batch,
                            stop_at,
                            hostile,
                            bg,
                        )
                    )
                    for c in range(plan.connections)
                ]
                await asyncio.sleep(max(0.0, measure_from - time.perf_counter()))
                cpu = CpuWindow(server, [pid for pid in [probes.proc.pid] if pid is not None])
                await asyncio.sleep(max(0.0, stop_at - time.perf_counter()))
                win = cpu.stop()
                drain_started = time.perf_counter()
                await asyncio.gather(*writers)
                drain_s = time.perf_counter() - drain_started
                await rss_task
            final_rss = rss_mb(server.pid)
            probe_result = await probes.recv("done", 60)
        finally:
            probes.stop()

    # -- the measured window ---------------------------------------------------------------
    window = [e for e in bg.ok if measure_from <= e[0] < stop_at]
    refused = [r for r in bg.refused if measure_from <= r[0] < stop_at]
    acked = sum(e[2] for e in window)
    per_topic = {
        topic: round(sum(e[2] for e in window if e[1] == topic) / plan.seconds, 1) for topic, _ in BG_TOPICS
    }
    waits = [e[3] for e in window]
    waited = [w for w in waits if w > 0]
    samples = probe_result["samples"]
    probe_out: dict[str, Any] = {}
    for kind in ("hp", "health"):
        rows = [s for s in samples[kind] if measure_from <= s[0] < stop_at]
        ok = [s for s in rows if s[2] in (200, 201)]
        bad = [s for s in rows if s[2] not in (200, 201)]
        probe_out[kind] = {
            **secs_summary([s[1] for s in ok]),
            "failed": len(bad),
            "late_slots": probe_result["late_slots"][kind],
            "over_50ms": sum(1 for s in ok if s[1] > 0.05),
        }
        if kind == "hp":
            probe_out[kind]["throttle_wait_ms_max"] = round(max((s[3] for s in ok), default=0.0), 3)
        if bad:
            problems.append(
                f"overload {name}: {len(bad)} {kind} probes failed: {probe_result['errors'][kind][:2]}"
            )
    rss_window = [v for t, v in rss if measure_from <= t <= stop_at + RSS_INTERVAL_S]
    rss_out = {
        "start_mb": rss[0][1] if rss else None,
        "peak_window_mb": max(rss_window) if rss_window else None,
        "peak_mb": max((v for _, v in rss), default=None),
        "final_mb": final_rss,
        "samples": len(rss),
    }
    if bg.errors:
        problems.append(f"overload {name}: {bg.errors} background requests failed: {bg.first_error}")
    if not acked and not throttle:
        problems.append(f"overload {name}: no background record acked")
    result: dict[str, Any] = {
        "throttle": throttle,
        "client": "hostile (retries a 429 at once)" if hostile else "polite (sleeps retry_after_ms on a 429)",
        "background": {
            "connections": plan.connections,
            "batch": plan.batch,
            "records_acked_per_s": round(acked / plan.seconds, 1),
            "requests_acked_per_s": round(len(window) / plan.seconds, 1),
            "records_acked_per_s_by_topic": per_topic,
            "throttled_429": len(refused),
            "throttled_429_per_s": round(len(refused) / plan.seconds, 1),
            "retry_after_ms": ms_summary([r[1] for r in refused]) if refused else {"samples": 0},
            "request_latency_admitted": secs_summary([e[4] for e in window]),
            "throttle_wait_ms": {
                "mean": round(sum(waits) / len(waits), 3) if waits else None,
                "mean_of_parked": round(sum(waited) / len(waited), 3) if waited else None,
                "p99": round(percentile(sorted(waits), 99), 3) if waits else None,
                "parked_share": round(len(waited) / len(waits), 3) if waits else None,
            },
            "errors": bg.errors,
            "drain_after_stop_s": round(drain_s, 3),
        },
        "hp_append": probe_out["hp"],
        "health": probe_out["health"],
        "rss": rss_out,
        "cpu": {
            "window_s": round(win["window_s"], 3),
            "server_cpu_util": round(win["server_cpu_s"] / win["window_s"], 2),
            "client_cpu_util": round(win["main_cpu_s"] / win["window_s"], 2),
            "probe_cpu_util": round(win["workers_cpu_s"] / win["window_s"], 2),
            "foreign_cpu_util": round(win["foreign_cpu_s"] / win["window_s"], 2),
        },
        "timeline": timeline(start, round(plan.warmup_s + plan.seconds), bg, samples, rss),
        "problems": problems,
    }
    b, h, p = result["background"], result["health"], result["hp_append"]
    log(
        f"overload {name}: bg {b['records_acked_per_s']:.0f} rec/s, {b['throttled_429']} x 429, "
        f"wait mean {b['throttle_wait_ms']['mean']} ms; health p50 {h.get('p50_ms')} p99 {h.get('p99_ms')} "
        f"max {h.get('max_ms')} ms; hp p50 {p.get('p50_ms')} p99 {p.get('p99_ms')} max {p.get('max_ms')} ms; "
        f"rss peak {rss_out['peak_mb']} final {rss_out['final_mb']} MB; server util "
        f"{result['cpu']['server_cpu_util']}, client util {result['cpu']['client_cpu_util']}"
    )
    return result


# --------------------------------------------------------------------------------------------
# below overload


async def closed_loop(
    server: Server, topic: str, connections: int, batch: int, seconds: float
) -> dict[str, Any]:
    """``connections`` writers appending ``batch`` records back-to-back for ``seconds`` (after
    :data:`BELOW_WARMUP_S` unmeasured)."""
    url = f"{server.base}/v0/topics/{topic}"
    bodies = (
        [append_body(j * batch, batch) for j in range(8)]
        if batch > 1
        else [b'{"records":[{"data":{"k":%d,"pad":"%s"}}]}' % (j, HP_PAD.encode()) for j in range(8)]
    )
    lat: list[float] = []
    state: dict[str, Any] = {"requests": 0, "throttled": 0, "waited": 0, "errors": 0, "first_error": None}
    connector = aiohttp.TCPConnector(limit=connections)
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        measure_from = time.perf_counter() + BELOW_WARMUP_S
        stop_at = measure_from + seconds
        cpu: list[CpuWindow] = []

        async def worker(c: int) -> None:
            i = c
            while (now := time.perf_counter()) < stop_at:
                body = bodies[i % len(bodies)]
                i += connections
                measured = now >= measure_from
                t0 = time.perf_counter()
                try:
                    async with http.post(url, data=body, headers=HEADERS) as resp:
                        raw = await resp.read()
                        status = resp.status
                except (TimeoutError, aiohttp.ClientError) as exc:
                    state["errors"] += 1
                    state["first_error"] = state["first_error"] or repr(exc)
                    continue
                dt = time.perf_counter() - t0
                if status == 429:
                    state["throttled"] += 1
                    continue
                if status not in (200, 201):
                    state["errors"] += 1
                    state["first_error"] = state["first_error"] or f"HTTP {status}: {raw[:300]!r}"
                    continue
                if throttle_wait_ms(raw) > 0:
                    state["waited"] += 1
                if measured:
                    lat.append(dt)
                    state["requests"] += 1

        async def window() -> None:
            await asyncio.sleep(max(0.0, measure_from - time.perf_counter()))
            cpu.append(CpuWindow(server, []))

        await asyncio.gather(window(), *(worker(c) for c in range(connections)))
        win = cpu[0].stop()
    elapsed = win["window_s"]
    n = state["requests"]
    return {
        "connections": connections,
        "batch": batch,
        "seconds": round(elapsed, 3),
        "records_per_s": round(n * batch / elapsed, 1),
        "requests_per_s": round(n / elapsed, 1),
        "latency": secs_summary(lat),
        "server_cpu_util": round(win["server_cpu_s"] / elapsed, 2),
        "server_cpu_us_per_request": round(win["server_cpu_s"] / n * 1e6, 1) if n else None,
        "client_cpu_util": round(win["main_cpu_s"] / elapsed, 2),
        "throttled_429": state["throttled"],
        "throttle_waited": state["waited"],
        "errors": state["errors"],
        **({"first_error": state["first_error"]} if state["first_error"] else {}),
    }


BELOW_SHAPES = {
    "batch": (CALM_BATCH_TOPIC, 2, 100),
    "single": (CALM_SINGLE_TOPIC, 1, 1),
}
BELOW_METRICS: tuple[tuple[str, Callable[[dict[str, Any]], Any]], ...] = (
    ("records_per_s", lambda r: r["records_per_s"]),
    ("requests_per_s", lambda r: r["requests_per_s"]),
    ("p50_ms", lambda r: r["latency"].get("p50_ms")),
    ("p99_ms", lambda r: r["latency"].get("p99_ms")),
    ("server_cpu_us_per_request", lambda r: r["server_cpu_us_per_request"]),
)


async def below_scenario(plan: Plan, pin: bool, root: Path, src: Path | None) -> dict[str, Any]:
    workdirs = {label: root / f"below-{label}" for label in ("on", "off")}
    for d in workdirs.values():
        d.mkdir()
    factories = [
        lambda: overload_server(pin, workdirs["on"], True, src),
        lambda: overload_server(pin, workdirs["off"], False, src),
    ]
    rounds: dict[str, dict[str, list[dict[str, Any]]]] = {
        label: {shape: [] for shape in BELOW_SHAPES} for label in ("on", "off")
    }
    problems: list[str] = []
    with servers(factories) as started:
        by_label = dict(zip(("on", "off"), started, strict=True))
        async with aiohttp.ClientSession() as http:
            for server in started:
                await put_topic(http, server, CALM_BATCH_TOPIC, {"priority": 0})
                await put_topic(http, server, CALM_SINGLE_TOPIC, {"priority": 0})
        for r in range(plan.rounds):
            order = ("on", "off") if r % 2 == 0 else ("off", "on")
            for label in order:
                for shape, (topic, conns, batch) in BELOW_SHAPES.items():
                    res = await closed_loop(by_label[label], topic, conns, batch, plan.below_seconds)
                    rounds[label][shape].append(res)
                    if res["errors"]:
                        problems.append(
                            f"below {label} {shape}: {res['errors']} failed: {res.get('first_error')}"
                        )
                    log(
                        f"below round {r + 1} throttle {label:3s} {shape:6s}: "
                        f"{res['records_per_s']:9.0f} rec/s "
                        f"p50 {res['latency'].get('p50_ms')} p99 {res['latency'].get('p99_ms')} ms, "
                        f"{res['server_cpu_us_per_request']} us/req, 429 {res['throttled_429']}, "
                        f"waited {res['throttle_waited']}"
                    )
    out: dict[str, Any] = {"rounds": rounds, "median": {}, "on_vs_off": {}, "problems": problems}
    for label in ("on", "off"):
        out["median"][label] = {}
        for shape in BELOW_SHAPES:
            runs = rounds[label][shape]
            med: dict[str, Any] = {}
            for key, get in BELOW_METRICS:
                vals = [v for v in (get(x) for x in runs) if v is not None]
                med[key] = round(statistics.median(vals), 3) if vals else None
            med["throttled_429"] = sum(x["throttled_429"] for x in runs)
            med["throttle_waited"] = sum(x["throttle_waited"] for x in runs)
            out["median"][label][shape] = med
    for shape in BELOW_SHAPES:
        on, off = out["median"]["on"][shape], out["median"]["off"][shape]
        out["on_vs_off"][shape] = {
            key: round(on[key] / off[key], 3) if on[key] and off[key] else None for key, _ in BELOW_METRICS
        }
    return out


# --------------------------------------------------------------------------------------------


async def benchmark(plan: Plan, pin: bool, root: Path, src: Path | None) -> dict[str, Any]:
    out: dict[str, Any] = {"overload": {}, "below": None}
    if not plan.skip_overload:
        for name in plan.scenarios:
            throttle, hostile = SCENARIOS[name]
            out["overload"][name] = await overload_scenario(name, throttle, hostile, plan, pin, root, src)
    if not plan.skip_below:
        out["below"] = await below_scenario(plan, pin, root, src)
    return out


def goals(result: dict[str, Any]) -> dict[str, Any]:
    g: dict[str, Any] = {}
    for name, r in result["overload"].items():
        if not r["throttle"]:
            continue
        h, p, rss = r["health"], r["hp_append"], r["rss"]
        g[name] = {
            "health_p99_under_50ms": h.get("p99_ms") is not None and h["p99_ms"] < HEALTH_GOAL_P99_MS,
            "hp_append_p99_under_50ms": p.get("p99_ms") is not None and p["p99_ms"] < HP_GOAL_P99_MS,
            "rss_peak_not_above_throttle_off": (
                rss["peak_mb"] is not None
                and "off" in result["overload"]
                and rss["peak_mb"] <= (result["overload"]["off"]["rss"]["peak_mb"] or 0) * 1.05
            ),
        }
    return g


def collect_problems(result: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for r in result["overload"].values():
        problems += r["problems"]
    if result.get("below"):
        problems += result["below"]["problems"]
    return problems


def print_summary(result: dict[str, Any]) -> None:
    def p(line: str = "") -> None:
        print(line, file=sys.stderr)

    def f(v: Any, width: int = 7, digits: int = 1) -> str:
        if v is None:
            return "-".rjust(width)
        if isinstance(v, float):
            return f"{v:{width}.{digits}f}"
        return f"{v!s:>{width}s}"

    ov = result["overload"]
    if ov:
        p()
        p(
            "OVERLOAD        bg rec/s   429/s  wait ms | health p50   p99    max | hp p50   p99    max"
            " | rss peak final MB | srv cli util"
        )
        for name, r in ov.items():
            b, h, hp, rss, cpu = r["background"], r["health"], r["hp_append"], r["rss"], r["cpu"]
            p(
                f"{name:12s} {f(b['records_acked_per_s'], 11, 0)} {f(b['throttled_429_per_s'], 7)} "
                f"{f(b['throttle_wait_ms']['mean'], 8)} | {f(h.get('p50_ms'), 10)} {f(h.get('p99_ms'))} "
                f"{f(h.get('max_ms'))} | {f(hp.get('p50_ms'), 6)} {f(hp.get('p99_ms'))} {f(hp.get('max_ms'))}"
                f" | {f(rss['peak_mb'], 8, 0)} {f(rss['final_mb'], 6, 0)}    | "
                f"{f(cpu['server_cpu_util'], 4, 2)} "
                f"{f(cpu['client_cpu_util'], 4, 2)}"
            )
    below = result.get("below")
    if below:
        p()
        p(
            f"BELOW OVERLOAD (median of {len(below['rounds']['on']['batch'])} rounds)   rec/s      p50 ms"
            "   p99 ms"
            "   us/req   429  waited"
        )
        for shape in BELOW_SHAPES:
            for label in ("on", "off"):
                m = below["median"][label][shape]
                p(
                    f"  {shape:6s} throttle {label:3s}             {f(m['records_per_s'], 9, 0)} "
                    f"{f(m['p50_ms'], 8, 3)} {f(m['p99_ms'], 8, 3)} {f(m['server_cpu_us_per_request'], 8)} "
                    f"{f(m['throttled_429'], 5)} {f(m['throttle_waited'], 7)}"
                )
            r = below["on_vs_off"][shape]
            p(
                f"  {shape:6s} on/off                   {f(r['records_per_s'], 9, 3)} {f(r['p50_ms'], 8, 3)} "
                f"{f(r['p99_ms'], 8, 3)} {f(r['server_cpu_us_per_request'], 8, 3)}"
            )
    for name, g in result.get("goals", {}).items():
        p(f"goals {name}: " + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in g.items()))
    for prob in result.get("problems", []):
        p(f"PROBLEM: {prob}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 4 s overload phases, 1 round below")
    parser.add_argument("--out", type=Path, help="default bench/results/overload-<git short sha>.json")
    parser.add_argument("--seconds", type=float, help="overload: measured seconds per scenario (default 15)")
    parser.add_argument("--warmup", type=float, help="overload: unmeasured seconds of load first (default 3)")
    parser.add_argument("--below-seconds", type=float, help="below overload: seconds per shape (default 4)")
    parser.add_argument("--rounds", type=int, help="below overload: rounds (default 3)")
    parser.add_argument("--connections", type=int, default=128, help="overload: background connections")
    parser.add_argument("--batch", type=int, default=100, help="overload: records per background append")
    parser.add_argument(
        "--bg-cap-records", type=int, default=100_000, help="cap_records of each background topic (0: none)"
    )
    parser.add_argument("--no-hostile", action="store_true", help="skip the hostile-client overload scenario")
    parser.add_argument(
        "--scenarios",
        default="off,on,on_hostile",
        help="overload scenarios to run, of off,on,on_hostile (default all)",
    )
    parser.add_argument("--skip-overload", action="store_true")
    parser.add_argument("--skip-below", action="store_true")
    parser.add_argument(
        "--topics-src",
        type=Path,
        metavar="DIR",
        help="run the server from this source dir (holding topics_server/ and topics_engine/)",
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin server/client to separate CPUs")
    args = parser.parse_args(argv)

    defaults = QUICK if args.quick else FULL
    plan = Plan(
        seconds=args.seconds if args.seconds is not None else defaults["seconds"],
        warmup_s=args.warmup if args.warmup is not None else defaults["warmup"],
        below_seconds=args.below_seconds if args.below_seconds is not None else defaults["below_seconds"],
        rounds=max(1, args.rounds if args.rounds is not None else defaults["rounds"]),
        connections=max(1, args.connections),
        batch=max(1, args.batch),
        bg_cap_records=max(0, args.bg_cap_records),
        scenarios=tuple(
            s
            for s in (x.strip() for x in args.scenarios.split(","))
            if s and not (args.no_hostile and s == "on_hostile")
        ),
        skip_overload=args.skip_overload,
        skip_below=args.skip_below,
    )
    if unknown := [s for s in plan.scenarios if s not in SCENARIOS]:
        parser.error(f"unknown scenario(s) {unknown}; choose from {', '.join(SCENARIOS)}")
    if plan.seconds <= 0 or plan.below_seconds <= 0 or plan.warmup_s < 0:
        parser.error("--seconds and --below-seconds must be positive, --warmup not negative")
    out = args.out or result_path("overload")

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so servers get stopped
    pin = not args.no_pin and can_pin()
    if pin:
        os.sched_setaffinity(0, {CLIENT_CPU})
    started = time.time()
    import uvloop

    result: dict[str, Any] = {
        **run_header("overload_bench", args.quick, pin, started),
        "topics_src": str(args.topics_src.resolve()) if args.topics_src else "installed (this checkout)",
        "client": "aiohttp on uvloop: the background writers in this process, the probes (hp append, "
        "health) in a second process; both on the client CPU",
        "plan": {
            **plan.__dict__,
            "background_topics": dict(BG_TOPICS),
            "hp_topic": {HP_TOPIC: HP_PRIORITY},
            "hp_interval_ms": HP_INTERVAL_S * 1000,
            "health_interval_ms": HEALTH_INTERVAL_S * 1000,
            "rss_interval_ms": RSS_INTERVAL_S * 1000,
            "durability": DURABILITY,
            "record_data_bytes": data_size(),
            "below_shapes": {k: {"connections": c, "batch": b} for k, (_, c, b) in BELOW_SHAPES.items()},
        },
    }
    with (
        tempfile.TemporaryDirectory(prefix="topics-obench-") as tmp,
        asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
    ):
        result.update(runner.run(benchmark(plan, pin, Path(tmp), args.topics_src)))
    result["goals"] = goals(result)
    result["problems"] = collect_problems(result)
    out.parent.mkdir(parents=True, exist_ok=True)
    emit_result(result, started, out)
    print_summary(result)
    log(f"result written to {out}")
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
