"""One webhook delivery for :class:`topics.Relay`: the endpoint (:class:`Endpoint`, checked once),
the POST with its redirects (:func:`post`, an :class:`Attempt`) and what the answer means
(:func:`judge`, a :class:`Verdict`). No queue here: the relay turns a verdict into an ack, a
nack or a dead-letter move through its :class:`topics.Worker`.

What an answer means (ulak's error classes):

- ``2xx``: delivered;
- ``410 Gone``: the endpoint is gone — the job is dead-lettered and the relay stops;
- ``429`` / ``503``: retry after the response's ``Retry-After`` (seconds or an HTTP-date, at most
  24 h; the backoff's delay when it is missing or malformed);
- any other ``5xx`` (and a status outside 200–599), a timeout, a connection error: retry with
  the backoff;
- any other ``4xx``: dead-lettered at once, reason ``http <status>``;
- a ``3xx`` that is not followed (see below): dead-lettered at once, reason ``http <status>: …``
  — the request as configured can never be delivered, and a redrive after the URL is fixed
  brings the jobs back.

An answer is its status line and headers: its body is read raw and thrown away, and whatever
it does (fail to decode, end early, never end) changes nothing.

Redirects: ``301``, ``302``, ``307`` and ``308`` are followed, the same POST with the same body
and headers (RFC 9110 lets a client keep the method on 301/302; switching to GET would drop
the payload), at most :data:`MAX_REDIRECTS` hops, only to ``http``/``https`` URLs — and, unless
``follow_redirects``, only within the origin (scheme, host and port), or from ``http`` up to
``https`` on the same host, both on their default ports. A hop to another origin (which only
``follow_redirects`` allows, ``https`` down to ``http`` included) carries neither
``Authorization``, ``Cookie`` or ``Proxy-Authorization`` nor any other header the user gave but
``Content-Type`` and ``User-Agent``: they may hold credentials meant for the endpoint configured.
The ``webhook-*`` headers go on: the signature authenticates this one message, it is no key.
``303`` asks for a GET elsewhere and ``300``/``304``/``305`` are no delivery: not followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import email.utils
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import httpx

from ._signing import WebhookSecret

MAX_REDIRECTS = 5
RETRY_AFTER_MAX_S = 86_400
"""A ``Retry-After`` is honoured up to 24 h (ulak's cap; a nack's ``delay_ms`` is at most that)."""
BODY_LIMIT = 64 * 1024
"""At most this much of a response body is read (and thrown away); a longer one closes the
connection instead of being read to its end."""
BODY_READ_S = 1.0
"""How long a response's body may take to be read (and thrown away) once its headers are in;
a slower one closes the connection instead. The answer is the status either way."""
FOLLOWED = frozenset({301, 302, 307, 308})
RETRY_AFTER_STATUSES = frozenset({429, 503})
RESERVED = frozenset(
    {"webhook-id", "webhook-timestamp", "webhook-signature", "host", "content-length", "transfer-encoding"}
)
"""Headers the relay sets itself (or httpx does, from the URL and the body)."""
CREDENTIALS = frozenset({"authorization", "cookie", "proxy-authorization"})
"""Dropped on a hop to another origin (and so is every other header the user gave, but
:data:`KEPT_ACROSS_ORIGINS`)."""
KEPT_ACROSS_ORIGINS = frozenset({"content-type", "user-agent"})
"""User headers that describe the body and the client, not a credential: kept on any hop."""
DEFAULT_PORTS = {"http": 80, "https": 443}
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e]*")
"""RFC 9110's field-value, less ``obs-text``: visible ASCII, SP and HTAB. Anything else
cannot be sent (httpx refuses non-ASCII, h11 control characters) — on every delivery."""

Outcome = Literal["delivered", "retry", "dead_letter", "gone"]


def parse_header(text: str) -> tuple[str, str]:
    """A ``NAME:VALUE`` argument (``--header``) as ``(name, value)``, both stripped;
    :class:`ValueError` if it is not one.

    >>> parse_header("Authorization: Bearer abc")
    ('Authorization', 'Bearer abc')
    """
    name, colon, value = text.partition(":")
    if not colon:
        raise ValueError("a header is NAME:VALUE (this one has no ':')")
    return check_header(name.strip(), value.strip())


def check_header(name: str, value: str) -> tuple[str, str]:
    """``(name, value)`` if the header may be sent as given — a token for a name, visible ASCII,
    spaces and tabs for a value; :class:`ValueError` otherwise (the value is never echoed: it
    may be a credential)."""
    if not _TOKEN.fullmatch(name):
        raise ValueError(f"bad header name {name!r:.60}: letters, digits and !#$%&'*+-.^_`|~ only")
    if name.lower() in RESERVED:
        raise ValueError(f"header {name!r} is set by the relay itself")
    if any(c in value for c in "\r\n\0"):
        raise ValueError(f"header {name!r}: the value has a line break or a NUL")
    if not _FIELD_VALUE.fullmatch(value):
        at = next(i for i, c in enumerate(value) if not _FIELD_VALUE.fullmatch(c)) + 1
        raise ValueError(
            f"header {name!r}: character {at} of the value is not visible ASCII, a space or a tab "
            "(RFC 9110 field values; encode other text, e.g. percent-encoded)"
        )
    return name, value


def retry_after_ms(value: str | None, now: float) -> int | None:
    """A ``Retry-After`` value — delay-seconds or an HTTP-date, in any of RFC 9110's three
    forms — as milliseconds from ``now`` (seconds since the epoch), capped at 24 h, 0 for a date
    in the past; ``None`` when absent or malformed (the backoff decides then).

    >>> retry_after_ms("120", 0.0), retry_after_ms("999999", 0.0), retry_after_ms("soon", 0.0)
    (120000, 86400000, None)
    >>> retry_after_ms("Thu, 01 Jan 1970 00:00:30 GMT", 10.0)
    20000
    >>> retry_after_ms("Thu Jan  1 00:00:30 1970", 10.0)    # asctime's form: GMT too
    20000
    """
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # str.isdigit alone takes "²" and other scripts' digits
        digits = value.lstrip("0")
        # no int() of a long string (Python refuses > 4300 digits): 7 digits are past the cap
        seconds = float(RETRY_AFTER_MAX_S if len(digits) > 6 else min(int(digits or "0"), RETRY_AFTER_MAX_S))
    else:
        when = http_date(value)
        if when is None:
            return None
        seconds = min(max(0.0, when - now), RETRY_AFTER_MAX_S)
    return int(seconds * 1000)


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_ASCTIME = re.compile(
    r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (" + "|".join(_MONTHS) + r") ( ?\d|\d\d) (\d\d):(\d\d):(\d\d) (\d{4})",
    re.ASCII,
)


def http_date(value: str) -> float | None:
    """An HTTP-date as seconds since the epoch, ``None`` if ``value`` is none: the
    ``IMF-fixdate`` (``Sun, 06 Nov 1994 08:49:37 GMT``), the obsolete RFC 850 form
    (``Sunday, 06-Nov-94 08:49:37 GMT``) and asctime's (``Sun Nov  6 08:49:37 1994``, GMT), which
    RFC 9110 has recipients accept; also an RFC 5322 date with a numeric zone. A date without a
    zone, or ``-0000`` (RFC 5322's "unknown"), is none.

    >>> [http_date(d) for d in ("Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT",
    ...                         "Sun Nov  6 08:49:37 1994", "Sun, 06 Nov 1994 08:49:37")]
    [784111777.0, 784111777.0, 784111777.0, None]
    """
    asctime = _ASCTIME.fullmatch(value)
    if asctime is not None:
        month, day, hour, minute, second, year = asctime.groups()
        try:
            parts = (int(year), _MONTHS.index(month) + 1, int(day), int(hour), int(minute), int(second))
            return datetime.datetime(*parts, tzinfo=datetime.UTC).timestamp()
        except ValueError:  # 31 Feb, 25:00…
            return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # no zone, or "-0000": RFC 5322's unknown zone; HTTP-dates are GMT
        return None
    return when.timestamp()


def endpoint_url(url: str) -> httpx.URL:
    """``url`` if it is an absolute ``http``/``https`` URL with a host (and a port, if given,
    up to 65535); :class:`ValueError` otherwise."""
    if not isinstance(url, str) or any(c.isspace() for c in url):
        raise ValueError(f"bad endpoint URL {shown(url)}: it has whitespace in it")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as err:
        raise ValueError(f"bad endpoint URL {shown(url)}: {err}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"the endpoint URL must be http:// or https:// with a host, got {shown(url)}")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise ValueError(f"bad endpoint URL {shown(url)}: port {parsed.port} is not 1-65535")
    return parsed


def origin(url: httpx.URL) -> tuple[str, str, int]:
    """``(scheme, host, port)``, the port made explicit.

    >>> origin(httpx.URL("https://a.example/x")) == origin(httpx.URL("https://a.example:443/y"))
    True
    """
    return url.scheme, url.host, url.port or DEFAULT_PORTS[url.scheme]


def shown(url: str | httpx.URL) -> str:
    """A URL for messages and logs: its user information (a user name is often a token too,
    not only a password) becomes ``***``. The query string is shown as it is: a secret belongs
    in a header, not there.

    >>> shown("https://user:pw@example.org/hook?v=2"), shown("https://t0ken@example.org/")
    ('https://***@example.org/hook?v=2', 'https://***@example.org/')
    """
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return repr(str(url)[:80])
    if parsed.userinfo:
        parsed = parsed.copy_with(userinfo=b"***")
    return str(parsed)


@dataclass(frozen=True, slots=True, repr=False)
class Endpoint:
    """Where and how deliveries are sent: the URL, the extra headers (sent as given), the
    secrets that sign them, the total time a delivery may take (all hops) and the redirect
    policy. Build it with :meth:`build`, which checks everything. Its ``repr`` shows no
    secret: the URL as :func:`shown`, the headers' names only.

    >>> Endpoint.build("https://u:p@example.org/", {"Authorization": "Bearer t0ken"}, [], 5, False)
    Endpoint(url='https://***@example.org/', headers=['Authorization'], secrets=0, timeout_s=5.0, ...)
    """

    url: httpx.URL
    headers: tuple[tuple[str, str], ...]
    secrets: tuple[WebhookSecret, ...]
    timeout_s: float
    follow_redirects: bool

    @classmethod
    def build(
        cls,
        url: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None,
        secrets: Iterable[str],
        timeout_s: float,
        follow_redirects: bool,
    ) -> Endpoint:
        if not timeout_s > 0:
            raise ValueError("timeout_s must be > 0")
        pairs = headers.items() if isinstance(headers, Mapping) else (headers or ())
        checked = tuple(check_header(str(name).strip(), str(value).strip()) for name, value in pairs)
        parsed = tuple(WebhookSecret.parse(s) for s in secrets)
        return cls(endpoint_url(url), checked, parsed, float(timeout_s), bool(follow_redirects))

    def __repr__(self) -> str:
        return (
            f"Endpoint(url={shown(self.url)!r}, headers={[name for name, _ in self.headers]!r}, "
            f"secrets={len(self.secrets)}, timeout_s={self.timeout_s!r}, "
            f"follow_redirects={self.follow_redirects!r})"
        )

    def redirect(self, current: httpx.URL, location: str | None) -> httpx.URL | str:
        """Where a ``Location`` leads from ``current``, or why it is not followed."""
        if not location:
            return "a redirect without a Location"
        try:
            target = current.join(location.strip())
        except httpx.InvalidURL:
            return "a redirect to a malformed Location"
        if target.scheme not in ("http", "https") or not target.host:
            return f"a redirect to {shown(target)} (not http or https)"
        if self.follow_redirects or origin(target) == origin(current):
            return target
        if target.host != current.host:
            return f"a redirect to {target.host} not followed (another host; --follow-redirects allows it)"
        if current.scheme == "https" and target.scheme == "http":
            return f"a redirect down to {shown(target)} not followed (https to http)"
        scheme, host, port = origin(target)
        if origin(current) == ("http", host, 80) and (scheme, port) == ("https", 443):
            return target  # up to https on the same host, default ports both
        where = f"{scheme}://{host}:{port}"
        return f"a redirect to {where} not followed (another origin; --follow-redirects allows it)"

    def across_origins(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """``headers`` for a hop to another origin: without credentials and the user's other
        headers (see the module's doc)."""
        given = {name.lower() for name, _ in self.headers} - KEPT_ACROSS_ORIGINS
        return [(k, v) for k, v in headers if k.lower() not in CREDENTIALS and k.lower() not in given]


@dataclass(frozen=True, slots=True)
class Attempt:
    """What one delivery attempt got: the last answer's ``status`` (``None``: no answer, see
    ``error``), its ``Retry-After``, the URL that answered, and why a redirect was not followed
    (``refused``)."""

    status: int | None
    url: str
    error: str | None = None
    retry_after: str | None = None
    refused: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    """What an :class:`Attempt` means: the ``outcome``, the ``reason`` (``None`` when delivered:
    ``http <status>``, a timeout, a connection error…), and for a retry the delay the endpoint
    asked for (``None``: the backoff's)."""

    outcome: Outcome
    reason: str | None = None
    delay_ms: int | None = None


async def post(
    http: httpx.AsyncClient, endpoint: Endpoint, headers: list[tuple[str, str]], body: bytes
) -> Attempt:
    """POSTs ``body`` with ``headers`` (in order; a name may repeat) to the endpoint, following
    redirects as its policy allows, all within ``endpoint.timeout_s``. An answer counts once its
    status line and headers are in: what its body does after that (a bad encoding, a connection
    closed early, a trickle past the timeout) changes nothing (:func:`_discard`)."""
    url = endpoint.url
    deadline = asyncio.get_running_loop().time() + endpoint.timeout_s
    for hop in range(MAX_REDIRECTS + 1):
        try:
            rsp = await _exchange(http, url, headers, body, deadline)
        except (TimeoutError, httpx.TimeoutException):
            return Attempt(None, str(url), error=f"timeout after {endpoint.timeout_s:g} s")
        except httpx.TransportError as exc:
            return Attempt(None, str(url), error=f"connection error ({type(exc).__name__}: {exc})"[:300])
        status = rsp.status_code
        if status not in FOLLOWED:
            return Attempt(status, str(url), retry_after=rsp.headers.get("retry-after"))
        if hop == MAX_REDIRECTS:
            return Attempt(status, str(url), refused=f"more than {MAX_REDIRECTS} redirects")
        target = endpoint.redirect(url, rsp.headers.get("location"))
        if isinstance(target, str):
            return Attempt(status, str(url), refused=target)
        if origin(target) != origin(url):
            headers = endpoint.across_origins(headers)
        url = target
    raise AssertionError("unreachable: the loop returns")  # pragma: no cover


async def _exchange(
    http: httpx.AsyncClient, url: httpx.URL, headers: list[tuple[str, str]], body: bytes, deadline: float
) -> httpx.Response:
    """One request: the response as soon as its headers are in (by ``deadline``, the loop's
    clock), its body then discarded and the response closed."""
    request = http.build_request("POST", url, content=body, headers=headers)
    async with asyncio.timeout_at(deadline):
        rsp = await http.send(request, stream=True)
    try:
        await _discard(rsp, deadline)
    finally:
        with contextlib.suppress(httpx.HTTPError):
            await rsp.aclose()
    return rsp


async def _discard(rsp: httpx.Response, deadline: float) -> None:
    """Reads the body as it came (``aiter_raw``: nothing to decode, so nothing to fail on) and
    throws it away, so the connection can be reused — at most :data:`BODY_LIMIT` bytes within
    :data:`BODY_READ_S` (and by ``deadline``). A body longer, slower, cut short or already read
    is left: the connection is closed instead. Never raises but for a cancellation: the status
    is the verdict."""
    loop = asyncio.get_running_loop()
    size = 0
    try:
        async with asyncio.timeout_at(min(deadline, loop.time() + BODY_READ_S)):
            async for chunk in rsp.aiter_raw():
                size += len(chunk)
                if size > BODY_LIMIT:
                    return
    except (TimeoutError, httpx.HTTPError, httpx.StreamError):
        return


def judge(attempt: Attempt, now: float | None = None) -> Verdict:
    """What ``attempt`` means (the module's table). ``now``: seconds since the epoch, for an
    HTTP-date ``Retry-After`` (default: the clock).

    >>> judge(Attempt(204, "u")), judge(Attempt(400, "u")).reason, judge(Attempt(410, "u")).outcome
    (Verdict(outcome='delivered', reason=None, delay_ms=None), 'http 400', 'gone')
    >>> judge(Attempt(429, "u", retry_after="7"))
    Verdict(outcome='retry', reason='http 429', delay_ms=7000)
    """
    status = attempt.status
    if status is None:
        return Verdict("retry", attempt.error or "no answer")
    if attempt.refused is not None:
        return Verdict("dead_letter", f"http {status}: {attempt.refused}")
    if 200 <= status < 300:
        return Verdict("delivered")
    reason = f"http {status}"
    if status == 410:
        return Verdict("gone", reason)
    if status in RETRY_AFTER_STATUSES:
        when = time.time() if now is None else now
        return Verdict("retry", reason, retry_after_ms(attempt.retry_after, when))
    if 300 <= status < 400:
        return Verdict("dead_letter", f"{reason}: a redirect the relay does not follow")
    if 400 <= status < 500:
        return Verdict("dead_letter", reason)
    return Verdict("retry", reason)
