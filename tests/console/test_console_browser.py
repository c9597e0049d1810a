"""The console's pages in headless Chromium against a real server: what an operator sees and does
is what the API then says. Every wait is a condition (Playwright's ``expect``), never a sleep."""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx
from playwright.sync_api import Route, expect

from tests.server.processes import ServerProcess

from .conftest import ADMIN_KEY, READ_KEY, Page

Names = Callable[[str], str]


def _append(api: httpx.Client, topic: str, *records: object, **extra: object) -> None:
    r = api.post(f"/v0/topics/{topic}", json={"records": [{"data": d} for d in records], **extra})
    assert r.status_code in (200, 201), r.text


def _put(api: httpx.Client, topic: str, config: dict[str, object]) -> None:
    r = api.put(f"/v0/topics/{topic}", json=config)
    assert r.status_code in (200, 201), r.text


def _dead_lettered(api: httpx.Client, queue: str, *jobs: object, **extra: object) -> str:
    """``queue`` made a queue with ``jobs`` whose first is claimed and dead-lettered at once (a
    dead letter's ``extra`` fields, e.g. its ``reason``); returns its dead-letter topic."""
    dlq = f"{queue}.dlq"
    _put(api, queue, {"type": "queue", "max_deliveries": 1, "dead_letter": dlq})
    _append(api, queue, *jobs)
    claimed = api.post(f"/v0/topics/{queue}/claim", json={"node": "w", "max": 1}).json()["claimed"]
    seq = claimed[0]["$seq"]
    r = api.post(f"/v0/topics/{queue}/dead_letter", json={"node": "w", "seqs": [seq], **extra})
    assert r.json()["moved"] == [seq], r.text
    return dlq


def _stat(page: object, key: str) -> object:
    return page.locator(f'#queue-counters [data-stat="{key}"]')  # type: ignore[attr-defined]


def test_the_topic_list_shows_seeded_topics_and_marks_queues(
    page: Page, api: httpx.Client, name: Names
) -> None:
    log, queue = name("list.orders"), name("list.jobs")
    _append(api, log, {"n": 1}, {"n": 2})
    _put(api, queue, {"type": "queue"})
    api.put(f"/v0/topics/{log}/consumers/billing", json={})
    p = page.open("/topics")
    expect(p.get_by_text("dev mode")).to_be_visible()
    p.get_by_label("Name prefix").fill("list.")
    rows = p.locator("tbody tr")
    expect(rows).to_have_count(2)
    log_row = p.locator("tr", has=p.get_by_role("link", name=log, exact=True))
    expect(log_row.locator('td[data-label="Type"]')).to_have_text("log")
    expect(log_row.locator('td[data-label="Count"]')).to_have_text("2")
    expect(log_row.locator('td[data-label="Consumer lag"]')).to_have_text("2")
    queue_row = p.locator("tr", has=p.get_by_role("link", name=queue, exact=True))
    expect(queue_row.locator('td[data-label="Type"]')).to_have_text("queue")
    page.shoot("topics")


def test_the_prefix_search_pages_through_many_topics(page: Page, api: httpx.Client, name: Names) -> None:
    prefix = name("paged") + "."
    for i in range(27):
        _put(api, f"{prefix}{i:02d}", {})
    p = page.open(f"/topics?prefix={prefix}")
    expect(p.locator("tbody tr")).to_have_count(25)
    p.get_by_role("button", name="Next →").click()
    expect(p.locator("tbody tr")).to_have_count(2)
    expect(p.get_by_role("link", name=f"{prefix}26")).to_be_visible()
    p.get_by_role("button", name="← Previous").click()
    expect(p.locator("tbody tr")).to_have_count(25)


def test_a_record_appended_over_http_appears_in_the_live_tail(
    page: Page, api: httpx.Client, name: Names
) -> None:
    topic = name("tail")
    _append(api, topic, "before")
    p = page.open(f"/topic/{topic}")
    expect(p.get_by_text(re.compile(r"live: waiting for records after seq 1"))).to_be_visible()
    _append(api, topic, {"hello": "live"})
    row = p.locator('ol.tail li[data-seq="2"]')
    expect(row).to_contain_text('{"hello":"live"}')
    # paused: a new record is counted, not shown, until resumed
    p.get_by_role("button", name="Pause").click()
    _append(api, topic, "while paused")
    expect(p.get_by_role("button", name="Resume (1 new)")).to_be_visible()
    expect(p.locator('ol.tail li[data-seq="3"]')).to_have_count(0)
    p.get_by_role("button", name=re.compile("Resume")).click()
    expect(p.locator('ol.tail li[data-seq="3"]')).to_contain_text("while paused")
    page.shoot("topic-log")


def test_a_long_pause_keeps_the_tail_bounded_and_says_so(page: Page, api: httpx.Client, name: Names) -> None:
    topic = name("tail.bounded")
    _append(api, topic, "first")
    p = page.open(f"/topic/{topic}")
    expect(p.get_by_text(re.compile(r"live: waiting for records after seq 1"))).to_be_visible()
    p.get_by_role("button", name="Pause").click()
    _append(api, topic, *range(501))
    # more arrived than the tail keeps: the button says Resume will not show them all
    expect(p.get_by_role("button", name="Resume (501 new; the newest 500 kept)")).to_be_visible()
    p.get_by_role("button", name=re.compile("Resume")).click()
    expect(p.locator('ol.tail li[data-seq="502"]')).to_be_visible()
    expect(p.locator("ol.tail li")).to_have_count(500)
    expect(p.locator('ol.tail li[data-seq="2"]')).to_have_count(0)


def test_leaving_a_topic_before_it_loads_leaves_nothing_running(
    page: Page, api: httpx.Client, name: Names
) -> None:
    topic = name("left")
    _append(api, topic, "x")
    watches: list[str] = []
    page.page.on("request", lambda r: watches.append(r.url) if "/v0/watch" in r.url else None)
    held: list[Route] = []
    p = page.page
    p.route(re.compile(rf"/v0/topics/{topic}$"), lambda route: held.append(route))  # the topic's GET waits
    page.open(f"/topic/{topic}")
    p.wait_for_function("() => document.querySelector('h1') !== null")
    while not held:  # a condition: the page has asked for the topic
        p.wait_for_timeout(50)
    p.evaluate("location.hash = '#/routers'")
    expect(p.get_by_role("heading", name="Routers", level=1)).to_be_visible()
    with p.expect_response(re.compile(rf"/v0/topics/{topic}$")):
        held[0].continue_()
    # the routers page polls every 3 s: by its next poll a stale tail would have opened a watch
    with p.expect_request(re.compile(r"/v0/routers$"), timeout=15_000):
        pass
    assert watches == []
    expect(p.get_by_role("heading", name="Live tail")).to_have_count(0)


HOSTILE = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'


def test_hostile_record_fields_are_shown_as_text_never_markup(
    page: Page, api: httpx.Client, name: Names
) -> None:
    queue = name("hostile")
    dlq = f"{queue}.dlq"
    _put(api, queue, {"type": "queue", "max_deliveries": 1, "dead_letter": dlq})
    record = {"data": {"html": HOSTILE}, "tag": HOSTILE, "node": HOSTILE, "meta": {"note": HOSTILE}}
    assert api.post(f"/v0/topics/{queue}", json={"records": [record]}).status_code in (200, 201)
    claimed = api.post(f"/v0/topics/{queue}/claim", json={"node": "w", "max": 1}).json()["claimed"]
    r = api.post(
        f"/v0/topics/{queue}/dead_letter", json={"node": "w", "seqs": [claimed[0]["$seq"]], "reason": HOSTILE}
    )
    assert r.status_code == 200, r.text
    p = page.open(f"/topic/{dlq}")
    expect(p.get_by_text(re.compile(r"live: waiting for records after seq 1"))).to_be_visible()
    assert api.post(f"/v0/topics/{dlq}", json={"records": [record]}).status_code in (200, 201)
    expect(p.locator('ol.tail li[data-seq="2"]')).to_contain_text(HOSTILE)  # tag, node, data, meta
    panel = p.locator("section", has=p.get_by_role("heading", name="Dead letters"))
    expect(panel.locator('td[data-label="Reason"]')).to_have_text(HOSTILE)
    browse = p.locator("section", has=p.get_by_role("heading", name="Browse records"))
    browse.get_by_label("Value").fill("1")
    browse.get_by_role("button", name="Read").click()
    expect(browse.locator('td[data-label="Tag"]')).to_have_text([HOSTILE, HOSTILE])
    assert p.evaluate("document.querySelectorAll('main img, main script').length") == 0
    assert p.evaluate("window.pwned === undefined")


def test_the_record_browser_reads_by_seq_tag_and_text(page: Page, api: httpx.Client, name: Names) -> None:
    topic = name("browse")
    records = [
        {"data": {"n": i, "msg": "timeout" if i % 3 == 0 else "ok"}, "tag": f"t{i % 2}"} for i in range(1, 11)
    ]
    assert api.post(f"/v0/topics/{topic}", json={"records": records}).status_code == 201
    p = page.open(f"/topic/{topic}")
    panel = p.locator("section", has=p.get_by_role("heading", name="Browse records"))
    panel.get_by_label("Value").fill("8")
    panel.get_by_role("button", name="Read").click()
    expect(panel.locator("tbody tr")).to_have_count(3)
    panel.get_by_label("Find").select_option("tag")
    panel.get_by_label("Value").fill("t1")
    panel.get_by_role("button", name="Read").click()
    expect(panel.get_by_text("5 with tag t1; searched 10 records")).to_be_visible()
    panel.get_by_label("Find").select_option("text")
    panel.get_by_label("Value").fill("timeout")
    panel.get_by_role("button", name="Read").click()
    expect(panel.get_by_text('3 matching "timeout"; searched 10 records')).to_be_visible()
    expect(panel.locator("tbody tr")).to_have_count(3)


def test_delete_by_seq_states_what_it_deletes_and_deletes_it(
    page: Page, api: httpx.Client, name: Names
) -> None:
    topic = name("delete")
    _append(api, topic, 1, 2, 3, 4)
    p = page.open(f"/topic/{topic}")
    panel = p.locator("section", has=p.get_by_role("heading", name="Delete records"))
    panel.get_by_label("Delete every seq below").fill("3")
    panel.get_by_role("button", name="Delete…").click()
    dialog = p.get_by_role("dialog")
    expect(dialog).to_contain_text(f"Permanently delete from {topic} every record with seq below 3.")
    expect(dialog).to_contain_text("That is seq 1–2: at most 2 of the 4 records.")
    dialog.get_by_role("button", name="Delete").click()
    expect(panel.get_by_text("Deleted 2 records; the earliest seq is now 3.")).to_be_visible()
    assert api.get(f"/v0/topics/{topic}").json()["earliest_seq"] == 3


def test_queue_counters_follow_claims_and_acks(page: Page, api: httpx.Client, name: Names) -> None:
    queue = name("queue")
    _put(api, queue, {"type": "queue"})
    _append(api, queue, {"job": 1}, {"job": 2}, {"job": 3})
    p = page.open(f"/topic/{queue}")
    expect(_stat(p, "ready")).to_have_text("3")
    expect(
        p.get_by_role("alert").filter(has_text="No consumer holds leases and 3 jobs are waiting")
    ).to_be_visible()
    claimed = api.post(f"/v0/topics/{queue}/claim", json={"node": "worker-a", "max": 2}).json()["claimed"]
    expect(_stat(p, "ready")).to_have_text("1")
    expect(_stat(p, "in_flight")).to_have_text("2")
    expect(p.locator("td", has_text="worker-a")).to_be_visible()
    expect(p.get_by_text("No consumer holds leases")).to_have_count(0)
    page.shoot("queue")
    body = {
        "node": "worker-a",
        "seqs": [c["$seq"] for c in claimed],
        "lease_ids": [c["lease_id"] for c in claimed],
    }
    r = api.post(f"/v0/topics/{queue}/ack", json=body)
    assert r.status_code == 200, r.text
    expect(_stat(p, "in_flight")).to_have_text("0")
    expect(p.get_by_text("No consumer holds a lease now.")).to_be_visible()


def test_redrive_moves_a_dead_lettered_job_back(page: Page, api: httpx.Client, name: Names) -> None:
    queue = name("redrive")
    dlq = _dead_lettered(api, queue, {"job": "poison"}, {"job": "fine"}, reason="bad input")
    p = page.open(f"/topic/{queue}")
    panel = p.locator("section", has=p.get_by_role("heading", name=f"Dead letters ({dlq})"))
    expect(panel.locator('td[data-label="Reason"]')).to_have_text("bad input")
    expect(panel.locator('td[data-label="From"]')).to_have_text(queue)
    page.shoot("dead-letters")
    panel.get_by_role("button", name="Redrive 1").click()
    dialog = p.get_by_role("dialog")
    expect(dialog).to_contain_text(f"back to {queue}")
    dialog.get_by_role("button", name="Redrive").click()
    expect(panel.get_by_text("Redriven: 1 job.")).to_be_visible()
    # over the API: the dead-letter topic is empty, and the job is ready in its queue again
    assert api.post(f"/v0/topics/{dlq}/diff", json={"from_seq": 0}).json()["records"] == []
    jobs = api.post(f"/v0/topics/{queue}/diff", json={"from_seq": 0}).json()["records"]
    assert sorted(r["data"]["job"] for r in jobs) == ["fine", "poison"]
    assert api.get(f"/v0/topics/{queue}").json()["queue"]["ready"] == 2


def test_a_plain_log_page_reads_one_record_to_tell_it_is_no_dead_letter_topic(
    page: Page, api: httpx.Client, name: Names
) -> None:
    big = name("big.log")
    _append(api, big, *(["x" * 1000] * 300))
    diffs: list[dict[str, object]] = []
    page.page.on(
        "request",
        lambda r: diffs.append(r.post_data_json) if r.url.endswith(f"/v0/topics/{big}/diff") else None,
    )
    p = page.open(f"/topic/{big}")
    expect(p.get_by_text(re.compile(r"live: waiting for records after seq 300"))).to_be_visible()
    # the dead-letter check has run (the panel is hidden) with a one-record probe, no window
    with p.expect_request(lambda r: r.url.endswith(f"/v0/topics/{big}/diff")):
        pass
    expect(p.get_by_role("heading", name="Dead letters")).to_have_count(0)
    assert diffs and all(d["limit"] == 1 for d in diffs), diffs
    # a dead-letter topic opened directly still shows its jobs
    queue = name("big.jobs")
    p = page.open(f"/topic/{_dead_lettered(api, queue, {'job': 1})}")
    panel = p.locator("section", has=p.get_by_role("heading", name="Dead letters"))
    expect(panel.locator('td[data-label="From"]')).to_have_text(queue)


def test_a_redrive_confirmed_late_skips_a_job_deleted_meanwhile(
    page: Page, api: httpx.Client, name: Names
) -> None:
    queue = name("late")
    dlq = _dead_lettered(api, queue, {"job": "poison"}, {"job": "fine"})
    p = page.open(f"/topic/{queue}")
    panel = p.locator("section", has=p.get_by_role("heading", name=f"Dead letters ({dlq})"))
    panel.get_by_role("button", name="Redrive 1").click()
    dialog = p.get_by_role("dialog")
    expect(dialog).to_contain_text(f"back to {queue}")
    # while the dialog is open, another operator drops the poison job for good
    r = api.post(f"/v0/topics/{dlq}/delete", json={"before_seq": 2})
    assert r.json()["deleted"] == 1, r.text
    dialog.get_by_role("button", name="Redrive").click()
    expect(panel.get_by_text(re.compile(r"Redriven: 0 jobs\. Seq 1 left .* meanwhile"))).to_be_visible()
    jobs = api.post(f"/v0/topics/{queue}/diff", json={"from_seq": 0}).json()["records"]
    assert [j["data"]["job"] for j in jobs] == ["fine"]


def test_a_failing_poll_says_why_and_clears_when_it_recovers(
    page: Page, api: httpx.Client, name: Names
) -> None:
    queue = name("gone")
    _put(api, queue, {"type": "queue"})
    _append(api, queue, {"job": 1})
    p = page.open(f"/topic/{queue}")
    expect(_stat(p, "ready")).to_have_text("1")
    assert api.delete(f"/v0/topics/{queue}").status_code in (200, 204)
    failing = p.get_by_role("status").filter(
        has_text=re.compile(rf'topic_not_found: topic "{queue}" does not exist')
    )
    expect(failing.first).to_be_visible()
    _put(api, queue, {"type": "queue"})
    expect(failing).to_have_count(0)
    expect(_stat(p, "ready")).to_have_text("0")


def test_a_mistyped_topic_url_shows_the_api_answer(page: Page) -> None:
    p = page.open("/topics")
    expect(p.get_by_role("heading", name="Topics")).to_be_visible()
    p.evaluate("location.hash = '#/topic/bad%E0%A4%A'")  # not a valid escape
    expect(p.get_by_role("heading", level=1)).to_have_text("bad%E0%A4%A")
    expect(
        p.get_by_role("status").filter(has_text=re.compile(r"^(topic_not_found|invalid_request): "))
    ).to_be_visible()


def test_a_config_edit_round_trips_and_errors_show_inline(page: Page, api: httpx.Client, name: Names) -> None:
    topic = name("config")
    _put(api, topic, {})
    p = page.open(f"/topic/{topic}")
    ttl = p.locator("#cfg-ttl_ms")
    expect(ttl).to_have_value("0")
    ttl.fill("-5")
    p.get_by_role("button", name="Save config").click()
    expect(p.locator("#err-ttl_ms")).to_contain_text("ttl_ms")
    expect(ttl).to_have_attribute("aria-invalid", "true")
    assert api.get(f"/v0/topics/{topic}").json()["config"]["ttl_ms"] == 0
    ttl.fill("60000")
    p.locator("#cfg-discard").select_option("reject")
    p.get_by_role("button", name="Save config").click()
    expect(p.get_by_text(re.compile(r"Saved: PUT /v0/topics/"))).to_be_visible()
    config = api.get(f"/v0/topics/{topic}").json()["config"]
    assert (config["ttl_ms"], config["discard"]) == (60000, "reject")
    page.shoot("config")


def test_routers_and_server_pages(page: Page, api: httpx.Client, name: Names) -> None:
    source, dest = name("route.src"), name("route.dst")
    _put(api, source, {})
    assert api.put(f"/v0/routers/{name('r')}", json={"source": source, "dest": dest}).status_code in (
        200,
        201,
    )
    _append(api, source, 1, 2)  # a router forwards what is written after it
    p = page.open("/routers")
    row = p.locator("tr", has=p.get_by_role("link", name=source, exact=True))
    expect(row.locator('td[data-label="Forwarded"]')).to_have_text("2")
    expect(row.locator('td[data-label="Lag"]')).to_have_text("0")
    expect(p.get_by_role("img", name=re.compile(f"{source} to {dest}"))).to_be_visible()
    page.shoot("routers")
    p = page.open("/server")
    expect(p.locator('[data-stat="Health"]')).to_have_text("ok")
    expect(p.locator('[data-stat="Ready"]')).to_have_text("ready")
    _append(api, source, 3)
    # two polls of /v0/metrics give the rates: the charts then show numbers
    expect(p.get_by_role("figure").filter(has_text="Bytes retained").locator("strong")).to_have_text(
        re.compile(r"\d")
    )
    expect(p.get_by_role("figure").filter(has_text="Appends / s").locator("strong")).to_have_text(
        re.compile(r"\d"), timeout=15_000
    )
    page.shoot("server")


def test_a_read_only_key_sees_no_write_controls_and_no_forbidden_prefix(
    keyed_page: Page, keyed_server: ServerProcess, name: Names
) -> None:
    allowed, hidden = name("team.orders"), name("other.secret")
    with httpx.Client(base_url=keyed_server.url, headers={"Authorization": f"Bearer {ADMIN_KEY}"}) as admin:
        _append(admin, allowed, {"n": 1})
        _append(admin, hidden, {"n": 2})
        _put(admin, name("team.jobs"), {"type": "queue"})
    p = keyed_page.open("/topics")
    expect(p.get_by_role("heading", name="Sign in")).to_be_visible()
    keyed_page.shoot("sign-in")
    p.get_by_label("API key").fill("not a key")
    p.get_by_role("button", name="Sign in").click()
    expect(p.get_by_text("That key was refused.")).to_be_visible()
    p.get_by_label("API key").fill(READ_KEY)
    p.get_by_role("button", name="Sign in").click()
    expect(p.get_by_text(re.compile(r"^key #\d+: read$"))).to_be_visible()
    expect(p.get_by_role("link", name=allowed)).to_be_visible()
    expect(p.get_by_role("link", name=hidden)).to_have_count(0)
    assert p.evaluate("sessionStorage.getItem('topics.console.key')") == READ_KEY
    keyed_page.shoot("read-only-topics")
    p.get_by_role("link", name=name("team.jobs")).click()
    expect(p.locator('#queue-counters [data-stat="ready"]')).to_have_text("0")
    expect(p.get_by_text("Read-only: changing the config needs the admin scope.")).to_be_visible()
    expect(p.locator("#cfg-ttl_ms")).to_be_disabled()
    for button in ["Save config", "Purge queue…", "Delete…", "Redrive all"]:
        expect(p.get_by_role("button", name=button)).to_have_count(0)
    expect(p.get_by_role("heading", name="Delete records")).to_have_count(0)
    keyed_page.shoot("read-only-queue")
    p.get_by_role("button", name="Sign out").click()
    expect(p.get_by_role("heading", name="Sign in")).to_be_visible()
    assert p.evaluate("sessionStorage.getItem('topics.console.key')") is None


UNLABELLED = """() => [...document.querySelectorAll("input, select, textarea, button, a")]
  .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute("aria-label")
    && !el.textContent.trim() && !el.getAttribute("title"))
  .map((el) => el.outerHTML.slice(0, 120))"""


def test_every_control_is_labelled_and_the_keyboard_reaches_a_topic(
    page: Page, api: httpx.Client, name: Names
) -> None:
    queue = name("kbd.jobs")
    _put(api, queue, {"type": "queue", "max_deliveries": 1, "dead_letter": f"{queue}.dlq"})
    _append(api, queue, {"job": 1})
    claimed = api.post(f"/v0/topics/{queue}/claim", json={"node": "w", "max": 1}).json()["claimed"]
    api.post(f"/v0/topics/{queue}/dead_letter", json={"node": "w", "seqs": [claimed[0]["$seq"]]})
    p = page.open(f"/topics?prefix={queue}")
    link = p.get_by_role("link", name=queue, exact=True)
    expect(link).to_be_visible()
    for _ in range(40):  # Tab through the page until the topic's link has the focus
        if p.evaluate("document.activeElement && document.activeElement.textContent") == queue:
            break
        p.keyboard.press("Tab")
    expect(link).to_be_focused()
    p.keyboard.press("Enter")
    expect(p.get_by_role("heading", level=1)).to_contain_text(queue)
    expect(p.get_by_role("checkbox", name="select dead letter 1")).to_be_visible()
    expect(p.locator("#cfg-ttl_ms")).to_be_visible()
    assert p.evaluate(UNLABELLED) == []
    p.get_by_role("checkbox", name="select dead letter 1").focus()
    p.keyboard.press("Space")
    expect(p.get_by_role("checkbox", name="select dead letter 1")).to_be_checked()
