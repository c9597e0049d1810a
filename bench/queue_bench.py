#!/usr/bin/env python3
"""Queue drain benchmark: topics queues (claim/ack over HTTP) against a PostgreSQL
``SELECT … FOR UPDATE SKIP LOCKED`` job table, in one run.

    python bench/queue_bench.py [--quick] [--out results.json] [--no-pin] [--no-pg]

**topics** — ``topics serve`` as a subprocess on 127.0.0.1 (ephemeral port, fresh temporary
``TOPICS_DATA_DIR``), started and measured with the helpers of ``bench/http_bench.py``: the
server is pinned to CPU 0 (taskset), this process (the aiohttp load generator, and the asyncpg
client) to CPU 1. For each durability in (``disk``, ``fsync``) and each case (W workers × claim
``max`` m) a fresh queue ``PUT /v0/topics/q-<dur>-w<W>-m<m> {"type":"queue","durability":dur}``
is filled with ``jobs`` jobs of ~100 B (``bench/payloads.py``) by batched appends of 1000 per
request (4 connections), then drained: each worker ``w<i>`` loops ``POST …/claim {"node","max"}``
→ ``POST …/ack {"node","seqs"}`` until a claim returns ``count`` 0. The 16 × 16 case is repeated
on a queue created with ``claim_jitter_ms: 5`` (the coalescing window). After every drain:
``GET /v0/topics/{q}`` must show ``count`` 0 (and ``ready``/``in_flight`` 0), the acked total
must equal the jobs filled, no seq may be delivered twice and no ack may skip a seq — any
mismatch is listed under ``problems``. The topic is then deleted.

**PostgreSQL** — found under ``/usr/lib/postgresql/*/bin`` (``apt-get install -y postgresql``
when missing and running as root); a throwaway cluster is ``initdb``-ed in a temporary
directory (as the ``postgres`` user when run as root, created with ``useradd`` if absent),
``postgres`` runs in the foreground pinned to CPU 0 on a free 127.0.0.1 port with ``fsync`` and
``synchronous_commit`` on (the defaults), and is stopped (SIGINT, fast shutdown) and its
directory deleted at the end — also on error. The queue is the design of the reference doc: a
``jobs`` table (``id bigserial``, ``payload jsonb``, ``locked_until``, ``attempts``,
``max_attempts``, ``claimed_by``, ``enqueued_at``), filled by ``INSERT … SELECT unnest($1::jsonb[])``
of 1000 rows per statement, then ``VACUUM ANALYZE``; claim is one autocommit statement
``UPDATE jobs SET locked_until = now() + 30 s, attempts = attempts + 1, claimed_by = $node
WHERE id IN (SELECT id FROM jobs WHERE locked_until <= now() AND attempts < max_attempts
ORDER BY id FOR UPDATE SKIP LOCKED LIMIT $m) RETURNING id, payload, attempts`` and ack is
``DELETE FROM jobs WHERE id = ANY($ids) AND claimed_by = $node``. asyncpg, one connection per
worker; same worker × max matrix; verified the same way (``count(*)`` = 0 after the drain).

Per drain: jobs/s, claim (and ack) latency p50/p99, jobs per claim, fairness (coefficient of
variation of jobs per worker, population stdev / mean), server CPU per job (topics: the server
process; PostgreSQL: the postmaster and all its children, from /proc), client and foreign CPU.

A drain is bounded by a time cap (20 s full, 5 s quick): the slow cases (one worker, max 1)
are measured over the capped part, and the rest of the queue is then drained untimed (8 workers ×
max 1000) so the verification still covers every job. The headline case (16 × 16; topics
``fsync`` and PostgreSQL) is repeated ``headline_reps`` times (3 full, 1 quick), alternating
the two systems; the target uses the medians: **the fsync topics queue drains at least 3× the
jobs/s of the PostgreSQL queue at 16 workers × max 16** — printed with the ratio.

JSON goes to stdout (and ``--out``); progress and a summary to stderr. Exit status 1 if any
request failed or any verification failed; a missed target does not change it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import glob
import os
import pwd
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
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
    SERVER_CPU,
    Server,
    _die_with_parent,
    can_pin,
    cpu_seconds,
    emit_result,
    free_port,
    log,
    machine_busy_seconds,
    machine_facts,
    percentile,
    rss_mb,
    servers,
    topics_server,
)
from bench.payloads import append_body, data_size, make_data  # noqa: E402

# --------------------------------------------------------------------------------------------
# parameters

Case = tuple[int, int]  # (workers, claim max)


@dataclass(frozen=True)
class Plan:
    jobs: int
    fill_batch: int
    durabilities: tuple[str, ...]
    topics_cases: tuple[Case, ...]
    jitter_ms: int
    jitter_durabilities: tuple[str, ...]
    pg_cases: tuple[Case, ...]
    headline: Case
    headline_reps: int
    case_time_cap_s: float
    lease_ms: int


_MATRIX = tuple((w, m) for w in (1, 16, 64) for m in (1, 16, 100))

FULL = Plan(
    jobs=100_000,
    fill_batch=1000,
    durabilities=("disk", "fsync"),
    topics_cases=_MATRIX,
    jitter_ms=5,
    jitter_durabilities=("disk", "fsync"),
    pg_cases=_MATRIX,
    headline=(16, 16),
    headline_reps=3,
    case_time_cap_s=20.0,
    lease_ms=30_000,
)
QUICK = Plan(
    jobs=10_000,
    fill_batch=1000,
    durabilities=("disk", "fsync"),
    topics_cases=((1, 16), (16, 1), (16, 16), (64, 100)),
    jitter_ms=5,
    jitter_durabilities=("fsync",),
    pg_cases=((1, 16), (16, 16)),
    headline=(16, 16),
    headline_reps=1,
    case_time_cap_s=5.0,
    lease_ms=30_000,
)

CLEANUP_WORKERS, CLEANUP_MAX, CLEANUP_CAP_S = 8, 1000, 300.0


def case_key(case: Case) -> str:
    return f"w{case[0]}xm{case[1]}"


# --------------------------------------------------------------------------------------------
# the drain loop, shared by both systems


@dataclass
class DrainResult:
    workers: int
    max: int
    jobs_per_worker: list[int]
    claim_lat: list[float] = field(default_factory=list)
    claim_at: list[float] = field(default_factory=list)  # start of each claim, s since the drain began
    ack_lat: list[float] = field(default_factory=list)
    claims: int = 0
    acked: int = 0
    skipped: int = 0
    duplicates: int = 0
    errors: int = 0
    first_error: str | None = None
    elapsed_s: float = 0.0
    time_capped: bool = False


ClaimFn = Callable[[int, int], Awaitable[list[int]]]  # (worker, max) -> claimed ids
AckFn = Callable[[int, list[int]], Awaitable[tuple[int, int]]]  # (worker, ids) -> (acked, skipped)


async def drain(
    claim: ClaimFn,
    ack: AckFn,
    workers: int,
    max_: int,
    time_cap_s: float,
    max_claims: int,
    seen: set[int] | None = None,
) -> DrainResult:
    """``workers`` loops of claim → ack until a claim comes back empty, or the time cap (no
    new claim after it; held jobs are still acked), or ``max_claims`` claims in all."""
    res = DrainResult(workers, max_, [0] * workers)
    seen = set() if seen is None else seen
    start = time.perf_counter()
    deadline = start + time_cap_s

    def fail(err: str) -> None:
        res.errors += 1
        if res.first_error is None:
            res.first_error = err

    async def worker(i: int) -> None:
        while res.claims < max_claims:
            if time.perf_counter() >= deadline:
                res.time_capped = True
                return
            t0 = time.perf_counter()
            try:
                ids = await claim(i, max_)
            except Exception as err:  # noqa: BLE001 — recorded; the worker stops
                fail(f"claim: {err!r}"[:400])
                return
            dt = time.perf_counter() - t0
            res.claims += 1
            if not ids:
                return
            res.claim_lat.append(dt)
            res.claim_at.append(t0 - start)
            res.jobs_per_worker[i] += len(ids)
            before = len(seen)
            seen.update(ids)
            res.duplicates += len(ids) - (len(seen) - before)
            t0 = time.perf_counter()
            try:
                acked, skipped = await ack(i, ids)
            except Exception as err:  # noqa: BLE001
                fail(f"ack: {err!r}"[:400])
                return
            res.ack_lat.append(time.perf_counter() - t0)
            res.acked += acked
            res.skipped += skipped

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(workers)))
    res.elapsed_s = time.perf_counter() - t0
    return res


def _ms(values: list[float], pct: float) -> float | None:
    return round(percentile(sorted(values), pct) * 1000, 3) if values else None


def summarize(
    r: DrainResult,
    cpu_s: float,
    client_s: float,
    foreign_s: float,
) -> dict[str, Any]:
    jobs = r.jobs_per_worker
    mean = statistics.fmean(jobs) if jobs else 0.0
    cv = statistics.pstdev(jobs) / mean if mean and len(jobs) > 1 else 0.0
    delivered = sum(jobs)
    e = r.elapsed_s
    return {
        "workers": r.workers,
        "max": r.max,
        "jobs_acked": r.acked,
        "jobs_delivered": delivered,
        "elapsed_s": round(e, 3),
        "time_capped": r.time_capped,
        "jobs_per_s": round(r.acked / e, 1) if e else 0.0,
        "claims": r.claims,
        "jobs_per_claim": round(delivered / len(r.claim_lat), 2) if r.claim_lat else None,
        "claim_p50_ms": _ms(r.claim_lat, 50),
        "claim_p99_ms": _ms(r.claim_lat, 99),
        "claim_max_ms": round(max(r.claim_lat) * 1000, 3) if r.claim_lat else None,
        # The five slowest claims: [seconds into the drain, latency ms] — where the stalls were.
        "slowest_claims": sorted(
            ([round(at, 3), round(lat * 1000, 1)] for at, lat in zip(r.claim_at, r.claim_lat, strict=True)),
            key=lambda x: -x[1],
        )[:5],
        "ack_p50_ms": _ms(r.ack_lat, 50),
        "ack_p99_ms": _ms(r.ack_lat, 99),
        "fairness_cv": round(cv, 4),
        "jobs_per_worker_min": min(jobs) if jobs else 0,
        "jobs_per_worker_max": max(jobs) if jobs else 0,
        "jobs_per_worker": jobs,
        "server_cpu_us_per_job": round(cpu_s / r.acked * 1e6, 1) if r.acked else None,
        "server_cpu_util": round(cpu_s / e, 2) if e else None,
        "client_cpu_util": round(client_s / e, 2) if e else None,
        "foreign_cpu_util": round(max(0.0, foreign_s) / e, 2) if e else None,
        "duplicates": r.duplicates,
        "ack_skipped": r.skipped,
        "errors": r.errors,
        **({"first_error": r.first_error} if r.first_error else {}),
    }


async def measured_drain(
    cpu: Callable[[], float],
    claim: ClaimFn,
    ack: AckFn,
    case: Case,
    plan: Plan,
    seen: set[int],
) -> tuple[DrainResult, dict[str, Any]]:
    cpu0, cl0, busy0 = cpu(), time.process_time(), machine_busy_seconds()
    r = await drain(claim, ack, case[0], case[1], plan.case_time_cap_s, 4 * plan.jobs + 1000, seen)
    cpu1, cl1, busy1 = cpu(), time.process_time(), machine_busy_seconds()
    server_s, client_s = cpu1 - cpu0, cl1 - cl0
    return r, summarize(r, server_s, client_s, busy1 - busy0 - server_s - client_s)


def log_case(system: str, label: str, s: dict[str, Any]) -> None:
    log(
        f"{system:8s} {label:22s} {s['jobs_per_s']:9.1f} jobs/s  claim p50 {s['claim_p50_ms']} "
        f"p99 {s['claim_p99_ms']} ms  cv {s['fairness_cv']:.3f}  srv {s['server_cpu_us_per_job']} "
        f"us/job (util {s['server_cpu_util']})  cli {s['client_cpu_util']}  foreign "
        f"{s['foreign_cpu_util']}"
        + ("  CAPPED" if s["time_capped"] else "")
        + (f"  ERRORS {s['errors']}: {s.get('first_error')}" if s["errors"] else "")
    )


# --------------------------------------------------------------------------------------------
# topics


class TopicsQueue:
    def __init__(self, server: Server) -> None:
        self.server = server

    def url(self, q: str, suffix: str = "") -> str:
        return f"{self.server.base}/v0/topics/{q}{suffix}"

    async def request(self, session: aiohttp.ClientSession, method: str, url: str, body: Any = None) -> Any:
        data = orjson.dumps(body) if body is not None else None
        async with session.request(method, url, data=data, headers=HEADERS) as resp:
            raw = await resp.read()
            if resp.status >= 300:
                raise RuntimeError(f"{method} {url}: HTTP {resp.status} {raw[:300]!r}")
        return orjson.loads(raw)

    async def create(self, q: str, config: dict[str, Any]) -> dict[str, Any]:
        async with aiohttp.ClientSession() as s:
            return await self.request(s, "PUT", self.url(q), config)

    async def fill(self, q: str, jobs: int, batch: int) -> float:
        """Batched appends of ``batch`` jobs per request over 4 connections; returns seconds."""
        nreq = -(-jobs // batch)
        bodies = [append_body(k * batch, min(batch, jobs - k * batch)) for k in range(nreq)]
        state = {"next": 0}
        t0 = time.perf_counter()
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=4)) as s:

            async def w() -> None:
                while state["next"] < nreq:
                    k = state["next"]
                    state["next"] += 1
                    async with s.post(self.url(q), data=bodies[k], headers=HEADERS) as resp:
                        raw = await resp.read()
                        if resp.status >= 300:
                            raise RuntimeError(f"fill {q}: HTTP {resp.status} {raw[:300]!r}")

            await asyncio.gather(*(w() for _ in range(4)))
        return time.perf_counter() - t0

    async def state(self, q: str) -> dict[str, Any]:
        async with aiohttp.ClientSession() as s:
            return await self.request(s, "GET", self.url(q))

    async def delete(self, q: str) -> None:
        with contextlib.suppress(Exception):
            async with aiohttp.ClientSession() as s:
                await self.request(s, "DELETE", self.url(q))

    def fns(
        self, session: aiohttp.ClientSession, q: str, prefix: str, fsync_ms: list[float] | None = None
    ) -> tuple[ClaimFn, AckFn]:
        """Claim/ack calls for worker ``<prefix><i>``; each ack's ``performance.fsync_ms`` is
        appended to ``fsync_ms`` (if given)."""
        claim_url, ack_url = self.url(q, "/claim"), self.url(q, "/ack")

        async def claim(i: int, m: int) -> list[int]:
            body = b'{"node":"%s%d","max":%d}' % (prefix.encode(), i, m)
            async with session.post(claim_url, data=body, headers=HEADERS) as resp:
                raw = await resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"claim HTTP {resp.status} {raw[:300]!r}")
            doc = orjson.loads(raw)
            return [j["$seq"] for j in doc["claimed"]]

        async def ack(i: int, seqs: list[int]) -> tuple[int, int]:
            body = orjson.dumps({"node": f"{prefix}{i}", "seqs": seqs})
            async with session.post(ack_url, data=body, headers=HEADERS) as resp:
                raw = await resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"ack HTTP {resp.status} {raw[:300]!r}")
            doc = orjson.loads(raw)
            if fsync_ms is not None:
                fsync_ms.append(float((doc.get("performance") or {}).get("fsync_ms") or 0.0))
            return int(doc["acked"]), len(doc.get("skipped") or [])

        return claim, ack

    async def run_case(self, q: str, config: dict[str, Any], case: Case, plan: Plan) -> dict[str, Any]:
        await self.create(q, config)
        fill_s = await self.fill(q, plan.jobs, plan.fill_batch)
        st = await self.state(q)
        problems: list[str] = []
        if st.get("count") != plan.jobs:
            problems.append(f"topics {q}: count {st.get('count')} after filling {plan.jobs}")
        seen: set[int] = set()
        pid = self.server.pid

        def cpu() -> float:
            u, s, _ = cpu_seconds(pid)
            return u + s

        timeout = aiohttp.ClientTimeout(total=60)
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=case[0]), timeout=timeout
        ) as session:
            fsyncs: list[float] = []
            claim, ack = self.fns(session, q, "w", fsyncs)
            r, summary = await measured_drain(cpu, claim, ack, case, plan, seen)
        # The server's own account of the ack's fsync wait: > 0 only where the delete was fsynced.
        summary["ack_fsync_ms_p50"] = round(statistics.median(fsyncs), 3) if fsyncs else None
        summary["ack_fsync_nonzero_share"] = (
            round(sum(1 for x in fsyncs if x > 0) / len(fsyncs), 3) if fsyncs else None
        )
        cleanup = await self._cleanup(q, seen, plan)
        end = await self.state(q)
        total = r.acked + cleanup["acked"]
        queue = end.get("queue") or {}
        verify = {
            "count_after": end.get("count"),
            "ready_after": queue.get("ready"),
            "in_flight_after": queue.get("in_flight"),
            "acked_total": total,
            "jobs_filled": plan.jobs,
        }
        if end.get("count") != 0 or queue.get("ready") or queue.get("in_flight"):
            problems.append(f"topics {q}: after the drain count={end.get('count')} queue={queue}")
        if total != plan.jobs:
            problems.append(f"topics {q}: acked {total} jobs in all, filled {plan.jobs}")
        if r.duplicates or cleanup["duplicates"]:
            problems.append(f"topics {q}: {r.duplicates + cleanup['duplicates']} seqs delivered twice")
        if r.skipped or cleanup["skipped"]:
            problems.append(f"topics {q}: {r.skipped + cleanup['skipped']} acked seqs skipped")
        if r.errors or cleanup["errors"]:
            problems.append(f"topics {q}: request errors: {r.first_error or cleanup.get('first_error')}")
        rss_full = rss_mb(self.server.pid)
        await self.delete(q)
        summary.update(
            fill_s=round(fill_s, 2),
            cleanup=cleanup,
            verify=verify,
            problems=problems,
            server_rss_mb_drained=rss_full,  # queue drained, topic not yet deleted
            server_rss_mb_after_delete=rss_mb(self.server.pid),
            load_avg_1m=round(os.getloadavg()[0], 2),
        )
        return summary

    async def _cleanup(self, q: str, seen: set[int], plan: Plan) -> dict[str, Any]:
        """Drain whatever a time-capped drain left, untimed, so the verification covers all."""
        st = await self.state(q)
        if not st.get("count"):
            return {"acked": 0, "duplicates": 0, "skipped": 0, "errors": 0, "seconds": 0.0}
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=CLEANUP_WORKERS),
            timeout=aiohttp.ClientTimeout(total=60),
        ) as session:
            claim, ack = self.fns(session, q, "c")
            r = await drain(claim, ack, CLEANUP_WORKERS, CLEANUP_MAX, CLEANUP_CAP_S, 4 * plan.jobs, seen)
        out = {
            "acked": r.acked,
            "duplicates": r.duplicates,
            "skipped": r.skipped,
            "errors": r.errors,
            "seconds": round(r.elapsed_s, 2),
        }
        if r.first_error:
            out["first_error"] = r.first_error
        return out


# --------------------------------------------------------------------------------------------
# PostgreSQL


def pg_bindir() -> Path | None:
    """The newest /usr/lib/postgresql/<v>/bin holding initdb, pg_ctl and postgres."""
    found = []
    for d in glob.glob("/usr/lib/postgresql/*/bin"):
        p = Path(d)
        if all((p / b).exists() for b in ("initdb", "pg_ctl", "postgres")):
            with contextlib.suppress(ValueError):
                found.append((float(p.parent.name), p))
    return max(found)[1] if found else None


def ensure_postgres() -> tuple[Path, bool]:
    """(bin dir, installed now). Installs the distribution's postgresql only if none is found."""
    bindir = pg_bindir()
    if bindir is not None:
        return bindir, False
    if os.geteuid() != 0:
        raise RuntimeError("PostgreSQL not found under /usr/lib/postgresql/*/bin and not root to install it")
    log("PostgreSQL not found: apt-get install -y postgresql")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(
        ["apt-get", "install", "-y", "-q", "postgresql"],
        env=env,
        check=True,
        stdout=sys.stderr,
        stderr=sys.stderr,
        timeout=900,
    )
    bindir = pg_bindir()
    if bindir is None:
        raise RuntimeError("apt-get install postgresql did not provide initdb/pg_ctl/postgres")
    return bindir, True


PG_USER_FALLBACK = "topicsbench-pg"


def pg_os_user() -> tuple[int, int, str] | None:
    """(uid, gid, name) to run the cluster as when root; None when not root (run as self)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", PG_USER_FALLBACK):
        with contextlib.suppress(KeyError):
            pw = pwd.getpwnam(name)
            return pw.pw_uid, pw.pw_gid, name
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER_FALLBACK],
        check=True,
    )
    pw = pwd.getpwnam(PG_USER_FALLBACK)
    return pw.pw_uid, pw.pw_gid, PG_USER_FALLBACK


def _proc_children_cpu(root: int) -> float:
    """user+system CPU seconds of ``root`` and its direct children (postmaster + backends)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            if int(d) == root or int(fields[1]) == root:
                total += (int(fields[11]) + int(fields[12])) / tick
    return total


class PgCluster:
    """A throwaway cluster: initdb into a temp dir, ``postgres`` in the foreground (pinned to
    the server CPU), SIGINT + rmtree on stop."""

    DB_USER = "bench"

    def __init__(self, pin: bool) -> None:
        self.bindir, self.installed_now = ensure_postgres()
        self.version = subprocess.run(
            [str(self.bindir / "postgres"), "--version"], capture_output=True, text=True
        ).stdout.strip()
        self.user = pg_os_user()
        self.root = Path(tempfile.mkdtemp(prefix="topics-qbench-pg-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self._log = None
        self.pin = pin
        self.port = free_port()
        if self.user is not None:
            os.chown(self.root, self.user[0], self.user[1])
        self.data = self.root / "data"
        self.log_path = self.root / "postgres.log"

    def _popen_kw(self) -> dict[str, Any]:
        kw: dict[str, Any] = {}
        if self.user is not None:
            kw.update(user=self.user[0], group=self.user[1], extra_groups=[])
        return kw

    def start(self) -> None:
        t0 = time.perf_counter()
        # --no-sync: initdb does not fsync its own files (the cluster itself runs with fsync on)
        subprocess.run(
            [
                str(self.bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                self.DB_USER,
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
            check=True,
            capture_output=True,
            cwd=self.root,
            timeout=120,
            **self._popen_kw(),
        )
        argv = [
            str(self.bindir / "postgres"),
            "-D",
            str(self.data),
            "-p",
            str(self.port),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            f"unix_socket_directories={self.root}",
            "-c",
            "max_connections=200",
            "-c",
            "fsync=on",
            "-c",
            "synchronous_commit=on",
            "-c",
            "logging_collector=off",
        ]
        if self.pin:
            argv = ["taskset", "-c", str(SERVER_CPU), *argv]
        self._log = self.log_path.open("wb")
        if self.user is not None:
            os.chown(self.log_path, self.user[0], self.user[1])
        self.proc = subprocess.Popen(
            argv,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.root,
            preexec_fn=_die_with_parent,
            **self._popen_kw(),
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited {self.proc.returncode}: {self.log_tail()}")
            done = subprocess.run(
                [str(self.bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"], timeout=10
            )
            if done.returncode == 0:
                log(
                    f"postgres ready on :{self.port} (pid {self.proc.pid}, {self.version}, "
                    f"as {self.user[2] if self.user else 'self'}) in {time.perf_counter() - t0:.1f}s"
                )
                return
            time.sleep(0.1)
        raise RuntimeError(f"postgres not ready after 60s: {self.log_tail()}")

    def log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-2000:]
        return ""

    def cpu(self) -> float:
        return _proc_children_cpu(self.proc.pid) if self.proc else 0.0

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # fast shutdown
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGQUIT)  # immediate shutdown
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
        if self._log is not None:
            self._log.close()
        shutil.rmtree(self.root, ignore_errors=True)
        log(f"postgres stopped, {self.root} removed")


SCHEMA = """
DROP TABLE IF EXISTS jobs;
CREATE TABLE jobs (
    id           bigserial PRIMARY KEY,
    payload      jsonb       NOT NULL,
    locked_until timestamptz NOT NULL DEFAULT '-infinity',
    attempts     int         NOT NULL DEFAULT 0,
    max_attempts int         NOT NULL DEFAULT 5,
    claimed_by   text,
    enqueued_at  timestamptz NOT NULL DEFAULT now()
);
"""
FILL_SQL = "INSERT INTO jobs (payload) SELECT unnest($1::jsonb[])"
CLAIM_SQL = """
UPDATE jobs j
   SET locked_until = now() + make_interval(secs => $3),
       attempts     = j.attempts + 1,
       claimed_by   = $2
 WHERE j.id IN (
       SELECT id FROM jobs
        WHERE locked_until <= now() AND attempts < max_attempts
        ORDER BY id
          FOR UPDATE SKIP LOCKED
        LIMIT $1)
RETURNING j.id, j.payload, j.attempts
"""
ACK_SQL = "DELETE FROM jobs WHERE id = ANY($1::bigint[]) AND claimed_by = $2"
WAL_STATS_SQL = "SELECT wal_sync, wal_bytes::bigint AS wal_bytes FROM pg_stat_wal"


class PgQueue:
    def __init__(self, cluster: PgCluster) -> None:
        self.cluster = cluster

    async def settings(self) -> dict[str, str]:
        conn = (await self.connect(1))[0]
        try:
            names = (
                "fsync",
                "synchronous_commit",
                "wal_sync_method",
                "full_page_writes",
                "shared_buffers",
                "commit_delay",
                "max_connections",
                "autovacuum",
            )
            return {n: await conn.fetchval(f"SHOW {n}") for n in names}
        finally:
            await conn.close()

    async def connect(self, n: int) -> list[Any]:
        import asyncpg

        return list(
            await asyncio.gather(
                *(
                    asyncpg.connect(
                        host="127.0.0.1",
                        port=self.cluster.port,
                        user=PgCluster.DB_USER,
                        database="postgres",
                        statement_cache_size=100,
                    )
                    for _ in range(n)
                )
            )
        )

    def fns(self, conns: list[Any], prefix: str, lease_s: float) -> tuple[ClaimFn, AckFn]:
        async def claim(i: int, m: int) -> list[int]:
            rows = await conns[i].fetch(CLAIM_SQL, m, f"{prefix}{i}", lease_s)
            return [r[0] for r in rows]

        async def ack(i: int, ids: list[int]) -> tuple[int, int]:
            status = await conns[i].execute(ACK_SQL, ids, f"{prefix}{i}")
            n = int(status.split()[-1])
            return n, len(ids) - n

        return claim, ack

    async def run_case(self, case: Case, plan: Plan) -> dict[str, Any]:
        problems: list[str] = []
        admin = (await self.connect(1))[0]
        try:
            await admin.execute(SCHEMA)
            t0 = time.perf_counter()
            for start in range(0, plan.jobs, plan.fill_batch):
                n = min(plan.fill_batch, plan.jobs - start)
                await admin.execute(FILL_SQL, [orjson.dumps(make_data(start + j)).decode() for j in range(n)])
            fill_s = time.perf_counter() - t0
            await admin.execute("VACUUM ANALYZE jobs")
            filled = await admin.fetchval("SELECT count(*) FROM jobs")
            if filled != plan.jobs:
                problems.append(f"pg {case_key(case)}: {filled} rows after filling {plan.jobs}")
            conns = await self.connect(case[0])
            seen: set[int] = set()
            wal0 = await admin.fetchrow(WAL_STATS_SQL)
            try:
                claim, ack = self.fns(conns, "w", plan.lease_ms / 1000)
                r, summary = await measured_drain(self.cluster.cpu, claim, ack, case, plan, seen)
            finally:
                await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)
            wal1 = await admin.fetchrow(WAL_STATS_SQL)
            # WAL flushes (fsyncs) per job during the drain: < 2 means commits were grouped.
            syncs = wal1["wal_sync"] - wal0["wal_sync"]
            summary["wal_syncs"] = syncs
            summary["wal_syncs_per_job"] = round(syncs / r.acked, 3) if r.acked else None
            summary["wal_mb"] = round((wal1["wal_bytes"] - wal0["wal_bytes"]) / 1e6, 1)
            cleanup = {"acked": 0, "duplicates": 0, "skipped": 0, "errors": 0, "seconds": 0.0}
            if await admin.fetchval("SELECT count(*) FROM jobs"):
                cconns = await self.connect(CLEANUP_WORKERS)
                try:
                    claim, ack = self.fns(cconns, "c", plan.lease_ms / 1000)
                    cr = await drain(
                        claim, ack, CLEANUP_WORKERS, CLEANUP_MAX, CLEANUP_CAP_S, 4 * plan.jobs, seen
                    )
                finally:
                    await asyncio.gather(*(c.close() for c in cconns), return_exceptions=True)
                cleanup = {
                    "acked": cr.acked,
                    "duplicates": cr.duplicates,
                    "skipped": cr.skipped,
                    "errors": cr.errors,
                    "seconds": round(cr.elapsed_s, 2),
                }
                if cr.first_error:
                    cleanup["first_error"] = cr.first_error
            left = await admin.fetchval("SELECT count(*) FROM jobs")
        finally:
            await admin.close()
        total = r.acked + cleanup["acked"]
        verify = {"count_after": left, "acked_total": total, "jobs_filled": plan.jobs}
        k = case_key(case)
        if left != 0:
            problems.append(f"pg {k}: {left} rows left after the drain")
        if total != plan.jobs:
            problems.append(f"pg {k}: acked {total} jobs in all, filled {plan.jobs}")
        if r.duplicates or cleanup["duplicates"]:
            problems.append(f"pg {k}: {r.duplicates + cleanup['duplicates']} ids delivered twice")
        if r.skipped or cleanup["skipped"]:
            problems.append(f"pg {k}: {r.skipped + cleanup['skipped']} acked ids not deleted")
        if r.errors or cleanup["errors"]:
            problems.append(f"pg {k}: errors: {r.first_error or cleanup.get('first_error')}")
        summary.update(
            fill_s=round(fill_s, 2),
            cleanup=cleanup,
            verify=verify,
            problems=problems,
            load_avg_1m=round(os.getloadavg()[0], 2),
        )
        return summary


# --------------------------------------------------------------------------------------------
# benchmark


def topics_config(durability: str, plan: Plan, jitter: int = 0) -> dict[str, Any]:
    cfg: dict[str, Any] = {"type": "queue", "durability": durability, "lease_ms": plan.lease_ms}
    if jitter:
        cfg["claim_jitter_ms"] = jitter
    return cfg


async def benchmark(plan: Plan, topics: Server, pg: PgCluster | None) -> dict[str, Any]:
    tq = TopicsQueue(topics)
    out: dict[str, Any] = {"topics": {}, "topics_jitter": {}, "pg": {}}
    headline_t: list[dict[str, Any]] = []
    headline_p: list[dict[str, Any]] = []
    hk = case_key(plan.headline)

    for dur in plan.durabilities:
        out["topics"][dur] = {}
        for case in plan.topics_cases:
            q = f"q-{dur}-{case_key(case)}"
            s = await tq.run_case(q, topics_config(dur, plan), case, plan)
            log_case("topics", f"{dur} {case_key(case)}", s)
            out["topics"][dur][case_key(case)] = s
            if dur == "fsync" and case == plan.headline:
                headline_t.append(s)
    for dur in plan.jitter_durabilities:
        q = f"q-{dur}-{hk}-j{plan.jitter_ms}"
        s = await tq.run_case(q, topics_config(dur, plan, plan.jitter_ms), plan.headline, plan)
        log_case("topics", f"{dur} {hk} jitter {plan.jitter_ms}", s)
        out["topics_jitter"][dur] = {hk: s}

    if pg is not None:
        pq = PgQueue(pg)
        out["pg_settings"] = await pq.settings()
        for case in plan.pg_cases:
            s = await pq.run_case(case, plan)
            log_case("pg", case_key(case), s)
            out["pg"][case_key(case)] = s
            if case == plan.headline:
                headline_p.append(s)
        # Extra repetitions of the headline case, alternating the two systems.
        for rep in range(1, plan.headline_reps):
            s = await tq.run_case(f"q-fsync-{hk}-rep{rep}", topics_config("fsync", plan), plan.headline, plan)
            log_case("topics", f"fsync {hk} rep {rep + 1}", s)
            headline_t.append(s)
            s = await pq.run_case(plan.headline, plan)
            log_case("pg", f"{hk} rep {rep + 1}", s)
            headline_p.append(s)

    out["headline"] = headline(plan, headline_t, headline_p)
    out["server_rss_mb_at_end"] = {"topics": rss_mb(topics.pid)}
    return out


def _med(runs: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in runs if r.get(key) is not None]
    return round(statistics.median(vals), 3) if vals else None


def headline(plan: Plan, t: list[dict[str, Any]], p: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("jobs_per_s", "claim_p50_ms", "claim_p99_ms", "fairness_cv", "server_cpu_us_per_job")
    h: dict[str, Any] = {
        "case": case_key(plan.headline),
        "reps": len(t),
        "topics_fsync": {k: _med(t, k) for k in keys} | {"jobs_per_s_by_rep": [r["jobs_per_s"] for r in t]},
        "pg": {k: _med(p, k) for k in keys} | {"jobs_per_s_by_rep": [r["jobs_per_s"] for r in p]},
    }
    tj, pj = h["topics_fsync"]["jobs_per_s"], h["pg"]["jobs_per_s"]
    ratio = round(tj / pj, 2) if tj and pj else None
    tc, pc = h["topics_fsync"]["server_cpu_us_per_job"], h["pg"]["server_cpu_us_per_job"]
    # Server CPU per job (PostgreSQL / topics): the noise-robust view of the same comparison,
    # i.e. the throughput ratio if both were CPU-bound on their one core.
    h["cpu_per_job_ratio_pg_over_topics"] = round(pc / tc, 2) if tc and pc else None
    h["target"] = {
        "description": "fsync topics queue jobs/s >= 3x the PostgreSQL SKIP LOCKED queue at "
        "16 workers x max 16 (medians)",
        "ratio": ratio,
        "threshold": 3.0,
        "pass": ratio is not None and ratio >= 3.0,
    }
    return h


def collect_problems(result: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    for dur in result.get("topics", {}).values():
        for s in dur.values():
            problems += s["problems"]
    for dur in result.get("topics_jitter", {}).values():
        for s in dur.values():
            problems += s["problems"]
    for s in result.get("pg", {}).values():
        problems += s["problems"]
    return problems


def print_summary(result: dict[str, Any]) -> None:
    def p(line: str) -> None:
        print(line, file=sys.stderr)

    p("")
    p(f"{'system':8s} {'case':18s} {'jobs/s':>9s} {'claim p50':>9s} {'p99 ms':>8s} {'cv':>6s} {'us/job':>7s}")
    rows: list[tuple[str, str, dict[str, Any]]] = []
    for dur, cases in result.get("topics", {}).items():
        rows += [("topics", f"{dur} {k}", s) for k, s in cases.items()]
    for dur, cases in result.get("topics_jitter", {}).items():
        rows += [("topics", f"{dur} {k} j{result['plan']['jitter_ms']}", s) for k, s in cases.items()]
    rows += [("pg", k, s) for k, s in result.get("pg", {}).items()]
    for sysname, label, s in rows:
        p(
            f"{sysname:8s} {label:18s} {s['jobs_per_s']:9.0f} {s['claim_p50_ms'] or 0:9.3f} "
            f"{s['claim_p99_ms'] or 0:8.2f} {s['fairness_cv']:6.3f} {s['server_cpu_us_per_job'] or 0:7.0f}"
            + ("  (capped)" if s["time_capped"] else "")
        )
    h = result.get("headline")
    if h and h["target"]["ratio"] is not None:
        t = h["target"]
        p(
            f"\nTARGET {'PASS' if t['pass'] else 'FAIL'}: fsync topics {h['topics_fsync']['jobs_per_s']} "
            f"jobs/s vs PostgreSQL {h['pg']['jobs_per_s']} jobs/s at {h['case']} "
            f"(median of {h['reps']}): ratio {t['ratio']} (need >= {t['threshold']})"
        )
    for prob in result.get("problems", []):
        p(f"PROBLEM: {prob}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 10k jobs, a subset, < 60 s")
    parser.add_argument("--out", type=Path, help="also write the JSON result to this file")
    parser.add_argument("--no-pin", action="store_true", help="do not pin servers/client to separate CPUs")
    parser.add_argument("--no-pg", action="store_true", help="skip the PostgreSQL comparison")
    args = parser.parse_args(argv)

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind, so servers get stopped
    plan = QUICK if args.quick else FULL
    pin = not args.no_pin and can_pin()
    if pin:
        os.sched_setaffinity(0, {CLIENT_CPU})
    started = time.time()
    import uvloop

    result: dict[str, Any] = {
        "benchmark": "topics queue_bench",
        "mode": "quick" if args.quick else "full",
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "machine": machine_facts(pin),
        "client": "aiohttp ClientSession + TCPConnector(limit=workers) and asyncpg (one connection "
        "per worker), on uvloop, one process",
        "plan": {**plan.__dict__, "record_data_bytes": data_size()},
    }
    pg: PgCluster | None = None
    try:
        with (
            tempfile.TemporaryDirectory(prefix="topics-qbench-") as tmp,
            asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
        ):
            workdir = Path(tmp)
            if not args.no_pg:
                pg = PgCluster(pin)
                pg.start()
                import asyncpg

                result["postgres"] = {
                    "version": pg.version,
                    "bindir": str(pg.bindir),
                    "installed_by_this_run": pg.installed_now,
                    "os_user": pg.user[2] if pg.user else None,
                    "settings": "fsync=on synchronous_commit=on (defaults), max_connections=200, "
                    "otherwise initdb defaults; pinned like the topics server",
                    "asyncpg": asyncpg.__version__,
                }
            with servers([lambda: topics_server(pin, workdir)]) as (topics,):
                result.update(runner.run(benchmark(plan, topics, pg)))
    finally:
        if pg is not None:
            pg.stop()
    result["problems"] = collect_problems(result)
    emit_result(result, started, args.out)
    print_summary(result)
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
