"""Generate the typed client ``sdk/python/topics_client`` from ``openapi/v0.yaml``.

    .venv/bin/python scripts/gen_client.py            # (re)write sdk/python/topics_client
    .venv/bin/python scripts/gen_client.py OUT_DIR    # write OUT_DIR/topics_client instead

openapi-python-client (pinned: :data:`GENERATOR_VERSION`, the ``dev`` extra) generates from the
document minus its streaming operations — the SSE GETs and the WebSocket upgrade, which a
request/response client cannot stream (the high-level SDK implements them) — and the result is
formatted with the project's pinned ruff. The output is a pure function of the document and the
two pinned tools: ``tests/openapi/test_client_generation.py`` regenerates it into a temporary
directory and fails on any difference from the committed copy. Never edit the generated files.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SPEC_PATH = ROOT / "openapi" / "v0.yaml"
SDK_DIR = ROOT / "sdk" / "python"
PACKAGE = "topics_client"
GENERATOR_VERSION = "0.29.1"
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}


def is_streaming(op: dict[str, Any]) -> bool:
    """An SSE operation (its 200 is ``text/event-stream``) or a WebSocket upgrade (a ``101``)."""
    responses = op.get("responses", {})
    return "text/event-stream" in responses.get("200", {}).get("content", {}) or "101" in responses


def without_streaming(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str], set[str]]:
    """A copy of the document without its streaming operations (and without emptied path
    items); also the kept operationIds (-> their first tag) and the removed ones."""
    doc = copy.deepcopy(doc)
    kept: dict[str, str] = {}
    removed: set[str] = set()
    for path in list(doc["paths"]):
        item = doc["paths"][path]
        for method in [m for m in item if m in HTTP_METHODS]:
            op = item[method]
            if is_streaming(op):
                removed.add(op["operationId"])
                del item[method]
            else:
                kept[op["operationId"]] = op["tags"][0]
        if not any(m in item for m in HTTP_METHODS):
            del doc["paths"][path]
    # the WebSocket upgrade's path item, and the schemas only streams use (their events)
    doc.get("components", {}).pop("pathItems", None)
    _prune_schemas(doc)
    return doc, kept, removed


def _refs(node: Any) -> set[str]:
    """The component schema names that ``node`` references."""
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def _prune_schemas(doc: dict[str, Any]) -> None:
    """Drop the component schemas nothing outside ``components.schemas`` reaches."""
    schemas = doc.get("components", {}).get("schemas", {})
    outside = {k: v for k, v in doc.items() if k != "components"}
    outside["components"] = {k: v for k, v in doc.get("components", {}).items() if k != "schemas"}
    reached, frontier = set(), _refs(outside)
    while frontier:
        name = frontier.pop()
        if name in reached or name not in schemas:
            continue
        reached.add(name)
        frontier |= _refs(schemas[name])
    for name in list(schemas):
        if name not in reached:
            del schemas[name]


def load_document() -> dict[str, Any]:
    with SPEC_PATH.open(encoding="utf-8") as fh:
        doc: dict[str, Any] = yaml.safe_load(fh)
    return doc


def generate(out_parent: Path) -> str:
    """Write ``out_parent/topics_client`` (replacing it); return the generator's output, which
    must hold nothing but its progress lines (a test reads it for warnings)."""
    installed = metadata.version("openapi-python-client")
    if installed != GENERATOR_VERSION:
        raise SystemExit(
            f"openapi-python-client {installed} is installed; the client is generated with "
            f"{GENERATOR_VERSION}: pip install -e '.[dev]'"
        )
    filtered, _, _ = without_streaming(load_document())
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        spec = work / "v0.json"
        spec.write_text(json.dumps(filtered), encoding="utf-8")
        config = work / "config.yaml"
        # No generator post hooks: the project's own ruff formats the result below.
        config.write_text(
            f"project_name_override: {PACKAGE}\npackage_name_override: {PACKAGE}\npost_hooks: []\n",
            encoding="utf-8",
        )
        proc = subprocess.run(
            [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(spec),
             "--meta", "none", "--config", str(config)],
            cwd=work, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        output = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise SystemExit(f"openapi-python-client exited {proc.returncode}:\n{output}")
        _format(work / PACKAGE)
        target = out_parent / PACKAGE
        if target.exists():
            shutil.rmtree(target)
        out_parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(work / PACKAGE, target)
    return output


def _format(package: Path) -> None:
    """Sort imports and format with the project's ruff (pyproject settings, fixed line length)."""
    ruff = Path(sys.executable).with_name("ruff")
    for args in (["check", "--fix", "--select", "I,F401", "--quiet"], ["format", "--quiet"]):
        subprocess.run(
            [str(ruff), *args, "--config", str(ROOT / "pyproject.toml"), str(package)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip


if __name__ == "__main__":
    dest = Path(sys.argv[1]) if len(sys.argv) > 1 else SDK_DIR
    print(generate(dest), end="")
    print(f"wrote {dest / PACKAGE}")
