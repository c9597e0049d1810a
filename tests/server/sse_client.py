"""An incremental SSE client over a raw asyncio socket, for in-process server tests.

:meth:`SseStream.open` sends one ``GET`` and reads the response head. A ``200`` stream's chunked
body is then parsed into :class:`SseFrame` objects as bytes arrive (:meth:`SseStream.next`,
with a timeout); any other response is read whole (``content-length``) and exposed as
``body`` / :meth:`SseStream.json`. Nothing is read off the socket unless a method asks, so a
test can stop reading to make the server's transport pause (``rcvbuf`` shrinks the socket's
receive buffer; the asyncio reader's own buffer is kept small too).
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from topics_server.spec import load_document

__all__ = ["SseFrame", "SseStream", "assert_event_conforms", "parse_frame"]


@dataclass
class SseFrame:
    raw: str
    comments: list[str] = field(default_factory=list)
    id: str | None = None
    event: str | None = None
    data: str | None = None
    retry: int | None = None

    def json(self) -> Any:
        assert self.data is not None, self.raw
        return json.loads(self.data)


def parse_frame(block: str) -> SseFrame:
    """One SSE event block (the lines between blank lines)."""
    frame = SseFrame(block)
    data: list[str] = []
    for line in block.split("\n"):
        if line.startswith(":"):
            frame.comments.append(line[1:].lstrip())
            continue
        key, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if key == "id":
            frame.id = value
        elif key == "event":
            frame.event = value
        elif key == "data":
            data.append(value)
        elif key == "retry":
            frame.retry = int(value)
    if data:
        frame.data = "\n".join(data)
    return frame


class SseStream:
    """One ``GET`` on a fresh connection, read incrementally."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = b""
        self._raw = bytearray()  # chunked body bytes not yet de-chunked
        self._text = ""  # de-chunked SSE text not yet split into frames
        self.ended = False  # the terminal chunk arrived (the server ended the response)
        self.eof = False  # the connection closed

    @classmethod
    async def open(
        cls,
        port: int,
        path: str,
        headers: dict[str, str] | None = None,
        *,
        accept: str | None = "text/event-stream",
        rcvbuf: int | None = None,
        timeout: float = 2.0,
    ) -> SseStream:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:  # before connect, so the advertised window is small from the start
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        reader, writer = await asyncio.open_connection(sock=sock, limit=4096)
        stream = cls(reader, writer)
        lines = [f"GET {path} HTTP/1.1", "Host: t"]
        if accept is not None:
            lines.append(f"Accept: {accept}")
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await stream._read_head(timeout)
        return stream

    async def _read_head(self, timeout: float) -> None:
        head = bytearray()
        deadline = time.monotonic() + timeout
        while b"\r\n\r\n" not in head:
            chunk = await asyncio.wait_for(self.reader.read(65536), max(0.01, deadline - time.monotonic()))
            if not chunk:
                raise ConnectionError(f"closed before a response head: {bytes(head)!r}")
            head += chunk
        raw_head, _, rest = bytes(head).partition(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            self._raw += rest
            return
        length = int(self.headers.get("content-length", "0"))
        body = bytearray(rest)
        while len(body) < length:
            chunk = await asyncio.wait_for(self.reader.read(65536), max(0.01, deadline - time.monotonic()))
            if not chunk:
                break
            body += chunk
        self.body = bytes(body)
        self.ended = True

    def json(self) -> Any:
        return json.loads(self.body)

    # -- the chunked SSE body ---------------------------------------------------------------

    def _dechunk(self) -> None:
        raw = self._raw
        while not self.ended:
            end = raw.find(b"\r\n")
            if end < 0:
                return
            size = int(bytes(raw[:end]).split(b";")[0], 16)
            if size == 0:
                if len(raw) < end + 4:
                    return
                del raw[: end + 4]
                self.ended = True
                return
            if len(raw) < end + 2 + size + 2:
                return
            self._text += bytes(raw[end + 2 : end + 2 + size]).decode()
            del raw[: end + 2 + size + 2]

    async def next(self, timeout: float = 2.0) -> SseFrame | None:
        """The next frame; ``None`` once the response ended (or the connection closed).
        Raises ``TimeoutError`` if no whole frame arrives within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            self._dechunk()
            if "\n\n" in self._text:
                block, self._text = self._text.split("\n\n", 1)
                return parse_frame(block)
            if self.ended or self.eof:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no SSE frame within {timeout}s (buffered {self._text[-200:]!r})")
            try:
                chunk = await asyncio.wait_for(self.reader.read(1 << 20), remaining)
            except TimeoutError:
                raise TimeoutError(
                    f"no SSE frame within {timeout}s (buffered {self._text[-200:]!r})"
                ) from None
            if not chunk:
                self.eof = True
            self._raw += chunk

    async def quiet(self, seconds: float = 0.3) -> bool:
        """True if no frame arrives within ``seconds``."""
        try:
            frame = await self.next(seconds)
        except TimeoutError:
            return True
        if frame is None:
            return True
        raise AssertionError(f"expected no frame, got {frame.raw!r}")

    def close(self) -> None:
        self.writer.close()


def _validate(schema: str, value: Any) -> None:
    registry = Registry().with_resource("urn:v0", Resource.from_contents(load_document(), DRAFT202012))
    Draft202012Validator({"$ref": f"urn:v0#/components/schemas/{schema}"}, registry=registry).validate(value)


def assert_event_conforms(frame: SseFrame, union: str) -> None:
    """``frame`` is one event of ``union`` (``WatchEvent``/``WorkEvent``) of the document, and its
    ``data`` matches the ``contentSchema`` its kind names (an annotation in JSON Schema, so a
    validator never looks into it: checked here explicitly)."""
    event = {"event": frame.event, "data": frame.data, **({"id": frame.id} if frame.id else {})}
    _validate(union, event)
    schemas = load_document()["components"]["schemas"]
    (kind,) = [
        branch["then"]["$ref"].rsplit("/", 1)[-1]
        for branch in schemas[union]["allOf"]
        if branch["if"]["properties"]["event"]["const"] == frame.event
    ]
    payload = schemas[kind]["properties"]["data"]["contentSchema"]["$ref"]
    _validate(payload.rsplit("/", 1)[-1], frame.json())
