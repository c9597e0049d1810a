"""The single-request path in process: what ``TopicsApp.handle`` costs for one small request —
routing, admission, the handler, rendering and the request accounting — with no socket and no
load generator, so two checkouts can be compared on a noisy VM (best of several rounds; run
each checkout's own interpreter).

    .venv/bin/python -m bench.request_path               # prints one JSON object
    .venv/bin/python -m bench.request_path --access-log  # with TOPICS_ACCESS_LOG=true

Measures (µs per request, the best round; a fresh :class:`Request` each time, as a transport
makes one per request):

* ``append_1``: ``POST /v0/topics/t`` with one record of ~80 bytes, ``disk`` class, in memory
  (answered at once: no fsync to wait for);
* ``diff_1``: ``POST /v0/topics/t/diff`` reading one record;
* ``health``: ``GET /v0/health``.

``--access-log`` turns the access log on, its lines going to a file under ``/tmp`` through the
server's own logging set-up (as ``topics serve`` writes them to a redirected stderr).
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
import time
from collections.abc import Callable

from topics_engine import Engine, ManualClock
from topics_server.app import TopicsApp, build
from topics_server.request import Request
from topics_server.responses import Response
from topics_server.settings import load_settings

DATA = b'{"id":1,"kind":"click","page":"/home","ms":12.5,"user":"u-0001"}'
JSON = [(b"content-type", b"application/json")]


def best_us(fn: Callable[[], object], n: int, rounds: int = 7) -> float:
    """The fastest of ``rounds`` rounds of ``n`` calls, in µs per call (after a warm-up)."""
    for _ in range(n // 5):
        fn()
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - start) / n * 1e6)
    return best


def call(app: TopicsApp, method: str, path: str, body: bytes = b"") -> Callable[[], object]:
    def run() -> object:
        out = app.handle(Request(method, path, b"", JSON if body else [], body))
        assert isinstance(out, Response) and out.status < 300, out
        return out

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--access-log", action="store_true", help="with TOPICS_ACCESS_LOG=true")
    parser.add_argument("--rounds", type=int, default=15, help="rounds per measure (the best counts)")
    args = parser.parse_args()
    env = {"TOPICS_ACCESS_LOG": "true"} if args.access_log else {}
    settings = load_settings(env)
    if args.access_log:
        log_file = tempfile.NamedTemporaryFile("w", prefix="topics-access-", suffix=".log", delete=True)  # noqa: SIM115
        logging.basicConfig(stream=log_file, level=logging.INFO, force=True)
    app, _ = build(settings, Engine(ManualClock(1_700_000_000_000), settings.limits))
    app.ctx.ready = True
    app.ctx.engine.put_topic("t", {"cap_records": 1000})
    append = call(app, "POST", "/v0/topics/t", b'{"records":[{"data":' + DATA + b"}]}")
    append()
    diff = call(app, "POST", "/v0/topics/t/diff", b'{"from_seq":0,"limit":1}')
    print(
        json.dumps(
            {
                "access_log": args.access_log,
                "append_1_us": round(best_us(append, 20_000, args.rounds), 3),
                "diff_1_us": round(best_us(diff, 20_000, args.rounds), 3),
                "health_us": round(best_us(call(app, "GET", "/v0/health"), 20_000, args.rounds), 3),
            }
        )
    )


if __name__ == "__main__":
    main()
