"""Builds the C extensions (the record codec's hot loop, the live fan-out's broadcast send;
without a C compiler the build stops saying so) and puts the OpenAPI document into the
``topics_server`` package of a wheel; everything else is in pyproject.toml.

``openapi/v0.yaml`` (and the OAS 3.1 meta-schema beside it) stays the single source of truth in
the repository: a build copies it to ``topics_server/openapi/`` (``spec.py`` reads that copy
when the repository's is not there, i.e. in an installed wheel). An sdist carries ``openapi/``
(MANIFEST.in), so a wheel built from it has the same copy.
"""

import os
import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

STRICT = ["-Werror"] if os.environ.get("TOPICS_STRICT_BUILD") == "1" else []
"""Warnings fail the build in the repository's own set-up (scripts/setup.sh sets it), never on a
user's machine, whose newer compiler may warn about what ours does not."""
SPEC_FILES = ["openapi/v0.yaml", "openapi/meta/oas-3.1-schema-2022-10-07.json"]


class BuildWithSpec(build_py):
    """``build_py`` plus the OpenAPI document copied into the built ``topics_server`` package."""

    def run(self) -> None:
        super().run()
        for name in SPEC_FILES:
            target = Path(self.build_lib) / "topics_server" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(name, target)


class BuildCodec(build_ext):
    """``build_ext``, failing with what to do when a C extension cannot be compiled."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as err:
            raise SystemExit(
                "topics: building the record codec (server/topics_engine/_codec.c) or the broadcast "
                f"send (server/topics_server/broadcast.c) failed: {err}\n"
                "It needs a C compiler and the Python headers: on Debian/Ubuntu "
                "`apt-get install gcc libc6-dev python3-dev`, then install again — or install "
                "the prebuilt wheel instead of the sdist."
            ) from err


setup(
    cmdclass={"build_py": BuildWithSpec, "build_ext": BuildCodec},
    ext_modules=[
        Extension(
            "topics_engine._codec",
            ["server/topics_engine/_codec.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", *STRICT],
        ),
        Extension(
            "topics_server.broadcast",
            ["server/topics_server/broadcast.c"],
            extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", *STRICT],
        ),
    ],
)
