"""``topics.Relay`` against a real server and a local HTTP endpoint (``webhook_endpoint``) that
answers 200, 500, 429/503 with ``Retry-After``, 400, 410, redirects, or hangs, in turns: acks,
retries with the delay the endpoint asked for (read off the nacks the relay sent), dead-letter
moves with their reason, the stop on 410, the breaker, the signatures (checked by an
independent computation), headers and the redirect policy."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import doctest
import hashlib
import hmac
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest
import topics
import topics._delivery
import topics._signing
from topics import Backoff, Delivery, EndpointGone, Job, Relay
from topics._delivery import Attempt, Endpoint, judge, retry_after_ms

from tests.sdk.webhook_endpoint import WebhookEndpoint
from tests.server.processes import ServerProcess

FAST = Backoff.fixed(50, jitter=0)
SECRET = "whsec_" + base64.b64encode(b"0123456789abcdef01234567").decode()
OTHER_SECRET = "whsec_" + base64.b64encode(b"another key, rotated in!").decode()


@pytest.fixture
def endpoint() -> Iterator[WebhookEndpoint]:
    ep = WebhookEndpoint().start()
    yield ep
    ep.stop()


class RecordingClient(topics.AsyncClient):
    """An ``AsyncClient`` that records the nacks sent through it: ``(seq, delay_ms)``, and sets
    ``moved`` when a dead-letter move went through."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.nacks: list[tuple[int, int]] = []
        self.moved = asyncio.Event()

    async def nack(self, queue: str, node: str, jobs: Any, *, delay_ms: int = 0) -> topics.NackResult:
        self.nacks.extend((j.seq if isinstance(j, Job) else j, delay_ms) for j in jobs)
        return await super().nack(queue, node, jobs, delay_ms=delay_ms)

    async def dead_letter(
        self, queue: str, node: str, jobs: Any, *, reason: str | None = None
    ) -> topics.DeadLetterResult:
        result = await super().dead_letter(queue, node, jobs, reason=reason)
        self.moved.set()
        return result


class GatedEndpoint:
    """An httpx handler (``httpx.MockTransport(GatedEndpoint(…))``) for jobs whose data is
    ``{"name": N, "status": S}``: each POST waits until the test opens its job's gate
    (:meth:`open`), then gets status S. ``arrived`` is set when every name has a POST waiting;
    ``cancelled`` lists the POSTs cut off while waiting."""

    def __init__(self, *names: str) -> None:
        self.gates = {n: asyncio.Event() for n in names}
        self.waiting: set[str] = set()
        self.arrived = asyncio.Event()
        self.cancelled: list[str] = []

    def open(self, name: str) -> None:
        self.gates[name].set()

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        data = orjson.loads(request.content)
        self.waiting.add(data["name"])
        if self.waiting == set(self.gates):
            self.arrived.set()
        try:
            await self.gates[data["name"]].wait()
        except asyncio.CancelledError:
            self.cancelled.append(data["name"])
            raise
        return httpx.Response(data["status"])


@pytest.fixture
async def rclient(server: ServerProcess) -> AsyncIterator[RecordingClient]:
    async with RecordingClient(server.url, retries=2) as c:
        yield c


def make_queue(
    client: topics.Client, name: Callable[[str], str], jobs: list[Any]
) -> tuple[str, str, list[int]]:
    """A queue with a dead-letter topic holding ``jobs`` (data values): (queue, dlq, seqs)."""
    q, dlq = name("hooks"), name("hooks-dlq")
    client.create_topic(dlq)
    client.create_topic(q, type="queue", dead_letter=dlq)
    seqs = client.append_many(q, [{"data": data} for data in jobs]).seqs if jobs else []
    return q, dlq, list(seqs)


def dead_letters(client: topics.Client, dlq: str) -> list[tuple[Any, str]]:
    return [(r.data, (r.meta or {}).get("$dead_letter_reason")) for r in client.read(dlq, include_meta=True)]


# -- no server -------------------------------------------------------------------------------------


def test_the_delivery_and_signing_examples_run() -> None:
    for module in (topics._delivery, topics._signing):
        failed, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert attempted and not failed, module.__name__


def test_what_each_answer_means() -> None:
    def outcome(status: int | None, **kw: Any) -> tuple[str, str | None, int | None]:
        v = judge(Attempt(status, "http://h/", **kw), now=1000.0)
        return v.outcome, v.reason, v.delay_ms

    assert outcome(200) == outcome(204) == outcome(299) == ("delivered", None, None)
    assert outcome(410) == ("gone", "http 410", None)
    assert outcome(429, retry_after="3") == ("retry", "http 429", 3000)
    assert outcome(503, retry_after="Thu, 01 Jan 1970 00:16:50 GMT") == ("retry", "http 503", 10_000)
    assert outcome(503) == outcome(503, retry_after="soon") == ("retry", "http 503", None)
    assert outcome(500, retry_after="3") == ("retry", "http 500", None)  # only 429/503 say when
    assert outcome(502) == ("retry", "http 502", None)
    assert outcome(None, error="timeout after 2 s") == ("retry", "timeout after 2 s", None)
    for status in (400, 401, 403, 404, 409, 422, 499):
        assert outcome(status) == ("dead_letter", f"http {status}", None)
    assert outcome(303) == ("dead_letter", "http 303: a redirect the relay does not follow", None)
    assert outcome(307, refused="a redirect without a Location") == (
        "dead_letter",
        "http 307: a redirect without a Location",
        None,
    )


def test_retry_after_is_seconds_or_an_http_date_capped_at_a_day() -> None:
    assert retry_after_ms("0", 0.0) == 0 and retry_after_ms(" 45 ", 0.0) == 45_000
    assert retry_after_ms("86401", 0.0) == 86_400_000 == retry_after_ms("9" * 40, 0.0)
    now = 1_700_000_000.0
    in_a_minute = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 60))
    assert retry_after_ms(in_a_minute, now) == 60_000
    a_week = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 7 * 86_400))
    assert retry_after_ms(a_week, now) == 86_400_000
    assert retry_after_ms("Thu, 01 Jan 1970 00:00:00 GMT", now) == 0  # in the past: now
    # RFC 9110's other two forms, which a recipient must accept: RFC 850's and asctime's
    assert retry_after_ms(time.strftime("%A, %d-%b-%y %H:%M:%S GMT", time.gmtime(now + 60)), now) == 60_000
    for asctime in ("%a %b %e %H:%M:%S %Y", "%a %b %d %H:%M:%S %Y"):  # "Nov  6" (the RFC's), "Nov 06"
        assert retry_after_ms(time.strftime(asctime, time.gmtime(now + 90)), now) == 90_000, asctime
    assert retry_after_ms("00000000000000000000042", now) == 42_000
    assert retry_after_ms("9" * 5000, now) == 86_400_000  # past Python's int-from-string limit
    malformed = ["²", "1²", "١٢", "１２", "-5", "1.5", "+5", "tomorrow", "Thu, 01 Jan 1970 00:00:00 -0000"]
    malformed += ["Thu, 01 Jan 1970 00:00:00", "Thu Feb 31 00:00:00 1970", "Thu Jan  1 25:00:00 1970"]
    for bad in (None, "", *malformed):  # never an exception: the backoff's delay
        assert retry_after_ms(bad, now) is None, bad


@contextlib.asynccontextmanager
async def raw_endpoint(answer: bytes, *, then: str) -> AsyncIterator[str]:
    """A TCP server on the test's loop that reads a request and writes ``answer`` (raw bytes:
    any framing, right or wrong), then closes the connection (``then="close"``) or holds it
    open until the server stops (``"hold"``). Yields its URL."""
    held: list[asyncio.StreamWriter] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        await reader.readexactly(length)
        writer.write(answer)
        await writer.drain()
        if then == "close":
            writer.close()
        else:
            held.append(writer)

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/hook"
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


BROKEN_BODIES = {
    "a body that does not decode": (
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 9\r\n\r\nnot gzip!",
        "close",
        ("delivered", 200),
    ),
    "a body cut short": (
        b"HTTP/1.1 410 Gone\r\nContent-Length: 1000\r\n\r\nshort",
        "close",
        ("gone", 410),
    ),
    "a body that never ends": (
        b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nslow",
        "hold",
        ("delivered", 200),
    ),
    "a malformed chunk": (
        b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "close",
        ("dead_letter", 400),
    ),
}


@pytest.mark.parametrize("case", list(BROKEN_BODIES))
async def test_the_answer_is_its_status_whatever_its_body_does(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the status line and headers are in, the body is thrown away without a say in the
    verdict: one that fails to decode, ends early or never ends leaves a 2xx delivered (not
    retried, so not sent twice) and a 410 or 4xx what it is (not a retry)."""
    answer, then, expected = BROKEN_BODIES[case]
    monkeypatch.setattr(topics._delivery, "BODY_READ_S", 0.2)  # the wait for a body that never ends
    ep = Endpoint.build("http://127.0.0.1/", None, [], 30, False)
    async with raw_endpoint(answer, then=then) as url, httpx.AsyncClient() as http:
        attempt = await topics._delivery.post(http, dataclasses.replace(ep, url=httpx.URL(url)), [], b"{}")
    assert (attempt.status, attempt.error) == (expected[1], None)
    assert judge(attempt).outcome == expected[0]


def test_the_redirect_policy() -> None:
    """Without follow_redirects: the same origin (scheme, host, port), or http up to https on
    the same host, default ports both."""
    ep = Endpoint.build("https://a.example/hook", None, [], 5, False)
    here = ep.url
    assert str(ep.redirect(here, "/v2/hook")) == "https://a.example/v2/hook"
    assert str(ep.redirect(here, "https://a.example:443/x")) == "https://a.example/x"  # the same port
    assert ep.redirect(here, "https://a.example:8443/x") == (
        "a redirect to https://a.example:8443 not followed (another origin; --follow-redirects allows it)"
    )
    assert ep.redirect(here, "https://b.example/hook") == (
        "a redirect to b.example not followed (another host; --follow-redirects allows it)"
    )
    assert ep.redirect(here, "http://a.example/hook") == (
        "a redirect down to http://a.example/hook not followed (https to http)"
    )
    assert ep.redirect(here, None) == "a redirect without a Location"
    assert ep.redirect(here, "ftp://a.example/x") == "a redirect to ftp://a.example/x (not http or https)"
    plain = Endpoint.build("http://a.example/hook", None, [], 5, False)
    assert str(plain.redirect(plain.url, "https://a.example/hook")) == "https://a.example/hook"  # up
    assert str(plain.redirect(plain.url, "HTTPS://A.example:443/")) == "https://a.example/"
    for elsewhere in ("http://a.example:6379/internal", "https://a.example:8443/", "http://a.example:443/"):
        assert "not followed (another origin" in str(plain.redirect(plain.url, elsewhere)), elsewhere
    on_8080 = Endpoint.build("http://a.example:8080/hook", None, [], 5, False)
    assert "another origin" in str(on_8080.redirect(on_8080.url, "https://a.example/hook"))
    anywhere = Endpoint.build("https://a.example/hook", None, [], 5, True)
    assert str(anywhere.redirect(anywhere.url, "http://b.example/x")) == "http://b.example/x"
    assert str(anywhere.redirect(anywhere.url, "http://a.example:6379/x")) == "http://a.example:6379/x"


@pytest.mark.parametrize(
    "start, to",
    [
        ("http://a.example/hook", "http://a.example:6379/internal"),  # another port
        ("https://a.example/hook", "http://a.example/hook"),  # https down to http
        ("http://a.example/hook", "https://a.example/hook"),  # up: another origin all the same
        ("https://a.example/hook", "https://b.example/hook"),  # another host
    ],
)
async def test_a_hop_to_another_origin_carries_no_credentials_nor_the_users_headers(
    start: str, to: str
) -> None:
    """Credentials and the user's headers (any of them may hold a secret) stay with the origin
    configured; Content-Type, User-Agent and the webhook-* headers (the signature authenticates
    this message, it is no key) go on. A hop within the origin keeps everything."""
    seen: list[tuple[str, dict[str, str]]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((str(request.url), dict(request.headers)))
        if request.url.path == "/hook" and str(request.url) == start:
            return httpx.Response(307, headers={"Location": "/same-origin"})
        if request.url.path == "/same-origin":
            return httpx.Response(308, headers={"Location": to})
        return httpx.Response(204)

    mine = [
        ("Authorization", "Bearer t0ken"),
        ("Cookie", "s=1"),
        ("X-Api-Key", "k3y"),
        ("User-Agent", "me/1"),
    ]
    mine.append(("Content-Type", "application/vnd.x+json"))
    ep = Endpoint.build(start, mine, [SECRET], 5, True)
    sent = [
        *mine,
        ("Proxy-Authorization", "Basic cA=="),
        ("webhook-id", "q:1"),
        ("webhook-signature", "v1,x"),
    ]
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        attempt = await topics._delivery.post(http, ep, sent, b"{}")
    assert (attempt.status, attempt.url) == (204, to)
    [(_, first), (_, same_origin), (url, other)] = seen
    assert url == to
    assert first["authorization"] == same_origin["authorization"] == "Bearer t0ken"
    assert same_origin["x-api-key"] == "k3y" and same_origin["cookie"] == "s=1"
    for dropped in ("authorization", "cookie", "proxy-authorization", "x-api-key"):
        assert dropped not in other, dropped
    assert (other["user-agent"], other["content-type"]) == ("me/1", "application/vnd.x+json")
    assert (other["webhook-id"], other["webhook-signature"]) == ("q:1", "v1,x")


def test_bad_arguments_are_refused_clearly_without_echoing_secrets(client: topics.Client) -> None:
    def refused(**kwargs: Any) -> str:
        args = {"url": "https://example.org/hook", **kwargs}
        with pytest.raises(ValueError) as err:
            Relay(client, "q", args.pop("url"), **args)
        return str(err.value)

    assert "http:// or https://" in refused(url="ftp://example.org/x")
    assert "http:// or https://" in refused(url="example.org/hook")
    assert "whitespace" in refused(url="http://exa mple.org/")
    assert "port 99999 is not 1-65535" in refused(url="http://example.org:99999/")
    assert "Invalid port" in refused(url="http://example.org:abc/")
    assert "does not start with 'whsec_'" in refused(secret="s3cret-value")
    assert "not base64" in refused(secret="whsec_not*base64!")
    assert "nothing follows" in refused(secret="whsec_")
    assert "s3cret" not in refused(secret="s3cret-value")
    assert "set by the relay itself" in refused(headers={"Webhook-Id": "x"})
    assert "set by the relay itself" in refused(headers=[("content-length", "3")])
    assert "bad header name" in refused(headers={"Bad Name": "x"})
    line_break = refused(headers={"X-Token": "abc\r\nInjected: yes"})
    assert "line break" in line_break and "abc" not in line_break
    # RFC 9110 field values: visible ASCII, SP, HTAB (httpx cannot send more, h11 less)
    for value in ("café", "tab\there ok\x7f", "a\x01b", "x\u2028y"):
        message = refused(headers={"X-Name": value})
        assert "not visible ASCII, a space or a tab" in message and value not in message, value
    assert "character 4 " in refused(headers={"X-Name": "caf\u00e9"})
    assert "timeout_s must be > 0" in refused(timeout_s=0)
    with pytest.raises(ValueError, match="concurrency"):
        Relay(client, "q", "https://example.org/", concurrency=0)
    with pytest.raises(ValueError, match="mode"):
        Relay(client, "q", "https://example.org/", mode="pull")  # type: ignore[arg-type]
    relay = Relay(client, "q", "https://user:pw@example.org/hook", secret=SECRET)
    assert "pw" not in repr(relay) and SECRET[6:] not in repr(relay) and "***" in relay.url
    for url in ("https://t0ken@example.org/hook?v=2", "https://t0ken:pw@example.org/hook?v=2"):
        relay = Relay(client, "q", url, headers={"X-Api-Key": "k3y"}, secret=SECRET)
        assert relay.url == "https://***@example.org/hook?v=2"  # the query string as it is
        shown = repr(relay) + repr(relay._endpoint)
        for secret in ("t0ken", "pw", "k3y", SECRET[6:]):
            assert secret not in shown, secret
        assert "X-Api-Key" in repr(relay._endpoint)
    assert repr(topics._signing.WebhookSecret.parse(SECRET)) == "WebhookSecret(<24 bytes>)"


# -- against a server and an endpoint --------------------------------------------------------------


async def test_each_answer_in_turn(
    rclient: RecordingClient, client: topics.Client, name: Callable[[str], str], endpoint: WebhookEndpoint
) -> None:
    """200, 500, 429 + Retry-After (seconds), 400, a hang, 503 + Retry-After (an HTTP-date): the
    deliveries end acked or dead-lettered, and each retry was nacked with the delay the endpoint
    asked for, or the backoff's."""
    jobs = [
        {"answers": ["200"], "name": "ok"},
        {"answers": ["500", "200"], "name": "error"},
        {"answers": ["429:1", "200"], "name": "throttled"},
        {"answers": ["400"], "name": "bad"},
        {"answers": ["hang", "200"], "name": "hangs"},
        {"answers": ["503:-60", "200"], "name": "unavailable"},
    ]
    q, dlq, seqs = make_queue(client, name, jobs)
    ok, error, throttled, bad, hangs, unavailable = seqs
    events: list[Delivery] = []
    relay = Relay(
        rclient, q, endpoint.url(), concurrency=6, timeout_s=2, backoff=FAST, on_delivery=events.append
    )
    result = await relay.drain_async(timeout_s=60)

    assert (result.processed, result.retried, result.dead_lettered, result.lost) == (5, 4, 1, 0)
    assert result.failed == 5 and result.released == 0  # four retries and the permanent failure
    nacks = dict(rclient.nacks)
    assert set(nacks) == {error, throttled, hangs, unavailable}
    assert nacks[error] == nacks[hangs] == 50  # the backoff's
    assert nacks[throttled] == 1000  # Retry-After: 1
    # Retry-After: <an HTTP-date a minute ago>: at once, not the backoff's 50 ms (what is left of
    # a date ahead, in whole seconds, depends on how long the answer took: not exact)
    assert nacks[unavailable] == 0
    assert dead_letters(client, dlq) == [(jobs[3], "http 400")]
    assert client.topic(q).count == 0

    by_seq: dict[int, list[tuple[str, int | None, str | None]]] = {}
    for e in events:
        by_seq.setdefault(e.seq, []).append((e.outcome, e.status, e.reason))
        assert e.attempt == len(by_seq[e.seq]) and e.url == endpoint.url()
    assert by_seq == {
        ok: [("delivered", 200, None)],
        error: [("retry", 500, "http 500"), ("delivered", 200, None)],
        throttled: [("retry", 429, "http 429"), ("delivered", 200, None)],
        bad: [("dead_letter", 400, "http 400")],
        hangs: [("retry", None, "timeout after 2 s"), ("delivered", 200, None)],
        unavailable: [("retry", 503, "http 503"), ("delivered", 200, None)],
    }
    retry_delays = {e.seq: e.delay_ms for e in events if e.outcome == "retry"}
    assert retry_delays == nacks  # what the relay reports is what it sent
    # every attempt of a job carries the same webhook-id
    ids: dict[str, set[str]] = {}
    for r in endpoint.requests("/hook"):
        ids.setdefault(r.data["name"], set()).add(r.headers["webhook-id"])
    assert ids == {job["name"]: {f"{q}:{seq}"} for job, seq in zip(jobs, seqs, strict=True)}


def test_410_dead_letters_the_job_and_stops_the_relay(
    client: topics.Client,
    name: Callable[[str], str],
    endpoint: WebhookEndpoint,
    caplog: pytest.LogCaptureFixture,
) -> None:
    q, dlq, seqs = make_queue(client, name, [{"answers": ["200"]}, {"answers": ["410"]}, {}, {}])
    relay = Relay(client, q, endpoint.url(), concurrency=1, mode="poll")
    with pytest.raises(EndpointGone) as gone:
        relay.run(handle_signals=False)
    assert gone.value.seq == seqs[1] and gone.value.url == endpoint.url()
    assert (gone.value.stats.processed, gone.value.stats.dead_lettered) == (1, 1)
    assert dead_letters(client, dlq) == [({"answers": ["410"]}, "http 410")]
    assert len(endpoint.requests()) == 2  # nothing was sent after the 410
    state = client.topic(q)
    assert state.count == 2 and state.queue is not None and state.queue.in_flight == 0
    loud = [r for r in caplog.records if r.name == "topics.relay" and r.levelname == "ERROR"]
    assert len(loud) == 1 and "410 Gone" in loud[0].message


@pytest.mark.parametrize("first", ["ctrl-c", "410"])
async def test_a_410_and_a_stop_never_cut_the_grace_short(
    first: str, rclient: RecordingClient, client: topics.Client, name: Callable[[str], str]
) -> None:
    """Two deliveries in flight; the user's stop (a Ctrl-C) and another delivery's 410, in
    either order: the stop the 410 causes is graceful only — it is no second stop when the
    user's came first, and it does not make the user's, after it, the second — so the slow
    delivery ends with its answer (acked), not released."""
    q, dlq, [slow, _] = make_queue(
        client, name, [{"name": "slow", "status": 200}, {"name": "gone", "status": 410}]
    )
    ep = GatedEndpoint("slow", "gone")
    events: list[Delivery] = []
    relay = Relay(
        rclient,
        q,
        "http://endpoint.test/hook",
        concurrency=2,
        mode="poll",
        transport=httpx.MockTransport(ep),
        on_delivery=events.append,
    )
    run = asyncio.create_task(relay.run_async())
    await asyncio.wait_for(ep.arrived.wait(), 10)  # both are in flight
    if first == "ctrl-c":
        relay.stop()
    ep.open("gone")
    await asyncio.wait_for(rclient.moved.wait(), 10)  # the 410'd job is dead-lettered
    if first == "410":
        relay.stop()
    await rclient.topic(q)  # a round trip to the server: a hurry would have cut "slow" off by now
    assert ep.cancelled == []
    ep.open("slow")
    with pytest.raises(EndpointGone) as gone:
        await asyncio.wait_for(run, 10)
    s = gone.value.stats
    assert (s.processed, s.dead_lettered, s.released, s.lost) == (1, 1, 0, 0)
    assert [(e.seq, e.outcome) for e in events if e.seq == slow] == [(slow, "delivered")]
    assert ep.cancelled == [] and client.topic(q).count == 0
    assert dead_letters(client, dlq) == [({"name": "gone", "status": 410}, "http 410")]


def test_the_breaker_stops_deliveries_to_a_failing_endpoint(
    client: topics.Client, name: Callable[[str], str], endpoint: WebhookEndpoint
) -> None:
    q, _, _ = make_queue(client, name, [{}] * 5)
    relay = Relay(
        client,
        q,
        endpoint.url("/fixed/500"),
        concurrency=1,
        mode="poll",
        backoff=FAST,
        circuit_breaker=topics.CircuitBreaker(threshold=2, cooldown_s=60),
    )
    events: list[Delivery] = []

    def on_delivery(d: Delivery) -> None:
        events.append(d)
        if len(events) == 2:
            relay.stop()  # the second failure opens the breaker first (the stop is seen after)

    relay.on_delivery = on_delivery
    result = relay.run(handle_signals=False)
    assert (result.breaker, result.breaker_trips, result.failed, result.retried) == ("open", 1, 2, 2)
    assert [e.reason for e in events] == ["http 500", "http 500"]
    assert len(endpoint.requests()) == 2


def test_retry_after_failures_count_for_the_breaker(
    client: topics.Client, name: Callable[[str], str], endpoint: WebhookEndpoint
) -> None:
    q, _, _ = make_queue(client, name, [{"answers": ["429:0"]}, {"answers": ["503:0"]}, {}])
    breaker = topics.CircuitBreaker(threshold=2, cooldown_s=60)
    relay = Relay(client, q, endpoint.url(), concurrency=1, mode="poll", circuit_breaker=breaker)
    events: list[Delivery] = []

    def on_delivery(d: Delivery) -> None:
        events.append(d)
        if len(events) == 2:
            relay.stop()

    relay.on_delivery = on_delivery
    result = relay.run(handle_signals=False)
    assert (result.breaker, result.breaker_trips, result.failed) == ("open", 1, 2)
    assert len(events) == 2 and all(e.status in (429, 503) and e.delay_ms == 0 for e in events)


async def test_deliveries_are_signed_per_standard_webhooks(
    aclient: topics.AsyncClient, client: topics.Client, name: Callable[[str], str], endpoint: WebhookEndpoint
) -> None:
    """Checked as a receiver would, with hmac/base64 here — not the relay's own code."""
    data = [{"text": "héllo 🎉", "n": [1, 2.5, None]}, "plain string", 42]
    q, _, seqs = make_queue(client, name, data)
    relay = Relay(
        aclient,
        q,
        endpoint.url(),
        secret=[SECRET, OTHER_SECRET],
        headers=[("Authorization", "Bearer t0ken"), ("X-Team", "a"), ("X-Team", "b")],
    )
    started = int(time.time())
    assert (await relay.drain_async(timeout_s=30)).processed == 3
    got = sorted(endpoint.requests(), key=lambda r: int(r.headers["webhook-id"].split(":")[1]))
    assert [r.data for r in got] == data
    keys = [base64.b64decode(s.removeprefix("whsec_")) for s in (SECRET, OTHER_SECRET)]
    for r, seq in zip(got, seqs, strict=True):
        msg_id, ts = r.headers["webhook-id"], r.headers["webhook-timestamp"]
        assert msg_id == f"{q}:{seq}"
        assert started - 1 <= int(ts) <= time.time() + 1
        signed = msg_id.encode() + b"." + ts.encode() + b"." + r.body
        expected = [
            "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode() for key in keys
        ]
        assert r.headers["webhook-signature"].split(" ") == expected
        assert r.headers["content-type"] == "application/json"
        assert r.headers["authorization"] == "Bearer t0ken"
        assert r.headers["user-agent"].startswith("topics-python/")
    assert [v for k, v in got[0].header_list if k == "x-team"] == ["a", "b"]  # a repeated header


async def test_without_a_secret_there_is_an_id_but_no_signature(
    aclient: topics.AsyncClient, client: topics.Client, name: Callable[[str], str], endpoint: WebhookEndpoint
) -> None:
    q, _, [seq] = make_queue(client, name, [{"x": 1}])
    relay = Relay(aclient, q, endpoint.url(), headers={"Content-Type": "application/vnd.x+json"})
    assert (await relay.drain_async(timeout_s=30)).processed == 1
    [r] = endpoint.requests()
    assert r.headers["webhook-id"] == f"{q}:{seq}" and "webhook-signature" not in r.headers
    assert r.headers["content-type"] == "application/vnd.x+json"  # the user's header replaces ours


async def relay_one(
    aclient: topics.AsyncClient, client: topics.Client, name: Callable[[str], str], url: str, **kwargs: Any
) -> Delivery:
    """Relays one job (data ``{"n": 1}``) to ``url`` on a fresh queue: its only attempt."""
    q, _, _ = make_queue(client, name, [{"n": 1}])
    events: list[Delivery] = []
    await Relay(aclient, q, url, on_delivery=events.append, **kwargs).drain_async(timeout_s=30)
    [event] = events
    return event


async def test_user_information_in_the_url_is_sent_but_never_shown(
    aclient: topics.AsyncClient, client: topics.Client, name: Callable[[str], str]
) -> None:
    """``https://t0ken@…``: the user name (a token, often) goes as Basic auth, and the
    ``Delivery`` (what ``topics relay`` prints) and ``EndpointGone`` show ``***`` instead."""
    auth: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        auth.append(request.headers["authorization"])
        return httpx.Response(410 if auth[1:] else 204)

    url = "https://t0ken@endpoint.test/hook"
    event = await relay_one(aclient, client, name, url, transport=httpx.MockTransport(answer))
    assert event.url == "https://***@endpoint.test/hook"
    assert auth == ["Basic " + base64.b64encode(b"t0ken:").decode()]
    q, _, _ = make_queue(client, name, [{}])
    with pytest.raises(EndpointGone) as gone:
        await Relay(aclient, q, url, transport=httpx.MockTransport(answer)).run_async()
    assert "t0ken" not in str(gone.value) and gone.value.url == "https://***@endpoint.test/hook"


async def test_same_host_redirects_are_followed_with_the_same_post(
    aclient: topics.AsyncClient, client: topics.Client, name: Callable[[str], str], endpoint: WebhookEndpoint
) -> None:
    hook = endpoint.url("/hook")
    for url in (
        endpoint.url(f"/redirect/308?to={hook}"),  # absolute
        endpoint.url("/redirect/302?to=/hook"),  # relative; a 302 is POSTed again too
        endpoint.url("/redirect/307?to=/redirect/301%3Fto%3D/hook"),  # two hops
    ):
        event = await relay_one(
            aclient, client, name, url, secret=SECRET, headers={"Authorization": "Bearer t"}
        )
        assert (event.outcome, event.status, event.url) == ("delivered", 200, hook), url
    hops = [r for r in endpoint.requests() if r.path.startswith("/redirect/")]
    arrived = endpoint.requests("/hook")
    assert len(hops) == 4 and len(arrived) == 3
    for r in arrived:  # the same POST: body, id, timestamp, signature and the user's headers
        first = next(h for h in hops if h.headers["webhook-id"] == r.headers["webhook-id"])
        assert r.body == first.body == b'{"n":1}'
        for header in ("webhook-timestamp", "webhook-signature", "content-type", "authorization"):
            assert r.headers[header] == first.headers[header]


async def test_redirects_that_are_not_followed_dead_letter_the_job(
    aclient: topics.AsyncClient, client: topics.Client, name: Callable[[str], str], endpoint: WebhookEndpoint
) -> None:
    cases = {
        "/redirect/303?to=/hook": "http 303: a redirect the relay does not follow",
        "/redirect/302?to=ftp://127.0.0.1/x": "http 302: a redirect to ftp://127.0.0.1/x (not http or https)",
        "/loop": "http 307: more than 5 redirects",
    }
    for path, reason in cases.items():
        event = await relay_one(aclient, client, name, endpoint.url(path))
        assert (event.outcome, event.reason) == ("dead_letter", reason)
    assert endpoint.requests("/hook") == [] and len(endpoint.requests("/loop")) == 6


async def test_another_host_only_with_follow_redirects(
    aclient: topics.AsyncClient, client: topics.Client, name: Callable[[str], str], endpoint: WebhookEndpoint
) -> None:
    """127.0.0.2 is another host (the whole of 127/8 is loopback on Linux). Followed, the hop
    drops the Authorization header and keeps the signature."""
    other = WebhookEndpoint(host="127.0.0.2").start()
    try:
        url = endpoint.url(f"/redirect/307?to={other.url('/hook')}")
        headers = {"Authorization": "Bearer t0ken", "X-Team": "a"}
        refused = await relay_one(aclient, client, name, url, headers=headers, secret=SECRET)
        assert (refused.outcome, refused.status, refused.reason) == (
            "dead_letter",
            307,
            "http 307: a redirect to 127.0.0.2 not followed (another host; --follow-redirects allows it)",
        )
        assert other.requests() == []
        followed = await relay_one(
            aclient, client, name, url, headers=headers, secret=SECRET, follow_redirects=True
        )
        assert (followed.outcome, followed.url) == ("delivered", other.url("/hook"))
        [r] = other.requests()
        assert "authorization" not in r.headers and "x-team" not in r.headers
        assert r.headers["webhook-signature"].startswith("v1,")
    finally:
        other.stop()


async def test_another_port_only_with_follow_redirects(
    aclient: topics.AsyncClient, client: topics.Client, name: Callable[[str], str], endpoint: WebhookEndpoint
) -> None:
    """Another port on the same host is another origin (a 307 to http://h:6379/ is no
    same-host hop): refused, or followed with the flag and without the user's headers."""
    other = WebhookEndpoint().start()  # 127.0.0.1 too, another port
    try:
        url = endpoint.url(f"/redirect/307?to={other.url('/hook')}")
        headers = {"Authorization": "Bearer t0ken", "X-Team": "a"}
        refused = await relay_one(aclient, client, name, url, headers=headers)
        assert (refused.outcome, refused.reason) == (
            "dead_letter",
            f"http 307: a redirect to http://127.0.0.1:{other.port} not followed "
            "(another origin; --follow-redirects allows it)",
        )
        assert other.requests() == []
        followed = await relay_one(aclient, client, name, url, headers=headers, follow_redirects=True)
        assert (followed.outcome, followed.url) == ("delivered", other.url("/hook"))
        [r] = other.requests()
        assert "authorization" not in r.headers and "x-team" not in r.headers
        assert r.headers["webhook-id"].startswith("hooks-")
    finally:
        other.stop()
