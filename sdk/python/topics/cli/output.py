"""How the CLI prints: JSON lines when stdout is not a terminal (or with ``--json``), rich
tables and highlighted rows on a terminal; notices (gaps, deleted topics, summaries) on stderr.

JSON lines are ``orjson`` compact encodings, one value per line, written as bytes: ``read``'s
output of data written by ``pub`` from compact JSON lines is byte-for-byte what went in. Nothing
written to a non-terminal carries colour codes. ``rich`` is imported only for terminal output.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

import orjson

from ..models import Job, Record, Tombstone, TopicDeleted

if TYPE_CHECKING:
    from rich.console import Console


def plain(obj: Any) -> Any:
    """A result dataclass as a JSON-ready dict (``None`` fields kept); other values as they are."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return obj


def present(obj: Any) -> Any:
    """A result dataclass as a dict without its ``None`` fields — for results whose optional
    fields only some answers fill (a router listed has no ``cursor``; only a ``put`` says
    ``created``): printing them as ``null`` would claim a value the server never sent."""
    value = plain(obj)
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v is not None}
    return value


def record_dict(record: Record | Job, topic: str | None = None) -> dict[str, Any]:
    """A record for ``--records`` output: ``seq``, ``ts``, then ``delay_ms`` (a delayed queue
    job's) and ``tag``/``node``/``meta`` when present, then ``data`` (``topic`` first when
    given). ``pub --records`` reads it back."""
    out: dict[str, Any] = {} if topic is None else {"topic": topic}
    out["seq"] = record.seq
    out["ts"] = record.ts
    if record.delay_ms:
        out["delay_ms"] = record.delay_ms
    for key in ("tag", "node", "meta"):
        value = getattr(record, key)
        if value is not None:
            out[key] = value
    out["data"] = record.data
    return out


def gap_message(tomb: Tombstone) -> str:
    """The loud line for lost records: ``GAP events 12..40 lost (cap, ~29 records)``."""
    missed = tomb.missed_estimate if tomb.missed_estimate is not None else tomb.gap_to - tomb.gap_from + 1
    return f"GAP {tomb.topic} {tomb.gap_from}..{tomb.gap_to} lost ({tomb.reason}, ~{missed} records)"


def deleted_message(event: TopicDeleted) -> str:
    """The line for a watched topic that was deleted."""
    head = f" at head_seq {event.head_seq}" if event.head_seq is not None else ""
    return f"DELETED {event.topic}: the topic was deleted{head}"


def format_ts(ts_ms: int) -> str:
    """A record's ``ts`` (ms since the epoch) in local time, to the millisecond."""
    return datetime.fromtimestamp(ts_ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


class Output:
    """Where a command's results go. ``tty`` selects tables and coloured rows over JSON lines;
    ``err_tty`` colours stderr notices (each decided separately: ``topics read | less``)."""

    def __init__(self, *, tty: bool, err_tty: bool, stdout: IO[str], stderr: IO[str]) -> None:
        self.tty = tty
        self.err_tty = err_tty
        self.stdout = stdout
        self.stderr = stderr
        self._bin: IO[bytes] | None = getattr(stdout, "buffer", None)
        self._console: Console | None = None
        self._err_console: Console | None = None

    @classmethod
    def for_process(cls, force_json: bool = False) -> Output:
        """Output to this process's stdout/stderr, a terminal deciding the format."""
        tty = not force_json and sys.stdout.isatty()
        return cls(tty=tty, err_tty=sys.stderr.isatty(), stdout=sys.stdout, stderr=sys.stderr)

    # -- JSON lines ------------------------------------------------------------------------

    def json_line(self, value: Any) -> None:
        """One value, compact JSON, newline-terminated."""
        line = orjson.dumps(value) + b"\n"
        if self._bin is not None:
            self._bin.write(line)
        else:
            self.stdout.write(line.decode())

    def flush(self) -> None:
        """Push what was written so far (a follower's output reaches the next command now)."""
        self.stdout.flush()
        if self._bin is not None:
            self._bin.flush()

    # -- results ---------------------------------------------------------------------------

    def console(self) -> Console:
        """The rich console on stdout (terminal output only)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(file=self.stdout, highlight=True)
        return self._console

    def item(self, obj: Any) -> None:
        """One result object: a JSON line, or a two-column table on a terminal."""
        value = plain(obj)
        if not self.tty:
            self.json_line(value)
            return
        from rich.table import Table

        table = Table(show_header=False, box=None, pad_edge=False)
        table.add_column(style="bold")
        table.add_column()
        for key, cell in _flatten(value):
            table.add_row(key, _cell(cell))
        self.console().print(table)

    def rows(self, items: Iterable[Any], columns: Sequence[str], *, empty: str = "(none)") -> None:
        """Result objects: a JSON line each, or one table (``columns``) on a terminal."""
        if not self.tty:
            for obj in items:
                self.json_line(plain(obj))
            return
        from rich.table import Table

        rows = [plain(obj) for obj in items]
        if not rows:
            self.console().print(empty, style="dim")
            return
        table = Table(box=None, header_style="bold", pad_edge=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(_cell(row.get(column)) for column in columns))
        self.console().print(table)

    def record(self, record: Record, *, full: bool, topic: str | None = None) -> None:
        """One record: its ``data`` as a JSON line (``full``: the whole record), or a row
        ``seq  time  [topic]  [tag]  data`` on a terminal."""
        if not self.tty:
            self.json_line(record_dict(record, topic) if full else record.data)
            return
        from rich.highlighter import JSONHighlighter
        from rich.text import Text

        text = Text.assemble((f"{record.seq:>8} ", "cyan"), (format_ts(record.ts) + " ", "dim"))
        if topic is not None:
            text.append(topic + " ", "bold")
        if record.tag is not None:
            text.append(f"[{record.tag}] ", "magenta")
        if full and record.node is not None:
            text.append(f"node={record.node} ", "yellow")
        text.append_text(JSONHighlighter()(Text(orjson.dumps(record.data).decode())))
        if full and record.meta is not None:
            text.append(" meta=" + orjson.dumps(record.meta).decode(), "dim")
        self.console().print(text, soft_wrap=True)

    # -- stderr ----------------------------------------------------------------------------

    def notice(self, message: str) -> None:
        """An informational line on stderr (summaries)."""
        print(message, file=self.stderr, flush=True)

    def alarm(self, message: str) -> None:
        """A loud line on stderr (lost records, a deleted topic): bold red on a terminal."""
        if self.err_tty:
            print(f"\x1b[1;31m{message}\x1b[0m", file=self.stderr, flush=True)
        else:
            print(message, file=self.stderr, flush=True)


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """``{"config": {"ttl_ms": 0}}`` → ``[("config.ttl_ms", 0)]`` for key/value tables."""
    if not isinstance(value, Mapping):
        return [(prefix or "value", value)]
    out: list[tuple[str, Any]] = []
    for key, cell in value.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(cell, Mapping) and cell:
            out.extend(_flatten(cell, name))
        else:
            out.append((name, cell))
    return out
