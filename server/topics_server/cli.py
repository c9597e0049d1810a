"""The ``topics`` command. ``topics serve`` runs the server: the native HTTP/1.1 server
(``http``; HTTP/2 over cleartext on the same port, ``http2``) on uvloop, one process, one event
loop.

Configuration comes only from the environment (see :mod:`topics_server.settings`); bad
configuration prints how to fix it and exits with status 2 without binding anything. Logging is
set up first (``logs``: ``TOPICS_LOG_FORMAT``, then ``TOPICS_LOG_LEVEL``), before the server's
modules are imported, so even a library's import-time warning is a line in the chosen format.
SIGINT/SIGTERM: readiness turns ``shutting_down``, the server stops accepting connections, lets
requests in flight finish (at most :data:`DRAIN_S`), checkpoints and exits 0. A data directory
recovery refuses (a file of a newer format version: ``UnsupportedFormat``) or fails on stops the
server with status 1, the data directory as it was.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from importlib import metadata
from typing import TYPE_CHECKING

from . import logs
from .settings import ConfigError, Settings, load_settings, log_format

if TYPE_CHECKING:
    from .context import ServerContext

log = logging.getLogger("topics.server")
DRAIN_S = 10.0


async def run(settings: Settings) -> int:
    # the server's modules are imported only now, once logging is set up (module docs)
    from topics_engine.datadir import DataDirLocked

    from .app import build
    from .context import VERSION
    from .http import HttpServer

    app, ctx = build(settings)
    try:
        await ctx.start()  # locks the data directory; recovery runs in the background
    except DataDirLocked as err:
        log.error("%s", err)
        return 1
    server = HttpServer(app)
    try:
        await server.start(settings.host, settings.port)
    except OSError as err:
        log.error("cannot listen on %s:%d: %s", settings.host, settings.port, err)
        await ctx.stop()
        return 1
    log.info(
        "topics %s listening on http://%s:%d, data in %s",
        VERSION,
        settings.host,
        settings.port,
        settings.data_dir,
    )
    if settings.api_keys.enabled:
        log.info(
            "authentication on: %d API keys (SHA-256 digests held, never the keys)", len(settings.api_keys)
        )
    else:
        log.warning(
            "AUTHENTICATION DISABLED: no API keys (TOPICS_API_KEYS) are configured, so every request is "
            "served and any Authorization header is ignored (dev mode)"
        )
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    if not await _recovered_unless_stopped(ctx, stopping):
        await server.shutdown(0)
        await ctx.stop()
        return 1
    await stopping.wait()
    ctx.shutting_down = True
    log.info("shutting down: draining requests in flight")
    await server.shutdown(DRAIN_S)
    await ctx.stop()
    log.info("stopped")
    return 0


async def _recovered_unless_stopped(ctx: ServerContext, stopping: asyncio.Event) -> bool:
    """Wait until recovery finished or a stop signal came; ``False`` if recovery failed (logged)."""
    from topics_engine.datadir import UnsupportedFormat

    recovery = asyncio.ensure_future(ctx.wait_ready())
    stop = asyncio.ensure_future(stopping.wait())
    await asyncio.wait({recovery, stop}, return_when=asyncio.FIRST_COMPLETED)
    stop.cancel()
    if not recovery.done() or recovery.cancelled() or recovery.exception() is None:
        return True
    error = recovery.exception()
    if isinstance(error, UnsupportedFormat):
        log.error("cannot open the data directory: %s", error)
    else:
        log.error("recovery failed; the data directory is left as it is", exc_info=error)
    return False


def serve(settings: Settings) -> int:
    import uvloop

    logs.set_levels(settings.log_level, settings.log_levels, settings.access_log)
    return uvloop.run(run(settings))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="topics", description="topics — a persistent event engine")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the HTTP server (configured by TOPICS_* environment variables)")
    sub.add_parser("version", help="print the version")
    args = parser.parse_args(argv)
    if args.command == "version":
        print(metadata.version("topics"))
        return 0
    try:
        fmt = log_format(os.environ)
    except ConfigError as err:
        print(f"topics: configuration error: {err}", file=sys.stderr)
        return 2
    logs.install(fmt)
    try:
        settings = load_settings()
    except ConfigError as err:
        log.error("configuration error: %s", err)
        return 2
    finally:
        # the keys live on only as digests: none in os.environ (the kernel's copy of the
        # initial environment, /proc/<pid>/environ, is the operator's to protect: docs/SECURITY.md)
        os.environ.pop("TOPICS_API_KEYS", None)
    return serve(settings)


if __name__ == "__main__":
    sys.exit(main())
