"""Builds the one C extension (the record codec's hot loop); everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "topics_engine._codec",
            ["server/topics_engine/_codec.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter"],
        )
    ]
)
