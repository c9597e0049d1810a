"""Contract rules the OpenAPI schema cannot express, used to judge schema-valid rejections.

schemathesis' ``positive_data_acceptance`` check fails any schema-valid request that is not
answered 2xx/401/403/404/409/429/5xx. A handful of rejections are *documented* in the
contract (the operation/schema descriptions in openapi/v0.yaml) but live outside JSON Schema:
byte sizes of arbitrary JSON, rules between a body and its path, and state. (Runtime limits,
patterns and at-least-one-of rules are in the served schema itself.) :func:`documented_rejection` recognises
exactly those requests — from the *request*, never from the server's answer — so the
check still fails for every other schema-valid rejection. (The nonconformances this suite once
found are fixed and pinned by ``test_regressions.py``; nothing else is tolerated.)
"""

from __future__ import annotations

import json
from typing import Any

from schemathesis import Case
from schemathesis.checks import CheckContext
from schemathesis.core.transport import Response
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import positive_data_acceptance

# Contract defaults for the limits JSON Schema cannot state (§2; TOPICS_MAX_*): byte sizes of
# arbitrary JSON. Every other limit is in the served document (x-topics-limits).
MAX_RECORD_BYTES = 1024 * 1024
MAX_META_BYTES = 16 * 1024


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _record_bytes_exceeded(body: dict[str, Any]) -> str | None:
    records = body.get("records")
    if not isinstance(records, list):
        return None
    for record in records:
        if not isinstance(record, dict):
            continue
        meta = record.get("meta")
        if isinstance(meta, dict) and _json_bytes(meta) > MAX_META_BYTES:
            return "meta over TOPICS_MAX_META_BYTES"
        size = _json_bytes(record.get("data")) + (_json_bytes(meta) if isinstance(meta, dict) else 0)
        if size > MAX_RECORD_BYTES:
            return "data+meta over TOPICS_MAX_RECORD_BYTES"
    return None


def _op_id(case: Case) -> str | None:
    return case.operation.schema.get_operation_id(case.operation)


def documented_rejection(case: Case, status: int) -> str | None:
    """Why the contract lets the server reject this schema-valid request with ``status``; else None.

    Only what JSON Schema cannot state: byte sizes of arbitrary JSON, rules between two values
    (a queue's dead letter or a router's dest naming its own topic), and state (a full
    ``discard: reject`` topic)."""
    op = _op_id(case)
    body = case.body if isinstance(case.body, dict) else {}
    topic = (case.path_parameters or {}).get("topic")
    if status == 400:
        if op == "put_topic" and body.get("dead_letter") is not None and body.get("dead_letter") == topic:
            return "dead_letter names the queue itself (TopicConfig.dead_letter)"
        if op == "append_records":
            config = body.get("config")
            if (
                isinstance(config, dict)
                and config.get("dead_letter") is not None
                and config["dead_letter"] == topic
            ):
                return "inline config dead_letter names the topic itself"
            return _record_bytes_exceeded(body)
        if op == "put_router" and body.get("source") is not None and body.get("source") == body.get("dest"):
            return "source == dest (RouterConfig.dest)"
        if op == "put_schedule":  # its records are a write body's (ScheduleConfig.records)
            return _record_bytes_exceeded(body)
    if status == 422 and op == "append_records":
        # A creating write whose own inline config is already full (discard: reject) — §2 topic_full.
        return "topic_full on a discard:reject topic"
    return None


# -- known, reported nonconformances ------------------------------------------------------------


def _walk(value: Any) -> Any:
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from _walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk(item)


def _error_code(response: Response) -> str | None:
    try:
        body = json.loads(response.content or b"null")
    except ValueError:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    return error.get("code") if isinstance(error, dict) else None


_ALLOWED_CODES = {400: {"invalid_request", "batch_too_large", "record_too_large"}, 422: {"topic_full"}}


def positive_data_acceptance_per_contract(ctx: CheckContext, response: Response, case: Case) -> bool | None:
    """schemathesis' positive_data_acceptance, minus the rejections the contract documents."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        status = response.status_code
        if _error_code(response) in _ALLOWED_CODES.get(status, set()) and (
            documented_rejection(case, status)
        ):
            return None
        raise
