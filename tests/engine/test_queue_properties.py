"""Model-based property test for the §10 lease lifecycle.

A hypothesis state machine drives one greedy queue (``max_deliveries`` 3 with a dead-letter
topic) through random produces, claims, acks / nacks / extends (duplicates, foreign nodes,
unknown seqs, current or stale ``lease_ids``), record deletes and ManualClock advances, while an
independent model tracks each job: ready, leased (node, lease_id, deadline) or delayed (due),
with its delivery counter. Time rules come from the contract: a lease is expired iff
``now > deadline``; a nack delay is over iff ``now >= now_at_nack + delay_ms``.

Checked on every step:
  * claim: results ascending, fresh ``lease_ids``, ``deadline = now + lease_ms``,
    ``deliveries = previous + 1``; a claim takes ``max`` jobs — at most the room left under
    ``max_in_flight`` in the capped variant — unless it drains everything claimable; jobs
    already delivered go before fresh ones, fresh ones in seq order; only jobs delivered
    ``max_deliveries`` times are dead-lettered, and those are never delivered;
  * ack / nack / extend: ``done`` is exactly the requested seqs the node holds (first
    occurrence; token matching when ``lease_ids`` are given), ``skipped`` the rest, in order;
  * the ``queue`` counters (with the health: delayed jobs, the oldest claimable job's age, the
    nodes holding leases) and ``count`` equal the model's after every step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from topics_engine import Engine, ManualClock

from .conftest import T0, fields
from .queue_helpers import queues_for

MAX_DELIVERIES = 3
NODES = ["a", "b", "c"]


@dataclass
class Job:
    deliveries: int = 0
    node: str | None = None
    lease_id: str | None = None
    deadline: int = 0
    due: int | None = None
    old_ids: list[str] = field(default_factory=list)
    ts: int = 0


class QueueMachine(RuleBasedStateMachine):
    CAP = 0
    """The queue's ``max_in_flight`` (0: none)."""
    clock: ManualClock
    engine: Engine
    jobs: dict[int, Job]
    all_seqs: list[int]
    dead: list[int]

    @initialize()
    def setup(self) -> None:
        self.clock = ManualClock(T0)
        self.engine = Engine(self.clock)
        self.engine.put_topic(
            "q",
            {
                "type": "queue",
                "max_deliveries": MAX_DELIVERIES,
                "dead_letter": "dlq",
                "max_in_flight": self.CAP,
            },
        )
        self.jobs: dict[int, Job] = {}
        self.all_seqs: list[int] = []
        self.dead: list[int] = []

    # -- model time ----------------------------------------------------------------------------

    def now(self) -> int:
        return self.clock.now_ms()

    def held(self, job: Job) -> bool:
        return job.lease_id is not None and self.now() <= job.deadline

    def claimable(self, job: Job) -> bool:
        if job.lease_id is not None:
            return self.now() > job.deadline
        return job.due is None or self.now() >= job.due

    def delayed(self, job: Job) -> bool:
        return job.lease_id is None and job.due is not None and self.now() < job.due

    def health(self) -> dict[str, object]:
        """The model's queue health: delayed jobs, the oldest claimable job's age, and the
        nodes holding leases (most first, then by node)."""
        holding: dict[str, int] = {}
        for job in self.jobs.values():
            if self.held(job):
                assert job.node is not None
                holding[job.node] = holding.get(job.node, 0) + 1
        ready_ts = [job.ts for job in self.jobs.values() if self.claimable(job)]
        return {
            "delayed": sum(1 for job in self.jobs.values() if self.delayed(job)),
            "oldest_ready_age_ms": self.now() - min(ready_ts) if ready_ts else 0,
            "holders": sorted(holding.items(), key=lambda item: (-item[1], item[0])),
            "holders_truncated": False,
            "holder_count": len(holding),
        }

    def pick_seqs(self, picks: list[int]) -> list[int]:
        if not self.all_seqs:
            return [p + 1 for p in picks] or [1]
        return [self.all_seqs[p % len(self.all_seqs)] for p in picks] or [self.all_seqs[-1]]

    # -- rules ---------------------------------------------------------------------------------

    @rule(n=st.integers(1, 4))
    def produce(self, n: int) -> None:
        r = self.engine.append("q", [{"data": i} for i in range(n)])
        for seq in range(r.first_seq, r.last_seq + 1):
            self.jobs[seq] = Job(ts=self.now())
            self.all_seqs.append(seq)

    @rule(
        node=st.sampled_from(NODES), max_=st.integers(1, 6), lease_ms=st.sampled_from([None, 100, 250, 1000])
    )
    def claim(self, node: str, max_: int, lease_ms: int | None) -> None:
        before = {s: j for s, j in self.jobs.items() if self.claimable(j)}
        reclaim = {s for s, j in before.items() if j.deliveries > 0}
        fresh = sorted(s for s, j in before.items() if j.deliveries == 0)
        poison = {s for s in reclaim if self.jobs[s].deliveries >= MAX_DELIVERIES}
        limit = max_  # what the claim may take: max, or the room left under the cap
        if self.CAP:
            limit = min(max_, max(0, self.CAP - sum(1 for j in self.jobs.values() if self.held(j))))
        r = queues_for(self.engine).claim("q", node, max_, lease_ms)
        got = [j.seq for j in r.jobs]  # type: ignore[union-attr]
        assert got == sorted(got) and len(set(got)) == len(got)
        assert set(got) <= set(before), "claimed a job that was not claimable"
        assert not set(got) & poison, "delivered a job past max_deliveries"
        topic = self.engine.topic("q")
        assert topic is not None
        moved = {s for s in before if not topic.is_live(s)}
        assert moved <= poison, "dead-lettered a job below max_deliveries"
        if not limit:
            assert got == [] and not moved, "a claim without room took (or moved) jobs"
        elif len(got) < limit:
            assert set(got) | moved == set(before), "a short claim left claimable jobs behind"
        else:
            assert len(got) == limit
        fresh_got = [s for s in got if s in fresh]
        if fresh_got:
            assert reclaim <= set(got) | moved, "fresh jobs served before reclaimed ones"
            assert fresh_got == fresh[: len(fresh_got)], "fresh jobs not in seq order"
        effective = 30_000 if lease_ms is None else lease_ms
        for cj in r.jobs:  # type: ignore[union-attr]
            job = self.jobs[cj.seq]
            assert cj.lease.node == node
            assert cj.lease.deadline == self.now() + effective
            assert cj.lease.deliveries == job.deliveries + 1
            assert cj.lease.lease_id not in job.old_ids and cj.lease.lease_id != job.lease_id
            if job.lease_id is not None:
                job.old_ids.append(job.lease_id)
            job.deliveries += 1
            job.node, job.lease_id, job.deadline, job.due = node, cj.lease.lease_id, cj.lease.deadline, None
        for s in sorted(moved):
            del self.jobs[s]
            self.dead.append(s)

    def _expected(self, node: str, seqs: list[int], ids: list[str] | None) -> tuple[list[int], list[int]]:
        done: list[int] = []
        skipped: list[int] = []
        for i, s in enumerate(seqs):
            job = self.jobs.get(s)
            ok = (
                s not in done
                and job is not None
                and self.held(job)
                and job.node == node
                and (ids is None or ids[i] == job.lease_id)
            )
            (done if ok else skipped).append(s)
        return done, skipped

    def _ids(self, seqs: list[int], stale: list[bool]) -> list[str]:
        out = []
        for s, want_stale in zip(seqs, stale + [False] * len(seqs), strict=False):
            job = self.jobs.get(s)
            if job is None:
                out.append("lease_00")
            elif want_stale and job.old_ids:
                out.append(job.old_ids[-1])
            else:
                out.append(job.lease_id or "lease_ff")
        return out

    @rule(
        op=st.sampled_from(["ack", "nack", "extend"]),
        node=st.sampled_from(NODES),
        picks=st.lists(st.integers(0, 10_000), max_size=5),
        use_ids=st.booleans(),
        stale=st.lists(st.booleans(), max_size=5),
        delay=st.sampled_from([0, 0, 150, 400]),
        lease_ms=st.sampled_from([100, 300]),
    )
    def settle(
        self,
        op: str,
        node: str,
        picks: list[int],
        use_ids: bool,
        stale: list[bool],
        delay: int,
        lease_ms: int,
    ) -> None:
        seqs = self.pick_seqs(picks)
        ids = self._ids(seqs, stale) if use_ids else None
        done, skipped = self._expected(node, seqs, ids)
        q = queues_for(self.engine)
        if op == "ack":
            r = q.ack("q", node, seqs, ids)
        elif op == "nack":
            r = q.nack("q", node, seqs, delay, ids)
        else:
            r = q.extend("q", node, seqs, lease_ms, ids)
        assert (r.done, r.skipped) == (done, skipped), op
        for s in done:
            job = self.jobs[s]
            if op == "ack":
                del self.jobs[s]
            elif op == "nack":
                job.old_ids.append(job.lease_id or "")
                job.lease_id, job.node = None, None
                job.due = self.now() + delay if delay else None
            else:
                job.deadline = self.now() + lease_ms
        if op == "extend":
            assert r.deadlines == {str(s): self.now() + lease_ms for s in done}

    @rule(ms=st.sampled_from([0, 1, 50, 99, 100, 101, 150, 250, 1000]))
    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule(pick=st.integers(0, 10_000))
    def delete_before(self, pick: int) -> None:
        if not self.all_seqs:
            return
        bound = self.all_seqs[pick % len(self.all_seqs)]
        self.engine.delete_records("q", before_seq=bound)
        for s in [s for s in self.jobs if s < bound]:
            del self.jobs[s]

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def counters_match_the_model(self) -> None:
        if not hasattr(self, "engine"):
            return
        state = self.engine.topic_state("q", touch=False)
        ready = sum(1 for j in self.jobs.values() if self.claimable(j))
        in_flight = sum(1 for j in self.jobs.values() if self.held(j))
        delayed = sum(1 for j in self.jobs.values() if self.delayed(j))
        assert ready + in_flight + delayed == len(self.jobs)
        assert state.count == len(self.jobs)
        assert fields(state.queue) == {
            "ready": ready,
            "in_flight": in_flight,
            "dead_lettered": len(self.dead),
            **self.health(),
        }
        if self.dead:
            dlq = self.engine.diff("dlq", limit=1000, touch=False)
            assert dlq.count == len(self.dead)


QueueMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestQueueModel = QueueMachine.TestCase


class CappedQueueMachine(QueueMachine):
    """The same rules on a queue with ``max_in_flight``: a claim takes at most the room left."""

    CAP = 3


CappedQueueMachine.TestCase.settings = QueueMachine.TestCase.settings
TestCappedQueueModel = CappedQueueMachine.TestCase
