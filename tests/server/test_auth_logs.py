"""No log line ever contains a configured secret (§0.2, §12): a real ``topics serve`` with API
keys, every kind of request — good keys, unknown keys, scope and prefix refusals, ``?token=``
on the SSE GET, a WebSocket upgrade, a configuration refusal — at debug level with the access log
on, then every line the process wrote is searched for each secret."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx

from .processes import NO_THROTTLE, TOPICS, free_port, wait_ready

SECRETS = ("ops-Zr8q1secret", "dash-Kx72secret", "prod-Wq55secret")
KEYS = f"{SECRETS[0]}::,{SECRETS[1]}:read:tenant42:,{SECRETS[2]}:write:tenant42:"


def _exercise(base: str) -> None:
    ops, dash, prod = ({"Authorization": f"Bearer {s}"} for s in SECRETS)
    with httpx.Client(base_url=base, timeout=5) as c:
        assert c.put("/v0/topics/tenant42:orders", json={}, headers=ops).status_code == 201
        assert (
            c.post("/v0/topics/tenant42:orders", json={"records": [{"data": 1}]}, headers=prod).status_code
            == 200
        )
        assert c.post("/v0/topics/tenant42:orders/diff", json={}, headers=dash).status_code == 200
        assert c.get("/v0/topics/other", headers=dash).status_code == 403
        assert (
            c.post("/v0/topics/tenant42:orders", json={"records": [{"data": 1}]}, headers=dash).status_code
            == 403
        )
        assert c.get("/v0/topics", headers={"Authorization": f"Bearer {SECRETS[0]}x"}).status_code == 401
        assert c.get(f"/v0/topics?token={SECRETS[0]}").status_code == 401
        assert c.get("/v0/metrics", headers=dash).status_code == 200
        wid = c.post("/v0/watch", json={"topics": {"tenant42:orders": {"from_seq": 0}}}, headers=dash).json()[
            "wid"
        ]
        stream = f"/v0/watch/{wid}?token={SECRETS[1]}"
        with c.stream("GET", stream, headers={"Accept": "text/event-stream"}) as r:
            assert r.status_code == 200
            next(r.iter_lines())
        assert (
            c.get(f"/v0/watch/{wid}?token={SECRETS[0]}", headers={"Accept": "text/event-stream"}).status_code
            == 401
        )
        upgrade = {
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Authorization": f"Bearer {SECRETS[1]}nope",
        }
        assert c.get("/v0/ws", headers=upgrade).status_code == 401


def test_no_log_line_contains_a_configured_secret(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ,
        "TOPICS_PORT": str(port),
        "TOPICS_DATA_DIR": str(tmp_path / "data"),
        "TOPICS_API_KEYS": KEYS,
        "TOPICS_LOG_LEVEL": "debug",
        "TOPICS_ACCESS_LOG": "true",
        **NO_THROTTLE,  # a loaded machine's throttle would refuse the writes _exercise expects
    }
    proc = subprocess.Popen([str(TOPICS), "serve"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, proc)
        _exercise(base)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stdout is not None
    log = proc.stdout.read().decode("utf-8", "replace")
    assert "authentication on: 3 API keys" in log  # the run did log, at debug level
    assert " topics.access GET /v0/watch/{wid} 401 " in log  # ... and a line per request
    for secret in SECRETS:
        leaked = [line for line in log.splitlines() if secret in line]
        assert not leaked, f"a log line contains a configured secret: {leaked[:3]}"
    # a configuration refusal names the entry, never its key
    refused = subprocess.run(
        [str(TOPICS), "serve"],
        env={**env, "TOPICS_API_KEYS": f"{SECRETS[0]}:bogus"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "entry #1" in refused.stderr
    assert SECRETS[0] not in refused.stderr + refused.stdout
