"""The floor of a Python HTTP/1.1 server on this machine: what a single append costs when the
server does nothing but the HTTP and the JSON.

``topics serve`` runs its own HTTP/1.1 protocol over uvloop and httptools (``topics_server.http``).
This server keeps exactly that stack — uvloop's event loop, one ``asyncio.Protocol`` per
connection, httptools' parser, orjson — and drops everything else: no routing, no validation,
no engine, no WAL. Each request is parsed, its body (if any) decoded with orjson, and answered
in one write with a response of the same status, headers and size class as topics' append
answer (``{"topic", "first_seq", "last_seq", "seqs", "head_seq", "count", ...}``, seqs counted
per process). Records are not stored.

So a load generator that drives it exactly as it drives topics measures the best any server
built on this stack can do: peerbench's P2 (one connection, sequential 1-record appends) against
it, beside Redis in the same run, bounds the P2 ratio topics can reach without leaving Python's
event loop. Run it like topics (``TOPICS_HOST``, ``TOPICS_PORT``)::

    python -m bench.http_floor serve
    python -m bench.http_floor --peerbench-repo /tmp/floor-repo   # a checkout-shaped wrapper:
    TOPICS_REPO=/tmp/floor-repo ../shared/peerbench/run.sh p2 --reps 3

The wrapper directory holds only ``.venv/bin/topics``, which runs this module from this checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import sys
from pathlib import Path
from typing import cast

import httptools
import orjson
import uvloop

_PERFORMANCE = (
    b'"performance":{"server_total_ms":0.1,"wal_append_ms":0.0,"fsync_ms":0.0,"throttle_wait_ms":0.0}'
)


class SeqCounter:
    """The next seq of the one log every connection appends to (nothing is kept)."""

    def __init__(self) -> None:
        self.head = 0


class FloorProtocol(asyncio.Protocol):
    """One connection: httptools parses, each complete request is answered in one write."""

    def __init__(self, sequence: SeqCounter) -> None:
        self.sequence = sequence
        self.parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport | None = None
        self.url = b""
        self.body: list[bytes] = []

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            assert self.transport is not None
            self.transport.write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
            self.transport.close()

    def on_url(self, url: bytes) -> None:
        self.url = url

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        raw = b"".join(self.body)
        self.body.clear()
        count = len(orjson.loads(raw).get("records", ())) if raw else 0
        payload = self._answer(count)
        status = b"200 OK" if count or self.parser.get_method() != b"PUT" else b"201 Created"
        assert self.transport is not None
        self.transport.write(
            b"HTTP/1.1 "
            + status
            + b"\r\ncontent-type: application/json\r\ncontent-length: "
            + str(len(payload)).encode()
            + b"\r\n\r\n"
            + payload
        )

    def _answer(self, count: int) -> bytes:
        topic = self.url.rsplit(b"/", 1)[-1]
        if not count:
            return b'{"topic":"' + topic + b'","created":true,' + _PERFORMANCE + b"}"
        first = self.sequence.head + 1
        self.sequence.head += count
        last = self.sequence.head
        seqs = orjson.dumps(list(range(first, last + 1)))
        return (
            b'{"topic":"%s","first_seq":%d,"last_seq":%d,"seqs":%s,"head_seq":%d,"count":%d,'
            b'"created":false,"deduped":false,%s}' % (topic, first, last, seqs, last, count, _PERFORMANCE)
        )


async def serve(host: str, port: int) -> None:
    sequence = SeqCounter()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: FloorProtocol(sequence), host, port, backlog=1024)
    async with server:
        await server.serve_forever()


_WRAPPER_MARK = "# bench.http_floor wrapper"


def write_peerbench_repo(directory: Path) -> Path:
    """A directory peerbench accepts as ``TOPICS_REPO``: its ``.venv/bin/topics`` runs this
    module (from this checkout, with this interpreter). Refuses to replace a ``topics`` that is
    not such a wrapper (a real checkout's)."""
    checkout = Path(__file__).resolve().parent.parent
    script = directory / ".venv" / "bin" / "topics"
    if script.exists() and _WRAPPER_MARK not in script.read_text(errors="replace"):
        raise SystemExit(f"{script} exists and is not a floor wrapper: not replaced")
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(
        f"#!/bin/sh\n{_WRAPPER_MARK}\n"
        f'cd {shlex.quote(str(checkout))} && exec {shlex.quote(sys.executable)} -m bench.http_floor "$@"\n'
    )
    script.chmod(0o755)
    return script


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", choices=["serve"], help="run the server")
    parser.add_argument("--peerbench-repo", type=Path, help="write a wrapper checkout there")
    args = parser.parse_args(argv)
    if args.peerbench_repo is not None:
        print(write_peerbench_repo(args.peerbench_repo))
        return 0
    if args.command != "serve":
        parser.error("nothing to do: give `serve` or --peerbench-repo DIR")
    host = os.environ.get("TOPICS_HOST", "127.0.0.1")
    port = int(os.environ.get("TOPICS_PORT", "4000"))
    uvloop.run(serve(host, port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
