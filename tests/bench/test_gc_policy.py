"""``bench/gc_policy`` runs each policy end to end on a tiny data directory and reports what
docs/BENCHMARKS.md quotes (shape only, no timing)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from bench.gc_policy import run


@pytest.mark.parametrize("policy", ["freeze", "plain", "once"])
async def test_gc_policy_reports_pauses_and_tracked_objects(policy: str, tmp_path: Path) -> None:
    threshold = gc.get_threshold()
    result = await run(policy, 2_000, 0.6, str(tmp_path))
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert result["policy"] == policy and result["durable"] is True
    assert result["appended_per_s"] > 0 and result["tracked_objects"] > 0
    assert set(result["collections"]) == {0, 1, 2}
    assert (result["freeze_ticks"] > 0) == (policy == "freeze")
    assert gc.get_threshold() == threshold
