"""Fixtures shared by the storage tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import MODES, Harness


@pytest.fixture(params=MODES)
async def h(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    harness = Harness(tmp_path, request.param)
    await harness.start()
    yield harness
    harness.close()
