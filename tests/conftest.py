"""Suite-wide setup.

A shell without job control that runs the suite as a background job (``cmd &`` in a script)
starts it with SIGINT ignored, and an ignored signal stays ignored across ``exec``: the CLIs the
tests start would then ignore the SIGINT the tests send as a Ctrl-C. Catching it here instead
(Python's default handler) gives every child the default disposition again, whatever started
the suite.
"""

from __future__ import annotations

import signal

import pytest


def pytest_configure(config: pytest.Config) -> None:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
