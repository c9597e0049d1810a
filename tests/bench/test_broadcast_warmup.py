"""``bench/broadcast_warmup.py`` measures what it says: a real server, every message delivered to
every subscriber through the broadcast, its send and Python time split. Shape only, no timing."""

from __future__ import annotations

from bench.broadcast_warmup import run


def test_each_message_is_timed_inside_the_server_and_delivered_to_all() -> None:
    result = run(subscribers=3, messages=4, interval_ms=5, pin=False)
    rows = result["per_message"]
    assert [r["msg"] for r in rows] == [0, 1, 2, 3]
    for row in rows:
        assert row["broadcasts"] >= 1  # three watchers at one position share one send
        assert row["send_all_us"] > 0 and row["python_us"] >= 0
        assert 0 < row["first_ms"] <= row["last_ms"]
    assert set(result["phases"]) == {"0-5", "6-12", "13-"}
    assert result["phases"]["0-5"]["send_all_us_per_subscriber"] > 0
    assert result["phases"]["13-"] == {}  # no message that late in a run of four
