"""Validate ``openapi/v0.yaml`` — the single source of truth for the /v0 API.

Primary check: the document validates against the official OAS 3.1 meta-schema, vendored
at ``openapi/meta/`` (JSON Schema draft 2020-12, ``jsonschema.Draft202012Validator``).
Second check: ``openapi_spec_validator.validate``. On top of that, a few project rules the
downstream tools depend on: every embedded schema is valid draft 2020-12, every example
validates against its schema, no ``$defs``, single-typed parameters, closed request bodies /
open response bodies, and links that point at real operations. Fit for client generation
(docs/DECISIONS.md, "Fit for client generation"): no ``default:`` in any schema, closed request
enums and open response enums, one ``Error`` schema, titled component schemas, every optional
field the contract names, and the security schemes. ``test_client_generation.py`` checks the
generator's view of the same rules.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openapi_spec_validator
import pytest
import yaml
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = Path(__file__).resolve().parents[2]
SPEC_PATH = ROOT / "openapi" / "v0.yaml"
META_PATH = ROOT / "openapi" / "meta" / "oas-3.1-schema-2022-10-07.json"
META_ID = "https://spec.openapis.org/oas/3.1/schema/2022-10-07"
DOC_URI = "urn:topics:openapi:v0"

HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}

# Operations of the first issue. Later issues add operations; they never remove these.
EXPECTED_OPERATIONS = {
    ("put", "/v0/topics/{topic}"): "put_topic",
    ("get", "/v0/topics/{topic}"): "get_topic",
    ("delete", "/v0/topics/{topic}"): "delete_topic",
    ("get", "/v0/topics"): "list_topics",
    ("post", "/v0/topics/{topic}"): "append_records",
    ("post", "/v0/topics/{topic}/diff"): "diff_topic",
    ("post", "/v0/topics/{topic}/delete"): "delete_records",
    ("get", "/v0/health"): "health",
    ("get", "/v0/ready"): "ready",
    ("get", "/healthz"): "healthz",
    ("get", "/readyz"): "readyz",
    # §10 queues
    ("post", "/v0/topics/{topic}/claim"): "claim_jobs",
    ("post", "/v0/topics/{topic}/ack"): "ack_jobs",
    ("post", "/v0/topics/{topic}/nack"): "nack_jobs",
    ("post", "/v0/topics/{topic}/extend"): "extend_leases",
    ("get", "/v0/topics/{topic}/work"): "work_stream",
    # §7 live fan-out
    ("post", "/v0/watch"): "create_watch",
    ("get", "/v0/watch/{wid}"): "watch_stream",
    ("get", "/v0/ws"): "open_websocket",
}

# Operations tagged `queues` (§10).
QUEUE_OPERATIONS = {
    "claim_jobs",
    "ack_jobs",
    "nack_jobs",
    "extend_leases",
    "work_stream",
    "list_leases",
    "dead_letter_jobs",
}

# Operations tagged `watch` (§7).
WATCH_OPERATIONS = {"create_watch", "watch_stream", "open_websocket"}

# Server-sent-event operations: their 200 is `text/event-stream` (a string schema), not JSON.
SSE_OPERATIONS = {"work_stream", "watch_stream"}

# WebSocket upgrades: their success is a bodiless `101 Switching Protocols`.
WEBSOCKET_OPERATIONS = {"open_websocket"}

# Every error.code the /v0 contract (§0.6 and the per-endpoint errors) names.
CONTRACT_ERROR_CODES = {
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

# Statuses each operation must document (the contract's per-endpoint error lists).
EXPECTED_STATUSES = {
    "put_topic": {"200", "201", "400", "409", "413", "415"},
    "get_topic": {"200", "400", "404"},
    "delete_topic": {"200", "400", "409"},
    "list_topics": {"200", "400"},
    "append_records": {"200", "201", "400", "404", "413", "415", "422", "429"},
    "diff_topic": {"200", "400", "404", "413", "415", "429"},
    "delete_records": {"200", "400", "404", "413", "415"},
    "health": {"200"},
    "ready": {"200", "503"},
    "healthz": {"200"},
    "readyz": {"200", "503"},
    "claim_jobs": {"200", "400", "404", "409", "413", "415", "429"},
    "ack_jobs": {"200", "400", "404", "409", "413", "415"},
    "nack_jobs": {"200", "400", "404", "409", "413", "415"},
    "extend_leases": {"200", "400", "404", "409", "413", "415"},
    "work_stream": {"200", "400", "404", "406", "409", "429"},
    "create_watch": {"200", "400", "404", "413", "415", "429"},
    "watch_stream": {"200", "400", "401", "404", "406", "429"},
    "open_websocket": {"101", "400", "401"},
    "metrics": {"200"},
}


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    with SPEC_PATH.open(encoding="utf-8") as fh:
        loaded = yaml.safe_load(fh)
    assert isinstance(loaded, dict), "openapi/v0.yaml must be a YAML mapping"
    # Round-trip through JSON: the document must be plain JSON data (string keys, no
    # YAML-only types such as dates or integer mapping keys).
    return json.loads(json.dumps(loaded))


@pytest.fixture(scope="module")
def meta_schema() -> dict[str, Any]:
    with META_PATH.open(encoding="utf-8") as fh:
        return json.load(fh)


@pytest.fixture(scope="module")
def registry(doc: dict[str, Any]) -> Registry:
    resource = Resource.from_contents(doc, default_specification=DRAFT202012)
    return Registry().with_resource(DOC_URI, resource)


# ----------------------------------------------------------------------------- helpers


def _pointer(parts: tuple[str, ...]) -> str:
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts)


def _resolve(doc: dict[str, Any], node: Any) -> Any:
    """Follow local ``$ref`` chains (components only)."""
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), f"non-local $ref {ref!r}"
        target: Any = doc
        for part in ref[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def _walk(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, path + (str(k),))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, path + (str(i),))


def _routed_paths(doc: dict[str, Any]) -> dict[str, Any]:
    """``paths`` plus the path items the server routes from ``components.pathItems`` (the
    WebSocket upgrade, marked with its ``x-topics-path``)."""
    items = doc.get("components", {}).get("pathItems", {}).values()
    return {**doc["paths"], **{item["x-topics-path"]: item for item in items if "x-topics-path" in item}}


def _operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    for path, item in _routed_paths(doc).items():
        for method, op in item.items():
            if method in HTTP_METHODS:
                yield path, method, item, op


def _schema_locations(doc: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every top-level Schema Object in the document (components, parameters, media types, headers)."""
    for name, schema in doc.get("components", {}).get("schemas", {}).items():
        yield ("components", "schemas", name), schema
    for path, node in _walk(doc):
        if not path or path[-1] != "schema" or not isinstance(node, (dict, bool)):
            continue
        # A key literally named "schema" inside a Schema Object's "properties" is a
        # property, not a Schema Object; none exist today, but be precise anyway.
        if len(path) >= 2 and path[-2] == "properties":
            continue
        yield path, node


def _example_cases(doc: dict[str, Any]) -> Iterator[tuple[str, tuple[str, ...], Any]]:
    """(label, pointer-to-schema, example value) for every example in the document."""
    for name, schema in doc["components"]["schemas"].items():
        if isinstance(schema, dict):
            for i, ex in enumerate(schema.get("examples", [])):
                yield f"schemas/{name}[{i}]", ("components", "schemas", name), ex
    for path, node in _walk(doc):
        if not (isinstance(node, dict) and "schema" in node):
            continue
        if len(path) >= 2 and path[-2] == "properties":
            continue
        schema_ptr = path + ("schema",)
        if "example" in node:
            yield _pointer(path), schema_ptr, node["example"]
        for ex_name, ex in node.get("examples", {}).items() if isinstance(node.get("examples"), dict) else ():
            ex = _resolve(doc, ex)
            if "value" in ex:
                yield _pointer(path) + f"#{ex_name}", schema_ptr, ex["value"]


def _reachable_schemas(doc: dict[str, Any], roots: list[Any]) -> dict[str, Any]:
    """Component schemas reachable through $ref from ``roots`` (name -> schema)."""
    seen: dict[str, Any] = {}
    stack = list(roots)
    while stack:
        node = stack.pop()
        for _, sub in _walk(node):
            if isinstance(sub, dict) and isinstance(sub.get("$ref"), str):
                ref = sub["$ref"]
                prefix = "#/components/schemas/"
                if ref.startswith(prefix) and ref[len(prefix) :] not in seen:
                    name = ref[len(prefix) :]
                    seen[name] = doc["components"]["schemas"][name]
                    stack.append(seen[name])
    return seen


def _schema_nodes(schema: Any) -> Iterator[tuple[tuple[str, ...], dict[str, Any]]]:
    """Object-typed sub-schemas of one schema (not following $ref)."""
    for path, node in _walk(schema):
        if isinstance(node, dict) and (node.get("type") == "object" or "properties" in node):
            # skip nodes that are data (examples), not schema
            if (
                "examples" in path
                or "example" in path
                or "default" in path
                or "const" in path
                or "enum" in path
            ):
                continue
            yield path, node


# ----------------------------------------------------------------------------- meta-schema


def test_vendored_meta_schema_is_the_official_oas_3_1_schema(meta_schema: dict[str, Any]) -> None:
    assert meta_schema["$id"] == META_ID
    assert meta_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(meta_schema)


def test_document_validates_against_oas_3_1_meta_schema(
    doc: dict[str, Any], meta_schema: dict[str, Any]
) -> None:
    assert doc["openapi"] == "3.1.0"
    validator = Draft202012Validator(meta_schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(
        f"{_pointer(tuple(map(str, e.absolute_path))) or '/'}: {e.message}" for e in errors[:20]
    )


@pytest.mark.parametrize(
    "breakage",
    [
        pytest.param(lambda d: d.pop("info"), id="missing-info"),
        pytest.param(lambda d: d.__setitem__("openapi", "3.0.3"), id="wrong-version"),
        pytest.param(
            lambda d: d["paths"]["/v0/topics"]["get"]["responses"]["200"].pop("description"),
            id="response-without-description",
        ),
        pytest.param(
            lambda d: d["components"]["parameters"]["TopicPath"].__setitem__("in", "body"),
            id="bad-parameter-location",
        ),
        pytest.param(
            lambda d: d["components"]["links"]["DiffTopic"].__setitem__("bogus", 1),
            id="unknown-link-field",
        ),
    ],
)
def test_meta_schema_validation_rejects_a_broken_document(
    doc: dict[str, Any], meta_schema: dict[str, Any], breakage: Any
) -> None:
    broken = copy.deepcopy(doc)
    breakage(broken)
    assert list(Draft202012Validator(meta_schema).iter_errors(broken)), "meta-schema check is vacuous"


def test_openapi_spec_validator_accepts_document(doc: dict[str, Any]) -> None:
    openapi_spec_validator.validate(doc, cls=openapi_spec_validator.OpenAPIV31SpecValidator)


def test_every_schema_is_valid_draft_2020_12(doc: dict[str, Any]) -> None:
    # The OAS 3.1 meta-schema does not descend into Schema Objects; check them here.
    problems = []
    for path, schema in _schema_locations(doc):
        try:
            Draft202012Validator.check_schema(schema)
        except Exception as exc:  # noqa: BLE001 - report every bad schema at once
            problems.append(f"{_pointer(path)}: {exc}")
    assert not problems, "\n".join(problems)


def test_all_refs_resolve(doc: dict[str, Any]) -> None:
    for path, node in _walk(doc):
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            assert node["$ref"].startswith("#/components/"), f"{_pointer(path)}: {node['$ref']}"
            _resolve(doc, node)


def test_examples_validate_against_their_schemas(doc: dict[str, Any], registry: Registry) -> None:
    problems = []
    count = 0
    for label, schema_ptr, value in _example_cases(doc):
        count += 1
        validator = Draft202012Validator({"$ref": DOC_URI + "#" + _pointer(schema_ptr)}, registry=registry)
        for err in validator.iter_errors(value):
            problems.append(f"{label}: {_pointer(tuple(map(str, err.absolute_path)))}: {err.message}")
    assert count >= 30, f"expected the contract's examples in the document, found only {count}"
    assert not problems, "\n".join(problems)


# ----------------------------------------------------------------------------- project rules


def test_expected_operations_present(doc: dict[str, Any]) -> None:
    found = {(method, path): op.get("operationId") for path, method, _, op in _operations(doc)}
    for key, op_id in EXPECTED_OPERATIONS.items():
        assert found.get(key) == op_id, f"{key}: expected operationId {op_id!r}, got {found.get(key)!r}"
    ids = [op.get("operationId") for *_, op in _operations(doc)]
    assert all(ids), "every operation needs an operationId"
    assert len(ids) == len(set(ids)), "operationIds must be unique"


def test_paths_are_absolute_with_version_prefix(doc: dict[str, Any]) -> None:
    assert doc["servers"] == [{"url": "/", "description": doc["servers"][0]["description"]}]  # relative
    for path in doc["paths"]:
        assert path.startswith("/v0/") or path in {"/healthz", "/readyz"}, path


def test_operations_document_contract_statuses_with_schemas(doc: dict[str, Any]) -> None:
    by_id = {op["operationId"]: op for *_, op in _operations(doc)}
    for op_id, statuses in EXPECTED_STATUSES.items():
        responses = by_id[op_id]["responses"]
        missing = statuses - set(responses)
        assert not missing, f"{op_id}: undocumented statuses {sorted(missing)}"
    for path, method, _, op in _operations(doc):
        for status, response in op["responses"].items():
            response = _resolve(doc, response)
            if op["operationId"] in SSE_OPERATIONS and status.startswith("2"):
                content = response.get("content", {})
                assert list(content) == ["text/event-stream"], f"{method.upper()} {path} {status}"
                # OpenAPI 3.1: the schema of one event, its `data` JSON with a contentSchema
                event = _resolve(doc, content["text/event-stream"]["schema"])
                assert event["required"] == ["event", "data"], f"{method.upper()} {path}"
                assert event["allOf"] and all("if" in b and "then" in b for b in event["allOf"])
                continue
            if op["operationId"] in WEBSOCKET_OPERATIONS and status == "101":
                assert "content" not in response, f"{method.upper()} {path} 101 has no body"
                assert {"Upgrade", "Connection", "Sec-WebSocket-Accept"} <= set(response["headers"])
                continue
            media = response.get("content", {}).get("application/json")
            assert media and "schema" in media, (
                f"{method.upper()} {path} {status}: no application/json schema"
            )
            if status.startswith(("4", "5")) or status == "default":
                schema = media["schema"]
                refs = [n.get("$ref") for _, n in _walk(schema) if isinstance(n, dict)]
                assert "#/components/schemas/Error" in refs, (
                    f"{method.upper()} {path} {status}: not the Error envelope"
                )


def test_error_envelope_lists_every_contract_code(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    error = schemas["Error"]
    assert error["required"] == ["error"]
    assert error["properties"]["error"] == {"$ref": "#/components/schemas/ErrorBody"}
    assert error["properties"]["performance"] == {"$ref": "#/components/schemas/Performance"}
    body = schemas["ErrorBody"]
    assert set(body["required"]) == {"code", "message"}
    assert body["properties"]["code"]["anyOf"] == [
        {"$ref": "#/components/schemas/ErrorCode"},
        {"type": "string"},
    ], "error.code is open in responses: one of ErrorCode, or a code added later"
    assert schemas["ErrorCode"]["type"] == "string"
    assert set(schemas["ErrorCode"]["enum"]) >= CONTRACT_ERROR_CODES


def test_retry_after_on_throttled_and_not_ready(doc: dict[str, Any]) -> None:
    headers = doc["components"]["responses"]["Throttled"]["headers"]
    assert _resolve(doc, headers["Retry-After"])["required"] is True
    # a read-only WAL's 503 carries no Retry-After (it does not clear until a restart)
    not_ready = doc["components"]["responses"]["NotReady"]
    assert _resolve(doc, not_ready["headers"]["Retry-After"])["required"] is False
    assert "wal_read_only" in not_ready["description"]


def test_no_defs_and_refs_into_components_only(doc: dict[str, Any]) -> None:
    for path, node in _walk(doc):
        if isinstance(node, dict):
            assert "$defs" not in node, f"{_pointer(path)}: $defs is not allowed; use components/schemas"
            ref = node.get("$ref")
            if isinstance(ref, str):
                assert "$defs" not in ref, f"{_pointer(path)}: $ref into $defs"


def test_no_array_type_union_without_items(doc: dict[str, Any]) -> None:
    for path, schema in _schema_locations(doc):
        for sub_path, node in _walk(schema):
            if isinstance(node, dict) and isinstance(node.get("type"), list) and "array" in node["type"]:
                assert "items" in node, f"{_pointer(path + sub_path)}: type array with 'array' but no items"


def test_no_object_has_both_dollar_and_plain_key(doc: dict[str, Any]) -> None:
    for path, schema in _schema_locations(doc):
        for sub_path, node in _schema_nodes(schema):
            props = node.get("properties", {})
            for key in props:
                if key.startswith("$"):
                    assert key[1:] not in props, f"{_pointer(path + sub_path)}: both {key!r} and {key[1:]!r}"


def test_parameters_have_a_single_type(doc: dict[str, Any]) -> None:
    params: list[tuple[str, dict[str, Any]]] = []
    for name, p in doc["components"].get("parameters", {}).items():
        params.append((f"components/parameters/{name}", p))
    for path, method, item, op in _operations(doc):
        for p in item.get("parameters", []) + op.get("parameters", []):
            params.append((f"{method.upper()} {path}", _resolve(doc, p)))
    assert params
    for where, p in params:
        schema = _resolve(doc, p["schema"])
        assert isinstance(schema.get("type"), str), f"{where} {p['name']}: parameter schema needs one type"


# Operations whose body may be omitted entirely (it then means "all defaults", like `{}`).
OPTIONAL_BODY_OPERATIONS = {"put_topic", "diff_topic", "put_consumer"}


def test_request_bodies_are_closed_and_required(doc: dict[str, Any]) -> None:
    roots = []
    for path, method, _, op in _operations(doc):
        if "requestBody" in op:
            body = _resolve(doc, op["requestBody"])
            expected = op["operationId"] not in OPTIONAL_BODY_OPERATIONS
            assert body.get("required") is expected, (
                f"{method.upper()} {path}: request body required={expected}"
            )
            assert list(body["content"]) == ["application/json"], f"{method.upper()} {path}"
            roots.append(body["content"]["application/json"]["schema"])
    schemas = _reachable_schemas(doc, roots)
    assert {
        "TopicConfig",
        "AppendRequest",
        "RecordIn",
        "DiffRequest",
        "DeleteRecordsRequest",
        "ClaimRequest",
        "AckRequest",
        "NackRequest",
        "ExtendRequest",
    } <= set(schemas)
    for name, schema in schemas.items():
        if schema.get("type") == "object":
            assert schema.get("additionalProperties") is False, f"request schema {name} must be closed"


def test_response_schemas_stay_open(doc: dict[str, Any]) -> None:
    roots = []
    for *_, op in _operations(doc):
        for response in op["responses"].values():
            for media in _resolve(doc, response).get("content", {}).values():
                roots.append(media["schema"])
    for name, schema in _reachable_schemas(doc, roots).items():
        for sub_path, node in _schema_nodes(schema):
            assert node.get("additionalProperties", True) is not False, (
                f"response schema {name}{_pointer(sub_path)} must not forbid unknown fields"
            )


def test_links_target_existing_operations(doc: dict[str, Any]) -> None:
    op_ids = {op["operationId"] for *_, op in _operations(doc)}
    linked = set()
    for path, method, _, op in _operations(doc):
        for status, response in op["responses"].items():
            for name, link in _resolve(doc, response).get("links", {}).items():
                link = _resolve(doc, link)
                assert link["operationId"] in op_ids, f"{method.upper()} {path} {status} link {name}"
                assert link.get("parameters", {}).get("topic") == "$request.path.topic"
                linked.add((op["operationId"], status, link["operationId"]))
    for status in ("200", "201"):
        for target in ("append_records", "diff_topic", "get_topic", "delete_records", "delete_topic"):
            assert ("put_topic", status, target) in linked
        for target in ("diff_topic", "delete_records", "claim_jobs"):
            assert ("append_records", status, target) in linked
    for target in ("ack_jobs", "nack_jobs", "extend_leases"):
        assert ("claim_jobs", "200", target) in linked
    # The streaming operations stay self-contained (a client generator drops them): no links
    # from or to them.
    for source, _, target in linked:
        streaming = SSE_OPERATIONS | WEBSOCKET_OPERATIONS
        assert streaming.isdisjoint({source, target}), f"link {source} -> {target} touches a stream"


def test_queue_operations(doc: dict[str, Any]) -> None:
    ops = {op["operationId"]: (path, method, op) for path, method, _, op in _operations(doc)}
    tagged = {op_id for op_id, (*_, op) in ops.items() if "queues" in op.get("tags", [])}
    assert tagged == QUEUE_OPERATIONS
    assert "queues" in {t["name"] for t in doc["tags"]}
    for op_id in QUEUE_OPERATIONS:
        path, method, op = ops[op_id]
        # 404 topic_not_found / 409 not_a_queue come before endpoint-specific validation.
        assert op["responses"]["404"] == {"$ref": "#/components/responses/NotFound"}, op_id
        if op_id == "dead_letter_jobs":  # its 409 is also no_dead_letter
            examples = op["responses"]["409"]["content"]["application/json"]["examples"]
            codes = {ex["value"]["error"]["code"] for ex in examples.values()}
            assert codes == {"not_a_queue", "no_dead_letter"}, op_id
        else:
            assert op["responses"]["409"] == {"$ref": "#/components/responses/NotAQueue"}, op_id
        assert "not_a_queue" in op["description"] and "topic_not_found" in op["description"], op_id
        assert "before the endpoint's own" in op["description"], op_id
    not_a_queue = doc["components"]["responses"]["NotAQueue"]["content"]["application/json"]
    assert {ex["value"]["error"]["code"] for ex in not_a_queue["examples"].values()} == {"not_a_queue"}
    # Lease arrays: 1..TOPICS_MAX_CLAIM seqs (the engine answers batch_too_large past it).
    schemas = doc["components"]["schemas"]
    for name in ("AckRequest", "NackRequest", "ExtendRequest"):
        seqs = schemas[name]["properties"]["seqs"]
        assert (seqs["minItems"], seqs["maxItems"]) == (1, 1000), name
        assert seqs["x-topics-limits"] == {"maxItems": "TOPICS_MAX_CLAIM"}, name
        assert {"node", "seqs"} <= set(schemas[name]["required"]), name
    assert "lease_ms" in schemas["ExtendRequest"]["required"]
    assert schemas["ClaimRequest"]["required"] == ["node"]
    # The queue counters are one named schema, used by the topic state.
    assert schemas["TopicState"]["properties"]["queue"]["$ref"] == "#/components/schemas/QueueCounters"
    # Queue health (an extension, ruling 22): in the counters and in every response echoing them;
    # optional, so a client generated from this document also reads a server without it.
    health = {"delayed", "oldest_ready_age_ms", "holders", "holders_truncated"}
    for name in ("QueueCounters", "ClaimResponse", "AckResponse", "NackResponse"):
        props = schemas[name]["properties"]
        assert not health & set(schemas[name]["required"]), name
        assert all(props[field]["x-topics-extension"] is True for field in health), name
    assert ops["list_leases"][2]["x-topics-extension"] is True
    # The SSE operation declares its parameters inline (self-contained). `?token=` is the
    # `tokenQuery` security scheme, not a parameter.
    _, _, work = ops["work_stream"]
    params = {p["name"]: p for p in work["parameters"]}
    assert set(params) == {"node", "max", "lease_ms"}
    assert params["node"]["required"] is True
    assert "$ref" not in work["responses"]["406"]


SCHEDULE_OPERATIONS = {"put_schedule", "get_schedule", "list_schedules", "delete_schedule"}


def test_schedule_operations(doc: dict[str, Any], registry: Registry) -> None:
    """Schedules are an extension (ruling 22): their operations and the field they add to a
    topic delete carry ``x-topics-extension``; the body reuses the write body's record schema
    by reference (a record field the write path gains reaches schedules); ``cron``'s pattern is
    the engine's language exactly; exactly one of ``cron`` and ``every_ms`` is in the schema."""
    from topics_engine.schedules import PATTERN

    ops = {op["operationId"]: op for *_, op in _operations(doc)}
    tagged = {op_id for op_id, op in ops.items() if "schedules" in op.get("tags", [])}
    assert tagged == SCHEDULE_OPERATIONS
    assert all(ops[op_id]["x-topics-extension"] is True for op_id in SCHEDULE_OPERATIONS)
    schemas = doc["components"]["schemas"]
    body = schemas["ScheduleConfig"]
    records = body["properties"]["records"]
    assert records["items"] == {"$ref": "#/components/schemas/RecordIn"}
    assert records["x-topics-limits"] == {"maxItems": "TOPICS_MAX_BATCH_RECORDS"}
    cron = body["properties"]["cron"]
    assert cron["pattern"] == PATTERN and cron["x-topics-explain"] == "cron"
    deleted = schemas["TopicDeleteResponse"]
    assert deleted["properties"]["schedules_removed"]["x-topics-extension"] is True
    assert "schedules_removed" not in deleted["required"]
    validator = Draft202012Validator(
        {"$ref": DOC_URI + "#/components/schemas/ScheduleConfig"}, registry=registry
    )
    base = {"topic": "jobs", "records": [{"data": 1}]}
    assert validator.is_valid({**base, "cron": "*/5 * * * *"})
    assert validator.is_valid({**base, "every_ms": 100, "missed": "once"})
    assert not validator.is_valid(base), "a timing is required"
    assert not validator.is_valid({**base, "cron": "* * * * *", "every_ms": 100}), "exactly one"
    assert not validator.is_valid({**base, "cron": "60 * * * *"})
    assert not validator.is_valid({**base, "every_ms": 99})
    assert not validator.is_valid({**base, "every_ms": 100, "records": [{"data": 1, "x": 2}]})


def test_watch_operations(doc: dict[str, Any], registry: Registry) -> None:
    ops = {op["operationId"]: (path, method, op) for path, method, _, op in _operations(doc)}
    tagged = {op_id for op_id, (*_, op) in ops.items() if "watch" in op.get("tags", [])}
    assert tagged == WATCH_OPERATIONS
    assert "watch" in {t["name"] for t in doc["tags"]}
    schemas = doc["components"]["schemas"]

    def valid(schema: str, value: Any) -> bool:
        ref = {"$ref": DOC_URI + "#/components/schemas/" + schema}
        return Draft202012Validator(ref, registry=registry).is_valid(value)

    # POST /v0/watch: a closed body naming every field of the contract (and `cursor`, the resume id).
    *_, create = ops["create_watch"]
    body = create["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/WatchRequest"}
    request = schemas["WatchRequest"]
    assert set(request["properties"]) == {
        "node", "topics", "cursor", "limit", "max_batch_bytes", "heartbeat_ms",
        "include_meta", "include_tags", "include_data", "consistency",
    }  # fmt: skip
    assert request["required"] == ["topics"]
    topics = request["properties"]["topics"]
    assert topics["minProperties"] == 1 and topics["maxProperties"] == 256  # the default, served as set
    assert topics["x-topics-limits"] == {"maxProperties": "TOPICS_MAX_WATCH_TOPICS"}
    assert topics["additionalProperties"] == {"$ref": "#/components/schemas/WatchTopicOptions"}
    assert set(schemas["WatchTopicOptions"]["properties"]) == {"from_seq", "tail", "from_ts", "consumer"}
    assert valid("WatchRequest", {"topics": {"jobs": {"consumer": "billing"}}})
    for other in ({"from_seq": 1}, {"tail": False}, {"from_ts": 1}):
        assert not valid("WatchRequest", {"topics": {"jobs": {"consumer": "billing", **other}}}), other
    assert schemas["WatchConsistency"]["enum"] == ["eventual", "strong"]
    assert valid("WatchRequest", {"topics": {"jobs": {"from_seq": 1}, "events": {"tail": True}}})
    assert valid("WatchRequest", {"topics": {"jobs": {}}, "node": ["a", "b"], "cursor": "eyJqb2JzIjoxfQ"})
    assert not valid("WatchRequest", {"topics": {}})
    assert not valid("WatchRequest", {"topics": {"jobs": {"from_seq": -1}}})
    assert not valid("WatchRequest", {"topics": {"jobs": {"form_seq": 1}}}), "per-topic options closed"
    assert not valid("WatchRequest", {"topics": {"jobs": {}}, "consistency": "linearizable"})
    assert not valid("WatchRequest", {"topics": {"jobs": {}}, "limt": 1}), "request schemas stay closed"
    (lenient,) = create["parameters"]
    assert (lenient["name"], lenient["in"], lenient["schema"]) == ("lenient", "query", {"type": "boolean"})
    session = schemas["WatchSession"]
    assert set(session["required"]) == {"wid", "stream_url", "session_ttl_ms", "topics", "performance"}
    assert session["properties"]["wid"]["pattern"] == "^wid_[A-Za-z0-9_-]{22,}$"
    assert valid("WatchSession", {
        "wid": "wid_BuRguGorNdVFWNQULz-rrw", "stream_url": "/v0/watch/wid_BuRguGorNdVFWNQULz-rrw",
        "session_ttl_ms": 300000, "topics": {"jobs": {"from_seq": 0, "head_seq": 0, "earliest_seq": 1}},
        "performance": {}, "added_later": 1,
    })  # fmt: skip
    assert not valid("WatchSession", {
        "wid": "wid_short", "stream_url": "/v0/watch/wid_short", "session_ttl_ms": 1, "topics": {},
        "performance": {},
    })  # fmt: skip

    # GET /v0/watch/{wid}: self-contained like work_stream (inline parameters and responses).
    *_, stream = ops["watch_stream"]
    params = {p["name"]: p for p in stream["parameters"]}
    assert set(params) == {"wid", "Last-Event-ID"}
    assert (params["wid"]["in"], params["wid"]["required"]) == ("path", True)
    assert (params["Last-Event-ID"]["in"], params["Last-Event-ID"]["required"]) == ("header", False)
    for status in ("401", "404", "406"):
        assert "$ref" not in stream["responses"][status], status
    not_found = stream["responses"]["404"]["content"]["application/json"]["examples"]
    assert {ex["value"]["error"]["code"] for ex in not_found.values()} == {"not_found"}
    frames = stream["responses"]["200"]["description"]
    for frame in ("retry: 2000", "event: record", "event: tombstone", "event: caught-up", ": hb",
                  "event: topic-deleted", "event: error", "from_seq_too_old", "superseded"):  # fmt: skip
        assert frame in frames, frame

    # GET /v0/ws: the upgrade; bearerAuth only, never `?token=` (docs/WEBSOCKET.md).
    *_, ws = ops["open_websocket"]
    assert ws["security"] == [{"bearerAuth": []}]
    assert "docs/WEBSOCKET.md" in ws["description"] and "`?token=` is **not**" in ws["description"]
    assert "content" not in ws["responses"]["101"]
    assert "from_seq_too_old" in schemas["TombstoneReason"]["enum"]


# ------------------------------------------------------------------ fit for client generation


def test_no_default_keyword_anywhere(doc: dict[str, Any]) -> None:
    """No `default:` in any schema (request or response) — a generator would fill it in and a
    partial PUT would reset fields. The only `default` keys left are `default` responses."""
    offenders = [
        _pointer(path)
        for path, node in _walk(doc)
        if isinstance(node, dict) and "default" in node and (not path or path[-1] != "responses")
    ]
    assert not offenders, f"`default:` outside a Responses Object: {offenders}"
    for _, _, _, op in _operations(doc):
        if "default" in op["responses"]:
            assert op["responses"]["default"] == {"$ref": "#/components/responses/DefaultError"}


# Defaults the server applies (formerly `default:` keywords), as each description must state them.
DOCUMENTED_DEFAULTS = {
    ("list_topics", "page_size"): "Default 100; 0 means the default",
    ("list_topics", "touch"): "Default false",
    ("get_topic", "touch"): "Default true",
    ("delete_topic", "if_empty"): "Default false",
    ("append_records", "return_seqs"): "Default true",
    ("work_stream", "max"): "Default 1",
    ("TopicConfig", "type"): "Default `log`",
    ("TopicConfig", "ttl_ms"): "Default 0",
    ("TopicConfig", "cap_records"): "Default 0",
    ("TopicConfig", "cap_bytes"): "Default 0",
    ("TopicConfig", "discard"): "Default `old`",
    ("TopicConfig", "durable"): "Default false",
    ("TopicConfig", "durability"): "Default: resolved from `durable`",
    ("TopicConfig", "priority"): "Default null",
    ("TopicConfig", "auto_priority"): "Default true",
    ("TopicConfig", "auto_create"): "Default true",
    ("TopicConfig", "idempotency_window_ms"): "Default 120000",
    ("TopicConfig", "dedupe_node"): "Default true",
    ("TopicConfig", "lease_ms"): "Default 30000",
    ("TopicConfig", "claim_jitter_ms"): "Default 0",
    ("TopicConfig", "max_deliveries"): "Default 0",
    ("TopicConfig", "dead_letter"): "Default null",
    ("TopicConfig", "leases_durable"): "Default false",
    ("AppendRequest", "disable_backpressure"): "Default false",
    ("DiffRequest", "from_seq"): "Default 0",
    ("DiffRequest", "limit"): "Default 256; 0 means the default",
    ("DiffRequest", "max_batch_bytes"): "Default 1048576 (1 MiB); 0 means the default",
    ("DiffRequest", "include_tags"): "Default false",
    ("DiffRequest", "include_meta"): "Default true",
    ("DiffRequest", "wait_ms"): "Default 0",
    ("ClaimRequest", "max"): "Default 1; 0 means the default",
    ("NackRequest", "delay_ms"): "Default 0",
    ("create_watch", "lenient"): "Default false",
    ("WatchTopicOptions", "from_seq"): "Default 0",
    ("WatchTopicOptions", "tail"): "Default false",
    ("WatchRequest", "node"): "Default none",
    ("WatchRequest", "limit"): "Default 256; 0 means the default",
    ("WatchRequest", "max_batch_bytes"): "Default 262144 (256 KiB); 0 means the server default 1048576",
    ("WatchRequest", "heartbeat_ms"): "Default 15000",
    ("WatchRequest", "include_meta"): "Default true",
    ("WatchRequest", "include_tags"): "Default false",
    ("WatchRequest", "include_data"): "Default true",
    ("WatchRequest", "consistency"): "Default `eventual`",
}


def test_defaults_live_in_descriptions(doc: dict[str, Any]) -> None:
    ops = {op["operationId"]: (item, op) for _, _, item, op in _operations(doc)}
    schemas = doc["components"]["schemas"]
    for (where, name), text in DOCUMENTED_DEFAULTS.items():
        if where in ops:
            item, op = ops[where]
            params = [_resolve(doc, p) for p in item.get("parameters", []) + op.get("parameters", [])]
            (param,) = [p for p in params if p["name"] == name]
            description = param["description"]
        else:
            description = schemas[where]["properties"][name]["description"]
        assert text in description, f"{where}.{name}: description must state {text!r}: {description!r}"


def test_every_optional_field_of_the_contract_is_accepted(doc: dict[str, Any], registry: Registry) -> None:
    diff = doc["components"]["schemas"]["DiffRequest"]
    assert diff["properties"]["max_batch_bytes"] == {
        "type": "integer",
        "minimum": 0,
        "description": diff["properties"]["max_batch_bytes"]["description"],
    }
    assert "8388608 (8 MiB)" in diff["properties"]["max_batch_bytes"]["description"]
    validator = Draft202012Validator(
        {"$ref": DOC_URI + "#/components/schemas/DiffRequest"}, registry=registry
    )
    assert validator.is_valid({"from_seq": 1, "max_batch_bytes": 0})
    assert not validator.is_valid({"max_batch_bytes": -1})
    assert not validator.is_valid({"max_batch_byte": 1}), "request schemas stay closed"
    (page_size,) = [p for p in doc["paths"]["/v0/topics"]["get"]["parameters"] if p["name"] == "page_size"]
    assert page_size["schema"] == {"type": "integer", "minimum": 0}, "page_size 0 means the default"
    assert "non-positive" not in doc["info"]["description"]


def _is_enum_schema(node: Any) -> bool:
    return isinstance(node, dict) and ("enum" in node or "const" in node)


def _is_plain_string(node: Any) -> bool:
    """`{type: string}` with nothing that could reject a string."""
    return (
        isinstance(node, dict)
        and node.get("type") == "string"
        and not (set(node) - {"type", "description", "title", "examples"})
    )


def _enum_sites(doc: dict[str, Any], roots: list[tuple[str, Any]]) -> Iterator[tuple[str, bool]]:
    """(location, open) for every enum/const reachable from ``roots`` (following $refs).

    A site is open when it is a member of an `anyOf` that also admits any plain string."""
    seen: set[str] = set()
    stack: list[tuple[str, Any, bool]] = [(where, node, False) for where, node in roots]
    # an ``if`` only selects a branch (an SSE event's kind picks its payload schema): its
    # ``const`` is a condition, not a set of values a response takes
    data_keys = {"examples", "example", "default", "const", "enum", "description", "title", "if"}
    while stack:
        where, node, is_open = stack.pop()
        if isinstance(node, list):
            stack.extend((f"{where}/{i}", sub, is_open) for i, sub in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = _resolve(doc, node)
            if _is_enum_schema(target):
                yield f"{where} -> {ref}", is_open
            elif ref not in seen:
                seen.add(ref)
                stack.append((ref, target, False))
        if _is_enum_schema(node):
            yield where, is_open
        for key, sub in node.items():
            if key in data_keys or key == "$ref":
                continue
            if key == "properties" and isinstance(sub, dict):
                stack.extend((f"{where}/properties/{k}", v, False) for k, v in sub.items())
            elif key == "anyOf" and isinstance(sub, list):
                widened = any(_is_plain_string(alt) for alt in sub)
                stack.extend((f"{where}/anyOf/{i}", alt, widened) for i, alt in enumerate(sub))
            else:
                stack.append((f"{where}/{key}", sub, False))


def _response_roots(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    roots = []
    for path, method, _, op in _operations(doc):
        for status, response in op["responses"].items():
            for media_type, media in _resolve(doc, response).get("content", {}).items():
                roots.append((f"{method.upper()} {path} {status} {media_type}", media["schema"]))
    return roots


def _request_roots(doc: dict[str, Any]) -> list[tuple[str, Any]]:
    roots = []
    for path, method, item, op in _operations(doc):
        if "requestBody" in op:
            body = _resolve(doc, op["requestBody"])
            roots.append((f"{method.upper()} {path} body", body["content"]["application/json"]["schema"]))
        for p in item.get("parameters", []) + op.get("parameters", []):
            p = _resolve(doc, p)
            roots.append((f"{method.upper()} {path} {p['in']} {p['name']}", p["schema"]))
    return roots


def test_response_enums_are_open(doc: dict[str, Any], registry: Registry) -> None:
    sites = list(_enum_sites(doc, _response_roots(doc)))
    assert len(sites) >= 8, sites  # type x3, discard, durability x2, reason, error code
    closed = [where for where, is_open in sites if not is_open]
    assert not closed, f"response enums must be anyOf [<enum>, {{type: string}}]: {closed}"
    # The same, behaviourally: every response property that documents known values accepts an
    # unknown string.
    cases = [
        ("TopicState", "type"),
        ("TopicSummary", "type"),
        ("TopicSummary", "durability"),
        ("ResolvedTopicConfig", "type"),
        ("ResolvedTopicConfig", "discard"),
        ("ResolvedTopicConfig", "durability"),
        ("Tombstone", "reason"),
        ("ErrorBody", "code"),
        ("Health", "status"),
        ("Ready", "status"),
    ]
    for name, prop in cases:
        ptr = DOC_URI + "#" + _pointer(("components", "schemas", name, "properties", prop))
        validator = Draft202012Validator({"$ref": ptr}, registry=registry)
        assert validator.is_valid("a-value-added-later"), f"{name}.{prop} rejects an unknown value"
        assert not validator.is_valid(7), f"{name}.{prop} must still be a string"


def test_request_enums_are_closed(doc: dict[str, Any], registry: Registry) -> None:
    sites = list(_enum_sites(doc, _request_roots(doc)))
    assert sites
    widened = [where for where, is_open in sites if is_open]
    assert not widened, f"request enums must stay closed: {widened}"

    def valid(schema: str, value: Any) -> bool:
        ref = {"$ref": DOC_URI + "#/components/schemas/" + schema}
        return Draft202012Validator(ref, registry=registry).is_valid(value)

    assert valid("TopicConfig", {"type": "queue", "discard": "reject", "durability": "memory"})
    for field in ("type", "discard", "durability"):
        assert not valid("TopicConfig", {field: "bogus"}), f"TopicConfig.{field} accepts an unknown value"
    assert valid("DeleteRecordsRequest", {"match": ["tag", "Glob", "a*"]})
    assert not valid("DeleteRecordsRequest", {"match": ["tag", "Regex", "a.*"]})


SHARED_SCHEMAS = {
    "ErrorBody": "object",
    "ErrorCode": "string",
    "MatchOp": "string",
    "TopicType": "string",
    "Discard": "string",
    "Durability": "string",
}


def test_shared_schemas_are_titled_and_referenced(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    untitled = [name for name, schema in schemas.items() if schema.get("title") != name]
    assert not untitled, f"component schemas need `title` equal to their name: {untitled}"
    for name, kind in SHARED_SCHEMAS.items():
        assert schemas[name]["type"] == kind, name
    assert schemas["TopicType"]["enum"] == ["log", "queue"]
    assert schemas["Discard"]["enum"] == ["old", "reject"]
    assert schemas["Durability"]["enum"] == ["ephemeral", "memory", "disk", "fsync"]
    assert schemas["MatchOp"]["enum"] == ["Eq", "Glob"]
    request = schemas["TopicConfig"]["properties"]
    for prop, target in (("type", "TopicType"), ("discard", "Discard"), ("durability", "Durability")):
        assert request[prop]["$ref"] == f"#/components/schemas/{target}", f"TopicConfig.{prop}"
    array = [alt for alt in schemas["Match"]["oneOf"] if alt.get("type") == "array"][0]
    assert array["prefixItems"][1] == {"$ref": "#/components/schemas/MatchOp"}
    for name, prop, target in (
        ("ResolvedTopicConfig", "type", "TopicType"),
        ("ResolvedTopicConfig", "discard", "Discard"),
        ("ResolvedTopicConfig", "durability", "Durability"),
        ("TopicState", "type", "TopicType"),
        ("TopicSummary", "type", "TopicType"),
        ("TopicSummary", "durability", "Durability"),
    ):
        assert {"$ref": f"#/components/schemas/{target}"} in schemas[name]["properties"][prop]["anyOf"]
    # No inline copies of the shared enums anywhere.
    for path, node in _walk(schemas):
        if isinstance(node, dict) and isinstance(node.get("enum"), list) and path[-1] != "properties":
            assert len(path) == 1, f"inline enum at /components/schemas{_pointer(path)}"


def test_one_error_schema(doc: dict[str, Any]) -> None:
    schemas = doc["components"]["schemas"]
    envelopes = [
        _pointer(path)
        for path, node in _walk(doc)
        if isinstance(node, dict)
        and isinstance(node.get("properties"), dict)
        and "error" in node["properties"]
        and "examples" not in path
    ]
    # StreamErrorFrame is the payload of an SSE `event: error` (`{"code", "error"}`, §7.2), not
    # an HTTP error envelope
    assert envelopes == ["/components/schemas/Error", "/components/schemas/StreamErrorFrame"], envelopes
    assert "error" not in schemas["ErrorBody"]["properties"]
    for path, method, _, op in _operations(doc):
        for status, response in op["responses"].items():
            if status.startswith(("4", "5")) or status == "default":
                media = _resolve(doc, response)["content"]["application/json"]
                assert media["schema"] == {"$ref": "#/components/schemas/Error"}, (
                    f"{method.upper()} {path} {status}: reference Error directly (no allOf copies)"
                )
    for name, response in doc["components"]["responses"].items():
        for media in response.get("content", {}).values():
            schema = media["schema"]
            assert not {"allOf", "anyOf", "oneOf"} & set(schema), f"responses/{name}: composed schema"


# Every field `GET /v0/topics` returns per topic (topics_engine.Engine._summary), always present.
SERVER_SUMMARY_FIELDS = {
    "topic",
    "type",
    "head_seq",
    "earliest_seq",
    "count",
    "bytes",
    "durable",
    "durability",
    "effective_priority",
}


def test_topic_summary_lists_every_server_field(doc: dict[str, Any]) -> None:
    summary = doc["components"]["schemas"]["TopicSummary"]
    assert set(summary["properties"]) == SERVER_SUMMARY_FIELDS
    assert set(summary["required"]) == SERVER_SUMMARY_FIELDS


PROBES = {"health", "ready", "healthz", "readyz"}

# The contract's per-route scope table (§0.2), restated independently of the document.
ROUTE_SCOPES = {
    "list_topics": ["read"],
    "get_topic": ["read"],
    "diff_topic": ["read"],
    "list_routers": ["read"],
    "get_router": ["read"],
    "create_watch": ["read"],
    "watch_stream": ["read"],
    "metrics": ["read"],
    "append_records": ["write"],
    "ack_jobs": ["write"],
    "nack_jobs": ["write"],
    "extend_leases": ["write"],
    "list_leases": ["read"],
    "dead_letter_jobs": ["write"],
    "claim_jobs": ["read", "write"],
    "work_stream": ["read", "write"],
    "delete_topic": ["delete"],
    "delete_router": ["delete"],
    "delete_records": ["delete"],
    "put_topic": ["admin"],
    "put_router": ["admin"],
    # schedules (an extension, issue 24): admin manages them, read lists and gets them
    "put_schedule": ["admin"],
    "delete_schedule": ["admin"],
    "get_schedule": ["read"],
    "list_schedules": ["read"],
    # named consumers (an extension, issue 25): admin creates and deletes them, write commits
    "put_consumer": ["admin"],
    "delete_consumer": ["admin"],
    "commit_consumer": ["write"],
    "get_consumer": ["read"],
    "list_consumers": ["read"],
    "open_websocket": [],  # a key, no scope: each command is authorized on its own
    "whoami": [],  # an extension: any known key may ask what it may do
}


def test_security_schemes(doc: dict[str, Any]) -> None:
    schemes = doc["components"]["securitySchemes"]
    assert schemes["bearerAuth"]["type"] == "http" and schemes["bearerAuth"]["scheme"] == "bearer"
    token = schemes["tokenQuery"]
    assert (token["type"], token["in"], token["name"]) == ("apiKey", "query", "token")
    # No document-wide default: an operation added without its own requirement fails here (and
    # the server refuses to start).
    assert "security" not in doc
    for _, _, item, op in _operations(doc):
        op_id = op["operationId"]
        assert "security" in op, f"{op_id}: every operation declares its security and scopes"
        if op_id in PROBES:
            assert op["security"] == [], f"{op_id}: probes declare no auth"
            continue
        scopes = ROUTE_SCOPES[op_id]
        if op_id in SSE_OPERATIONS:
            assert op["security"] == [{"bearerAuth": scopes}, {"tokenQuery": scopes}], op_id
        else:
            assert op["security"] == [{"bearerAuth": scopes}], op_id
        # `?token=` is the security scheme; a parameter of the same name would duplicate it.
        params = [_resolve(doc, p) for p in item.get("parameters", []) + op.get("parameters", [])]
        assert not [p for p in params if p["in"] == "query" and p["name"] == "token"], op_id
    ws = next(op for *_, op in _operations(doc) if op["operationId"] == "open_websocket")
    assert ws["x-command-scopes"] == {
        "subscribe": ["read"],
        "unsubscribe": [],
        "ping": [],
        "publish": ["write"],
        "publish_with_config": ["write", "admin"],
    }


def test_the_websocket_upgrade_is_described_beside_paths(doc: dict[str, Any]) -> None:
    """``GET /v0/ws`` answers ``101`` and switches protocols, which no tool that exercises
    ``paths`` can use: it is described exactly in ``components.pathItems`` instead, the handshake
    headers required with the patterns the server checks (docs/DECISIONS.md, "The WebSocket
    upgrade in the served document")."""
    assert "/v0/ws" not in doc["paths"]
    item = doc["components"]["pathItems"]["WebSocket"]
    assert item["x-topics-path"] == "/v0/ws"
    op = item["get"]
    assert set(op["responses"]) >= {"101", "400", "401", "429"}
    headers = {p["name"]: p for p in op["parameters"] if p["in"] == "header"}
    assert set(headers) == {"Upgrade", "Connection", "Sec-WebSocket-Key", "Sec-WebSocket-Version"}
    assert all(p["required"] and "pattern" in p["schema"] for p in headers.values())
