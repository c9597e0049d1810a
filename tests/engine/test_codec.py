"""The C record codec against a reference encoder written with orjson: byte-for-byte the same
wire objects, and limits reported before anything is encoded."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from topics_engine.errors import InvalidRequest, RecordTooLarge
from topics_engine.records import NewRecords, encode

texts = st.text(max_size=30)  # includes control characters, quotes, backslashes, astral planes
payloads = st.binary(min_size=1, max_size=40).map(lambda b: orjson.dumps(b.hex()))


def reference(new: NewRecords, first_seq: int, ts: int) -> bytes:
    out = []
    for i, data in enumerate(new.datas):
        parts = [b'{"$seq":%d,"$ts":%d' % (first_seq + i, ts)]
        node = new.nodes[i] if new.nodes else None
        tag = new.tags[i] if new.tags else None
        meta = new.metas[i] if new.metas else None
        if node is not None:
            parts.append(b',"$node":' + orjson.dumps(node))
        if tag is not None:
            parts.append(b',"$tag":' + orjson.dumps(tag))
        parts.append(b',"data":' + data)
        if meta is not None:
            parts.append(b',"meta":' + meta)
        out.append(b"".join(parts) + b"}")
    return b",".join(out)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(payloads, st.none() | texts, st.none() | texts, st.none() | payloads),
        min_size=1,
        max_size=6,
    ),
    st.integers(0, 2**64 - 20),
    st.integers(-(2**63), 2**63 - 1),
)
def test_codec_matches_the_reference_encoder(rows: list[Any], first_seq: int, ts: int) -> None:
    def column(k: int) -> Any:
        values = [r[k] for r in rows]
        return values if any(v is not None for v in values) else None

    new = NewRecords([r[0] for r in rows], column(1), column(2), column(3))
    batch = encode(new, first_seq, ts)
    assert batch.blob == reference(new, first_seq, ts)
    assert batch.count == len(rows) and batch.ends[-1] == len(batch.blob)


def test_limits_are_checked_before_anything_is_encoded() -> None:
    limits = (100, 20, 5, 4)
    with pytest.raises(RecordTooLarge) as err:
        encode(NewRecords([b"1", b'"' + b"x" * 100 + b'"']), 1, 0, limits)
    assert err.value.detail == {"index": 1, "bytes": 102, "max_bytes": 100}
    with pytest.raises(RecordTooLarge) as err:
        encode(NewRecords([b"1"], metas=[b'{"k":"' + b"v" * 30 + b'"}']), 1, 0, limits)
    assert err.value.detail is not None and err.value.detail["field"] == "meta"
    with pytest.raises(InvalidRequest):
        encode(NewRecords([b"1"], tags=["toolong"]), 1, 0, limits)
    with pytest.raises(InvalidRequest):
        encode(NewRecords([b"1"], nodes=["é" * 5]), 1, 0, limits)  # 5 characters
    # tag and node limits count characters (code points), as JSON Schema's maxLength does
    assert encode(NewRecords([b"1"], nodes=["é" * 4], tags=["𝓽" * 5]), 1, 0, limits).count == 1
