#!/usr/bin/env python3
"""What each durability class costs, and how fast a server comes back after a crash.

    python bench/durability_bench.py [--quick] [--out results.json] [--no-pin]
                                     [--commit REV | --topics-src DIR]
                                     [--recovery-class fsync|disk] [--workdir DIR]

Servers are ``topics serve`` subprocesses on 127.0.0.1 (ephemeral ports) with a fresh data
directory under a temporary directory; as in ``bench/http_bench.py`` (whose helpers this reuses)
they are pinned to CPU 0 and the aiohttp load generator to CPU 1 when the machine has two CPUs.
Every child is killed on exit (and gets SIGTERM if this process dies).

Parts (spec §0.10 classes ``ephemeral``, ``memory``, ``disk``, ``fsync``):

1. **latency / throughput** — one server, two topics per class (``PUT {"durability": c,
   "cap_records": 200000}``); each round runs, for every class (order rotated per round):
   ``append_single`` (1 connection, sequential 1-record appends of ~100 B) and ``append_batch``
   (16 connections, 100 records per request). Per class and shape: req/s, records/s, p50/p99
   (median over rounds, and pooled), server CPU per request.
2. **performance numbers** — every response's ``performance.fsync_ms`` (and ``wal_append_ms``,
   ``server_total_ms``) is collected, per class and shape: p50/p90/p99/max, and how many were
   non-zero (only fsync-class acks should carry a real fsync time).
3. **recovery** — per size (100k; full mode also 1M), two fresh servers, each with one topic
   of the recovery class (default ``fsync``) filled by batched appends of 1000 records
   (4 connections). *kill -9 path*: the first server is ``kill -9``-ed; the killed directory is
   copied and each repetition restarts a server on a fresh copy, timing process start →
   ``GET /v0/ready`` = 200 (polled every 10 ms), then checks the topic's ``count`` and
   ``head_seq`` equal what was acked and that a new append gets the next seq; the last
   repetition runs on the original directory and is then stopped cleanly, to see what a
   recovered server leaves on disk. *clean path*: the second server is stopped with SIGTERM
   (final checkpoint) and the same restarts are timed from that (snapshot) state. An
   empty-directory start gives the process start-up floor.
4. **disk bytes per record** — total size of the data directory's files (apparent bytes, and
   allocated blocks) / records, after the fill (WAL, plus the segments sealed meanwhile) and
   after the clean stop (segments + snapshot, WAL trimmed); segment files the snapshot does not
   reference are counted separately (``unreferenced_segments``).

Targets (printed to stderr and under ``targets``): fsync-class batched records/s at least 0.8 of
disk-class; 1M-record kill -9 → ready at most 2 s (full mode; quick mode has no 1M run).

JSON goes to stdout (and ``--out``); progress to stderr. Exit status 1 if any request failed or a
recovered count/head differs from what was acked (a durability bug) — listed under ``problems``;
a missed target does not change it, nor do ``warnings`` (storage findings such as segment files
left behind that no snapshot references).

Other sessions may edit the checkout while this runs: ``--commit HEAD`` runs the server from a
``git archive`` of that commit instead of the working tree.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
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
    aggregate,
    append_fn,
    can_pin,
    drive,
    emit_result,
    free_port,
    git,
    log,
    machine_facts,
    percentile,
    rss_mb,
    run_phase,
)
from bench.payloads import data_size  # noqa: E402

CLASSES = ("ephemeral", "memory", "disk", "fsync")
WRITE_TOPIC_CAP = 200_000
FILL_BATCH = 1000
FILL_CONCURRENCY = 4
READY_POLL_S = 0.010


@dataclass(frozen=True)
class Plan:
    rounds: int
    single_requests: int
    single_warmup: int
    batch_requests: int
    batch_warmup: int
    batch_size: int
    concurrency: int
    phase_time_cap_s: float
    recovery_sizes: tuple[int, ...]
    restart_reps: int
    fsync_probe_writes: int


FULL = Plan(
    rounds=5,
    single_requests=2000,
    single_warmup=200,
    batch_requests=1500,
    batch_warmup=100,
    batch_size=100,
    concurrency=16,
    phase_time_cap_s=15.0,
    recovery_sizes=(100_000, 1_000_000),
    restart_reps=3,
    fsync_probe_writes=500,
)
QUICK = Plan(
    rounds=1,
    single_requests=300,
    single_warmup=50,
    batch_requests=200,
    batch_warmup=20,
    batch_size=100,
    concurrency=16,
    phase_time_cap_s=5.0,
    recovery_sizes=(100_000,),
    restart_reps=1,
    fsync_probe_writes=100,
)


# --------------------------------------------------------------------------------------------
# servers on a given data directory


def topics_binary() -> str:
    binary = Path(sys.executable).parent / "topics"
    if not binary.exists():
        binary = REPO / ".venv" / "bin" / "topics"
    return str(binary)


_started = 0
_children: list[Server] = []


def reap_all() -> None:
    """Kill every server child still running (the last line of defence on any exit path)."""
    for s in _children:
        with contextlib.suppress(Exception):
            kill9(s)


TOPICS_SRC: Path | None = None  # --topics-src: run the server from this source tree


def start_server(pin: bool, workdir: Path, data_dir: Path, label: str) -> Server:
    """A ``topics serve`` child on ``data_dir``; its log is ``workdir/<label>-<n>.log``."""
    global _started
    _started += 1
    env = {
        **os.environ,
        "TOPICS_PORT": str(free_port()),
        "TOPICS_HOST": "127.0.0.1",
        "TOPICS_DATA_DIR": str(data_dir),
        "TOPICS_LOG_LEVEL": "warning",
    }
    argv = [topics_binary(), "serve"]
    if TOPICS_SRC is not None:
        env["PYTHONPATH"] = str(TOPICS_SRC)
        argv = [sys.executable, "-m", "topics_server.cli", "serve"]
    server = Server(
        f"{label}-{_started}",
        argv,
        env,
        int(env["TOPICS_PORT"]),
        "/v0/ready",
        pin,
        workdir,
    )
    _children.append(server)
    return server


def time_to_ready(server: Server, t0: float, timeout_s: float = 120.0) -> dict[str, Any]:
    """Poll ``GET /v0/ready`` every 10 ms; seconds from ``t0`` (process start) to 200, and to the
    first HTTP answer of any status (the port is up, replay may still run)."""
    deadline = t0 + timeout_s
    http_up: float | None = None
    not_ready = 0
    url = server.base + "/v0/ready"
    while time.perf_counter() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(
                f"{server.name} exited with {server.proc.returncode}; log:\n"
                f"{server.log_path.read_text(errors='replace')[-2000:]}"
            )
        status = None
        try:
            with urllib.request.urlopen(url, timeout=1) as resp:
                status = resp.status
        except urllib.error.HTTPError as err:
            status = err.code
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        now = time.perf_counter()
        if status is not None and http_up is None:
            http_up = now - t0
        if status == 200:
            return {
                "ready_s": round(now - t0, 4),
                "http_up_s": round(http_up, 4) if http_up is not None else None,
                "not_ready_polls": not_ready,
            }
        if status == 503:
            not_ready += 1
        time.sleep(READY_POLL_S)
    raise RuntimeError(f"{server.name} not ready after {timeout_s}s")


_RECOVERED = re.compile(r"recovered snapshot@(\d+) \+ (\d+) WAL frames, (\d+) records")
_RECOVERY_MS = re.compile(r"recovery took (\d+) ms")


def recovery_log(server: Server) -> dict[str, Any]:
    """The server's own account of its recovery (``topics.store`` / ``topics.server`` lines)."""
    text = server.log_path.read_text(errors="replace")
    out: dict[str, Any] = {}
    if m := _RECOVERED.search(text):
        out["snapshot_lsn"], out["wal_frames_replayed"], out["records_recovered"] = map(int, m.groups())
    if m := _RECOVERY_MS.search(text):
        out["server_recovery_ms"] = int(m.group(1))
    return out


def kill9(server: Server) -> None:
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGKILL)
    server.proc.wait(timeout=10)
    with contextlib.suppress(Exception):
        server._log.close()


def clean_stop(server: Server, timeout_s: float = 120.0) -> dict[str, Any]:
    t0 = time.perf_counter()
    server.proc.send_signal(signal.SIGTERM)
    try:
        code = server.proc.wait(timeout=timeout_s)
    except Exception:  # noqa: BLE001
        kill9(server)
        raise
    with contextlib.suppress(Exception):
        server._log.close()
    return {"stop_s": round(time.perf_counter() - t0, 3), "exit_code": code}


def du(path: Path) -> dict[str, Any]:
    """Apparent and allocated bytes of the files under ``path``, total and per top-level dir."""
    parts: dict[str, dict[str, int]] = {}
    for root, _dirs, files in os.walk(path):
        rel = Path(root).relative_to(path).parts
        key = rel[0] if rel else "."
        for name in files:
            with contextlib.suppress(OSError):
                st = os.stat(os.path.join(root, name))
                p = parts.setdefault(key, {"files": 0, "bytes": 0, "allocated_bytes": 0})
                p["files"] += 1
                p["bytes"] += st.st_size
                p["allocated_bytes"] += st.st_blocks * 512
    return {
        "bytes": sum(p["bytes"] for p in parts.values()),
        "allocated_bytes": sum(p["allocated_bytes"] for p in parts.values()),
        "by_dir": parts,
    }


def unreferenced_segments(data_dir: Path) -> dict[str, Any] | None:
    """Files under segments/ the newest snapshot does not list (best effort: reads the snapshot's
    JSON body), including temporary files of a seal torn by a crash. Recovery never loads them and
    checkpoints never remove them: leaked space."""
    snaps = sorted((data_dir / "snapshots").glob("*.snap"))
    if not snaps:
        return None
    try:
        buf = snaps[-1].read_bytes()
        state = orjson.loads(buf[buf.index(b"{") :])
        listed = {(str(t["id"]), name) for t in state["topics"] for name in t.get("segments", [])}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    files = [
        f
        for f in (data_dir / "segments").glob("*/*")
        if f.is_file() and (f.parent.name, f.name) not in listed  # *.seg, and torn *.seg.tmp
    ]
    return {
        "snapshot": snaps[-1].name,
        "files": len(files),
        "bytes": sum(f.stat().st_size for f in files),
        "names": sorted(f"{f.parent.name}/{f.name}" for f in files)[:20],
    }


def per_record(usage: dict[str, Any], records: int) -> dict[str, float | None]:
    if not records:
        return {"bytes": None, "allocated_bytes": None}
    return {
        "bytes": round(usage["bytes"] / records, 1),
        "allocated_bytes": round(usage["allocated_bytes"] / records, 1),
    }


# --------------------------------------------------------------------------------------------
# HTTP helpers


async def put_topic(
    session: aiohttp.ClientSession, server: Server, topic: str, config: dict[str, Any]
) -> None:
    async with session.put(
        f"{server.base}/v0/topics/{topic}", data=orjson.dumps(config), headers=HEADERS
    ) as resp:
        raw = await resp.read()
        if resp.status not in (200, 201):
            raise RuntimeError(f"PUT {topic}: {resp.status} {raw[:300]!r}")
        got = orjson.loads(raw)["config"]
        for key, value in config.items():
            if got.get(key) != value:
                raise RuntimeError(f"PUT {topic}: {key}={got.get(key)!r}, wanted {value!r}")


async def topic_state(server: Server, topic: str) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{server.base}/v0/topics/{topic}", params={"touch": "false"}) as resp,
    ):
        raw = await resp.read()
        if resp.status != 200:
            raise RuntimeError(f"GET {topic}: {resp.status} {raw[:300]!r}")
        doc = orjson.loads(raw)
        return {
            "count": doc["count"],
            "head_seq": doc["head_seq"],
            "earliest_seq": doc["earliest_seq"],
            "bytes": doc["bytes"],
            "durability": doc["config"]["durability"],
        }


async def probe_append(server: Server, topic: str) -> dict[str, Any]:
    """One more append: its seq must follow the recovered head (no seq reuse)."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{server.base}/v0/topics/{topic}",
            data=orjson.dumps({"records": [{"data": {"probe": True}}]}),
            headers=HEADERS,
        ) as resp,
    ):
        raw = await resp.read()
        if resp.status not in (200, 201):
            raise RuntimeError(f"probe append {topic}: {resp.status} {raw[:300]!r}")
        doc = orjson.loads(raw)
        return {"first_seq": doc["first_seq"], "fsync_ms": doc["performance"].get("fsync_ms")}


# --------------------------------------------------------------------------------------------
# performance numbers from responses

_PERF_KEYS = ("fsync_ms", "wal_append_ms", "server_total_ms")
_PERF_RE = {k: re.compile(rb'"%s":(-?[0-9.eE+-]+)' % k.encode()) for k in _PERF_KEYS}


class PerfCollector:
    def __init__(self) -> None:
        self.values: dict[str, list[float]] = {k: [] for k in _PERF_KEYS}
        self.missing = 0

    def __call__(self, body: bytes) -> None:
        tail = body[body.rfind(b'"performance"') :]
        for key, rx in _PERF_RE.items():
            m = rx.search(tail)
            if m:
                self.values[key].append(float(m.group(1)))
            elif key == "fsync_ms":
                self.missing += 1

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, vals in self.values.items():
            v = sorted(vals)
            out[key] = {
                "n": len(v),
                "nonzero": sum(1 for x in v if x > 0),
                "mean": round(sum(v) / len(v), 3) if v else None,
                "p50": round(percentile(v, 50), 3) if v else None,
                "p90": round(percentile(v, 90), 3) if v else None,
                "p99": round(percentile(v, 99), 3) if v else None,
                "max": round(v[-1], 3) if v else None,
            }
        out["fsync_ms"]["missing"] = self.missing
        return out


def fsync_probe(directory: Path, writes: int) -> dict[str, Any]:
    """The device's floor: append 4 KiB + fdatasync, ``writes`` times, in the data directory's
    file system (from this process, on the client CPU)."""
    path = directory / "fsync-probe.bin"
    block = os.urandom(4096)
    times: list[float] = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(writes):
            os.write(fd, block)
            t0 = time.perf_counter()
            os.fdatasync(fd)
            times.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    times.sort()
    return {
        "writes": writes,
        "bytes_per_write": 4096,
        "p50_ms": round(percentile(times, 50) * 1000, 3),
        "p90_ms": round(percentile(times, 90) * 1000, 3),
        "p99_ms": round(percentile(times, 99) * 1000, 3),
        "max_ms": round(times[-1] * 1000, 3),
    }


# --------------------------------------------------------------------------------------------
# part 1+2: latency and throughput per class


async def classes_benchmark(plan: Plan, server: Server) -> dict[str, Any]:
    shapes: dict[str, tuple[int, int, int, int]] = {  # shape -> (batch, requests, warmup, conns)
        "append_single": (1, plan.single_requests, plan.single_warmup, 1),
        "append_batch": (plan.batch_size, plan.batch_requests, plan.batch_warmup, plan.concurrency),
    }
    async with aiohttp.ClientSession() as session:
        for cls in CLASSES:
            for shape in shapes:
                await put_topic(
                    session, server, f"dur-{shape}-{cls}", {"durability": cls, "cap_records": WRITE_TOPIC_CAP}
                )
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {c: {s: [] for s in shapes} for c in CLASSES}
    perf: dict[str, dict[str, PerfCollector]] = {c: {s: PerfCollector() for s in shapes} for c in CLASSES}
    for rnd in range(plan.rounds):
        order = CLASSES[rnd % len(CLASSES) :] + CLASSES[: rnd % len(CLASSES)]
        log(f"round {rnd + 1}/{plan.rounds} (class order {', '.join(order)})")
        for shape, (batch, count, warmup, conns) in shapes.items():
            for cls in order:
                r = await run_phase(
                    server,
                    append_fn(server, f"dur-{shape}-{cls}", batch),
                    requests=count,
                    warmup=warmup,
                    concurrency=conns,
                    time_cap_s=plan.phase_time_cap_s,
                    offset=rnd * (count + warmup),
                    on_body=perf[cls][shape],
                )
                runs[cls][shape].append(r)
    results: dict[str, Any] = {}
    for cls in CLASSES:
        results[cls] = {}
        for shape, (_, _, _, conns) in shapes.items():
            agg = aggregate(f"{shape[7:]}/{cls}", server, runs[cls][shape], conns)
            agg["performance"] = perf[cls][shape].summary()
            results[cls][shape] = agg
    states = {}
    for cls in CLASSES:
        for shape in shapes:
            states[f"dur-{shape}-{cls}"] = await topic_state(server, f"dur-{shape}-{cls}")
    return {"results": results, "topic_states_at_end": states}


# --------------------------------------------------------------------------------------------
# part 3+4: recovery and disk bytes


async def fill(server: Server, topic: str, records: int) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=FILL_CONCURRENCY)
    timeout = aiohttp.ClientTimeout(total=120)
    perf = PerfCollector()
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        r = await drive(
            session,
            append_fn(server, topic, FILL_BATCH),
            -(-records // FILL_BATCH),
            FILL_CONCURRENCY,
            600.0,
            on_body=perf,
        )
    lat = r["latencies"]
    return {
        "requests": r["ok"],
        "errors": r["errors"],
        "first_error": r["first_error"],
        "acked_records": r["records"],
        "seconds": round(r["elapsed_s"], 2),
        "records_per_s": round(r["records"] / r["elapsed_s"], 1) if r["elapsed_s"] else None,
        "p50_ms": round(percentile(lat, 50) * 1000, 3) if lat else None,
        "p99_ms": round(percentile(lat, 99) * 1000, 3) if lat else None,
        "fsync_ms": perf.summary()["fsync_ms"],
    }


def _fresh_copy(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    return dst


async def restart_sample(
    pin: bool, workdir: Path, data_dir: Path, label: str, topic: str, acked: int, probe: bool
) -> tuple[Server, dict[str, Any]]:
    """Start a server on ``data_dir``, time it to ready and check the topic; returns the live
    server (the caller stops or kills it)."""
    t0 = time.perf_counter()
    server = start_server(pin, workdir, data_dir, label)
    try:
        sample = time_to_ready(server, t0)
        sample.update(recovery_log(server))
        state = await topic_state(server, topic)
        sample["count"] = state["count"]
        sample["head_seq"] = state["head_seq"]
        sample["count_ok"] = state["count"] == acked and state["head_seq"] == acked
        sample["rss_mb"] = rss_mb(server.pid)
        if probe:
            p = await probe_append(server, topic)
            sample["probe_seq"] = p["first_seq"]
            sample["probe_seq_ok"] = p["first_seq"] == state["head_seq"] + 1
    except BaseException:
        kill9(server)
        raise
    log(
        f"  {label}: ready in {sample['ready_s']:.3f}s (http up {sample['http_up_s']}s, server says "
        f"{sample.get('server_recovery_ms')} ms, {sample.get('wal_frames_replayed')} WAL frames), "
        f"count {sample['count']} / acked {acked}" + ("" if sample["count_ok"] else "  MISMATCH")
    )
    return server, sample


def _median_summary(samples: list[dict[str, Any]]) -> dict[str, Any]:
    ready = [s["ready_s"] for s in samples]
    srv = [s["server_recovery_ms"] for s in samples if "server_recovery_ms" in s]
    return {
        "ready_s_median": round(statistics.median(ready), 4),
        "ready_s_min": min(ready),
        "ready_s_max": max(ready),
        "server_recovery_ms_median": statistics.median(srv) if srv else None,
        "all_counts_ok": all(s["count_ok"] for s in samples),
        "all_probes_ok": all(s.get("probe_seq_ok", True) for s in samples),
        "samples": samples,
    }


async def recovery_benchmark(plan: Plan, pin: bool, workdir: Path, cls: str) -> dict[str, Any]:
    out: dict[str, Any] = {"class": cls, "fill_batch": FILL_BATCH, "fill_concurrency": FILL_CONCURRENCY}

    # process start-up floor: an empty data directory
    empty: list[dict[str, Any]] = []
    for i in range(plan.restart_reps):
        d = workdir / f"empty-{i}"
        d.mkdir()
        t0 = time.perf_counter()
        s = start_server(pin, workdir, d, "empty")
        try:
            empty.append(time_to_ready(s, t0))
        finally:
            kill9(s)
        shutil.rmtree(d)
    out["empty_start"] = {
        "ready_s_median": round(statistics.median(x["ready_s"] for x in empty), 4),
        "samples": empty,
    }
    log(f"empty data dir: ready in {out['empty_start']['ready_s_median']:.3f}s (median)")

    topic = f"recovery-{cls}"

    async def filled(size: int, data: Path, label: str) -> tuple[Server, dict[str, Any]]:
        """A server on a fresh ``data`` directory with ``topic`` filled with ``size`` records."""
        data.mkdir()
        server = start_server(pin, workdir, data, label)
        info: dict[str, Any] = {}
        try:
            server.wait_ready()
            async with aiohttp.ClientSession() as session:
                await put_topic(session, server, topic, {"durability": cls})
            info["fill"] = f = await fill(server, topic, size)
            log(
                f"  filled {f['acked_records']} records in {f['seconds']}s ({f['records_per_s']} rec/s, "
                f"errors {f['errors']})"
            )
            info["state"] = await topic_state(server, topic)
            info["server_rss_mb_after_fill"] = rss_mb(server.pid)
            # disk/memory classes fsync within ~2 ms of the ack; give the writer a moment
            await asyncio.sleep(0.1)
            info["disk"] = du(data)
            info["disk"]["per_record"] = per_record(info["disk"], f["acked_records"])
        except BaseException:
            kill9(server)
            raise
        return server, info

    for size in plan.recovery_sizes:
        log(f"recovery, {size} records, class {cls}")
        res: dict[str, Any] = {"records_target": size}

        # kill -9 path: fill, kill -9, then reps-1 restarts on fresh copies of the killed
        # directory and one on the original (the same state)
        data = workdir / f"rec-{size}"
        server, info = await filled(size, data, f"fill{size}")
        kill9(server)
        res["fill"], res["state_before_kill"] = info["fill"], info["state"]
        res["server_rss_mb_after_fill"] = info["server_rss_mb_after_fill"]
        res["disk_after_fill"] = info["disk"]
        acked = res["fill"]["acked_records"]
        killed = workdir / f"rec-{size}-killed"
        shutil.copytree(data, killed)
        kill_samples: list[dict[str, Any]] = []
        for _ in range(plan.restart_reps - 1):
            run = _fresh_copy(killed, workdir / f"rec-{size}-run")
            srv, sample = await restart_sample(pin, workdir, run, f"kill9-{size}", topic, acked, probe=True)
            kill9(srv)
            shutil.rmtree(run)
            kill_samples.append(sample)
        srv, sample = await restart_sample(pin, workdir, data, f"kill9-{size}", topic, acked, probe=False)
        kill_samples.append(sample)
        res["kill9"] = _median_summary(kill_samples)
        # ... and what the recovered server leaves on disk after a clean stop
        res["clean_stop_after_kill9_recovery"] = clean_stop(srv)
        after = res["disk_after_kill9_recovery_and_clean_stop"] = du(data)
        after["per_record"] = per_record(after, acked)
        after["unreferenced_segments"] = unreferenced_segments(data)
        shutil.rmtree(killed)
        shutil.rmtree(data)

        # clean path: a second fill, SIGTERM (final checkpoint), restarts on fresh copies
        data = workdir / f"rec-{size}-c"
        server, info = await filled(size, data, f"cfill{size}")
        res["clean_fill"], res["state_before_clean_stop"] = info["fill"], info["state"]
        res["clean_stop"] = clean_stop(server)
        res["disk_after_clean_stop"] = du(data)
        res["disk_after_clean_stop"]["per_record"] = per_record(
            res["disk_after_clean_stop"], info["fill"]["acked_records"]
        )
        res["disk_after_clean_stop"]["unreferenced_segments"] = unreferenced_segments(data)
        log(
            f"  clean stop in {res['clean_stop']['stop_s']}s (exit {res['clean_stop']['exit_code']}); "
            f"disk {res['disk_after_fill']['bytes'] / 1e6:.1f} MB after fill, "
            f"{res['disk_after_clean_stop']['bytes'] / 1e6:.1f} MB after clean stop, "
            f"{after['bytes'] / 1e6:.1f} MB after kill -9 recovery + clean stop"
        )
        clean_acked = info["fill"]["acked_records"]
        clean_samples: list[dict[str, Any]] = []
        for _ in range(plan.restart_reps):
            run = _fresh_copy(data, workdir / f"rec-{size}-run")
            srv, sample = await restart_sample(
                pin, workdir, run, f"clean-{size}", topic, clean_acked, probe=True
            )
            kill9(srv)
            shutil.rmtree(run)
            clean_samples.append(sample)
        res["clean"] = _median_summary(clean_samples)
        shutil.rmtree(data)
        out[str(size)] = res
    return out


# --------------------------------------------------------------------------------------------


def checkout(rev: str, dest: Path) -> Path:
    """``git archive REV server openapi`` unpacked under ``dest``, with its C extension built
    in place when that commit has one (``setup.py``); returns ``dest/server``."""
    dest.mkdir(parents=True)
    has_setup = bool(
        subprocess.run(
            ["git", "ls-tree", "--name-only", rev, "setup.py"], cwd=REPO, capture_output=True
        ).stdout
    )
    paths = ["server", "openapi", *(["setup.py", "pyproject.toml"] if has_setup else [])]
    archive = subprocess.run(
        ["git", "archive", rev, *paths], cwd=REPO, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    if has_setup:
        subprocess.run(
            [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
            cwd=dest,
            check=True,
            capture_output=True,
        )
    return dest / "server"


def targets(result: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    classes = result.get("classes", {}).get("results", {})
    fs = classes.get("fsync", {}).get("append_batch", {}).get("records_per_s_median_round")
    dk = classes.get("disk", {}).get("append_batch", {}).get("records_per_s_median_round")
    ratio = round(fs / dk, 3) if fs and dk else None
    fs_rounds = classes.get("fsync", {}).get("append_batch", {}).get("req_per_s_by_round", [])
    dk_rounds = classes.get("disk", {}).get("append_batch", {}).get("req_per_s_by_round", [])
    by_round = [round(f / d, 3) for f, d in zip(fs_rounds, dk_rounds, strict=False) if d]
    out["fsync_vs_disk_batched_records_per_s"] = {
        "target": ">= 0.8",
        "fsync_records_per_s": fs,
        "disk_records_per_s": dk,
        "ratio": ratio,  # of the median-round records/s: the verdict
        "ratio_by_round": by_round,  # same round, adjacent phases
        "ratio_median_of_rounds": round(statistics.median(by_round), 3) if by_round else None,
        "pass": (ratio >= 0.8) if ratio is not None else None,
    }
    rec = result.get("recovery", {})
    one_m = rec.get("1000000")
    ready = one_m["kill9"]["ready_s_median"] if one_m else None
    out["kill9_ready_1M_s"] = {
        "target": "<= 2.0",
        "ready_s_median": ready,
        "ready_s_max": one_m["kill9"]["ready_s_max"] if one_m else None,
        "pass": (ready <= 2.0) if ready is not None else None,
        **({} if one_m else {"note": "not measured (quick mode has no 1M run)"}),
    }
    return out


def integrity_problems(result: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for size, res in result.get("recovery", {}).items():
        if not isinstance(res, dict) or "fill" not in res:
            continue
        for fill_key, state_key, path, stop_key in (
            ("fill", "state_before_kill", "kill9", "clean_stop_after_kill9_recovery"),
            ("clean_fill", "state_before_clean_stop", "clean", "clean_stop"),
        ):
            f = res[fill_key]
            acked = f["acked_records"]
            if f["errors"]:
                problems.append(f"{size} {fill_key}: {f['errors']} requests failed: {f['first_error']}")
            st = res[state_key]
            if st["count"] != acked or st["head_seq"] != acked:
                problems.append(
                    f"{size}: {state_key} count {st['count']} head {st['head_seq']} != acked {acked}"
                )
            for i, smp in enumerate(res[path]["samples"]):
                if not smp["count_ok"]:
                    problems.append(
                        f"{size} {path} restart {i}: count {smp['count']} head {smp['head_seq']} "
                        f"!= acked {acked}"
                    )
                if smp.get("probe_seq_ok") is False:
                    problems.append(
                        f"{size} {path} restart {i}: next append got seq {smp['probe_seq']}, "
                        f"head {smp['head_seq']}"
                    )
            if res[stop_key]["exit_code"] != 0:
                problems.append(f"{size}: {stop_key} exit code {res[stop_key]['exit_code']}")
    for cls, shapes in result.get("classes", {}).get("results", {}).items():
        for shape, agg in shapes.items():
            if agg.get("errors"):
                problems.append(f"{cls}/{shape}: {agg['errors']} failed requests: {agg.get('first_error')}")
    return problems


def storage_warnings(result: dict[str, Any]) -> list[str]:
    """Not durability failures (counts are right) but storage findings worth a look."""
    warnings: list[str] = []
    for size, res in result.get("recovery", {}).items():
        if not isinstance(res, dict) or "disk_after_clean_stop" not in res:
            continue
        for key in ("disk_after_kill9_recovery_and_clean_stop", "disk_after_clean_stop"):
            orphans = res.get(key, {}).get("unreferenced_segments")
            if orphans and orphans["files"]:
                warnings.append(
                    f"{size} {key}: {orphans['files']} segment files ({orphans['bytes']} B) are not "
                    f"referenced by the snapshot (leaked)"
                )
    for cls, shapes in result.get("classes", {}).get("results", {}).items():
        for shape, agg in shapes.items():
            f = agg["performance"]["fsync_ms"]
            if cls != "fsync" and f["nonzero"]:
                warnings.append(
                    f"{cls}/{shape}: {f['nonzero']} of {f['n']} responses report fsync_ms > 0 "
                    f"(max {f['max']} ms); spec §0.10 says this class is never fsync-gated (0)"
                )
    return warnings


def print_summary(result: dict[str, Any]) -> None:
    def p(line: str) -> None:
        print(line, file=sys.stderr)

    p("")
    p("class      shape    p50 ms   p99 ms    req/s    records/s   fsync_ms p50/p99/max")
    for cls, shapes in result["classes"]["results"].items():
        for shape, a in shapes.items():
            f = a["performance"]["fsync_ms"]
            p(
                f"{cls:10s} {shape[7:]:7s} {a['p50_ms_median_round']:7.3f} {a['p99_ms_median_round']:8.3f} "
                f"{a['req_per_s_median_round']:8.1f} {a['records_per_s_median_round']:12.1f}   "
                f"{f['p50']}/{f['p99']}/{f['max']}"
            )
    for size, res in result["recovery"].items():
        if not isinstance(res, dict) or "fill" not in res:
            continue
        p(
            f"recovery {size}: kill -9 -> ready {res['kill9']['ready_s_median']:.3f}s, clean -> ready "
            f"{res['clean']['ready_s_median']:.3f}s; bytes/record "
            f"{res['disk_after_fill']['per_record']['bytes']} (after fill) / "
            f"{res['disk_after_clean_stop']['per_record']['bytes']} (after clean stop)"
        )
    for name, t in result["targets"].items():
        verdict = {True: "PASS", False: "FAIL", None: "n/a"}[t["pass"]]
        shown = t.get("ratio", t.get("ready_s_median"))
        p(f"target {name} {t['target']}: {shown} -> {verdict}")
    for prob in result["problems"]:
        p(f"PROBLEM: {prob}")
    for warning in result["warnings"]:
        p(f"WARNING: {warning}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: fewer requests, 100k recovery only, < 60 s"
    )
    parser.add_argument("--out", type=Path, help="also write the JSON result to this file")
    parser.add_argument("--no-pin", action="store_true", help="do not pin server/client to separate CPUs")
    parser.add_argument(
        "--topics-src",
        type=Path,
        metavar="DIR",
        help="run the server from this source dir (holding topics_server/ and topics_engine/), e.g. "
        "`git archive HEAD server openapi | tar -x -C /tmp/x` then /tmp/x/server",
    )
    parser.add_argument(
        "--commit",
        metavar="REV",
        help="run the server from this commit (git archive of server/ and openapi/ into the "
        "temporary directory), so uncommitted edits in the checkout do not leak into the numbers",
    )
    parser.add_argument("--recovery-class", choices=("fsync", "disk"), default="fsync")
    parser.add_argument(
        "--workdir", type=Path, help="parent of the temporary data directories (default: $TMPDIR)"
    )
    parser.add_argument("--skip-classes", action="store_true", help="only the recovery part")
    parser.add_argument("--skip-recovery", action="store_true", help="only the latency/throughput part")
    args = parser.parse_args(argv)

    global TOPICS_SRC
    TOPICS_SRC = args.topics_src.resolve() if args.topics_src else None
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so the servers get stopped
    plan = QUICK if args.quick else FULL
    pin = not args.no_pin and can_pin()
    if pin:
        os.sched_setaffinity(0, {CLIENT_CPU})
    started = time.time()
    result: dict[str, Any] = {
        "benchmark": "topics durability_bench",
        "mode": "quick" if args.quick else "full",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "machine": machine_facts(pin),
        "topics_src": str(TOPICS_SRC) if TOPICS_SRC else "installed (this checkout)",
        "client": "aiohttp ClientSession + TCPConnector(limit=concurrency) on uvloop, one process",
        "plan": {
            **{k: v for k, v in plan.__dict__.items() if k != "recovery_sizes"},
            "recovery_sizes": list(plan.recovery_sizes),
            "write_topic_cap_records": WRITE_TOPIC_CAP,
            "record_data_bytes": data_size(),
            "ready_poll_s": READY_POLL_S,
        },
    }
    import uvloop

    with (
        tempfile.TemporaryDirectory(prefix="topics-durability-", dir=args.workdir) as tmp,
        asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
        contextlib.ExitStack() as cleanup,
    ):
        cleanup.callback(reap_all)  # runs before the temporary directory is removed
        workdir = Path(tmp)
        if args.commit:
            TOPICS_SRC = checkout(args.commit, workdir / "src")
            result["topics_src"] = f"git archive {args.commit}"
            result["topics_commit"] = git("rev-parse", args.commit)
        result["fsync_probe"] = fsync_probe(workdir, plan.fsync_probe_writes)
        log(f"device fdatasync floor (4 KiB appends): {result['fsync_probe']}")
        if not args.skip_classes:
            data = workdir / "classes-data"
            data.mkdir()
            server = start_server(pin, workdir, data, "classes")
            try:
                server.wait_ready()
                log(f"classes server ready on :{server.port} (pid {server.pid})")
                result["classes"] = runner.run(classes_benchmark(plan, server))
                result["classes"]["server_rss_mb_at_end"] = rss_mb(server.pid)
                result["classes"]["data_dir_at_end"] = du(data)
            finally:
                server.stop()
            shutil.rmtree(data)
        else:
            result["classes"] = {"results": {}}
        if not args.skip_recovery:
            result["recovery"] = runner.run(recovery_benchmark(plan, pin, workdir, args.recovery_class))
        else:
            result["recovery"] = {}
    result["targets"] = targets(result)
    result["problems"] = integrity_problems(result)
    result["warnings"] = storage_warnings(result)
    emit_result(result, started, args.out)
    print_summary(result)
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
