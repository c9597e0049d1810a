"""Record payloads and request bodies shared by the load generator and the bare-Starlette app.

Every record's ``data`` is a small event object of about 100 bytes of JSON (``DATA_BYTES``), so
the topics server and the bare app move the same bytes per record.
"""

from __future__ import annotations

from typing import Any

import orjson

_PATHS = ("/products/widget-pro", "/cart/checkout-step", "/search/results-page", "/account/settings")


def make_data(i: int) -> dict[str, Any]:
    """An event of ~100 B of JSON; varies with ``i`` so bodies are not all identical."""
    return {
        "id": i,
        "user": f"user-{i % 100_000:06d}",
        "event": "page_view",
        "path": _PATHS[i % len(_PATHS)],
        "ms": 1_700_000_000_000 + i,
    }


def data_size(i: int = 12345) -> int:
    return len(orjson.dumps(make_data(i)))


def append_body(start: int, count: int) -> bytes:
    """``{"records": [{"data": ...}, ...]}`` with ``count`` records."""
    return orjson.dumps({"records": [{"data": make_data(start + j)} for j in range(count)]})


def diff_body(from_seq: int, limit: int) -> bytes:
    return orjson.dumps({"from_seq": from_seq, "limit": limit})


def encoded_record(seq: int, ts: int) -> bytes:
    """A record in the topics wire form (``{"$seq":..,"$ts":..,"data":..}``), as the diff returns it."""
    return b'{"$seq":%d,"$ts":%d,"data":%s}' % (seq, ts, orjson.dumps(make_data(seq)))
