"""The conformance suite covers every operationId in openapi/v0.yaml.

A new operation added to the spec must show up in the property-based suite (it does
automatically through ``schema.parametrize()``, unless it is filtered out or fails to
load); an operation that silently drops out fails here.
"""

from __future__ import annotations

import pytest
from schemathesis.core.result import Ok

from conformance import test_operations
from conformance.support import spec_operation_ids


def _parametrized_operation_ids() -> dict[str, str]:
    schema = test_operations.property_schema
    ids: dict[str, str] = {}
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), f"operation failed to load in schemathesis: {result.err()}"
        operation = result.ok()
        ids[schema.get_operation_id(operation) or operation.label] = operation.label
    return ids


def test_every_operation_id_is_parametrized() -> None:
    in_spec = spec_operation_ids() - test_operations.STREAMING_OPERATIONS
    covered = set(_parametrized_operation_ids())
    assert in_spec, "no operationIds found in openapi/v0.yaml"
    assert covered == in_spec, (
        f"not covered: {sorted(in_spec - covered)}; unknown: {sorted(covered - in_spec)}"
    )


def test_every_operation_has_a_collected_test_item(request: pytest.FixtureRequest) -> None:
    """When the operations module is collected in this session, it has one item per operation."""
    items = [
        item
        for item in request.session.items
        if getattr(item, "originalname", None) == test_operations.test_operation_conforms.__name__
    ]
    if not items:
        pytest.skip("conformance/test_operations.py not collected in this session")
    labels = {getattr(item, "operation_label", None) for item in items}
    expected = set(_parametrized_operation_ids().values())
    assert labels == expected, f"missing items for: {sorted(expected - labels)}"
