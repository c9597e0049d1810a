"""Structural rules: one-way imports, and the spec / error classes / statuses agreeing."""

from __future__ import annotations

import ast
from pathlib import Path

from topics_engine.errors import TopicsError, all_error_classes
from topics_server.spec import load_document

ROOT = Path(__file__).resolve().parents[1]
FRAMEWORKS = ("connexion", "starlette", "uvicorn", "topics_server", "httpx", "aiohttp")


def _imports(package: Path) -> set[str]:
    names: set[str] = set()
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
    return names


def test_engine_imports_no_web_framework_and_not_the_server() -> None:
    imported = _imports(ROOT / "server" / "topics_engine")
    offenders = sorted(n for n in imported if n.split(".")[0] in FRAMEWORKS)
    assert offenders == []


def test_spec_error_codes_match_the_engine_error_classes() -> None:
    doc = load_document()
    spec_codes = set(
        doc["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"]
    )
    classes = all_error_classes()
    assert {cls.code for cls in classes} == spec_codes
    assert len({cls.code for cls in classes}) == len(classes), "one class per code"
    assert TopicsError.code == "internal"


def test_error_statuses_match_the_contract_table() -> None:
    expected = {
        "invalid_request": 400,
        "batch_too_large": 400,
        "record_too_large": 400,
        "unauthorized": 401,
        "forbidden": 403,
        "topic_not_found": 404,
        "router_not_found": 404,
        "not_found": 404,
        "method_not_allowed": 405,
        "not_acceptable": 406,
        "router_cycle": 409,
        "topic_exists_incompatible": 409,
        "topic_not_empty": 409,
        "not_a_queue": 409,
        "payload_too_large": 413,
        "unsupported_media_type": 415,
        "topic_full": 422,
        "throttled": 429,
        "internal": 500,
        "not_ready": 503,
        "shutting_down": 503,
    }
    assert {cls.code: cls.status for cls in all_error_classes()} == expected


def test_every_spec_operation_has_a_handler() -> None:
    from topics_server.dispatch import HANDLERS

    ops = {
        op["operationId"]
        for item in load_document()["paths"].values()
        for method, op in item.items()
        if isinstance(op, dict) and "operationId" in op
    }
    assert ops == set(HANDLERS)
