"""Shared configuration and builders for the schemathesis conformance suite.

The schema is loaded from ``openapi/v0.yaml`` (:func:`topics_server.spec.load_document`) and
bound to a fresh in-process ASGI app per test. No network, no files: every request goes through
schemathesis' ASGI transport. (``test_external.py`` is the other way round: the schemathesis CLI
against a live server and the document that server serves.)

Determinism: the schemathesis config is built in code (no config-file discovery), with a
fixed seed, ``deterministic`` generation (Hypothesis ``derandomize``) and no example
database, so CI replays exactly the same cases on every run.

Authentication: the app under test runs with one full-access API key (:data:`API_KEY`) and
the document keeps every operation's ``security``; an auth provider registered on the schema
(:class:`BearerKey`) signs every generated case, so each operation is exercised as an
authorized client calls it, and schemathesis' ``ignored_auth`` check replays cases without
the key and requires a 401. Cases the suite builds by hand carry :data:`AUTH_HEADERS`.

Long-poll cost: ``wait_ms`` is a real long-poll (clamped to 30 s by default). Generated
``diff_topic`` bodies routinely carry large ``wait_ms`` values, so the engine under test
runs with ``Limits(max_wait_ms=50)`` — the same code path (clamp, then wait), but a
caught-up read blocks at most 50 ms.
"""

from __future__ import annotations

import dataclasses
import re
import zlib
from typing import Any
from urllib.parse import unquote

import hypothesis
import schemathesis
from schemathesis import GenerationMode
from schemathesis.config import HealthCheck, SchemathesisConfig
from schemathesis.specs.openapi.schemas import OpenApiSchema
from topics_engine import Engine, SystemClock
from topics_engine.limits import Limits
from topics_server.asgi import create_app
from topics_server.settings import load_settings
from topics_server.spec import load_document

# One seed for the whole suite; change it deliberately (and only together with a fix).
SEED = 20240601

# Per-operation budget for the fuzzing phase (per generation mode). The examples and
# coverage phases add their own (deterministic, bounded) cases on top.
MAX_EXAMPLES = 30

# Stateful (links) run budget.
STATEFUL_MAX_EXAMPLES = 20
STATEFUL_STEP_COUNT = 6

# The one (full-access) API key of the app under test.
API_KEY = "conformance-key"
AUTH_HEADERS = {"Authorization": f"Bearer {API_KEY}"}

# The long-poll ceiling for the engine under test (see module docstring).
TEST_MAX_WAIT_MS = 50

# Hypothesis settings shared by every property-based test in this directory.
HYPOTHESIS_SETTINGS = hypothesis.settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=list(hypothesis.HealthCheck),
)


def build_app() -> Any:
    """A fresh ASGI app over a fresh in-memory engine with a short long-poll ceiling, its one
    API key :data:`API_KEY`."""
    settings = load_settings({"TOPICS_API_KEYS": API_KEY})
    limits = dataclasses.replace(settings.limits, max_wait_ms=TEST_MAX_WAIT_MS)
    assert isinstance(limits, Limits)
    app, _ctx = create_app(settings, Engine(SystemClock(), limits))
    return app


def build_schema(app: Any | None = None) -> OpenApiSchema:
    """The OpenAPI document loaded into schemathesis (config built in code), optionally bound to an app.

    Fixed seed, deterministic generation (Hypothesis ``derandomize``), no example database,
    positive AND negative data, phases examples + coverage + fuzzing (+ stateful for
    ``as_state_machine``).
    """
    config = SchemathesisConfig(seed=SEED)
    config.suppress_health_check = [HealthCheck.all]
    schema = schemathesis.openapi.from_dict(load_document(), config=config)
    schema.auth()(BearerKey)
    project = schema.config
    project.generation.update(
        modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
        max_examples=MAX_EXAMPLES,
        deterministic=True,
        database="none",
    )
    project.phases.update(phases=["examples", "coverage", "fuzzing", "stateful"])
    project.phases.stateful.max_steps = STATEFUL_STEP_COUNT
    # Failure reports must show the exact request (e.g. the Idempotency-Key value).
    project.output.sanitization.update(enabled=False)
    if app is not None:
        schema.app = app
    return schema


class BearerKey:
    """The schemathesis auth provider: every generated case presents :data:`API_KEY`."""

    def get(self, case: Any, ctx: Any) -> str:
        return API_KEY

    def set(self, case: Any, data: str, ctx: Any) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


def spec_operation_ids() -> set[str]:
    """Every operationId declared in openapi/v0.yaml, read straight from the document."""
    ids: set[str] = set()
    for path_item in load_document()["paths"].values():
        for method, operation in path_item.items():
            if method in {"get", "put", "post", "delete", "patch", "head", "options", "trace"}:
                ids.add(operation["operationId"])
    return ids


# -- pre-existing topics ---------------------------------------------------------------------
#
# Each operation test runs against a fresh, empty app, so a generated topic name almost never
# exists and diff/get/delete_records would only ever see 404 — their 200 schemas (DiffResponse,
# Record, Tombstone, TopicState, ...) would go unchecked. Before each call the test therefore
# seeds the case's topic, chosen deterministically from the name (crc32), as one of these
# shapes, through the public API. One shape in five is left absent to keep the 404 paths.

TOPIC_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$")

_RECORDS: list[dict[str, Any]] = [
    {"data": {"n": 1}, "tag": "tenant42:job-1", "node": "worker-a", "meta": {"trace": "t1"}},
    {"data": "opaque", "tag": "tenant42:job-2"},
    {"data": None, "node": "worker-b"},
    {"data": [1, 2.5, True], "tag": "other:x", "meta": {}},
    {"data": 7},
]

# (name, PUT body, records appended after the PUT)
SEED_SHAPES: list[tuple[str, dict[str, Any] | None, list[dict[str, Any]]]] = [
    ("absent", None, []),
    # A plain log with tags / nodes / meta (Record $node/$tag/meta, include_tags, node filters).
    ("log", {}, _RECORDS),
    # cap_records evicts the first records: from_seq below the floor yields a `cap` Tombstone.
    ("capped", {"cap_records": 2, "discard": "old"}, _RECORDS),
    # A 1 ms TTL: the records expire at once (`ttl` tombstones, empty reads, lazy expiry).
    ("ttl", {"ttl_ms": 1, "durable": True}, _RECORDS[:3]),
    # A full discard:reject queue: further appends are 422 topic_full; type:log PUTs are 409.
    (
        "full-queue",
        {"type": "queue", "cap_records": 2, "discard": "reject", "dead_letter": "dlq"},
        _RECORDS[:2],
    ),
]


def seed_shape(topic: str) -> str:
    return SEED_SHAPES[zlib.crc32(topic.encode()) % len(SEED_SHAPES)][0]


class Seeder:
    """Creates the deterministic pre-existing topic for a case, once per app, via the API."""

    def __init__(self, schema: OpenApiSchema, app: Any) -> None:
        self.app = app
        self.put = schema.find_operation_by_id("put_topic")
        self.append = schema.find_operation_by_id("append_records")
        self.seeded: set[str] = set()

    def __call__(self, case: Any) -> None:
        topic = (case.path_parameters or {}).get("topic")
        if isinstance(topic, str):
            topic = unquote(topic)  # generated path parameters arrive percent-encoded (":" → %3A)
        if not isinstance(topic, str) or not TOPIC_NAME_RE.fullmatch(topic) or topic in self.seeded:
            return
        self.seeded.add(topic)
        _, config, records = SEED_SHAPES[zlib.crc32(topic.encode()) % len(SEED_SHAPES)]
        if config is None:
            return
        response = self.put.Case(path_parameters={"topic": topic}, body=config, headers=AUTH_HEADERS).call(
            app=self.app
        )
        assert response.status_code in (200, 201), response.text
        if records:
            body = {"records": records}
            response = self.append.Case(
                path_parameters={"topic": topic}, body=body, headers=AUTH_HEADERS
            ).call(app=self.app)
            assert response.status_code in (200, 201), response.text
