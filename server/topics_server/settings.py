"""Server settings, built from the environment in exactly one function (:func:`load_settings`).

Variables and defaults are the contract's (API keys, write limits, resource caps). Bad configuration raises
:class:`ConfigError`, whose message names the variable and says how to fix it (never a key's
secret); ``topics serve`` prints it and exits non-zero instead of starting. ``TOPICS_API_KEYS``
is kept only as the hashed :class:`KeyStore`.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from topics_engine import Limits
from topics_engine.limits import KIB, MIB

from .auth import KeyConfigError, KeyStore


class ConfigError(Exception):
    """Configuration that must not start a server."""


@dataclass(frozen=True, slots=True)
class Caps:
    """The resource caps the server enforces (0: unlimited). The topic and total-bytes caps
    are the engine's (``Limits``); the router, schedule, consumer and watch-session caps their
    features'."""

    max_routers: int = 10_000
    max_schedules: int = 10_000
    max_consumers: int = 100_000
    max_watch_sessions: int = 10_000
    max_sse_connections: int = 10_000
    max_sse_connections_per_key: int = 1000
    max_inflight_per_key: int = 1000


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 4000
    data_dir: Path = Path("./topics-data")
    max_body_bytes: int = 64 * MIB
    limits: Limits = Limits()
    log_level: str = "info"
    """The level of topics' own loggers (``topics.*``)."""
    log_levels: tuple[tuple[str, str], ...] = ()
    """Other loggers named in ``TOPICS_LOG_LEVEL`` (``debug,connexion=debug``), with their level;
    every logger not named stays at ``warning`` (``logs``)."""
    log_format: str = "plain"
    """``TOPICS_LOG_FORMAT``: ``plain`` lines, or ``json`` (one object per line)."""
    access_log: bool = False
    """``TOPICS_ACCESS_LOG``: one ``topics.access`` line per request (``accesslog``)."""
    cors_origins: tuple[str, ...] = ()
    """``TOPICS_CORS_ORIGINS``: the browser origins allowed to call the API (``("*",)``: any);
    empty: no CORS headers at all (``cors``)."""
    segment_max_events: int = 100_000
    segment_max_bytes: int = 16 * MIB
    segment_max_age_ms: int = 600_000
    checkpoint_wal_bytes: int = 64 * MIB
    checkpoint_interval_ms: int = 60_000
    cache_bytes: int = 64 * MIB
    wal_sync_ms: int = 10
    max_watch_topics: int = 256
    api_keys: KeyStore = field(default_factory=KeyStore)
    """Digests only; empty: authentication disabled (dev mode)."""
    probe_auth: bool = False
    """``TOPICS_PROBE_AUTH``: the probes (health, ready) need a key too."""
    caps: Caps = Caps()
    throttle: bool = True
    """``TOPICS_THROTTLE``: the elastic CPU-pressure throttle; ``false`` turns it off."""


_LIMIT_VARS = {
    "TOPICS_MAX_BATCH_RECORDS": "max_batch_records",
    "TOPICS_MAX_RECORD_BYTES": "max_record_bytes",
    "TOPICS_MAX_META_BYTES": "max_meta_bytes",
    "TOPICS_MAX_TAG_BYTES": "max_tag_bytes",
    "TOPICS_MAX_NODE_BYTES": "max_node_bytes",
    "TOPICS_MAX_LIMIT": "max_limit",
    "TOPICS_MAX_WAIT_MS": "max_wait_ms",
}
_QUOTA_VARS = {"TOPICS_MAX_TOPICS": "max_topics", "TOPICS_MAX_TOTAL_BYTES": "max_total_bytes"}
_CAP_VARS = {
    "TOPICS_MAX_ROUTERS": "max_routers",
    "TOPICS_MAX_SCHEDULES": "max_schedules",
    "TOPICS_MAX_CONSUMERS": "max_consumers",
    "TOPICS_MAX_WATCH_SESSIONS": "max_watch_sessions",
    "TOPICS_MAX_SSE_CONNECTIONS": "max_sse_connections",
    "TOPICS_MAX_SSE_CONNECTIONS_PER_KEY": "max_sse_connections_per_key",
    "TOPICS_MAX_INFLIGHT_PER_KEY": "max_inflight_per_key",
}
_LIMIT_CEILINGS = {"max_tag_bytes": 4096, "max_node_bytes": 4096}
"""A record's tag and node sit in its head, whose offsets the record store keeps as 16-bit
columns: even escaped six-fold they must fit 64 KiB."""
_LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
LOG_FORMATS = ("plain", "json")
_LOGGER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_ORIGIN = re.compile(r"(https?)://([a-z0-9]([a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])(:[0-9]{1,5})?")
"""A serialized origin (RFC 6454 §6.1) as browsers send it: scheme, host, optional port."""


def _int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(
            f"{name}={raw!r} is not an integer; set it to a whole number "
            f"between {low} and {high} or unset it (default {default})"
        ) from None
    if not low <= value <= high:
        raise ConfigError(
            f"{name}={value} is out of range; set it between {low} and {high} or unset it (default {default})"
        )
    return value


def _host(env: Mapping[str, str]) -> str:
    host = env.get("TOPICS_HOST", "127.0.0.1").strip() or "127.0.0.1"
    if host == "localhost":
        return host
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ConfigError(
            f"TOPICS_HOST={host!r} is not an IP address; use e.g. 127.0.0.1 "
            "(loopback, the default) or 0.0.0.0"
        ) from None
    return host


def _is_loopback(host: str) -> bool:
    return host == "localhost" or ipaddress.ip_address(host).is_loopback


def _flag(env: Mapping[str, str], name: str, default: bool = False) -> bool:
    raw = env.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in ("0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ConfigError(f"{name}={raw!r} is not a boolean; set it to true or false (or 1 or 0)")


def log_format(env: Mapping[str, str]) -> str:
    """``TOPICS_LOG_FORMAT`` (read on its own first: a configuration error is then reported
    in the format asked for)."""
    raw = env.get("TOPICS_LOG_FORMAT", "").strip().lower() or "plain"
    if raw not in LOG_FORMATS:
        raise ConfigError(f"TOPICS_LOG_FORMAT={raw!r} is unknown; use plain (the default) or json")
    return raw


def _log_levels(env: Mapping[str, str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``TOPICS_LOG_LEVEL``: ``level[,logger=level...]`` — topics' level, then other loggers'."""
    raw = env.get("TOPICS_LOG_LEVEL", "").strip() or "info"
    first, *rest = (part.strip() for part in raw.split(","))
    first = first.lower()
    if first not in _LOG_LEVELS:
        raise ConfigError(
            f"TOPICS_LOG_LEVEL={raw!r}: the level {first!r} is unknown; use one of {', '.join(_LOG_LEVELS)}, "
            "optionally followed by logger=level pairs (e.g. debug,connexion=debug)"
        )
    named: list[tuple[str, str]] = []
    for part in rest:
        name, eq, level = (p.strip() for p in part.partition("="))
        level = level.lower()
        if not eq or not _LOGGER_NAME.fullmatch(name) or level not in _LOG_LEVELS:
            raise ConfigError(
                f"TOPICS_LOG_LEVEL={raw!r}: {part!r} is not logger=level; name a logger "
                f"(e.g. connexion, asyncio, websockets) and one of {', '.join(_LOG_LEVELS)}"
            )
        named.append((name, level))
    return first, tuple(named)


def _cors_origins(env: Mapping[str, str]) -> tuple[str, ...]:
    """``TOPICS_CORS_ORIGINS``: comma-separated exact origins, or ``*`` alone."""
    raw = env.get("TOPICS_CORS_ORIGINS", "").strip()
    if not raw:
        return ()
    origins = [o.strip() for o in raw.split(",")]
    if "*" in origins:
        if len(origins) > 1:
            raise ConfigError("TOPICS_CORS_ORIGINS: '*' allows every origin; give it alone or list origins")
        return ("*",)
    for origin in origins:
        if not _ORIGIN.fullmatch(origin):
            raise ConfigError(
                f"TOPICS_CORS_ORIGINS: {origin!r} is not an origin; list origins exactly as browsers send "
                "them, scheme://host[:port] in lower case with no path or trailing slash "
                "(e.g. https://app.example.com,http://localhost:5173), or '*' for any"
            )
    return tuple(dict.fromkeys(origins))


def _api_keys(env: Mapping[str, str]) -> KeyStore:
    try:
        return KeyStore.parse(env.get("TOPICS_API_KEYS", ""))
    except KeyConfigError as err:
        raise ConfigError(str(err)) from None


def _check_exposure(env: Mapping[str, str], host: str, keys: KeyStore) -> None:
    """Fail closed: a non-loopback bind with no keys would be an open event store unless
    explicitly allowed."""
    if keys.enabled or _is_loopback(host):
        return
    if env.get("TOPICS_ALLOW_INSECURE_NO_AUTH", "").strip() != "1":
        raise ConfigError(
            f"TOPICS_HOST={host} is not loopback and no API keys are configured; set "
            "TOPICS_API_KEYS, bind 127.0.0.1, or set TOPICS_ALLOW_INSECURE_NO_AUTH=1 on a trusted "
            "private network"
        )


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read every ``TOPICS_*`` variable this server understands; raise :class:`ConfigError`."""
    env = os.environ if env is None else env
    defaults = Limits()
    limits = Limits(
        **{
            name: _int(env, var, getattr(defaults, name), 1, _LIMIT_CEILINGS.get(name, 2**40))
            for var, name in _LIMIT_VARS.items()
        },
        **{name: _int(env, var, getattr(defaults, name), 0, 2**62) for var, name in _QUOTA_VARS.items()},
    )
    caps = Caps(**{name: _int(env, var, getattr(Caps(), name), 0, 2**40) for var, name in _CAP_VARS.items()})
    if limits.max_meta_bytes > limits.max_record_bytes:
        raise ConfigError(
            f"TOPICS_MAX_META_BYTES ({limits.max_meta_bytes}) exceeds TOPICS_MAX_RECORD_BYTES "
            f"({limits.max_record_bytes}); meta counts toward the record limit, so lower it"
        )
    max_body = _int(env, "TOPICS_MAX_BODY_BYTES", 64 * MIB, 1 * KIB, 2**40)
    data_dir = Path(env.get("TOPICS_DATA_DIR", "./topics-data") or "./topics-data")
    if data_dir.exists() and not data_dir.is_dir():
        raise ConfigError(
            f"TOPICS_DATA_DIR={str(data_dir)!r} exists and is not a directory; "
            "point it at a directory (it is created if missing)"
        )
    host = _host(env)
    keys = _api_keys(env)
    _check_exposure(env, host, keys)
    log_level, log_levels = _log_levels(env)
    return Settings(
        segment_max_events=_int(env, "TOPICS_SEGMENT_MAX_EVENTS", 100_000, 1, 2**40),
        segment_max_bytes=_int(env, "TOPICS_SEGMENT_MAX_BYTES", 16 * MIB, 1 * KIB, 2**40),
        segment_max_age_ms=_int(env, "TOPICS_SEGMENT_MAX_AGE_MS", 600_000, 1, 2**40),
        checkpoint_wal_bytes=_int(env, "TOPICS_CHECKPOINT_WAL_BYTES", 64 * MIB, 1 * KIB, 2**40),
        checkpoint_interval_ms=_int(env, "TOPICS_CHECKPOINT_INTERVAL_MS", 60_000, 100, 2**40),
        cache_bytes=_int(env, "TOPICS_CACHE_BYTES", 64 * MIB, 0, 2**50),
        wal_sync_ms=_int(env, "TOPICS_WAL_SYNC_MS", 10, 1, 1000),
        max_watch_topics=_int(env, "TOPICS_MAX_WATCH_TOPICS", 256, 1, 65536),
        host=host,
        port=_int(env, "TOPICS_PORT", 4000, 0, 65535),
        data_dir=data_dir,
        max_body_bytes=max_body,
        limits=limits,
        log_level=log_level,
        log_levels=log_levels,
        log_format=log_format(env),
        access_log=_flag(env, "TOPICS_ACCESS_LOG"),
        cors_origins=_cors_origins(env),
        api_keys=keys,
        probe_auth=_flag(env, "TOPICS_PROBE_AUTH"),
        caps=caps,
        throttle=_flag(env, "TOPICS_THROTTLE", default=True),
    )
