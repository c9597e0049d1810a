"""What the storage fault tests do over HTTP: write numbered batches to an ``fsync`` topic (until
the WAL refuses them) and remember which were acknowledged, read a topic whole, and check that
every acknowledged batch is there whole and no batch is there in part."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import httpx

PAD = "x" * 900
BATCH = 50


def write_batch(http: httpx.Client, topic: str, b: int) -> httpx.Response:
    return http.post(
        f"/v0/topics/{topic}",
        json={"records": [{"data": {"b": b, "i": i, "pad": PAD}} for i in range(BATCH)]},
    )


def assert_read_only_refusal(r: httpx.Response) -> None:
    """The contract's envelope for a write the WAL cannot make durable any more."""
    assert r.status_code == 503, r.text
    error = r.json()["error"]
    assert error["code"] == "not_ready" and error["detail"]["wal_read_only"] is True, error
    assert "retry-after" not in r.headers  # it does not clear until a restart


def write_until_refused(
    http: httpx.Client, topic: str, batches: range, never: str, pause_s: float = 0.0
) -> set[int]:
    """Write ``batches`` in order until one is refused — with the read-only refusal, asserted —
    and return those acknowledged before it; ``never`` is the failure message if none is.
    ``pause_s`` between writes spreads them over time, for a failure that a timer brings (the
    server looks for a due checkpoint once a second; a fast disk takes 500 batches in less)."""
    acked: set[int] = set()
    for b in batches:
        r = write_batch(http, topic, b)
        if r.status_code not in (200, 201):
            assert_read_only_refusal(r)
            return acked
        acked.add(b)
        time.sleep(pause_s)
    raise AssertionError(never)


def read_all(http: httpx.Client, topic: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    from_seq = 0
    while True:
        r = http.post(f"/v0/topics/{topic}/diff", json={"from_seq": from_seq, "limit": 1000})
        assert r.status_code == 200, r.text
        page = r.json()
        records += page["records"]
        from_seq = page["next_from_seq"]
        if page["caught_up"]:
            return records


def assert_batches_whole(records: list[dict[str, Any]], acked: set[int]) -> None:
    """Every acknowledged batch is there whole; any other batch is whole or absent."""
    by_batch: dict[int, list[int]] = defaultdict(list)
    for record in records:
        by_batch[record["data"]["b"]].append(record["data"]["i"])
    for b in acked:
        assert sorted(by_batch.get(b, [])) == list(range(BATCH)), f"acknowledged batch {b} lost records"
    for b, items in by_batch.items():
        assert sorted(items) == list(range(BATCH)), f"batch {b} half-applied: {len(items)} records"
