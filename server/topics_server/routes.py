"""The route table, built by connexion from the OpenAPI document and compiled into one matcher.

connexion walks the spec (``AbstractRoutingAPI``): every path and method becomes an operation,
its ``operationId`` resolved to a handler (start-up fails if one has none), its parameters and
body schema resolved, its ``security`` read as the scopes it needs (start-up fails if it
declares none). :class:`RouteTable` compiles each operation into a :class:`Route` — its
``dispatch.Operation`` (handler and traits), its validator (compiled once), its requirement and
its request counters (``accounting``) —
and indexes the path templates in a segment trie, so matching a request costs one dict lookup
per path segment — no per-route regular expressions, no middleware stack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote

from connexion.middleware.abstract import AbstractRoutingAPI
from connexion.operations import AbstractOperation
from connexion.resolver import Resolver
from connexion.spec import Specification
from topics_engine.errors import NotFound

from .access import Requirement
from .accounting import OperationStats, RequestStats
from .bodies import BodyCompiler
from .dispatch import Operation
from .errors import MethodNotAllowed
from .validation import OperationValidator

_CACHE_SIZE = 4096


@dataclass(slots=True)
class Route:
    """One operation of the spec, compiled for serving."""

    operation: Operation
    """What the server does for it: handler, kind, throttling, body names (``dispatch``)."""
    validator: OperationValidator
    requirement: Requirement
    """Who may call it: the scopes of its ``security`` in the spec (``access``)."""
    stats: OperationStats
    """Its request counters, which know its path template (``accounting``)."""


@dataclass
class _Node:
    literal: dict[str, _Node] = field(default_factory=dict)
    param: tuple[str, _Node] | None = None
    methods: dict[str, Route] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Match:
    route: Route
    path_params: dict[str, str]
    """Raw (percent-decoded, not yet validated) path parameters; shared: never mutated."""


class RouteTable(AbstractRoutingAPI[Route]):
    """Every operation of the spec, matched by method and path; each ``operationId`` must have
    an entry in ``operations`` (start-up fails otherwise)."""

    def __init__(
        self,
        specification: Specification,
        *,
        operations: Mapping[str, Operation],
        max_body_bytes: int,
        requests: RequestStats,
    ) -> None:
        self._requests = requests
        self._root = _Node()
        self._cache: dict[tuple[str, str], Match] = {}
        self._operations = operations
        self.routes: dict[str, Route] = {}
        """Each compiled route by ``operationId``."""
        self._compiler = BodyCompiler(specification.raw)
        self._max_body_bytes = max_body_bytes
        resolver = Resolver(function_resolver=lambda op_id: operations[op_id].handler)
        super().__init__(specification, resolver=resolver)

    def make_operation(self, operation: AbstractOperation) -> Route:
        return Route(
            self._operations[operation.operation_id],
            OperationValidator(operation, self._compiler, self._max_body_bytes),
            Requirement.from_security(operation.operation_id, operation.security),
            self._requests.operation(operation.operation_id, operation.path),
        )

    @staticmethod
    def _framework_path_and_name(operation: AbstractOperation, path: str) -> tuple[str, str]:
        return path, operation.operation_id

    def _add_operation_internal(
        self, method: str, path: str, operation: Route, name: str | None = None
    ) -> None:
        node = self._root
        for segment in path.strip("/").split("/"):
            if segment.startswith("{") and segment.endswith("}"):
                if node.param is None:
                    node.param = (segment[1:-1], _Node())
                node = node.param[1]
            else:
                node = node.literal.setdefault(segment, _Node())
        node.methods[method.upper()] = operation
        self.routes[operation.operation.operation_id] = operation

    def match(self, method: str, path: str) -> Match:
        """The route for ``method path``: 404 ``not_found`` for an unknown path, 405
        ``method_not_allowed`` (with ``detail.allowed``) for a known path and another method.
        Recent matches are remembered (clients hit the same few topics over and over)."""
        key = (method, path)
        match = self._cache.get(key)
        if match is None:
            match = self._match(method, path)
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = match
        return match

    def _match(self, method: str, path: str) -> Match:
        node = self._root
        params: dict[str, str] = {}
        for raw in path.strip("/").split("/"):
            child = node.literal.get(raw)
            if child is None and node.param is not None and raw:
                name, child = node.param
                params[name] = unquote(raw)
            if child is None:
                raise NotFound(
                    f"no route for {method} {path}; see the /v0 API reference",
                    {"method": method, "path": path},
                )
            node = child
        route = node.methods.get(method)
        if route is None:
            if not node.methods:
                raise NotFound(f"no route for {method} {path}", {"method": method, "path": path})
            allowed = sorted(node.methods)
            raise MethodNotAllowed(
                f"{method} is not allowed on {path}; use {', '.join(allowed)}",
                {"method": method, "allowed": allowed},
            )
        return Match(route, params)
