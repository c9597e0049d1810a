#!/usr/bin/env python3
"""HTTP/2 over cleartext next to HTTP/1.1, one connection each, measured with h2load.

    python bench/h2c_bench.py [--requests N] [--rounds R] [--no-pin]

Needs ``h2load`` (Debian: ``apt-get install nghttp2-client``): one native load generator for
both protocols (``--h1`` for HTTP/1.1; an ``http://`` URI is h2c with prior knowledge otherwise).
Starts ``topics serve`` (a fresh data directory, the throttle off) pinned to CPU 0 and runs
h2load pinned to CPU 1 (``--no-pin``: neither).

Shapes, each over ONE connection: ``GET /v0/health`` and a 1-record append (``POST
/v0/topics/h2b``, ~100 B, durability ``disk``), sequential (``-m1``) and 16 in flight (``-m16``:
16 concurrent streams over HTTP/2, 16 pipelined requests over HTTP/1.1). Every round runs each
shape over HTTP/1.1 then HTTP/2 (after 500 warm-up requests); the figures are medians over the
rounds: requests/s (h2load's) and server CPU µs per request (from /proc: the steadier number).
JSON on stdout; exit status 1 if any request failed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOPICS = REPO / ".venv" / "bin" / "topics"
RECORD = json.dumps(
    {"records": [{"data": {"id": 12345, "kind": "order.created", "amount": 42.5, "tags": ["a", "b"]}}]}
)
SHAPES = [("health", "GET", "/v0/health"), ("append", "POST", "/v0/topics/h2b")]


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _h2load(
    url: str, method: str, h1: bool, requests: int, in_flight: int, body: Path, pin: bool
) -> dict[str, float]:
    cmd = ["taskset", "-c", "1"] if pin else []
    cmd += ["h2load", "-n", str(requests), "-c", "1", "-m", str(in_flight), "-t", "1"]
    if h1:
        cmd.append("--h1")
    if method == "POST":
        cmd += ["-d", str(body), "-H", "content-type: application/json"]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    rate = re.search(r"finished in [\d.]+m?s, ([\d.]+) req/s", out)
    done = re.search(
        r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored", out
    )
    codes = re.search(r"status codes: (\d+) 2xx", out)
    assert rate and done and codes, out
    return {
        "req_per_s": float(rate.group(1)),
        "ok": int(codes.group(1)),
        "failed": int(done.group(2)) + int(done.group(3)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-pin", action="store_true")
    args = parser.parse_args()
    if shutil.which("h2load") is None:
        sys.exit("h2load not found: apt-get install nghttp2-client")
    pin = not args.no_pin and (os.cpu_count() or 1) >= 2
    port = 18_400 + os.getpid() % 500
    with tempfile.TemporaryDirectory() as tmp:
        body = Path(tmp, "record.json")
        body.write_text(RECORD)
        env = {
            **os.environ,
            "TOPICS_PORT": str(port),
            "TOPICS_DATA_DIR": f"{tmp}/data",
            "TOPICS_THROTTLE": "false",
        }
        env["TOPICS_LOG_LEVEL"] = "warning"
        server = subprocess.Popen([*(["taskset", "-c", "0"] if pin else []), str(TOPICS), "serve"], env=env)
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(200):
                try:
                    if urllib.request.urlopen(f"{base}/readyz", timeout=1).status == 200:
                        break
                except OSError:
                    time.sleep(0.05)
            rows: dict[str, list[dict[str, float]]] = {}
            failed = 0
            for _ in range(args.rounds):
                for name, method, path in SHAPES:
                    for in_flight in (1, 16):
                        for proto in ("http/1.1", "h2c"):
                            h1 = proto == "http/1.1"
                            _h2load(base + path, method, h1, 500, in_flight, body, pin)  # warm-up
                            before = _cpu_s(server.pid)
                            result = _h2load(base + path, method, h1, args.requests, in_flight, body, pin)
                            result["server_cpu_us_per_req"] = (
                                (_cpu_s(server.pid) - before) * 1e6 / args.requests
                            )
                            failed += int(result["failed"])
                            rows.setdefault(f"{name} -m{in_flight} {proto}", []).append(result)
                            print(f"{name} -m{in_flight} {proto}: {result}", file=sys.stderr)
        finally:
            server.terminate()
            server.wait(15)
    summary = {
        key: {
            "req_per_s": round(statistics.median(r["req_per_s"] for r in runs)),
            "server_cpu_us_per_req": round(statistics.median(r["server_cpu_us_per_req"] for r in runs), 1),
            "rounds": len(runs),
        }
        for key, runs in rows.items()
    }
    print(json.dumps({"requests": args.requests, "pinned": pin, "results": summary}, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
