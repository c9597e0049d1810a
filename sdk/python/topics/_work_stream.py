"""The Worker's push connection: ``GET /v0/topics/{queue}/work`` (push), an SSE stream on which
the server keeps ``max`` jobs leased to the connection and pushes a replacement per ack.

This module opens one stream and reads it; the worker loop (:mod:`topics._session`) decides what
to do when it ends — reconnect (:class:`Reconnect`), poll instead (:class:`Fallback`) or stop (any
other :class:`~topics.TopicsError`). It sends with the :class:`~topics._transport.AsyncSender` it
is given and knows neither the client nor the session.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn

import httpx
import orjson

from . import _generated as g
from ._generated import work_stream_path
from ._sse import WATCHDOG_SLACK_S, SSEParser
from ._transport import AsyncSender, error_of, retryable
from .errors import TopicsError
from .models import Job

log = logging.getLogger("topics.worker")

STREAM_HEARTBEAT_MS = 15_000
"""The server's heartbeat on ``/work``: a stream silent for twice this (plus slack) is dead."""


class Reconnect(Exception):
    """The /work stream ended or failed in a way that reconnecting may cure."""


class Fallback(Exception):
    """The server has no /work stream: poll instead."""


def refusal(err: TopicsError, *, may_fall_back: bool) -> Exception:
    """What a non-200 answer to the stream's GET means: :class:`Fallback` when the server has no
    such route (``404 not_found``, ``405``, ``406``) and ``may_fall_back``; :class:`Reconnect` when
    waiting cures it (429, 503); else ``err`` itself."""
    missing = err.status in (405, 406) or (err.status == 404 and err.code == "not_found")
    if missing and may_fall_back:
        return Fallback()
    if retryable(err):
        return Reconnect(str(err))
    return err


@contextlib.asynccontextmanager
async def open_work_stream(
    sender: AsyncSender, queue: str, params: dict[str, Any], *, may_fall_back: bool
) -> AsyncIterator[httpx.Response]:
    """The /work stream of ``queue`` (``params``: ``node``, ``max``, ``lease_ms``) once it answered
    200; otherwise raises what :func:`refusal` makes of the answer. Leaving the block closes the
    connection, and the server then releases every job it pushed on it."""
    settings = sender.settings
    headers = dict(settings.headers(), accept="text/event-stream")
    timeout = httpx.Timeout(settings.timeout, read=2 * STREAM_HEARTBEAT_MS / 1000 + WATCHDOG_SLACK_S)
    url = settings.url + work_stream_path(queue)
    stream = sender.http.stream("GET", url, params=params, headers=headers, timeout=timeout)
    async with stream as rsp:
        if rsp.status_code != 200:
            await rsp.aread()
            raise refusal(error_of(rsp), may_fall_back=may_fall_back)
        yield rsp


async def consume_work_stream(
    rsp: httpx.Response, parser: SSEParser, queue: str, node: str, accept: Callable[[Job], None]
) -> NoReturn:
    """Hands every job the stream pushes to ``accept``, in order, until the stream ends or sends
    a terminal ``event: error``: then raises :class:`Reconnect`. A ``429`` error frame is the
    server pacing the stream, not its end. ``parser`` keeps the stream's ``retry:`` for the
    caller's reconnect delay."""
    async for line in rsp.aiter_lines():
        event = parser.feed(line)
        if event is None:
            continue
        if event.event == "job":
            accept(g.jobs(queue, [orjson.loads(event.data)])[0])
        elif event.event == "error":
            body = _json(event.data)
            if body.get("code") == 429:
                log.info("worker %s: the server paces the /work stream: %s", node, body)
                continue
            raise Reconnect(f"stream error {body}")
    raise Reconnect("the server ended the stream")


def _json(data: str) -> dict[str, Any]:
    """``data`` as a JSON object; ``{}`` when it is not one."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {}
    return body if isinstance(body, dict) else {}
