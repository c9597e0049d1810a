"""Spark tests: one local SparkSession (``local[2]``, ~15 s to start) and one ``topics serve``
child process for the whole run; topic names are unique per test (``name``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.sdk.conftest import make_server, name, server  # noqa: F401 — shared fixtures


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    # Spark's Python workers must run this interpreter (the venv with topics_spark)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    import topics_spark
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("topics-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    topics_spark.register(session)
    yield session
    session.stop()
