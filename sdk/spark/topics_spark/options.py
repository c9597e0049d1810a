"""The connector's options: strings in (Spark hands every option over as text, keys
case-insensitive), typed and validated values out, eagerly — on the driver, before a task runs.
A bad value raises :class:`OptionError` naming the option and the forms it accepts.

Names follow Spark's Kafka connector wherever the meaning is the same (``startingOffsets``,
``endingOffsets``, ``startingTimestamp``, ``startingOffsetsByTimestamp``, ``endingTimestamp``,
``maxOffsetsPerTrigger``, ``minPartitions``, ``failOnDataLoss``). Times are ms since the epoch.
Offsets are the contract's cursors: ``{"t": 100}`` means "after seq 100", so reading starts
at seq 101 and an ending offset of 500 includes seq 500.

>>> read_options({"url": "http://h:4000", "topic": "clicks", "startingOffsets": '{"clicks": 100}'}).starting
{'clicks': 100}
>>> read_options({"topic": "clicks", "pageSize": "5000"})
Traceback (most recent call last):
...
topics_spark.options.OptionError: option pageSize: '5000' is not valid; accepted: an integer 1..1000
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import topics

EARLIEST = -2
"""An offset (cursor) meaning "the topic's earliest retained record" (Kafka's ``-2``)."""
LATEST = -1
"""An offset meaning "the topic's head when the query resolves it" (Kafka's ``-1``)."""

Offsets = dict[str, int]
"""Topic → cursor (the last seq consumed; ``EARLIEST``/``LATEST`` until resolved)."""
Times = dict[str, int]
"""Topic → a time (ms since the epoch) to start at."""


class OptionError(ValueError):
    """An option is missing, unknown in combination, or has a value outside its accepted forms."""

    def __init__(self, option: str, value: str | None, accepted: str, *, problem: str | None = None) -> None:
        shown = problem or ("missing" if value is None else f"{value!r} is not valid")
        super().__init__(f"option {option}: {shown}; accepted: {accepted}")
        self.option = option


@dataclass(frozen=True, slots=True)
class Connection:
    """How to reach the server: ``url`` (the option, else ``TOPICS_URL``, else
    ``http://127.0.0.1:4000``), ``api_key`` (the option, else ``TOPICS_API_KEY``), ``timeout``
    in seconds per request — resolved on the driver, where the options are validated."""

    url: str
    api_key: str | None
    timeout: float


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """A validated read: exactly one of ``topics`` (fixed names) or ``prefix`` (every topic whose
    name starts with it, re-listed at each micro-batch)."""

    connection: Connection
    topics: tuple[str, ...]
    prefix: str | None
    starting: Literal["earliest", "latest"] | Offsets
    ending: Literal["latest"] | Offsets
    starting_times: int | Times | None
    """``startingTimestamp`` (every topic) or ``startingOffsetsByTimestamp`` (the topics it
    names; the others start at ``starting``): a read starts at the first record written at or
    after the time. Takes precedence over ``starting``, as Kafka's do."""
    ending_time: int | None
    """``endingTimestamp``: a batch read ends before the first record written at or after it
    (at the head when there is none). Takes precedence over ``ending``."""
    max_offsets_per_trigger: int | None
    min_partitions: int | None
    fail_on_data_loss: bool
    include_meta: bool
    include_tags: bool
    page_size: int


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """A validated write. ``topic`` overrides a ``topic`` column; ``write_id`` names a batch
    write for idempotency across re-runs (``None``: a fresh id per write, so only retried tasks
    of this write dedupe); ``data_format`` ``json`` reads a string column as JSON text,
    ``string`` stores each string as a JSON string."""

    connection: Connection
    topic: str | None
    write_id: str | None
    data_format: Literal["json", "string"]
    batch_rows: int


READ_OPTIONS = [
    "url",
    "apiKey",
    "timeout",
    "topic",
    "topics",
    "topicPrefix",
    "path",
    "startingOffsets",
    "endingOffsets",
    "startingTimestamp",
    "startingOffsetsByTimestamp",
    "endingTimestamp",
    "maxOffsetsPerTrigger",
    "minPartitions",
    "failOnDataLoss",
    "includeMeta",
    "includeTags",
    "pageSize",
]
WRITE_OPTIONS = ["url", "apiKey", "timeout", "topic", "path", "writeId", "dataFormat", "batchRows"]
MAX_PAGE = 1000
"""The contract's ``TOPICS_MAX_LIMIT``: a diff page holds at most this many records."""
MAX_WRITE_ID = 128
"""Room left in an idempotency key (≤ 256 chars) for the partition and chunk numbers."""


def _get(options: Mapping[str, str], name: str) -> str | None:
    """``options[name]`` case-insensitively (Spark's ``CaseInsensitiveDict`` is, a plain dict
    from a test is not)."""
    lowered = name.lower()
    for key, value in options.items():
        if key.lower() == lowered:
            return None if value is None else str(value)
    return None


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _get(options, name)
    if raw is None:
        return default
    if raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise OptionError(name, raw, "true or false")


def _int(options: Mapping[str, str], name: str, low: int, high: int | None = None) -> int | None:
    raw = _get(options, name)
    if raw is None:
        return None
    accepted = f"an integer {low}..{high}" if high is not None else f"an integer >= {low}"
    try:
        value = int(raw.strip())
    except ValueError:
        raise OptionError(name, raw, accepted) from None
    if value < low or (high is not None and value > high):
        raise OptionError(name, raw, accepted)
    return value


def _misspelt(options: Mapping[str, str], known: list[str], kind: str) -> None:
    """Rejects an option that looks like a misspelling of one of ours (``startingOffset``).
    Other unknown keys pass: Spark adds its own (``checkpointLocation``…) to a source's options."""
    by_lower = {k.lower(): k for k in known}
    for key in options:
        if key.lower() in by_lower:
            continue
        close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.85)
        if close:
            raise OptionError(
                key,
                None,
                ", ".join(known),
                problem=f"not a topics {kind} option (did you mean {by_lower[close[0]]}?)",
            )


def connection(options: Mapping[str, str]) -> Connection:
    url = _get(options, "url")
    if url is not None and not url.startswith(("http://", "https://")):
        raise OptionError("url", url, "an http:// or https:// URL of a topics server")
    raw_timeout = _get(options, "timeout")
    timeout = 30.0
    if raw_timeout is not None:
        try:
            timeout = float(raw_timeout)
        except ValueError:
            raise OptionError("timeout", raw_timeout, "seconds, a number > 0") from None
        if not timeout > 0:
            raise OptionError("timeout", raw_timeout, "seconds, a number > 0")
    # resolved here, on the driver (the SDK's fallbacks), so tasks elsewhere use the same server and key
    settings = topics.Settings.resolve(url, _get(options, "apiKey"), timeout, retries=3)
    return Connection(url=settings.url, api_key=settings.api_key, timeout=timeout)


def _topic_names(raw: str, option: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in raw.split(","))
    if not names or any(not n for n in names):
        raise OptionError(option, raw, "a topic name, or a comma-separated list of names")
    return names


def _offsets(raw: str, option: str, words: tuple[str, ...]) -> str | Offsets:
    """``earliest``/``latest`` (as allowed) or a JSON object of topic → cursor (``-2`` earliest,
    ``-1`` latest, else a seq >= 0)."""
    accepted = " | ".join(words) + ' | JSON {"topic": seq} (seq >= 0, or -2 earliest, -1 latest)'
    text = raw.strip()
    if text.lower() in words:
        return text.lower()
    try:
        parsed = json.loads(text)
    except ValueError:
        raise OptionError(option, raw, accepted) from None
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(option, raw, accepted)
    out: Offsets = {}
    for topic, seq in parsed.items():
        if type(seq) is not int or seq < EARLIEST:
            raise OptionError(option, raw, accepted)
        out[str(topic)] = seq
    return out


def _times(raw: str, option: str, topics: tuple[str, ...], prefix: str | None) -> Times:
    """``startingOffsetsByTimestamp``: a JSON object of topic → ms since the epoch, for topics of
    the read only."""
    accepted = 'JSON {"topic": ms since the epoch (an integer >= 0)}'
    try:
        parsed = json.loads(raw.strip())
    except ValueError:
        raise OptionError(option, raw, accepted) from None
    if not isinstance(parsed, dict) or not parsed:
        raise OptionError(option, raw, accepted)
    if any(type(ts) is not int or ts < 0 for ts in parsed.values()):
        raise OptionError(option, raw, accepted)
    extra = sorted(t for t in parsed if (t not in topics if prefix is None else not t.startswith(prefix)))
    if extra:
        raise OptionError(option, raw, f"times of the read's topics only (not {', '.join(extra)})")
    return {str(t): ts for t, ts in parsed.items()}


def _starting_times(
    options: Mapping[str, str], topics: tuple[str, ...], prefix: str | None
) -> int | Times | None:
    """``startingTimestamp`` if given (it takes precedence, as Kafka's), else
    ``startingOffsetsByTimestamp``, else ``None``."""
    every = _int(options, "startingTimestamp", 0)
    if every is not None:
        return every
    raw = _get(options, "startingOffsetsByTimestamp")
    return None if raw is None else _times(raw, "startingOffsetsByTimestamp", topics, prefix)


def read_options(options: Mapping[str, str], *, streaming: bool = False) -> ReadOptions:
    """Validates the options of a batch (or, with ``streaming``, a streaming) read (``path``,
    what ``load(name)`` sets, is taken as ``topic``)."""
    _misspelt(options, READ_OPTIONS, "read")
    given = {name: _get(options, name) for name in ("topic", "topics", "topicPrefix")}
    given["topic"] = given["topic"] or _get(options, "path")  # load("name") sets path
    chosen = [name for name, value in given.items() if value is not None]
    if len(chosen) != 1:
        raise OptionError(
            "topic" if not chosen else "/".join(chosen),
            None if not chosen else ", ".join(f"{n}={given[n]!r}" for n in chosen),
            "exactly one of topic, topics (comma-separated) or topicPrefix",
        )
    topics: tuple[str, ...] = ()
    prefix = None
    if chosen[0] == "topicPrefix":
        prefix = given["topicPrefix"] or ""
    else:
        topics = _topic_names(given[chosen[0]] or "", chosen[0])
    raw_start = _get(options, "startingOffsets")
    starting = _offsets(raw_start, "startingOffsets", ("earliest", "latest")) if raw_start else "earliest"
    raw_end = _get(options, "endingOffsets")
    if raw_end is not None and streaming:
        raise OptionError("endingOffsets", raw_end, "nothing: a streaming read has no end")
    ending = _offsets(raw_end, "endingOffsets", ("latest",)) if raw_end else "latest"
    if isinstance(ending, dict) and any(seq == EARLIEST for seq in ending.values()):
        raise OptionError("endingOffsets", raw_end, 'latest | JSON {"topic": seq} (seq >= 0, or -1 latest)')
    for option, offsets in (("startingOffsets", starting), ("endingOffsets", ending)):
        if not isinstance(offsets, dict):
            continue
        extra = sorted(
            t for t in offsets if (t not in topics if prefix is None else not t.startswith(prefix))
        )
        if extra:
            raise OptionError(
                option, json.dumps(offsets), f"offsets of the read's topics only (not {', '.join(extra)})"
            )
    ending_time = _int(options, "endingTimestamp", 0)
    if ending_time is not None and streaming:
        raise OptionError("endingTimestamp", str(ending_time), "nothing: a streaming read has no end")
    max_per_trigger = _int(options, "maxOffsetsPerTrigger", 1)
    if max_per_trigger is not None and not streaming:
        raise OptionError(
            "maxOffsetsPerTrigger", str(max_per_trigger), "nothing: only a streaming read has triggers"
        )
    return ReadOptions(
        connection=connection(options),
        topics=topics,
        prefix=prefix,
        starting=starting,  # type: ignore[arg-type]
        ending=ending,  # type: ignore[arg-type]
        starting_times=_starting_times(options, topics, prefix),
        ending_time=ending_time,
        max_offsets_per_trigger=max_per_trigger,
        min_partitions=_int(options, "minPartitions", 1),
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        include_meta=_bool(options, "includeMeta", True),
        include_tags=_bool(options, "includeTags", True),
        page_size=_int(options, "pageSize", 1, MAX_PAGE) or MAX_PAGE,
    )


def write_options(options: Mapping[str, str]) -> WriteOptions:
    """Validates the options of a batch or streaming write (``path``, what ``save(path)`` sets,
    is accepted as the topic)."""
    _misspelt(options, WRITE_OPTIONS, "write")
    topic = _get(options, "topic") or _get(options, "path")
    if topic is not None and (not topic.strip() or "," in topic):
        raise OptionError("topic", topic, "one topic name (or leave it out and give a topic column)")
    write_id = _get(options, "writeId")
    if write_id is not None and not (0 < len(write_id) <= MAX_WRITE_ID):
        raise OptionError("writeId", write_id, f"a non-empty string of at most {MAX_WRITE_ID} characters")
    data_format = (_get(options, "dataFormat") or "json").strip().lower()
    if data_format not in ("json", "string"):
        raise OptionError("dataFormat", data_format, "json (a string column is JSON text) or string")
    return WriteOptions(
        connection=connection(options),
        topic=topic.strip() if topic else None,
        write_id=write_id,
        data_format=data_format,  # type: ignore[arg-type]
        batch_rows=_int(options, "batchRows", 1, 100_000) or 10_000,
    )
