"""The ``/v0/ws`` data plane (docs/WEBSOCKET.md): JSON commands in, JSON frames out.

:class:`WebSocketSession` is transport-independent: a transport (the native server in ``http``,
or ``asgi``) completes the upgrade, feeds it each complete client message
(:meth:`WebSocketSession.received`), runs :meth:`WebSocketSession.run` — the delivery loop, on
the shared :class:`StreamLoop` — and calls :meth:`WebSocketSession.close` when the socket ends.
Its :class:`MessageSink` sends one text message per frame.

Commands are decoded with types compiled from the spec's own schemas (``WatchRequest`` for
``subscribe``, ``AppendRequest`` for ``publish``), so a field means on the socket what it means
over HTTP, and a command with an unknown or ill-typed field is refused like an HTTP body would
be. Every failure answers with an ``error`` frame carrying the string code the equivalent HTTP
request would get (docs/WEBSOCKET.md); nothing is dropped silently.

Subscriptions are the watch engine's (``topics_engine.watch``): a socket holds several, each
topic in at most one (subscribing a topic again moves it); at most ``TOPICS_MAX_WATCH_TOPICS``
topics per socket. Appends take the HTTP write path, and an ``ack`` goes out once the write may
be acknowledged (after its fsync on an ``fsync`` topic) — later commands are not held up by it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import copy
import logging
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import orjson
from topics_engine.coldreads import ColdRead, ColdReads
from topics_engine.errors import InvalidRequest, Throttled
from topics_engine.watch import Position, Subscription

from . import wire
from .access import forbid_name, forbid_scopes
from .accounting import MeteredSink, StreamEnded
from .admission import Slot
from .auth import Principal
from .bodies import BodyCompiler, BodyDecoder, check_utf8, fields_set
from .handlers.records import append
from .responses import await_ack
from .spec import load_document, routing_document
from .streams import SharedStep, Sink, SlowConsumer, StreamLoop
from .subscriptions import lagged, positions_body, records_in, topic_starts, watch_options
from .throttle import priority_of
from .watchframes import ws_frame

if TYPE_CHECKING:
    from .context import ServerContext

log = logging.getLogger("topics.ws")

PING_INTERVAL_MS = 15_000
"""A WebSocket ping goes out after this long without any frame (keeps proxies from timing the
socket out; browsers answer pings by themselves)."""
CLOSE_TRY_AGAIN = 1013
"""Close code for a slow consumer (RFC 6455 §7.4.1 registry: "try again later")."""
CLOSE_GOING_AWAY = 1001
"""Close code when the server's graceful shutdown ends the socket (RFC 6455 §7.4.1: "going
away")."""


class MessageSink(Sink, Protocol):
    def ping(self, payload: bytes) -> None:
        """Send a WebSocket ping."""

    def close(self, code: int, reason: str) -> None:
        """Start the closing handshake."""


@dataclass
class WebSocketReply:
    """What the ``open_websocket`` handler returns: the transport completes the upgrade and
    runs the :class:`WebSocketSession` :meth:`open` makes on the socket."""

    ctx: ServerContext
    principal: Principal | None = None
    """The key that opened the socket: each command is authorized against it."""
    slot: Slot | None = None
    """The socket's stream slot (a resource cap), released when the session closes."""
    ended: StreamEnded | None = None
    """The request accounting's hook: called once when the session closes, with the bytes of
    the frames sent when ``metered`` (else 0)."""
    metered: bool = False
    """Count the bytes sent (the access log is on)."""

    def open(self, sink: MessageSink) -> WebSocketSession:
        ended = self.ended
        if ended is None:
            return WebSocketSession(self.ctx, sink, self.principal, self.slot)
        meter = MeteredSink(sink) if self.metered else None
        return WebSocketSession(
            self.ctx,
            sink if meter is None else meter,
            self.principal,
            self.slot,
            lambda: ended(0 if meter is None else meter.bytes),
        )


_OWS = " \t"
"""HTTP's optional whitespace around header values and list items (RFC 9110 §5.6.3)."""


def check_upgrade(header: Callable[[str], str | None]) -> None:
    """400 unless the request is a WebSocket version-13 upgrade (a plain ``GET /v0/ws``, or
    one with a malformed key, is not): exactly the header patterns of the document's
    ``components.pathItems.WebSocket``."""
    upgrade = (header("upgrade") or "").lower()
    connection = {t.strip(_OWS) for t in (header("connection") or "").lower().split(",")}
    if "websocket" not in upgrade or "upgrade" not in connection:
        raise InvalidRequest(
            "GET /v0/ws opens a WebSocket over HTTP/1.1: send Upgrade: websocket and Connection: "
            "Upgrade (with Sec-WebSocket-Key and Sec-WebSocket-Version: 13); WebSocket over HTTP/2 "
            "(RFC 8441) is not served",
            {"field": "upgrade"},
        )
    if (header("sec-websocket-version") or "").strip(_OWS) != "13":
        raise InvalidRequest("Sec-WebSocket-Version must be 13", {"field": "sec-websocket-version"})
    sent = (header("sec-websocket-key") or "").strip(_OWS)
    try:
        key = base64.b64decode(sent, validate=True)
    except binascii.Error:
        key = b""
    if len(key) != 16 or base64.b64encode(key).decode() != sent:  # canonical, as the pattern says
        raise InvalidRequest(
            "Sec-WebSocket-Key must be 16 random bytes in base64", {"field": "sec-websocket-key"}
        )


def text_frame_head(size: int) -> bytes:
    """The header of one unmasked, final text frame of ``size`` payload bytes (RFC 6455 §5.2):
    a server's frames are never masked and never compressed (docs/DECISIONS.md, "Response
    compression")."""
    if size < 126:
        return bytes((0x81, size))
    if size < 1 << 16:
        return bytes((0x81, 126)) + size.to_bytes(2, "big")
    return bytes((0x81, 127)) + size.to_bytes(8, "big")


# -- commands ------------------------------------------------------------------------------------


class _Command(msgspec.Struct):
    """Just enough of any command to route it (the rest is decoded per op)."""

    op: str
    request_id: str | None = None


_COMMAND = msgspec.json.Decoder(_Command)

_ENVELOPE = {
    "op": {"type": "string"},
    "request_id": {"type": "string", "maxLength": 256},
}


@cache
def _decoders() -> dict[str, BodyDecoder]:
    """Per-op decoders compiled from the spec's schemas plus the socket's own fields."""
    doc = load_document()
    schemas = doc["components"]["schemas"]
    compiler = BodyCompiler(doc)

    def closed(properties: dict[str, Any], required: list[str]) -> BodyDecoder:
        schema = {
            "type": "object",
            "additionalProperties": False,
            "properties": properties,
            "required": required,
        }
        return compiler.decoder(schema, "WsCommand")

    watch = copy.deepcopy(schemas["WatchRequest"]["properties"])
    for not_on_socket in ("cursor", "heartbeat_ms"):
        watch.pop(not_on_socket)
    start = schemas["WatchTopicOptions"]["properties"]
    topic = {"type": "string", "minLength": 1}
    return {
        "subscribe": closed({**_ENVELOPE, **watch, "topic": topic, **start}, ["op"]),
        "unsubscribe": closed({**_ENVELOPE, "topic": topic}, ["op", "topic"]),
        "publish": closed(
            {
                **_ENVELOPE,
                **schemas["AppendRequest"]["properties"],
                "topic": topic,
                "return_seqs": {"type": "boolean"},
            },
            ["op", "topic", "records"],
        ),
        "ping": closed(_ENVELOPE, ["op"]),
    }


@cache
def command_scopes() -> dict[str, frozenset[str]]:
    """The scopes each command needs, from ``x-command-scopes`` of ``GET /v0/ws`` in the spec
    (``publish_with_config``: a publish that carries ``config``)."""
    declared = routing_document()["paths"]["/v0/ws"]["get"]["x-command-scopes"]
    return {op: frozenset(scopes) for op, scopes in declared.items()}


def _authorize(principal: Principal, op: str, body: Any) -> None:
    """403 ``forbidden`` unless the key may run this command on the topics it names."""
    unset = msgspec.UNSET
    names: list[tuple[str, str]] = []
    if op == "publish":
        config = fields_set(body.config) if body.config not in (unset, None) else None
        forbid_scopes(principal, command_scopes()["publish_with_config" if config else op], op)
        names.append(("topic", body.topic))
        if config and isinstance(config.get("dead_letter"), str):
            names.append(("config.dead_letter", config["dead_letter"]))
    else:
        forbid_scopes(principal, command_scopes()[op], op)
        if op == "subscribe":
            names.extend(("topics", n) for n in (body.topics if body.topics is not unset else {}))
            if body.topic is not unset:
                names.append(("topic", body.topic))
    for where, name in names:
        forbid_name(principal, name, where)


UNKNOWN_COMMAND = "unknown"
"""How the accounting names a message that is no command (not JSON, no or an unknown ``op``)."""


class CommandError(Exception):
    def __init__(self, request_id: str | None, err: BaseException, command: str = UNKNOWN_COMMAND) -> None:
        super().__init__(str(err))
        self.request_id = request_id
        self.err = err
        self.command = command


def error_frame(request_id: str | None, err: BaseException) -> bytes:
    """``{"op":"error","request_id"?,"code","message","detail"?}`` with the HTTP error's code."""
    topics_err = wire.to_topics_error(err)
    frame: dict[str, Any] = {"op": "error"}
    if request_id is not None:
        frame["request_id"] = request_id
    frame["code"] = topics_err.code
    frame["message"] = str(topics_err)
    if topics_err.detail:
        frame["detail"] = topics_err.detail
    return orjson.dumps(frame)


# -- the session ---------------------------------------------------------------------------------


class WebSocketSession:
    def __init__(
        self,
        ctx: ServerContext,
        sink: MessageSink,
        principal: Principal | None = None,
        slot: Slot | None = None,
        ended: Callable[[], None] | None = None,
    ) -> None:
        self.ctx = ctx
        self.sink = sink
        self.principal = principal
        self.slot = slot
        self.ended = ended
        """Run once by :meth:`close` (the request accounting)."""
        self.subs: list[Subscription] = []
        self.loop = StreamLoop(
            sink, ctx.engine.clock, PING_INTERVAL_MS, self._heartbeat, on_lagging=lambda: lagged(self.subs)
        )
        self.by_topic: dict[str, Subscription] = {}
        self.pending_acks: set[asyncio.Task[None]] = set()
        self.closed = False
        self.shared_at: Position | None = None
        """The position :meth:`share_key` last found to share (read and committed by the group)."""
        self.cold: dict[Subscription, ColdReads] = {}
        """Per subscription, the cold records its last read missed and those loaded for it:
        loaded by the delivery task (never in a pump), pinned until that subscription's read
        goes through (another one's read must not release them)."""

    # -- incoming -------------------------------------------------------------------------------

    def received(self, message: bytes, text: bool) -> None:
        """Handle one complete client message (commands are answered in order of arrival;
        a publish's ``ack`` may follow later frames when it waits for its fsync)."""
        if self.closed:
            return
        requests = self.ctx.requests
        try:
            if not text:
                raise CommandError(None, InvalidRequest("binary messages are not supported; send JSON text"))
            command = self._command(message)
        except CommandError as exc:
            err = wire.to_topics_error(exc.err)
            requests.command(exc.command, wire.status_of(err))
            self._send(error_frame(exc.request_id, err))
            return
        requests.command(command, 200)

    def _command(self, message: bytes) -> str:
        """Run one command; returns its ``op`` (:class:`CommandError` if it fails)."""
        try:
            head = _COMMAND.decode(message)
        except UnicodeDecodeError:
            raise CommandError(None, InvalidRequest("a text message must be valid UTF-8")) from None
        except (msgspec.DecodeError, msgspec.ValidationError) as err:
            raise CommandError(
                None,
                InvalidRequest(f'a command is a JSON object with an "op" string: {err}', {"field": "op"}),
            ) from None
        request_id = head.request_id
        if not message.isascii():  # a text message is UTF-8 (RFC 6455 §5.6), and so is JSON
            try:
                check_utf8(message)
            except InvalidRequest as err:
                raise CommandError(request_id, err) from None
        decoder = _decoders().get(head.op)
        if decoder is None:
            raise CommandError(
                request_id,
                InvalidRequest(
                    f"unknown op {head.op!r}; one of subscribe, unsubscribe, publish, ping", {"field": "op"}
                ),
            )
        try:
            body = decoder.decode(message)
            if self.principal is not None:
                _authorize(self.principal, head.op, body)
            getattr(self, f"_{head.op}")(body, request_id)
        except Exception as err:  # noqa: BLE001 — every failure becomes an error frame
            raise CommandError(request_id, err, head.op) from None
        return head.op

    def _heartbeat(self, now_ms: int) -> None:
        self.sink.ping(b"%d" % now_ms)

    def _send(self, frame: bytes) -> None:
        if not self.sink.closed:
            self.loop.write(frame)

    def _ping(self, body: Any, request_id: str | None) -> None:
        self._send(orjson.dumps({"op": "pong", "request_id": request_id}))

    def _subscribe(self, body: Any, request_id: str | None) -> None:
        watches = self.ctx.watches
        unset = msgspec.UNSET
        if (body.topic is unset) == (body.topics is unset):
            raise InvalidRequest('subscribe names either "topic" or "topics"', {"field": "topic"})
        if body.topics is not unset:
            given = [f for f in ("from_seq", "tail", "from_ts") if getattr(body, f) is not unset]
            if given:
                raise InvalidRequest(
                    "from_seq, tail and from_ts go with topic; with topics, give them per topic",
                    {"field": given[0]},
                )
            starts = topic_starts(body.topics)
        else:
            if body.from_ts is not unset and (body.from_seq is not unset or body.tail is not unset):
                field = "from_seq" if body.from_seq is not unset else "tail"
                raise InvalidRequest(
                    f"{field}: from_ts replaces from_seq and tail: give one of them", {"field": field}
                )
            starts = topic_starts({body.topic: body})
        total = len(self.by_topic.keys() | starts.keys())
        if total > watches.max_topics:
            raise InvalidRequest(
                f"a socket may watch at most {watches.max_topics} topics (TOPICS_MAX_WATCH_TOPICS)",
                {"field": "topics", "max": watches.max_topics},
            )
        sub = watches.subscribe(starts, watch_options(body, self.ctx.engine.limits.max_limit))
        for name in sub.positions:
            self._drop(name)
            self.by_topic[name] = sub
        self.subs.append(sub)
        self._send(
            orjson.dumps({"op": "subscribed", "request_id": request_id, "topics": positions_body(sub)})
        )
        sub.attach(self.loop.wake)

    def _unsubscribe(self, body: Any, request_id: str | None) -> None:
        self._drop(body.topic)
        self._send(orjson.dumps({"op": "unsubscribed", "request_id": request_id, "topic": body.topic}))

    def _drop(self, name: str) -> None:
        sub = self.by_topic.pop(name, None)
        if sub is None:
            return
        sub.remove(name)
        if not sub.positions:
            sub.detach()
            self.subs.remove(sub)
            reads = self.cold.pop(sub, None)
            if reads is not None:
                reads.release()

    def _publish(self, body: Any, request_id: str | None) -> None:
        self._admit(body)
        persistence = self.ctx.engine.persistence
        mark = persistence.mark()
        result = append(self.ctx.engine, body.topic, body)
        persistence.write_queued(mark)  # in the page cache before its ack leaves
        ack: dict[str, Any] = {"op": "ack", "request_id": request_id, "topic": result.topic}
        if body.return_seqs is True:
            ack.update(wire.appended(result, return_seqs=True))
            del ack["count"]
        else:
            ack.update(last_seq=result.last_seq, head_seq=result.head_seq)
        if result.wait is None:
            ack["performance"] = {"fsync_ms": 0.0}
            self._send(orjson.dumps(ack))
            return
        task = asyncio.ensure_future(self._ack_after(result.wait, ack))
        self.pending_acks.add(task)
        task.add_done_callback(self.pending_acks.discard)

    def _admit(self, body: Any) -> None:
        """The elastic throttle for a publish: under CPU pressure one on a topic below the
        cutoff is refused at once with an ``error`` frame ``throttled`` (``detail.retry_after_ms``)
        — a socket answers in order, so it cannot park a command — unless it sets
        ``disable_backpressure``."""
        throttle = self.ctx.throttle
        if not throttle.engaged() or body.disable_backpressure is True:
            return
        if not throttle.admits(priority_of(self.ctx.engine, body.topic)):
            raise throttle.refusal()

    async def _ack_after(self, wait: Any, ack: dict[str, Any]) -> None:
        try:
            ack["performance"] = await await_ack(wait)
        except Exception as err:  # noqa: BLE001 — e.g. the WAL went read-only: the write is not acked
            self._send(error_frame(ack["request_id"], err))
            return
        self._send(orjson.dumps(ack))
        await self.loop.flush()

    # -- outgoing -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Deliver every subscription's frames until the socket closes (cancelled by the
        transport) or the client stops reading for the slow-consumer timeout."""
        loop = self.loop
        try:
            loop.pump = self._pump
            loop.share = self
            while True:
                done = self._pump()
                await loop.settle()
                for reads in list(self.cold.values()):
                    await reads.load()
                if done:
                    await loop.idle()
        except SlowConsumer as exc:
            slow = Throttled(
                f"slow consumer: {exc}; closing the socket (subscribe again from your positions)"
            )
            self.sink.write(error_frame(None, slow))
            self.sink.close(CLOSE_TRY_AGAIN, "slow consumer")

    def _pump(self) -> bool:
        """Write every frame ready now; False when the client is not keeping up."""
        loop, frames = self.loop, self.ctx.frames
        while not self.sink.blocked:
            try:
                found = self._next_step()
            except ColdRead:
                return False  # the task loads the cold records, then pumps again
            if found is None:
                return True
            sub, step = found
            for ev in step.events:
                loop.write(ws_frame(ev, frames))
            sub.commit(step)
            self.ctx.requests.pushed["websocket"] += records_in(step)
            if step.ended and self.by_topic.get(step.position.name) is sub:
                self._drop(step.position.name)
        return False

    def _next_step(self) -> tuple[Subscription, Any] | None:
        """The next read, taking subscriptions in turn (the one served goes to the back)."""
        for i, sub in enumerate(self.subs):
            reads = self.cold.get(sub)
            if reads is None:
                reads = self.cold[sub] = ColdReads()
            step = reads.attempt(sub.next_step)
            if step is not None:
                self.subs.append(self.subs.pop(i))
                return sub, step
        return None

    # -- Shareable (streams "Broadcast": many sockets at one position, one read and one send) --

    def share_key(self) -> Hashable | None:
        """Sockets with one subscription of one topic, at the same cursor of it with the same
        options, write the same frames — unless loading cold records."""
        subs = self.subs
        if len(subs) != 1:
            return None
        sub = subs[0]
        reads = self.cold.get(sub)
        if reads is not None and not reads.idle:
            return None
        position = self.shared_at = sub.only_dirty()
        if position is None:
            return None
        return ("ws", *sub.share_key(position))

    def share_read(self) -> SharedStep | None:
        sub, position = self.subs[0], self.shared_at
        assert position is not None
        reads = self.cold.get(sub)
        if reads is None:
            reads = self.cold[sub] = ColdReads()
        step = reads.attempt(lambda: sub.read(position))
        if step.more or step.ended:
            return None
        frames = self.ctx.frames
        return SharedStep([ws_frame(ev, frames) for ev in step.events], step, records_in(step))

    def share_commit(self, shared: SharedStep) -> None:
        position = self.shared_at
        assert position is not None
        self.subs[0].commit_same(position, shared.step)
        self.ctx.requests.pushed["websocket"] += shared.records

    def close(self) -> None:
        """The socket ended: stop following every topic, drop pending acks' frames, give the
        stream slot back. Idempotent (a transport may call it twice on the way out)."""
        if self.closed:
            return
        self.closed = True
        for reads in self.cold.values():
            reads.release()
        self.cold.clear()
        if self.slot is not None:
            self.slot.release()
        for sub in self.subs:
            sub.detach()
        self.subs.clear()
        self.by_topic.clear()
        self.loop.close()
        ended, self.ended = self.ended, None
        if ended is not None:
            ended()
