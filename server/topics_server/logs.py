"""The logging of ``topics serve``: one handler on stderr, its format, and which loggers speak.

**Format** (``TOPICS_LOG_FORMAT``). ``plain``: ``<local time> <LEVEL> <logger> <message>``, a
traceback on the lines after. ``json``: every line the process writes to stdout and stderr is
one JSON object ::

    {"ts": "2026-01-02T03:04:05.678Z", "level": "info", "logger": "topics.server", "msg": "...", ...}

``ts`` is UTC with milliseconds; ``level`` is lower case; a record's ``extra`` fields follow
(the access log's ``method``, ``route``, ``status``...); an exception is the field ``exc`` (its
traceback, one string). Besides our own lines this covers library warnings (``warnings`` go to
the ``py.warnings`` logger), uncaught exceptions (``sys.excepthook``, ``threading.excepthook``,
``sys.unraisablehook``; asyncio logs its own to ``asyncio``), and anything else written to
``sys.stdout``/``sys.stderr`` — each line becomes a record of logger ``stdout``/``stderr``.

**Levels** (``TOPICS_LOG_LEVEL``, ``level[,logger=level...]``). The first level is that of our
own loggers (``topics.*``). Every other logger — connexion, asyncio, websockets, httpx... —
stays at ``warning`` (or at our level when that is higher), so ``debug`` shows our debug lines
and no library's start-up chatter, unless a logger is named: ``debug,connexion=debug``. The
access log (``topics.access``, ``accesslog``) is at ``info`` whenever ``TOPICS_ACCESS_LOG``
turns it on, whatever our level.
"""

from __future__ import annotations

import io
import logging
import sys
import threading
import time
from types import TracebackType
from typing import Any, TextIO

import orjson

from .accesslog import ACCESS_LOGGER

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"
LIBRARY_FLOOR = logging.WARNING
"""The least level of a logger that is not ours and not named in ``TOPICS_LOG_LEVEL``."""

_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}
"""A log record's own attributes: anything else on a record is an ``extra`` field."""

log = logging.getLogger("topics.server")


class PlainFormatter(logging.Formatter):
    """:data:`PLAIN_FORMAT`, the date and time formatted once per second (not per line)."""

    def __init__(self) -> None:
        super().__init__(PLAIN_FORMAT)
        self._second = -1
        self._stamp = ""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        second = int(record.created)
        if second != self._second:
            self._stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
            self._second = second
        return f"{self._stamp},{int(record.msecs):03d}"


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``ts``, ``level``, ``logger``, ``msg``, the record's extra
    fields, ``exc``/``stack`` when it carries them."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": self._utc(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name, value in record.__dict__.items():
            if name not in _STANDARD and name not in out:
                out[name] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exc"] = record.exc_text
        if record.stack_info:
            out["stack"] = self.formatStack(record.stack_info)
        return orjson.dumps(out, default=str).decode()

    _second = -1
    _stamp = ""

    def _utc(self, created: float) -> str:
        """``created`` as ``2026-01-02T03:04:05.678Z`` (the seconds formatted once per second)."""
        second = int(created)
        if second != self._second:
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        return f"{self._stamp}.{int((created - second) * 1000):03d}Z"


class _LineWriter(io.TextIOBase):
    """A ``sys.stdout``/``sys.stderr`` stand-in (JSON format): each complete line written becomes
    one record of ``logger``; a write made while the handler itself writes (logging reporting
    its own error) goes straight to the real stream."""

    def __init__(self, logger: logging.Logger, level: int, real: TextIO) -> None:
        self.logger = logger
        self.level = level
        self.real = real
        self.pending = ""
        self.local = threading.local()

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if getattr(self.local, "busy", False):
            return self.real.write(text)
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        self.local.busy = True
        try:
            for line in lines:
                if line.strip():
                    self.logger.log(self.level, "%s", line.rstrip())
        finally:
            self.local.busy = False
        return len(text)

    def flush(self) -> None:
        if self.pending.strip():
            self.write("\n")
        self.pending = ""

    def fileno(self) -> int:
        return self.real.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # io.TextIOBase declares it read-only
        return self.real.encoding


def install(fmt: str, stream: TextIO | None = None) -> None:
    """Route every line of the process through one handler on ``stream`` (stderr) in ``fmt``
    (``plain``/``json``), at the default levels (ours ``info``) until :func:`set_levels`."""
    real = stream or sys.stderr
    handler = logging.StreamHandler(real)
    handler.setFormatter(JsonFormatter() if fmt == "json" else PlainFormatter())
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)
    set_levels("info")
    logging.captureWarnings(True)
    sys.excepthook = _uncaught
    threading.excepthook = _uncaught_in_thread
    sys.unraisablehook = _unraisable
    if fmt == "json":
        for name, level in (("stdout", logging.INFO), ("stderr", logging.WARNING)):
            logging.getLogger(name).setLevel(level)  # whatever was printed is shown
        sys.stdout = _LineWriter(logging.getLogger("stdout"), logging.INFO, real)
        sys.stderr = _LineWriter(logging.getLogger("stderr"), logging.WARNING, real)


def set_levels(ours: str, named: tuple[tuple[str, str], ...] = (), access_log: bool = False) -> None:
    """Our loggers at ``ours``; every other one at :data:`LIBRARY_FLOOR` (or ``ours`` when
    higher) unless ``named``; the access log at ``info`` when it is on."""
    level = logging.getLevelName(ours.upper())
    logging.getLogger().setLevel(max(level, LIBRARY_FLOOR))
    logging.getLogger("topics").setLevel(level)
    for name, named_level in named:
        logging.getLogger(name).setLevel(named_level.upper())
    if access_log:
        logging.getLogger(ACCESS_LOGGER).setLevel(logging.INFO)


def _uncaught(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    log.critical("uncaught exception: %s", value, exc_info=(kind, value, tb))


def _uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is None or args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    log.error(
        "uncaught exception in thread %s: %s",
        name,
        args.exc_value,
        exc_info=(args.exc_type, args.exc_value, args.exc_traceback),
    )


def _unraisable(unraisable: Any) -> None:
    """``sys.unraisablehook`` (an exception in a ``__del__``, a finalizer...)."""
    exc = unraisable.exc_value
    info = (unraisable.exc_type, exc, unraisable.exc_traceback) if exc is not None else None
    log.warning("%s: %r", unraisable.err_msg or "Exception ignored in", unraisable.object, exc_info=info)
