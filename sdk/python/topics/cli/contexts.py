"""Contexts: named server URLs and API keys kept in a config file, chosen by name — ``nats
context`` and ``aws --profile`` style.

::

    topics context add prod --url https://topics.example.org --api-key -   # the key from stdin
    topics context use prod          # the current context
    topics context ls                # every context (keys never shown)
    topics --context staging topic ls                 # or TOPICS_CONTEXT=staging
    topics context rm staging

The file is ``$TOPICS_CONFIG``, else ``$XDG_CONFIG_HOME/topics/config.toml``, else
``~/.config/topics/config.toml``: TOML, written with mode 0600 (it holds keys) in a directory
created with mode 0700::

    current = "prod"

    [contexts.prod]
    url = "https://topics.example.org"
    api_key = "…"

Where a client command connects (:func:`connection`), first match wins, the URL and the key
each overridable by their flag:

1. ``--url`` / ``--api-key``;
2. the context named by ``--context``;
3. ``$TOPICS_URL`` (with ``$TOPICS_API_KEY``);
4. the context named by ``$TOPICS_CONTEXT``, else the current one (``context use``);
5. ``http://127.0.0.1:4000`` (with ``$TOPICS_API_KEY``).

A context's key goes only with its URL: a context without one sends none, rather than a
``$TOPICS_API_KEY`` meant for some other server. Contexts are the command line's: the SDK's
``topics.Client()`` reads only ``TOPICS_URL``/``TOPICS_API_KEY`` (a library does not read a
per-user file behind a program's back; ``nats.py`` does not read ``nats context`` either).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..client import Client
from .errors import UsageError
from .output import Output

CONFIG_ENV = "TOPICS_CONFIG"
CONTEXT_ENV = "TOPICS_CONTEXT"
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A context's name: letters, digits, ``_`` and ``-`` (a bare TOML key)."""


@dataclass(slots=True)
class Context:
    """One named server: ``url`` and, when it needs one, ``api_key``."""

    name: str
    url: str
    api_key: str | None = None


@dataclass(slots=True)
class Config:
    """The config file's contents: the contexts by name and the current one's name."""

    current: str | None = None
    contexts: dict[str, Context] = field(default_factory=dict)


def config_path() -> Path:
    """``$TOPICS_CONFIG``, else ``$XDG_CONFIG_HOME/topics/config.toml``, else
    ``~/.config/topics/config.toml``."""
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "topics" / "config.toml"


def load(path: Path) -> Config:
    """The config at ``path`` (an empty one when there is no file); a file that is not valid
    TOML, or whose contexts lack a ``url`` string, is a :class:`UsageError` naming it."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Config()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise UsageError(f"config file {path}: {err}") from None
    config = Config(current=raw.get("current") if isinstance(raw.get("current"), str) else None)
    contexts = raw.get("contexts", {})
    if not isinstance(contexts, dict):
        raise UsageError(f"config file {path}: [contexts] must be a table")
    for name, body in contexts.items():
        if not isinstance(body, dict) or not isinstance(body.get("url"), str):
            raise UsageError(f'config file {path}: context {name!r} needs url = "…"')
        key = body.get("api_key")
        config.contexts[name] = Context(name, body["url"], key if isinstance(key, str) and key else None)
    return config


def _toml_string(text: str) -> str:
    """A TOML basic string: ``"``, ``\\`` and control characters escaped."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def dump(config: Config) -> str:
    """The TOML text of ``config`` (:func:`load` reads it back unchanged)."""
    lines = ["# topics contexts (topics context --help); this file holds API keys: keep it 0600"]
    if config.current is not None:
        lines.append(f"current = {_toml_string(config.current)}")
    for name, ctx in sorted(config.contexts.items()):
        lines += ["", f"[contexts.{name}]", f"url = {_toml_string(ctx.url)}"]
        if ctx.api_key is not None:
            lines.append(f"api_key = {_toml_string(ctx.api_key)}")
    return "\n".join(lines) + "\n"


def save(config: Config, path: Path) -> None:
    """Writes ``config`` to ``path`` whole or not at all (a temporary file in the same
    directory, fsynced, then renamed over it), with mode 0600; the directory is created with
    mode 0700 when missing."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(dump(config))
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)  # an existing temp file kept its mode through O_TRUNC
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# -- where a command connects --------------------------------------------------------------------


def connection(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """``(url, api_key)`` for :class:`topics.Client` by the precedence above; ``None`` leaves
    the client its own fallback (``TOPICS_URL``/``TOPICS_API_KEY``, the default URL), ``""``
    means no key at all."""
    url, key = _source(getattr(args, "context", None))
    if args.url is not None:
        url = args.url
    if args.api_key is not None:
        key = args.api_key
    return url, key


def _source(flag: str | None) -> tuple[str | None, str | None]:
    if flag is not None:
        return _pair(_named(flag, "--context"))
    if os.environ.get("TOPICS_URL"):
        return None, None  # the client reads TOPICS_URL and TOPICS_API_KEY itself
    env = os.environ.get(CONTEXT_ENV)
    if env:
        return _pair(_named(env, f"${CONTEXT_ENV}"))
    config = load(config_path())
    if config.current is not None and config.current in config.contexts:
        return _pair(config.contexts[config.current])
    return None, None


def _named(name: str, where: str) -> Context:
    config = load(config_path())
    try:
        return config.contexts[name]
    except KeyError:
        known = ", ".join(sorted(config.contexts)) or "none yet: topics context add NAME --url URL"
        raise UsageError(f"{where}: no context {name!r} in {config_path()} ({known})") from None


def _pair(ctx: Context) -> tuple[str | None, str | None]:
    return ctx.url, ctx.api_key or ""


# -- topics context add|use|ls|rm ----------------------------------------------------------------


def context_name(text: str) -> str:
    if not NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"a context name is 1-64 letters, digits, _ or -; got {text!r}")
    return text


def cmd_context_add(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``context add NAME --url URL [--api-key KEY|-] [--use]``: adds or replaces a context
    (``-``: the key is read from stdin's first line, out of ``ps``' sight)."""
    key = args.key
    if key == "-":
        key = sys.stdin.readline().strip()
    path = config_path()
    config = load(path)
    replaced = args.name in config.contexts
    config.contexts[args.name] = Context(args.name, args.server.rstrip("/"), key or None)
    if args.use or config.current is None:
        config.current = args.name
    save(config, path)
    out.item(_row(config, config.contexts[args.name]) | {"replaced": replaced, "file": str(path)})
    return 0


def cmd_context_use(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``context use NAME``: the context commands use when none is named."""
    path = config_path()
    config = load(path)
    _named(args.name, "context use")
    config.current = args.name
    save(config, path)
    out.item(_row(config, config.contexts[args.name]))
    return 0


def cmd_context_ls(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``context ls``: name, url, whether it has a key (never the key), current or not."""
    config = load(config_path())
    rows = [_row(config, ctx) for _, ctx in sorted(config.contexts.items())]
    out.rows(rows, ("context", "url", "api_key", "current"), empty="(no contexts: topics context add)")
    return 0


def cmd_context_rm(client: Client, args: argparse.Namespace, out: Output) -> int:
    """``context rm NAME``: a name that does not exist is an error (exit 2)."""
    path = config_path()
    config = load(path)
    _named(args.name, "context rm")
    del config.contexts[args.name]
    if config.current == args.name:
        config.current = None
    save(config, path)
    out.item({"context": args.name, "deleted": True})
    return 0


def _row(config: Config, ctx: Context) -> dict[str, object]:
    return {
        "context": ctx.name,
        "url": ctx.url,
        "api_key": "set" if ctx.api_key else "none",
        "current": ctx.name == config.current,
    }
