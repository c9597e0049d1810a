"""``examples/spark_pipeline.py`` — the guide's pipeline — on the shared session and server:
the batch job's revenue equals a sum in Python and a re-run is deduped; the streaming query
turns every order into one record, and a re-run from its checkpoint only the new ones."""

from __future__ import annotations

import importlib.util
import random
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import topics

from tests.server.processes import ServerProcess

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("spark_pipeline", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_pipeline_counts_exactly(spark: Any, server: ServerProcess, tmp_path: Path) -> None:
    ex = _example()
    with topics.Client(server.url) as client:
        ex.prepare(client)
        ex.prepare(client)  # seeds once
        assert client.topic(ex.ORDERS).count == ex.SEEDED
        want: dict[str, float] = defaultdict(float)
        for record in client.read(ex.ORDERS):
            want[record.data["product"]] += record.data["qty"] * record.data["price"]

        ex.batch(spark, server.url)
        ex.batch(spark, server.url)  # the same job again: deduped by its writeId
        got = {r.data["product"]: r.data["revenue"] for r in client.read(ex.REVENUE)}
        assert got == dict(want)

        checkpoint = str(tmp_path / "checkpoint")
        ex.streaming(spark, server.url, checkpoint)
        assert client.topic(ex.ORDER_REVENUE).count == ex.SEEDED
        client.append_many(ex.ORDERS, ex.orders(ex.SEEDED + 1, 5, random.Random(1)))
        ex.streaming(spark, server.url, checkpoint)  # resumes from the checkpoint
        ids = sorted(r.data["order_id"] for r in client.read(ex.ORDER_REVENUE))
        assert ids == list(range(1, ex.SEEDED + 6))
