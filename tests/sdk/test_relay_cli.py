"""``topics relay`` as a user runs it (the installed command, a child process, ``TOPICS_URL``
set) against a real server and a local endpoint: its lines, its exit statuses, Ctrl-C."""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import pytest
import topics
from rich.console import Console
from topics.cli import main
from topics.cli.output import Output
from topics.cli.relay import Report, _stop_on_signals, delivery_text, duration
from topics.relay import Relay

from tests.sdk.webhook_endpoint import WebhookEndpoint
from tests.server.processes import TOPICS, ServerProcess

Name = Callable[[str], str]
SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef01234567").decode()


@pytest.fixture
def endpoint() -> Iterator[WebhookEndpoint]:
    ep = WebhookEndpoint().start()
    yield ep
    ep.stop()


def env_for(server: ServerProcess, **extra: str) -> dict[str, str]:
    env = {**os.environ, "TOPICS_URL": server.url, **extra}
    env.pop("TOPICS_API_KEY", None)
    env.pop("TOPICS_RELAY_SECRET", None)
    return env


def relay(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``topics relay ARGS…`` to its end (stdout/stderr are pipes: never a terminal)."""
    return subprocess.run([str(TOPICS), "relay", *args], capture_output=True, env=env_for(server), timeout=60)


def queue_of(client: topics.Client, name: Name, jobs: list[Any], base: str = "hooks") -> tuple[str, str]:
    q, dlq = name(base), name(base + "-dlq")
    client.create_topic(dlq)
    client.create_topic(q, type="queue", dead_letter=dlq)
    if jobs:
        client.append_many(q, [{"data": data} for data in jobs])
    return q, dlq


def lines(out: bytes) -> list[Any]:
    return [orjson.loads(line) for line in out.splitlines() if line.strip()]


def test_drain_prints_a_line_per_attempt_and_exits_0_when_all_is_delivered(
    server: ServerProcess, client: topics.Client, name: Name, endpoint: WebhookEndpoint
) -> None:
    q, _ = queue_of(client, name, [{"answers": ["200"]}, {"answers": ["500", "200"]}])
    done = relay(server, q, "--url", endpoint.url(), "--drain")
    assert done.returncode == 0, done.stderr
    events = lines(done.stdout)
    assert sorted((e["seq"], e["attempt"], e["outcome"], e["status"]) for e in events) == [
        (1, 1, "delivered", 200),
        (2, 1, "retry", 500),
        (2, 2, "delivered", 200),
    ]
    retry = next(e for e in events if e["outcome"] == "retry")
    assert retry["reason"] == "http 500" and 800 <= retry["delay_ms"] <= 1000  # the default backoff
    assert set(events[0]) == {
        "seq",
        "attempt",
        "outcome",
        "status",
        "reason",
        "delay_ms",
        "elapsed_ms",
        "url",
    }
    err = done.stderr.decode()
    assert err.startswith(f"topics: relaying {q} -> {endpoint.url()} (concurrency 10, timeout 30 s, unsigned")
    assert f"topics: relayed {q} -> {endpoint.url()}: 2 delivered, 1 retried, 0 dead-lettered" in err
    assert "Traceback" not in err and "\x1b" not in err
    assert client.topic(q).count == 0


def test_dead_letters_exit_4_with_drain_and_410_exits_3(
    server: ServerProcess, client: topics.Client, name: Name, endpoint: WebhookEndpoint
) -> None:
    q, dlq = queue_of(client, name, [{"answers": ["400"]}, {"answers": ["200"]}])
    done = relay(server, q, "--url", endpoint.url(), "--drain")
    assert done.returncode == 4, done.stderr
    assert [(r.data, (r.meta or {})["$dead_letter_reason"]) for r in client.read(dlq, include_meta=True)] == [
        ({"answers": ["400"]}, "http 400")
    ]
    assert "WARNING worker" in done.stderr.decode()  # the dead-letter move is logged

    gone_q, gone_dlq = queue_of(client, name, [{"answers": ["410"]}, {}, {}], base="gone")
    gone = relay(server, gone_q, "--url", endpoint.url(), "--concurrency", "1")  # no --drain: 410 ends it
    assert gone.returncode == 3, gone.stderr
    err = gone.stderr.decode()
    assert "ERROR relay" in err and f"GONE {endpoint.url()} answered 410 Gone to job 1" in err
    assert [e["outcome"] for e in lines(gone.stdout)] == ["gone"]
    assert client.topic(gone_dlq).count == 1 and client.topic(gone_q).count == 2


def test_usage_errors_exit_2_and_an_unreachable_server_1(
    server: ServerProcess, endpoint: WebhookEndpoint
) -> None:
    for args in (
        ["q"],  # no --url
        ["q", "--url", "ftp://example.org/"],
        ["q", "--url", endpoint.url(), "--secret", "not-a-secret"],
        ["q", "--url", endpoint.url(), "--header", "no colon"],
        ["q", "--url", endpoint.url(), "--header", "Webhook-Signature: forged"],
        ["q", "--url", endpoint.url(), "--header", "X-Name: café"],
        ["q", "--url", endpoint.url(), "--header", "X-Name: a\x01b"],
        ["q", "--url", endpoint.url(), "--timeout", "0"],
        ["q", "--url", endpoint.url(), "--concurrency", "0"],
    ):
        done = relay(server, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert b"Traceback" not in done.stderr and b"not-a-secret" not in done.stderr
    assert endpoint.requests() == []
    down = subprocess.run(
        [str(TOPICS), "relay", "q", "--url", endpoint.url(), "--server", "http://127.0.0.1:9"],
        capture_output=True,
        timeout=60,
    )
    assert down.returncode == 1
    assert down.stderr.startswith(b"topics: cannot reach http://127.0.0.1:9: ")


def readline(proc: subprocess.Popen[bytes], timeout_s: float, stream: str = "stderr") -> str:
    pipe = proc.stderr if stream == "stderr" else proc.stdout
    assert pipe is not None
    ready, _, _ = select.select([pipe], [], [], timeout_s)
    assert ready, f"no line on {stream} within {timeout_s} s"
    return pipe.readline().decode()


@pytest.mark.parametrize(("interrupts", "drain"), [(1, False), (2, False), (1, True)])
def test_ctrl_c_finishes_the_delivery_in_flight_and_a_second_releases_it(
    interrupts: int,
    drain: bool,
    server: ServerProcess,
    client: topics.Client,
    name: Name,
    endpoint: WebhookEndpoint,
) -> None:
    """One Ctrl-C: the delivery in flight finishes (acked), nothing else is sent. Two: it is
    released (nacked at once), unacknowledged. Either way nothing is left leased, and the exit
    status is 0 — but 130 for a ``--drain`` cut short: the queue is not empty."""
    q, _ = queue_of(client, name, [{"n": 1}, {"n": 2}, {"n": 3}])
    args = ["relay", q, "--url", endpoint.url("/slow"), "--concurrency", "1", "--timeout", "20"]
    proc = subprocess.Popen(
        [str(TOPICS), *args, *(["--drain"] if drain else [])],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_for(server),
        bufsize=0,
    )
    try:
        assert readline(proc, 15).startswith(f"topics: relaying {q} -> ")
        assert endpoint.arrived.wait(15)  # the first delivery is on its way
        proc.send_signal(signal.SIGINT)
        assert readline(proc, 15).startswith("topics: stopping: deliveries in flight get up to 21 s")
        if interrupts == 2:
            proc.send_signal(signal.SIGINT)
            assert readline(proc, 15) == "topics: releasing the deliveries in flight\n"
            out, err = proc.communicate(timeout=15)
        else:
            endpoint.release_slow()
            out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == (130 if drain else 0), err
    assert len(endpoint.requests()) == 1 and b"Traceback" not in err
    # a job the /work stream pushed is released by the stream's close, which the server
    # notices asynchronously: allow it a moment
    deadline = time.monotonic() + 10
    while (state := client.topic(q)).queue is None or state.queue.in_flight:
        assert time.monotonic() < deadline, state
        time.sleep(0.05)
    if interrupts == 1:
        assert [e["outcome"] for e in lines(out)] == ["delivered"]
        # (a job the stream pushed after the stop is counted released: it was never sent)
        assert state.count == 2 and b"1 delivered, 0 retried, 0 dead-lettered, " in err
    else:
        assert lines(out) == [] and state.count == 3
        assert b"0 delivered, 0 retried, 0 dead-lettered, 1 released" in err


def test_a_closed_stdout_stops_the_relay_quietly(
    server: ServerProcess, client: topics.Client, name: Name, endpoint: WebhookEndpoint
) -> None:
    """``topics relay … | head``: once the reader is gone the relay stops gracefully (the
    delivery that could not be printed was made, and is acked) and exits 0 like any command on
    a closed pipe — no traceback per delivery, no relaying on unseen."""
    q, _ = queue_of(client, name, [{"n": 1}, {"n": 2}, {"n": 3}])
    proc = subprocess.Popen(
        [str(TOPICS), "relay", q, "--url", endpoint.url(), "--concurrency", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_for(server),
    )
    try:
        assert proc.stdout is not None
        proc.stdout.close()  # before the first line: its write fails
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, err
    assert b"Traceback" not in err and b"on_delivery failed" not in err and b"Broken pipe" not in err
    assert f"topics: relayed {q} -> {endpoint.url()}: 1 delivered".encode() in err
    assert len(endpoint.requests()) == 1
    deadline = time.monotonic() + 10  # a job the /work stream pushed is released by its close
    while (state := client.topic(q)).queue is None or state.queue.in_flight:
        assert time.monotonic() < deadline, state
        time.sleep(0.05)
    assert state.count == 2


def test_a_signal_inside_a_write_to_stderr_does_not_write_to_stderr_again(
    client: topics.Client, name: Name, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A Python signal handler runs between any two bytecodes — inside a write to stderr too,
    where writing again breaks the stream ("reentrant call inside BufferedWriter"): the relay's
    notice goes past it (here, no loop running: straight to file descriptor 2)."""

    class Stderr(io.StringIO):
        """Raises SIGINT in the middle of its first write; fails a write inside a write."""

        writing = False
        signalled = False

        def write(self, text: str) -> int:
            if self.writing:
                raise RuntimeError("reentrant call inside the stderr writer")
            self.writing = True
            try:
                if not self.signalled:
                    self.signalled = True
                    signal.raise_signal(signal.SIGINT)  # its handler runs here, mid-write
                return super().write(text)
            finally:
                self.writing = False

    q, _ = queue_of(client, name, [])
    relay = Relay(client, q, "http://127.0.0.1:9/hook")
    stderr = Stderr()
    monkeypatch.setattr(sys, "stderr", stderr)
    report = Report(Output(tty=False, err_tty=False, stdout=io.StringIO(), stderr=stderr), relay, q)
    with _stop_on_signals(relay, report) as signals:
        report.notice("topics: a line on its way")
    assert signals.received == 1 and stderr.getvalue() == "topics: a line on its way\n"
    assert capfd.readouterr().err.startswith("topics: stopping: deliveries in flight get up to 31 s")
    assert relay.run(handle_signals=False) == topics.WorkerStats()  # and the stop went through


def test_in_process_with_the_secret_from_the_environment_and_the_server_option(
    server: ServerProcess,
    client: topics.Client,
    name: Name,
    endpoint: WebhookEndpoint,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    q, _ = queue_of(client, name, [{"x": 1}])
    monkeypatch.setenv("TOPICS_URL", "http://127.0.0.1:9")  # wrong: --server wins
    monkeypatch.setenv("TOPICS_RELAY_SECRET", SECRET)
    argv = ["relay", q, "--url", endpoint.url(), "--server", server.url, "--drain", "--header", "X-Env: test"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "signed" in captured.err and SECRET not in captured.err + captured.out
    [r] = endpoint.requests()
    assert r.headers["x-env"] == "test"
    signed = f"{r.headers['webhook-id']}.{r.headers['webhook-timestamp']}.".encode() + r.body
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    assert (
        r.headers["webhook-signature"]
        == "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    )


def test_readable_lines_on_a_terminal() -> None:
    def text(**kw: Any) -> str:
        fields = {
            "seq": 5,
            "attempt": 1,
            "status": 200,
            "reason": None,
            "delay_ms": None,
            "elapsed_ms": 12,
            "url": "u",
        }
        console = Console(file=io.StringIO(), width=200, color_system=None)
        with console.capture() as capture:
            console.print(delivery_text(topics.Delivery(**{**fields, **kw})))
        return capture.get().strip().split("  ", 1)[1]

    assert text(outcome="delivered") == "#5 try 1  200 delivered  12 ms"
    assert (
        text(outcome="retry", status=503, reason="http 503", delay_ms=2500)
        == "#5 try 1  503 retry in 2.5 s (http 503)  12 ms"
    )
    assert text(outcome="retry", status=None, reason="timeout after 30 s", delay_ms=900) == (
        "#5 try 1  --- retry in 900 ms (timeout after 30 s)  12 ms"
    )
    assert (
        text(outcome="dead_letter", status=400, reason="http 400")
        == "#5 try 1  400 dead-lettered (http 400)  12 ms"
    )
    assert "GONE (http 410)" in text(outcome="gone", status=410, reason="http 410")
    assert (duration(0), duration(999), duration(1000), duration(86_400_000)) == (
        "0 ms",
        "999 ms",
        "1.0 s",
        "86400 s",
    )
