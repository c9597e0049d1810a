"""``topics relay QUEUE --url URL``: a webhook relay (:class:`topics.Relay`) on the command line.

Each delivery attempt is one line on stdout: a JSON object (:meth:`topics.Delivery.as_dict`:
``seq``, ``attempt``, ``outcome``, ``status``, ``reason``, ``delay_ms``, ``elapsed_ms``, ``url``)
when stdout is not a terminal or with ``--json``, else a readable line. On a terminal's stderr a
status line keeps the counts (delivered, retried, dead-lettered, in flight) and the breaker's
state up to date. Logs go to stderr: warnings and errors (a dead-letter move, the breaker
opening, a ``410``, trouble reaching the topics server), and with ``-v`` each failure.

Ctrl-C (or SIGTERM) stops gracefully: nothing new is sent, deliveries in flight get ``--timeout``
(+1 s) to finish and are acked or nacked as they end, the jobs not started are released; a
second Ctrl-C releases the deliveries in flight too. A closed stdout (``topics relay … | head``)
stops it the same way, quietly. Exit status: :data:`EXIT_CODES`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from types import FrameType
from typing import TYPE_CHECKING, Any

from .._delivery import parse_header
from ..client import Client
from ..relay import Delivery, EndpointGone, Relay
from ..worker import CircuitBreaker, WorkerStats
from .errors import UsageError
from .output import Output

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

EXIT_OK = 0
EXIT_GONE = 3
EXIT_DEAD_LETTERED = 4
EXIT_INTERRUPTED = 130
EXIT_CODES = f"""\
exit status:
  0   stopped by Ctrl-C/SIGTERM (without --drain) or a closed stdout; with --drain: the
      queue is empty, every job delivered
  1   the topics server answered an error or could not be reached
  2   bad usage: a malformed URL, header or secret
  {EXIT_GONE}   the endpoint answered 410 Gone: that job was dead-lettered and the relay stopped
  {EXIT_DEAD_LETTERED}   with --drain: the queue is empty, but jobs were dead-lettered (topics dlq ls)
  {EXIT_INTERRUPTED} with --drain: stopped by Ctrl-C/SIGTERM before the queue was empty
"""
SECRET_ENV = "TOPICS_RELAY_SECRET"

log = logging.getLogger("topics.relay")


def header_arg(text: str) -> tuple[str, str]:
    """``--header NAME:VALUE``."""
    try:
        return parse_header(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def cmd_relay(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``relay QUEUE --url URL [--header K:V …] [--concurrency N] [--timeout S] [--secret S]
    [--follow-redirects] [--breaker-threshold N] [--breaker-cooldown S] [--rate-limit R]
    [--drain] [--node NODE] [-v]``."""
    relay = _build(client, args)
    report = Report(out, relay, args.queue)
    relay.on_delivery = report.delivery
    with _logging(args.verbose):
        state = client.topic(args.queue, touch=False)  # a missing queue fails here, at once
        if state.queue is not None and state.config.dead_letter is None:
            log.warning(
                "queue %s has no dead_letter topic: deliveries that can never succeed (4xx) are "
                "retried with backoff instead of being moved aside",
                args.queue,
            )
        report.notice(_banner(relay, args))
    with _logging(args.verbose), report.live(), _stop_on_signals(relay, report) as signals:
        try:
            stats = relay.drain(handle_signals=False) if args.drain else relay.run(handle_signals=False)
        except EndpointGone as gone:
            report.summary(gone.stats)
            report.alarm(f"GONE {gone}")
            return EXIT_GONE
        except BaseException:
            report.summary(relay.stats, prefix="before the failure, ")
            raise
    report.summary(stats)
    if report.stdout_closed:
        return EXIT_OK  # as every command on a closed pipe
    if args.drain and signals.received:
        return EXIT_INTERRUPTED  # not drained: jobs may be left
    if args.drain and stats.dead_lettered:
        return EXIT_DEAD_LETTERED
    return EXIT_OK


def _build(client: Client, args: argparse.Namespace) -> Relay:
    secrets = args.secret or ([os.environ[SECRET_ENV]] if os.environ.get(SECRET_ENV) else [])
    breaker = (
        CircuitBreaker(args.breaker_threshold, args.breaker_cooldown) if args.breaker_threshold else None
    )
    try:
        return Relay(
            client,
            args.queue,
            args.endpoint,
            headers=args.header or (),
            secret=secrets,
            concurrency=args.concurrency,
            timeout_s=args.timeout,
            follow_redirects=args.follow_redirects,
            circuit_breaker=breaker,
            rate_limit=args.rate_limit,
            node=args.node,
        )
    except ValueError as err:
        raise UsageError(str(err)) from None


def _banner(relay: Relay, args: argparse.Namespace) -> str:
    breaker = relay.worker.circuit_breaker
    parts = [
        f"concurrency {relay.worker.concurrency}",
        f"timeout {args.timeout:g} s",
        "signed" if args.secret or os.environ.get(SECRET_ENV) else "unsigned",
        f"breaker {breaker.threshold} failures / {breaker.cooldown_s:g} s" if breaker else "no breaker",
    ]
    until = "the queue is empty" if args.drain else "Ctrl-C"
    return f"topics: relaying {relay.queue} -> {relay.url} ({', '.join(parts)}) until {until}"


# -- what is printed -----------------------------------------------------------------------------


class Report:
    """Where a relay's progress goes: a line per delivery on stdout (JSON or readable), the
    status line on a terminal's stderr, notices and the summary on stderr."""

    def __init__(self, out: Output, relay: Relay, queue: str) -> None:
        self.out = out
        self.relay = relay
        self.queue = queue
        self.started = time.monotonic()
        self.stdout_closed = False
        """Set when stdout's reader went away (``| head``): the relay was stopped, and nothing
        more is printed there."""
        self._live: Live | None = None

    @contextlib.contextmanager
    def live(self) -> Iterator[None]:
        """The status line on a terminal's stderr while the relay runs (what is printed
        meanwhile goes above it)."""
        if not self.out.err_tty:
            yield
            return
        from rich.console import Console
        from rich.live import Live

        console = Console(file=sys.stderr)
        with Live(get_renderable=self.status, console=console, refresh_per_second=4, transient=True) as live:
            self._live = live
            try:
                yield
            finally:
                self._live = None

    def _console(self) -> Console | None:
        """Where readable lines go: above the status line, else stdout's console on a terminal."""
        if self._live is not None:
            return self._live.console
        return self.out.console() if self.out.tty else None

    def delivery(self, d: Delivery) -> None:
        """One attempt (the relay's ``on_delivery``). If stdout's reader went away, the relay
        stops gracefully (the deliveries in flight finish) and the lines go nowhere."""
        if self.stdout_closed:
            return
        try:
            if not self.out.tty:
                self.out.json_line(d.as_dict())
                self.out.flush()
                return
            console = self._console()
            if console is not None:
                console.print(delivery_text(d), soft_wrap=True)
        except BrokenPipeError:
            self.stdout_closed = True
            self.relay.stop(hurry=False)
            # what is still buffered, and Python's last flush at exit, go nowhere (as cli.main does)
            with contextlib.suppress(OSError, ValueError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)

    def status(self) -> Text:
        """The status line: counts, deliveries in flight, the breaker."""
        from rich.text import Text

        s = self.relay.stats
        style = {"closed": "green", "open": "bold red", "half_open": "yellow"}.get(s.breaker, "")
        return Text.assemble(
            ("relay ", "dim"),
            (self.queue, "bold"),
            f" -> {self.relay.url}  delivered {s.processed}  retried {s.retried}  "
            f"dead-lettered {s.dead_lettered}  in flight {self.relay.in_flight}  breaker ",
            (s.breaker.replace("_", "-"), style),
            (f"  {time.monotonic() - self.started:.0f} s", "dim"),
        )

    def notice(self, message: str) -> None:
        console = self._live.console if self._live is not None else None
        if console is not None:
            console.print(message, highlight=False, markup=False)
        else:
            self.out.notice(message)

    def alarm(self, message: str) -> None:
        if self._live is not None:
            self._live.console.print(message, style="bold red", highlight=False, markup=False)
        else:
            self.out.alarm(message)

    def summary(self, stats: WorkerStats, prefix: str = "") -> None:
        elapsed = time.monotonic() - self.started
        self.notice(
            f"topics: {prefix}relayed {self.queue} -> {self.relay.url}: {stats.processed} delivered, "
            f"{stats.retried} retried, {stats.dead_lettered} dead-lettered, {stats.released} released, "
            f"{stats.lost} lost in {elapsed:.1f} s"
        )


def duration(ms: int) -> str:
    """``850 ms``, ``2.5 s``, ``3600 s``."""
    if ms < 1000:
        return f"{ms} ms"
    return f"{ms / 1000:.1f} s" if ms < 100_000 else f"{ms // 1000} s"


def delivery_text(d: Delivery) -> Text:
    """``12:00:01  #5 try 1  503 retry in 2 s (http 503)  12 ms`` with colours."""
    from rich.text import Text

    status = "---" if d.status is None else str(d.status)
    if d.outcome == "delivered":
        what, style = "delivered", "green"
    elif d.outcome == "retry":
        what, style = f"retry in {duration(d.delay_ms or 0)} ({d.reason})", "yellow"
    elif d.outcome == "gone":
        what, style = f"GONE ({d.reason}): dead-lettered, the relay stops", "bold red"
    else:
        what, style = f"dead-lettered ({d.reason})", "red"
    return Text.assemble(
        (datetime.now().strftime("%H:%M:%S") + "  ", "dim"),
        (f"#{d.seq}", "cyan"),
        (f" try {d.attempt}  ", "dim"),
        (f"{status} {what}", style),
        (f"  {d.elapsed_ms} ms", "dim"),
    )


# -- signals and logs ----------------------------------------------------------------------------


class _Signals:
    """What :func:`_stop_on_signals` saw: ``received`` SIGINT/SIGTERMs."""

    received = 0


@contextlib.contextmanager
def _stop_on_signals(relay: Relay, report: Report) -> Iterator[_Signals]:
    """SIGINT/SIGTERM stop the relay gracefully, a second one hurries it (as ``Worker.run``'s
    own handling, plus a notice of what happens). The previous handlers are put back."""
    signals = _Signals()
    if sys.platform == "win32" or not _on_main_thread():
        yield signals
        return
    grace = relay.worker.shutdown_grace_s

    def on_signal(signum: int, frame: FrameType | None) -> None:
        signals.received += 1
        relay.stop()
        if signals.received == 1:
            _notice_later(
                report,
                f"topics: stopping: deliveries in flight get up to {grace:g} s to finish, the rest "
                "are released (Ctrl-C again releases them all now)",
            )
        else:
            _notice_later(report, "topics: releasing the deliveries in flight")

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield signals
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _notice_later(report: Report, message: str) -> None:
    """``report.notice(message)`` from a signal handler, which runs between any two bytecodes —
    maybe inside a write to stderr, which writing again would break ("reentrant call inside
    BufferedWriter"): the relay's loop prints it as its next callback; without a loop (before
    or after the run) it goes to file descriptor 2 in one ``os.write``, past Python's buffer."""
    try:
        asyncio.get_running_loop().call_soon_threadsafe(report.notice, message)
        return
    except RuntimeError:  # no loop running on this thread, or it is closing
        pass
    with contextlib.suppress(OSError):
        os.write(2, f"{message}\n".encode())


def _on_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


class _Stderr(logging.Handler):
    """Log lines to ``sys.stderr`` as it is at each line (above the status line while it
    shows): ``12:00:01 WARNING <message>``."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            print(self.format(record), file=sys.stderr, flush=True)
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def _logging(verbose: bool) -> Iterator[None]:
    """The SDK's logs (``topics.*``) on stderr while the relay runs: WARNING and up, INFO with
    ``-v`` (each failure and its retry delay, the breaker's every change)."""
    logger = logging.getLogger("topics")
    handler = _Stderr()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
    saved: tuple[Any, bool] = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
