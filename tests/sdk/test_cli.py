"""The ``topics`` command's client subcommands against a real server: most as a user runs them
(the installed script, as a subprocess, with ``TOPICS_URL`` set; pipes through a shell), the
quick ones in-process (``topics.cli.main`` with captured output)."""

from __future__ import annotations

import io
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
import topics
from topics.cli import main
from topics.cli.output import Output, gap_message

from tests.server.processes import TOPICS, ServerProcess

Name = Callable[[str], str]


def env_for(server: ServerProcess) -> dict[str, str]:
    env = {**os.environ, "TOPICS_URL": server.url}
    env.pop("TOPICS_API_KEY", None)
    return env


def run(server: ServerProcess, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """``topics ARGS…`` as a subprocess (stdout/stderr are pipes: never a terminal)."""
    return subprocess.run(
        [str(TOPICS), *args], input=stdin, capture_output=True, env=env_for(server), timeout=60
    )


def shell(server: ServerProcess, script: str) -> subprocess.CompletedProcess[bytes]:
    """A bash pipeline with ``topics`` on the PATH."""
    env = env_for(server)
    env["PATH"] = f"{TOPICS.parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(["bash", "-o", "pipefail", "-c", script], capture_output=True, env=env, timeout=60)


@pytest.fixture
def cli(
    server: ServerProcess, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str, str]]:
    """``topics.cli.main`` in-process: ``cli("topic", "ls")`` → (status, stdout, stderr)."""
    monkeypatch.setenv("TOPICS_URL", server.url)
    monkeypatch.delenv("TOPICS_API_KEY", raising=False)

    def call(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        status = main(list(args))
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return call


def lines(text: str | bytes) -> list[Any]:
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


def sample_values(n: int) -> list[Any]:
    """Varied JSON values: unicode, nested objects, null, numbers, strings with escapes."""
    rng = random.Random(7)
    words = ["héllo", "日本語", "emoji 🎉", 'quote " and \\ backslash', "tab\tnew\nline", "", "plain"]
    out: list[Any] = []
    for i in range(n):
        kind = i % 8
        if kind == 0:
            out.append({"id": i, "name": rng.choice(words), "tags": [rng.choice(words), i], "ok": i % 3 == 0})
        elif kind == 1:
            out.append(None)
        elif kind == 2:
            out.append(rng.randint(-(2**53), 2**53))
        elif kind == 3:
            out.append(rng.random() * 10 ** rng.randint(-5, 5))
        elif kind == 4:
            out.append(rng.choice(words))
        elif kind == 5:
            out.append({"nested": {"deep": {"list": [1, 2.5, None, {"k": "v"}]}, "empty": {}}, "n": -i})
        elif kind == 6:
            out.append([True, False, [], "ü" * (i % 5)])
        else:
            out.append({"amount": i / 7, "currency": "€"})
    return out


# -- pub / read ----------------------------------------------------------------------------------


def test_pub_a_jsonl_file_then_read_round_trips_byte_for_byte(
    server: ServerProcess, name: Name, tmp_path: Path
) -> None:
    t = name("bulk")
    data = b"".join(orjson.dumps(v) + b"\n" for v in sample_values(5000))
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    with path.open("rb") as f:
        pub = subprocess.run(
            [str(TOPICS), "pub", t], stdin=f, capture_output=True, env=env_for(server), timeout=60
        )
    assert pub.returncode == 0, pub.stderr
    assert pub.stdout == b""
    assert f"appended 5000 records to {t} (seqs 1..5000)".encode() in pub.stderr
    assert b"\x1b" not in pub.stderr  # no progress bar, no colour: stderr is not a terminal

    read = run(server, "read", t, "-e")
    assert read.returncode == 0, read.stderr
    assert read.stdout == data  # the summary on stderr, as pub's; no bar: not a terminal
    assert read.stderr.decode().startswith(f"read 5000 records from {t} (seqs 1..5000) in ")

    # a reader that goes away early (head) is not an error, and prints no traceback
    head = shell(server, f"topics read {t} -e | head -n 1")
    assert head.returncode == 0, head.stderr
    assert head.stdout == data.split(b"\n")[0] + b"\n"
    assert b"Traceback" not in head.stderr


def test_read_into_pub_copies_data_and_with_records_tags_and_meta(
    server: ServerProcess, client: topics.Client, name: Name
) -> None:
    src, plain, full = name("src"), name("copy"), name("copy-full")
    records = [
        {"data": {"i": i, "s": "ñ"}, "tag": f"k:{i % 3}", "meta": {"trace": f"t{i}"}, "node": "n1"}
        for i in range(1500)
    ]
    client.append_many(src, records)

    done = shell(server, f"topics read {src} -e | topics pub {plain}")
    assert done.returncode == 0, done.stderr
    copied = list(client.read(plain))
    assert [r.data for r in copied] == [r["data"] for r in records]
    assert {r.tag for r in copied} == {None}

    done = shell(server, f"topics read {src} -e --records | topics pub --records {full}")
    assert done.returncode == 0, done.stderr
    copied = list(client.read(full))
    assert [(r.data, r.tag, r.meta, r.node) for r in copied] == [
        (r["data"], r["tag"], r["meta"], r["node"]) for r in records
    ]


def test_read_from_and_to(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    t = name("range")
    client.append_many(t, [{"data": i, "tag": f"t{i}"} for i in range(1, 11)])  # seq i holds i

    assert lines(cli("read", t, "-e")[1]) == list(range(1, 11))
    assert lines(cli("read", t, "-e", "--from", "3", "--to", "6")[1]) == [4, 5, 6]  # after 3, up to 6
    assert lines(cli("read", t, "-e", "--from", "earliest", "--to", "2")[1]) == [1, 2]
    assert cli("read", t, "-e", "--from", "latest", "-q") == (0, "", "")
    status, out, err = cli("read", t, "-e", "--from", "latest")
    assert (status, out) == (0, "") and err.startswith(f"read 0 records from {t} in ")
    status, out, _ = cli("read", t, "-e", "--from", "8", "--records")
    assert status == 0
    got = lines(out)
    assert [(r["seq"], r["tag"], r["data"]) for r in got] == [(9, "t9", 9), (10, "t10", 10)]
    assert set(got[0]) == {"seq", "ts", "tag", "data"}  # absent node/meta are left out
    # --to ends a following read (no -e) once it is reached
    assert lines(cli("read", t, "--from", "5", "--to", "7")[1]) == [6, 7]


def test_read_since_and_from_time(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    t = name("since")
    client.append(t, "old")
    time.sleep(0.003)  # a later $ts
    client.append_many(t, [{"data": "new"}, {"data": "newer"}])
    start_ms = [r.ts for r in client.read(t)][1]
    iso = datetime.fromtimestamp(start_ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    assert lines(cli("read", t, "-e", "--from-time", iso)[1]) == ["new", "newer"]
    assert lines(cli("read", t, "-e", "--since", "1d")[1]) == ["old", "new", "newer"]
    assert lines(cli("read", t, "--from-time", iso, "--to", "3")[1]) == ["new", "newer"]  # following
    status, _, err = cli("read", t, "-e", "--since", "yesterday")
    assert status == 2 and "expected a duration" in err
    status, _, err = cli("read", t, "-e", "--from-time", "noon")
    assert status == 2 and "ISO 8601" in err
    status, _, err = cli("read", t, "-e", "--since", "1m", "--from", "3")
    assert status == 2 and "not allowed with" in err


def test_read_without_e_follows_until_to(server: ServerProcess, client: topics.Client, name: Name) -> None:
    t = name("follow")
    client.append_many(t, [{"data": i} for i in range(1, 4)])
    proc = subprocess.Popen(
        [str(TOPICS), "read", t, "--to", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_for(server),
        bufsize=0,  # unbuffered: readline() takes no more than its line, communicate() gets the rest
    )
    try:
        assert readline(proc, 15) == b"1\n"  # the history first…
        client.append_many(t, [{"data": i} for i in range(4, 8)])  # …then live, up to --to
        out, err = proc.communicate(timeout=15)
    finally:
        stop(proc)
    assert proc.returncode == 0, err
    assert lines(out) == [2, 3, 4, 5]


def test_pub_one_record_and_options(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    t = name("one")
    status, out, _ = cli("pub", t, '{"a": [1, 2]}', "--tag", "x:1", "--node", "cli")
    assert status == 0
    assert lines(out) == [{"topic": t, "seq": 1, "head_seq": 1, "created": True, "deduped": False}]
    status, _, _ = cli("pub", t, "--records", '{"data": "r", "tag": "own", "meta": {"m": 1}, "seq": 99}')
    assert status == 0
    status, _, err = cli("pub", t, "--tag", "bulk", stdin='1\n\n"two"\n{"three": 3}\n')
    assert status == 0 and f"appended 3 records to {t} (seqs 3..5)" in err
    got = [(r.data, r.tag, r.node, r.meta) for r in client.read(t)]
    assert got == [
        ({"a": [1, 2]}, "x:1", "cli", None),
        ("r", "own", None, {"m": 1}),
        (1, "bulk", None, None),
        ("two", "bulk", None, None),
        ({"three": 3}, "bulk", None, None),
    ]


def test_pub_delay_holds_queue_jobs_back(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    q = name("later")
    client.create_topic(q, type="queue")
    status, out, _ = cli("pub", q, '{"job": 1}', "--delay", "30s")
    assert status == 0 and lines(out)[0]["seq"] == 1
    status, _, err = cli("pub", q, "--delay", "1.5m", stdin="2\n3\n")
    assert status == 0 and f"appended 2 records to {q}" in err
    # --records input: a record's delay_ms (as read --records prints it) is not sent again
    status, _, _ = cli("pub", q, "--records", stdin='{"data": 4, "delay_ms": 1000}\n')
    assert status == 0
    status, _, _ = cli("pub", q, "--records", "--delay", "1h", stdin='{"data": 5}\n')
    assert status == 0
    assert [(r.data, r.delay_ms) for r in client.read(q)] == [
        ({"job": 1}, 30_000),
        (2, 90_000),
        (3, 90_000),
        (4, 0),
        (5, 3_600_000),
    ]
    state = client.topic(q).queue
    assert state is not None and (state.ready, state.delayed) == (1, 4)
    status, out, _ = cli("read", q, "-e", "--records")
    assert status == 0 and [r.get("delay_ms") for r in lines(out)] == [
        30_000,
        90_000,
        90_000,
        None,
        3_600_000,
    ]
    status, _, err = cli("pub", q, "1", "--delay", "soon")
    assert status == 2 and "expected a duration such as 500ms, 30s" in err
    status, _, err = cli("pub", name("plain-log"), "1", "--delay", "5s")
    assert status == 1 and "delay_ms delays queue jobs" in err


def test_pub_stops_at_a_bad_line_after_sending_the_batches_before_it(
    server: ServerProcess, client: topics.Client, name: Name
) -> None:
    t = name("bad")
    body = [orjson.dumps({"i": i}) for i in range(2500)]
    body[2199] = b'{"i": oops'  # line 2200, in the third batch of 1000
    done = run(server, "pub", t, stdin=b"\n".join(body) + b"\n")
    assert done.returncode == 2
    assert b"stdin line 2200: invalid JSON" in done.stderr
    assert f"before the bad line, appended 2000 records to {t}".encode() in done.stderr
    assert client.topic(t).count == 2000

    done = run(server, "pub", t, "--records", stdin=b'{"data": 1}\n{"no_data": 2}\n')
    assert done.returncode == 2 and b'stdin line 2: expected a record object with a "data" key' in done.stderr

    # a record the server refuses is named by its line too
    big = b'"' + b"y" * (2 << 20) + b'"'
    done = run(server, "pub", t, stdin=b"1\n\n" + big + b"\n")
    assert done.returncode == 1
    assert done.stderr.startswith(b"topics: record_too_large: stdin line 3: ")


# -- tail ----------------------------------------------------------------------------------------


def readline(proc: subprocess.Popen[bytes], timeout_s: float, stream: str = "stdout") -> bytes:
    """One line from the child's stdout/stderr, failing after ``timeout_s``."""
    pipe = proc.stdout if stream == "stdout" else proc.stderr
    assert pipe is not None
    ready, _, _ = select.select([pipe], [], [], timeout_s)
    assert ready, f"no line on {stream} within {timeout_s} s"
    return pipe.readline()


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


def test_tail_prints_live_records_and_gaps_loudly_and_exits_0_on_ctrl_c(
    server: ServerProcess, client: topics.Client, name: Name
) -> None:
    t, other = name("tail"), name("tail2")
    client.create_topic(t, cap_records=3)
    client.append_many(t, [{"data": i} for i in range(10)])  # seqs 1..7 are evicted
    client.append_many(other, [{"data": v} for v in ("a", "b", "x")])
    proc = subprocess.Popen(
        [str(TOPICS), "tail", t, other, "--from", "2", "--records"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_for(server),
        bufsize=0,
    )
    try:  # a resumed cursor (2) lost 3..7 of ``t``
        assert readline(proc, 15, "stderr").decode().startswith(f"GAP {t} 3..7 lost (")
        first = [orjson.loads(readline(proc, 15)) for _ in range(4)]
        assert sorted((r["topic"], r["data"]) for r in first) == sorted(
            [(t, 7), (t, 8), (t, 9), (other, "x")]
        )
        client.append(t, {"live": True}, tag="now")
        live = orjson.loads(readline(proc, 15))
        assert (live["topic"], live["seq"], live["tag"], live["data"]) == (t, 11, "now", {"live": True})
        client.delete_topic(other)
        assert readline(proc, 15, "stderr").decode().startswith(f"DELETED {other}")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    finally:
        stop(proc)
    assert proc.returncode == 0, err
    assert b"Traceback" not in err


def test_reading_from_the_start_of_a_capped_topic_prints_no_gap(
    server: ServerProcess, client: topics.Client, name: Name
) -> None:
    t = name("capstart")
    client.create_topic(t, cap_records=3)
    client.append_many(t, [{"data": i} for i in range(10)])
    for args in (
        ("read", t, "-e"),
        ("read", t, "-e", "--from", "earliest"),
        ("read", t, "-e", "--since", "1d"),
    ):
        done = run(server, *args)
        assert done.returncode == 0, done.stderr
        assert lines(done.stdout) == [7, 8, 9]
        assert b"GAP" not in done.stderr, args
    assert done.stderr.decode().startswith(f"read 3 records from {t} (seqs 8..10) in ")
    assert run(server, "read", t, "-e", "-q").stderr == b""
    resumed = run(server, "read", t, "-e", "--from", "1")
    assert lines(resumed.stdout) == [7, 8, 9]
    assert resumed.stderr.decode().startswith(f"GAP {t} 2..7 lost (")
    following = run(server, "read", t, "--to", "10")  # follows over a watch from the start
    assert following.returncode == 0 and lines(following.stdout) == [7, 8, 9]
    assert b"GAP" not in following.stderr


def test_tail_waits_for_a_topic_that_does_not_exist_yet(
    server: ServerProcess, client: topics.Client, name: Name
) -> None:
    t = name("later")
    proc = subprocess.Popen(
        [str(TOPICS), "tail", t],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_for(server),
        bufsize=0,
    )
    try:
        assert readline(proc, 15, "stderr").decode().startswith(f"topics: waiting for topic {t}")
        client.append_many(t, [{"data": "first"}, {"data": "second"}])
        assert orjson.loads(readline(proc, 15)) == "first"  # from its first record
        assert orjson.loads(readline(proc, 15)) == "second"
        client.append(t, "live")
        assert orjson.loads(readline(proc, 15)) == "live"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    finally:
        stop(proc)
    assert proc.returncode == 0, err


def test_gap_message() -> None:
    tomb = topics.Tombstone("events", 12, 40, "cap", missed_estimate=29)
    assert gap_message(tomb) == "GAP events 12..40 lost (cap, ~29 records)"
    assert gap_message(topics.Tombstone("events", 1, 5, "ttl")) == "GAP events 1..5 lost (ttl, ~5 records)"


# -- delete / topics / routers -------------------------------------------------------------------


def test_delete_before_and_by_tag(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    t = name("del")
    client.append_many(t, [{"data": i, "tag": f"{'a' if i % 2 else 'b'}:{i}"} for i in range(1, 11)])
    status, out, _ = cli("delete", t, "--before", "4")
    assert status == 0 and lines(out) == [{"topic": t, "deleted": 3}]
    status, out, _ = cli("delete", t, "--tag", "a:*")
    assert status == 0 and lines(out) == [{"topic": t, "deleted": 3}]  # 5, 7, 9
    assert [r.data for r in client.read(t)] == [4, 6, 8, 10]
    assert cli("delete", t)[0] == 2


def test_topic_put_get_ls_rm(cli: Callable[..., tuple[int, str, str]], name: Name) -> None:
    q = name("cfg")
    dlq = f"{q}.dlq"
    status, out, _ = cli(
        "topic", "put", q, "--type", "queue", "--max-deliveries", "2", "--dead-letter", dlq,
        "--durability", "fsync", "--set", "lease_ms=1500", "--set", "auto_create=false",
    )  # fmt: skip
    assert status == 0
    (info,) = lines(out)
    assert info["created"] is True and info["topic"] == q
    config = info["config"]
    assert (config["type"], config["max_deliveries"], config["dead_letter"]) == ("queue", 2, dlq)
    assert (config["durability"], config["lease_ms"], config["auto_create"]) == ("fsync", 1500, False)

    status, out, _ = cli("topic", "put", q, "--cap-records", "100")
    assert status == 0 and lines(out)[0]["created"] is False

    status, out, _ = cli("topic", "get", q)
    (state,) = lines(out)
    assert state["config"]["cap_records"] == 100 and state["queue"] == {
        "ready": 0,
        "in_flight": 0,
        "dead_lettered": 0,
        "delayed": 0,
        "oldest_ready_age_ms": 0,
        "holders": [],
        "holders_truncated": False,
    }

    cli("topic", "put", dlq)
    status, out, _ = cli("topic", "ls", "--prefix", q)
    assert status == 0 and [row["topic"] for row in lines(out)] == [q, dlq]

    status, out, _ = cli("topic", "rm", q)
    assert status == 0 and lines(out)[0]["deleted"] is True
    status, out, err = cli("topic", "rm", q)  # no such topic: an error, as nats stream rm
    assert (status, out) == (1, "") and err.startswith(f"topics: topic_not_found: topic '{q}' does not exist")
    assert cli("topic", "get", q)[0] == 1


def test_topic_rm_if_empty(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    t = name("full")
    client.append(t, 1)
    status, _, err = cli("topic", "rm", t, "--if-empty")
    assert status == 1 and err.startswith("topics: topic_not_empty: ")


def test_schedule_put_get_ls_rm(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    t, s = name("sched-t"), name("sched")
    status, out, err = cli(
        "schedule", "put", s, "--topic", t, "--cron", "0 2 * * *", "--data", '{"task": "report"}',
        "--data", "plain text", "--tag", "nightly", "--missed", "once",
    )  # fmt: skip
    assert status == 0, err
    (info,) = lines(out)
    assert (info["created"], info["cron"], info.get("every_ms"), info["missed"]) == (
        True,
        "0 2 * * *",
        None,
        "once",
    )
    assert info["records"] == [
        {"data": {"task": "report"}, "tag": "nightly"},
        {"data": "plain text", "tag": "nightly"},
    ]
    status, out, _ = cli("schedule", "ls", "--topic", t)
    (row,) = lines(out)
    assert (row["schedule"], row["runs_total"]) == (s, 0)
    assert None not in row.values() and "records" not in row  # the list leaves records out
    status, out, _ = cli("schedule", "get", s)
    assert lines(out)[0]["next_run_ms"] % 86_400_000 == 2 * 3_600_000  # 02:00 UTC
    status, out, _ = cli(
        "schedule", "put", s, "--topic", t, "--every-ms", "60000", "--records", '[{"data": 1}]'
    )
    assert status == 0 and lines(out)[0]["created"] is False and lines(out)[0]["every_ms"] == 60000

    assert lines(cli("schedule", "rm", s)[1]) == [{"schedule": s, "deleted": True}]
    status, out, err = cli("schedule", "rm", s)
    assert (status, out) == (1, "") and err.startswith("topics: schedule_not_found: ")
    status, _, err = cli("schedule", "get", s)
    assert status == 1 and err.startswith("topics: schedule_not_found: ")


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--cron", "* * * * *"], "give the records"),
        (["--cron", "* * * * *", "--data", "1", "--records", "[]"], "give the records"),
        (["--cron", "* * * * *", "--records", "{}"], "JSON array"),
        (["--cron", "* * * * *", "--records", '[{"data": 1}]', "--tag", "t"], "--tag goes with --data"),
    ],
)
def test_schedule_put_usage_errors(
    cli: Callable[..., tuple[int, str, str]], args: list[str], problem: str
) -> None:
    status, _, err = cli("schedule", "put", "s", "--topic", "t", *args)
    assert status == 2 and problem in err


def test_schedule_put_refused_by_the_server(cli: Callable[..., tuple[int, str, str]]) -> None:
    status, _, err = cli("schedule", "put", "s", "--topic", "t", "--cron", "* * *", "--data", "1")
    assert status == 1 and err.startswith("topics: invalid_request: cron: has 3 fields")


def test_router_put_get_ls_rm(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    src, dest = name("r-src"), name("r-dest")
    router = f"{src}->{dest}"
    client.append(src, "first")
    status, out, _ = cli(
        "router", "put", router, "--source", src, "--dest", dest, "--no-preserve-node",
        "--filter", '["tag","Glob","eu:*"]',
    )  # fmt: skip
    assert status == 0
    (info,) = lines(out)
    assert (info["created"], info["preserve_node"], info["filter"]) == (True, False, ["tag", "Glob", "eu:*"])

    status, out, _ = cli("router", "ls", "--source", src)
    (listed,) = lines(out)  # only what the list answers: no null cursor, lag, created…
    assert (listed["router"], listed["dest"], listed["forwarded_total"]) == (router, dest, 0)
    assert None not in listed.values() and "created" not in listed and "cursor" not in listed
    status, out, _ = cli("router", "get", router)
    assert lines(out)[0]["dest"] == dest and "created" not in lines(out)[0]

    assert lines(cli("router", "rm", router)[1]) == [{"router": router, "deleted": True}]
    status, out, err = cli("router", "rm", router)
    assert (status, out) == (1, "") and err.startswith("topics: router_not_found: ")
    status, _, err = cli("router", "get", router)
    assert status == 1 and err.startswith("topics: router_not_found: ")


# -- queues --------------------------------------------------------------------------------------


def test_queue_claim_ack_nack_stats(
    server: ServerProcess, cli: Callable[..., tuple[int, str, str]], name: Name
) -> None:
    q = name("jobs")
    cli("topic", "put", q, "--type", "queue")
    for i in range(3):
        cli("pub", q, orjson.dumps({"job": i}).decode())

    status, out, _ = cli("queue", "claim", q, "--node", "w1", "--max", "2", "--lease-ms", "60000")
    assert status == 0
    jobs = lines(out)
    assert [(j["seq"], j["deliveries"], j["data"]) for j in jobs] == [(1, 1, {"job": 0}), (2, 1, {"job": 1})]
    assert all(isinstance(j["lease_id"], str) and j["deadline"] > 0 for j in jobs)
    (stats,) = lines(cli("queue", "stats", q)[1])
    assert stats == {
        "topic": q, "ready": 1, "in_flight": 2, "dead_lettered": 0, "delayed": 0,
        "oldest_ready_age_ms": stats["oldest_ready_age_ms"], "holders": {"w1": 2}, "holders_truncated": False,
        "count": 3, "head_seq": 3,
    }  # fmt: skip
    status, out, _ = cli("queue", "leases", q)
    assert status == 0
    assert [(x["seq"], x["node"], x["lease_id"]) for x in lines(out)] == [
        (j["seq"], "w1", j["lease_id"]) for j in jobs
    ]
    assert lines(cli("queue", "leases", q, "--node", "w2")[1]) == []

    status, out, _ = cli("queue", "ack", q, "--node", "w1", "1")
    assert status == 0 and lines(out)[0]["acked"] == 1
    # claim's output line piped back in: fenced by its lease_id
    done = run(
        server, "queue", "nack", q, "--node", "w1", "--delay-ms", "0", stdin=orjson.dumps(jobs[1]) + b"\n"
    )
    assert done.returncode == 0, done.stderr
    assert lines(done.stdout)[0]["nacked"] == 1
    status, out, err = cli("queue", "ack", q, "--node", "other", "3")
    assert status == 1 and lines(out)[0]["skipped"] == [3]  # not held by that node: an error
    assert err.startswith("topics: not_held: 1 job not acked (3): not held by node 'other'")
    status, out, err = cli("queue", "nack", q, "--node", "w1", "3", "99")
    assert status == 1 and lines(out)[0]["skipped"] == [3, 99] and "2 jobs not nacked (3, 99)" in err
    (stats,) = lines(cli("queue", "stats", q)[1])
    assert stats == {
        "topic": q, "ready": 2, "in_flight": 0, "dead_lettered": 0, "delayed": 0,
        "oldest_ready_age_ms": stats["oldest_ready_age_ms"], "holders": {}, "holders_truncated": False,
        "count": 2, "head_seq": 3,
    }  # fmt: skip

    log = name("log")
    cli("pub", log, "1")
    status, _, err = cli("queue", "claim", log, "--node", "w")
    assert status == 1 and err.startswith("topics: not_a_queue: ")
    status, _, err = cli("queue", "stats", log)
    assert status == 1 and err.startswith("topics: not_a_queue: ")


def test_dlq_ls_and_redrive(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    q, dlq = name("pdfs"), name("pdfs.dlq")
    client.create_topic(q, type="queue", max_deliveries=1, dead_letter=dlq)
    client.append(q, {"file": "c.pdf"}, tag="pdf:c")
    client.nack(q, "w", client.claim(q, "w"))
    assert client.claim(q, "w") == []  # the second delivery dead-letters it

    status, out, _ = cli("dlq", "ls", dlq)
    assert status == 0
    (row,) = lines(out)
    assert (row["from"], row["deliveries"], row["src_seq"], row["tag"], row["data"]) == (
        q, 1, 1, "pdf:c", {"file": "c.pdf"}
    )  # fmt: skip

    assert lines(cli("dlq", "redrive", dlq, "--dry-run")[1]) == [
        {"dlq": dlq, "to": None, "redriven": 1, "dry_run": True}
    ]
    assert client.topic(dlq).count == 1
    assert lines(cli("dlq", "redrive", dlq)[1])[0]["redriven"] == 1
    assert client.topic(dlq).count == 0
    assert [job.data for job in client.claim(q, "w")] == [{"file": "c.pdf"}]
    assert cli("dlq", "ls", dlq)[1] == ""


def test_queue_output_fields_and_dlq_limit(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    q, dlq = name("shape"), name("shape.dlq")
    client.create_topic(q, type="queue", max_deliveries=1, dead_letter=dlq)
    client.append_many(q, [{"data": i, "tag": f"t{i}"} for i in range(3)])
    status, out, _ = cli("queue", "claim", q, "--node", "w", "--max", "3")
    assert status == 0
    assert [list(job) for job in lines(out)] == [
        ["seq", "lease_id", "deadline", "deliveries", "ts", "tag", "data"]
    ] * 3
    status, out, _ = cli("queue", "ack", q, "--node", "w", "1")
    assert status == 0 and lines(out) == [{"topic": q, "acked": 1, "skipped": [], "ready": 0, "in_flight": 2}]
    status, out, _ = cli("queue", "nack", q, "--node", "w", "2", "3")
    assert status == 0 and lines(out) == [
        {"topic": q, "nacked": 2, "skipped": [], "ready": 2, "in_flight": 0}
    ]
    assert client.claim(q, "w", max=5) == []  # their last delivery was spent: dead-lettered
    status, out, _ = cli("dlq", "ls", dlq, "--limit", "1")
    assert status == 0 and [(row["src_seq"], row["data"]) for row in lines(out)] == [(2, 1)]
    assert len(lines(cli("dlq", "ls", dlq)[1])) == 2


def test_bad_stdin_lines_are_named_for_queue_ack(
    cli: Callable[..., tuple[int, str, str]], name: Name
) -> None:
    q = name("badack")
    cli("topic", "put", q, "--type", "queue")
    status, _, err = cli("queue", "ack", q, "--node", "w", stdin="1\n{oops\n")
    assert status == 2 and err.startswith("topics: error: stdin line 2: invalid JSON")
    status, _, err = cli("queue", "ack", q, "--node", "w", stdin='"x"\n')
    assert status == 2 and "stdin line 1: expected a seq or a claimed job object" in err


# -- exit codes, options, output -----------------------------------------------------------------


def test_exit_codes(server: ServerProcess, name: Name) -> None:
    missing = run(server, "read", name("missing"), "-e")
    assert missing.returncode == 1
    assert missing.stderr.startswith(b"topics: topic_not_found: ")
    assert b"Traceback" not in missing.stderr

    for args in (["read"], ["read", "t", "--from", "soon"], ["nope"], ["pub", "t", "{bad"], ["delete", "t"]):
        done = run(server, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert b"Traceback" not in done.stderr

    down = subprocess.run(
        [str(TOPICS), "--url", "http://127.0.0.1:9", "topic", "ls"], capture_output=True, timeout=60
    )
    assert down.returncode == 1
    assert down.stderr.startswith(b"topics: cannot reach http://127.0.0.1:9: ")


def test_url_and_api_key_before_or_after_the_subcommand(
    server: ServerProcess, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: Name
) -> None:
    monkeypatch.setenv("TOPICS_URL", "http://127.0.0.1:9")  # wrong: the options win
    t = name("opts")
    assert main(["--url", server.url, "--api-key", "k", "pub", t, "1"]) == 0
    assert main(["read", t, "-e", "--url", server.url, "--json"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "1"


def test_client_commands_do_not_import_the_server() -> None:
    code = (
        "import sys; from topics.cli import main; "
        "main(['--url', 'http://127.0.0.1:9', 'topic', 'ls']); "
        "print(sorted(m for m in sys.modules if m.startswith('topics_server')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


def test_version_is_delegated_to_the_server() -> None:
    done = subprocess.run([str(TOPICS), "version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip()


def test_terminal_output_is_a_table_and_piped_output_has_no_colour(
    server: ServerProcess, client: topics.Client, name: Name
) -> None:
    t = name("tty")
    client.append(t, {"x": 1}, tag="k")
    buf = io.StringIO()
    out = Output(tty=True, err_tty=False, stdout=buf, stderr=io.StringIO())
    out.rows(client.list_topics(prefix=t), ("topic", "count"))
    out.record(next(iter(client.read(t))), full=False)
    text = buf.getvalue()
    assert "topic" in text and "count" in text and t in text
    assert "[k]" in text and '{"x":1}' in text

    for args in (["topic", "get", t], ["topic", "ls", "--prefix", t], ["read", t, "-e", "--records"]):
        done = run(server, *args)
        assert done.returncode == 0 and b"\x1b" not in done.stdout + done.stderr
        lines(done.stdout)  # JSON lines


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "read" in capsys.readouterr().out
    assert main(["read", "--help"]) == 0
    assert "records *after* that seq" in capsys.readouterr().out


def test_pub_from_a_slow_pipe_does_not_wait_for_a_full_batch(
    server: ServerProcess, client: topics.Client, name: Name
) -> None:
    t = name("linger")
    proc = subprocess.Popen(
        [str(TOPICS), "pub", t], stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for(server)
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(b'{"first":1}\n')
        proc.stdin.flush()
        deadline = time.monotonic() + 15
        while _count(client, t) == 0:
            assert time.monotonic() < deadline, "the line was not sent while the pipe stayed open"
            time.sleep(0.05)
        proc.stdin.close()
        assert proc.wait(15) == 0
    finally:
        stop(proc)


def _count(client: topics.Client, t: str) -> int:
    try:
        return client.topic(t).count
    except topics.TopicNotFound:
        return 0


def test_consumer_create_show_ls_commit_rm(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    t = name("cons")
    client.append_many(t, [{"data": i} for i in range(5)])
    status, out, err = cli("consumer", "create", t, "billing")
    assert status == 0, err
    (info,) = lines(out)
    assert (info["consumer"], info["created"], info["cursor"], info["lag"]) == ("billing", True, 0, 5)
    assert lines(cli("consumer", "create", t, "audit", "--from", "latest")[1])[0]["cursor"] == 5
    assert lines(cli("consumer", "create", t, "audit", "--from", "2")[1])[0]["cursor"] == 5  # left alone
    assert lines(cli("consumer", "create", t, "audit", "--from", "2", "--force")[1])[0]["cursor"] == 2
    status, out, _ = cli("consumer", "ls", t)
    assert [(c["consumer"], c["lag"]) for c in lines(out)] == [("audit", 3), ("billing", 5)]
    assert lines(cli("consumer", "commit", t, "billing", "4")[1])[0]["cursor"] == 4
    status, _, err = cli("consumer", "commit", t, "billing", "1")
    assert status == 1 and err.startswith("topics: cursor_behind:")
    assert lines(cli("consumer", "commit", t, "billing", "1", "--force")[1])[0]["cursor"] == 1
    assert lines(cli("consumer", "show", t, "billing")[1])[0]["lag"] == 4
    assert lines(cli("consumer", "rm", t, "billing")[1]) == [
        {"consumer": "billing", "topic": t, "deleted": True}
    ]
    status, _, err = cli("consumer", "show", t, "billing")
    assert status == 1 and err.startswith("topics: consumer_not_found:")
    status, out, err = cli("consumer", "rm", t, "billing")  # no such consumer: an error, as every rm
    assert (status, out) == (1, "") and err.startswith("topics: consumer_not_found: ")
    status, _, err = cli("consumer", "create", t, "x", "--from", "1", "--since", "1h")
    assert status == 2 and "not allowed with argument" in err
    client.append(t, "newer")  # seq 6, written now: --since 1h starts before it
    (info,) = lines(cli("consumer", "create", t, "recent", "--since", "1h")[1])
    assert info["cursor"] == 0  # every record is from the last hour: from the earliest


def test_read_as_a_consumer_prints_what_is_new_and_commits_it(
    cli: Callable[..., tuple[int, str, str]], client: topics.Client, name: Name
) -> None:
    t = name("read-cons")
    client.append_many(t, [{"data": i} for i in range(4)])
    status, out, err = cli("read", t, "-e", "--consumer", "c", "--commit-every", "3")
    assert status == 0, err
    assert lines(out) == [0, 1, 2, 3]
    assert client.consumer(t, "c").cursor == 4
    assert cli("read", t, "-e", "--consumer", "c")[1] == ""  # nothing new
    client.append_many(t, [{"data": 4}, {"data": 5, "tag": "x"}])
    status, out, _ = cli("read", t, "-e", "--consumer", "c", "--records")
    assert [(r["seq"], r["data"], r.get("tag")) for r in lines(out)] == [(5, 4, None), (6, 5, "x")]
    assert client.consumer(t, "c").cursor == 6
    status, out, _ = cli("read", t, "-e", "--consumer", "late", "--from", "5")  # created at 5
    assert lines(out) == [5]
    status, _, err = cli("read", t, "-e", "--consumer", "c", "--to", "3")
    assert status == 2 and "--to" in err


def test_read_as_a_consumer_follows_and_commits_on_ctrl_c(
    cli: Callable[..., tuple[int, str, str]], server: ServerProcess, name: Name
) -> None:
    """A following ``read --consumer`` prints new records as they come; Ctrl-C ends it (0) and
    commits what it printed, so the next run starts after it."""
    t = name("follow-cons")
    with topics.Client(server.url) as client:
        client.append_many(t, [{"data": i} for i in range(3)])
        proc = subprocess.Popen(
            [str(TOPICS), "read", t, "--consumer", "f", "--commit-every", "1000"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env_for(server),
        )
        try:
            assert proc.stdout is not None
            got = [orjson.loads(proc.stdout.readline()) for _ in range(3)]
            client.append(t, "live")
            got.append(orjson.loads(proc.stdout.readline()))
            proc.send_signal(signal.SIGINT)
            assert proc.wait(30) == 0, proc.stderr.read() if proc.stderr else ""
        finally:
            if proc.poll() is None:
                proc.kill()
        assert got == [0, 1, 2, "live"]
        # Ctrl-C committed what was printed (no periodic commit was due). A line is on the pipe
        # as soon as it is written, so the interrupt may land just before "live" counts as
        # printed: then it is printed again by the next run — at least once, never lost.
        cursor = client.consumer(t, "f").cursor
        assert cursor in (3, 4)
        status, again, _ = cli("read", t, "-e", "--consumer", "f")
        assert status == 0 and lines(again) == (["live"] if cursor == 3 else [])
        assert client.consumer(t, "f").cursor == 4


# -- worker --------------------------------------------------------------------------------------

HANDLERS = """
import asyncio, os, sys, time
import topics

class Bad(Exception):
    pass

def say(line):  # one write: handlers run in threads, and print() writes the newline apart
    sys.stdout.write(line + "\\n")
    sys.stdout.flush()

def handle(job):
    say(f"handled {job.data}")
    if job.data == "bad":
        raise Bad("no")

async def ahandle(job):
    await asyncio.sleep(0)
    say(f"async {job.data}")

def slow(job):
    say(f"started {job.data}")
    while not os.path.exists(os.environ["RELEASE_FILE"]):
        time.sleep(0.02)
    say(f"finished {job.data}")

not_callable = 42
"""


def test_worker_runs_a_handler_by_import_path(
    server: ServerProcess, client: topics.Client, name: Name, tmp_path: Path
) -> None:
    (tmp_path / "handlers.py").write_text(HANDLERS)
    q, dlq = name("wq"), name("wq.dlq")
    client.create_topic(q, type="queue", dead_letter=dlq)
    client.append_many(q, [{"data": "a"}, {"data": "bad"}, {"data": "c"}])
    done = run(server, "worker", "handlers:handle", q, "--path", str(tmp_path), "--drain",
               "--permanent", "handlers:Bad", "--concurrency", "2")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.decode().splitlines()) == ["handled a", "handled bad", "handled c"]
    err = done.stderr.decode()
    assert err.startswith(f"topics: worker handlers:handle on {q} (concurrency 2, mode auto, node ")
    assert "2 processed, 1 failed, 0 retried, 1 dead-lettered" in err
    assert [r.data for r in client.read(dlq)] == ["bad"]

    client.append(q, "x")
    done = subprocess.run(  # the current directory is on the import path, as for rq/celery
        [str(TOPICS), "worker", "handlers:ahandle", q, "--drain"],
        capture_output=True, env=env_for(server), cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == b"async x\n", done.stderr


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("handlers", "expected MODULE:NAME"),
        ("no_such_module_xyz:f", "cannot import 'no_such_module_xyz'"),
        ("handlers:missing", "module 'handlers' has no 'missing'"),
        ("handlers:not_callable", "is not callable"),
        ("broken:f", "cannot import 'broken': SyntaxError"),
    ],
)
def test_worker_usage_errors(server: ServerProcess, tmp_path: Path, spec: str, problem: str) -> None:
    (tmp_path / "handlers.py").write_text(HANDLERS)
    (tmp_path / "broken.py").write_text("def f(:\n")
    done = run(server, "worker", spec, "anyqueue", "--path", str(tmp_path))
    assert done.returncode == 2 and problem in done.stderr.decode(), done.stderr


def test_worker_on_a_missing_queue_exits_1(server: ServerProcess, tmp_path: Path, name: Name) -> None:
    (tmp_path / "handlers.py").write_text(HANDLERS)
    done = run(server, "worker", "handlers:handle", name("nope"), "--path", str(tmp_path))
    assert done.returncode == 1 and b"topic_not_found" in done.stderr


def test_worker_stops_gracefully_on_sigterm(
    server: ServerProcess, client: topics.Client, name: Name, tmp_path: Path
) -> None:
    (tmp_path / "handlers.py").write_text(HANDLERS)
    release = tmp_path / "release"
    q = name("wslow")
    client.create_topic(q, type="queue")
    client.append_many(q, [{"data": "one"}, {"data": "two"}])
    proc = subprocess.Popen(
        [str(TOPICS), "worker", "handlers:slow", q, "--path", str(tmp_path), "--mode", "poll"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**env_for(server), "RELEASE_FILE": str(release)},
        bufsize=0,
    )
    try:
        assert readline(proc, 30, "stderr").decode().startswith(f"topics: worker handlers:slow on {q}")
        assert readline(proc, 30) == b"started one\n"
        proc.send_signal(signal.SIGTERM)
        assert readline(proc, 30, "stderr").decode().startswith("topics: SIGTERM: stopping")
        release.touch()  # the running job finishes within the grace and is acked
        out, err = proc.communicate(timeout=30)
    finally:
        stop(proc)
    assert proc.returncode == 0, err
    assert out == b"finished one\n"
    assert b"1 processed" in err and b"Traceback" not in err
    assert [r.data for r in client.read(q)] == ["two"]  # never started: still there, unleased
    assert client.topic(q).queue.in_flight == 0  # type: ignore[union-attr]


# -- contexts and completion ---------------------------------------------------------------------


def test_contexts_choose_the_server_and_key_with_flags_env_and_file(
    server: ServerProcess,
    cli: Callable[..., tuple[int, str, str]],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    name: Name,
) -> None:
    config = tmp_path / "cfg" / "config.toml"
    monkeypatch.setenv("TOPICS_CONFIG", str(config))
    monkeypatch.delenv("TOPICS_CONTEXT", raising=False)
    monkeypatch.delenv("TOPICS_URL")
    dead = "http://127.0.0.1:9"  # nothing listens there
    t = name("ctx")

    status, out, _ = cli("context", "add", "local", "--url", server.url)
    added = lines(out)[0]
    assert (added["context"], added["url"], added["api_key"], added["current"]) == (
        "local", server.url, "none", True,
    )  # fmt: skip
    status, _, _ = cli("context", "add", "dead", "--url", dead, "--api-key", "-", stdin="s3cret\n")
    assert status == 0
    assert config.stat().st_mode & 0o777 == 0o600 and config.parent.stat().st_mode & 0o777 == 0o700
    assert 'api_key = "s3cret"' in config.read_text()
    status, out, _ = cli("context", "ls")
    assert [(r["context"], r["api_key"], r["current"]) for r in lines(out)] == [
        ("dead", "set", False), ("local", "none", True),
    ]  # fmt: skip
    assert "s3cret" not in out

    assert cli("pub", t, "1")[0] == 0  # the current context: local
    assert cli("--context", "dead", "topic", "get", t)[0] == 1  # --context wins…
    assert cli("topic", "get", t, "--context", "dead", "--url", server.url)[0] == 0  # …but not --url
    monkeypatch.setenv("TOPICS_CONTEXT", "dead")
    assert cli("topic", "get", t)[0] == 1
    monkeypatch.setenv("TOPICS_URL", server.url)  # $TOPICS_URL beats $TOPICS_CONTEXT / current
    assert cli("topic", "get", t)[0] == 0
    monkeypatch.delenv("TOPICS_URL")
    monkeypatch.delenv("TOPICS_CONTEXT")

    assert cli("context", "use", "dead")[0] == 0
    assert cli("topic", "get", t)[0] == 1
    status, _, err = cli("--context", "nope", "topic", "ls")
    assert status == 2 and "no context 'nope'" in err
    assert cli("context", "rm", "dead")[0] == 0  # the current one: now none is current
    assert cli("topic", "get", t, "--url", server.url)[0] == 0
    assert cli("context", "use", "local")[0] == 0 and cli("topic", "get", t)[0] == 0
    status, _, err = cli("context", "rm", "dead")
    assert status == 2 and "no context 'dead'" in err
    status, _, err = cli("context", "add", "bad name", "--url", dead)
    assert status == 2


def test_a_context_key_is_sent_only_to_its_own_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from topics.cli.contexts import Config, Context, connection, dump, load, save
    from topics.cli.parser import build_parser

    path = tmp_path / "config.toml"
    save(Config("a", {"a": Context("a", "http://a:1"), "b": Context("b", "http://b:1", 'k"\\\n')}), path)
    assert load(path) == Config(
        "a", {"a": Context("a", "http://a:1"), "b": Context("b", "http://b:1", 'k"\\\n')}
    )
    assert load(path) == load(path) and dump(load(path)) == path.read_text()
    monkeypatch.setenv("TOPICS_CONFIG", str(path))
    monkeypatch.delenv("TOPICS_URL", raising=False)
    monkeypatch.delenv("TOPICS_CONTEXT", raising=False)
    monkeypatch.setenv("TOPICS_API_KEY", "for-another-server")
    parse = build_parser().parse_args
    assert connection(parse(["topic", "ls"])) == ("http://a:1", "")  # no key, not the env's
    assert connection(parse(["topic", "ls", "--context", "b"])) == ("http://b:1", 'k"\\\n')
    assert connection(parse(["--api-key", "x", "topic", "ls"])) == ("http://a:1", "x")
    path.write_text("current = 'a'\n[contexts.a]\nno_url = 1\n")
    with pytest.raises(Exception, match="needs url"):
        connection(parse(["topic", "ls"]))


def test_completion_scripts_know_every_subcommand(tmp_path: Path) -> None:
    done = subprocess.run([str(TOPICS), "completion", "bash"], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    script = done.stdout.decode()
    for command in ("topic", "pub", "read", "tail", "worker", "relay", "context", "completion"):
        assert f'"/{command}"' in script
    (tmp_path / "topics.bash").write_text(script)
    probe = (
        f"source {tmp_path / 'topics.bash'}\n"
        'c() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _topics_complete; '
        'echo "${COMPREPLY[*]}"; }\n'
        'c topics qu; c topics queue ""; c topics queue ack --no; c topics worker x q --mode ""; '
        'c topics --url u topic r; c topics completion ""\n'
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, timeout=60)
    assert done.stdout.decode().splitlines() == [
        "queue", "stats leases claim ack nack", "--node", "auto push poll", "rm", "bash zsh fish",
    ], done.stderr  # fmt: skip
    for shell in ("zsh", "fish"):
        done = subprocess.run([str(TOPICS), "completion", shell], capture_output=True, timeout=60)
        assert done.returncode == 0 and b"worker" in done.stdout
        (tmp_path / f"topics.{shell}").write_bytes(done.stdout)
    if shutil.which("fish"):  # (scripts/setup.sh installs fish and zsh)
        probe = (
            f"source {tmp_path / 'topics.fish'}; complete -C 'topics queue '; complete -C 'topics tail --fr'"
        )
        done = subprocess.run(["fish", "-c", probe], capture_output=True, timeout=60)
        assert [line.split("\t")[0] for line in done.stdout.decode().splitlines()] == [
            "ack", "claim", "leases", "nack", "stats", "--from", "--from-time",
        ], done.stderr  # fmt: skip
    if shutil.which("zsh"):
        probe = f"autoload -U compinit && compinit -u; source {tmp_path / 'topics.zsh'}; print loaded"
        done = subprocess.run(["zsh", "-c", probe], capture_output=True, timeout=60)
        assert done.stdout == b"loaded\n", done.stderr
    assert (
        subprocess.run([str(TOPICS), "completion", "tcsh"], capture_output=True, timeout=60).returncode == 2
    )


def test_whoami_in_dev_mode(cli: Callable[..., tuple[int, str, str]]) -> None:
    status, out, err = cli("whoami")
    assert status == 0, err
    assert lines(out) == [
        {
            "auth": "dev",
            "key_id": None,
            "key": None,
            "scopes": ["admin", "delete", "read", "write"],
            "prefixes": [],
        }
    ]


def test_whoami_names_the_key_and_refuses_an_unknown_one(
    make_server: Callable[..., ServerProcess],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = make_server({"TOPICS_API_KEYS": "root-secret,dash-secret:read:tenant42."})
    monkeypatch.delenv("TOPICS_API_KEY", raising=False)
    assert main(["--url", server.url, "--api-key", "dash-secret", "whoami"]) == 0
    out = capsys.readouterr().out
    assert lines(out) == [
        {"auth": "keys", "key_id": 2, "key": "key #2", "scopes": ["read"], "prefixes": ["tenant42."]}
    ]
    assert "secret" not in out
    assert main(["whoami", "--url", server.url, "--api-key", "nope"]) == 1
    assert capsys.readouterr().err.startswith("topics: unauthorized: ")


def test_console_prints_the_url_and_opens_nothing_without_a_terminal(
    cli: Callable[..., tuple[int, str, str]], server: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_browser(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a test must never open a browser")

    monkeypatch.setattr("webbrowser.get", no_browser)
    monkeypatch.setattr("webbrowser.open", no_browser)
    for args in (("console",), ("console", "--no-open"), ("console", "--url", server.url + "/")):
        status, out, err = cli(*args)
        assert status == 0, err
        assert lines(out) == [{"url": f"{server.url}/console", "opened": False}]
    status, out, _ = cli("console", "--url", "https://topics.example.org:8443")
    assert lines(out) == [{"url": "https://topics.example.org:8443/console", "opened": False}]


def test_console_opens_a_browser_only_where_one_can_show() -> None:
    from topics.cli.account import should_open

    x11, wayland, ssh = {"DISPLAY": ":0"}, {"WAYLAND_DISPLAY": "wayland-0"}, {"SSH_TTY": "/dev/pts/1"}
    assert should_open(False, True, "linux", x11) and should_open(False, True, "linux", wayland)
    assert not should_open(False, True, "linux", ssh)  # no display: a remote shell
    assert not should_open(False, True, "freebsd14", {})
    assert should_open(False, True, "darwin", {}) and should_open(False, True, "win32", {})
    assert not should_open(True, True, "linux", x11)  # --no-open
    assert not should_open(False, False, "darwin", {})  # a pipe or a script


def test_console_never_picks_a_text_mode_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    import webbrowser

    from topics.cli.account import graphical_browser

    lynx = webbrowser.GenericBrowser("lynx")
    firefox = webbrowser.Mozilla("firefox")
    monkeypatch.setattr("webbrowser.get", lambda: lynx)
    assert graphical_browser() is None
    monkeypatch.setattr("webbrowser.get", lambda: firefox)
    assert graphical_browser() is firefox

    def none_found() -> webbrowser.BaseBrowser:
        raise webbrowser.Error("could not locate runnable browser")

    monkeypatch.setattr("webbrowser.get", none_found)
    assert graphical_browser() is None
