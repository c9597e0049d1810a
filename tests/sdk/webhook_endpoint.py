"""A local webhook receiver for the relay's tests: an aiohttp server in a thread of its own (so a
relay in the test's loop, in another thread or in a ``topics relay`` child process can reach
it), answering each delivery as scripted and recording what it got.

Routes (every one records the request):

- ``POST /hook``: the job's data says how to answer, ``{"answers": [A1, A2, …]}`` — ``A<n>`` for
  the n-th request carrying that ``webhook-id`` (the last one repeats; no ``answers``: 200).
  An answer is a status (``"500"``), a status with a ``Retry-After`` (``"429:1"``; ``"503:+2"``
  is an HTTP-date 2 s from now, ``"503:-60"`` one a minute ago) or ``"hang"`` (no answer until
  the endpoint stops);
- ``POST /fixed/{status}``: always that status;
- ``POST /redirect/{status}?to=URL``: that status with ``Location: URL``;
- ``POST /loop``: ``307`` to itself;
- ``POST /slow``: waits for :meth:`WebhookEndpoint.release_slow`, then 200.
"""

from __future__ import annotations

import asyncio
import email.utils
import threading
import time
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web


@dataclass(frozen=True)
class Received:
    """One request as the endpoint saw it: ``headers`` by lower-cased name (the last of a
    repeated one), ``header_list`` every line in order."""

    path: str
    headers: dict[str, str]
    header_list: list[tuple[str, str]]
    body: bytes
    answer: str

    @property
    def data(self) -> Any:
        return orjson.loads(self.body)


class WebhookEndpoint:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = 0
        self.received: list[Received] = []
        self.arrived = threading.Event()
        """Set when a request arrives (the test clears it to wait for the next one)."""
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._slow: asyncio.Event | None = None

    def url(self, path: str = "/hook") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def start(self) -> WebhookEndpoint:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def release_slow(self) -> None:
        """Lets every request to ``/slow`` (waiting or to come) have its 200."""
        self._loop.call_soon_threadsafe(lambda: self._slow.set() if self._slow else None)

    def requests(self, path: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.received if path is None or r.path == path]

    async def _start(self) -> None:
        self._stopping = asyncio.Event()
        self._slow = asyncio.Event()
        app = web.Application()
        app.router.add_post("/hook", self._hook)
        app.router.add_post("/fixed/{status}", self._fixed)
        app.router.add_post("/redirect/{status}", self._redirect)
        app.router.add_post("/slow", self._slow_answer)
        app.router.add_post("/loop", self._loop_answer)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _stop(self) -> None:
        """Lets the waiting handlers answer, closes the server, then ends what is left."""
        assert self._stopping is not None and self._slow is not None and self._runner is not None
        self._stopping.set()
        self._slow.set()
        await self._runner.cleanup()
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    def _record(self, request: web.Request, body: bytes, answer: str) -> None:
        lines = [(k.lower(), v) for k, v in request.headers.items()]
        with self._lock:
            self.received.append(Received(request.path, dict(lines), lines, body, answer))
        self.arrived.set()

    async def _hook(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        msg_id = request.headers.get("webhook-id", "")
        with self._lock:
            seen = sum(
                1 for r in self.received if r.path == "/hook" and r.headers.get("webhook-id") == msg_id
            )
        data = orjson.loads(body)
        answers = data.get("answers", ["200"]) if isinstance(data, dict) else ["200"]
        answer = answers[min(seen, len(answers) - 1)]
        self._record(request, body, answer)
        return await self._answer(answer)

    async def _answer(self, answer: str) -> web.StreamResponse:
        if answer == "hang":
            assert self._stopping is not None
            await self._stopping.wait()
            return web.Response(status=200)
        status, _, retry_after = answer.partition(":")
        headers = {}
        if retry_after.startswith(("+", "-")):
            headers["Retry-After"] = email.utils.formatdate(time.time() + float(retry_after), usegmt=True)
        elif retry_after:
            headers["Retry-After"] = retry_after
        return web.Response(status=int(status), headers=headers, text="answer " + answer)

    async def _fixed(self, request: web.Request) -> web.StreamResponse:
        status = request.match_info["status"]
        self._record(request, await request.read(), status)
        return web.Response(status=int(status))

    async def _redirect(self, request: web.Request) -> web.StreamResponse:
        status = request.match_info["status"]
        self._record(request, await request.read(), status)
        return web.Response(status=int(status), headers={"Location": request.query["to"]})

    async def _loop_answer(self, request: web.Request) -> web.StreamResponse:
        self._record(request, await request.read(), "307")
        return web.Response(status=307, headers={"Location": "/loop"})

    async def _slow_answer(self, request: web.Request) -> web.StreamResponse:
        self._record(request, await request.read(), "slow")
        assert self._slow is not None
        await self._slow.wait()
        return web.Response(status=200)
