#!/usr/bin/env python3
"""Router benchmark (§6): source→dest forwarding latency, forwarding throughput, and the source's
batched append throughput with and without routers, against a real ``topics serve``.

    python bench/router_bench.py [--quick] [--out PATH] [--routers 1,8] [--rate 200] [--seconds 5]
        [--warmup 1] [--records 200000] [--batch 1000] [--connections 4] [--durability disk]
        [--skip-latency] [--skip-throughput] [--no-pin]

Every scenario gets a fresh ``topics serve`` (a subprocess on 127.0.0.1, free port, its own
temporary ``TOPICS_DATA_DIR``; started with the helpers of ``bench/http_bench.py``). On a machine
with >= 2 CPUs the server is pinned to CPU 0 (taskset) and this process (aiohttp on uvloop: the
writers and the readers) to CPU 1 (``--no-pin`` to disable). Topic ``src`` and the dests
``d0``..``d{K-1}`` are created with ``--durability`` (default ``disk``), then K routers
``src->d<i>`` (``guarantee: at_least_once``, the default). Routers start at the source's head
(no backfill), so every scenario creates them before it writes.

Scenarios:

* ``latency`` — for each K in ``--routers``: one writer appends single records
  ``POST /v0/topics/src`` at ``--rate`` for ``--warmup`` + ``--seconds`` seconds, open loop (each
  record is sent at its slot, up to 4 unanswered over as many keep-alive connections; the pacer of
  ``bench/watch_bench.py``). Each record's ``data`` is ``{"t": time.time_ns() at send, "k": index,
  "pad": ...}`` (~100 B). One reader per dest long-polls ``POST /v0/topics/d<i>/diff``
  (``wait_ms`` 1000, ``limit`` 1000) and takes ``time.time_ns()`` when a response's bytes arrived
  minus ``t`` for every record past the warm-up — both on this process's clock; the percentiles
  pool every (record, dest) pair. A reader of ``src`` itself, the same way, gives ``direct``: the
  write→visible latency of the source without a hop, so ``latency - direct`` is what the
  forwarding adds. ``fanout_spread`` is, per record, the last dest's arrival minus the first's.
  Every reader must see every record exactly once (``problems`` otherwise).
* ``throughput`` — for each K in ``0`` and ``--routers``: ``--records`` records of ~100 B
  (``bench/payloads.py``) appended as fast as possible in batches of ``--batch`` over
  ``--connections`` connections (pre-encoded bodies). ``append``: records/s from the first send
  to the last ack and the per-request latency — the source's write path with K routers pumping
  on the same event loop (K = 0 is the baseline). ``forwarding`` (K > 0): ``GET /v0/routers``
  ``?source=src`` every 10 ms until every router's ``forwarded_total`` reaches ``--records``;
  ``records_per_s`` = records / (all routers done - first send) — the end-to-end rate at which a
  dest receives the source's records — and ``copies_per_s`` = K × that; ``backlog_at_last_ack``
  (copies still to make when the last append was acked) and ``drain_copies_per_s`` (that backlog
  over the time it took). Each dest's ``count`` must equal ``--records`` afterwards. The
  monitor's requests double as a probe of the server's responsiveness: ``probe_latency`` while
  the appends run and after the last ack (with K = 0 the probe runs until the last ack).

Server CPU seconds (``/proc``) are reported per scenario (with CPU µs per delivered record or per
record appended/copied), and this process's CPU: a ``client_cpu_util`` near 1.0 means the client
core, not the server, was the limit. JSON goes to stdout and to ``--out`` (default
``bench/results/router-<git short sha>.json``); progress and a summary to stderr. Exit status 1 if
a request failed or a check failed (``problems``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
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
    log,
    percentile,
    result_path,
    rss_mb,
    run_header,
    servers,
    topics_server,
)
from bench.payloads import append_body, data_size  # noqa: E402
from bench.watch_bench import CpuWindow, Pacer, latency_summary, live_data, secs_summary  # noqa: E402

SOURCE = "src"
WRITER_INFLIGHT = 4
POLL_WAIT_MS = 1000
READ_TIMEOUT_S = 30.0
"""After the last write: how long the readers may take to see it (latency scenario)."""
FORWARD_TIMEOUT_S = 600.0
MONITOR_INTERVAL_S = 0.01

FULL: dict[str, Any] = {"seconds": 5.0, "warmup": 1.0, "records": 200_000}
QUICK: dict[str, Any] = {"seconds": 2.0, "warmup": 0.5, "records": 50_000}


@dataclass(frozen=True)
class Plan:
    routers: tuple[int, ...]
    rate: float
    seconds: float
    warmup_s: float
    records: int
    batch: int
    connections: int
    durability: str
    skip_latency: bool
    skip_throughput: bool

    @property
    def live_records(self) -> int:
        return round(self.rate * (self.warmup_s + self.seconds))

    @property
    def warmup_records(self) -> int:
        return round(self.rate * self.warmup_s)


def dests(k: int) -> list[str]:
    return [f"d{i}" for i in range(k)]


def router_name(dest: str) -> str:
    return f"{SOURCE}->{dest}"


async def request(
    http: aiohttp.ClientSession, server: Server, method: str, path: str, body: Any = None
) -> Any:
    data = orjson.dumps(body) if body is not None else None
    async with http.request(method, server.base + path, data=data, headers=HEADERS) as resp:
        raw = await resp.read()
        if resp.status >= 300:
            raise RuntimeError(f"{method} {path}: HTTP {resp.status} {raw[:300]!r}")
    return orjson.loads(raw)


async def set_up(server: Server, k: int, durability: str) -> None:
    """``src``, ``d0``..``d{k-1}`` with ``durability``, and the routers ``src->d<i>``."""
    async with aiohttp.ClientSession() as http:
        for topic in [SOURCE, *dests(k)]:
            await request(http, server, "PUT", f"/v0/topics/{topic}", {"durability": durability})
        for dest in dests(k):
            doc = await request(
                http, server, "PUT", f"/v0/routers/{router_name(dest)}", {"source": SOURCE, "dest": dest}
            )
            assert doc["created"] is True, doc


def cpu_report(win: dict[str, Any], per: int, per_label: str) -> dict[str, Any]:
    w = win["window_s"]
    return {
        "window_s": round(w, 3),
        "server_cpu_s": round(win["server_cpu_s"], 3),
        "server_cpu_util": round(win["server_cpu_s"] / w, 2) if w else None,
        f"server_cpu_us_per_{per_label}": round(win["server_cpu_s"] / per * 1e6, 2) if per else None,
        "client_cpu_util": round(win["main_cpu_s"] / w, 2) if w else None,
        "foreign_cpu_util": round(win["foreign_cpu_s"] / w, 2) if w else None,
    }


# --------------------------------------------------------------------------------------------
# latency: single records at a fixed rate, long-poll readers on every dest (and the source)


@dataclass
class Reader:
    topic: str
    arrivals: dict[int, int]  # k -> arrival time.time_ns()
    lat_ns: list[int]
    duplicates: int = 0
    errors: int = 0
    first_error: str | None = None
    polls: int = 0


async def read_topic(
    http: aiohttp.ClientSession, server: Server, r: Reader, plan: Plan, done: asyncio.Event
) -> None:
    """Long-poll ``r.topic`` until it has seen every record the writer will send (or ``done``,
    set on a timeout)."""
    url = f"{server.base}/v0/topics/{r.topic}/diff"
    cursor, last = 0, plan.live_records - 1
    while not done.is_set() and last not in r.arrivals:
        body = b'{"from_seq":%d,"limit":1000,"wait_ms":%d,"include_meta":false}' % (cursor, POLL_WAIT_MS)
        try:
            async with http.post(url, data=body, headers=HEADERS) as resp:
                raw = await resp.read()
                now = time.time_ns()
                if resp.status != 200:
                    raise RuntimeError(f"HTTP {resp.status}: {raw[:300]!r}")
        except (TimeoutError, aiohttp.ClientError, RuntimeError) as exc:
            r.errors += 1
            r.first_error = r.first_error or repr(exc)
            await asyncio.sleep(0.05)
            continue
        r.polls += 1
        doc = orjson.loads(raw)
        for rec in doc["records"]:
            data = rec["data"]
            k = data["k"]
            if k in r.arrivals:
                r.duplicates += 1
                continue
            r.arrivals[k] = now
            if k >= plan.warmup_records:
                r.lat_ns.append(now - data["t"])
        cursor = doc["next_from_seq"]


async def write_live(server: Server, plan: Plan) -> dict[str, Any]:
    """Single-record appends at ``plan.rate``, open loop (see ``bench/watch_bench.py``)."""
    url = f"{server.base}/v0/topics/{SOURCE}"
    lat: list[float] = []
    state: dict[str, Any] = {"errors": 0, "first_error": None}
    pacer = Pacer(plan.rate, WRITER_INFLIGHT)
    connector = aiohttp.TCPConnector(limit=WRITER_INFLIGHT)

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
        except (TimeoutError, aiohttp.ClientError, RuntimeError) as exc:
            state["errors"] += 1
            state["first_error"] = state["first_error"] or repr(exc)
        finally:
            pacer.release()

    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as http:
        tasks = []
        pacer.start = time.perf_counter()
        for k in range(plan.live_records):
            await pacer.wait(k)
            tasks.append(asyncio.create_task(post(http, k)))
        await asyncio.gather(*tasks)
    facts = pacer.facts(plan.live_records)
    return {
        "records": facts["records"],
        "rate_achieved_per_s": round(facts["rate_achieved_per_s"], 1),
        "late_slots": facts["late_slots"],
        "max_inflight": facts["max_inflight"],
        **state,
        "request_latency": secs_summary(lat),
    }


def spread(readers: list[Reader], plan: Plan) -> dict[str, Any]:
    """Per measured record: last dest's arrival minus the first's."""
    if len(readers) < 2:
        return {"samples": 0}
    out: list[int] = []
    for k in range(plan.warmup_records, plan.live_records):
        times = [r.arrivals[k] for r in readers if k in r.arrivals]
        if len(times) == len(readers):
            out.append(max(times) - min(times))
    out.sort()
    return latency_summary(out)


async def latency_scenario(k: int, plan: Plan, pin: bool, root: Path) -> dict[str, Any]:
    workdir = root / f"latency-{k}"
    workdir.mkdir()
    with servers([lambda: topics_server(pin, workdir)]) as (server,):
        await set_up(server, k, plan.durability)
        done = asyncio.Event()
        direct = Reader(SOURCE, {}, [])
        readers = [Reader(d, {}, []) for d in dests(k)]
        connector = aiohttp.TCPConnector(limit=k + 2)
        timeout = aiohttp.ClientTimeout(total=POLL_WAIT_MS / 1000 + 30)
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
            tasks = [asyncio.create_task(read_topic(http, server, r, plan, done)) for r in [direct, *readers]]
            await asyncio.sleep(0.2)  # every reader parked in its first long-poll
            cpu = CpuWindow(server, [])
            writer = await write_live(server, plan)
            _, pending = await asyncio.wait(tasks, timeout=READ_TIMEOUT_S)
            win = cpu.stop()
            done.set()
            await asyncio.gather(*pending)
        problems: list[str] = []
        if writer["errors"]:
            problems.append(f"latency x{k}: {writer['errors']} writes failed: {writer['first_error']}")
        for r in [direct, *readers]:
            missing = plan.live_records - len(r.arrivals)
            if missing or r.duplicates or r.errors:
                problems.append(
                    f"latency x{k}: reader of {r.topic}: {missing} records missing, {r.duplicates} "
                    f"duplicates, {r.errors} errors ({r.first_error})"
                )
        pooled = sorted(x for r in readers for x in r.lat_ns)
        per_dest_p50 = [percentile(sorted(r.lat_ns), 50) / 1e6 for r in readers if r.lat_ns]
        per_dest_p99 = [percentile(sorted(r.lat_ns), 99) / 1e6 for r in readers if r.lat_ns]
        delivered = sum(len(r.arrivals) for r in readers)
        result = {
            "routers": k,
            "latency": latency_summary(pooled),
            "direct": latency_summary(sorted(direct.lat_ns)),
            "per_dest_p50_ms": {
                "min": round(min(per_dest_p50), 3) if per_dest_p50 else None,
                "max": round(max(per_dest_p50), 3) if per_dest_p50 else None,
            },
            "per_dest_p99_ms": {
                "min": round(min(per_dest_p99), 3) if per_dest_p99 else None,
                "max": round(max(per_dest_p99), 3) if per_dest_p99 else None,
            },
            "fanout_spread": spread(readers, plan),
            "writer": writer,
            "delivered_copies": delivered,
            "polls": sum(r.polls for r in readers),
            "records_per_poll": round(delivered / max(1, sum(r.polls for r in readers)), 2),
            "cpu": cpu_report(win, delivered, "copy"),
            "server_rss_mb": rss_mb(server.pid),
            "problems": problems,
        }
    lt, d = result["latency"], result["direct"]
    log(
        f"latency x{k}: p50 {lt.get('p50_ms')} p99 {lt.get('p99_ms')} ms (direct p50 {d.get('p50_ms')} "
        f"p99 {d.get('p99_ms')}), spread p99 {result['fanout_spread'].get('p99_ms')} ms, rate "
        f"{writer['rate_achieved_per_s']}/s, server util {result['cpu']['server_cpu_util']}, client util "
        f"{result['cpu']['client_cpu_util']}"
    )
    return result


# --------------------------------------------------------------------------------------------
# throughput: a fast batched load on the source, forwarding measured until every dest has it


async def append_all(server: Server, plan: Plan, marks: dict[str, float]) -> dict[str, Any]:
    """``plan.records`` records in batches of ``plan.batch`` over ``plan.connections``
    connections; ``marks["first_send"]`` / ``marks["last_ack"]`` get perf_counter stamps."""
    url = f"{server.base}/v0/topics/{SOURCE}"
    nreq = -(-plan.records // plan.batch)
    bodies = [
        append_body(i * plan.batch, min(plan.batch, plan.records - i * plan.batch)) for i in range(nreq)
    ]
    lat: list[float] = []
    state: dict[str, Any] = {"next": 0, "errors": 0, "first_error": None}
    connector = aiohttp.TCPConnector(limit=plan.connections)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as http:

        async def worker() -> None:
            while state["next"] < nreq:
                i = state["next"]
                state["next"] += 1
                t0 = time.perf_counter()
                try:
                    async with http.post(url, data=bodies[i], headers=HEADERS) as resp:
                        raw = await resp.read()
                        if resp.status not in (200, 201):
                            raise RuntimeError(f"HTTP {resp.status}: {raw[:300]!r}")
                except (TimeoutError, aiohttp.ClientError, RuntimeError) as exc:
                    state["errors"] += 1
                    state["first_error"] = state["first_error"] or repr(exc)
                    continue
                lat.append(time.perf_counter() - t0)

        marks["first_send"] = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(plan.connections)))
        marks["last_ack"] = time.perf_counter()
    seconds = marks["last_ack"] - marks["first_send"]
    return {
        "records": plan.records,
        "batch": plan.batch,
        "connections": plan.connections,
        "seconds": round(seconds, 3),
        "records_per_s": round(plan.records / seconds, 1),
        "request_latency": secs_summary(lat),
        "errors": state["errors"],
        **({"first_error": state["first_error"]} if state["first_error"] else {}),
    }


async def monitor(
    http: aiohttp.ClientSession,
    server: Server,
    k: int,
    plan: Plan,
    marks: dict[str, float],
    stop: asyncio.Event,
) -> dict[str, Any]:
    """Poll ``GET /v0/routers?source=src`` until every router forwarded ``plan.records`` (no
    routers: until the last append ack): when each got there, the copies still to make at the
    last append ack, and each poll's latency (a probe of the server's responsiveness)."""
    done_at: dict[str, float] = {}
    backlog_at_last_ack: int | None = None
    lat_appending: list[float] = []
    lat_after: list[float] = []
    deadline = time.perf_counter() + FORWARD_TIMEOUT_S
    while (
        (len(done_at) < k or "last_ack" not in marks) and time.perf_counter() < deadline and not stop.is_set()
    ):
        t0 = time.perf_counter()
        doc = await request(http, server, "GET", f"/v0/routers?source={SOURCE}&page_size=1000")
        now = time.perf_counter()
        (lat_after if "last_ack" in marks else lat_appending).append(now - t0)
        totals = {r["router"]: r["forwarded_total"] for r in doc["routers"]}
        for name, total in totals.items():
            if total >= plan.records and name not in done_at:
                done_at[name] = now
        if backlog_at_last_ack is None and "last_ack" in marks:
            backlog_at_last_ack = sum(max(0, plan.records - t) for t in totals.values())
        await asyncio.sleep(MONITOR_INTERVAL_S)
    return {
        "done_at": done_at,
        "backlog_at_last_ack": backlog_at_last_ack,
        "polls": len(lat_appending) + len(lat_after),
        "probe_latency": {
            "while_appending": secs_summary(lat_appending),
            "after_last_ack": secs_summary(lat_after),
        },
    }


async def throughput_scenario(k: int, plan: Plan, pin: bool, root: Path) -> dict[str, Any]:
    workdir = root / f"throughput-{k}"
    workdir.mkdir()
    problems: list[str] = []
    with servers([lambda: topics_server(pin, workdir)]) as (server,):
        await set_up(server, k, plan.durability)
        marks: dict[str, float] = {}
        stop = asyncio.Event()
        async with aiohttp.ClientSession() as http:
            cpu = CpuWindow(server, [])
            mon = asyncio.create_task(monitor(http, server, k, plan, marks, stop))
            append = await append_all(server, plan, marks)
            append_win = cpu.stop()
            seen = await mon
            all_win = cpu.stop()
            stop.set()
            state = await request(http, server, "GET", f"/v0/topics/{SOURCE}?touch=false")
            if state["count"] != plan.records:
                problems.append(f"throughput x{k}: source holds {state['count']} records, not {plan.records}")
            for dest in dests(k):
                doc = await request(http, server, "GET", f"/v0/topics/{dest}?touch=false")
                if doc["count"] != plan.records:
                    problems.append(
                        f"throughput x{k}: {dest} holds {doc['count']} records, not {plan.records}"
                    )
        if append["errors"]:
            problems.append(
                f"throughput x{k}: {append['errors']} appends failed: {append.get('first_error')}"
            )
        result: dict[str, Any] = {
            "routers": k,
            "append": {**append, "cpu": cpu_report(append_win, plan.records, "record")},
        }
        result["probe_latency"] = seen["probe_latency"]
        if k:
            first = marks["first_send"]
            done = seen["done_at"]
            if len(done) < k:
                problems.append(f"throughput x{k}: only {len(done)} of {k} routers forwarded every record")
            if done:
                last_done = max(done.values())
                total_s = last_done - first
                drain_s = max(0.0, last_done - marks["last_ack"])
                backlog = seen["backlog_at_last_ack"] or 0
                result["forwarding"] = {
                    "records": plan.records,
                    "routers_done": len(done),
                    "all_done_s": round(total_s, 3),
                    "router_done_s": {
                        "min": round(min(done.values()) - first, 3),
                        "max": round(total_s, 3),
                    },
                    "records_per_s": round(plan.records / total_s, 1),
                    "copies_per_s": round(len(done) * plan.records / total_s, 1),
                    "after_last_ack_s": round(drain_s, 3),
                    "backlog_at_last_ack": backlog,
                    "drain_copies_per_s": round(backlog / drain_s, 1) if backlog and drain_s > 0.05 else None,
                    "monitor_polls": seen["polls"],
                    "cpu": cpu_report(all_win, len(done) * plan.records, "copy"),
                }
        result["server_rss_mb"] = rss_mb(server.pid)
        result["problems"] = problems
    fw = result.get("forwarding")
    log(
        f"throughput x{k}: append {append['records_per_s']} rec/s (req p50 "
        f"{append['request_latency'].get('p50_ms')} p99 {append['request_latency'].get('p99_ms')} ms)"
        + (
            f"; forwarding {fw['records_per_s']} rec/s per dest, {fw['copies_per_s']} copies/s, all done "
            f"{fw['all_done_s']} s ({fw['after_last_ack_s']} s after the last ack, backlog "
            f"{fw['backlog_at_last_ack']})"
            if fw
            else ""
        )
        + f"; probe p99 {result['probe_latency']['while_appending'].get('p99_ms')} ms while appending"
    )
    return result


# --------------------------------------------------------------------------------------------


async def benchmark(plan: Plan, pin: bool, root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"latency": {}, "throughput": {}}
    if not plan.skip_latency:
        for k in plan.routers:
            out["latency"][str(k)] = await latency_scenario(k, plan, pin, root)
    if not plan.skip_throughput:
        for k in (0, *plan.routers):
            out["throughput"][str(k)] = await throughput_scenario(k, plan, pin, root)
    return out


def headline(result: dict[str, Any]) -> dict[str, Any]:
    """The numbers asked for, in one place."""
    lat = {
        k: {"p50_ms": r["latency"].get("p50_ms"), "p99_ms": r["latency"].get("p99_ms")}
        for k, r in result["latency"].items()
    }
    fwd = {
        k: {
            "records_per_s": r["forwarding"]["records_per_s"],
            "copies_per_s": r["forwarding"]["copies_per_s"],
        }
        for k, r in result["throughput"].items()
        if "forwarding" in r
    }
    app = {k: r["append"]["records_per_s"] for k, r in result["throughput"].items()}
    h: dict[str, Any] = {"latency": lat, "forwarding": fwd, "append_records_per_s": app}
    base = app.get("0")
    if base:
        h["append_vs_0_routers"] = {k: round(v / base, 3) for k, v in app.items() if k != "0"}
    return h


def collect_problems(result: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for section in ("latency", "throughput"):
        for r in result.get(section, {}).values():
            problems += r["problems"]
    return problems


def print_summary(result: dict[str, Any]) -> None:
    def p(line: str) -> None:
        print(line, file=sys.stderr)

    p("")
    for k, r in result.get("latency", {}).items():
        lt, d, s = r["latency"], r["direct"], r["fanout_spread"]
        p(
            f"latency    x{k:<2s} p50 {lt.get('p50_ms', 0):7.3f}  p99 {lt.get('p99_ms', 0):7.3f}  max "
            f"{lt.get('max_ms', 0):7.2f} ms   direct p50 {d.get('p50_ms', 0):6.3f} "
            f"p99 {d.get('p99_ms', 0):6.3f}"
            f"   spread p99 {s.get('p99_ms', '-')!s:>6s}   rate {r['writer']['rate_achieved_per_s']}/s"
        )
    for k, r in result.get("throughput", {}).items():
        a, f = r["append"], r.get("forwarding")
        probe = r["probe_latency"]["while_appending"].get("p99_ms")
        line = f"throughput x{k:<2s} append {a['records_per_s']:10.0f} rec/s (probe p99 {probe} ms)"
        if f:
            line += (
                f"   forwarding {f['records_per_s']:9.0f} rec/s per dest ({f['copies_per_s']:.0f} copies/s), "
                f"done {f['all_done_s']} s, {f['after_last_ack_s']} s after the last ack"
            )
        p(line)
    for prob in result.get("problems", []):
        p(f"PROBLEM: {prob}")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 2 s (+0.5 s warm-up), 50k records")
    parser.add_argument(
        "--out",
        type=Path,
        help="write the JSON result here (default bench/results/router-<git short sha>.json)",
    )
    parser.add_argument("--routers", type=_ints, default=(1, 8), help="router counts (default 1,8)")
    parser.add_argument("--rate", type=float, default=200.0, help="latency: records/s appended (default 200)")
    parser.add_argument("--seconds", type=float, help="latency: measured seconds per scenario (default 5)")
    parser.add_argument(
        "--warmup", type=float, help="latency: unmeasured seconds of writes first (default 1)"
    )
    parser.add_argument("--records", type=int, help="throughput: records appended (default 200000)")
    parser.add_argument(
        "--batch", type=int, default=1000, help="throughput: records per append (default 1000)"
    )
    parser.add_argument(
        "--connections", type=int, default=4, help="throughput: append connections (default 4)"
    )
    parser.add_argument(
        "--durability",
        default="disk",
        choices=("ephemeral", "memory", "disk", "fsync"),
        help="durability of the source and the dests (default disk)",
    )
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server/client to separate CPUs")
    args = parser.parse_args(argv)

    defaults = QUICK if args.quick else FULL
    plan = Plan(
        routers=tuple(k for k in args.routers if k > 0),
        rate=args.rate,
        seconds=args.seconds if args.seconds is not None else defaults["seconds"],
        warmup_s=args.warmup if args.warmup is not None else defaults["warmup"],
        records=args.records or defaults["records"],
        batch=max(1, args.batch),
        connections=max(1, args.connections),
        durability=args.durability,
        skip_latency=args.skip_latency,
        skip_throughput=args.skip_throughput,
    )
    if plan.rate <= 0 or plan.seconds <= 0 or not plan.routers:
        parser.error("--rate and --seconds must be positive and --routers must name a count > 0")
    out = args.out or result_path("router")

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so servers get stopped
    pin = not args.no_pin and can_pin()
    if pin:
        os.sched_setaffinity(0, {CLIENT_CPU})
    started = time.time()
    import uvloop

    result: dict[str, Any] = {
        **run_header("router_bench", args.quick, pin, started),
        "client": "aiohttp on uvloop, one process: the writer(s), one long-poll reader per dest (and "
        "one of the source) and the router monitor",
        "plan": {
            **plan.__dict__,
            "live_records_per_scenario": plan.live_records,
            "warmup_records": plan.warmup_records,
            "live_record_data_bytes": len(live_data(10**6)),
            "throughput_record_data_bytes": data_size(),
            "guarantee": "at_least_once",
            "latency": "arrival (time.time_ns() when a long-poll diff response of the dest reached "
            "this process) minus send (time.time_ns() just before the append was sent), per record "
            "per dest",
        },
    }
    with (
        tempfile.TemporaryDirectory(prefix="topics-rbench-") as tmp,
        asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
    ):
        result.update(runner.run(benchmark(plan, pin, Path(tmp))))
    result["headline"] = headline(result)
    result["problems"] = collect_problems(result)
    out.parent.mkdir(parents=True, exist_ok=True)
    emit_result(result, started, out)
    print_summary(result)
    log(f"result written to {out}")
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
