"""The live tail across what breaks a stream: a server restart (the watch session is gone; the
page's new session is rewound by ``Last-Event-ID`` to where it was, so a record written while it
was away is still shown, once) and a stream that goes silent without closing (a frozen server:
the heartbeat watchdog reopens it). Each test runs its own ``topics serve`` (it stops or freezes
it) and the browser page of ``conftest``."""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.server.processes import ServerProcess

from .conftest import Page, _page

Names = Callable[[str], str]


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[ServerProcess]:
    srv = ServerProcess(tmp_path / "data").start()
    yield srv
    if srv.proc is not None and srv.proc.poll() is None:
        srv.proc.send_signal(signal.SIGCONT)  # never leave a frozen server behind
    srv.stop()


@pytest.fixture
def own_page(browser: Browser, own_server: ServerProcess) -> Iterator[Page]:
    yield from _page(browser, own_server.url)


def _append(base: str, topic: str, data: object) -> None:
    with httpx.Client(base_url=base, timeout=10) as api:
        r = api.post(f"/v0/topics/{topic}", json={"records": [{"data": data}]})
        assert r.status_code in (200, 201), r.text


def test_the_live_tail_shows_records_written_while_the_server_restarted(
    own_page: Page, own_server: ServerProcess, name: Names
) -> None:
    topic = name("restart")
    _append(own_server.url, topic, "before")
    p = own_page.open(f"/topic/{topic}")
    expect(p.get_by_text(re.compile(r"live: waiting for records after seq 1"))).to_be_visible()
    _append(own_server.url, topic, "seen live")
    expect(p.locator('ol.tail li[data-seq="2"]')).to_contain_text("seen live")
    # the page cannot reconnect until the record written while it was away is in
    p.route(re.compile(r"/v0/watch"), lambda route: route.abort())
    own_server.stop()
    own_server.start()
    _append(own_server.url, topic, "while away")
    p.unroute(re.compile(r"/v0/watch"))
    expect(p.locator('ol.tail li[data-seq="3"]')).to_contain_text("while away", timeout=20_000)
    _append(own_server.url, topic, "after")
    expect(p.locator('ol.tail li[data-seq="4"]')).to_contain_text("after")
    expect(p.locator("ol.tail li.rec")).to_have_count(3)  # each record once


def test_a_silent_stream_is_reopened_by_the_heartbeat_watchdog(
    own_page: Page, own_server: ServerProcess, name: Names
) -> None:
    topic = name("silent")
    _append(own_server.url, topic, "before")
    p = own_page.open(f"/topic/{topic}")
    expect(p.get_by_text(re.compile(r"live: waiting for records after seq 1"))).to_be_visible()
    assert own_server.proc is not None
    own_server.proc.send_signal(signal.SIGSTOP)  # the connection stays open; nothing arrives
    try:
        expect(p.get_by_text("reconnecting (no heartbeat)")).to_be_visible(timeout=40_000)
    finally:
        own_server.proc.send_signal(signal.SIGCONT)
    _append(own_server.url, topic, "after the thaw")
    expect(p.locator('ol.tail li[data-seq="2"]')).to_contain_text("after the thaw", timeout=40_000)
    expect(p.locator("ol.tail li.rec")).to_have_count(1)
