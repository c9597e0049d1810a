"""topics for PySpark: a Python data source named ``topics`` (Spark 4's
``pyspark.sql.datasource`` API) — parallel batch reads, resumable streaming reads, and
effectively-once batch and streaming writes. See docs/SPARK.md.

>>> import topics_spark                                         # doctest: +SKIP
>>> topics_spark.register(spark)                               # doctest: +SKIP
>>> df = spark.read.format("topics").option("topic", "clicks").load()   # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import logging
from typing import Any

from .options import OptionError
from .reader import SCHEMA, DataLossError
from .source import TopicsDataSource
from .writer import RowError, WriteCommit

__all__ = [
    "SCHEMA",
    "DataLossError",
    "OptionError",
    "RowError",
    "TopicsDataSource",
    "WriteCommit",
    "read_topic",
    "register",
    "write_topic",
]


def _log_to_stderr() -> None:
    """The connector's warnings and write counts reach the driver's and executors' stderr
    (Spark's Python workers configure no logging)."""
    log = logging.getLogger("topics_spark")
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("topics_spark %(levelname)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False


_log_to_stderr()


def register(spark: Any) -> None:
    """Registers the ``topics`` data source with ``spark`` (a ``SparkSession``)."""
    spark.dataSource.register(TopicsDataSource)


def _option_text(value: Any) -> str:
    """A Python value as an option string: booleans ``true``/``false``, dicts and lists as
    JSON (``startingOffsets={"t": 5}``), the rest ``str()``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _options(url: str | None, topic: str | None, options: dict[str, Any]) -> dict[str, str]:
    given = {k: _option_text(v) for k, v in options.items()}
    if url is not None:
        given["url"] = url
    if topic is not None:
        given["topic"] = topic
    return given


def read_topic(spark: Any, url: str | None, topic: str | None = None, **options: Any) -> Any:
    """``spark.read.format("topics")`` with ``url``, ``topic`` and ``options`` (Python values
    are turned into option strings); ``minPartitions`` defaults to Spark's default parallelism.
    Registers the source if needed."""
    register(spark)
    if not any(k.lower() == "minpartitions" for k in options):
        # Spark Connect has no SparkContext: the source's default then
        with contextlib.suppress(Exception):
            options["minPartitions"] = spark.sparkContext.defaultParallelism
    return spark.read.format("topics").options(**_options(url, topic, options)).load()


def write_topic(df: Any, url: str | None, topic: str | None = None, **options: Any) -> None:
    """``df.write.format("topics").mode("append")`` with ``url``, ``topic`` and ``options``."""
    register(df.sparkSession)
    df.write.format("topics").mode("append").options(**_options(url, topic, options)).save()
