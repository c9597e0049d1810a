"""Records in memory, and their wire encoding — serialize once.

A :class:`Record` keeps its payload exactly as it goes on the wire: ``data_json`` and
``meta_json`` are the JSON bytes encoded once when the record was written (or read back from
the WAL or a segment). Reads assemble responses by joining bytes; the record's head
``{"$seq":..,"$ts":..[,"$node":..]`` is formatted on first read and cached. Key order on the
wire is ``$seq, $ts, $node, $tag, data, meta``; absent keys are omitted.

A record is created without a seq (``seq == 0``) by batch validation and gets its seq and
``$ts`` when its topic plans the append; after that it never changes, so it may be handed to the
storage writer thread as is.

``size`` — the retained byte size behind ``bytes`` and ``cap_bytes`` — is the payload (data +
meta) plus tag and node plus a fixed per-record framing allowance (:data:`FRAMING_BYTES`).
"""

from __future__ import annotations

import orjson

FRAMING_BYTES = 48
"""Per-record allowance for ``$seq``/``$ts`` and JSON framing in ``size``."""


class Record:
    __slots__ = ("seq", "ts", "node", "tag", "data_json", "meta_json", "size", "_head")

    def __init__(
        self,
        node: str | None,
        tag: str | None,
        data_json: bytes,
        meta_json: bytes | None,
        seq: int = 0,
        ts: int = 0,
    ) -> None:
        self.seq = seq
        self.ts = ts
        self.node = node
        self.tag = tag
        self.data_json = data_json
        self.meta_json = meta_json
        size = len(data_json) + FRAMING_BYTES
        if meta_json is not None:
            size += len(meta_json)
        if tag is not None:
            size += len(tag)
        if node is not None:
            size += len(node)
        self.size = size
        self._head: bytes | None = None

    @property
    def payload_bytes(self) -> int:
        """``data`` + ``meta`` as serialized (what ``TOPICS_MAX_RECORD_BYTES`` limits)."""
        return len(self.data_json) + (len(self.meta_json) if self.meta_json is not None else 0)

    def encode(self, include_tags: bool, include_meta: bool, include_data: bool = True) -> bytes:
        """The record's JSON object with the requested optional parts."""
        head = self._head
        if head is None:
            head = b'{"$seq":%d,"$ts":%d' % (self.seq, self.ts)
            if self.node is not None:
                head += b',"$node":' + orjson.dumps(self.node)
            self._head = head
        parts = [head]
        if include_tags and self.tag is not None:
            parts.append(b',"$tag":' + orjson.dumps(self.tag))
        if include_data:
            parts.append(b',"data":')
            parts.append(self.data_json)
        if include_meta and self.meta_json is not None:
            parts.append(b',"meta":')
            parts.append(self.meta_json)
        parts.append(b"}")
        return b"".join(parts)


PreparedRecord = Record
"""A record before its topic assigned its seq and ``$ts`` (same class, ``seq == 0``)."""
