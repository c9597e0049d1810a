"""Regressions for the nonconformances the conformance suite found (all fixed).

Integral floats and huge integers in integer fields (server fix), u64 fields past 2**64-1 and
empty idempotency keys (spec fix: `maximum` / `minLength`, so they are schema-invalid and 400),
and payload integers beyond 64 bits (server fix: returned verbatim).
"""

from __future__ import annotations

from typing import Any

import pytest

from conformance.support import AUTH_HEADERS, build_schema

schema = build_schema()


def _call(app: Any, operation_id: str, topic: str, body: Any = None, **kwargs: Any) -> Any:
    operation = schema.find_operation_by_id(operation_id)
    headers = {**AUTH_HEADERS, **kwargs.pop("headers", {})}
    case_kwargs: dict[str, Any] = {"path_parameters": {"topic": topic}, "headers": headers, **kwargs}
    if body is not None:
        case_kwargs["body"] = body
    return operation.Case(**case_kwargs).call(app=app)


# -- 1. integral floats in `integer` fields ------------------------------------------------------
# JSON Schema: "integer" matches any number with a zero fractional part, so 5.0 is a valid
# `integer` (2020-12 validation §6.1.1 / core §4.2.2). The schema cannot exclude it.


@pytest.mark.parametrize(
    "field",
    ["ttl_ms", "cap_records", "cap_bytes", "idempotency_window_ms", "lease_ms", "max_deliveries", "priority"],
)
def test_put_topic_accepts_integral_float(app: Any, field: str) -> None:
    """PUT /v0/topics/t {"<field>": 5.0} → 201 with the integer 5 stored (clamped for lease_ms)."""
    response = _call(app, "put_topic", "t", {field: 5.0})
    assert response.status_code == 201, response.text
    assert response.json()["config"][field] == (100 if field == "lease_ms" else 5)


def test_delete_records_accepts_integral_float_before_seq(app: Any) -> None:
    """POST /v0/topics/t/delete {"before_seq": 1.0} → 200."""
    assert _call(app, "append_records", "t", {"records": [{"data": 1}]}).status_code == 201
    response = _call(app, "delete_records", "t", {"before_seq": 1.0})
    assert response.status_code == 200, response.text


# -- 2. integers beyond u64 ----------------------------------------------------------------------
# Clamped fields carry no schema maximum and are clamped by the server; the other u64 fields
# declare `maximum: 18446744073709551615`, so a larger value is a schema violation (400).


@pytest.mark.parametrize(
    ("field", "clamped_to"), [("lease_ms", 86_400_000), ("claim_jitter_ms", 5000), ("priority", 1000)]
)
def test_put_topic_clamps_huge_clamped_fields(app: Any, field: str, clamped_to: int) -> None:
    """PUT /v0/topics/t {"<field>": 2**70} → 201 with config.<field> clamped."""
    response = _call(app, "put_topic", "t", {field: 2**70})
    assert response.status_code == 201, response.text
    assert response.json()["config"][field] == clamped_to


@pytest.mark.parametrize(
    "field", ["ttl_ms", "cap_records", "cap_bytes", "idempotency_window_ms", "max_deliveries"]
)
def test_put_topic_u64_fields_beyond_u64_are_rejected(app: Any, field: str) -> None:
    """PUT /v0/topics/t {"<field>": 2**64} → 400 (beyond the schema's u64 maximum); 2**64-1 → 201."""
    response = _call(app, "put_topic", "t", {field: 2**64})
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_request"
    response = _call(app, "put_topic", "t", {field: 2**64 - 1})
    assert response.status_code == 201, response.text
    assert response.json()["config"][field] == 2**64 - 1


def test_delete_records_before_seq_beyond_u64(app: Any) -> None:
    """before_seq 2**64 → 400 (schema maximum); 2**64-1 → 200 deleting everything."""
    assert _call(app, "append_records", "t", {"records": [{"data": 1}]}).status_code == 201
    response = _call(app, "delete_records", "t", {"before_seq": 2**64})
    assert response.status_code == 400, response.text
    response = _call(app, "delete_records", "t", {"before_seq": 2**64 - 1})
    assert response.status_code == 200 and response.json()["deleted"] == 1, response.text


# -- 3. empty idempotency key --------------------------------------------------------------------
# AppendRequest.idempotency_key and the Idempotency-Key header: minLength 1, maxLength 256.


def test_append_rejects_empty_idempotency_key_in_body(app: Any) -> None:
    """POST /v0/topics/t {"records":[{"data":null}],"idempotency_key":""} → 400, nothing written."""
    response = _call(app, "append_records", "t", {"records": [{"data": None}], "idempotency_key": ""})
    assert response.status_code == 400, response.text
    assert _call(app, "get_topic", "t").status_code == 404


def test_append_rejects_empty_idempotency_key_header(app: Any) -> None:
    """Same with header `Idempotency-Key: ` → 400."""
    response = _call(
        app, "append_records", "t", {"records": [{"data": None}]}, headers={"Idempotency-Key": ""}
    )
    assert response.status_code == 400, response.text


# -- 4. `data` is not returned verbatim for integers beyond 64 bits ------------------------------
# Contract: "`data` payloads are arbitrary JSON, stored and returned verbatim".


def test_data_big_integer_round_trips_verbatim(app: Any) -> None:
    """append {"data": 2**70} then diff → data == 1180591620717411303424, not a float."""
    big = 2**70
    assert _call(app, "append_records", "t", {"records": [{"data": big}]}).status_code == 201
    response = _call(app, "diff_topic", "t", {})
    assert response.status_code == 200, response.text
    assert b"1180591620717411303424" in response.content, response.text
