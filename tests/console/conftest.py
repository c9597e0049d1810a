"""The web console in a real headless browser against real ``topics serve`` processes.

Playwright for Python drives Debian's Chromium (``/usr/bin/chromium``, installed by
``scripts/setup.sh``; Playwright's own browser download is never used). One browser for the
session; one dev-mode server (no keys) and, for the auth tests, one server with keys. Each test
gets a fresh page (a new context: its own ``sessionStorage``) whose CSP violations and page
errors fail the test. Screenshots go to ``$TOPICS_TEST_ARTIFACTS/console`` (default
``test-artifacts/console`` in the repository, gitignored).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, ConsoleMessage, expect, sync_playwright
from playwright.sync_api import Page as BrowserPage

from tests.server.processes import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("TOPICS_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "console"
SIZES = {"desktop": (1400, 900), "phone": (390, 844)}
TIMEOUT_MS = 10_000
"""How long an ``expect`` waits for the page (generous: a loaded 2-core machine)."""

ADMIN_KEY = "console-admin-key"
READ_KEY = "console-read-key"
KEYS = f"{ADMIN_KEY},{READ_KEY}:read:team."
"""An all-scope key, and a read-only key limited to names starting with ``team.``."""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            raise AssertionError("chromium is not installed; scripts/setup.sh installs it")
        pytest.skip("chromium is not installed (scripts/setup.sh installs Debian's package when run as root)")
    return found


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium(), args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("console-dev")).start()
    yield srv
    srv.stop()


@pytest.fixture(scope="package")
def keyed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path_factory.mktemp("console-keys"), {"TOPICS_API_KEYS": KEYS}).start()
    yield srv
    srv.stop()


@pytest.fixture
def api(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=10) as c:
        yield c


@pytest.fixture
def name() -> Callable[[str], str]:
    """Unique topic names for this test: ``name("orders")`` → ``orders-<hex>``."""
    suffix = uuid.uuid4().hex[:8]
    return lambda base: f"{base}-{suffix}"


class Page:
    """A browser page on one server, with the problems it reports collected."""

    def __init__(self, page: BrowserPage, base: str) -> None:
        self.page = page
        self.base = base
        self.problems: list[str] = []
        page.on("pageerror", lambda err: self.problems.append(f"page error: {err}"))
        page.on("console", self._console)

    def _console(self, message: ConsoleMessage) -> None:
        text = message.text
        if message.type == "error" and "Content Security Policy" in text:
            self.problems.append(f"CSP violation: {text}")

    def open(self, route: str) -> BrowserPage:
        self.page.goto(f"{self.base}/console#{route}")
        return self.page

    def shoot(self, label: str) -> None:
        """A screenshot of the current page at each of :data:`SIZES`."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page = self.page
        for size, (width, height) in SIZES.items():
            page.set_viewport_size({"width": width, "height": height})
            page.wait_for_timeout(100)  # a relayout, not a synchronisation
            page.screenshot(path=str(ARTIFACTS / f"{label}-{size}.png"), full_page=True)
        page.set_viewport_size({"width": 1400, "height": 900})


def _page(browser: Browser, base: str) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    expect.set_options(timeout=TIMEOUT_MS)
    wrapped = Page(context.new_page(), base)
    yield wrapped
    context.close()
    assert not wrapped.problems, wrapped.problems


@pytest.fixture
def page(browser: Browser, server: ServerProcess) -> Iterator[Page]:
    yield from _page(browser, server.url)


@pytest.fixture
def keyed_page(browser: Browser, keyed_server: ServerProcess) -> Iterator[Page]:
    yield from _page(browser, keyed_server.url)
