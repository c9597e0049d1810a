"""Raw-socket HTTP/1.1 for fault tests: open a stream and read it to its end exactly as sent
(to tell a well-formed chunked end from a cut one), stall a reader (a small receive buffer, never
read) and pipeline requests without reading (the server process's own figures from ``/proc``:
``bench.proc``)."""

from __future__ import annotations

import socket
import time


def connect(port: int, rcvbuf: int | None = None, timeout_s: float = 10.0) -> socket.socket:
    """A connected socket; ``rcvbuf`` shrinks its receive buffer (set before connecting, so the
    advertised window is small too)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(timeout_s)
    sock.connect(("127.0.0.1", port))
    return sock


def get(path: str, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: test"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_head(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The status, headers (lower-cased names) and whatever body bytes came with the head."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before the head ended: {data!r}")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, rest


class Chunked:
    """A chunked body read as it arrives: :meth:`read_to_end` returns the payload once the
    zero-length chunk came, and raises :class:`Incomplete` if the connection ends first."""

    def __init__(self, sock: socket.socket, buffered: bytes = b"") -> None:
        self.sock = sock
        self.buf = buffered
        self.payload = b""
        self.ended = False

    def _parse(self) -> None:
        while not self.ended:
            line_end = self.buf.find(b"\r\n")
            if line_end < 0:
                return
            size = int(self.buf[:line_end].split(b";")[0], 16)
            if size == 0:
                if self.buf[line_end + 2 : line_end + 4] != b"\r\n":
                    return  # the final CRLF is not there yet
                self.ended = True
                return
            if len(self.buf) < line_end + 2 + size + 2:
                return
            start = line_end + 2
            self.payload += self.buf[start : start + size]
            if self.buf[start + size : start + size + 2] != b"\r\n":
                raise Incomplete(f"a chunk not followed by CRLF: {self.buf[:80]!r}")
            self.buf = self.buf[start + size + 2 :]

    def read_until(self, marker: bytes, timeout_s: float = 20.0) -> bytes:
        """Read until ``marker`` is in the payload; returns the payload so far."""
        deadline = time.monotonic() + timeout_s
        while marker not in self.payload:
            self._parse()
            if marker in self.payload:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{marker!r} not received: {self.payload[-300:]!r}")
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Incomplete(f"connection closed before {marker!r}")
            self.buf += chunk
        return self.payload

    def read_to_end(self) -> bytes:
        """The whole payload once the terminating zero-length chunk arrived."""
        self._parse()
        while not self.ended:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Incomplete(f"connection closed mid-body; payload ends {self.payload[-200:]!r}")
            self.buf += chunk
            self._parse()
        return self.payload


class Incomplete(Exception):
    """The chunked body was cut (what a client reports as an incomplete chunked read)."""
