"""Stored records and their wire encoding — serialize once.

A record's JSON wire form is encoded when it is appended and kept as byte pieces::

    head      b'{"$seq":12,"$ts":1748450001000'  (+ b',"$node":"n1"' when a node is set)
    tag_part  b',"$tag":"t"'                      (b'' when untagged)
    data_part b',"data":<json>'
    meta_part b',"meta":{...}'                    (b'' when absent)

so a read assembles a response by joining bytes (``encode``) and never re-serializes a payload.
Key order on the wire is ``$seq, $ts, $node, $tag, data, meta``; absent keys are omitted.
``size`` — the record's retained byte size used for ``bytes`` and ``cap_bytes`` — is the length
of the full encoding (data + meta + framing).
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson


@dataclass(slots=True)
class PreparedRecord:
    """A validated record not yet in a topic: payload already encoded, no seq yet."""

    node: str | None
    tag: str | None
    data_json: bytes
    meta_json: bytes | None

    @property
    def payload_bytes(self) -> int:
        return len(self.data_json) + (len(self.meta_json) if self.meta_json else 0)


class Record:
    __slots__ = ("seq", "ts", "node", "tag", "head", "tag_part", "data_part", "meta_part", "size")

    def __init__(self, seq: int, ts: int, prepared: PreparedRecord) -> None:
        self.seq = seq
        self.ts = ts
        self.node = prepared.node
        self.tag = prepared.tag
        head = b'{"$seq":%d,"$ts":%d' % (seq, ts)
        if prepared.node is not None:
            head += b',"$node":' + orjson.dumps(prepared.node)
        self.head = head
        self.tag_part = b',"$tag":' + orjson.dumps(prepared.tag) if prepared.tag is not None else b""
        self.data_part = b',"data":' + prepared.data_json
        self.meta_part = b',"meta":' + prepared.meta_json if prepared.meta_json is not None else b""
        self.size = len(head) + len(self.tag_part) + len(self.data_part) + len(self.meta_part) + 1

    def encode(self, include_tags: bool, include_meta: bool, include_data: bool = True) -> bytes:
        """The record's JSON object with the requested optional parts."""
        return b"".join(
            (
                self.head,
                self.tag_part if include_tags else b"",
                self.data_part if include_data else b"",
                self.meta_part if include_meta else b"",
                b"}",
            )
        )
