"""``topics whoami`` and ``topics console``: what the CLI's key may do on its server, and where
that server's web console is.

``whoami`` asks ``GET /v0/whoami`` (any known key may): the key's label, its scopes and its
name allowlist — ``auth: dev`` with every scope when the server has no keys. ``console`` prints
``<server URL>/console`` for the configured URL (``--url``, ``--context``, ``$TOPICS_URL`` …)
and opens it in a browser only when a graphical one is usable: never with ``--no-open``, never
when stdout is not a terminal (a script or a pipe), never on Linux/BSD without a display
(``DISPLAY``/``WAYLAND_DISPLAY``: an SSH session), and never in a text-mode browser (``lynx``,
``w3m`` …, which would take over the terminal).
"""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from collections.abc import Mapping

from ..client import Client
from .output import Output

CONSOLE_PATH = "/console"

CONSOLE_DESCRIPTION = """\
Print the web console's URL, <server URL>/console, for the server the CLI is configured for
(--url, --context, $TOPICS_URL, the current context), and open it in a browser when one is
usable: not with --no-open, not when stdout is not a terminal, not on Linux/BSD without
DISPLAY or WAYLAND_DISPLAY (an SSH session), and not in a text-mode browser.
On a terminal the URL is printed as text; otherwise (or with --json) as a JSON line
{"url": …, "opened": …}. The console shows what the API key may do (topics whoami).
"""

TEXT_BROWSERS = frozenset({"www-browser", "links", "links2", "elinks", "lynx", "w3m"})
"""``webbrowser``'s console browsers: usable only in the terminal the CLI writes to."""


def cmd_whoami(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``whoami``: the key's label, scopes and prefix allowlist (``prefixes`` empty: any name)."""
    out.item(client.whoami())
    return 0


def console_url(base_url: str) -> str:
    """The web console of the server at ``base_url`` (already without a trailing ``/``)."""
    return base_url + CONSOLE_PATH


def should_open(no_open: bool, stdout_tty: bool, platform: str, env: Mapping[str, str]) -> bool:
    """Whether ``console`` may try a browser at all (:func:`graphical_browser` decides which)."""
    return not no_open and stdout_tty and has_display(platform, env)


def has_display(platform: str, env: Mapping[str, str]) -> bool:
    """Whether a graphical session can show a window: always on macOS and Windows, on other
    systems (Linux, the BSDs) only with ``DISPLAY`` or ``WAYLAND_DISPLAY`` set."""
    if platform == "darwin" or platform.startswith(("win", "cygwin")):
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def graphical_browser() -> webbrowser.BaseBrowser | None:
    """The browser ``webbrowser`` would use, unless there is none or it is a text-mode one."""
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return None
    name = os.path.basename(getattr(browser, "name", "") or "")
    return None if name in TEXT_BROWSERS else browser


def cmd_console(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``console [--no-open]``: print the console's URL, open it when a browser is usable."""
    url = console_url(client.settings.url)
    browser = None
    if should_open(args.no_open, sys.stdout.isatty(), sys.platform, os.environ):
        browser = graphical_browser()
    opened = browser is not None and browser.open(url)
    if out.tty:
        print(url, file=out.stdout)
        if opened:
            out.notice("opened in your browser")
    else:
        out.json_line({"url": url, "opened": opened})
    return 0
