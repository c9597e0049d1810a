"""A process's resources as Linux's ``/proc`` reports them (benchmarks and fault tests sample
the server they started; nothing here is portable beyond Linux)."""

from __future__ import annotations

import os
import time


def rss_bytes(pid: int) -> int:
    """Resident set size (``VmRSS``) of process ``pid``, in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/{pid}/status has no VmRSS")


def open_fds(pid: int) -> int:
    """How many file descriptors process ``pid`` has open."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def cpu_ticks(pid: int) -> int:
    """utime + stime of process ``pid``, in clock ticks (``os.sysconf("SC_CLK_TCK")`` a second)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # the name in parentheses may hold spaces
    return int(fields[11]) + int(fields[12])


def wait_idle(pid: int, window_s: float = 2.0, max_ticks: int | None = None, patience_s: float = 60.0) -> int:
    """Wait until process ``pid`` uses at most ``max_ticks`` CPU ticks over ``window_s`` (default:
    a fifth of the window's ticks, i.e. under 20 % of a core: not a busy loop, which takes a whole
    core); returns the ticks of the last window. Raises ``AssertionError`` if it never settles
    within ``patience_s`` (a busy loop never does)."""
    hz = os.sysconf("SC_CLK_TCK")
    limit = max_ticks if max_ticks is not None else int(hz * window_s / 5)
    deadline = time.monotonic() + patience_s
    while True:
        before = cpu_ticks(pid)
        time.sleep(window_s)
        used = cpu_ticks(pid) - before
        if used <= limit:
            return used
        if time.monotonic() > deadline:
            raise AssertionError(f"the server stays busy: {used} ticks in {window_s} s (limit {limit})")
