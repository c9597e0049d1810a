"""Stateful conformance over the OpenAPI links.

``put_topic`` (200/201) links to append_records / diff_topic / get_topic / delete_records /
delete_topic on the same topic; ``append_records`` links to diff_topic / delete_records.
schemathesis chains them into short scenarios (a topic created, then written, read,
trimmed, deleted, ...) and validates every step with all default checks — including the
stateful ones (use_after_free, ensure_resource_availability) — plus the contract-aware
positive-data check and the error-envelope check used by the per-operation suite.
"""

from __future__ import annotations

import collections
from typing import Any

import hypothesis
import pytest
from schemathesis import Case
from schemathesis.core.transport import Response
from schemathesis.specs.openapi import stateful as openapi_stateful
from schemathesis.specs.openapi.checks import positive_data_acceptance
from schemathesis.specs.openapi.schemas import OpenApiSchema

from conformance.contract import positive_data_acceptance_per_contract
from conformance.support import SEED, STATEFUL_MAX_EXAMPLES, STATEFUL_STEP_COUNT, build_app, build_schema
from conformance.test_operations import error_envelope

# Operations reached only through a link from put_topic / append_records.
LINK_TARGETS = {"append_records", "diff_topic", "get_topic", "delete_records", "delete_topic"}

STATEFUL_SETTINGS = hypothesis.settings(
    max_examples=STATEFUL_MAX_EXAMPLES,
    stateful_step_count=STATEFUL_STEP_COUNT,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=list(hypothesis.HealthCheck),
)


def test_links_are_declared(schema: OpenApiSchema) -> None:
    """The link graph this test relies on is present in the spec (guards against silent no-ops)."""
    put_links = schema.raw_schema["paths"]["/v0/topics/{topic}"]["put"]["responses"]
    targets = {
        link["operationId"]
        if "operationId" in link
        else schema.raw_schema["components"]["links"][link["$ref"].rsplit("/", 1)[1]]["operationId"]
        for status in ("200", "201")
        for link in put_links[status]["links"].values()
    }
    assert targets == LINK_TARGETS


def test_stateful_links(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every scenario gets its own fresh app (see ``setup``): Hypothesis replays scenarios while
    # generating and shrinking, and the enabled rules depend on earlier responses (201 vs 200),
    # so state leaking between scenarios would make generation non-reproducible (Flaky).
    schema = build_schema()
    # Walk the links the spec declares, not schemathesis' inferred ones (dependency analysis
    # would add list_topics-driven transitions and spread the small budget thin).
    schema.config.phases.stateful.inference.algorithms = []
    # schemathesis only starts scenarios at POSTs and parameterless GETs; here the producer is
    # the idempotent upsert PUT /v0/topics/{topic}. Make put_topic the (only) scenario root so
    # every scenario is put_topic → <links>.
    monkeypatch.setattr(
        openapi_stateful,
        "is_likely_root_transition",
        lambda operation, node, produced_anywhere: schema.get_operation_id(operation) == "put_topic",
    )
    reached: collections.Counter[tuple[str, int]] = collections.Counter()
    base = schema.as_state_machine()

    class TopicsLinks(base):  # type: ignore[valid-type, misc]
        def setup(self) -> None:
            super().setup()
            self.app = build_app()
            schema.app = self.app  # for the ignored_auth probes, which send through the schema's app

        def get_call_kwargs(self, case: Case) -> dict[str, Any]:
            return {"app": self.app}

        def before_call(self, case: Case) -> None:
            super().before_call(case)
            if schema.get_operation_id(case.operation) == "append_records":
                _without_delays(case.body)

        def after_call(self, response: Response, case: Case) -> None:
            super().after_call(response, case)
            reached[(schema.get_operation_id(case.operation) or "?", response.status_code)] += 1

        def validate_response(
            self, response: Response, case: Case, additional_checks: Any = None, **kwargs: Any
        ) -> None:
            __tracebackhide__ = True
            case.validate_response(
                response,
                excluded_checks=[positive_data_acceptance],
                additional_checks=[positive_data_acceptance_per_contract, error_envelope],
                transport_kwargs=kwargs or None,
                recorder=getattr(self, "recorder", None),
            )

    TopicsLinks.run(settings=hypothesis.settings(STATEFUL_SETTINGS, derandomize=True))

    # The run must actually walk the links, not just call put_topic in isolation: every
    # link target is reached with a success at least once.
    succeeded = {op for (op, status), _ in reached.items() if 200 <= status < 300}
    missing = LINK_TARGETS - succeeded
    assert not missing, f"links never followed to a 2xx: {sorted(missing)}; steps: {dict(reached)}"
    assert SEED  # the schema (and so the state machine's rule order) is seeded in conformance.support


def _without_delays(body: Any) -> None:
    """An append body without ``delay_ms`` (the batch's and every record's): delayed writes need
    a queue (``409 not_a_queue`` on a log), and the walk's topics are logs as often as not, so
    with it hardly any append of the walk would succeed. The per-operation suite and the
    schemathesis CLI run (``test_external``) send ``delay_ms`` as generated."""
    if not isinstance(body, dict):
        return
    body.pop("delay_ms", None)
    for record in body.get("records") or ():
        if isinstance(record, dict):
            record.pop("delay_ms", None)
