#!/usr/bin/env python3
"""HTTP benchmark of the topics server against a bare-Starlette floor, in one run.

    python bench/http_bench.py [--quick] [--out results.json] [--no-pin] [--topics-src DIR]
    python bench/http_bench.py --profile DIR [--profile-native] [--quick]

Starts two servers as subprocesses on 127.0.0.1 (ephemeral ports): ``topics serve`` and
``uvicorn bench.bare_app:app`` (same uvloop/httptools settings, one worker). The load generator
is aiohttp in this process. On a machine with >= 2 CPUs the servers are pinned to CPU 0 (taskset)
and the load generator to CPU 1, so neither steals the other's core (``--no-pin`` to disable).

Shapes, each run against both servers (topics first, then bare):

* ``append_single`` — 1 connection, sequential POST /v0/topics/{t} with 1 record of ~100 B;
* ``append_batch``  — 16 connections, POST /v0/topics/{t} with 100 records of ~100 B each;
* ``diff_256`` / ``diff_1000`` — 16 connections, POST /v0/topics/{t}/diff with that limit over a
  pre-filled topic, ``from_seq`` walking the topic so reads cover all of it.

A run is several rounds (9 full, 2 quick); each round runs every shape against topics, then bare,
so drift hits both alike. For each shape and server: requests/s and records/s (median round and
pooled), latency p50/p90/p99/p99.9/max in ms (pooled, and the median of the rounds' p50/p99),
mean request/response size, server CPU time per request (from /proc — the steadiest number on a
noisy machine) and CPU utilisation of server and client (tells whether a phase was server- or
client-bound). ``ratios`` gives topics/bare for every shape.

Every loop is bounded by a request count and a per-phase time cap; servers are always killed on
exit (and get SIGTERM if this process dies). JSON goes to stdout (and to ``--out``); progress goes
to stderr. Exit status 1 if any request failed.

``--profile DIR`` instead runs only the topics server under the append_batch, diff_256 and
append_single loads while ``py-spy`` samples it, writes the collapsed stacks to DIR and prints a
summary (top functions by self and inclusive share, and a per-layer breakdown) as JSON; with
``--profile-native`` py-spy also samples C frames (GC, syscalls, orjson, regex engine).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import aiohttp  # noqa: E402
import orjson  # noqa: E402

from bench.payloads import append_body, data_size, diff_body  # noqa: E402
from bench.profile_summary import summarize  # noqa: E402

HEADERS = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
"""aiohttp asks for gzip by default; topics honours it above 1400 B (docs/DECISIONS.md, "Response
compression") while the bare app never compresses — so responses are requested uncompressed, like
for like."""
SERVER_CPU = 0
CLIENT_CPU = 1


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# parameters


@dataclass(frozen=True)
class Plan:
    single_requests: int
    single_warmup: int
    batch_requests: int
    batch_warmup: int
    batch_size: int
    concurrency: int
    diff_requests: dict[int, int]  # limit -> requests
    diff_warmup: int
    prefill_records: int
    phase_time_cap_s: float
    rounds: int


# Per round; each shape runs against topics then bare, ``rounds`` times (results are pooled).
FULL = Plan(
    single_requests=3000,
    single_warmup=300,
    batch_requests=2500,
    batch_warmup=100,
    batch_size=100,
    concurrency=16,
    diff_requests={256: 12000, 1000: 5000},
    diff_warmup=300,
    prefill_records=200_000,
    phase_time_cap_s=15.0,
    rounds=9,
)
QUICK = Plan(
    single_requests=1000,
    single_warmup=100,
    batch_requests=600,
    batch_warmup=50,
    batch_size=100,
    concurrency=16,
    diff_requests={256: 2000, 1000: 800},
    diff_warmup=100,
    prefill_records=30_000,
    phase_time_cap_s=5.0,
    rounds=2,
)


# --------------------------------------------------------------------------------------------
# servers


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return None


def machine_busy_seconds() -> float:
    """CPU seconds all CPUs spent busy (not idle/iowait) since boot, from /proc/stat."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _stat_cpu(path: str) -> tuple[float, float]:
    fields = Path(path).read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def cpu_seconds(pid: int) -> tuple[float, float, float]:
    """(user, system, main-thread user+system) CPU seconds of a process (Linux /proc); zeros
    where unavailable. The process total less the main thread is its helper threads (e.g. the
    WAL writer); threads that exited before the reading are only in the total."""
    try:
        user, system = _stat_cpu(f"/proc/{pid}/stat")
        main = sum(_stat_cpu(f"/proc/{pid}/task/{pid}/stat"))
        return user, system, main
    except (OSError, ValueError, IndexError):
        return 0.0, 0.0, 0.0


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if the benchmark process dies (Linux)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class Server:
    def __init__(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        port: int,
        ready_path: str,
        pin: bool,
        workdir: Path,
    ) -> None:
        self.name, self.port, self.ready_path = name, port, ready_path
        if pin:
            argv = ["taskset", "-c", str(SERVER_CPU), *argv]
        self.log_path = workdir / f"{name}.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            argv,
            env=env,
            cwd=REPO,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
        self.base = f"http://127.0.0.1:{port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.proc.returncode}; "
                    f"log:\n{self.log_path.read_text(errors='replace')[-2000:]}"
                )
            try:
                with urllib.request.urlopen(self.base + self.ready_path, timeout=1) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} not ready after {timeout_s}s")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self._log.close()


def topics_server(pin: bool, workdir: Path, src: Path | None = None) -> Server:
    """``topics serve``; with ``src`` (a directory holding topics_server/ and topics_engine/, e.g.
    ``git archive <commit> server | tar -x -C /tmp/x`` then ``/tmp/x/server``) that code instead."""
    port = free_port()
    data_dir = workdir / "topics-data"
    data_dir.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "TOPICS_PORT": str(port),
        "TOPICS_HOST": "127.0.0.1",
        "TOPICS_DATA_DIR": str(data_dir),
        "TOPICS_LOG_LEVEL": "warning",
    }
    if src is not None:
        env["PYTHONPATH"] = str(src.resolve())
        return Server(
            "topics",
            [sys.executable, "-m", "topics_server.cli", "serve"],
            env,
            port,
            "/v0/ready",
            pin,
            workdir,
        )
    binary = Path(sys.executable).parent / "topics"
    if not binary.exists():
        binary = REPO / ".venv" / "bin" / "topics"
    return Server("topics", [str(binary), "serve"], env, port, "/v0/ready", pin, workdir)


def bare_server(pin: bool, workdir: Path) -> Server:
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "bench.bare_app:app",
        "--loop",
        "uvloop",
        "--http",
        "httptools",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
        "--no-access-log",
        "--no-server-header",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return Server("bare", argv, env, port, "/health", pin, workdir)


@contextlib.contextmanager
def servers(factories: list[Callable[[], Server]]) -> Iterator[list[Server]]:
    started: list[Server] = []
    try:
        for make in factories:
            started.append(make())
        for s in started:
            s.wait_ready()
            log(f"{s.name} ready on :{s.port} (pid {s.pid})")
        yield started
    finally:
        for s in started:
            with contextlib.suppress(Exception):
                s.stop()


# --------------------------------------------------------------------------------------------
# load generation

RequestFn = Callable[[int], tuple[str, bytes, int]]  # k -> (url, body, records in request)


def percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, -(-len(sorted_values) * pct // 100))
    return sorted_values[int(rank) - 1]


async def drive(
    session: aiohttp.ClientSession,
    fn: RequestFn,
    count: int,
    concurrency: int,
    time_cap_s: float,
    offset: int = 0,
    on_body: Callable[[bytes], None] | None = None,
) -> dict[str, Any]:
    """Issue ``count`` requests over ``concurrency`` connections (or stop at the time cap).

    ``on_body``, if given, is called with the body of every 2xx response (after its latency is
    taken), e.g. to collect the server's ``performance`` numbers."""
    latencies: list[float] = []
    state = {"next": 0, "errors": 0, "records": 0, "bytes_in": 0, "bytes_out": 0}
    first_error: list[str] = []
    deadline = time.perf_counter() + time_cap_s

    async def worker() -> None:
        while state["next"] < count and time.perf_counter() < deadline:
            k = state["next"]
            state["next"] += 1
            url, body, records = fn(offset + k)
            t0 = time.perf_counter()
            try:
                async with session.post(url, data=body, headers=HEADERS) as resp:
                    payload = await resp.read()
                    status = resp.status
            except (TimeoutError, aiohttp.ClientError) as err:
                state["errors"] += 1
                if not first_error:
                    first_error.append(repr(err))
                continue
            dt = time.perf_counter() - t0
            if status >= 300:
                state["errors"] += 1
                if not first_error:
                    first_error.append(f"HTTP {status}: {payload[:300]!r}")
                continue
            latencies.append(dt)
            if on_body is not None:
                on_body(payload)
            state["records"] += records
            state["bytes_in"] += len(payload)
            state["bytes_out"] += len(body)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - t0
    ok = len(latencies)
    latencies.sort()
    return {
        "elapsed_s": elapsed,
        "latencies": latencies,
        "ok": ok,
        "issued": state["next"],
        "errors": state["errors"],
        "first_error": first_error[0] if first_error else None,
        "records": state["records"],
        "bytes_in": state["bytes_in"],
        "bytes_out": state["bytes_out"],
    }


async def run_phase(
    server: Server,
    fn: RequestFn,
    *,
    requests: int,
    warmup: int,
    concurrency: int,
    time_cap_s: float,
    offset: int,
    on_body: Callable[[bytes], None] | None = None,
) -> dict[str, Any]:
    """One timed run of a shape against a server (after ``warmup`` untimed requests);
    ``on_body`` sees every 2xx response body of the timed part (see :func:`drive`)."""
    connector = aiohttp.TCPConnector(limit=concurrency)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        if warmup:
            await drive(session, fn, warmup, concurrency, time_cap_s, offset=offset)
        cpu0, client0, busy0 = cpu_seconds(server.pid), time.process_time(), machine_busy_seconds()
        r = await drive(
            session, fn, requests, concurrency, time_cap_s, offset=offset + warmup, on_body=on_body
        )
        cpu1, client1, busy1 = cpu_seconds(server.pid), time.process_time(), machine_busy_seconds()
    r["server_cpu_s"] = cpu1[0] + cpu1[1] - cpu0[0] - cpu0[1]
    r["client_cpu_s"] = client1 - client0
    r["server_sys_s"] = cpu1[1] - cpu0[1]
    r["server_main_thread_s"] = cpu1[2] - cpu0[2]
    # CPU used by anything else on the machine meanwhile: the sign of a disturbed round.
    r["foreign_cpu_s"] = max(0.0, busy1 - busy0 - r["server_cpu_s"] - r["client_cpu_s"])
    r["time_capped"] = r["issued"] < requests
    return r


def _pct_ms(latencies: list[float], pct: float) -> float:
    return round(percentile(sorted(latencies), pct) * 1000, 3)


def _median_round_pct(runs: list[dict[str, Any]], pct: float) -> float:
    """The median over rounds of each round's percentile: robust to a disturbed round."""
    return round(statistics.median(_pct_ms(r["latencies"], pct) for r in runs), 3)


def aggregate(name: str, server: Server, runs: list[dict[str, Any]], concurrency: int) -> dict[str, Any]:
    """Pool the rounds of one shape on one server: totals over total time, pooled percentiles."""
    lat = sorted(x for r in runs for x in r["latencies"])
    ok = len(lat)
    elapsed = sum(r["elapsed_s"] for r in runs)
    records = sum(r["records"] for r in runs)
    bytes_in, bytes_out = sum(r["bytes_in"] for r in runs), sum(r["bytes_out"] for r in runs)
    server_cpu, client_cpu = sum(r["server_cpu_s"] for r in runs), sum(r["client_cpu_s"] for r in runs)
    server_sys = sum(r["server_sys_s"] for r in runs)
    server_main = sum(r["server_main_thread_s"] for r in runs)
    errors = sum(r["errors"] for r in runs)
    by_round = [round(len(r["latencies"]) / r["elapsed_s"], 1) for r in runs if r["elapsed_s"]]
    first_error = next((r["first_error"] for r in runs if r["first_error"]), None)
    out: dict[str, Any] = {
        "requests": ok,
        "errors": errors,
        "concurrency": concurrency,
        "rounds": len(runs),
        "duration_s": round(elapsed, 3),
        "time_capped": any(r["time_capped"] for r in runs),
        "req_per_s": round(ok / elapsed, 1) if elapsed else 0.0,
        "req_per_s_median_round": round(statistics.median(by_round), 1) if by_round else 0.0,
        "req_per_s_best_round": max(by_round, default=0.0),
        "req_per_s_by_round": by_round,
        "records_per_s_median_round": round(statistics.median(by_round) * records / ok, 1) if ok else 0.0,
        "p50_ms_median_round": _median_round_pct(runs, 50),
        "p99_ms_median_round": _median_round_pct(runs, 99),
        "p50_ms_by_round": [_pct_ms(r["latencies"], 50) for r in runs],
        "p99_ms_by_round": [_pct_ms(r["latencies"], 99) for r in runs],
        "server_cpu_us_per_req_by_round": [
            round(r["server_cpu_s"] / len(r["latencies"]) * 1e6, 1) for r in runs if r["latencies"]
        ],
        "records_per_s": round(records / elapsed, 1) if elapsed else 0.0,
        "mb_per_s_out": round(bytes_out / elapsed / 1e6, 2) if elapsed else 0.0,
        "mb_per_s_in": round(bytes_in / elapsed / 1e6, 2) if elapsed else 0.0,
        "p50_ms": round(percentile(lat, 50) * 1000, 3),
        "p90_ms": round(percentile(lat, 90) * 1000, 3),
        "p99_ms": round(percentile(lat, 99) * 1000, 3),
        "p999_ms": round(percentile(lat, 99.9) * 1000, 3),
        "max_ms": round(lat[-1] * 1000, 3) if lat else None,
        "mean_ms": round(sum(lat) / ok * 1000, 3) if ok else None,
        "request_bytes": round(bytes_out / ok) if ok else None,
        "response_bytes": round(bytes_in / ok) if ok else None,
        "server_cpu_s": round(server_cpu, 2),
        "server_cpu_util": round(server_cpu / elapsed, 2) if elapsed else None,
        "server_cpu_us_per_req": round(server_cpu / ok * 1e6, 1) if ok else None,
        "server_sys_share": round(server_sys / server_cpu, 2) if server_cpu else None,
        "foreign_cpu_util_by_round": [
            round(r["foreign_cpu_s"] / r["elapsed_s"], 2) for r in runs if r["elapsed_s"]
        ],
        "server_main_thread_us_per_req": round(server_main / ok * 1e6, 1) if ok else None,
        "server_other_threads_us_per_req": round(max(0.0, server_cpu - server_main) / ok * 1e6, 1)
        if ok
        else None,
        "client_cpu_util": round(client_cpu / elapsed, 2) if elapsed else None,
    }
    if first_error:
        out["first_error"] = first_error
    log(
        f"{server.name:6s} {name:13s} {ok:6d} req  {out['req_per_s_median_round']:9.1f} req/s (med. round) "
        f"{out['records_per_s_median_round']:10.1f} rec/s  p50 {out['p50_ms_median_round']:7.3f} ms  "
        f"p99 {out['p99_ms_median_round']:7.3f} ms  "
        f"srv {out['server_cpu_us_per_req']} us/req (util {out['server_cpu_util']})  "
        f"cli util {out['client_cpu_util']}" + (f"  ERRORS {errors}: {first_error}" if errors else "")
    )
    return out


# --------------------------------------------------------------------------------------------
# request shapes

_BODY_POOL = 64  # distinct pre-encoded append bodies per shape, so the client does not encode


def append_fn(server: Server, topic: str, batch: int) -> RequestFn:
    url = f"{server.base}/v0/topics/{topic}"
    bodies = [append_body(i * batch, batch) for i in range(_BODY_POOL)]
    return lambda k: (url, bodies[k % _BODY_POOL], batch)


def diff_fn(server: Server, topic: str, limit: int, filled: int, stride: int) -> RequestFn:
    """Reads walk the topic: request k starts ``k * stride`` records further on (wrapping)."""
    url = f"{server.base}/v0/topics/{topic}/diff"
    span = max(1, filled - limit)
    return lambda k: (url, diff_body((k * stride) % span, limit), limit)


WRITE_TOPIC_CAP = 200_000


async def cap_write_topics(server: Server) -> None:
    """Cap the append topics so memory (and GC work) stays at a steady state across rounds."""
    async with aiohttp.ClientSession() as session:
        for topic in ("bench-single", "bench-batch"):
            async with session.put(
                f"{server.base}/v0/topics/{topic}",
                headers=HEADERS,
                data=orjson.dumps({"cap_records": WRITE_TOPIC_CAP}),
            ) as resp:
                raw = await resp.read()
                if resp.status not in (200, 201):
                    raise RuntimeError(f"PUT {topic} on {server.name}: {resp.status} {raw[:300]!r}")


async def prefill(server: Server, topic: str, records: int) -> float:
    per_request = 1000
    fn = append_fn(server, topic, per_request)
    t0 = time.perf_counter()
    connector = aiohttp.TCPConnector(limit=4)
    async with aiohttp.ClientSession(connector=connector) as session:
        r = await drive(session, fn, -(-records // per_request), 4, 120.0)
    if r["errors"]:
        raise RuntimeError(f"prefill of {server.name} failed: {r['first_error']}")
    return time.perf_counter() - t0


async def sanity_check(topics: Server, bare: Server, topic: str, filled: int) -> dict[str, Any]:
    """One request of each shape to each server: status and record counts are what we expect."""
    sizes: dict[str, Any] = {}
    async with aiohttp.ClientSession() as session:
        for server in (topics, bare):
            for limit in (256, 1000):
                url, body, _ = diff_fn(server, topic, limit, filled, 1)(filled // 3)
                async with session.post(url, data=body, headers=HEADERS) as resp:
                    raw = await resp.read()
                    assert resp.status == 200, (server.name, resp.status, raw[:300])
                doc = orjson.loads(raw)
                assert len(doc["records"]) == limit, (server.name, limit, len(doc["records"]))
                sizes[f"{server.name}_diff_{limit}_response_bytes"] = len(raw)
            url, body, _ = append_fn(server, "bench-sanity", 100)(0)
            async with session.post(url, data=body, headers=HEADERS) as resp:
                raw = await resp.read()
                assert resp.status in (200, 201), (server.name, resp.status, raw[:300])
            assert orjson.loads(raw)["count"] == 100
            sizes[f"{server.name}_append_100_response_bytes"] = len(raw)
    return sizes


# --------------------------------------------------------------------------------------------
# benchmark


def _diff_for(topic: str, limit: int, filled: int, server: Server) -> RequestFn:
    """Stride limit + 7: successive reads start at unaligned offsets all over the topic."""
    return diff_fn(server, topic, limit, filled, limit + 7)


async def benchmark(plan: Plan, topics: Server, bare: Server) -> dict[str, Any]:
    diff_topic = "bench-diff"
    log(f"prefilling {plan.prefill_records} records into topics/{diff_topic}")
    prefill_s = await prefill(topics, diff_topic, plan.prefill_records)
    log(f"prefill took {prefill_s:.1f}s")
    await cap_write_topics(topics)
    sanity = await sanity_check(topics, bare, diff_topic, plan.prefill_records)

    # shape -> (request fn per server, requests, warmup, concurrency)
    shapes: dict[str, tuple[Callable[[Server], RequestFn], int, int, int]] = {
        "append_single": (
            lambda s: append_fn(s, "bench-single", 1),
            plan.single_requests,
            plan.single_warmup,
            1,
        ),
        "append_batch": (
            lambda s: append_fn(s, "bench-batch", plan.batch_size),
            plan.batch_requests,
            plan.batch_warmup,
            plan.concurrency,
        ),
    }
    for limit, count in plan.diff_requests.items():
        shapes[f"diff_{limit}"] = (
            functools.partial(_diff_for, diff_topic, limit, plan.prefill_records),
            count,
            plan.diff_warmup,
            plan.concurrency,
        )

    runs: dict[str, dict[str, list[dict[str, Any]]]] = {"topics": {}, "bare": {}}
    for rnd in range(plan.rounds):
        log(f"round {rnd + 1}/{plan.rounds}")
        for shape, (make_fn, count, warmup, conc) in shapes.items():
            for server in (topics, bare):  # interleaved, so drift hits both alike
                r = await run_phase(
                    server,
                    make_fn(server),
                    requests=count,
                    warmup=warmup,
                    concurrency=conc,
                    time_cap_s=plan.phase_time_cap_s,
                    offset=rnd * (count + warmup),
                )
                runs[server.name].setdefault(shape, []).append(r)

    results: dict[str, dict[str, Any]] = {"topics": {}, "bare": {}}
    for shape, (_, _, _, conc) in shapes.items():
        for server in (topics, bare):
            results[server.name][shape] = aggregate(shape, server, runs[server.name][shape], conc)

    ratios: dict[str, dict[str, float | None]] = {}
    for shape, t in results["topics"].items():
        b = results["bare"][shape]

        def ratio(key: str, t: dict[str, Any] = t, b: dict[str, Any] = b) -> float | None:
            return round(t[key] / b[key], 2) if t.get(key) and b.get(key) else None

        ratios[shape] = {
            "req_per_s_median_round": ratio("req_per_s_median_round"),
            "p50_ms_median_round": ratio("p50_ms_median_round"),
            "p99_ms_median_round": ratio("p99_ms_median_round"),
            "req_per_s_pooled": ratio("req_per_s"),
            "p50_ms_pooled": ratio("p50_ms"),
            "p99_ms_pooled": ratio("p99_ms"),
            "server_cpu_us_per_req": ratio("server_cpu_us_per_req"),
        }
    return {
        "prefill": {"records": plan.prefill_records, "seconds": round(prefill_s, 2)},
        "write_topic_cap_records": WRITE_TOPIC_CAP,
        "sanity": sanity,
        "results": results,
        "ratios": ratios,
        "server_rss_mb_at_end": {s.name: rss_mb(s.pid) for s in (topics, bare)},
    }


# --------------------------------------------------------------------------------------------
# profiling (py-spy)


def py_spy_binary() -> str | None:
    candidate = Path(sys.executable).parent / "py-spy"
    return str(candidate) if candidate.exists() else shutil.which("py-spy")


async def profile(
    plan: Plan, topics: Server, outdir: Path, seconds: int, rate: int, native: bool, gil: bool
) -> dict[str, Any]:
    spy = py_spy_binary()
    if spy is None:
        raise SystemExit("py-spy not found: pip install py-spy into the venv")
    outdir.mkdir(parents=True, exist_ok=True)
    diff_topic = "bench-diff"
    await prefill(topics, diff_topic, plan.prefill_records)
    await cap_write_topics(topics)
    shapes: dict[str, tuple[RequestFn, int]] = {
        "append_batch": (append_fn(topics, "bench-batch", plan.batch_size), plan.concurrency),
        "diff_256": (diff_fn(topics, diff_topic, 256, plan.prefill_records, 263), plan.concurrency),
        "append_single": (append_fn(topics, "bench-single", 1), 1),
    }
    out: dict[str, Any] = {}
    for shape, (fn, concurrency) in shapes.items():
        raw_path = outdir / f"{shape}.collapsed.txt"
        log(f"profiling {shape} for {seconds}s -> {raw_path}")
        spy_proc = subprocess.Popen(
            [
                spy,
                "record",
                "--pid",
                str(topics.pid),
                "--duration",
                str(seconds),
                "--rate",
                str(rate),
                *(["--native"] if native else ["--nonblocking"]),
                *(["--gil"] if gil else []),
                "--format",
                "raw",
                "--output",
                str(raw_path),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            await asyncio.sleep(0.5)  # let py-spy attach before the load starts
            connector = aiohttp.TCPConnector(limit=concurrency)
            async with aiohttp.ClientSession(connector=connector) as session:
                # Keep the load running for the whole sampling window (bounded by count and time).
                load = await drive(session, fn, 10**7, concurrency, seconds + 1.0)
            _, err = await asyncio.to_thread(spy_proc.communicate, timeout=seconds + 30)
        finally:
            if spy_proc.poll() is None:
                spy_proc.kill()
                spy_proc.wait()
        if spy_proc.returncode != 0:
            raise RuntimeError(f"py-spy failed: {err.decode(errors='replace')[-1000:]}")
        summary = summarize(raw_path.read_text())
        summary["load"] = {
            "requests": load["ok"],
            "seconds": round(load["elapsed_s"], 2),
            "req_per_s": round(load["ok"] / load["elapsed_s"], 1),
            "concurrency": concurrency,
        }
        out[shape] = summary
    return out


# --------------------------------------------------------------------------------------------
# machine facts


def git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True)
        return done.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def cpu_model() -> str | None:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return None


def run_header(name: str, quick: bool, pin: bool, started: float) -> dict[str, Any]:
    """The fields a benchmark result starts with: what ran, when, on which commit and machine."""
    return {
        "benchmark": f"topics {name}",
        "mode": "quick" if quick else "full",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "commit": git("rev-parse", "--short", "HEAD"),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "machine": machine_facts(pin),
    }


def result_path(prefix: str) -> Path:
    """``bench/results/<prefix>-<git short sha>.json``."""
    return REPO / "bench" / "results" / f"{prefix}-{git('rev-parse', '--short', 'HEAD') or 'unknown'}.json"


def machine_facts(pin: bool) -> dict[str, Any]:
    import httptools
    import starlette
    import uvicorn

    def version(mod: str) -> str | None:
        try:
            from importlib.metadata import version as v

            return v(mod)
        except Exception:  # noqa: BLE001
            return None

    dirty = git("status", "--porcelain", "--untracked-files=no", "--", "server", "openapi", "pyproject.toml")
    return {
        "git_commit": git("rev-parse", "HEAD"),
        "git_server_dirty": bool(dirty),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "mem_total_mb": _mem_total_mb(),
        "pinning": (
            {"servers_cpu": SERVER_CPU, "client_cpu": CLIENT_CPU, "tool": "taskset / sched_setaffinity"}
            if pin
            else None
        ),
        "versions": {
            "uvicorn": uvicorn.__version__,
            "uvloop": version("uvloop"),
            "httptools": httptools.__version__,
            "starlette": starlette.__version__,
            "orjson": orjson.__version__,
            "aiohttp": aiohttp.__version__,
            "connexion": version("connexion"),
            "jsonschema-rs": version("jsonschema-rs"),
        },
    }


def _mem_total_mb() -> int | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    return None


def can_pin() -> bool:
    return (
        shutil.which("taskset") is not None
        and hasattr(os, "sched_setaffinity")
        and len(os.sched_getaffinity(0)) >= 2
        and {SERVER_CPU, CLIENT_CPU} <= os.sched_getaffinity(0)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: fewer requests, < 40 s")
    parser.add_argument("--out", type=Path, help="also write the JSON result to this file")
    parser.add_argument(
        "--topics-src",
        type=Path,
        metavar="DIR",
        help="run the topics server from this source dir (holding topics_server/ and "
        "topics_engine/) instead of the installed one, e.g. to compare commits",
    )
    parser.add_argument("--no-pin", action="store_true", help="do not pin servers/client to separate CPUs")
    parser.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="profile the topics server with py-spy instead of benchmarking",
    )
    parser.add_argument("--profile-seconds", type=int, default=10)
    parser.add_argument("--profile-rate", type=int, default=100, help="py-spy samples per second")
    parser.add_argument(
        "--profile-native",
        action="store_true",
        help="py-spy --native: include C frames (orjson, httptools, uvloop, the GC)",
    )
    parser.add_argument(
        "--profile-gil",
        action="store_true",
        help="py-spy --gil: only samples where a thread holds the GIL (drops idle helper threads, "
        "e.g. the WAL writer waiting on its queue or in fdatasync)",
    )
    args = parser.parse_args(argv)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so the servers get stopped
    plan = QUICK if args.quick else FULL
    pin = not args.no_pin and can_pin()
    if pin:
        os.sched_setaffinity(0, {CLIENT_CPU})
    started = time.time()
    result: dict[str, Any] = {
        "benchmark": "topics http_bench",
        "mode": "profile" if args.profile else ("quick" if args.quick else "full"),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "machine": machine_facts(pin),
        "topics_src": str(args.topics_src.resolve()) if args.topics_src else "installed (this checkout)",
        "client": "aiohttp ClientSession + TCPConnector(limit=concurrency) on uvloop, one process",
        "plan": {
            **plan.__dict__,
            "diff_requests": {str(k): v for k, v in plan.diff_requests.items()},
            "record_data_bytes": data_size(),
        },
    }
    import uvloop

    with (
        tempfile.TemporaryDirectory(prefix="topics-bench-") as tmp,
        asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
    ):
        workdir = Path(tmp)
        if args.profile:
            with servers([lambda: topics_server(pin, workdir, args.topics_src)]) as (topics,):
                result["profile"] = runner.run(
                    profile(
                        plan,
                        topics,
                        args.profile,
                        args.profile_seconds,
                        args.profile_rate,
                        args.profile_native,
                        args.profile_gil,
                    )
                )
                result["profile_dir"] = str(args.profile)
        else:
            factories = [
                lambda: topics_server(pin, workdir, args.topics_src),
                lambda: bare_server(pin, workdir),
            ]
            with servers(factories) as (topics, bare):
                result.update(runner.run(benchmark(plan, topics, bare)))
    emit_result(result, started, args.out)
    failed = any(v.get("errors") for srv in result.get("results", {}).values() for v in srv.values())
    return 1 if failed else 0


def emit_result(result: dict[str, Any], started: float, out: Path | None) -> None:
    """Finish a benchmark's JSON result (load average, wall time), write it to ``out`` and print
    it to stdout — the shared tail of every benchmark script."""
    result["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    result["wall_s"] = round(time.time() - started, 1)
    text = orjson.dumps(result, option=orjson.OPT_INDENT_2).decode()
    if out:
        out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
