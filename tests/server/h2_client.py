"""A raw HTTP/2 (h2c, prior knowledge) client over an asyncio socket, on the ``h2`` library, for
what httpx does not let a test do: reset a stream, keep one stream's flow-control window shut,
send malformed frames, see GOAWAY and RST_STREAM.

Nothing is read off the socket unless a method waits for something (:meth:`H2Client.until`).
Received DATA is acknowledged (a WINDOW_UPDATE) as it arrives except on the streams in
:attr:`H2Client.unread` — the client "is not reading" those; :meth:`H2Client.read` takes them
back. The connection's receive window is opened wide at the start, so an unread stream never
holds up the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    InformationalResponseReceived,
    ResponseReceived,
    StreamEnded,
    StreamReset,
)
from h2.settings import SettingCodes, Settings

__all__ = ["PREFACE", "H2Client", "H2Stream"]

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


@dataclass
class H2Stream:
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    interim: list[int] = field(default_factory=list)
    data: bytearray = field(default_factory=bytearray)
    unacked: int = 0
    ended: bool = False
    reset: int | None = None
    """The RST_STREAM error code the server sent."""

    def json(self) -> Any:
        return orjson.loads(self.data)


class H2Client:
    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, window: int, skip: int = 0
    ) -> None:
        self.reader, self.writer = reader, writer
        self.h2 = H2Connection(H2Configuration(client_side=True, header_encoding=None))
        self.h2.local_settings = Settings(
            client=True, initial_values={SettingCodes.INITIAL_WINDOW_SIZE: window}
        )
        self.h2.initiate_connection()
        self.h2.increment_flow_control_window(1 << 30)
        self.streams: dict[int, H2Stream] = {}
        self.unread: set[int] = set()
        self.goaway: ConnectionTerminated | None = None
        self.eof = False
        writer.write(self.h2.data_to_send()[skip:])  # the preface (but what was sent already)

    @classmethod
    async def open(cls, port: int, *, window: int = 65_535, split: int = 0) -> H2Client:
        """Connect and send the preface; ``window``: each stream's receive window; ``split``:
        send the first ``split`` bytes on their own first (and let the server read them)."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        if split:
            writer.write(PREFACE[:split])
            await writer.drain()
            await asyncio.sleep(0.05)  # most likely a read of their own (a test holds either way)
        return cls(reader, writer, window, skip=split)

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data and not self.writer.is_closing():
            self.writer.write(data)

    def request(
        self,
        method: str,
        path: str,
        body: object = None,
        headers: dict[str, str] | None = None,
        *,
        raw: bytes | None = None,
        end: bool = True,
    ) -> int:
        """Send a request (``body`` as JSON, or ``raw`` bytes: at most 16 KiB — more through
        :meth:`send`); ``end=False`` leaves the body open. Returns its stream id."""
        payload = raw if raw is not None else (None if body is None else orjson.dumps(body))
        sid = self.h2.get_next_available_stream_id()
        head = [(b":method", method.encode()), (b":path", path.encode()), (b":scheme", b"http")]
        head.append((b":authority", b"topics.test"))
        if payload is not None and raw is None:
            head.append((b"content-type", b"application/json"))
        head += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
        self.streams[sid] = H2Stream()
        self.h2.send_headers(sid, head, end_stream=not payload and end)
        if payload:  # small enough for the protocol's initial windows
            self.h2.send_data(sid, payload, end_stream=end)
        self.flush()
        return sid

    async def send(self, sid: int, data: bytes, *, end: bool = False) -> None:
        """Send body bytes as the server's flow-control windows allow (reading its updates)."""
        h2 = self.h2
        view = memoryview(data)
        while view:
            await self.until(lambda: h2.local_flow_control_window(sid) > 0)
            size = min(len(view), h2.local_flow_control_window(sid), h2.max_outbound_frame_size)
            h2.send_data(sid, bytes(view[:size]), end_stream=end and size == len(view))
            view = view[size:]
            self.flush()
        if not data and end:
            h2.end_stream(sid)
            self.flush()

    async def call(
        self, method: str, path: str, body: object = None, headers: dict[str, str] | None = None
    ) -> H2Stream:
        """A whole request (a JSON body of any size) and its response."""
        payload = b"" if body is None else orjson.dumps(body)
        if not payload:
            return await self.response(self.request(method, path, headers=headers))
        sid = self.request(
            method, path, raw=b"", headers={"content-type": "application/json", **(headers or {})}, end=False
        )
        await self.send(sid, payload, end=True)
        return await self.response(sid)

    def reset(self, sid: int) -> None:
        self.h2.reset_stream(sid)
        self.flush()

    def read(self, sid: int) -> None:
        """Start reading ``sid`` again: acknowledge what it received."""
        self.unread.discard(sid)
        stream = self.streams[sid]
        if stream.unacked:
            self.h2.acknowledge_received_data(stream.unacked, sid)
            stream.unacked = 0
        self.flush()

    async def until(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """Read and handle frames until ``predicate()`` holds (AssertionError after ``timeout``)."""
        deadline = time.monotonic() + timeout
        while not predicate():
            assert not self.eof, "the server closed the connection"
            left = deadline - time.monotonic()
            assert left > 0, "condition not met in time"
            try:
                data = await asyncio.wait_for(self.reader.read(1 << 16), left)
            except TimeoutError:
                continue
            except ConnectionResetError:
                data = b""
            if not data:
                self.eof = True
                continue
            self._handle(data)

    async def response(self, sid: int, timeout: float = 5.0) -> H2Stream:
        """The stream once it ended (or was reset)."""
        stream = self.streams[sid]
        await self.until(lambda: stream.ended or stream.reset is not None, timeout)
        return stream

    async def closed_by_server(self, timeout: float = 5.0) -> None:
        await self.until(lambda: self.eof, timeout)

    def _handle(self, data: bytes) -> None:
        for event in self.h2.receive_data(data):
            sid = getattr(event, "stream_id", None)
            stream = self.streams.get(sid) if sid else None
            if isinstance(event, ResponseReceived) and stream is not None:
                headers = {k.decode(): v.decode() for k, v in event.headers or []}
                stream.status = int(headers.pop(":status"))
                stream.headers = headers
            elif isinstance(event, InformationalResponseReceived) and stream is not None:
                stream.interim.append(int(dict(event.headers or [])[b":status"]))
            elif isinstance(event, DataReceived) and stream is not None:
                stream.data += event.data or b""
                size = event.flow_controlled_length or 0
                if sid in self.unread:
                    stream.unacked += size
                else:
                    self.h2.acknowledge_received_data(size, sid)
            elif isinstance(event, StreamEnded) and stream is not None:
                stream.ended = True
            elif isinstance(event, StreamReset) and stream is not None:
                stream.reset = int(event.error_code or 0)
            elif isinstance(event, ConnectionTerminated):
                self.goaway = event
        self.flush()

    def close(self) -> None:
        self.writer.close()
