"""Property-based conformance of every operation in openapi/v0.yaml.

For each operation schemathesis runs the examples, coverage and fuzzing phases with
positive AND negative data and validates every response with all default checks
(not_a_server_error, status_code_conformance, content_type_conformance,
response_headers_conformance, response_schema_conformance, negative_data_rejection,
...), plus :func:`error_envelope` below: every non-2xx is the §0.5 envelope and no 2xx
carries a top-level ``error`` key.
"""

from __future__ import annotations

import json
from typing import Any

import hypothesis
import schemathesis
from schemathesis import Case
from schemathesis.checks import CheckContext
from schemathesis.core.transport import Response

from conformance.support import HYPOTHESIS_SETTINGS, build_schema, spec_operation_ids

ERROR_CODES = frozenset(
    {
        "invalid_request",
        "batch_too_large",
        "record_too_large",
        "unauthorized",
        "forbidden",
        "topic_not_found",
        "router_not_found",
        "not_found",
        "method_not_allowed",
        "not_acceptable",
        "router_cycle",
        "topic_exists_incompatible",
        "topic_not_empty",
        "not_a_queue",
        "payload_too_large",
        "unsupported_media_type",
        "topic_full",
        "throttled",
        "internal",
        "not_ready",
        "shutting_down",
    }
)


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
            raise AssertionError(f"{label}: {response.status_code} success body carries a top-level `error` key")
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
    assert "detail" not in error or isinstance(error["detail"], dict), f"{label}: error.detail is not an object"
    return None


# Loaded once at import (schemathesis needs the operations at collection time); each
# generated test item gets a fresh app from the ``app`` fixture, passed to the ASGI
# transport per call (checks that re-send requests reuse it via the transport kwargs).
schema = build_schema()


@schema.parametrize()
@HYPOTHESIS_SETTINGS
def test_operation_conforms(case: Case, app: Any) -> None:
    case.call_and_validate(app=app, additional_checks=[error_envelope])
