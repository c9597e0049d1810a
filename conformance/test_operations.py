"""Property-based conformance of every operation in openapi/v0.yaml.

For each operation schemathesis runs the examples, coverage and fuzzing phases with
positive AND negative data and validates every response with all default checks
(not_a_server_error, status_code_conformance, content_type_conformance,
response_headers_conformance, response_schema_conformance, negative_data_rejection,
...), plus :func:`error_envelope` below: every non-2xx is the §0.5 envelope and no 2xx
carries a top-level ``error`` key.

``positive_data_acceptance`` is swapped for
:func:`conformance.contract.positive_data_acceptance_per_contract`: the same check, except
for the schema-valid rejections the contract documents outside JSON Schema (and the
reported nonconformances pinned in ``test_known_issues.py``). Before each call the case's
topic is pre-created in one of a few deterministic shapes (:class:`conformance.support.Seeder`)
so the 200 bodies of reads/deletes are validated too, not only their 404s.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from schemathesis import Case
from schemathesis.checks import CheckContext
from schemathesis.core.transport import Response
from schemathesis.specs.openapi.checks import positive_data_acceptance
from topics_server.spec import load_document

from conformance.contract import positive_data_acceptance_per_contract
from conformance.support import (
    AUTH_HEADERS,
    HYPOTHESIS_SETTINGS,
    SEED_SHAPES,
    Seeder,
    build_schema,
    seed_shape,
)

# The §0.5 code catalogue, read from the spec's ErrorCode schema (one source of truth).
ERROR_CODES = frozenset(load_document()["components"]["schemas"]["ErrorCode"]["enum"])


def _body(response: Response) -> Any:
    try:
        return json.loads(response.content or b"null")
    except ValueError:
        return None


def error_envelope(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """§0.5: every non-2xx is ``{"error": {"code", "message", "detail"?}}``; 2xx never has ``error``."""
    body = _body(response)
    label = case.operation.label
    if 200 <= response.status_code < 300:
        if isinstance(body, dict) and "error" in body:
            raise AssertionError(
                f"{label}: {response.status_code} success body carries a top-level `error` key"
            )
        return None
    content_type = response.headers.get("content-type", [""])
    content_type = content_type[0] if isinstance(content_type, list) else content_type
    assert content_type.split(";")[0].strip() == "application/json", (
        f"{label}: {response.status_code} error has Content-Type {content_type!r}, not application/json"
    )
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), (
        f"{label}: {response.status_code} body is not the error envelope: {response.content[:300]!r}"
    )
    error = body["error"]
    assert error.get("code") in ERROR_CODES, f"{label}: unknown error.code {error.get('code')!r}"
    assert isinstance(error.get("message"), str), f"{label}: error.message is not a string"
    assert "detail" not in error or isinstance(error["detail"], dict), (
        f"{label}: error.detail is not an object"
    )
    return None


# Loaded once at import (schemathesis needs the operations at collection time); each
# generated test item gets a fresh app from the ``app`` fixture, passed to the ASGI
# transport per call (checks that re-send requests reuse it via the transport kwargs).
schema = build_schema()

# Streaming operations (the SSE streams and the WebSocket upgrade) never end by themselves, so
# request/response fuzzing cannot judge them; server tests drive them over a real connection
# instead (tests/server/test_work_stream.py for /work).
STREAMING_OPERATIONS = frozenset({"work_stream", "watch_stream", "open_websocket"})
property_schema = schema.exclude(operation_id=sorted(STREAMING_OPERATIONS))


@pytest.fixture
def seed(app: Any) -> Seeder:
    return Seeder(schema, app)


@property_schema.parametrize()
@HYPOTHESIS_SETTINGS
def test_operation_conforms(case: Case, app: Any, seed: Seeder) -> None:
    seed(case)
    # the ignored_auth check re-sends the case without the key through the operation's app
    case.operation.schema.app = app
    case.call_and_validate(
        app=app,
        excluded_checks=[positive_data_acceptance],
        additional_checks=[positive_data_acceptance_per_contract, error_envelope],
    )


# Tombstones, tag/meta echo and the queue counters are hard to reach with random cursors;
# these fixed reads over the seeded shapes validate those 200 bodies with the same checks.
SEEDED_READS = [
    ("diff_topic", {"from_seq": 1, "include_tags": True, "include_meta": True}),
    ("diff_topic", {"from_seq": 0, "node": ["worker-a"], "limit": 2}),
    ("diff_topic", None),
    ("get_topic", None),
    ("delete_records", {"match": ["tag", "Glob", "tenant42:*"]}),
    ("delete_records", {"before_seq": 3, "match": "other:x"}),
    ("append_records", {"records": [{"data": 1}]}),
    ("put_topic", {"type": "log"}),
    ("delete_topic", None),
]


@pytest.mark.parametrize("shape", [name for name, _, _ in SEED_SHAPES if name != "absent"])
@pytest.mark.parametrize(("operation_id", "body"), SEEDED_READS)
def test_seeded_topic_responses_conform(shape: str, operation_id: str, body: Any, app: Any) -> None:
    topic = next(f"{shape}-{i}" for i in range(10_000) if seed_shape(f"{shape}-{i}") == shape)
    Seeder(schema, app)(schema.find_operation_by_id("get_topic").Case(path_parameters={"topic": topic}))
    kwargs: dict[str, Any] = {"path_parameters": {"topic": topic}, "headers": dict(AUTH_HEADERS)}
    if body is not None:
        kwargs["body"] = body
    case = schema.find_operation_by_id(operation_id).Case(**kwargs)
    case.operation.schema.app = app  # for the ignored_auth probes (see test_operation_conforms)
    response = case.call_and_validate(app=app, additional_checks=[error_envelope])
    if shape == "capped" and operation_id == "diff_topic" and body and body.get("from_seq") == 1:
        assert response.json()["tombstone"]["reason"] == "cap", response.text
