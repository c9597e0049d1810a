"""Contract rules the OpenAPI schema cannot express, used to judge schema-valid rejections.

schemathesis' ``positive_data_acceptance`` check fails any schema-valid request that is not
answered 2xx/401/403/404/409/429/5xx. A handful of rejections are *documented* in the
contract (spec/api-v0.txt, and the operation/schema descriptions in openapi/v0.yaml) but
live outside JSON Schema: cross-field rules, values that only the server can judge (an
opaque cursor), and runtime-configurable limits. :func:`documented_rejection` recognises
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

# Contract defaults for the runtime-configurable limits (§2; TOPICS_MAX_*). The app under
# test runs with the default Limits except max_wait_ms.
MAX_BATCH_RECORDS = 10_000
MAX_RECORD_BYTES = 1024 * 1024
MAX_META_BYTES = 16 * 1024
MAX_META_KEYS = 64
MAX_TAG_BYTES = 256
MAX_NODE_BYTES = 128


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _utf8_len(value: Any) -> int:
    return len(value.encode()) if isinstance(value, str) else 0


def _glob_is_malformed(match: Any) -> bool:
    """Match description: a Glob operand must be a literal prefix followed by ONE trailing ``*``."""
    if not (isinstance(match, list) and len(match) == 3 and match[1] == "Glob"):
        return False
    operand = match[2]
    return not isinstance(operand, str) or not operand.endswith("*") or "*" in operand[:-1]


def _append_limits_exceeded(body: dict[str, Any]) -> str | None:
    records = body.get("records")
    if not isinstance(records, list):
        return None
    if len(records) > MAX_BATCH_RECORDS:
        return "batch over TOPICS_MAX_BATCH_RECORDS"
    if _utf8_len(body.get("node")) > MAX_NODE_BYTES:
        return "batch node over TOPICS_MAX_NODE_BYTES"
    for record in records:
        if not isinstance(record, dict):
            continue
        if _utf8_len(record.get("tag")) > MAX_TAG_BYTES:
            return "tag over TOPICS_MAX_TAG_BYTES"
        if _utf8_len(record.get("node")) > MAX_NODE_BYTES:
            return "node over TOPICS_MAX_NODE_BYTES"
        meta = record.get("meta")
        if isinstance(meta, dict) and (len(meta) > MAX_META_KEYS or _json_bytes(meta) > MAX_META_BYTES):
            return "meta over TOPICS_MAX_META_BYTES / 64 keys"
        size = _json_bytes(record.get("data")) + (_json_bytes(meta) if isinstance(meta, dict) else 0)
        if size > MAX_RECORD_BYTES:
            return "data+meta over TOPICS_MAX_RECORD_BYTES"
    return None


def _op_id(case: Case) -> str | None:
    return case.operation.schema.get_operation_id(case.operation)


def documented_rejection(case: Case, status: int) -> str | None:
    """Why the contract lets the server reject this schema-valid request with ``status``; else None."""
    op = _op_id(case)
    body = case.body if isinstance(case.body, dict) else {}
    topic = (case.path_parameters or {}).get("topic")
    if status == 400:
        if op in ("list_topics", "list_routers") and "cursor" in (case.query or {}):
            # §1.3 / cursor param: opaque; anything but a server-issued next_cursor is malformed.
            return "cursor that the server did not issue"
        if op == "delete_records":
            if "before_seq" not in body and "match" not in body:
                return "neither before_seq nor match (DeleteRecordsRequest description)"
            if _glob_is_malformed(body.get("match")):
                return "Glob without a single trailing * (Match description)"
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
            return _append_limits_exceeded(body)
        if op in QUEUE_BODY_OPERATIONS:
            return _queue_rejection(op, body, case)
        if op == "create_watch":
            return _watch_rejection(body)
        if op == "put_router":
            if body.get("source") is not None and body.get("source") == body.get("dest"):
                return "source == dest (RouterConfig.dest)"
            if _glob_is_malformed(body.get("filter")):
                return "Glob without a single trailing * (Match description)"
    if status == 422 and op == "append_records":
        # A creating write whose own inline config is already full (discard: reject) — §2 topic_full.
        return "topic_full on a discard:reject topic"
    return None


MAX_WATCH_TOPICS = 256


def _watch_rejection(body: dict[str, Any]) -> str | None:
    """§7 rules outside JSON Schema: at most TOPICS_MAX_WATCH_TOPICS topics; ``cursor`` is a
    stream id the server issued (WatchRequest.cursor: "a malformed cursor is 400")."""
    topics = body.get("topics")
    if isinstance(topics, dict) and len(topics) > MAX_WATCH_TOPICS:
        return "more topics than TOPICS_MAX_WATCH_TOPICS"
    if "cursor" in body:
        return "cursor that the server did not issue"
    return None


QUEUE_BODY_OPERATIONS = {"claim_jobs", "ack_jobs", "nack_jobs", "extend_leases", "work_stream"}
MAX_CLAIM = 1000


def _queue_rejection(op: str | None, body: dict[str, Any], case: Case) -> str | None:
    """§10 rules outside JSON Schema: node ≤ MAX_NODE_BYTES, seqs ≤ MAX_CLAIM (batch_too_large),
    lease_ids one per seq, in order."""
    node = (case.query or {}).get("node") if op == "work_stream" else body.get("node")
    if _utf8_len(node) > MAX_NODE_BYTES:
        return "node longer than TOPICS_MAX_NODE_BYTES"
    seqs = body.get("seqs")
    if isinstance(seqs, list) and len(seqs) > MAX_CLAIM:
        return "more than 1000 seqs (batch_too_large)"
    lease_ids = body.get("lease_ids")
    if isinstance(lease_ids, list) and isinstance(seqs, list) and len(lease_ids) != len(seqs):
        return "lease_ids not one per seq"
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
