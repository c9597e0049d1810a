"""Columnar record batches — the shared on-disk body of WAL ``APPEND`` frames and segments.

A batch of ``n`` records is stored as four length columns followed by one blob::

    u16[n] node_len | u16[n] tag_len | u32[n] data_len | u32[n] meta_len | blob

(little-endian; ``NONE16``/``NONE32`` mark an absent node, tag or meta). The blob concatenates
each record's node, tag, data and meta bytes in order. Lengths are read back with
``array.frombytes`` — C speed — so decoding costs one slice per present field and one object
per record, which is what makes recovery of a million records take about a second.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence

from ..records import Record

NONE16 = 0xFFFF
NONE32 = 0xFFFFFFFF
_LITTLE = sys.byteorder == "little"


def _le(a: array[int]) -> bytes:
    if not _LITTLE:
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def _load(typecode: str, buf: bytes | memoryview, pos: int, n: int) -> tuple[array[int], int]:
    a = array(typecode)
    end = pos + a.itemsize * n
    a.frombytes(buf[pos:end])
    if not _LITTLE:
        a.byteswap()
    return a, end


def encode_columns(records: Sequence[Record]) -> bytes:
    node_lens, tag_lens = array("H"), array("H")
    data_lens, meta_lens = array("I"), array("I")
    blob: list[bytes] = []
    for r in records:
        if r.node is None:
            node_lens.append(NONE16)
        else:
            node = r.node.encode()
            node_lens.append(len(node))
            blob.append(node)
        if r.tag is None:
            tag_lens.append(NONE16)
        else:
            tag = r.tag.encode()
            tag_lens.append(len(tag))
            blob.append(tag)
        data_lens.append(len(r.data_json))
        blob.append(r.data_json)
        if r.meta_json is None:
            meta_lens.append(NONE32)
        else:
            meta_lens.append(len(r.meta_json))
            blob.append(r.meta_json)
    return b"".join((_le(node_lens), _le(tag_lens), _le(data_lens), _le(meta_lens), *blob))


def decode_columns(
    buf: bytes, pos: int, seqs: Sequence[int], stamps: Sequence[int], keep: Sequence[bool] | None = None
) -> tuple[list[Record], int]:
    """Records at ``buf[pos:]`` with the given seqs and ``$ts`` values; ``keep[i]`` false
    skips record ``i`` (still consumed). Returns the records and the end offset."""
    n = len(seqs)
    node_lens, pos = _load("H", buf, pos, n)
    tag_lens, pos = _load("H", buf, pos, n)
    data_lens, pos = _load("I", buf, pos, n)
    meta_lens, pos = _load("I", buf, pos, n)
    out: list[Record] = []
    append = out.append
    for i, (seq, ts, nl, tl, dl, ml) in enumerate(
        zip(seqs, stamps, node_lens, tag_lens, data_lens, meta_lens, strict=True)
    ):
        node = tag = meta = None
        if nl != NONE16:
            node = buf[pos : pos + nl].decode()
            pos += nl
        if tl != NONE16:
            tag = buf[pos : pos + tl].decode()
            pos += tl
        data = buf[pos : pos + dl]
        pos += dl
        if ml != NONE32:
            meta = buf[pos : pos + ml]
            pos += ml
        if keep is None or keep[i]:
            append(Record(node, tag, data, meta, seq, ts))
    return out, pos
