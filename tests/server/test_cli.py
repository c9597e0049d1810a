"""``topics serve`` as a user runs it: a real subprocess, real socket, clean signal shutdown."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from .processes import NO_THROTTLE, TOPICS, free_port, wait_ready


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_answers_and_stops_cleanly_on_signal(tmp_path: Path, sig: signal.Signals) -> None:
    port = free_port()
    env = {**os.environ, "TOPICS_PORT": str(port), "TOPICS_DATA_DIR": str(tmp_path / "data"), **NO_THROTTLE}
    proc = subprocess.Popen([str(TOPICS), "serve"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, proc)
        r = httpx.post(f"{base}/v0/topics/cli", json={"records": [{"data": 1}]})
        assert r.status_code == 201
        proc.send_signal(sig)
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_refuses_bad_configuration() -> None:
    env = {**os.environ, "TOPICS_PORT": "not-a-port"}
    done = subprocess.run([str(TOPICS), "serve"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "TOPICS_PORT" in done.stderr and "Traceback" not in done.stderr


def test_serve_refuses_a_data_directory_of_a_newer_format_and_leaves_it_untouched(tmp_path: Path) -> None:
    """A WAL file a newer server wrote (format version 9): the server says which file, which
    version and to upgrade, exits 1 and changes nothing."""
    data = tmp_path / "data"
    wal = data / "wal" / f"{1:020d}.wal"
    wal.parent.mkdir(parents=True)
    written = b"TWAL" + bytes((9,)) + b"frames a newer server understands"
    wal.write_bytes(written)
    env = {**os.environ, "TOPICS_PORT": str(free_port()), "TOPICS_DATA_DIR": str(data), **NO_THROTTLE}
    done = subprocess.run([str(TOPICS), "serve"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert str(wal) in done.stderr and "version 9" in done.stderr and "upgrade topics" in done.stderr
    assert "Traceback" not in done.stderr
    assert wal.read_bytes() == written
    assert sorted(p.name for p in (data / "wal").iterdir()) == [wal.name]
