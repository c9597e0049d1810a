"""The ``topics`` command: the server (``topics serve``) and a client for it.

::

    topics serve                                   # the server (topics_server.cli)
    topics topic ls|get|put|rm                     # topics
    topics pub TOPIC [JSON]                        # append (no JSON: stdin's JSON lines)
    topics read TOPIC [--from …] [--to SEQ] [-e]   # print records (-e: stop at the head)
    topics tail TOPIC…                             # follow topics over SSE
    topics delete TOPIC (--before SEQ | --tag P)   # delete records
    topics queue stats|claim|ack|nack QUEUE        # queues by hand
    topics dlq ls|redrive DLQ                      # dead-lettered jobs
    topics worker MODULE:FUNCTION QUEUE            # consume a queue with a Python handler
    topics relay QUEUE --url URL                   # deliver jobs to an HTTP endpoint (webhooks)
    topics router ls|get|put|rm                    # routers
    topics schedule ls|get|put|rm                  # schedules (timed appends)
    topics consumer ls|show|create|commit|rm TOPIC # named consumers (cursors kept by the server)
    topics read TOPIC --consumer NAME              # read after a consumer's cursor, commit it
    topics whoami                                  # what the API key may do (scopes, prefixes)
    topics console [--no-open]                     # print (and open) the web console URL
    topics context add|use|ls|rm                   # named server URLs and API keys
    topics completion bash|zsh|fish                # a shell completion script

Client commands connect to ``--url`` with ``--api-key``, else a context's (``--context``),
else ``$TOPICS_URL`` with ``$TOPICS_API_KEY``, else the current context's
(:mod:`topics.cli.contexts`), through :class:`topics.Client`. They print JSON lines when
stdout is not a terminal (or with ``--json``), tables on a terminal. Exit status: 0 ok; 1 the
server answered an error or could not be reached (``topics: <code>: <message>`` on stderr),
or a command did nothing it was asked to (``rm`` of a name that does not exist; ``queue
ack``/``nack`` of jobs not held); 2 bad usage or bad input; 130 interrupted — except
``tail`` and a following ``read``, which Ctrl-C ends normally (0), and ``worker`` and
``relay``, whose graceful stop Ctrl-C/SIGTERM is (0; 130 when it cut a ``--drain`` short;
``relay`` adds 3: the endpoint answered 410, and 4: ``--drain`` dead-lettered jobs).

``serve`` and ``version`` hand over to :mod:`topics_server.cli`, imported only for them, so a
client command never loads the server.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

import httpx

from ..client import Client
from ..errors import ConnectionError, TopicsError
from .contexts import connection
from .errors import UsageError
from .output import Output
from .parser import build_parser

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``topics`` with ``argv`` (default ``sys.argv[1:]``) and returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as done:  # --help (0) or a usage error (2), already printed
        return done.code if isinstance(done.code, int) else 2
    if args.run is None:
        from topics_server.cli import main as server_main

        return int(server_main([args.command]))
    out = Output.for_process(force_json=args.json)
    try:
        url, api_key = (None, None) if getattr(args, "offline", False) else connection(args)
    except UsageError as err:
        print(f"topics: error: {err}", file=sys.stderr)
        return 2
    client = Client(url, api_key=api_key)
    try:
        with client:
            return int(args.run(client, args, out))
    except UsageError as err:
        print(f"topics: error: {err}", file=sys.stderr)
        return 2
    except TopicsError as err:
        print(f"topics: {err.code}: {err.message}", file=sys.stderr)
        return 1
    except ConnectionError as err:
        print(f"topics: cannot reach {client.settings.url}: {err}", file=sys.stderr)
        return 1
    except httpx.InvalidURL as err:
        print(f"topics: error: bad server URL {client.settings.url!r}: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("topics: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader went away (``topics read T | head``): stop quietly, and keep Python's own
        # final flush of stdout from failing again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    finally:
        with contextlib.suppress(OSError, ValueError):
            out.flush()


if __name__ == "__main__":
    sys.exit(main())
