"""Input for ``topics pub``: stdin cut into numbered lines and batches of lines.

A batch is handed out when it is full (``size`` lines), at the end of the input, or — so a
live pipeline (``topics read T | topics pub T2``) is not held back waiting for a full batch —
``linger_s`` after its first line arrived. On POSIX the file descriptor is read directly with
``select`` (a regular file reads at full speed: it is always ready); a stream without a file
descriptor (tests, Windows) is read line by line and batched by size only.
"""

from __future__ import annotations

import io
import os
import select
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

import orjson

from .errors import BadInput

READ_CHUNK = 1 << 16


@dataclass(slots=True)
class Batch:
    """Consecutive input lines (``(line_number, bytes)``, 1-based, without the newline) and how
    many input bytes they took, for the progress bar."""

    lines: list[tuple[int, bytes]] = field(default_factory=list)
    nbytes: int = 0


def decode_line(number: int, line: bytes | str) -> Any:
    """Stdin line ``number`` as JSON; :class:`BadInput` naming the line if it is not."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as err:
        raise BadInput(f"stdin line {number}: invalid JSON ({err})") from None


def input_size(stream: IO[bytes]) -> int | None:
    """The byte size of ``stream`` when it is a regular file (``pub < file.jsonl``), else ``None``."""
    try:
        st = os.fstat(stream.fileno())
    except (AttributeError, OSError, io.UnsupportedOperation):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def _fileno(stream: IO[bytes]) -> int | None:
    if os.name == "nt":
        return None  # select() takes sockets only there
    try:
        return stream.fileno()
    except (AttributeError, OSError, io.UnsupportedOperation):
        return None


def batches(stream: IO[bytes], size: int, linger_s: float) -> Iterator[Batch]:
    """The lines of ``stream`` in batches of at most ``size`` (see the module docstring)."""
    fd = _fileno(stream)
    if fd is None:
        yield from _blocking_batches(stream, size)
    else:
        yield from _select_batches(fd, size, linger_s)


def _blocking_batches(stream: IO[bytes], size: int) -> Iterator[Batch]:
    batch = Batch()
    for number, line in enumerate(stream, 1):
        batch.nbytes += len(line)
        batch.lines.append((number, line.rstrip(b"\n")))
        if len(batch.lines) >= size:
            yield batch
            batch = Batch()
    if batch.lines:
        yield batch


def _select_batches(fd: int, size: int, linger_s: float) -> Iterator[Batch]:
    batch = Batch()
    number = 0
    rest = b""
    deadline = 0.0  # when the pending batch goes out even if it is not full
    while True:
        timeout = max(0.0, deadline - time.monotonic()) if batch.lines else None
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            yield batch
            batch = Batch()
            continue
        chunk = os.read(fd, READ_CHUNK)
        if not chunk:
            break
        batch.nbytes += len(chunk)
        parts = (rest + chunk).split(b"\n") if rest else chunk.split(b"\n")
        rest = parts.pop()
        for part in parts:
            number += 1
            if not batch.lines:
                deadline = time.monotonic() + linger_s
            batch.lines.append((number, part))
            if len(batch.lines) >= size:
                yield batch
                batch = Batch()
    if rest:
        batch.lines.append((number + 1, rest))
    if batch.lines:
        yield batch
