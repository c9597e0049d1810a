"""``topics consumer ls|show|create|commit|rm`` and ``topics read TOPIC --consumer NAME``: named
consumers — cursors the server keeps for readers that name themselves (an extension).

``read --consumer NAME`` prints the records after the consumer's committed cursor and commits
what it printed (every ``--commit-every`` records, and when it ends), so the next run goes on
where this one stopped; a consumer that does not exist is created (an admin key), starting at
``--from`` (or ``--since`` / ``--from-time``). Without ``-e`` it follows the topic until
Ctrl-C, which commits what was printed. A run that fails commits nothing more: what it printed
since its last commit comes again (at least once, never lost).
"""

from __future__ import annotations

import argparse
from datetime import datetime

from ..client import Client
from ..errors import ConsumerNotFound
from .errors import UsageError
from .output import Output, gap_message

CONSUMER_COLUMNS = ("consumer", "cursor", "head_seq", "lag", "committed_at_ms")


def cmd_consumer_ls(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``consumer ls TOPIC [--prefix P]``: each consumer's cursor and lag, in name order."""
    out.rows(client.list_consumers(args.topic, args.prefix), CONSUMER_COLUMNS, empty="(no consumers)")
    return 0


def cmd_consumer_show(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``consumer show TOPIC NAME``: its cursor, the topic's head and the lag between them."""
    out.item(client.consumer(args.topic, args.name))
    return 0


def cmd_consumer_create(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``consumer create TOPIC NAME [--from earliest|latest|SEQ | --since DURATION | --from-time
    TIME] [--force]``: a new consumer (an existing one is left as it is unless ``--force`` moves
    it)."""
    from_seq, from_ts = _start(client, args.topic, args.from_)
    info = client.put_consumer(args.topic, args.name, from_seq=from_seq, from_ts=from_ts, force=args.force)
    out.item(info)
    return 0


def cmd_consumer_commit(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``consumer commit TOPIC NAME SEQ [--force]``: moves the cursor to SEQ (back only with
    ``--force``)."""
    out.item(client.commit(args.topic, args.name, args.seq, force=args.force))
    return 0


def cmd_consumer_rm(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``consumer rm TOPIC NAME``: a consumer that does not exist is an error (exit 1), as for
    every ``rm``."""
    if not client.delete_consumer(args.topic, args.name):
        raise ConsumerNotFound(
            404,
            "consumer_not_found",
            f"topic {args.topic!r} has no consumer {args.name!r}",
            {"topic": args.topic, "consumer": args.name},
        )
    out.item({"consumer": args.name, "topic": args.topic, "deleted": True})
    return 0


def _start(
    client: Client, topic: str, start: int | str | datetime | None
) -> tuple[int | None, datetime | None]:
    """Where a new consumer starts, as ``(from_seq, from_ts)``: ``--from earliest`` (and none)
    is the server's default (nothing read yet), ``latest`` the topic's head now, a seq itself;
    ``--since`` / ``--from-time`` a time."""
    if isinstance(start, datetime):
        return None, start
    if start is None or start == "earliest":
        return None, None
    if start == "latest":
        return client.topic(topic, touch=False).head_seq, None
    return int(start), None


def read_as_consumer(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``read TOPIC --consumer NAME [--from …] [-e] [--records] [--commit-every N]``."""
    if args.to is not None:
        raise UsageError("read --consumer: --to does not go with a consumer (it reads from its cursor)")
    from_seq, from_ts = _start(client, args.topic, args.from_)
    consume = client.consume(
        args.topic,
        args.consumer,
        commit_every=args.commit_every,
        follow=not args.exit,
        from_seq=from_seq,
        from_ts=from_ts,
        include_meta=args.records,
        include_tags=args.records or out.tty,
        on_gap="skip",
    )
    reported = 0
    printed: int | None = None
    try:
        for record in consume:
            if len(consume.gaps) > reported:
                for tomb in consume.gaps[reported:]:
                    out.alarm(gap_message(tomb))
                reported = len(consume.gaps)
            out.record(record, full=args.records)
            printed = record.seq  # an interrupt before this line prints the record again
            if not args.exit:
                out.flush()  # a follower's output reaches the next command now
    except KeyboardInterrupt:
        if printed is not None:
            consume.commit(printed)  # what was printed, not the record in hand
        return 0
    consume.close()  # what was printed, and the records after it a filter or delete skipped
    for tomb in consume.gaps[reported:]:
        out.alarm(gap_message(tomb))
    return 0
