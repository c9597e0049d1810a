"""Structural rules: one-way imports in layers with no cycles, and the spec / error classes /
statuses agreeing."""

from __future__ import annotations

import ast
from pathlib import Path

from topics_engine.errors import TopicsError, error_classes
from topics_engine.graphs import strongly_connected
from topics_server import errors as server_errors  # noqa: F401 — registers the HTTP-layer errors
from topics_server.spec import load_document
from topics_server.wire import STATUS_BY_CODE

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "server"
FRAMEWORKS = ("connexion", "starlette", "uvicorn", "topics_server", "httpx", "aiohttp")

# The layers of server/, lowest first. A module may import only from its own layer or below;
# every module must be placed (a new module has to be given its layer here).
LAYERS: list[tuple[str, set[str]]] = [
    ("storage", {"topics_engine.storage", "topics_engine._codec"}),
    (
        "model",
        {
            f"topics_engine.{m}"
            for m in [
                "batch",
                "clock",
                "config",
                "errors",
                "idempotency",
                "jsonvalues",
                "leases",
                "limits",
                "listing",
                "matching",
                "names",
                "fanout",
                "graphs",
                "persistence",
                "priority",
                "recordlog",
                "records",
                "results",
                "tags",
                "topic",
            ]
        },
    ),
    ("engine", {"topics_engine.engine"}),
    (
        "features",
        {
            "topics_engine.queues",
            "topics_engine.routers",
            "topics_engine.watch",
            "topics_engine.datadir",
            "topics_engine",
        },
    ),
    ("server", {"topics_server"}),
]


def _module_name(path: Path) -> str:
    """``server/a/b.py`` -> ``a.b`` (a ``.pyi`` stub names a C extension module)."""
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (type-checking-only imports included: a cycle
    through type imports is still a cycle in the design)."""
    modules = {_module_name(p): p for p in [*SOURCE.rglob("*.py"), *SOURCE.rglob("*.pyi")]}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    prefix = ".".join(base)
                    mod = f"{prefix}.{node.module}" if node.module else prefix
                else:
                    mod = node.module or ""
                submodules = [f"{mod}.{alias.name}" for alias in node.names]
                targets = [t for t in submodules if t in modules] or [mod]
            for target in targets:
                if target in modules and target != name:
                    graph[name].add(target)
    return graph


def _layer(module: str) -> int:
    best, depth = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > depth:
                best, depth = index, len(prefix)
    return best


def test_the_import_graph_has_no_cycle() -> None:
    cycles = [c for c in strongly_connected(_import_graph()) if len(c) > 1]
    assert cycles == []


def test_the_cycle_check_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert [c for c in strongly_connected(graph) if len(c) > 1] == [["a", "b", "c"]]


def test_every_module_has_a_layer_and_imports_only_downward() -> None:
    graph = _import_graph()
    unplaced = sorted(m for m in graph if _layer(m) < 0)
    assert unplaced == [], "give new modules their layer in LAYERS"
    upward = sorted(
        f"{m} ({LAYERS[_layer(m)][0]}) imports {t} ({LAYERS[_layer(t)][0]})"
        for m, targets in graph.items()
        for t in targets
        if _layer(t) > _layer(m)
    )
    assert upward == []


def test_engine_imports_no_web_framework_and_not_the_server() -> None:
    offenders: set[str] = set()
    for path in (SOURCE / "topics_engine").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            offenders.update(n for n in names if n.split(".")[0] in FRAMEWORKS)
    assert sorted(offenders) == []


def _spec_error_codes() -> set[str]:
    schemas = load_document()["components"]["schemas"]
    if "ErrorCode" in schemas:
        return set(schemas["ErrorCode"]["enum"])
    return set(schemas["Error"]["properties"]["error"]["properties"]["code"]["enum"])


def test_spec_error_codes_match_the_error_classes() -> None:
    classes = error_classes()
    codes = [cls.code for cls in classes]
    assert set(codes) == _spec_error_codes()
    assert len(set(codes)) == len(codes), "one class per code"
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
    assert expected == STATUS_BY_CODE
    assert {cls.code for cls in error_classes()} == set(STATUS_BY_CODE)


def test_every_spec_operation_has_a_handler() -> None:
    from topics_server.dispatch import HANDLERS

    ops = {
        op["operationId"]
        for item in load_document()["paths"].values()
        for method, op in item.items()
        if isinstance(op, dict) and "operationId" in op
    }
    assert ops == set(HANDLERS)


def _absolute_imports(path: Path) -> set[str]:
    """The top-level packages ``path`` imports absolutely (``from x.y import z`` → ``x``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_the_clients_import_no_server_code_and_the_generated_client_through_one_adapter() -> None:
    """The SDK and the Spark connector are HTTP clients: never the server or engine. The SDK
    reaches the generated client only in ``topics/_generated.py``; the connector goes through
    the SDK (``topics``), never a third HTTP layer. One exception: the ``topics`` console
    script's entry (``topics/cli/__init__.py``) hands ``serve``/``version`` to the server."""
    server_side = {"topics_server", "topics_engine"}
    cli_entry = ROOT / "sdk" / "python" / "topics" / "cli" / "__init__.py"
    for path in (ROOT / "sdk" / "python" / "topics").rglob("*.py"):
        imported = _absolute_imports(path) - ({"topics_server"} if path == cli_entry else set())
        assert not imported & server_side, f"{path} imports {imported & server_side}"
        if path.name != "_generated.py":
            assert "topics_client" not in imported, f"{path} imports the generated client"
    spark = list((ROOT / "sdk" / "spark" / "topics_spark").rglob("*.py"))
    assert spark
    for path in spark:
        imported = _absolute_imports(path)
        assert not imported & (server_side | {"topics_client", "httpx", "requests", "aiohttp"}), path
