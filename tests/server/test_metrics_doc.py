"""docs/METRICS.md against a live scrape: every family the server exposes is documented, every
family the tables document is exposed, the scrape configuration and the alert rules are YAML of
the shape Prometheus loads, and every metric their expressions (and the example queries) use is
exposed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import yaml

from .test_metrics import parse_text

DOC = Path(__file__).resolve().parents[2] / "docs" / "METRICS.md"
SYNTHETIC = {"up"}
"""Series Prometheus makes itself for every target."""
SUFFIXES = ("_bucket", "_count", "_sum")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def documented_rows() -> set[str]:
    """The families the doc's tables have a row for."""
    return set(re.findall(r"^\| `([a-z_]+)` \|", DOC.read_text(), flags=re.MULTILINE))


def metric_names(expr: str) -> set[str]:
    """The metric names of a PromQL expression (functions, keywords and label names left out)."""
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\b(by|without)\s*\([^)]*\)", "", expr)  # grouping labels
    names = set(re.findall(r"\b[a-z_][a-z0-9_]*\b(?!\s*\()", expr))
    return {n for n in names if n.startswith(("topics_", "process_", "python_")) or n in SYNTHETIC}


def family_of(name: str, exposed: set[str]) -> str:
    """A histogram's sample name as its family's."""
    for suffix in SUFFIXES:
        if name.endswith(suffix) and name.removesuffix(suffix) in exposed:
            return name.removesuffix(suffix)
    return name


async def live_families(client: httpx.AsyncClient) -> set[str]:
    """The families a server with some traffic exposes (a counter with its ``_total``)."""
    await client.put("/v0/topics/jobs", json={"type": "queue"})
    await client.post("/v0/topics/jobs", json={"records": [{"data": 1}]})
    r = await client.put("/v0/topics/jobs/consumers/billing")
    assert r.status_code == 201, r.text
    await client.get("/v0/metrics")  # so the request families have series
    types, _ = parse_text((await client.get("/v0/metrics")).text)
    return set(types)


async def test_every_exposed_family_is_documented_and_every_documented_one_exposed(
    client: httpx.AsyncClient,
) -> None:
    exposed = await live_families(client)
    rows = documented_rows()
    assert exposed - rows == set(), "document these families in docs/METRICS.md"
    assert rows - exposed == set(), "docs/METRICS.md documents families the server does not expose"


def test_the_scrape_configuration() -> None:
    (config,) = [yaml.safe_load(b) for b in blocks("yaml") if "scrape_configs" in b]
    (job,) = config["scrape_configs"]
    assert job["job_name"] == "topics" and job["metrics_path"] == "/v0/metrics"
    assert job["authorization"]["type"] == "Bearer"
    assert job["static_configs"] == [{"targets": ["127.0.0.1:4000"]}]


async def test_the_alert_rules_load_and_use_exposed_metrics(client: httpx.AsyncClient) -> None:
    (rules,) = [yaml.safe_load(b) for b in blocks("yaml") if "groups:" in b]
    (group,) = rules["groups"]
    alerts: list[dict[str, Any]] = group["rules"]
    names = [a["alert"] for a in alerts]
    assert len(set(names)) == len(names)
    used: set[str] = set()
    for alert in alerts:
        assert set(alert) <= {"alert", "expr", "for", "labels", "annotations"}, alert
        assert alert["labels"]["severity"] in ("critical", "warning")
        assert alert["annotations"]["summary"]
        assert re.fullmatch(r"\d+[smh]", alert.get("for", "0s")), alert
        used |= metric_names(alert["expr"])
    # the four: WAL read-only, queue oldest-ready age, consumer lag, throttle active
    assert used >= {
        "topics_wal_read_only",
        "topics_topic_queue_oldest_ready_age_seconds",
        "topics_throttle_active",
        "topics_topic_consumer_lag",
    }
    exposed = await live_families(client)
    assert used - exposed - SYNTHETIC == set()


async def test_the_example_queries_use_exposed_metrics(client: httpx.AsyncClient) -> None:
    (queries,) = blocks("promql")
    exposed = await live_families(client)
    used = {family_of(n, exposed) for n in metric_names(queries)}
    assert used and used <= exposed
