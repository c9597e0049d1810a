"""A minimal Starlette app: the floor the topics server is compared against.

Same request shapes as topics, same bytes on the wire, none of the work: no connexion routing,
no spec validation, no engine. Each POST reads the body, parses it with orjson, and answers
with a JSON response of the same shape and size as topics would:

* ``POST /v0/topics/{topic}`` — counts ``records`` and returns an append result (with
  ``seqs`` and a ``performance`` block, like topics' default response). Records are not stored.
* ``POST /v0/topics/{topic}/diff`` — returns ``limit`` records (default 256, at most 1000)
  after ``from_seq`` by joining pre-encoded record bytes, the way topics' diff does.
* ``GET /health`` — readiness for the benchmark.

Serve it like topics is served (single worker, uvloop, httptools)::

    python -m uvicorn bench.bare_app:app --loop uvloop --http httptools --port 8001 \
        --log-level warning --no-access-log --no-server-header
"""

from __future__ import annotations

import time

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.payloads import encoded_record

_POOL_SIZE = 4096
_TS = 1_795_000_000_000
# Pre-encoded records, as topics keeps them; a diff joins a window of them.
_POOL = [encoded_record(seq, _TS) for seq in range(1, _POOL_SIZE + 1)]
_PERF = {"server_total_ms": 0.0, "wal_append_ms": 0.0, "fsync_ms": 0.0, "throttle_wait_ms": 0.0}
_head = 0


def _json(payload: bytes, status: int = 200) -> Response:
    return Response(payload, status_code=status, media_type="application/json")


async def health(request: Request) -> Response:
    return _json(b'{"status":"ok"}')


async def append(request: Request) -> Response:
    global _head
    started = time.perf_counter()
    body = orjson.loads(await request.body())
    count = len(body["records"])
    first = _head + 1
    _head += count
    perf = dict(_PERF, server_total_ms=round((time.perf_counter() - started) * 1000, 3))
    return _json(
        orjson.dumps(
            {
                "topic": request.path_params["topic"],
                "first_seq": first,
                "last_seq": _head,
                "seqs": list(range(first, _head + 1)),
                "head_seq": _head,
                "count": count,
                "created": False,
                "deduped": False,
                "performance": perf,
            }
        )
    )


async def diff(request: Request) -> Response:
    started = time.perf_counter()
    body = orjson.loads(await request.body())
    from_seq = int(body.get("from_seq", 0))
    limit = int(body.get("limit", 0)) or 256
    limit = min(limit, 1000)
    start = from_seq % (_POOL_SIZE - limit)
    records = _POOL[start : start + limit]
    next_from = from_seq + len(records)
    head = 1_000_000
    total_ms = round((time.perf_counter() - started) * 1000, 3)
    perf = dict(_PERF, server_total_ms=total_ms, records_scanned=limit)
    return _json(
        b"".join(
            (
                b'{"topic":',
                orjson.dumps(request.path_params["topic"]),
                b',"records":[',
                b",".join(records),
                b"]",
                b',"next_from_seq":%d,"head_seq":%d,"earliest_seq":1,"caught_up":false,"tombstone":null,"lag":%d'
                % (next_from, head, head - next_from),
                b',"performance":',
                orjson.dumps(perf),
                b"}",
            )
        )
    )


app = Starlette(
    routes=[
        Route("/health", health, methods=["GET"]),
        Route("/v0/topics/{topic}", append, methods=["POST"]),
        Route("/v0/topics/{topic}/diff", diff, methods=["POST"]),
    ]
)
