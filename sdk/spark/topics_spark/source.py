"""The ``topics`` data source: what Spark instantiates for ``format("topics")``. Options are
validated here, eagerly — on the driver, when the read or write is planned — so a bad option
fails the query before any task runs, naming the option."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from .options import WriteOptions, read_options, write_options
from .reader import SCHEMA, TopicsReader, TopicsStreamReader
from .writer import TopicsStreamWriter, TopicsWriter, check_schema, warn_if_window_short


class TopicsDataSource(DataSource):
    """Reads topics into rows of ``topic, seq, ts, node, tag, data, meta`` (batch and
    streaming) and appends DataFrames to topics (batch and streaming), over the ``/v0`` API."""

    @classmethod
    def name(cls) -> str:
        return "topics"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return TopicsReader(read_options(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return TopicsStreamReader(read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return TopicsWriter(self._write_options(schema, overwrite))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return TopicsStreamWriter(self._write_options(schema, overwrite))

    def _write_options(self, schema: StructType, overwrite: bool) -> WriteOptions:
        if overwrite:
            raise ValueError('topics are append-only: write with mode("append") (overwrite is not supported)')
        opts = write_options(self.options)
        check_schema(schema, opts)
        warn_if_window_short(opts)
        return opts
