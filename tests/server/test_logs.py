"""Logs (docs/DECISIONS.md, "Logs"): the access log (``TOPICS_ACCESS_LOG``: one line per
request, never a key or a payload), ``TOPICS_LOG_FORMAT=json`` (every line the process writes is
one JSON object: start-up, our lines, a library's warning, uncaught exceptions, stray prints),
and ``TOPICS_LOG_LEVEL`` (``debug`` without any library's chatter unless a logger is named) —
in process, and on a real ``topics serve`` run as a child process."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from topics_server.logs import JsonFormatter

from .processes import NO_THROTTLE, TOPICS, free_port, wait_ready

SECRET = "ops-Zr8q1secret"
READER = "dash-Kx72secret"
KEYS = f"{SECRET}::,{READER}:read"
PAYLOAD = "PAYLOAD-7f3a-never-logged"
ACCESS_FIELDS = {"method", "route", "status", "duration_ms", "bytes", "key_id", "operation"}


def access_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "topics.access"]


async def test_access_log_one_line_per_request(
    make_client: Callable[..., httpx.AsyncClient], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="topics.access")
    async with make_client({"TOPICS_API_KEYS": KEYS, "TOPICS_ACCESS_LOG": "true"}) as client:
        ops = {"Authorization": f"Bearer {SECRET}"}
        reader = {"Authorization": f"Bearer {READER}"}
        r1 = await client.post("/v0/topics/orders", json={"records": [{"data": PAYLOAD}]}, headers=ops)
        r2 = await client.post("/v0/topics/orders/diff", json={"from_seq": 0}, headers=reader)
        r3 = await client.post("/v0/topics/orders", json={"records": [{"data": PAYLOAD}]}, headers=reader)
        r4 = await client.get(f"/v0/topics?token={SECRET}")
        r5 = await client.head("/v0/openapi.json")
    assert [r.status_code for r in (r1, r2, r3, r4, r5)] == [201, 200, 403, 401, 200]
    records = access_records(caplog)
    assert len(records) == 5
    got = [{k: getattr(r, k) for k in ACCESS_FIELDS} for r in records]
    for line in got:
        assert line["duration_ms"] >= 0
        del line["duration_ms"]
    assert got == [
        {"method": "POST", "route": "/v0/topics/{topic}", "status": 201, "bytes": len(r1.content),
         "key_id": 1, "operation": "append_records"},
        {"method": "POST", "route": "/v0/topics/{topic}/diff", "status": 200, "bytes": len(r2.content),
         "key_id": 2, "operation": "diff_topic"},
        {"method": "POST", "route": "/v0/topics/{topic}", "status": 403, "bytes": len(r3.content),
         "key_id": 2, "operation": "append_records"},
        {"method": "GET", "route": "/v0/topics", "status": 401, "bytes": len(r4.content),
         "key_id": None, "operation": "list_topics"},
        {"method": "HEAD", "route": "/v0/openapi.json", "status": 200, "bytes": 0,
         "key_id": None, "operation": "api_docs"},
    ]  # fmt: skip
    first = records[0].getMessage()
    assert first.startswith("POST /v0/topics/{topic} 201 ") and first.endswith(" key=#1 op=append_records")
    assert records[3].getMessage().endswith(" key=- op=list_topics")
    for record in records:
        line = JsonFormatter().format(record) + logging.Formatter().format(record)
        assert SECRET not in line and READER not in line and PAYLOAD not in line and "orders" not in line


async def test_access_log_is_off_by_default(
    make_client: Callable[..., httpx.AsyncClient], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="topics.access")
    async with make_client() as client:
        assert (await client.get("/v0/health")).status_code == 200
    assert access_records(caplog) == []


def test_json_formatter_fields_and_exceptions() -> None:
    record = logging.LogRecord("topics.server", logging.WARNING, __file__, 1, "a %s\nb", ("x",), None)
    record.route = "/v0/topics/{topic}"
    line = JsonFormatter().format(record)
    assert "\n" not in line
    out = json.loads(line)
    assert out.pop("ts").endswith("Z")
    assert out == {
        "level": "warning",
        "logger": "topics.server",
        "msg": "a x\nb",
        "route": "/v0/topics/{topic}",
    }
    try:
        raise ValueError("boom")
    except ValueError:
        failed = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    out = json.loads(JsonFormatter().format(failed))
    assert out["level"] == "error" and "ValueError: boom" in out["exc"] and "Traceback" in out["exc"]


# -- a real server -----------------------------------------------------------------------------


def _serve(tmp_path: Path, env: dict[str, str], exercise: Callable[[str], None]) -> list[str]:
    """Run ``topics serve`` with ``env``, call ``exercise(base_url)``, stop it with SIGTERM;
    every line it wrote to stdout and stderr (checked to have exited 0)."""
    port = free_port()
    full = {k: v for k, v in os.environ.items() if not k.startswith("TOPICS_")}
    full.update(TOPICS_PORT=str(port), TOPICS_DATA_DIR=str(tmp_path / "data"), **NO_THROTTLE, **env)
    tmp_path.mkdir(parents=True, exist_ok=True)
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen([str(TOPICS), "serve"], env=full, stdout=o, stderr=e)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready(base, proc)
            exercise(base)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=15) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return [line for line in (out.read_text() + err.read_text()).splitlines() if line]


def _traffic(base: str) -> None:
    ops = {"Authorization": f"Bearer {SECRET}"}
    with httpx.Client(base_url=base, timeout=5) as c:
        assert c.post("/v0/topics/t", json={"records": [{"data": PAYLOAD}]}, headers=ops).status_code == 201
        assert c.get("/v0/topics", headers={"Authorization": f"Bearer {SECRET}x"}).status_code == 401
        wid = c.post("/v0/watch", json={"topics": {"t": {"from_seq": 0}}}, headers=ops).json()["wid"]
        with c.stream("GET", f"/v0/watch/{wid}?token={SECRET}", headers={"Accept": "text/event-stream"}) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if line.startswith("event: caught-up"):
                    break


def test_json_format_makes_every_line_one_object(tmp_path: Path) -> None:
    lines = _serve(
        tmp_path,
        {
            "TOPICS_LOG_FORMAT": "json",
            "TOPICS_ACCESS_LOG": "true",
            "TOPICS_LOG_LEVEL": "debug",
            "TOPICS_API_KEYS": KEYS,
            "PYTHONWARNINGS": "always",  # the libraries' import-time deprecation warnings show
        },
        _traffic,
    )
    parsed: list[dict[str, Any]] = []
    for line in lines:
        out = json.loads(line)  # every line, or this raises
        assert isinstance(out, dict) and {"ts", "level", "logger", "msg"} <= set(out), line
        parsed.append(out)
    loggers = {out["logger"] for out in parsed}
    assert "py.warnings" in loggers  # a library's warning
    messages = [out["msg"] for out in parsed]
    assert any(m.startswith("topics ") and " listening on http://127.0.0.1:" in m for m in messages)
    assert any(m.startswith("ready: recovery took") for m in messages) and messages[-1] == "stopped"
    access = [out for out in parsed if out["logger"] == "topics.access" and out["operation"] != "readyz"]
    assert [(a["operation"], a["status"], a["key_id"]) for a in access] == [
        ("append_records", 201, 1),
        ("list_topics", 401, None),
        ("create_watch", 200, 1),
        ("watch_stream", 200, 1),  # logged when it ended, with what it sent
    ]
    assert all(set(a) >= ACCESS_FIELDS for a in access)
    assert access[-1]["route"] == "/v0/watch/{wid}" and access[-1]["bytes"] > 0
    text = "\n".join(lines)
    assert SECRET not in text and READER not in text and PAYLOAD not in text


def test_debug_level_has_no_library_chatter_unless_asked(tmp_path: Path) -> None:
    def ping(base: str) -> None:
        assert httpx.get(f"{base}/v0/health").status_code == 200

    lines = _serve(tmp_path / "a", {"TOPICS_LOG_LEVEL": "debug"}, ping)
    loggers = {line.split()[3] for line in lines}
    assert {"topics.server", "topics.datadir"} <= loggers
    assert [line for line in lines if not line.split()[3].startswith("topics.")] == []
    named = _serve(tmp_path / "b", {"TOPICS_LOG_LEVEL": "debug,connexion=debug"}, ping)
    assert any(" DEBUG connexion." in line for line in named)


def test_a_configuration_error_in_json(tmp_path: Path) -> None:
    env = {**os.environ, "TOPICS_LOG_FORMAT": "json", "TOPICS_PORT": "http", "TOPICS_DATA_DIR": str(tmp_path)}
    done = subprocess.run([str(TOPICS), "serve"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    out = json.loads(line)
    assert out["level"] == "error" and "TOPICS_PORT" in out["msg"]
    env["TOPICS_LOG_FORMAT"] = "xml"
    done = subprocess.run([str(TOPICS), "serve"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "TOPICS_LOG_FORMAT" in done.stderr


HOOKS = textwrap.dedent(
    """
    import logging, sys, threading, types, warnings
    from topics_server import logs

    logs.install("json")
    library = types.ModuleType("somelib")
    source = "import warnings\\ndef old():\\n    warnings.warn('old() is deprecated', UserWarning)"
    exec(source, library.__dict__)
    library.old()
    logging.getLogger("somelib").warning("from a library")
    logging.getLogger("somelib").debug("not shown")
    print("a stray print")
    print("to stderr", file=sys.stderr)
    thread = threading.Thread(target=lambda: 1 / 0, name="worker")
    thread.start()
    thread.join()
    raise RuntimeError("uncaught at the top")
    """
)


def test_json_covers_warnings_prints_and_uncaught_exceptions() -> None:
    done = subprocess.run([sys.executable, "-c", HOOKS], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    lines = [json.loads(line) for line in (done.stdout + done.stderr).splitlines()]
    by_logger = {(out["logger"], out["level"]): out for out in lines}
    assert "old() is deprecated" in by_logger[("py.warnings", "warning")]["msg"]
    assert by_logger[("somelib", "warning")]["msg"] == "from a library"
    assert by_logger[("stdout", "info")]["msg"] == "a stray print"
    assert by_logger[("stderr", "warning")]["msg"] == "to stderr"
    thread = by_logger[("topics.server", "error")]
    assert "thread worker" in thread["msg"] and "ZeroDivisionError" in thread["exc"]
    top = by_logger[("topics.server", "critical")]
    assert "uncaught at the top" in top["msg"] and "RuntimeError" in top["exc"]
    assert len(lines) == 6  # the debug line stayed out
