"""A package that installs anywhere (issue 26): the sdist and the wheel a release would build,
the wheel installed into a fresh virtualenv outside the repository, and ``topics serve`` and
the SDK run from there — so a file the server needs at run time but only the checkout has (the
OpenAPI document was one) fails here, not on a user's machine.

The wheel is built from the sdist (``python -m build``'s default), which also proves the C codec
compiles from the sdist; the same sdist built with no working compiler (``CC=false``) stops with
a message that says what to install. ``--no-isolation`` builds with the set-up's own setuptools
(no download); the fresh virtualenv installs the wheel's dependencies as a user's pip would (from
pip's cache after the set-up).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from pathlib import Path

import httpx
import pytest
from topics_server.console import FILES as CONSOLE_FILES
from topics_server.console import INDEX as CONSOLE_INDEX

from tests.server.processes import free_port, wait_ready

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    build = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)]
    # from outside the repository: its build/ directory would shadow the `build` package
    run = subprocess.run(build, cwd=out, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return out


def test_the_sdist_carries_the_spec_and_the_c_sources(dist: Path) -> None:
    (sdist,) = dist.glob("topics-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    sources = {"server/topics_engine/_codec.c", "server/topics_server/broadcast.c"}
    assert {"openapi/v0.yaml", *sources, "setup.py", "pyproject.toml"} <= names


def test_the_wheel_carries_the_spec_the_c_extensions_and_the_sdk_type_marker(dist: Path) -> None:
    (wheel,) = dist.glob("topics-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert {"topics_server/openapi/v0.yaml", "topics/py.typed"} <= names
    # the web console's files, served from the package at /console (topics_server.console)
    console = {f"topics_server/console/{name}" for name in [*CONSOLE_FILES, CONSOLE_INDEX]}
    assert console <= names, console - names
    assert any(n.startswith("topics_engine/_codec.") and n.endswith(".so") for n in names)
    assert any(n.startswith("topics_server/broadcast.") and n.endswith(".so") for n in names)


def test_the_wheel_runs_the_server_and_the_sdk_from_a_fresh_virtualenv(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("topics-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python, topics = env_dir / "bin" / "python", env_dir / "bin" / "topics"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stdout[-4000:] + install.stderr[-4000:]

    workdir = tmp_path / "elsewhere"  # not the repository: nothing of the checkout is at hand
    workdir.mkdir()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOPICS_")}
    env.update(TOPICS_PORT=str(port), TOPICS_THROTTLE="false", PYTHONPATH="")
    with (workdir / "serve.log").open("wb") as log:
        server = subprocess.Popen([str(topics), "serve"], cwd=workdir, env=env, stdout=log, stderr=log)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_ready(base, server)
        assert (workdir / "topics-data").is_dir()  # the embedded default: ./topics-data
        assert httpx.get(f"{base}/v0/openapi.json").json()["openapi"].startswith("3.1")
        page = httpx.get(f"{base}/console")  # the console's page and assets, from the wheel
        assert page.status_code == 200 and "content-security-policy" in page.headers
        for asset in re.findall(r'(?:src|href)="(/console/assets/[^"]+)"', page.text):
            assert httpx.get(f"{base}{asset}").status_code == 200, asset
        script = (
            "import topics, topics_server.spec as spec\n"
            f"with topics.Client('{base}') as c:\n"
            "    c.append('installed', {'n': 1})\n"
            "    print([r.data for r in c.read('installed')])\n"
            "print(spec.SPEC_PATH)\n"
        )
        sdk = subprocess.run(
            [str(python), "-c", script], cwd=workdir, env=env, capture_output=True, text=True
        )
        assert sdk.returncode == 0, sdk.stderr
        printed, spec_path = sdk.stdout.splitlines()
        assert printed == "[{'n': 1}]"
        assert spec_path.startswith(str(env_dir)) and spec_path.endswith("topics_server/openapi/v0.yaml")
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert server.returncode == 0, (workdir / "serve.log").read_text()[-4000:]


def test_without_a_compiler_the_sdist_build_says_what_to_install(dist: Path, tmp_path: Path) -> None:
    (sdist,) = dist.glob("topics-*.tar.gz")
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    (source,) = tmp_path.glob("topics-*")
    env = {**os.environ, "CC": "false"}  # a compiler that always fails
    build = [
        sys.executable,
        "-m",
        "build",
        "--wheel",
        "--no-isolation",
        "--outdir",
        str(tmp_path / "out"),
        ".",
    ]
    run = subprocess.run(build, cwd=source, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode != 0
    output = run.stdout + run.stderr
    assert "topics: building the record codec (server/topics_engine/_codec.c) or the broadcast send" in output
    assert "apt-get install gcc" in output and "prebuilt wheel" in output
