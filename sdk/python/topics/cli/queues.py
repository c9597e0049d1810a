"""``topics queue stats|leases|claim|ack|nack`` and ``topics dlq ls|redrive``.

``claim`` prints one job per line (``seq``, ``lease_id``, ``deadline``, ``deliveries``, ``ts``,
``tag``/``node``/``meta`` when present, ``data``). ``ack``/``nack`` take seqs as arguments or,
without any, read stdin: one seq or one ``claim`` output line per line — a job line carries its
``lease_id``, which fences the ack (a job whose lease moved on is skipped, not completed)::

    topics queue claim jobs --node w1 --max 10 > batch.jsonl
    topics queue ack jobs --node w1 < batch.jsonl
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from itertools import islice
from typing import Any

from ..client import Client
from ..errors import NotAQueue
from ..models import Job
from .errors import BadInput, UsageError
from .lines import decode_line
from .output import Output, record_dict

JOB_COLUMNS = ("seq", "lease_id", "deadline", "deliveries", "tag", "data")
DLQ_COLUMNS = ("seq", "from", "deliveries", "src_seq", "tag", "data")
LEASE_COLUMNS = ("seq", "node", "lease_id", "deadline", "deliveries")


def cmd_queue_stats(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``queue stats QUEUE``: ready, in flight, dead-lettered, delayed, the oldest ready job's
    age, the nodes holding leases (``{node: in_flight}``), and the jobs log's count/head."""
    state = client.topic(args.queue, touch=False)
    if state.queue is None:
        raise NotAQueue(409, "not_a_queue", f"topic {args.queue!r} is a {state.type}, not a queue")
    out.item(
        {
            "topic": state.topic,
            "ready": state.queue.ready,
            "in_flight": state.queue.in_flight,
            "dead_lettered": state.queue.dead_lettered,
            "delayed": state.queue.delayed,
            "oldest_ready_age_ms": state.queue.oldest_ready_age_ms,
            "holders": {h.node: h.in_flight for h in state.queue.holders},
            "holders_truncated": state.queue.holders_truncated,
            "count": state.count,
            "head_seq": state.head_seq,
        }
    )
    return 0


def cmd_queue_leases(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``queue leases QUEUE [--node N]``: who holds which job, ascending by seq."""
    out.rows(client.leases(args.queue, node=args.node), LEASE_COLUMNS, empty="(no leases)")
    return 0


def job_dict(job: Job) -> dict[str, Any]:
    """A claimed job for output: the lease fields, then the record (``data`` last)."""
    lease = {"lease_id": job.lease_id, "deadline": job.deadline, "deliveries": job.deliveries}
    return {"seq": job.seq, **lease, **record_dict(job)}  # (record_dict's seq keeps its place)


def cmd_queue_claim(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``queue claim QUEUE --node N [--max M] [--lease-ms MS]``."""
    jobs = client.claim(args.queue, args.node, max=args.max, lease_ms=args.lease_ms)
    out.rows((job_dict(job) for job in jobs), JOB_COLUMNS, empty="(no jobs ready)")
    return 0


def _fenced(queue: str, seq: int, lease_id: str) -> Job:
    """A :class:`Job` standing for a claimed one: only ``seq`` and ``lease_id`` are sent."""
    return Job(topic=queue, seq=seq, data=None, lease_id=lease_id, deadline=0, deliveries=0, ts=0)


def jobs_from_lines(queue: str, lines: Iterable[str]) -> list[Job | int]:
    """Seqs (``42``) and ``claim`` output lines (objects with ``seq`` and ``lease_id``)."""
    jobs: list[Job | int] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        value = decode_line(number, line)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            jobs.append(value)
        elif isinstance(value, dict) and isinstance(value.get("seq"), int):
            lease = value.get("lease_id")
            jobs.append(_fenced(queue, value["seq"], lease) if isinstance(lease, str) else value["seq"])
        else:
            raise BadInput(f"stdin line {number}: expected a seq or a claimed job object")
    return jobs


def _jobs(args: argparse.Namespace) -> list[Job | int]:
    if args.seqs:
        return list(args.seqs)
    if sys.stdin.isatty():
        raise UsageError(f"queue {args.action}: give the seqs, or pipe jobs (claim's output) into stdin")
    jobs = jobs_from_lines(args.queue, sys.stdin)
    if not jobs:
        raise UsageError(f"queue {args.action}: no seqs on stdin")
    return jobs


def cmd_queue_ack(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``queue ack QUEUE --node N [SEQ…]``: ``topic``, ``acked``, ``skipped``, ``ready``,
    ``in_flight``; exit 1 when a job was not held (``skipped``), with a message on stderr."""
    result = client.ack(args.queue, args.node, _jobs(args))
    out.item(result)
    return _not_held(out, "acked", args, result.skipped)


def cmd_queue_nack(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``queue nack QUEUE --node N [--delay-ms MS] [SEQ…]``: as ``ack``, with ``nacked``."""
    result = client.nack(args.queue, args.node, _jobs(args), delay_ms=args.delay_ms)
    out.item(result)
    return _not_held(out, "nacked", args, result.skipped)


def _not_held(out: Output, verb: str, args: argparse.Namespace, skipped: list[int]) -> int:
    """Exit 1 naming the jobs the server skipped: not held by ``--node`` (never claimed, its
    lease expired or moved on — a fenced line's ``lease_id`` no longer matches —, or done)."""
    if not skipped:
        return 0
    shown = ", ".join(map(str, skipped[:20])) + (", …" if len(skipped) > 20 else "")
    noun = "job" if len(skipped) == 1 else "jobs"
    out.alarm(
        f"topics: not_held: {len(skipped)} {noun} not {verb} ({shown}): not held by node "
        f"{args.node!r} in {args.queue} (never claimed, lease expired or taken over, or done)"
    )
    return 1


def cmd_dlq_ls(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``dlq ls DLQ [--limit N]``: the dead-lettered jobs, oldest first, with where they came
    from (``meta.$dead_letter_from``) and how often they were delivered."""

    def rows() -> Iterable[dict[str, Any]]:
        for record in islice(client.read(args.dlq, include_meta=True, on_gap="skip"), args.limit):
            meta = record.meta or {}
            row: dict[str, Any] = {
                "seq": record.seq,
                "ts": record.ts,
                "from": meta.get("$dead_letter_from"),
                "deliveries": meta.get("$dead_letter_deliveries"),
                "src_seq": meta.get("$dead_letter_src_seq"),
            }
            if record.tag is not None:
                row["tag"] = record.tag
            row["data"] = record.data
            yield row

    out.rows(rows(), DLQ_COLUMNS, empty="(no dead-lettered jobs)")
    return 0


def cmd_dlq_redrive(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``dlq redrive DLQ [--to QUEUE] [--limit N] [--dry-run]``."""
    moved = client.redrive(args.dlq, to=args.to, limit=args.limit, dry_run=args.dry_run)
    out.item({"dlq": args.dlq, "to": args.to, "redriven": moved, "dry_run": args.dry_run})
    return 0
