"""Opaque list cursors (§0.7): base64 of ``{"after": "<last name on the page>"}``.

Clients must treat the cursor as opaque; a cursor that does not decode is a 400.
"""

from __future__ import annotations

import base64
import binascii

import orjson

from .errors import InvalidRequest


def encode_cursor(after: str) -> str:
    return base64.b64encode(orjson.dumps({"after": after})).decode()


def decode_cursor(cursor: str) -> str:
    try:
        decoded = orjson.loads(base64.b64decode(cursor.encode(), validate=True))
    except (binascii.Error, orjson.JSONDecodeError, UnicodeError, ValueError):
        decoded = None
    if not isinstance(decoded, dict) or not isinstance(decoded.get("after"), str):
        raise InvalidRequest(
            "cursor is malformed; pass back the next_cursor of the previous page unchanged",
            {"field": "cursor"},
        )
    after: str = decoded["after"]
    return after
