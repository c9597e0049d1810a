"""The SDK's docstring examples run, verbatim, against a fresh server (so they stay true)."""

from __future__ import annotations

import doctest
from collections.abc import Callable

import pytest
import topics
import topics._transport
import topics.cli.durations
import topics.client
import topics.errors
import topics.models
import topics.relay
import topics.worker

from tests.server.processes import ServerProcess


@pytest.mark.parametrize(
    "module",
    [
        topics,
        topics._transport,
        topics.cli.durations,
        topics.client,
        topics.errors,
        topics.models,
        topics.worker,
        topics.relay,
    ],
    ids=lambda m: m.__name__,
)
def test_examples_run(
    module: object, make_server: Callable[..., ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = make_server()
    monkeypatch.setenv("TOPICS_URL", server.url)
    monkeypatch.delenv("TOPICS_API_KEY", raising=False)
    with topics.Client() as client:
        finder = doctest.DocTestFinder(exclude_empty=True)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        tests = finder.find(module, extraglobs={"client": client, "topics": topics})
        assert tests, f"{module} has no examples"
        for test in tests:
            runner.run(test)
        result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed (output above)"
