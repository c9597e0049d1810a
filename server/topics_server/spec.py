"""Loading the OpenAPI 3.1 document (``openapi/v0.yaml``) for connexion, and the document as
this server serves it (:func:`served_document`).

connexion 3.3 only validates 3.0 documents, so this module validates the document against the
official OAS 3.1 meta-schema (vendored in ``openapi/meta/``) with a Draft 2020-12 validator and
gives connexion a :class:`Specification` subclass that trusts that check. Routing and request
validation are then derived from the same document.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import yaml
from connexion.spec import OpenAPISpecification

_REPO_SPEC = Path(__file__).resolve().parents[2] / "openapi" / "v0.yaml"
_PACKAGED_SPEC = Path(__file__).resolve().parent / "openapi" / "v0.yaml"


def _spec_path() -> Path:
    """``TOPICS_OPENAPI_PATH``, else the repository's ``openapi/v0.yaml`` (a checkout or an
    editable install), else the copy a wheel build puts into this package (``setup.py``)."""
    override = os.environ.get("TOPICS_OPENAPI_PATH")
    if override:
        return Path(override)
    return _REPO_SPEC if _REPO_SPEC.is_file() else _PACKAGED_SPEC


SPEC_PATH = _spec_path()
META_SCHEMA_PATH = SPEC_PATH.parent / "meta" / "oas-3.1-schema-2022-10-07.json"


class InvalidSpec(Exception):
    """The OpenAPI document does not conform to the OAS 3.1 meta-schema."""


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when PyYAML was built with it: ~10x faster than the pure-Python one, which
was most of the server's start-up time."""


@cache
def load_document() -> dict[str, Any]:
    with SPEC_PATH.open() as f:
        doc: dict[str, Any] = yaml.load(f, Loader=_Loader)  # noqa: S506 — a safe loader
    return doc


def validate_document(doc: dict[str, Any]) -> None:
    meta = json.loads(META_SCHEMA_PATH.read_text())
    errors = list(jsonschema_rs.Draft202012Validator(meta).iter_errors(doc))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.instance_path)
        raise InvalidSpec(f"{SPEC_PATH}: {where}: {first.message} ({len(errors)} error(s))")


class OpenAPI31Specification(OpenAPISpecification):
    """connexion's OpenAPI 3 specification, validated against the 3.1 meta-schema instead."""

    @classmethod
    def _validate_spec(cls, spec: dict[str, Any]) -> None:
        validate_document(spec)


UPGRADE_PATH = "x-topics-path"
"""Marks a path item under ``components.pathItems`` that the server routes at this path, though it
is not under ``paths``: the WebSocket upgrade (see the document's description)."""


@cache
def routing_document() -> dict[str, Any]:
    """The document with every ``components.pathItems`` entry that names an ``x-topics-path``
    attached under ``paths``: what the route table and the ``Allow`` lookup are built from."""
    doc = load_document()
    upgrades = {
        item[UPGRADE_PATH]: item
        for item in doc.get("components", {}).get("pathItems", {}).values()
        if UPGRADE_PATH in item
    }
    return {**doc, "paths": {**doc["paths"], **upgrades}}


def load_specification() -> OpenAPI31Specification:
    return OpenAPI31Specification(routing_document())


_HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


@cache
def _path_table() -> list[tuple[re.Pattern[str], tuple[str, ...]]]:
    table = []
    for template, item in routing_document()["paths"].items():
        pattern = re.sub(r"\\{[^}]+\\}", "[^/]+", re.escape(template))
        methods = tuple(m.upper() for m in _HTTP_METHODS if m in item)
        table.append((re.compile(pattern), methods))
    return table


def allowed_methods(path: str) -> tuple[str, ...]:
    """Methods the spec defines for ``path`` (for the ``Allow`` header of a 405)."""
    for pattern, methods in _path_table():
        if pattern.fullmatch(path):
            return methods
    return ()


RUNTIME_LIMITS = "x-topics-limits"
"""A schema's runtime limits, ``{keyword: "TOPICS_MAX_..."}``: the keyword's value in the file is
the default, the served document states the configured one."""


def served_document(doc: dict[str, Any], limits: Mapping[str, int]) -> dict[str, Any]:
    """``doc`` with every runtime limit set to its configured value (``limits`` by variable
    name): what ``GET /v0/openapi.json`` serves, so that it describes exactly what this server
    accepts. A limit the document names but ``limits`` lacks is a start-up error."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: walk(value) for key, value in node.items()}
        for keyword, variable in node.get(RUNTIME_LIMITS, {}).items():
            if variable not in limits:
                raise InvalidSpec(f"{SPEC_PATH}: runtime limit {variable} ({keyword}) is not configured")
            out[keyword] = limits[variable]
        return out

    served: dict[str, Any] = walk(doc)
    return served
