"""Structural rules: one-way imports in layers with no cycles, and the spec / error classes /
statuses agreeing."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from topics_engine.errors import TopicsError, error_classes
from topics_engine.graphs import strongly_connected
from topics_server import errors as server_errors  # noqa: F401 — registers the HTTP-layer errors
from topics_server.spec import load_document, routing_document
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
                "coldreads",
                "config",
                "consumerset",
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
            "topics_engine.consumers",
            "topics_engine.routers",
            "topics_engine.schedules",
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
        "schedule_not_found": 404,  # an extension (issue 24)
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
    extensions = {  # codes of extensions (ruling 22; docs/DECISIONS.md)
        "no_dead_letter": 409,
        "consumer_not_found": 404,
        "no_such_consumer": 409,
        "cursor_behind": 409,
        "cursor_beyond_head": 409,
    }
    assert {**expected, **extensions} == STATUS_BY_CODE
    assert {cls.code for cls in error_classes()} == set(STATUS_BY_CODE)


def _spec_operations() -> dict[str, tuple[str, dict[str, Any]]]:
    """Each ``operationId`` of the spec -> its path and operation object (asserting none is
    used twice)."""
    found = [
        (op["operationId"], (path, op))
        for path, item in routing_document()["paths"].items()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    ]
    ids = [op_id for op_id, _ in found]
    assert len(ids) == len(set(ids)), "an operationId used twice in the spec"
    return dict(found)


def test_every_spec_operation_has_exactly_one_operation() -> None:
    """``dispatch.OPERATIONS`` lists every operation of the spec once and nothing else, and its
    traits agree with what the spec says of the operation."""
    from topics_server.dispatch import OPERATIONS, Kind

    spec = _spec_operations()
    assert set(OPERATIONS) == set(spec)
    for op_id, operation in OPERATIONS.items():
        path, op = spec[op_id]
        assert operation.operation_id == op_id
        responses = op["responses"]
        streams = "101" in responses or "text/event-stream" in responses["200"].get("content", {})
        assert (operation.kind is Kind.STREAM) == streams, f"{op_id}: a stream iff it answers one"
        if op.get("security") == []:
            assert operation.kind is Kind.PROBE, f"{op_id}: only a probe is public"
        if operation.throttled:  # ranked by the priority of the topic it names
            assert "{topic}" in path, f"{op_id}: a throttled operation names its topic"
        if operation.body_names is not None:
            assert "requestBody" in op, f"{op_id}: body names without a body"


ENGINE_API = {
    "topics_engine",  # Engine, Queues, Limits, SystemClock, the config enums
    "topics_engine.batch",  # a write's checks (check_batch_node), before the engine call
    "topics_engine.clock",
    "topics_engine.coldreads",  # reads that never block the event loop on a disk
    "topics_engine.config",
    "topics_engine.consumers",
    "topics_engine.errors",
    "topics_engine.jsonvalues",
    "topics_engine.limits",
    "topics_engine.queues",
    "topics_engine.records",
    "topics_engine.results",
    "topics_engine.routers",
    "topics_engine.schedules",
    "topics_engine.topic",
    "topics_engine.watch",
    "topics_engine.datadir",  # DataDirectory, DataDirLocked, SegmentPolicy, WalView
}
"""The engine modules ``topics_server`` may import: the public ones. Not ``storage`` (bytes on
disk) nor ``datadir``'s submodules: what the server needs of them the engine exposes here."""


def _private_names(path: Path) -> list[str]:
    """The ``_private`` names ``path`` imports from other modules (``from m import _x``, or a
    ``_private`` module)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            module = "." * node.level + (node.module or "")
            found += [f"{module}:{a.name}" for a in node.names if a.name.startswith("_")]
            found += [module] if any(p.startswith("_") for p in module.split(".") if p) else []
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if any(p.startswith("_") for p in a.name.split("."))]
    return found


def test_the_server_imports_only_the_engines_public_modules() -> None:
    graph = _import_graph()
    reached = {
        (module, target)
        for module, targets in graph.items()
        if module.startswith("topics_server")
        for target in targets
        if target.startswith("topics_engine")
    }
    outside = reached - {(m, t) for m, t in reached if t in ENGINE_API}
    assert sorted(outside) == [], "use the engine's public modules (ENGINE_API)"
    private = {
        str(path.relative_to(SOURCE)): names
        for path in (SOURCE / "topics_server").rglob("*.py")
        if (names := _private_names(path))
    }
    assert private == {}


PROTOCOL_LIBRARIES = {
    "httptools": {"topics_server.http", "topics_server.transport"},
    "h2": {"topics_server.http2"},
    "hpack": set(),
    "hyperframe": set(),
}
"""Each wire-protocol library -> the only server modules that may import it: HTTP/1.1 parsing in
the HTTP/1.1 server (and the request target's parser, shared), HTTP/2 in its own module."""


def test_each_protocol_stays_in_its_transport_module() -> None:
    """The protocol libraries stay in their modules; the transports import one way: ``http``
    (HTTP/1.1, the listener) hands connections to ``http2``, both share ``transport``, and
    neither ``http2`` nor ``transport`` knows ``http``; ``transport`` knows neither."""
    for path in (SOURCE / "topics_server").rglob("*.py"):
        module = _module_name(path)
        for library in _absolute_imports(path) & set(PROTOCOL_LIBRARIES):
            assert module in PROTOCOL_LIBRARIES[library], f"{module} imports {library}"
    graph = _import_graph()
    assert "topics_server.http2" in graph["topics_server.http"]
    assert "topics_server.transport" in graph["topics_server.http"] & graph["topics_server.http2"]
    assert "topics_server.http" not in graph["topics_server.http2"]
    assert not graph["topics_server.transport"] & {"topics_server.http", "topics_server.http2"}


def test_only_the_pump_batch_sends_to_sockets_directly() -> None:
    """``broadcast`` (C: ``send`` on raw descriptors) is used by ``streams`` alone, whose pump
    batch sends only to sockets whose transport holds no unsent bytes (``streams``,
    "Broadcast"); anywhere else a direct send could overtake bytes a transport still holds."""
    graph = _import_graph()
    assert "topics_server.broadcast" in graph
    users = {module for module, targets in graph.items() if "topics_server.broadcast" in targets}
    assert users == {"topics_server.streams"}


def test_the_console_module_serves_files_and_knows_nothing_else() -> None:
    """``topics_server.console`` serves static files only: it imports the served-file resource
    of ``apidocs`` and no engine, handler or transport (the page's data comes from ``/v0``
    like any client's), and its allowlist is exactly the files of its directory (nothing
    there is unserved by accident, nothing served is missing)."""
    from topics_server import console

    graph = _import_graph()
    assert graph["topics_server.console"] <= {"topics_server.apidocs"}
    stdlib_only = {"__future__", "hashlib", "functools", "pathlib"}
    assert _absolute_imports(SOURCE / "topics_server" / "console.py") <= stdlib_only
    on_disk = {p.name for p in console.DIRECTORY.iterdir() if p.is_file()}
    assert on_disk - {"package.json"} == {*console.FILES, console.INDEX}


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


# == The clients: the SDK (sdk/python/topics) and the Spark connector (sdk/spark/topics_spark) ==
#
# Two rules over their modules: no import cycle, and no module using another module's
# ``_private`` names. The generated client (``topics_client``) is neither checked nor protected:
# ``topics/_generated.py`` is its one adapter and calls its ``_get_kwargs`` by design.

CLIENT_PACKAGES = {"topics": ROOT / "sdk" / "python", "topics_spark": ROOT / "sdk" / "spark"}
"""Each checked package -> the directory it sits in."""


def _client_modules(packages: dict[str, Path]) -> dict[str, Path]:
    """Module name (``topics.cli.parser``; a package by its own name) -> its file."""
    modules: dict[str, Path] = {}
    for package, base in packages.items():
        for path in (base / package).rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _client_from_module(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` in module ``name`` (file ``path``) reads."""
    if not node.level:
        return node.module or ""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    parts = package.split(".")
    prefix = ".".join(parts[: len(parts) - node.level + 1])
    return f"{prefix}.{node.module}" if node.module else prefix


def _client_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The checked modules module ``name`` imports, type-checking-only imports included (a cycle
    through type imports is still a cycle in the design). ``from pkg import sub`` imports the
    submodule ``pkg.sub`` when there is one, else ``pkg`` itself."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = _client_from_module(name, path, node)
            submodules = [f"{mod}.{alias.name}" for alias in node.names]
            found.update([t for t in submodules if t in modules] or [mod])
    return {t for t in found if t in modules and t != name}


def _client_import_graph(packages: dict[str, Path]) -> dict[str, set[str]]:
    modules = _client_modules(packages)
    return {name: _client_imports(name, path, modules) for name, path in modules.items()}


def _is_private(name: str) -> bool:
    """``_name`` but not ``__dunder__``."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _exports(path: Path) -> set[str]:
    """The names a module lists in ``__all__`` (a private name listed there is exported for the
    package on purpose)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    return set()


def _defined_names(tree: ast.AST) -> set[str]:
    """Every name a module defines or binds: functions, classes, assigned names and attributes
    (``self._x = ...``), annotated fields, parameters and import aliases."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
    return names


def _module_bindings(name: str, path: Path, tree: ast.AST, modules: dict[str, Path]) -> dict[str, str]:
    """Local name -> what an import binds it to: a module (``import a.b`` binds ``a``; ``from pkg
    import sub`` binds ``sub`` when ``pkg.sub`` is a module), or anything imported from outside
    the checked packages (their attributes are not ours to police)."""
    checked = {module.split(".")[0] for module in modules}
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                bound[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom):
            mod = _client_from_module(name, path, node)
            for alias in node.names:
                target = f"{mod}.{alias.name}"
                if target in modules or mod.split(".")[0] not in checked:
                    bound[alias.asname or alias.name] = target
    return bound


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` -> ``["a", "b", "c"]``; ``None`` for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def _private_uses(packages: dict[str, Path]) -> list[str]:
    """Every use, in a checked module, of a ``_private`` name of another checked module:

    - ``from .x import _name`` (or ``from topics.x import _name``), unless ``x._name`` is a
      module or ``x`` lists ``_name`` in ``__all__``;
    - ``x._name`` where ``x`` is an imported checked module (same exceptions);
    - ``obj._name`` on anything else (an object another module made, e.g. ``client._call``)
      when ``_name`` is defined in another checked module and nowhere in this one.

    A private module (``_transport``) is fine to import from: its names without ``_`` are meant
    for the package."""
    modules = _client_modules(packages)
    trees = {name: ast.parse(path.read_text()) for name, path in modules.items()}
    defined = {name: _defined_names(tree) for name, tree in trees.items()}

    def allowed(module: str, attr: str) -> bool:
        return f"{module}.{attr}" in modules or attr in _exports(modules[module])

    found: list[tuple[str, int, str]] = []
    for name, tree in trees.items():
        bound = _module_bindings(name, modules[name], tree, modules)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mod = _client_from_module(name, modules[name], node)
                for alias in node.names:
                    if _is_private(alias.name) and mod in modules and not allowed(mod, alias.name):
                        found.append((name, node.lineno, f"imports {mod}.{alias.name}"))
            if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
                continue
            parts = _dotted(node.value)
            if parts is not None and parts[0] in bound:
                owner = ".".join([bound[parts[0]], *parts[1:]])
                if owner in modules and not allowed(owner, node.attr):
                    found.append((name, node.lineno, f"uses {owner}.{node.attr}"))
                continue  # a module's attribute: checked above, or not one of ours
            owners = sorted(m for m, names in defined.items() if m != name and node.attr in names)
            if owners and node.attr not in defined[name]:
                found.append((name, node.lineno, f"uses {ast.unparse(node)} ({node.attr} of {owners})"))
    return [f"{name}:{line} {what}" for name, line, what in sorted(found)]


def test_the_client_packages_have_no_import_cycle() -> None:
    graph = _client_import_graph(CLIENT_PACKAGES)
    assert {"topics.client", "topics.watch", "topics_spark.reader"} <= set(graph)
    cycles = [c for c in strongly_connected(graph) if len(c) > 1]
    assert cycles == []


def test_no_client_module_uses_another_modules_private_names() -> None:
    assert _private_uses(CLIENT_PACKAGES) == []


RELAY_MODULES = {"topics.relay", "topics._delivery", "topics._signing"}
"""The webhook relay: ``topics.relay`` (``Relay``) over ``_delivery`` (one POST and what its
answer means) over ``_signing`` (Standard Webhooks signatures)."""


def test_the_relay_sits_on_the_public_worker_and_nothing_below_imports_it() -> None:
    """The relay is a layer above the Worker: it uses ``topics.worker`` (never the engine,
    ``_session``, nor the ``/work`` stream), its delivery and signing modules know no queue, and
    only the package (re-exports) and the CLI import it."""
    graph = _client_import_graph(CLIENT_PACKAGES)
    assert set(graph) >= RELAY_MODULES
    assert "topics.worker" in graph["topics.relay"]
    assert not graph["topics.relay"] & {"topics._session", "topics._work_stream"}
    assert graph["topics._signing"] == set()
    assert graph["topics._delivery"] == {"topics._signing"}
    importers = {
        module for module, targets in graph.items() if targets & RELAY_MODULES and module not in RELAY_MODULES
    }
    assert importers <= {"topics", "topics.cli.relay"}, importers


def _module_level_imports(tree: ast.Module) -> set[str]:
    """The top-level packages a module imports when it is loaded: imports at module level,
    ``if TYPE_CHECKING:`` blocks and function bodies left out."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_typed_payloads_are_an_edge_that_loads_pydantic_only_when_used() -> None:
    """``topics.typed`` is the SDK's pydantic edge: the one module that imports pydantic, and
    only inside its functions or for type checking — the untyped paths (and the CLI) never load
    it. It sits on the result types (``models``, ``_worker_types``), below the clients and the
    Worker, which use it; nothing of the transport or the engine is under it."""
    modules = _client_modules(CLIENT_PACKAGES)
    graph = _client_import_graph(CLIENT_PACKAGES)
    assert graph["topics.typed"] <= {"topics.models", "topics._worker_types"}
    assert "topics.typed" in graph["topics.client"] and "topics.typed" in graph["topics.worker"]
    for name, path in modules.items():
        text = path.read_text()
        assert "pydantic" not in _module_level_imports(ast.parse(text)), name
        if name != "topics.typed":
            assert "import pydantic" not in text and "from pydantic" not in text, name


def test_tracing_is_an_opt_in_edge_and_the_only_user_of_opentelemetry() -> None:
    """``topics.tracing`` is the one module that imports OpenTelemetry (the ``otel`` extra),
    guarded so the SDK works without it; it sits on the result types, below the clients and the
    Worker, which use it."""
    modules = _client_modules(CLIENT_PACKAGES)
    graph = _client_import_graph(CLIENT_PACKAGES)
    assert graph["topics.tracing"] <= {"topics.models", "topics._worker_types"}
    assert "topics.tracing" in graph["topics.client"] and "topics.tracing" in graph["topics.worker"]
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        if name == "topics.tracing":
            guarded = [n for n in tree.body if isinstance(n, ast.Try)]
            assert any("opentelemetry" in ast.unparse(n) and "ImportError" in ast.unparse(n) for n in guarded)
            assert "opentelemetry" not in _module_level_imports(tree)
        else:
            assert "opentelemetry" not in ast.unparse(tree), name


def _write_package(base: Path, files: dict[str, str]) -> dict[str, Path]:
    for relative, text in files.items():
        (base / relative).parent.mkdir(parents=True, exist_ok=True)
        (base / relative).write_text(text)
    return {"topics": base}


def test_the_client_rules_find_a_type_import_cycle_and_each_kind_of_private_use(tmp_path: Path) -> None:
    packages = _write_package(
        tmp_path,
        {
            "topics/__init__.py": "",
            "topics/_gen.py": "def _route(): ...\n",
            "topics/a.py": (
                "__all__ = ['_shared']\n_shared = 1\n_hidden = 2\n"
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n"
            ),
            "topics/b.py": (
                "import topics.a\nfrom . import _gen, a\nfrom .a import _hidden, _shared\n"
                "class B:\n    def __init__(self, client):\n        self._own = client._call()\n"
                "        self._own = a._hidden, topics.a._hidden, a._shared, _gen._route\n"
            ),
            "topics/c.py": "class Client:\n    def _call(self): ...\n",
        },
    )
    assert [c for c in strongly_connected(_client_import_graph(packages)) if len(c) > 1] == [
        ["topics.a", "topics.b"]
    ]
    assert _private_uses(packages) == [
        "topics.b:3 imports topics.a._hidden",
        "topics.b:6 uses client._call (_call of ['topics.c'])",
        "topics.b:7 uses topics._gen._route",
        "topics.b:7 uses topics.a._hidden",
        "topics.b:7 uses topics.a._hidden",
    ]


def _calls_or_assignments(path: Path) -> set[str]:
    """The attribute names ``path`` calls or assigns (``logging.basicConfig(...)`` →
    ``basicConfig``; ``sys.excepthook = f`` → ``excepthook``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            found.add(node.func.attr)
        elif isinstance(node, ast.Assign):
            found.update(t.attr for t in node.targets if isinstance(t, ast.Attribute))
    return found


def test_logging_is_set_up_and_metrics_rendered_in_one_module_each() -> None:
    """Every line the server writes goes through the one handler ``topics_server/logs.py``
    installs (so ``TOPICS_LOG_FORMAT=json`` covers them all): no other module adds a handler,
    sets a formatter or replaces an exception hook or a standard stream. prometheus_client is
    ``topics_server/metrics.py``'s alone."""
    set_up = {"basicConfig", "addHandler", "setFormatter", "excepthook", "unraisablehook", "stdout", "stderr"}
    offenders = {
        str(path.relative_to(SOURCE)): sorted(names)
        for path in SOURCE.rglob("*.py")
        if path != SOURCE / "topics_server" / "logs.py" and (names := _calls_or_assignments(path) & set_up)
    }
    assert offenders == {}
    metrics = {
        str(path.relative_to(SOURCE))
        for path in SOURCE.rglob("*.py")
        if "prometheus_client" in _absolute_imports(path)
    }
    assert metrics == {"topics_server/metrics.py"}
