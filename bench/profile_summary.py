"""Summarize py-spy collapsed stacks (``py-spy record --format raw``) into top-cost tables.

Each input line is ``frame;frame;...;leaf count``, root first, frames like
``func (path/to/file.py:123)`` (Python) or ``func (libfoo.so)`` / ``0x7f.. (orjson....so)``
(native, with ``py-spy --native``).

Every sample is given one *layer* from its leaf: a native leaf that is a known cost of its own
(the cyclic GC, socket syscalls, orjson, httptools, uvloop, jsonschema-rs) gets that layer; any
other native leaf (refcounting, malloc, ...) is charged to the nearest Python frame above it.
Samples parked in ``epoll_wait`` are *idle* (py-spy cannot tell a C-level wait from work) and
are left out of the shares, which are therefore of busy server time.

* ``layers``             — busy time by layer; sums to 100 %.
* ``top_self``           — hottest leaves; a native leaf is shown with the Python line that called
  it (``gc_collect_main <- Topic.append.<locals>.<listcomp> (topics_engine/topic.py:139)``).
* ``top_self_functions`` — the same by function, Python line numbers dropped.
* ``top_inclusive``      — share of busy samples whose stack contains the (Python) function.

Run on files: ``python bench/profile_summary.py /tmp/prof/diff_256.collapsed.txt``.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from typing import Any

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")

IDLE = "idle (epoll_wait)"
_IDLE_FUNCS = {"epoll_wait", "epoll_pwait", "epoll_pwait2"}
_SYSCALLS = {
    "write",
    "read",
    "writev",
    "readv",
    "send",
    "recv",
    "sendmsg",
    "recvmsg",
    "sendto",
    "recvfrom",
    "__libc_write",
    "__libc_read",
    "__write",
    "__read",
}
_GC_FUNCS = {
    "gc_collect_main",
    "collect",
    "gc_collect_with_callback",
    "gc_collect_generations",
    "_PyObject_GC_Link",
    "visit_reachable",
    "subtract_refs",
    "update_refs",
    "move_unreachable",
    "visit_decref",
    "deduce_unreachable",
}

# Python frames: (layer, substring of the file) — first match wins.
PY_LAYERS: list[tuple[str, str]] = [
    ("uvicorn httptools protocol (Python side)", "uvicorn/protocols/http/httptools_impl"),
    ("uvicorn other", "uvicorn/"),
    ("connexion routing / middleware", "connexion/"),
    ("starlette router (used by connexion routing)", "starlette/"),
    ("topics: spec validation (body read, parse, validate)", "topics_server/validation"),
    ("topics: error-envelope middleware", "topics_server/app"),
    ("topics: dispatch / handlers / responses", "topics_server/"),
    ("topics engine: batch prep (validate + orjson.dumps per record)", "topics_engine/batch"),
    ("topics engine: Record (build / encode)", "topics_engine/records"),
    ("topics engine: Topic.append / Topic.read", "topics_engine/topic"),
    ("topics engine: other", "topics_engine/"),
    ("event loop (uvloop in C: epoll, socket I/O, callbacks)", "asyncio/runners"),
    ("asyncio", "asyncio/"),
]


def _parse(frame: str) -> tuple[str, str, str]:
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip(), "", ""
    return m["func"], _short(m["file"]), m["line"] or ""


def _short(path: str) -> str:
    for marker in ("site-packages/", "/server/", "/bench/"):
        if marker in path:
            return path.split(marker, 1)[1]
    if "/lib/python3" in path:
        tail = path.split("/lib/python3", 1)[1]
        return tail.split("/", 1)[1] if "/" in tail else tail
    return path


def _is_python(file: str) -> bool:
    return file.endswith(".py") or file in ("topics",)


def _native_layer(func: str, file: str) -> str | None:
    if func in _IDLE_FUNCS:
        return IDLE
    if func in _GC_FUNCS or func.startswith("gc_"):
        return "CPython cyclic GC"
    if "libc.so" in file and func in _SYSCALLS:
        return "socket syscalls (read/write)"
    if "orjson" in file:
        return "orjson (C)"
    if "jsonschema_rs" in file:
        return "jsonschema-rs (C)"
    if "httptools" in file:
        return "httptools parser (C)"
    if "uvloop" in file:
        return "uvloop (C)"
    return None


def _py_layer(file: str) -> str:
    for layer, needle in PY_LAYERS:
        if needle in file:
            return layer
    return "other Python"


def _label(func: str, file: str, line: str) -> str:
    return f"{func} ({file}:{line})" if line else f"{func} ({file})"


def summarize(text: str, top: int = 15) -> dict[str, Any]:
    self_attr: Counter[str] = Counter()
    self_funcs: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    layers: Counter[str] = Counter()
    total = idle = 0
    for raw in text.splitlines():
        stack, _, count_s = raw.strip().rpartition(" ")
        try:
            count = int(count_s)
        except ValueError:
            continue
        frames = [_parse(f) for f in stack.split(";") if f]
        if not frames:
            continue
        total += count
        func, file, line = frames[-1]
        layer = _native_layer(func, file) if not _is_python(file) else None
        if layer == IDLE:
            idle += count
            continue
        caller = next((f for f in reversed(frames) if _is_python(f[1])), None)
        if layer is None:
            layer = _py_layer(caller[1]) if caller else "other native"
        layers[layer] += count
        if _is_python(file) or caller is None:
            self_attr[_label(func, file, line)] += count
        else:
            native = "0x… " + file if func.startswith("0x") else _label(func, file, "")
            self_attr[f"{native} <- {_label(*caller)}"] += count
        self_funcs[_label(func if not func.startswith("0x") else "0x…", file, "")] += count
        for name in {_label(fn, fl, "") for fn, fl, _ in frames if _is_python(fl)}:
            inclusive[name] += count
    busy = total - idle

    def table(counter: Counter[str], n: int = top) -> list[dict[str, Any]]:
        return [
            {"frame": k, "samples": v, "share": round(v / busy, 4) if busy else 0.0}
            for k, v in counter.most_common(n)
        ]

    return {
        "samples": total,
        "idle_samples": idle,
        "busy_samples": busy,
        "layers": table(layers, len(layers)),
        "top_self": table(self_attr),
        "top_self_functions": table(self_funcs),
        "top_inclusive": table(inclusive, top * 2),
    }


def render(summary: dict[str, Any], n: int = 12) -> str:
    """A plain-text view of one summary (for terminals and the report)."""
    lines = [f"busy samples {summary['busy_samples']} (idle {summary['idle_samples']})", "layers:"]
    lines += [f"  {r['share'] * 100:5.1f}%  {r['frame']}" for r in summary["layers"]]
    lines.append("top self:")
    lines += [f"  {r['share'] * 100:5.1f}%  {r['frame']}" for r in summary["top_self"][:n]]
    return "\n".join(lines)


def main() -> int:
    as_json = "--json" in sys.argv
    for path in (a for a in sys.argv[1:] if a != "--json"):
        with open(path) as fh:
            summary = summarize(fh.read())
        print(json.dumps({path: summary}, indent=2) if as_json else f"== {path}\n{render(summary)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
