"""The ``topics`` command line: every subcommand, its options, and the function that runs it
(``args.run``; ``serve`` and ``version`` have none: they belong to the server)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TypeAlias

from . import account, admin, completion, consumers, contexts, queues, records, relay, worker
from .durations import duration_ms, point_in_time, time_ago

Sub: TypeAlias = "argparse._SubParsersAction[Parser]"

DESCRIPTION = """\
topics — a persistent event engine, and a client for it.

Output is JSON lines when stdout is not a terminal (or with --json), tables on a terminal.
Exit status: 0 ok, 1 the server answered an error (or could not be reached), or a command
did nothing it was asked to (rm of a name that does not exist, ack/nack of jobs not held), 2
bad usage or bad input, 130 interrupted (Ctrl-C ends `tail` and a following `read` with 0;
`worker` and `relay` have their own, see their --help).

Where client commands connect: --url/--api-key, else --context NAME's, else $TOPICS_URL and
$TOPICS_API_KEY, else the current context's (`topics context --help`), else
http://127.0.0.1:4000.
"""

RELAY_DESCRIPTION = """\
Deliver the jobs of QUEUE to an HTTP endpoint: each job's data is POSTed as JSON to --url.

2xx acks the job; 429/503 retry after the response's Retry-After (at most 24 h); other 5xx,
timeouts and connection errors retry with backoff (~1 s doubling to 60 s); other 4xx move the
job to the queue's dead-letter topic at once (reason "http <status>"); 410 Gone moves it there
too and stops the relay. After --breaker-threshold failures in a row nothing is sent for
--breaker-cooldown seconds, then one probe delivery decides.

Every request carries webhook-id: <queue>:<seq> (the same on each attempt: receivers dedupe
on it) and webhook-timestamp; with --secret whsec_<base64> also webhook-signature, signed per
the Standard Webhooks convention (v1, HMAC-SHA256 of "<id>.<timestamp>.<body>"). Requests go
only to --url: redirects (301/302/307/308) within its origin (scheme, host, port), or up
from http to https on the same host, are followed with the same POST; others only with
--follow-redirects, and a hop to another origin drops the --header values (but Content-Type
and User-Agent) and Cookie/Authorization; a redirect not followed dead-letters the job.

Here --url is the endpoint: the topics server is --server, `topics --url URL relay …`, or
$TOPICS_URL. One line per delivery on stdout (JSON when piped or with --json); a status line
on a terminal. Ctrl-C stops gracefully (deliveries in flight finish, the rest are released);
a second Ctrl-C releases them all.
"""

RELAY_EPILOG = (
    """\
  export TOPICS_RELAY_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
  topics relay orders-out --url https://example.org/hooks/orders \\
      --header 'Authorization: Bearer …' --concurrency 20
  topics relay orders-out --url http://127.0.0.1:8080/hook --drain   # until the queue is empty

"""
    + relay.EXIT_CODES
)

READ_EPILOG = """\
--from takes `earliest` (the default), `latest` (only records written from now on) or a seq:
the records *after* that seq, as the API's cursors. --since 10m and --from-time TIME (ISO 8601,
local time without an offset) start at the first record written at or after that time.
Without -e, read follows the topic after printing what it has (over an SSE watch, like tail)
until Ctrl-C, --to, or the topic's deletion.
Lost records (cap/TTL) print a GAP line on stderr and reading goes on; reading from the start
of a capped or TTL topic begins at its earliest retained record, which is no loss (no GAP).
With -e into a pipe or a file, stderr shows the progress (on a terminal) and a summary at the
end (-q: none).

With --consumer NAME, read prints the records after that named consumer's committed cursor and
commits what it printed (every --commit-every records and when it ends), so the next run goes
on where this one stopped; a missing consumer is created (an admin key) at --from. Without -e
it follows the topic until Ctrl-C.

  topics read orders -e | topics pub orders-copy                   # copy the data
  topics read orders -e --records | topics pub --records orders-copy  # tags and meta too
  topics read orders -e --consumer billing                         # the new records since last time
"""

PUB_EPILOG = """\
Without JSON, stdin is read: one JSON value per line (a record's data), or with --records one
record object per line ({"data": …, "tag": …, "node": …, "meta": …}; other keys, such as
read --records' seq, ts and delay_ms, are ignored). Lines go out in batches (--batch, and
at most 0.2 s after a batch's first line, so a live pipe keeps flowing). Each batch is checked
before it is sent: a line that is not JSON stops the run (exit 2) naming it, with the batches
before it written.
A summary goes to stderr; a progress bar too when stderr is a terminal.

On a queue, --delay 30s appends jobs now that workers can claim only later (at most 1d; more
is clamped to 1d); a log topic refuses it.
"""


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose commands take options between their positionals
    (``topics pub T --records JSON``, ``topics queue ack Q --node w 1 2``): plain argparse binds
    every positional at the first run of them, leaving later ones unrecognized. A parser with
    subcommands parses as usual (intermixing does not support them)."""

    _intermixing = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._intermixing or self._subparsers is not None:
            return super().parse_known_args(args, namespace)
        self._intermixing = True  # parse_known_intermixed_args calls back here, twice
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def _connection_options(parser: argparse._ActionsContainer, *, suppress: bool) -> None:
    """``--url``, ``--api-key`` and ``--json``; ``suppress``: no defaults (a copy after the
    subcommand must not reset a value given before it)."""
    unset, off = (argparse.SUPPRESS, argparse.SUPPRESS) if suppress else (None, False)
    url_help = "server URL (default: --context, $TOPICS_URL, the current context, http://127.0.0.1:4000)"
    key_help = "API key (default: the context's, or $TOPICS_API_KEY — better: arguments show in ps)"
    parser.add_argument("--url", default=unset, help=url_help)
    parser.add_argument("--api-key", default=unset, help=key_help)
    parser.add_argument(
        "--context",
        default=unset,
        type=contexts.context_name,
        metavar="NAME",
        help="connect with this context's URL and key (default: $TOPICS_CONTEXT, else the current one)",
    )
    parser.add_argument("--json", action="store_true", default=off, help="JSON lines even on a terminal")


def _common() -> Parser:
    """The connection options again, for every client subcommand (accepted after it too)."""
    common = Parser(add_help=False)
    _connection_options(common.add_argument_group("connection and output"), suppress=True)
    return common


def build_parser() -> argparse.ArgumentParser:
    """The whole command line."""
    common = _common()
    parser = Parser(
        prog="topics", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    _connection_options(parser, suppress=False)
    parser.set_defaults(run=None)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("serve", help="run the server (configured by TOPICS_* environment variables)")
    sub.add_parser("version", help="print the version")
    _topic(sub, common)
    _records(sub, common)
    _queues(sub, common)
    _worker(sub, common)
    _relay(sub)
    _routers(sub, common)
    _schedules(sub, common)
    _consumers(sub, common)
    _account(sub, common)
    _contexts(sub)
    _completion(sub, parser)
    return parser


def _account(sub: Sub, common: Parser) -> None:
    p = sub.add_parser(
        "whoami",
        parents=[common],
        help="what the API key may do: its scopes and name prefixes (GET /v0/whoami)",
    )
    p.set_defaults(run=account.cmd_whoami)

    p = sub.add_parser(
        "console",
        parents=[common],
        help="print the server's web console URL and open it in a browser",
        description=account.CONSOLE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--no-open", action="store_true", help="only print the URL (it is never opened without a terminal)"
    )
    p.set_defaults(run=account.cmd_console)


def _contexts(sub: Sub) -> None:
    context = _group(sub, "context", "named server URLs and API keys in a config file (nats context style)")
    context_parser = sub.choices["context"]
    context_parser.description = contexts.__doc__
    context_parser.formatter_class = argparse.RawDescriptionHelpFormatter
    p = context.add_parser("add", help="add or replace a context (the first one added becomes current)")
    p.add_argument("name", type=contexts.context_name)
    p.add_argument("--url", dest="server", required=True, help="the server URL")
    p.add_argument("--api-key", dest="key", metavar="KEY", help="its API key; - reads it from stdin")
    p.add_argument("--use", action="store_true", help="make it the current context")
    p.set_defaults(run=contexts.cmd_context_add, offline=True)

    p = context.add_parser("use", help="make a context the current one")
    p.add_argument("name", type=contexts.context_name)
    p.set_defaults(run=contexts.cmd_context_use, offline=True)

    p = context.add_parser("ls", help="list contexts (keys are never shown)")
    p.set_defaults(run=contexts.cmd_context_ls, offline=True)

    p = context.add_parser("rm", help="delete a context")
    p.add_argument("name", type=contexts.context_name)
    p.set_defaults(run=contexts.cmd_context_rm, offline=True)


def _completion(sub: Sub, root: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description=completion.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("shell", choices=completion.SHELLS)
    p.set_defaults(run=completion.cmd_completion, root=root, offline=True)


def _group(sub: Sub, name: str, help: str) -> Sub:
    parser = sub.add_parser(name, help=help, description=help)
    return parser.add_subparsers(dest="action", required=True, metavar="ACTION")


def _topic(sub: Sub, common: Parser) -> None:
    topic = _group(sub, "topic", "list, show, create/configure and delete topics")
    p = topic.add_parser("ls", parents=[common], help="list topics")
    p.add_argument("--prefix", help="only names starting with this")
    p.set_defaults(run=admin.cmd_topic_ls)

    p = topic.add_parser("get", parents=[common], help="a topic's state and configuration")
    p.add_argument("topic")
    p.set_defaults(run=admin.cmd_topic_get)

    p = topic.add_parser(
        "put",
        parents=[common],
        help="create a topic or update its configuration (fields not given keep their value)",
        description=admin.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("topic")
    p.add_argument("--type", help="log (default) or queue; fixed once created")
    p.add_argument("--durability", help="ephemeral, memory, disk or fsync")
    p.add_argument("--ttl-ms", type=int, help="records older than this expire (0: never)")
    p.add_argument("--cap-records", type=int, help="keep at most this many records (0: no cap)")
    p.add_argument("--cap-bytes", type=int, help="keep at most this many bytes (0: no cap)")
    p.add_argument("--discard", help="when full: old (evict the oldest) or reject (refuse writes)")
    p.add_argument("--lease-ms", type=int, help="queue: default lease of a claim")
    p.add_argument("--max-deliveries", type=int, help="queue: deliveries before dead-lettering (0: never)")
    p.add_argument("--dead-letter", help="queue: the topic dead-lettered jobs go to")
    p.add_argument(
        "--set", action="append", type=admin.setting, metavar="KEY=VALUE", help="any setting (JSON value)"
    )
    p.set_defaults(run=admin.cmd_topic_put)

    p = topic.add_parser("rm", parents=[common], help="delete a topic, its records and its routers")
    p.add_argument("topic")
    p.add_argument("--if-empty", action="store_true", help="refuse (topic_not_empty) if it has records")
    p.set_defaults(run=admin.cmd_topic_rm)


def _records(sub: Sub, common: Parser) -> None:
    p = sub.add_parser(
        "pub",
        parents=[common],
        help="append a record, or JSON lines from stdin",
        description="Append one record (JSON), or the JSON lines of stdin.",
        epilog=PUB_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("topic")
    p.add_argument("value", nargs="?", metavar="JSON", help="the record's data (with --records: the record)")
    p.add_argument("--records", action="store_true", help="input is record objects, not data values")
    p.add_argument("--tag", help="tag every record (--records: those without a tag)")
    p.add_argument("--node", help="origin node of every record (--records: those without one)")
    p.add_argument(
        "--delay",
        type=duration_ms,
        metavar="DURATION",
        help="queue topics: not claimable before this long after the write (500ms, 30s, 10m, 2h; at most 1d)",
    )
    p.add_argument(
        "--batch", type=_positive, default=1000, metavar="N", help="lines per request (default 1000)"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    p.set_defaults(run=records.cmd_pub)

    p = sub.add_parser(
        "read",
        parents=[common],
        help="print a topic's records (and follow it, unless -e)",
        description="Print a topic's records, one data value per line.",
        epilog=READ_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("topic")
    start = p.add_mutually_exclusive_group()
    start.add_argument(
        "--from", dest="from_", type=records.parse_from, default="earliest", metavar="earliest|latest|SEQ"
    )
    _time_starts(start)
    p.add_argument("--to", type=records.seq_arg, metavar="SEQ", help="stop after this seq (inclusive)")
    p.add_argument("-e", "--exit", action="store_true", help="exit at the head instead of following")
    p.add_argument("--records", action="store_true", help="whole records: seq, ts, tag, node, meta, data")
    p.add_argument("-q", "--quiet", action="store_true", help="-e into a pipe or file: no summary on stderr")
    p.add_argument(
        "--consumer",
        metavar="NAME",
        help="read after this named consumer's cursor and commit what is printed",
    )
    p.add_argument(
        "--commit-every",
        type=_positive,
        default=100,
        metavar="N",
        help="with --consumer: commit every N records printed (default 100)",
    )
    p.set_defaults(run=records.cmd_read)

    p = sub.add_parser(
        "tail",
        parents=[common],
        help="follow topics: print new records as they come (Ctrl-C ends)",
        description="Follow topics over one SSE watch: new records on stdout, lost ranges (GAP) and "
        "deleted topics on stderr. Ctrl-C exits 0.",
    )
    p.add_argument("topics", nargs="+", metavar="TOPIC")
    start = p.add_mutually_exclusive_group()
    start.add_argument(
        "--from",
        dest="from_",
        type=records.parse_from,
        default="latest",
        metavar="earliest|latest|SEQ",
        help="where to start on every topic (default latest: new records only; SEQ: after it)",
    )
    _time_starts(start)
    p.add_argument("--records", action="store_true", help="whole records, with their topic")
    p.set_defaults(run=records.cmd_tail)

    p = sub.add_parser(
        "delete", parents=[common], help="delete records below a seq and/or by tag (silent, permanent)"
    )
    p.add_argument("topic")
    p.add_argument("--before", type=records.seq_arg, metavar="SEQ", help="the records with a seq below SEQ")
    p.add_argument(
        "--tag", metavar="PATTERN", help="the records tagged PATTERN (a trailing * matches a prefix)"
    )
    p.set_defaults(run=records.cmd_delete)


def _time_starts(group: argparse._MutuallyExclusiveGroup) -> None:
    """``--since`` / ``--from-time``: start at the first record written at or after a time."""
    group.add_argument(
        "--since",
        dest="from_",
        type=time_ago,
        metavar="DURATION",
        help="start at the records written in the last DURATION (30s, 10m, 2h, 1d)",
    )
    group.add_argument(
        "--from-time",
        dest="from_",
        type=point_in_time,
        metavar="TIME",
        help="start at the first record written at or after TIME (ISO 8601: 2026-11-27T10:00:00Z)",
    )


def _queues(sub: Sub, common: Parser) -> None:
    queue = _group(sub, "queue", "queue counters, and claiming/acking/nacking jobs by hand")
    p = queue.add_parser(
        "stats", parents=[common], help="ready, in_flight, dead_lettered, delayed, oldest ready age, holders"
    )
    p.add_argument("queue")
    p.set_defaults(run=queues.cmd_queue_stats)

    p = queue.add_parser("leases", parents=[common], help="who holds which job (one lease per line)")
    p.add_argument("queue")
    p.add_argument("--node", help="only this worker's leases")
    p.set_defaults(run=queues.cmd_queue_leases)

    p = queue.add_parser("claim", parents=[common], help="lease ready jobs (one JSON line each)")
    p.add_argument("queue")
    p.add_argument("--node", required=True, help="the worker holding the lease")
    p.add_argument("--max", type=_positive, default=1, help="at most this many jobs (default 1)")
    p.add_argument("--lease-ms", type=_positive, help="lease length (default: the queue's lease_ms)")
    p.set_defaults(run=queues.cmd_queue_claim)

    for action, help in (("ack", "complete jobs"), ("nack", "release jobs for another delivery")):
        p = queue.add_parser(
            action,
            parents=[common],
            help=help,
            description=f"{help[0].upper()}{help[1:]}: the SEQs given, or stdin's (seqs or claim lines).",
        )
        p.add_argument("queue")
        p.add_argument("seqs", nargs="*", type=records.seq_arg, metavar="SEQ")
        p.add_argument("--node", required=True, help="the worker holding the leases")
        if action == "nack":
            p.add_argument("--delay-ms", type=int, default=0, help="claimable again after this delay")
        p.set_defaults(run=queues.cmd_queue_ack if action == "ack" else queues.cmd_queue_nack)

    dlq = _group(sub, "dlq", "dead-lettered jobs: list them, send them back")
    p = dlq.add_parser("ls", parents=[common], help="the dead-lettered jobs, oldest first")
    p.add_argument("dlq")
    p.add_argument("--limit", type=_positive, help="at most this many")
    p.set_defaults(run=queues.cmd_dlq_ls)

    p = dlq.add_parser("redrive", parents=[common], help="move dead-lettered jobs back to their queue")
    p.add_argument("dlq")
    p.add_argument("--to", metavar="QUEUE", help="this queue instead of each job's $dead_letter_from")
    p.add_argument("--limit", type=_positive, help="at most this many, oldest first")
    p.add_argument("--dry-run", action="store_true", help="only count them")
    p.set_defaults(run=queues.cmd_dlq_redrive)


WORKER_DESCRIPTION = """\
Consume QUEUE with a function of yours: a topics.Worker running HANDLER, named MODULE:FUNCTION
as celery -A, rq worker and arq name theirs (MODULE imported from the current directory, or
--path; FUNCTION may be dotted). It claims jobs (pushed over /work, or polled), runs the
handler — a coroutine function as asyncio tasks, anything else in a thread pool — and acks
the job when it returns. An exception nacks it with backoff; raising topics.Retry(delay_ms=…)
retries it after that delay; topics.Permanent (or a --permanent exception) moves it to the
queue's dead-letter topic at once; the queue's max_deliveries dead-letters the rest.

A start banner (queue, concurrency, mode, node) and the Worker's warnings go to stderr.
SIGTERM or Ctrl-C stops gracefully: no more claims, running handlers get --grace seconds to
finish, the rest are released for redelivery at once; a second signal releases them all.
"""

WORKER_EPILOG = (
    """\
  # tasks.py:  def send_email(job): smtp.send(**job.data)
  topics worker tasks:send_email emails --concurrency 8
  topics worker app.jobs:handle thumbnails --path src --rate-limit 20 --permanent app.errors:BadInput
  topics worker tasks:send_email emails --drain        # until the queue is empty

"""
    + worker.EXIT_CODES
)


def _worker(sub: Sub, common: Parser) -> None:
    p = sub.add_parser(
        "worker",
        parents=[common],
        help="consume a queue with a Python function (MODULE:FUNCTION), like celery/rq/arq workers",
        description=WORKER_DESCRIPTION,
        epilog=WORKER_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("handler", metavar="MODULE:FUNCTION", help="the handler, called with each topics.Job")
    p.add_argument("queue", metavar="QUEUE")
    p.add_argument("--path", action="append", metavar="DIR", help="import from DIR too (repeatable)")
    p.add_argument(
        "--concurrency", type=_positive, default=1, metavar="N", help="jobs run at once (default 1)"
    )
    p.add_argument("--node", help="the worker's name holding the leases (default <host>-<pid>-<hex>)")
    p.add_argument(
        "--mode", choices=("auto", "push", "poll"), default="auto", help="push over /work, or poll claim"
    )
    p.add_argument("--lease-ms", type=_positive, metavar="MS", help="lease per job (default: the queue's)")
    p.add_argument(
        "--no-auto-extend",
        dest="auto_extend",
        action="store_false",
        help="do not extend leases while a job is held",
    )
    p.add_argument(
        "--backoff",
        choices=("exponential", "linear", "fixed"),
        default="exponential",
        help="delay policy for failed jobs (default exponential)",
    )
    p.add_argument(
        "--backoff-ms",
        type=_positive,
        metavar="MS",
        help="the first delay (exponential), step (linear) or every delay (fixed); default 1000",
    )
    p.add_argument("--backoff-max-ms", type=_positive, metavar="MS", help="the longest delay (default 60000)")
    p.add_argument(
        "--permanent",
        action="append",
        metavar="MODULE:EXCEPTION",
        help="an exception class that dead-letters its job at once (repeatable)",
    )
    p.add_argument("--rate-limit", type=_positive_float, metavar="R", help="at most R jobs started a second")
    p.add_argument(
        "--breaker-threshold",
        type=_non_negative,
        default=0,
        metavar="N",
        help="handler failures in a row that open a circuit breaker (default 0: none)",
    )
    p.add_argument(
        "--breaker-cooldown",
        type=_positive_float,
        default=30.0,
        metavar="S",
        help="seconds the open breaker waits before a probe (default 30)",
    )
    p.add_argument(
        "--grace",
        type=_non_negative_float,
        default=30.0,
        metavar="S",
        help="seconds running jobs get to finish after a stop (default 30)",
    )
    p.add_argument(
        "--drain", action="store_true", help="exit when the queue is empty (default: run until SIGTERM)"
    )
    p.add_argument("-v", "--verbose", action="store_true", help="log retries and breaker changes too")
    p.set_defaults(run=worker.cmd_worker)


def _relay(sub: Sub) -> None:
    p = sub.add_parser(
        "relay",
        help="deliver a queue's jobs to an HTTP endpoint (webhooks)",
        description=RELAY_DESCRIPTION,
        epilog=RELAY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("queue")
    p.add_argument(
        "--url", dest="endpoint", required=True, metavar="URL", help="the endpoint (http or https)"
    )
    p.add_argument(
        "--header",
        action="append",
        type=relay.header_arg,
        metavar="NAME:VALUE",
        help="a request header, sent as given (repeatable; the value in visible ASCII, spaces and tabs)",
    )
    p.add_argument(
        "--concurrency", type=_positive, default=10, metavar="N", help="deliveries at once (default 10)"
    )
    p.add_argument(
        "--timeout",
        type=_positive_float,
        default=30.0,
        metavar="S",
        help="seconds a delivery may take, redirects included (default 30)",
    )
    p.add_argument(
        "--secret",
        action="append",
        metavar="whsec_…",
        help=f"sign every delivery (repeat during a rotation; default ${relay.SECRET_ENV}, which is "
        "better: arguments show in ps)",
    )
    p.add_argument(
        "--follow-redirects",
        action="store_true",
        help="follow redirects to other origins too (host, port, scheme)",
    )
    p.add_argument(
        "--breaker-threshold",
        type=_non_negative,
        default=10,
        metavar="N",
        help="failures in a row that open the circuit breaker (default 10; 0: no breaker)",
    )
    p.add_argument(
        "--breaker-cooldown",
        type=_positive_float,
        default=30.0,
        metavar="S",
        help="seconds the open breaker waits before a probe (default 30)",
    )
    p.add_argument(
        "--rate-limit", type=_positive_float, metavar="R", help="at most R deliveries started a second"
    )
    p.add_argument(
        "--drain", action="store_true", help="exit when the queue is empty (default: run until Ctrl-C)"
    )
    p.add_argument("--node", help="the worker name holding the leases (default <host>-<pid>-<hex>)")
    p.add_argument("-v", "--verbose", action="store_true", help="log every failure and breaker change")
    connection = p.add_argument_group("connection and output")
    connection.add_argument(
        "--server", dest="url", default=argparse.SUPPRESS, metavar="URL", help="topics server URL"
    )
    connection.add_argument("--api-key", default=argparse.SUPPRESS, help="API key (default: $TOPICS_API_KEY)")
    connection.add_argument(
        "--context", default=argparse.SUPPRESS, type=contexts.context_name, metavar="NAME", help="a context"
    )
    connection.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="JSON lines even on a terminal"
    )
    p.set_defaults(run=relay.cmd_relay)


def _routers(sub: Sub, common: Parser) -> None:
    router = _group(sub, "router", "server-side forwarding rules from one topic to another")
    p = router.add_parser("ls", parents=[common], help="list routers")
    p.add_argument("--prefix", help="only names starting with this")
    p.add_argument("--source", help="only routers from this topic")
    p.add_argument("--dest", help="only routers into this topic")
    p.set_defaults(run=admin.cmd_router_ls)

    p = router.add_parser("get", parents=[common], help="a router and its progress")
    p.add_argument("name")
    p.set_defaults(run=admin.cmd_router_get)

    p = router.add_parser("put", parents=[common], help="create or update a router")
    p.add_argument("name", help='conventionally "<source>-><dest>"')
    p.add_argument("--source", required=True, help="the topic whose records are forwarded")
    p.add_argument("--dest", required=True, help="the topic they are appended to")
    p.add_argument("--filter", type=admin.json_arg, help='a match tuple, e.g. \'["tag","Glob","eu:*"]\'')
    p.add_argument("--guarantee", help="at_least_once (default) or exactly_once")
    p.add_argument("--preserve-node", action=argparse.BooleanOptionalAction, help="keep $node (default yes)")
    p.add_argument("--preserve-tag", action=argparse.BooleanOptionalAction, help="keep $tag (default yes)")
    p.add_argument(
        "--create-dest", action=argparse.BooleanOptionalAction, help="create dest if absent (default yes)"
    )
    p.add_argument(
        "--allow-cycle", action=argparse.BooleanOptionalAction, help="permit a directed cycle (default no)"
    )
    p.add_argument(
        "--set", action="append", type=admin.setting, metavar="KEY=VALUE", help="any option (JSON value)"
    )
    p.set_defaults(run=admin.cmd_router_put)

    p = router.add_parser("rm", parents=[common], help="delete a router")
    p.add_argument("name")
    p.set_defaults(run=admin.cmd_router_rm)


def _non_negative(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {number}")
    return number


def _non_negative_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value!r}") from None
    if not 0 <= number < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value}")
    return number


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}") from None
    if not 0 < number < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value}")
    return number


SCHEDULE_EPILOG = """\
A schedule appends its records to its topic on a cron expression (five fields, UTC) or every
N ms; --missed says what happens to the runs due while the server was down (skip, the
default, or once: one append for all of them).

  topics schedule put nightly --topic jobs --cron '0 2 * * *' --data '{"task": "report"}'
  topics schedule put beat --topic health --every-ms 5000 --data ping --tag hb
  topics schedule put fan --topic jobs --cron '*/5 * * * mon-fri' --records '[{"data": 1}, {"data": 2}]'
"""


def _schedules(sub: Sub, common: Parser) -> None:
    schedule = _group(sub, "schedule", "timed appends: records written to a topic on a cron or an interval")
    p = schedule.add_parser("ls", parents=[common], help="list schedules")
    p.add_argument("--prefix", help="only names starting with this")
    p.add_argument("--topic", help="only schedules appending to this topic")
    p.set_defaults(run=admin.cmd_schedule_ls)

    p = schedule.add_parser("get", parents=[common], help="a schedule and its progress")
    p.add_argument("name")
    p.set_defaults(run=admin.cmd_schedule_get)

    p = schedule.add_parser(
        "put",
        parents=[common],
        help="create or update a schedule",
        epilog=SCHEDULE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name")
    p.add_argument("--topic", required=True, help="the topic each run appends to (created if missing)")
    timing = p.add_mutually_exclusive_group(required=True)
    timing.add_argument("--cron", help="five fields, UTC: minute hour day-of-month month day-of-week")
    timing.add_argument("--every-ms", type=_positive, help="run every this many milliseconds (at least 100)")
    p.add_argument("--data", action="append", metavar="VALUE", help="a record's data (JSON, else the string)")
    p.add_argument("--tag", help="the tag of the --data records")
    p.add_argument(
        "--records", type=admin.json_arg, help="the records: a JSON array of {data, tag, node, meta}"
    )
    p.add_argument("--node", help="the records' default node")
    p.add_argument("--missed", choices=("skip", "once"), help="after downtime: skip (default) or once")
    p.set_defaults(run=admin.cmd_schedule_put)

    p = schedule.add_parser("rm", parents=[common], help="delete a schedule")
    p.add_argument("name")
    p.set_defaults(run=admin.cmd_schedule_rm)


CONSUMER_EPILOG = """\
A named consumer is a cursor the server keeps for a reader: the last seq it has read. Readers
read after it and commit how far they got (the SDK's Client.consume, or topics read --consumer),
so a restarted reader — or another process taking over — goes on after the last commit.

  topics consumer create orders billing                 # nothing read yet
  topics consumer create orders audit --from latest     # only records written from now on
  topics consumer create orders recent --since 1h       # the records of the last hour on
  topics read orders -e --consumer billing              # print what is new, commit it
  topics consumer ls orders                             # who is behind (lag)
  topics consumer commit orders billing 0 --force       # read everything again
"""


def _consumers(sub: Sub, common: Parser) -> None:
    consumer = _group(sub, "consumer", "named consumers: cursors the server keeps for readers, and their lag")
    p = consumer.add_parser("ls", parents=[common], help="a topic's consumers, their cursors and lag")
    p.add_argument("topic")
    p.add_argument("--prefix", help="only names starting with this")
    p.set_defaults(run=consumers.cmd_consumer_ls)

    p = consumer.add_parser("show", parents=[common], help="a consumer's cursor, the topic's head, the lag")
    p.add_argument("topic")
    p.add_argument("name")
    p.set_defaults(run=consumers.cmd_consumer_show)

    p = consumer.add_parser(
        "create",
        parents=[common],
        help="create a consumer (an existing one is left as it is unless --force)",
        epilog=CONSUMER_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("topic")
    p.add_argument("name")
    start = p.add_mutually_exclusive_group()
    start.add_argument(
        "--from",
        dest="from_",
        type=records.parse_from,
        metavar="earliest|latest|SEQ",
        help="its cursor: earliest (default: nothing read yet), latest (the head now) or a seq",
    )
    _time_starts(start)
    p.add_argument("--force", action="store_true", help="reposition an existing consumer")
    p.set_defaults(run=consumers.cmd_consumer_create)

    p = consumer.add_parser("commit", parents=[common], help="move a consumer's cursor to SEQ")
    p.add_argument("topic")
    p.add_argument("name")
    p.add_argument("seq", type=records.seq_arg, metavar="SEQ", help="the last seq handled")
    p.add_argument("--force", action="store_true", help="allow moving it back")
    p.set_defaults(run=consumers.cmd_consumer_commit)

    p = consumer.add_parser("rm", parents=[common], help="delete a consumer (the records stay)")
    p.add_argument("topic")
    p.add_argument("name")
    p.set_defaults(run=consumers.cmd_consumer_rm)


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {number}")
    return number
