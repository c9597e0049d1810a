"""Real filesystem faults for tests, as root: a small tmpfs that fills up, and a directory made
read-only by a read-only bind mount (``chmod`` does not stop root). A test that cannot mount
(not root, or no mount permission in its container) is skipped, saying why; every mount is
undone when its block ends."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, check=False)


def _require_mounts() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: mounts a tmpfs / a read-only bind mount")


def _unmount(path: Path) -> None:
    result = _run("umount", str(path))
    if result.returncode != 0:  # still busy (a server that has not exited): lazily
        _run("umount", "-l", str(path))


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``mount -o size=``) mounted on ``path`` (created)."""
    _require_mounts()
    path.mkdir(parents=True, exist_ok=True)
    result = _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")
    try:
        yield path
    finally:
        _unmount(path)


def resize_tmpfs(path: Path, size: str) -> None:
    """Grow (or shrink) the tmpfs on ``path``, its files kept."""
    result = _run("mount", "-o", f"remount,size={size}", str(path))
    assert result.returncode == 0, result.stderr


class ReadOnlyBind:
    """``path`` bind-mounted on itself, switchable between read-only and read-write; unmounted by
    :meth:`release` (what was written before and after shows through unchanged)."""

    def __init__(self, path: Path) -> None:
        _require_mounts()
        self.path = path
        result = _run("mount", "--bind", str(path), str(path))
        if result.returncode != 0:
            pytest.skip(f"cannot bind-mount here: {result.stderr.strip()}")
        self.mounted = True

    def _remount(self, mode: str) -> None:
        result = _run("mount", "-o", f"remount,bind,{mode}", str(self.path))
        assert result.returncode == 0, result.stderr

    def read_only(self) -> None:
        self._remount("ro")

    def read_write(self) -> None:
        self._remount("rw")

    def release(self) -> None:
        if self.mounted:
            _unmount(self.path)
            self.mounted = False
