"""``topics worker MODULE:FUNCTION QUEUE``: a :class:`topics.Worker` on the command line, the way
``celery -A``, ``rq worker`` and ``arq`` start one — the handler named by its import path.

``MODULE`` is imported with the current directory first on ``sys.path`` (and every ``--path``
before it), as ``rq worker`` and ``celery -A`` do, so ``topics worker tasks:send_email emails``
finds ``./tasks.py``; ``FUNCTION`` may be dotted (``app:jobs.handle``). A coroutine function
runs as asyncio tasks, anything else callable in a pool of ``--concurrency`` threads (the
Worker's rules). The options mirror the Worker's arguments.

A start banner goes to stderr (queue, handler, concurrency, mode, node), then the Worker's
warnings (a failed job and its traceback; ``-v`` adds retries and breaker changes), and a
summary when it stops. SIGTERM or Ctrl-C stops gracefully: no more claims, running handlers
get ``--grace`` seconds to finish (their jobs are acked), the rest are released for
redelivery at once; a second signal releases the running ones too. Exit status:
:data:`EXIT_CODES`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from ..client import Client
from ..errors import NotAQueue
from ..worker import Backoff, CircuitBreaker, Worker, WorkerStats
from .errors import UsageError
from .output import Output

EXIT_INTERRUPTED = 130
EXIT_CODES = f"""\
exit status:
  0   stopped by SIGTERM/Ctrl-C (without --drain), or with --drain: the queue is empty
  1   the topics server answered an error (no such queue, not a queue, a bad API key) or
      could not be reached
  2   bad usage: the handler cannot be imported or is not callable
  {EXIT_INTERRUPTED} with --drain: stopped by SIGTERM/Ctrl-C before the queue was empty
"""


def import_object(spec: str, paths: list[str]) -> Any:
    """``module:attr`` (``attr`` may be dotted) imported with ``paths`` and the current
    directory first on ``sys.path``; a failure is a :class:`UsageError` saying what failed (a
    module that raises while imported also prints its traceback)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"expected MODULE:NAME (e.g. tasks:send_email), got {spec!r}")
    for path in reversed([*paths, os.getcwd()]):
        if path not in sys.path:
            sys.path.insert(0, path)
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise UsageError(f"cannot import {module_name!r}: {err}") from None
    except Exception as err:  # the module itself fails: its traceback, then the usage error
        traceback.print_exc(file=sys.stderr)
        raise UsageError(f"cannot import {module_name!r}: {type(err).__name__}: {err}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"{spec}: module {module_name!r} has no {attr!r}") from None
    return obj


def _backoff(args: argparse.Namespace) -> Backoff:
    base = args.backoff_ms
    limit = args.backoff_max_ms
    if args.backoff == "fixed":
        return Backoff.fixed(base if base is not None else 1000)
    if args.backoff == "linear":
        return Backoff.linear(base if base is not None else 1000, limit if limit is not None else 60_000)
    return Backoff.exponential(base if base is not None else 1000, limit if limit is not None else 60_000)


def build_worker(client: Client, args: argparse.Namespace) -> Worker:
    """The :class:`Worker` the arguments describe (usage errors as :class:`UsageError`)."""
    handler = import_object(args.handler, args.path or [])
    if not callable(handler):
        raise UsageError(f"{args.handler} is not callable (a {type(handler).__name__})")
    permanent = tuple(import_object(name, args.path or []) for name in args.permanent or [])
    for name, exc in zip(args.permanent or [], permanent, strict=True):
        if not (isinstance(exc, type) and issubclass(exc, BaseException)):
            raise UsageError(f"--permanent {name} is not an exception class")
    breaker = (
        CircuitBreaker(args.breaker_threshold, args.breaker_cooldown) if args.breaker_threshold else None
    )
    try:
        return Worker(
            client,
            args.queue,
            handler,
            node=args.node,
            concurrency=args.concurrency,
            lease_ms=args.lease_ms,
            backoff=_backoff(args),
            mode=args.mode,
            auto_extend=args.auto_extend,
            shutdown_grace_s=args.grace,
            permanent=permanent,
            rate_limit=args.rate_limit,
            circuit_breaker=breaker,
        )
    except (TypeError, ValueError) as err:
        raise UsageError(str(err)) from None


def banner(worker: Worker, args: argparse.Namespace) -> str:
    """``topics: worker tasks:send on emails (concurrency 4, mode auto, node h-1-ab12cd) …``."""
    parts = [f"concurrency {worker.concurrency}", f"mode {worker.mode}", f"node {worker.node}"]
    if worker.rate_limit is not None:
        parts.append(f"rate limit {worker.rate_limit:g}/s")
    breaker = worker.circuit_breaker
    if breaker is not None:
        parts.append(f"breaker {breaker.threshold} failures / {breaker.cooldown_s:g} s")
    until = "the queue is empty" if args.drain else "SIGTERM/Ctrl-C"
    return f"topics: worker {args.handler} on {worker.queue} ({', '.join(parts)}) until {until}"


def summary(stats: WorkerStats, queue: str, elapsed_s: float) -> str:
    return (
        f"topics: worker on {queue} stopped: {stats.processed} processed, {stats.failed} failed, "
        f"{stats.retried} retried, {stats.dead_lettered} dead-lettered, {stats.released} released, "
        f"{stats.lost} lost in {elapsed_s:.1f} s"
    )


def cmd_worker(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``worker MODULE:FUNCTION QUEUE [options]``."""
    worker = build_worker(client, args)
    state = client.topic(args.queue, touch=False)  # a missing queue fails here, at once
    if state.queue is None:
        raise NotAQueue(409, "not_a_queue", f"topic {args.queue!r} is a {state.type}, not a queue")
    out.notice(banner(worker, args))
    started = time.monotonic()
    with _logging(args.verbose), _stop_on_signals(worker) as received:
        try:
            stats = worker.drain(handle_signals=False) if args.drain else worker.run(handle_signals=False)
        except BaseException:
            out.notice(summary(worker.stats, args.queue, time.monotonic() - started))
            raise
    out.notice(summary(stats, args.queue, time.monotonic() - started))
    if args.drain and received:
        return EXIT_INTERRUPTED
    return 0


@contextlib.contextmanager
def _stop_on_signals(worker: Worker) -> Iterator[list[int]]:
    """SIGINT/SIGTERM stop the worker gracefully, a second one hurries it; each says so on
    stderr (in one ``os.write``: a signal handler may interrupt a write to ``sys.stderr``).
    Yields the signals received; the previous handlers are put back."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def on_signal(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        name = signal.Signals(signum).name
        if len(received) == 1:
            message = (
                f"topics: {name}: stopping: running jobs get up to {worker.shutdown_grace_s:g} s to "
                "finish, the rest are released (again: release them all now)"
            )
        else:
            message = f"topics: {name}: releasing the running jobs"
        with contextlib.suppress(OSError):
            os.write(2, f"{message}\n".encode())
        worker.stop()

    previous: dict[int, Callable[..., Any] | int | None] = {
        sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _logging(verbose: bool) -> Iterator[None]:
    """The SDK's logs (``topics.*``) on stderr while the worker runs: WARNING and up (a failed
    job with its traceback, a dead-letter move, the breaker opening), INFO with ``-v``."""
    logger = logging.getLogger("topics")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
