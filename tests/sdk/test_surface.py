"""The SDK's public surface: one exception class per spec error code, the async client the
twin of the blocking one, the package typed."""

from __future__ import annotations

import inspect
from pathlib import Path

import topics
import yaml
from topics import _generated
from topics.errors import ERRORS_BY_CODE

SPEC = Path(__file__).resolve().parents[2] / "openapi" / "v0.yaml"
ITERATING = {
    "list_topics",
    "list_routers",
    "list_schedules",
    "list_consumers",
    "leases",
    "read",
    "read_raw",
    "watch",
    "consume",
}
"""Methods that return an iterator (async iterator on AsyncClient) rather than a result."""


def test_one_exception_class_per_error_code_of_the_spec() -> None:
    spec_codes = set(yaml.safe_load(SPEC.read_text())["components"]["schemas"]["ErrorCode"]["enum"])
    assert set(ERRORS_BY_CODE) == spec_codes == set(_generated.ERROR_CODES)
    for code, cls in ERRORS_BY_CODE.items():
        assert issubclass(cls, topics.TopicsError) and cls.code == code
        assert getattr(topics, cls.__name__) is cls, f"{cls.__name__} is not exported"


def public_methods(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(cls).items()
        if callable(member) and not name.startswith("_") and name != "close"
    }


def test_async_client_has_the_same_methods_and_signatures() -> None:
    sync, asyncs = public_methods(topics.Client), public_methods(topics.AsyncClient)
    assert set(sync) == set(asyncs)
    for name, signature in sync.items():
        other = asyncs[name]
        assert list(signature.parameters) == list(other.parameters), name
        for param, p in signature.parameters.items():
            q = other.parameters[param]
            assert (p.kind, p.default) == (q.kind, q.default), f"{name}({param})"
        is_coroutine = inspect.iscoroutinefunction(getattr(topics.AsyncClient, name))
        assert is_coroutine == (name not in ITERATING), name
    assert len(sync) >= 20


def test_every_public_name_has_a_docstring_with_an_example() -> None:
    for name in topics.__all__:
        obj = getattr(topics, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert obj.__doc__, name
            continue
        if not isinstance(obj, type):
            continue
        assert obj.__doc__, name
    for name, member in vars(topics.Client).items():
        if callable(member) and not name.startswith("_") and name != "close":
            assert member.__doc__ and ">>>" in member.__doc__, f"Client.{name} has no runnable example"


def test_the_package_is_typed() -> None:
    assert (Path(topics.__file__).parent / "py.typed").is_file()
