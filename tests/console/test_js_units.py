"""The console's JavaScript logic (``console/lib.js``: the SSE parser, Prometheus text, rates,
formatting, scopes, the redrive plan, the config form's body) under Node's own test runner
(``tests/console/lib.test.mjs``); ``scripts/setup.sh`` installs Debian's ``nodejs`` when it is
missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_the_console_logic_passes_its_node_unit_tests() -> None:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        if os.environ.get("CI"):
            raise AssertionError("node is not installed; scripts/setup.sh installs it")
        pytest.skip("node is not installed (scripts/setup.sh installs Debian's nodejs when run as root)")
    done = subprocess.run(
        [node, "--test", str(HERE / "lib.test.mjs")], capture_output=True, text=True, timeout=120, cwd=HERE
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout and "# pass 0" not in done.stdout
