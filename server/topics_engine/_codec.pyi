"""Type stub for the C codec (``_codec.c``): records, record batches, WAL frames."""

from collections.abc import Callable
from typing import Any

def encode_records(
    first_seq: int,
    ts: int,
    datas: list[bytes],
    tags: list[str | None] | None,
    nodes: list[str | None] | None,
    metas: list[bytes | None] | None,
    limits: tuple[int, int, int, int],
    delays: list[int] | None = None,
    /,
) -> tuple[bytes, bytes, bytes, bytes | None, bytes | None] | tuple[int, str, int, int]: ...
def columns(
    records: list[Any],
    batch_node: str | None,
    absent: object,
    encode_meta: Callable[[Any], bytes],
    batch_delay: Any = None,
    /,
) -> tuple[
    list[bytes], list[str | None] | None, list[str | None] | None, list[bytes | None] | None, list[Any] | None
]: ...
def encode_batch(batch: Any, /) -> bytes:
    """A ``storage.formats.RecordBatch`` as bytes (``formats.encode_batch`` documents the layout)."""

def frame(frame_type: int, lsn: int, head: bytes, batch: Any, /) -> bytes:
    """A WAL frame (``storage.frames``) whose payload is ``head`` followed by ``batch`` encoded."""
