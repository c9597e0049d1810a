"""Crash oracle for ``topics serve``: concurrent writers and deleters, kill -9, restart, check.

Shared by the CI test (``tests/crash/test_crash_oracle.py``) and the long loop
(``bench/crash_loop.py``). Only the HTTP API and the ``topics serve`` command are used.

The model (spec §0.10 durability classes, §2 topics, §5 deletes, §8.2 readiness):

* Every append is recorded with its payloads and tags. An append is *acked* when a 2xx
  response was read; *in flight* when the request may have reached the server but no
  response was read (the oracle allows it to be applied or not); *not sent* when the
  connection could not even be opened.
* Each topic has at most one deleter, so its deletes are totally ordered. A delete only
  targets records whose seqs are all known when it is sent (a tag group whose appends are all
  acked, or ``before_seq`` at or below the contiguous acked watermark), so its effect is an
  exact set of seqs.
* Per topic, the engine writes append and delete frames to its WAL in processing order, so
  the state recovered after a crash must equal the state after some *prefix* of that order:
  all appends up to a seq cut ``A`` (seqs are dense within one server run) and the first ``j``
  deletes. Client-side ordering bounds the pair: delete ``i`` applied ⇒ every append acked
  before it was sent is applied (``A >= L_i``); delete ``i`` not applied ⇒ no append sent after
  it was acked is applied (``A < U_i``). The checker searches for a feasible ``(j, A)``.
* fsync: additionally every acked append and every acked delete must be applied
  (``A >= max acked seq``, ``j >= acked deletes``). Reported separately: lost acked writes
  (absent and not covered by any delete) and resurrected deletes (present although covered by
  an acked delete, or reappearing after having been verified gone).
* disk: only the prefix property (an acked tail may be lost on a crash; a clean SIGTERM stop
  must lose nothing, checked with the fsync rules).
* ephemeral: no record survives a restart, config survives.
* all classes: no seq is ever acked twice, and after a restart new seqs are greater than every
  seq acked or recovered before; the topic config acked by PUT survives.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

TOPICS = Path(sys.executable).with_name("topics")
INF = float("inf")
OK = (200, 201)
MIN_ACKED_WAIT_S = 120.0
"""How long a run waits past its duration for its minimum of acknowledged appends."""

# Violation kinds (keys of Summary.counts). All must stay 0.
KINDS = (
    "lost_acked_fsync_writes",
    "resurrected_deletes",
    "reused_seqs",
    "disk_prefix_violations",
    "fsync_prefix_violations",
    "ephemeral_survivors",
    "config_violations",
    "payload_mismatches",
    "phantom_records",
    "other_violations",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------------------------
# The server process
# --------------------------------------------------------------------------------------------


class ServerProcess:
    """One ``topics serve`` child on a free loopback port; always reap it with :meth:`kill`."""

    def __init__(
        self,
        data_dir: Path,
        log_path: Path,
        extra_env: dict[str, str] | None = None,
        argv: list[str] | None = None,
        nofile: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.log_path = log_path
        self.extra_env = extra_env or {}
        self.argv = argv or [str(TOPICS), "serve"]
        """The command that runs the server (``topics serve``; ``bench/soak.py --trace-dir``
        runs it under tracemalloc instead)."""
        self.nofile = nofile
        """The child's descriptor limit (``RLIMIT_NOFILE``, soft and hard), if not inherited."""
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, port: int | None = None) -> None:
        """Start the child on ``port`` (a restart on the port clients already use), else on a
        free one."""
        assert self.proc is None or self.proc.poll() is not None, "server already running"
        self.port = port or free_port()
        env = {
            **os.environ,
            **self.extra_env,
            "TOPICS_DATA_DIR": str(self.data_dir),
            "TOPICS_PORT": str(self.port),
            "TOPICS_HOST": "127.0.0.1",
        }
        env.pop("TOPICS_API_KEYS", None)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        try:
            log.write(f"\n===== start port={self.port} t={time.time():.3f}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(
                self.argv,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a ^C to the harness does not hit the child first
                preexec_fn=None if self.nofile is None else self._limit_nofile,
            )
        finally:
            log.close()

    def _limit_nofile(self) -> None:
        assert self.nofile is not None
        resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))

    async def wait_ready(self, timeout: float = 30.0) -> float:
        """Poll GET /v0/ready until 200; returns seconds waited. Raises if the child exits."""
        t0 = time.monotonic()
        async with httpx.AsyncClient(timeout=1.0) as c:
            while True:
                assert self.proc is not None
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited early rc={self.proc.returncode}: {self.log_tail()}")
                with contextlib.suppress(httpx.TransportError):
                    r = await c.get(f"{self.base}/v0/ready")
                    if r.status_code == 200:
                        return time.monotonic() - t0
                if time.monotonic() - t0 > timeout:
                    raise RuntimeError(f"server not ready after {timeout}s: {self.log_tail()}")
                await asyncio.sleep(0.01)

    def sigkill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def sigterm(self, timeout: float = 20.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.sigkill()
            return -999

    def kill(self) -> None:
        """Unconditional cleanup (finally blocks)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            with contextlib.suppress(Exception):
                self.proc.wait(timeout=10)

    def log_tail(self, n: int = 3000) -> str:
        try:
            return self.log_path.read_bytes()[-n:].decode(errors="replace")
        except OSError:
            return ""


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rec:
    data: Any
    tag: str | None


@dataclass
class AppendOp:
    uids: list[str]
    recs: list[Rec]
    sent_at: int = -1
    acked_at: int | None = None
    seqs: list[int] | None = None
    state: str = "pending"  # pending | acked | inflight | not_sent


@dataclass
class DeleteOp:
    kind: str  # "tag" | "before"
    tag: str | None
    before: int | None
    targets: frozenset[int]  # for tag deletes: every seq that carries the tag (all known at send)
    L: int  # max seq this topic had acked (or recovered) when the delete was sent
    sent_at: int = -1
    acked_at: int | None = None
    state: str = "pending"  # pending | acked | inflight

    def hits(self, s: int) -> bool:
        if self.kind == "before":
            assert self.before is not None
            return s < self.before
        return s in self.targets


@dataclass
class Dead:
    """The union of a prefix of deletes: ``s < before_max`` or ``s in tagged``."""

    before_max: int = 0
    tagged: set[int] = field(default_factory=set)

    def add(self, d: DeleteOp) -> None:
        if d.kind == "before":
            assert d.before is not None
            self.before_max = max(self.before_max, d.before)
        else:
            self.tagged |= d.targets

    def __contains__(self, s: int) -> bool:
        return s < self.before_max or s in self.tagged


class Topic:
    def __init__(self, name: str, durability: str, deletes: bool) -> None:
        self.name = name
        self.durability = durability
        self.with_deletes = deletes
        self.config: dict[str, Any] | None = None  # last acked config
        self.config_inflight: list[dict[str, Any]] = []
        # across cycles
        self.ever_acked: set[int] = set()
        self.gone_deleted: set[int] = set()  # verified absent after a delete covered them
        self.gone_lost: set[int] = set()  # verified absent, not covered by a delete (disk tail)
        self.baseline: dict[int, Rec] = {}
        self.start_head = 0
        self.floor = 0  # every new seq must be > floor
        self.before_ptr = 1
        self.new_cycle(0)

    def new_cycle(self, cycle: int) -> None:
        self.cycle = cycle
        self.appends: list[AppendOp] = []
        self.deletes: list[DeleteOp] = []
        self.acked: dict[int, Rec] = {}
        self.max_acked = self.start_head
        self.watermark = self.start_head
        self.live: dict[int, Rec] = dict(self.baseline)
        self.tag_index: dict[str, set[int]] = {}
        for s, r in self.baseline.items():
            if r.tag is not None:
                self.tag_index.setdefault(r.tag, set()).add(s)
        self.closed_groups: list[str] = sorted(self.tag_index)
        self.before_ptr = min(self.baseline, default=self.start_head + 1)
        self.deleter_stopped = False
        self.reused: list[int] = []


@dataclass
class Violation:
    kind: str
    topic: str
    cycle: int
    detail: str
    count: int = 1  # e.g. how many seqs were reused

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "topic": self.topic,
            "cycle": self.cycle,
            "count": self.count,
            "detail": self.detail,
        }


@dataclass
class Summary:
    seed: int
    cycles: int = 0
    acked_appends: int = 0
    acked_records: int = 0
    acked_deletes: int = 0
    inflight_appends_at_kill: int = 0
    inflight_deletes_at_kill: int = 0
    inflight_resolved_applied: int = 0
    disk_acked_records_lost: int = 0  # allowed on a crash (un-fsynced tail); informational
    disk_acked_deletes_lost: int = 0  # allowed on a crash; informational
    double_kills: int = 0
    triggered_kills: dict[str, int] = field(default_factory=dict)
    replay_s_max: float = 0.0
    elapsed_s: float = 0.0
    sigterm_exit_codes: list[int] = field(default_factory=list)
    head_regressions: list[str] = field(default_factory=list)
    unexpected_statuses: dict[str, int] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        c = dict.fromkeys(KINDS, 0)
        for v in self.violations:
            c[v.kind] = c.get(v.kind, 0) + v.count
        return c

    def ok(self) -> bool:
        return not self.violations

    def as_dict(self, max_details: int = 50) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "cycles": self.cycles,
            "elapsed_s": round(self.elapsed_s, 2),
            "acked_writes": self.acked_appends,
            "acked_records": self.acked_records,
            "acked_deletes": self.acked_deletes,
            "inflight_appends_at_kill": self.inflight_appends_at_kill,
            "inflight_deletes_at_kill": self.inflight_deletes_at_kill,
            "inflight_resolved_applied": self.inflight_resolved_applied,
            "disk_acked_records_lost_on_crash": self.disk_acked_records_lost,
            "disk_acked_deletes_lost_on_crash": self.disk_acked_deletes_lost,
            "double_kills": self.double_kills,
            "triggered_kills": self.triggered_kills,
            "replay_s_max": round(self.replay_s_max, 3),
            "sigterm_exit_codes": self.sigterm_exit_codes,
            "unexpected_statuses": self.unexpected_statuses,
            "head_regressions": self.head_regressions[:20],
            **self.counts(),
            "ok": self.ok(),
            "violations": [v.as_dict() for v in self.violations[:max_details]],
        }


def _first(xs: Iterable[int], n: int = 12) -> list[int]:
    return sorted(xs)[:n]


def _ranges(xs: Iterable[int], n: int = 8) -> str:
    out: list[list[int]] = []
    for x in sorted(set(xs)):
        if out and x == out[-1][1] + 1:
            out[-1][1] = x
        else:
            out.append([x, x])
    txt = ", ".join(f"{a}..{b}" if a != b else f"{a}" for a, b in out[:n])
    return txt + (f", ... ({len(out)} ranges)" if len(out) > n else "")


# --------------------------------------------------------------------------------------------
# Load: writers, deleters, config mutator
# --------------------------------------------------------------------------------------------


class Run:
    """All topics and the event clock; one instance drives many server lifetimes."""

    def __init__(self, seed: int, topics: list[Topic]) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.topics = topics
        self.clock = itertools.count()
        self.summary = Summary(seed=seed)
        self.stop = False
        self.signalled = False
        self.cycle = 0
        self.big_batch_p = 0.02
        self.config_log: list[tuple[int, str, int, str]] = []
        # event-triggered kills: SIGKILL in the same event-loop turn as a matching ack
        self.trigger: str | None = None  # "disk_ack" | "eph_big_ack" | "fsync_delete_ack" | ...
        self.armed = False
        self.server: ServerProcess | None = None
        self.killed = asyncio.Event()

    def _maybe_trigger(self, what: str) -> None:
        if self.armed and self.trigger == what and self.server is not None and self.server.proc is not None:
            self.armed = False
            os.kill(self.server.proc.pid, signal.SIGKILL)  # reaped by drive()
            self.stop = True
            self.summary.triggered_kills[what] = self.summary.triggered_kills.get(what, 0) + 1
            self.killed.set()

    def violate(self, kind: str, t: Topic, detail: str, count: int = 1) -> None:
        self.summary.violations.append(Violation(kind, t.name, self.cycle, detail, count))

    def flush_reused(self) -> None:
        for t in self.topics:
            if t.reused:
                self.violate(
                    "reused_seqs",
                    t,
                    f"{len(t.reused)} seqs acked again in lifetime {self.cycle} ({t.durability}): "
                    f"{_ranges(t.reused)}; before this lifetime the highest acked/recovered seq was "
                    f"{t.floor} and the server restarted with head_seq {t.start_head}",
                    count=len(t.reused),
                )
                t.reused = []

    def _status(self, what: str, code: int | str) -> None:
        key = f"{what}:{code}"
        self.summary.unexpected_statuses[key] = self.summary.unexpected_statuses.get(key, 0) + 1

    # ---- topic configs ----------------------------------------------------------------------

    async def put_configs(self, client: httpx.AsyncClient) -> None:
        for t in self.topics:
            body = {"durability": t.durability, "priority": self.rng.randint(1, 100)}
            r = await client.put(f"/v0/topics/{t.name}", json=body)
            assert r.status_code in OK, r.text
            t.config = r.json()["config"]

    async def config_mutator(self, client: httpx.AsyncClient, rng: random.Random) -> None:
        while not self.stop:
            await asyncio.sleep(rng.uniform(0.05, 0.25))
            if self.stop:
                return
            t = rng.choice(self.topics)
            assert t.config is not None
            prio = rng.randint(1, 100)
            cand = {**t.config, "priority": prio}
            t.config_inflight = [cand]
            self.config_log.append((self.cycle, t.name, prio, "sent"))
            try:
                r = await client.put(
                    f"/v0/topics/{t.name}", json={"durability": t.durability, "priority": prio}
                )
            except httpx.ConnectError:
                t.config_inflight = []
                return
            except httpx.TransportError:
                return
            if r.status_code in OK:
                t.config = r.json()["config"]
                t.config_inflight = []
                self.config_log.append((self.cycle, t.name, prio, "acked"))
                self._maybe_trigger("config_ack")
            else:
                if not (self.stop or self.signalled):
                    self._status("put", r.status_code)
                return

    # ---- appends --------------------------------------------------------------------------------

    def _on_ack(self, t: Topic, op: AppendOp, body: dict[str, Any]) -> None:
        seqs = body.get("seqs") or list(range(body["first_seq"], body["last_seq"] + 1))
        op.seqs = list(seqs)
        op.acked_at = next(self.clock)
        op.state = "acked"
        self.summary.acked_appends += 1
        self.summary.acked_records += len(op.seqs)
        if len(op.seqs) != len(op.recs) or op.seqs != list(range(op.seqs[0], op.seqs[0] + len(op.recs))):
            self.violate(
                "other_violations", t, f"append acked non-contiguous seqs {op.seqs} for {len(op.recs)}"
            )
        for s, rec in zip(op.seqs, op.recs, strict=False):
            if s in t.ever_acked or s <= t.floor:
                t.reused.append(s)  # reported once per lifetime by flush_reused()
            t.ever_acked.add(s)
            t.acked[s] = rec
            t.live[s] = rec
            if rec.tag is not None:
                t.tag_index.setdefault(rec.tag, set()).add(s)
        t.max_acked = max(t.max_acked, op.seqs[-1])
        while t.watermark + 1 in t.acked:
            t.watermark += 1
        if t.durability == "ephemeral" and len(op.recs) > 1000:
            self._maybe_trigger("eph_big_ack")
        else:
            self._maybe_trigger(f"{t.durability}_ack")

    async def writer(self, client: httpx.AsyncClient, t: Topic, wname: str, rng: random.Random) -> None:
        opi = 0
        group: str | None = None
        group_left = 0
        group_ok = True
        while not self.stop:
            if group_left == 0:
                if group is not None and group_ok:
                    t.closed_groups.append(group)
                group = f"c{self.cycle}.{wname}.g{opi}"
                group_left = rng.randint(1, 4)
                group_ok = True
            n = rng.choice((1, 1, 1, 2, 3, 5))
            big = t.durability == "ephemeral" and rng.random() < self.big_batch_p
            if big:  # bigger than an ephemeral seq-reservation block half (spec: no seq reuse)
                n = rng.randint(2100, 5000)
            uids = [f"{t.name}/{self.cycle}/{wname}/{opi}/{k}" for k in range(n)]
            recs = []
            for k, uid in enumerate(uids):
                pad_len = 0 if big else rng.choice((0, 8, 40, 200, 200, 1500))
                if not big and rng.random() < 0.03:
                    pad_len = 9000
                data = {"id": uid, "k": k, "pad": "x" * pad_len, "f": rng.random()}
                recs.append(Rec(data, group if rng.random() < 0.9 else None))
            op = AppendOp(uids, recs)
            body: dict[str, Any] = {
                "records": [{"data": r.data, **({"tag": r.tag} if r.tag else {})} for r in recs],
                "idempotency_key": f"{self.seed}/{uids[0]}",
            }
            t.appends.append(op)
            op.sent_at = next(self.clock)
            opi += 1
            group_left -= 1
            try:
                r = await client.post(f"/v0/topics/{t.name}", json=body)
            except httpx.ConnectError:
                op.state = "not_sent"
                return
            except httpx.TransportError:
                op.state = "inflight"
                return
            if r.status_code in OK:
                self._on_ack(t, op, r.json())
                if r.json().get("deduped"):
                    self.violate("other_violations", t, f"fresh idempotency key reported deduped: {uids[0]}")
            else:
                op.state = "inflight"  # conservatively: maybe applied
                group_ok = False
                if not (self.stop or self.signalled):
                    self._status("append", r.status_code)
                if r.status_code >= 500 or self.stop:
                    return
                await asyncio.sleep(0.01)

    # ---- deletes --------------------------------------------------------------------------------

    async def deleter(self, client: httpx.AsyncClient, t: Topic, rng: random.Random) -> None:
        while not self.stop:
            await asyncio.sleep(rng.uniform(0.005, 0.06))
            if self.stop:
                return
            use_tag = rng.random() < 0.6 and t.closed_groups
            if use_tag:
                tag = t.closed_groups.pop(rng.randrange(len(t.closed_groups)))
                targets = frozenset(t.tag_index.get(tag, ()))
                d = DeleteOp("tag", tag, None, targets, max(t.max_acked, t.start_head))
                body: dict[str, Any] = {"match": tag if rng.random() < 0.5 else ["tag", "Eq", tag]}
                expect = sum(1 for s in targets if s in t.live)
            else:
                # every seq below `hi` is known: baseline (<= start_head) or acked this cycle
                hi = t.watermark + 1
                n = min(hi, t.before_ptr + rng.randint(1, 40))
                if n <= t.before_ptr:
                    continue
                d = DeleteOp("before", None, n, frozenset(), max(t.max_acked, t.start_head))
                body = {"before_seq": n}
                expect = sum(1 for s in range(t.before_ptr, n) if s in t.live)
            t.deletes.append(d)
            d.sent_at = next(self.clock)
            try:
                r = await client.post(f"/v0/topics/{t.name}/delete", json=body)
            except httpx.ConnectError:
                t.deletes.pop()
                return
            except httpx.TransportError:
                d.state = "inflight"
                return
            if r.status_code not in OK:
                d.state = "inflight"
                if not (self.stop or self.signalled):
                    self._status("delete", r.status_code)
                return  # keep the deletes a clean sequence: stop at the first unknown one
            d.acked_at = next(self.clock)
            d.state = "acked"
            self.summary.acked_deletes += 1
            self._maybe_trigger(f"{t.durability}_delete_ack")
            got = r.json().get("deleted")
            if got != expect:
                self.violate(
                    "other_violations", t, f"delete {body} reported deleted={got}, model expects {expect}"
                )
            if d.kind == "before":
                assert d.before is not None
                for s in range(t.before_ptr, d.before):
                    t.live.pop(s, None)
                t.before_ptr = d.before
            else:
                for s in d.targets:
                    t.live.pop(s, None)

    # ---- reading back ---------------------------------------------------------------------------

    async def read_all(self, client: httpx.AsyncClient, t: Topic) -> tuple[dict[int, Rec], dict[str, Any]]:
        recs: dict[int, Rec] = {}
        cursor = 0
        last = 0
        for _ in range(100_000):
            r = await client.post(
                f"/v0/topics/{t.name}/diff",
                json={"from_seq": cursor, "limit": 1000, "include_tags": True},
            )
            assert r.status_code == 200, r.text
            body = r.json()
            for rec in body["records"]:
                s = rec["$seq"]
                if s <= last:
                    self.violate(
                        "other_violations", t, f"diff returned seq {s} after {last} (dup/out of order)"
                    )
                last = max(last, s)
                recs[s] = Rec(rec.get("data"), rec.get("$tag"))
            if body.get("tombstone"):
                self.violate("other_violations", t, f"unexpected tombstone {body['tombstone']}")
            nxt = body["next_from_seq"]
            if body.get("caught_up") or not body["records"] or nxt <= cursor:
                break
            cursor = nxt
        st = await client.get(f"/v0/topics/{t.name}", params={"touch": "false"})
        assert st.status_code == 200, st.text
        return recs, st.json()

    # ---- one server lifetime --------------------------------------------------------------------

    async def drive(self, server: ServerProcess, run_s: float, kill: str, min_acked: int = 0) -> None:
        """Run the load for ``run_s`` seconds, then ``kill`` ∈ {"sigkill", "sigterm", "quiesce"};
        with ``min_acked``, on (up to :data:`MIN_ACKED_WAIT_S` more) until that many appends were
        acknowledged in all (not for an ack-triggered kill).

        ``quiesce`` stops the load and waits for every request to finish first (nothing in flight),
        then leaves the server running (the caller stops it).
        """
        self.stop = False
        self.server = server
        self.killed = asyncio.Event()
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
        async with httpx.AsyncClient(base_url=server.base, timeout=15.0, limits=limits) as client:
            tasks = []
            for t in self.topics:
                nw = 3 if t.durability in ("fsync", "disk") else 2
                for w in range(nw):
                    rng = random.Random(self.rng.random())
                    tasks.append(asyncio.create_task(self.writer(client, t, f"w{w}", rng)))
                if t.with_deletes:
                    rng = random.Random(self.rng.random())
                    tasks.append(asyncio.create_task(self.deleter(client, t, rng)))
            tasks.append(asyncio.create_task(self.config_mutator(client, random.Random(self.rng.random()))))
            try:
                if kill == "sigkill" and self.trigger:
                    # warm up, then arm: the next matching ack kills the server at once
                    await asyncio.sleep(run_s)
                    self.armed = True
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self.killed.wait(), timeout=3.0)
                    self.armed = False
                    if not self.killed.is_set():
                        self.summary.triggered_kills["timeout"] = (
                            self.summary.triggered_kills.get("timeout", 0) + 1
                        )
                    server.sigkill()
                    self.stop = True
                else:
                    await asyncio.sleep(run_s)
                    give_up = time.monotonic() + MIN_ACKED_WAIT_S
                    while self.summary.acked_appends < min_acked and time.monotonic() < give_up:
                        await asyncio.sleep(0.05)
                if kill == "sigkill":
                    server.sigkill()
                    self.stop = True
                elif kill == "sigterm":
                    # the load keeps running into the signal; in-flight requests race the drain
                    self.signalled = True
                    rc = await asyncio.to_thread(server.sigterm)
                    self.summary.sigterm_exit_codes.append(rc)
                    self.stop = True
                else:
                    self.stop = True
                done, pending = await asyncio.wait(tasks, timeout=30)
                for p in pending:
                    p.cancel()
                for d in done:
                    if d.exception() is not None:
                        raise d.exception()  # type: ignore[misc]
            finally:
                self.stop = True
                self.signalled = False
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        self.flush_reused()
        for t in self.topics:
            for op in t.appends:
                if op.state == "pending":
                    op.state = "inflight"
            for d in t.deletes:
                if d.state == "pending":
                    d.state = "inflight"

    # ---- the oracle -----------------------------------------------------------------------------

    def verify(self, t: Topic, got: dict[int, Rec], state: dict[str, Any], clean: bool) -> None:
        """Check the recovered state of one topic against the model of the finished lifetime."""
        head = int(state["head_seq"])
        cfg = state.get("config") or {}
        # config: the last acked PUT, or an in-flight one
        allowed = [t.config, *t.config_inflight]
        if cfg not in allowed:
            diff = {
                k: (cfg.get(k), (t.config or {}).get(k))
                for k in set(cfg) | set(t.config or {})
                if cfg.get(k) != (t.config or {}).get(k)
            }
            hist = [f"{c}:{p}:{st}" for (c, n, p, st) in self.config_log if n == t.name][-8:]
            self.violate(
                "config_violations",
                t,
                f"config after restart differs (got, acked): {diff}; "
                f"PUT history (lifetime:priority:state) {hist}",
            )
        else:
            t.config = cfg  # an in-flight PUT may have landed: it is the acked state from now on
        all_acked_max = max(t.ever_acked, default=0)
        inflight = [op for op in t.appends if op.state == "inflight"]
        self.summary.inflight_appends_at_kill += len(inflight)
        self.summary.inflight_deletes_at_kill += sum(1 for d in t.deletes if d.state == "inflight")

        if t.durability == "ephemeral":
            if got:
                self.violate(
                    "ephemeral_survivors", t, f"{len(got)} records survived restart, seqs {_first(got)}"
                )
            if head < all_acked_max:
                # not itself a violation; a reuse will be caught when writing resumes
                self._note_head_regression(t, head, all_acked_max)
            self._advance(t, {}, head, dead_all=Dead())
            return

        # 1. identify every recovered record
        uid_index = {uid: (op, k) for op in inflight for k, uid in enumerate(op.uids)}
        known: dict[int, Rec] = dict(t.acked)
        for s, rec in got.items():
            if s <= t.start_head:
                b = t.baseline.get(s)
                if b is None:
                    kind = "resurrected_deletes" if s in t.gone_deleted else "phantom_records"
                    self.violate(kind, t, f"seq {s} reappeared (verified gone earlier): {str(rec.data)[:80]}")
                elif b != rec:
                    self.violate(
                        "payload_mismatches", t, f"seq {s}: {str(rec.data)[:80]} != {str(b.data)[:80]}"
                    )
                continue
            if s in t.acked:
                if t.acked[s] != rec:
                    self.violate(
                        "payload_mismatches",
                        t,
                        f"seq {s}: got {str(rec.data)[:80]} acked {str(t.acked[s].data)[:80]}",
                    )
                continue
            uid = rec.data.get("id") if isinstance(rec.data, dict) else None
            hit = uid_index.get(uid) if isinstance(uid, str) else None
            if hit is None:
                self.violate("phantom_records", t, f"seq {s} not written by anyone: {str(rec.data)[:80]}")
                continue
            op, k = hit
            if op.recs[k] != rec:
                self.violate(
                    "payload_mismatches", t, f"seq {s} in-flight record altered: {str(rec.data)[:80]}"
                )
            base = s - k
            if op.seqs is None:
                op.seqs = list(range(base, base + len(op.recs)))
                self.summary.inflight_resolved_applied += 1
                for kk, ss in enumerate(op.seqs):
                    if ss in t.acked:
                        self.violate("reused_seqs", t, f"in-flight record got seq {ss} that was also acked")
                    known.setdefault(ss, op.recs[kk])
            elif op.seqs[k] != s:
                self.violate("other_violations", t, f"in-flight batch not contiguous at seq {s}")

        # 2. delete effects and client-side ordering bounds
        dels = [d for d in t.deletes if d.state in ("acked", "inflight")]
        n_acked_del = sum(1 for d in dels if d.state == "acked")
        known_ops = [(op.sent_at, op.seqs[0]) for op in t.appends if op.seqs]
        upper_by_del: list[float] = []
        for d in dels:
            if d.acked_at is None:
                upper_by_del.append(INF)
            else:
                later = [s0 for (sent, s0) in known_ops if sent > d.acked_at]
                upper_by_del.append(min(later, default=INF))
        dead_all = Dead()
        for d in dels:
            dead_all.add(d)
        dead_acked = Dead()
        for d in dels[:n_acked_del]:
            dead_acked.add(d)

        must_apply = clean or t.durability == "fsync"
        max_got = max(got, default=0)

        # 3. fsync/clean-stop classes: direct categories
        if must_apply:
            lost = [s for s in itertools.chain(t.baseline, t.acked) if s not in got and s not in dead_all]
            if lost:
                kind = "lost_acked_fsync_writes" if t.durability == "fsync" else "other_violations"
                what = "lost acked records" + (
                    "" if t.durability == "fsync" else f" after clean stop ({t.durability})"
                )
                self.violate(kind, t, f"{what}: {len(lost)}, seqs {_first(lost)}", count=len(lost))
            res = [s for s in got if s in dead_acked]
            if res:
                self.violate(
                    "resurrected_deletes" if t.durability == "fsync" or clean else "other_violations",
                    t,
                    f"records covered by acked deletes are back: {len(res)}, seqs {_first(res)}"
                    f" (deletes: {self._describe_dels(dels, res)})",
                    count=len(res),
                )
            if head < all_acked_max:
                self.violate("other_violations", t, f"head_seq {head} < max acked seq {all_acked_max}")
        elif t.durability == "disk":
            lost = [s for s in t.acked if s not in got and s not in dead_all]
            self.summary.disk_acked_records_lost += len(lost)

        # 4. prefix search
        feasible: tuple[int, int] | None = None
        best: tuple[int, int, list[int], list[int], int, float] | None = None
        j_min = n_acked_del if must_apply else 0
        dead_prefix = [Dead()]
        for d in dels:
            nd = Dead(dead_prefix[-1].before_max, set(dead_prefix[-1].tagged))
            nd.add(d)
            dead_prefix.append(nd)
        for j in range(len(dels), j_min - 1, -1):
            dead = dead_prefix[j]
            lower = max(
                [t.start_head, max_got] + [d.L for d in dels[:j]] + ([t.max_acked] if must_apply else [])
            )
            upper = min(upper_by_del[j:], default=INF)
            unexpected = [s for s in got if s in dead]
            missing = [s for s in t.baseline if s not in dead and s not in got]
            missing += [s for s in range(t.start_head + 1, lower + 1) if s not in dead and s not in got]
            if lower < upper and not unexpected and not missing:
                feasible = (j, lower)
                break
            score = len(unexpected) + len(missing) + (0 if lower < upper else 1)
            if best is None or score < best[0]:
                best = (score, j, unexpected, missing, lower, upper)
        if feasible is None:
            assert best is not None
            _, j, unexpected, missing, lower, upper = best
            kind = "fsync_prefix_violations" if t.durability == "fsync" else "disk_prefix_violations"
            if clean and t.durability != "fsync":
                kind = "other_violations"
            self.violate(
                kind,
                t,
                f"recovered state is not the state after any prefix of the op sequence; closest: "
                f"first {j}/{len(dels)} deletes (acked {n_acked_del}), append cut {lower} "
                f"(must be < {upper}); missing {len(missing)} {_first(missing)}; "
                f"present-but-deleted {len(unexpected)} {_first(unexpected)}; "
                f"start_head {t.start_head}, max acked {t.max_acked}, max recovered {max_got}, head {head}",
            )
        elif t.durability == "disk" and not clean:
            self.summary.disk_acked_deletes_lost += max(0, n_acked_del - feasible[0])

        # 5. state agrees with the records
        if state.get("count") != len(got):
            self.violate(
                "other_violations", t, f"state count {state.get('count')} != {len(got)} records read"
            )
        exp_earliest = min(got) if got else head + 1
        if state.get("earliest_seq") != exp_earliest:
            self.violate("other_violations", t, f"earliest_seq {state.get('earliest_seq')} != {exp_earliest}")
        if head < max_got:
            self.violate("other_violations", t, f"head_seq {head} < max recovered seq {max_got}")
        if head < all_acked_max and not must_apply:
            self._note_head_regression(t, head, all_acked_max)
        self._advance(t, got, head, dead_all)

    def _describe_dels(self, dels: list[DeleteOp], seqs: list[int]) -> str:
        out = []
        for i, d in enumerate(dels):
            if any(d.hits(s) for s in seqs[:5]):
                what = f"before_seq={d.before}" if d.kind == "before" else f"tag={d.tag}"
                out.append(f"#{i} {what} {d.state}")
        return ", ".join(out[:5])

    def _note_head_regression(self, t: Topic, head: int, acked_max: int) -> None:
        self.summary.head_regressions.append(
            f"{t.name} cycle {self.cycle}: head {head} < max acked {acked_max}"
        )

    def _advance(self, t: Topic, got: dict[int, Rec], head: int, dead_all: Dead) -> None:
        for s in itertools.chain(t.baseline, t.acked, (s for op in t.appends if op.seqs for s in op.seqs)):
            if s not in got:
                (t.gone_deleted if s in dead_all else t.gone_lost).add(s)
        t.baseline = dict(got)
        t.start_head = head
        t.floor = max(t.floor, max(t.ever_acked, default=0), max(got, default=0))
        # seqs resolved from in-flight ops were handed out too: never again
        for op in t.appends:
            if op.state == "inflight" and op.seqs:
                t.ever_acked.update(op.seqs)
        t.config_inflight = []


# --------------------------------------------------------------------------------------------
# Drivers
# --------------------------------------------------------------------------------------------


TRIGGERS = ("disk_ack", "eph_big_ack", "fsync_ack", "fsync_delete_ack", "disk_delete_ack", "config_ack")


def default_topics(prefix: str = "crash") -> list[Topic]:
    return [
        Topic(f"{prefix}.fsync", "fsync", deletes=True),
        Topic(f"{prefix}.fsync2", "fsync", deletes=False),
        Topic(f"{prefix}.disk", "disk", deletes=True),
        Topic(f"{prefix}.disk2", "disk", deletes=False),
        Topic(f"{prefix}.eph", "ephemeral", deletes=False),
    ]


async def _verify_all(run: Run, server: ServerProcess, clean: bool) -> None:
    async with httpx.AsyncClient(base_url=server.base, timeout=30.0) as client:
        for t in run.topics:
            got, state = await run.read_all(client, t)
            run.verify(t, got, state, clean=clean)


def _next_lifetime(run: Run) -> None:
    run.cycle += 1
    for t in run.topics:
        t.new_cycle(run.cycle)


async def _sigterm_restart_verify(run: Run, server: ServerProcess, run_s: float, min_acked: int = 0) -> None:
    """Load running into a SIGTERM, restart, verify with the clean-stop rules (nothing acked lost)."""
    _next_lifetime(run)
    await run.drive(server, run_s, "sigterm", min_acked)
    rc = run.summary.sigterm_exit_codes[-1]
    if rc != 0:
        run.summary.violations.append(
            Violation("other_violations", "-", run.cycle, f"SIGTERM exit status {rc}")
        )
    server.start()
    replay = await server.wait_ready()
    run.summary.replay_s_max = max(run.summary.replay_s_max, replay)
    await _verify_all(run, server, clean=True)


async def crash_loop(
    data_dir: Path,
    cycles: int,
    seed: int,
    run_s: tuple[float, float] = (0.3, 1.5),
    time_budget_s: float = 600.0,
    log: Any = None,
    trigger_p: float = 0.4,
    triggers: tuple[str, ...] | None = None,
    topics: list[Topic] | None = None,
    big_batch_p: float = 0.02,
    double_kill_p: float = 0.25,
    min_acked_appends: int = 0,
) -> Summary:
    """``cycles`` × (write concurrently, SIGKILL at a random moment, restart, verify).

    Then one more lifetime on the same data dir ending in a SIGTERM (clean-stop rules), and a
    short final load so the seq floor after that restart is exercised too.

    ``min_acked_appends``: more cycles run (past ``cycles``, within ``time_budget_s``) until that
    many appends were acknowledged, so a slow machine checks as much acknowledged data as a fast
    one rather than less (a test's non-vacuity bound then holds on any machine).
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    run = Run(seed, topics or default_topics())
    run.big_batch_p = big_batch_p
    server = ServerProcess(data_dir, data_dir.parent / f"{data_dir.name}.server.log")
    t0 = time.monotonic()
    try:
        server.start()
        await server.wait_ready()
        async with httpx.AsyncClient(base_url=server.base, timeout=15.0) as client:
            await run.put_configs(client)
        while run.cycle < cycles or run.summary.acked_appends < min_acked_appends:
            if time.monotonic() - t0 > time_budget_s:
                break
            _next_lifetime(run)
            n_before = len(run.summary.violations)
            # a few kills land right after the restart, most somewhere in the middle of the load;
            # some are triggered by an ack (the kill lands in the same event-loop turn)
            dur = run.rng.uniform(0.0, 0.08) if run.rng.random() < 0.15 else run.rng.uniform(*run_s)
            run.trigger = run.rng.choice(triggers or TRIGGERS) if run.rng.random() < trigger_p else None
            await run.drive(server, dur, "sigkill")
            # sometimes a second crash during recovery, before anything new was acked
            if run.rng.random() < double_kill_p:
                server.start()
                await asyncio.sleep(run.rng.uniform(0.0, 0.15))
                server.sigkill()
                run.summary.double_kills += 1
            server.start()
            replay = await server.wait_ready()
            run.summary.replay_s_max = max(run.summary.replay_s_max, replay)
            await _verify_all(run, server, clean=False)
            run.summary.cycles = run.cycle
            if log is not None:
                new = run.summary.violations[n_before:]
                print(
                    f"cycle {run.cycle}: ran {dur:.2f}s (kill on {run.trigger or 'timer'}), "
                    f"acked appends {run.summary.acked_appends}, "
                    f"deletes {run.summary.acked_deletes}, replay {replay * 1000:.0f} ms, "
                    f"violations +{len(new)}" + "".join(f"\n  {v.kind} {v.topic}: {v.detail}" for v in new),
                    file=log,
                    flush=True,
                )
        run.trigger = None
        await _sigterm_restart_verify(run, server, run.rng.uniform(*run_s))
        _next_lifetime(run)
        await run.drive(server, 0.2, "quiesce")
    finally:
        server.kill()
        run.summary.elapsed_s = time.monotonic() - t0
    return run.summary


async def clean_stop(data_dir: Path, seed: int, run_s: float = 1.0, min_acked_appends: int = 0) -> Summary:
    """Fresh data dir: write concurrently into a SIGTERM, check the exit status, restart, verify
    (the load runs at least ``run_s``, and on until ``min_acked_appends`` appends were acked).

    After a clean stop nothing acked may be lost on any non-ephemeral class, disk included;
    then a short load checks that new seqs are above everything acked before.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    run = Run(seed, default_topics("clean"))
    server = ServerProcess(data_dir, data_dir.parent / f"{data_dir.name}.server.log")
    t0 = time.monotonic()
    try:
        server.start()
        await server.wait_ready()
        async with httpx.AsyncClient(base_url=server.base, timeout=15.0) as client:
            await run.put_configs(client)
        await _sigterm_restart_verify(run, server, run_s, min_acked_appends)
        run.summary.cycles = 1
        _next_lifetime(run)
        await run.drive(server, 0.2, "quiesce")
    finally:
        server.kill()
        run.summary.elapsed_s = time.monotonic() - t0
    return run.summary


def summary_json(s: Summary) -> str:
    return json.dumps(s.as_dict(), indent=2)
