#!/usr/bin/env python3
"""Crash loop: the long variant of tests/crash/test_crash_oracle.py.

    python bench/crash_loop.py [--cycles 30] [--seed 1] [--data-dir DIR] [--out summary.json]

Starts ``topics serve`` on a free loopback port over DIR (a fresh temporary directory unless
given), then repeats: concurrent writers on fsync, disk and ephemeral topics, a deleter on an
fsync and on a disk topic and a config mutator run for a random while; the server gets SIGKILL
(sometimes a second SIGKILL during its recovery); it restarts, and the recovered state is
checked against the model of every acked and in-flight operation (see bench/crash_harness.py
for the oracle). A final lifetime ends in SIGTERM and is checked with the clean-stop rules
(nothing acked lost, disk included; exit status 0).

Per-cycle progress goes to stderr, the JSON summary to stdout (and ``--out``): cycles, acked
writes, lost acked fsync writes, resurrected deletes, reused seqs, disk prefix violations, ...
— every violation count must be 0. Exit status 1 if any is not. The server is always killed on
exit; ``--time-budget`` bounds the loop.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.crash_harness import crash_loop, summary_json  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data-dir", type=Path, default=None, help="default: a fresh temporary directory")
    ap.add_argument("--min-run", type=float, default=0.3, help="min seconds of load before a kill")
    ap.add_argument("--max-run", type=float, default=2.0, help="max seconds of load before a kill")
    ap.add_argument("--time-budget", type=float, default=1800.0, help="stop starting new cycles after this")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="topics-crash-") as tmp:
        data_dir = args.data_dir or Path(tmp) / "data"
        summary = asyncio.run(
            crash_loop(
                data_dir,
                cycles=args.cycles,
                seed=args.seed,
                run_s=(args.min_run, args.max_run),
                time_budget_s=args.time_budget,
                log=sys.stderr,
            )
        )
        out = summary_json(summary)
        if not summary.ok():
            log = data_dir.parent / f"{data_dir.name}.server.log"
            print(f"server log: {log} (kept only with --data-dir)", file=sys.stderr)
    print(out)
    if args.out:
        args.out.write_text(out + "\n")
    return 0 if summary.ok() else 1


if __name__ == "__main__":
    sys.exit(main())
