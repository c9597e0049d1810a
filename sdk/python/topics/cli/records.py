"""``topics pub``, ``read``, ``tail`` and ``delete``: writing, reading, following and deleting
records.

- ``pub TOPIC JSON`` appends one record; ``pub TOPIC`` appends stdin's JSON lines, one record's
  ``data`` per line (``--records``: whole record objects), a batch at a time; ``--delay 30s``
  delays a queue's jobs. A batch is parsed
  and checked before it is sent, so a bad line stops the run with nothing of its batch written
  (earlier batches are; the summary says how many records).
- ``read TOPIC`` prints the records after ``--from`` (one ``data`` per line; ``--records``: whole
  records) and then follows the topic; ``-e`` stops at the head instead.
- ``tail TOPIC…`` follows topics from their head (or ``--from``) over one SSE watch; a topic
  that does not exist yet is waited for (``waiting for topic X`` on stderr) and
  then printed from its first record, as ``nats sub`` and ``kcat -C`` wait for a producer.

Lost records (a topic's cap or TTL overtook the reader) are never skipped quietly: a ``GAP``
line goes to stderr and reading goes on. Reading from the start (``--from earliest``, or a time
before the earliest record) begins at the earliest retained record: what cap or TTL removed
before the read began is no loss to it, so the server's tombstone for it is not a ``GAP`` (kcat
``-o beginning``, Redis ``XRANGE - +``).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime
from typing import IO, Any

import orjson

from .._ops import record_body
from ..client import Client
from ..errors import TopicNotFound, TopicsError
from ..models import AppendResult, CaughtUp, Records, Tombstone, TopicDeleted
from .consumers import read_as_consumer
from .errors import BadInput, UsageError
from .lines import Batch, batches, decode_line, input_size
from .output import Output, deleted_message, gap_message

LINGER_S = 0.2
"""A partial batch of stdin lines is sent this long after its first line arrived."""

WAIT_FIRST_S, WAIT_MAX_S = 0.25, 5.0
"""``tail`` polls for a topic that does not exist yet from every 0.25 s up to every 5 s."""


# -- cursors -------------------------------------------------------------------------------------


def parse_from(value: str) -> int | str:
    """``--from``: ``earliest`` (cursor 0), ``latest`` (the head: new records only) or a seq
    (an exclusive cursor: the records *after* it)."""
    if value in ("earliest", "latest"):
        return value
    try:
        seq = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected earliest, latest or a seq, got {value!r}") from None
    if seq < 0:
        raise argparse.ArgumentTypeError(f"a seq is >= 0, got {seq}")
    return seq


def seq_arg(value: str) -> int:
    """A non-negative integer argument."""
    try:
        seq = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a seq (an integer >= 0), got {value!r}") from None
    if seq < 0:
        raise argparse.ArgumentTypeError(f"expected a seq (an integer >= 0), got {seq}")
    return seq


def _watch_start(start: int | str | datetime) -> int | str | datetime:
    """``--from`` (or ``--since`` / ``--from-time``: a datetime) as a watch's start."""
    return 0 if start == "earliest" else "tail" if start == "latest" else start


# -- pub -----------------------------------------------------------------------------------------


def record_from_json(value: Any, where: str, tag: str | None, node: str | None) -> dict[str, Any]:
    """A ``--records`` input object as an append record: ``data`` (required), ``tag``, ``node``,
    ``meta`` (``null`` means absent); other keys (``seq``, ``ts``, ``delay_ms``, ``topic`` of
    ``read --records``) are ignored — a copied job is not delayed again by the delay it was
    written with (``--delay`` delays the new ones). ``tag``/``node`` are the defaults for
    records without one."""
    if not isinstance(value, Mapping) or "data" not in value:
        raise BadInput(f'{where}: expected a record object with a "data" key')
    record: dict[str, Any] = {"data": value["data"]}
    for key, default in (("tag", tag), ("node", node)):
        field = value.get(key)
        if field is None:
            field = default
        if field is not None:
            if not isinstance(field, str):
                raise BadInput(f'{where}: "{key}" must be a string')
            record[key] = field
    meta = value.get("meta")
    if meta is not None:
        if not isinstance(meta, Mapping):
            raise BadInput(f'{where}: "meta" must be an object')
        record["meta"] = meta
    return record


def parse_batch(
    batch: Batch, *, full: bool, tag: str | None, node: str | None
) -> tuple[list[dict[str, Any]], list[int]]:
    """The append records of one batch of lines (blank lines skipped) and the line number of
    each; a line that is not JSON (or not a record, with ``full``) raises :class:`BadInput`."""
    records: list[dict[str, Any]] = []
    numbers: list[int] = []
    for number, line in batch.lines:
        if not line.strip():
            continue
        value = decode_line(number, line)
        if full:
            records.append(record_from_json(value, f"stdin line {number}", tag, node))
        else:
            records.append(record_body(value, tag))
        numbers.append(number)
    return records, numbers


def _append(
    client: Client,
    topic: str,
    records: list[dict[str, Any]],
    numbers: list[int],
    node: str | None,
    delay_ms: int | None,
) -> AppendResult:
    """``append_many``; a refusal that names a record (``detail.index``: too large, a bad
    field) is made to name its stdin line too."""
    try:
        return client.append_many(topic, records, node=node, delay_ms=delay_ms)
    except TopicsError as err:
        index = err.detail.get("index")
        if not isinstance(index, int):
            index = _field_index(err.detail.get("field"))
        if index is not None and 0 <= index < len(numbers):
            err.message = f"stdin line {numbers[index]}: {err.message}"
        raise


def _field_index(field: Any) -> int | None:
    """``records[12].tag`` → 12."""
    if isinstance(field, str) and field.startswith("records["):
        number = field[len("records[") :].partition("]")[0]
        if number.isdigit():
            return int(number)
    return None


class Tally:
    """What a bulk ``pub`` has written so far, for its summary."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.count = 0
        self.first: int | None = None
        self.last: int | None = None
        self.started = time.monotonic()

    def add(self, result: AppendResult) -> None:
        self.count += len(result.seqs)  # (filled in even when the server left them out)
        if self.first is None:
            self.first = result.first_seq
        self.last = result.last_seq

    def summary(self, verb: str = "appended") -> str:
        elapsed = time.monotonic() - self.started
        noun = "record" if self.count == 1 else "records"
        seqs = ""
        if self.count:
            seqs = f" (seq {self.first})" if self.first == self.last else f" (seqs {self.first}..{self.last})"
        return f"{verb} {self.count} {noun} to {self.topic}{seqs} in {elapsed:.2f} s"


def _progress(out: Output, total: int | None) -> AbstractContextManager[Any]:
    """A rich progress bar on a terminal's stderr (input bytes when the size is known; a
    spinner and the count otherwise)."""
    if not out.err_tty:
        return nullcontext(None)
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), DownloadColumn()]
    columns.append(TimeElapsedColumn())
    return Progress(*columns, console=Console(file=out.stderr), transient=True)


def _stdin() -> IO[bytes]:
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is not None:
        return buffer  # type: ignore[no-any-return]
    import io

    return io.BytesIO(sys.stdin.read().encode())


def cmd_pub(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``pub TOPIC [JSON]``."""
    if args.value is not None:
        try:
            value = orjson.loads(args.value)
        except orjson.JSONDecodeError as err:
            raise UsageError(f"JSON: invalid JSON ({err})") from None
        record = (
            record_from_json(value, "JSON", args.tag, args.node)
            if args.records
            else record_body(value, args.tag, args.node)
        )
        tag, node, meta = record.get("tag"), record.get("node"), record.get("meta")
        result = client.append(args.topic, record["data"], tag=tag, node=node, meta=meta, delay_ms=args.delay)
        out.item(
            {
                "topic": result.topic,
                "seq": result.first_seq,
                "head_seq": result.head_seq,
                "created": result.created,
                "deduped": result.deduped,
            }
        )
        return 0
    return _pub_stream(client, args, out)


def _pub_stream(client: Client, args: argparse.Namespace, out: Output) -> int:
    stream = _stdin()
    if sys.stdin.isatty():
        out.notice("topics: reading JSON lines from stdin (Ctrl-D ends)")
    tally = Tally(args.topic)
    total = input_size(stream)
    try:
        with _progress(out, total) as progress:
            task = progress.add_task(f"{args.topic}: 0 records", total=total) if progress else None
            for batch in batches(stream, args.batch, LINGER_S):
                records, numbers = parse_batch(batch, full=args.records, tag=args.tag, node=args.node)
                if records:
                    tally.add(_append(client, args.topic, records, numbers, args.node, args.delay))
                if progress is not None:
                    progress.update(
                        task, advance=batch.nbytes, description=f"{args.topic}: {tally.count} records"
                    )
    except KeyboardInterrupt:
        out.notice(tally.summary("interrupted: appended"))
        return 130
    except BadInput:
        out.notice(tally.summary("before the bad line, appended"))
        raise
    except Exception:
        if tally.count:
            out.notice(tally.summary("before the failure, appended"))
        raise
    if not args.quiet:
        out.notice(
            tally.summary() if tally.count else f"no records on stdin: nothing appended to {args.topic}"
        )
    return 0


# -- read / tail ---------------------------------------------------------------------------------


def cmd_read(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``read TOPIC [--from earliest|latest|SEQ | --since DURATION | --from-time TIME] [--to SEQ]
    [-e] [--records]`` (and ``--consumer NAME``: :func:`consumers.read_as_consumer`)."""
    if args.consumer is not None:
        return read_as_consumer(client, args, out)
    start = args.from_
    if not args.exit:
        return follow(client, {args.topic: _watch_start(start)}, out, full=args.records, to_seq=args.to)
    from_ts = start if isinstance(start, datetime) else None
    if start == "latest":
        cursor = client.topic(args.topic, touch=False).head_seq
    else:
        cursor = 0 if start == "earliest" or from_ts is not None else int(start)
    reader = client.read(
        args.topic,
        cursor,
        from_ts=from_ts,
        to_seq=args.to,
        include_meta=args.records,
        include_tags=args.records or out.tty,
        on_gap="skip",
    )
    tally = ReadTally(args.topic)
    reported = 0  # gaps grow as pages are read: each is reported before the records after it
    try:
        # on a terminal the records printed are the progress: a bar would fight them for it
        with nullcontext(None) if out.tty else _progress(out, None) as progress:
            task = progress.add_task(f"{args.topic}: 0 records", total=None) if progress else None
            for record in reader:
                if len(reader.gaps) > reported:
                    reported = _report_gaps(out, reader.gaps, reported)
                out.record(record, full=args.records)
                tally.add(record.seq)
                if progress is not None and tally.count % 100 == 0:
                    progress.update(task, description=f"{args.topic}: {tally.count} records")
            _report_gaps(out, reader.gaps, reported)
    except KeyboardInterrupt:
        if not out.tty:
            out.notice(tally.summary("interrupted: read"))
        return 130
    if not out.tty and not args.quiet:
        out.notice(tally.summary())
    return 0


class ReadTally:
    """What ``read -e`` has printed, for its summary on stderr when stdout is not a terminal."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.count = 0
        self.first: int | None = None
        self.last: int | None = None
        self.started = time.monotonic()

    def add(self, seq: int) -> None:
        self.count += 1
        if self.first is None:
            self.first = seq
        self.last = seq

    def summary(self, verb: str = "read") -> str:
        elapsed = time.monotonic() - self.started
        noun = "record" if self.count == 1 else "records"
        seqs = ""
        if self.count:
            seqs = f" (seq {self.first})" if self.first == self.last else f" (seqs {self.first}..{self.last})"
        return f"{verb} {self.count} {noun} from {self.topic}{seqs} in {elapsed:.2f} s"


def trimmed_at_start(tomb: Tombstone) -> bool:
    """A tombstone a reader starting at cursor 0 meets first: records before the earliest
    retained one, gone before the read began."""
    return tomb.gap_from == 1 and tomb.reason != "recreated"


def _report_gaps(out: Output, gaps: list[Tombstone], reported: int) -> int:
    """Alarms for the gaps not reported yet; returns how many are reported now."""
    for tomb in gaps[reported:]:
        out.alarm(gap_message(tomb))
    return len(gaps)


def cmd_tail(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``tail TOPIC… [--from …] [--records]``: topics that do not exist yet are waited for and
    then read from their first record."""
    start = {topic: _watch_start(args.from_) for topic in args.topics}
    try:
        for topic in wait_for_topics(client, list(start), out):
            start[topic] = 0
    except KeyboardInterrupt:
        return 0
    return follow(client, start, out, full=args.records, show_topic=len(start) > 1 or args.records)


def wait_for_topics(client: Client, topics: list[str], out: Output) -> list[str]:
    """Waits until every topic in ``topics`` exists (polling with a growing, jittered delay);
    returns the ones that did not exist at first. Says so on stderr (as ``nats sub`` does)."""
    missing = [t for t in topics if not _exists(client, t)]
    waited = list(missing)
    delay = WAIT_FIRST_S
    if missing:
        out.notice(f"topics: waiting for topic {', '.join(missing)} (Ctrl-C stops)")
    while missing:
        time.sleep(delay * random.uniform(0.8, 1.2))
        delay = min(delay * 2, WAIT_MAX_S)
        missing = [t for t in missing if not _exists(client, t)]
    return waited


def _exists(client: Client, topic: str) -> bool:
    try:
        client.topic(topic, touch=False)
    except TopicNotFound:
        return False
    return True


def follow(
    client: Client,
    start: dict[str, int | str | datetime],
    out: Output,
    *,
    full: bool,
    to_seq: int | None = None,
    show_topic: bool = False,
) -> int:
    """Prints a watch's records as they come until Ctrl-C (exit 0), every topic is deleted, or
    (``to_seq``) the single topic's cursor reaches ``to_seq``. A topic's first event being a
    tombstone from seq 1 (a start at cursor 0 meeting records trimmed before it) is no loss and
    prints no ``GAP``."""
    fresh = set(start)  # topics no event has come for yet
    try:
        with client.watch(start, include_meta=full) as watch:
            for event in watch:
                first = event.topic in fresh
                fresh.discard(event.topic)
                if isinstance(event, Tombstone) and first and trimmed_at_start(event):
                    continue
                if isinstance(event, Records):
                    for record in event.records:
                        if to_seq is not None and record.seq > to_seq:
                            return 0
                        out.record(record, full=full, topic=event.topic if show_topic else None)
                    out.flush()
                    if to_seq is not None and event.records and event.records[-1].seq >= to_seq:
                        return 0
                elif isinstance(event, Tombstone):
                    out.alarm(gap_message(event))
                    if to_seq is not None and event.gap_to >= to_seq:
                        return 0
                elif isinstance(event, TopicDeleted):
                    out.alarm(deleted_message(event))
                elif isinstance(event, CaughtUp) and to_seq is not None and event.head_seq >= to_seq:
                    return 0
    except KeyboardInterrupt:
        return 0
    return 0


# -- delete --------------------------------------------------------------------------------------


def cmd_delete(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``delete TOPIC (--before SEQ | --tag PATTERN)``: both given, both must hold."""
    if args.before is None and args.tag is None:
        raise UsageError("delete needs --before SEQ, --tag PATTERN, or both")
    deleted = client.delete_records(args.topic, before_seq=args.before, tag=args.tag)
    out.item({"topic": args.topic, "deleted": deleted})
    return 0
