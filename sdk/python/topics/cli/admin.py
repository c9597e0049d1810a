"""``topics topic ls|get|put|rm``, ``topics router ls|get|put|rm`` and
``topics schedule ls|get|put|rm``.

``put`` commands take the common settings as options and any other as ``--set KEY=VALUE``
(repeatable), the value read as JSON when it parses (``--set priority=5``,
``--set auto_create=false``, ``--set 'filter=["tag","Glob","eu:*"]'``), else as a string
(``--set dead_letter=jobs.dlq``). Options win over ``--set`` for the same key.
"""

from __future__ import annotations

import argparse
from typing import Any

import orjson

from ..client import Client
from ..errors import RouterNotFound, ScheduleNotFound, TopicNotFound
from .errors import UsageError
from .output import Output, present

TOPIC_COLUMNS = ("topic", "type", "head_seq", "earliest_seq", "count", "bytes", "durability")
ROUTER_COLUMNS = ("router", "source", "dest", "guarantee", "forwarded_total", "lag")
SCHEDULE_COLUMNS = (
    "schedule",
    "topic",
    "cron",
    "every_ms",
    "missed",
    "next_run_ms",
    "last_run_ms",
    "runs_total",
)

TOPIC_OPTIONS = (
    "type",
    "durability",
    "ttl_ms",
    "cap_records",
    "cap_bytes",
    "discard",
    "lease_ms",
    "max_deliveries",
    "dead_letter",
)
"""``topic put`` options (``--ttl-ms`` → ``ttl_ms``); everything else goes through ``--set``."""

ROUTER_OPTIONS = ("preserve_node", "preserve_tag", "create_dest", "allow_cycle", "guarantee", "filter")


def setting(text: str) -> tuple[str, Any]:
    """``--set KEY=VALUE``: the value as JSON if it parses, else the string."""
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, orjson.loads(raw)
    except orjson.JSONDecodeError:
        return key, raw


def json_arg(text: str) -> Any:
    """An argument that must be JSON (``--filter``)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"invalid JSON ({err})") from None


def _settings(args: argparse.Namespace, names: tuple[str, ...]) -> dict[str, Any]:
    config: dict[str, Any] = dict(args.set or [])
    for name in names:
        value = getattr(args, name)
        if value is not None:
            config[name] = value
    return config


# -- topics --------------------------------------------------------------------------------------


def cmd_topic_ls(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``topic ls [--prefix P]``: one summary per topic, in name order."""
    out.rows(client.list_topics(args.prefix), TOPIC_COLUMNS, empty="(no topics)")
    return 0


def cmd_topic_get(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``topic get TOPIC``: state, configuration and (queues) counters."""
    out.item(client.topic(args.topic, touch=False))
    return 0


def cmd_topic_put(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``topic put TOPIC [options] [--set KEY=VALUE…]``: creates, or updates the given fields."""
    out.item(client.create_topic(args.topic, **_settings(args, TOPIC_OPTIONS)))
    return 0


def cmd_topic_rm(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``topic rm TOPIC [--if-empty]``: a topic that does not exist is an error (exit 1), as
    ``nats stream rm`` and ``rm`` have it."""
    deletion = client.delete_topic(args.topic, if_empty=args.if_empty)
    if not deletion.deleted:
        raise TopicNotFound(
            404, "topic_not_found", f"topic {args.topic!r} does not exist", {"topic": args.topic}
        )
    out.item(deletion)
    return 0


# -- routers -------------------------------------------------------------------------------------


def cmd_router_ls(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``router ls [--prefix P] [--source S] [--dest D]``."""
    routers = client.list_routers(args.prefix, source=args.source, dest=args.dest)
    out.rows(map(present, routers), ROUTER_COLUMNS, empty="(no routers)")
    return 0


def cmd_router_get(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``router get NAME``: the definition and its progress (``forwarded_total``, ``lag``)."""
    out.item(present(client.router(args.name)))
    return 0


def cmd_router_put(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``router put NAME --source S --dest D [options] [--set KEY=VALUE…]``."""
    options = _settings(args, ROUTER_OPTIONS)
    for key in ("source", "dest"):
        options.pop(key, None)
    if args.source == args.dest:
        raise UsageError("router put: --source and --dest must differ")
    info = client.put_router(args.name, args.source, args.dest, **options)
    out.item(present(info))
    return 0


def cmd_router_rm(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``router rm NAME``: a router that does not exist is an error (exit 1)."""
    if not client.delete_router(args.name):
        raise RouterNotFound(
            404, "router_not_found", f"router {args.name!r} does not exist", {"router": args.name}
        )
    out.item({"router": args.name, "deleted": True})
    return 0


# -- schedules -----------------------------------------------------------------------------------


def cmd_schedule_ls(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``schedule ls [--prefix P] [--topic T]``."""
    schedules = client.list_schedules(args.prefix, topic=args.topic)
    out.rows(map(present, schedules), SCHEDULE_COLUMNS, empty="(no schedules)")
    return 0


def cmd_schedule_get(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``schedule get NAME``: the schedule as put and its progress."""
    out.item(present(client.schedule(args.name)))
    return 0


def schedule_records(args: argparse.Namespace) -> list[Any]:
    """What a ``schedule put`` appends: ``--records`` (a JSON array of record objects), or one
    record per ``--data`` (JSON, else the string), each with ``--tag`` when given."""
    if (args.records is None) == (not args.data):
        raise UsageError("schedule put: give the records: --data VALUE (repeatable) or --records JSON")
    if args.records is not None:
        if args.tag is not None:
            raise UsageError("schedule put: --tag goes with --data; put tags inside --records")
        if not isinstance(args.records, list) or not args.records:
            raise UsageError(
                "schedule put: --records must be a JSON array of records, e.g. '[{\"data\": 1}]'"
            )
        return list(args.records)
    tag = {} if args.tag is None else {"tag": args.tag}
    return [{"data": setting(f"data={text}")[1], **tag} for text in args.data]


def cmd_schedule_put(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``schedule put NAME --topic T (--cron EXPR | --every-ms N) (--data V… | --records JSON)
    [--tag TAG] [--node N] [--missed skip|once]``."""
    records = schedule_records(args)
    info = client.put_schedule(
        args.name,
        args.topic,
        records,
        cron=args.cron,
        every_ms=args.every_ms,
        node=args.node,
        missed=args.missed,
    )
    out.item(present(info))
    return 0


def cmd_schedule_rm(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``schedule rm NAME``: a schedule that does not exist is an error (exit 1)."""
    if not client.delete_schedule(args.name):
        raise ScheduleNotFound(
            404, "schedule_not_found", f"schedule {args.name!r} does not exist", {"schedule": args.name}
        )
    out.item({"schedule": args.name, "deleted": True})
    return 0
