"""The ``topics`` command. ``topics serve`` runs the server (uvicorn, uvloop, httptools).

Configuration comes only from the environment (see :mod:`topics_server.settings`); bad
configuration prints how to fix it and exits with status 2 without binding anything.
SIGINT/SIGTERM stop accepting connections, let in-flight requests finish, and exit 0.
"""

from __future__ import annotations

import argparse
import logging
import sys

import uvicorn

from .app import create_app
from .context import VERSION, ServerContext
from .settings import ConfigError, Settings, load_settings

log = logging.getLogger("topics.server")


class _Server(uvicorn.Server):
    """uvicorn's server, flipping readiness to ``shutting_down`` as soon as a signal arrives."""

    def __init__(self, config: uvicorn.Config, ctx: ServerContext) -> None:
        super().__init__(config)
        self.ctx = ctx

    def handle_exit(self, sig: int, frame: object) -> None:
        self.ctx.shutting_down = True
        super().handle_exit(sig, frame)  # type: ignore[arg-type]
        # uvicorn re-raises captured signals after its graceful shutdown, which would make a
        # clean SIGTERM exit with -15; a drained, orderly stop exits 0.
        self._captured_signals.clear()


def serve(settings: Settings) -> int:
    app, ctx = create_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        loop="uvloop",
        http="httptools",
        lifespan="on",
        log_level=settings.log_level,
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=10,
    )
    log.warning(
        "topics %s listening on http://%s:%d, data in %s (authentication disabled: no API keys)",
        VERSION,
        settings.host,
        settings.port,
        settings.data_dir,
    )
    _Server(config, ctx).run()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="topics", description="topics — a persistent event engine")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the HTTP server (configured by TOPICS_* environment variables)")
    sub.add_parser("version", help="print the version")
    args = parser.parse_args(argv)
    if args.command == "version":
        print(VERSION)
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        settings = load_settings()
    except ConfigError as err:
        print(f"topics: configuration error: {err}", file=sys.stderr)
        return 2
    return serve(settings)


if __name__ == "__main__":
    sys.exit(main())
