"""HTTP benchmarks for topics (see docs/BENCHMARKS.md). Not part of the installed package."""
