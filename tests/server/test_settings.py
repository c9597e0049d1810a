"""Settings from the environment: defaults, limits, and refusal of bad configuration."""

from __future__ import annotations

from pathlib import Path

import pytest
from topics_server.settings import ConfigError, load_settings


def test_defaults_are_the_contracts() -> None:
    s = load_settings({})
    assert (s.host, s.port, s.data_dir) == ("127.0.0.1", 4000, Path("./topics-data"))
    assert s.max_body_bytes == 64 * 1024 * 1024
    lim = s.limits
    assert (lim.max_batch_records, lim.max_record_bytes, lim.max_meta_bytes) == (10_000, 1 << 20, 16 << 10)
    assert (lim.max_tag_bytes, lim.max_node_bytes, lim.max_limit) == (256, 128, 1000)


def test_wal_sync_window_defaults_to_10_ms() -> None:
    assert load_settings({}).wal_sync_ms == 10
    assert load_settings({"TOPICS_WAL_SYNC_MS": "200"}).wal_sync_ms == 200


def test_limits_come_from_the_environment() -> None:
    s = load_settings({"TOPICS_MAX_BATCH_RECORDS": "5", "TOPICS_MAX_LIMIT": "50", "TOPICS_PORT": "4100"})
    assert s.limits.max_batch_records == 5 and s.limits.max_limit == 50 and s.port == 4100


@pytest.mark.parametrize(
    "env, needle",
    [
        ({"TOPICS_PORT": "http"}, "TOPICS_PORT"),
        ({"TOPICS_PORT": "70000"}, "TOPICS_PORT"),
        ({"TOPICS_MAX_BATCH_RECORDS": "0"}, "TOPICS_MAX_BATCH_RECORDS"),
        ({"TOPICS_MAX_BODY_BYTES": "-5"}, "TOPICS_MAX_BODY_BYTES"),
        ({"TOPICS_HOST": "not a host"}, "TOPICS_HOST"),
        ({"TOPICS_HOST": "0.0.0.0"}, "TOPICS_ALLOW_INSECURE_NO_AUTH"),
        ({"TOPICS_API_KEYS": "k1:bogus"}, "TOPICS_API_KEYS entry #1"),
        ({"TOPICS_API_KEYS": "k1,k2:r+x"}, "TOPICS_API_KEYS entry #2"),
        ({"TOPICS_API_KEYS": "k1,,k2"}, "TOPICS_API_KEYS entry #2"),
        ({"TOPICS_API_KEYS": "k1::a|"}, "TOPICS_API_KEYS entry #1"),
        ({"TOPICS_API_KEYS": "k1:r,k1:w"}, "entries #1 and #2"),
        ({"TOPICS_API_KEYS": "k1,kéy"}, "TOPICS_API_KEYS entry #2"),
        ({"TOPICS_PROBE_AUTH": "maybe"}, "TOPICS_PROBE_AUTH"),
        ({"TOPICS_MAX_TOPICS": "-1"}, "TOPICS_MAX_TOPICS"),
        ({"TOPICS_MAX_SSE_CONNECTIONS_PER_KEY": "lots"}, "TOPICS_MAX_SSE_CONNECTIONS_PER_KEY"),
        ({"TOPICS_MAX_META_BYTES": "4096", "TOPICS_MAX_RECORD_BYTES": "1024"}, "TOPICS_MAX_META_BYTES"),
        ({"TOPICS_LOG_LEVEL": "loud"}, "TOPICS_LOG_LEVEL"),
        ({"TOPICS_LOG_LEVEL": "debug,connexion"}, "TOPICS_LOG_LEVEL"),
        ({"TOPICS_LOG_LEVEL": "debug,connexion=chatty"}, "TOPICS_LOG_LEVEL"),
        ({"TOPICS_LOG_LEVEL": "debug,=info"}, "TOPICS_LOG_LEVEL"),
        ({"TOPICS_LOG_FORMAT": "xml"}, "TOPICS_LOG_FORMAT"),
        ({"TOPICS_ACCESS_LOG": "sometimes"}, "TOPICS_ACCESS_LOG"),
        ({"TOPICS_CORS_ORIGINS": "app.example.com"}, "TOPICS_CORS_ORIGINS"),
        ({"TOPICS_CORS_ORIGINS": "https://app.example.com/"}, "TOPICS_CORS_ORIGINS"),
        ({"TOPICS_CORS_ORIGINS": "https://App.example.com"}, "TOPICS_CORS_ORIGINS"),
        ({"TOPICS_CORS_ORIGINS": "https://a.example.com/path"}, "TOPICS_CORS_ORIGINS"),
        ({"TOPICS_CORS_ORIGINS": "null"}, "TOPICS_CORS_ORIGINS"),
        ({"TOPICS_CORS_ORIGINS": "*,https://a.example.com"}, "TOPICS_CORS_ORIGINS"),
        ({"TOPICS_CORS_ORIGINS": "https://a.example.com,,https://b.example.com"}, "TOPICS_CORS_ORIGINS"),
        ({"TOPICS_WAL_SYNC_MS": "0"}, "TOPICS_WAL_SYNC_MS"),
        ({"TOPICS_MAX_TAG_BYTES": "5000"}, "TOPICS_MAX_TAG_BYTES"),
        ({"TOPICS_MAX_NODE_BYTES": "5000"}, "TOPICS_MAX_NODE_BYTES"),
    ],
)
def test_bad_configuration_refuses_with_a_fix(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(env)
    assert needle in str(info.value)


def test_non_loopback_allowed_explicitly() -> None:
    s = load_settings({"TOPICS_HOST": "0.0.0.0", "TOPICS_ALLOW_INSECURE_NO_AUTH": "1"})
    assert s.host == "0.0.0.0"


def test_keys_with_a_non_loopback_bind_start() -> None:
    s = load_settings({"TOPICS_HOST": "0.0.0.0", "TOPICS_API_KEYS": "ops::"})
    assert s.host == "0.0.0.0" and s.api_keys.enabled


def test_a_refusal_never_echoes_a_secret() -> None:
    for value in ("s3cr3t-key:rx", "s3cr3t-key:bad:scope", "ok,s3cr3t-key:r:|", "s3cr3t-key,s3cr3t-key"):
        with pytest.raises(ConfigError) as info:
            load_settings({"TOPICS_API_KEYS": value})
        assert "s3cr3t" not in str(info.value), value


def test_caps_come_from_the_environment_and_default_to_the_contracts() -> None:
    s = load_settings({})
    assert (s.limits.max_topics, s.limits.max_total_bytes) == (100_000, 0)
    caps = s.caps
    assert (caps.max_routers, caps.max_watch_sessions, caps.max_sse_connections) == (10_000, 10_000, 10_000)
    assert (caps.max_sse_connections_per_key, caps.max_inflight_per_key) == (1000, 1000)
    s = load_settings({"TOPICS_MAX_TOPICS": "0", "TOPICS_MAX_ROUTERS": "3", "TOPICS_MAX_TOTAL_BYTES": "1000"})
    assert (s.limits.max_topics, s.caps.max_routers, s.limits.max_total_bytes) == (0, 3, 1000)
    assert load_settings({"TOPICS_PROBE_AUTH": "true"}).probe_auth


def test_logging_and_cors_settings() -> None:
    s = load_settings({})
    assert (s.log_level, s.log_levels, s.log_format, s.access_log, s.cors_origins) == (
        "info",
        (),
        "plain",
        False,
        (),
    )
    s = load_settings(
        {
            "TOPICS_LOG_LEVEL": "DEBUG, connexion=info ,asyncio=debug",
            "TOPICS_LOG_FORMAT": "JSON",
            "TOPICS_ACCESS_LOG": "true",
            "TOPICS_CORS_ORIGINS": "https://app.example.com, http://localhost:5173,https://app.example.com",
        }
    )
    assert s.log_level == "debug" and s.log_levels == (("connexion", "info"), ("asyncio", "debug"))
    assert s.log_format == "json" and s.access_log is True
    assert s.cors_origins == ("https://app.example.com", "http://localhost:5173")
    assert load_settings({"TOPICS_CORS_ORIGINS": " * "}).cors_origins == ("*",)
    assert load_settings({"TOPICS_CORS_ORIGINS": "http://[::1]:8080"}).cors_origins == ("http://[::1]:8080",)
