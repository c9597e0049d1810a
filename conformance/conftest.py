"""Fixtures for the schemathesis conformance suite: the spec bound to a fresh app per test.

Builders and the suite-wide budget/seed live in :mod:`conformance.support`.
"""

from __future__ import annotations

from typing import Any

import pytest
from schemathesis.specs.openapi.schemas import OpenApiSchema

from conformance.support import build_app, build_schema


@pytest.fixture
def app() -> Any:
    return build_app()


@pytest.fixture
def schema(app: Any) -> OpenApiSchema:
    """The spec bound to a fresh app (used via ``schemathesis.pytest.from_fixture``)."""
    return build_schema(app)
