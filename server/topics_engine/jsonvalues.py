"""JSON values at the engine boundary: integer fields and verbatim payload encoding.

JSON has one number type. JSON Schema (and so the spec) counts ``5.0`` as an integer, and a
parser may hand a huge integer over as a float; :func:`to_int` accepts both for integer fields,
clamping where the contract clamps. :func:`dumps` encodes payloads with orjson, falling back to
the standard library for integers beyond 64 bits, which orjson cannot represent, so ``data``
comes back exactly as it was written.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeAlias

import orjson

from .errors import InvalidRequest

U64_MAX = 2**64 - 1

JsonValue: TypeAlias = "None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]"
"""A JSON value as parsed into Python (a record's ``data``, a ``meta`` value)."""


def to_int(value: Any, field: str, *, low: int = 0, high: int = U64_MAX, clamp: bool = False) -> int:
    """``value`` as an int in ``[low, high]``; clamped into range when ``clamp`` is set."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRequest(f"{field} must be an integer", {"field": field, "value": value})
    if isinstance(value, float):
        if not value.is_integer():
            raise InvalidRequest(f"{field} must be a whole number", {"field": field, "value": value})
        if clamp and math.isinf(value):
            return high if value > 0 else low
    number = int(value)
    if clamp:
        return max(low, min(high, number))
    if not low <= number <= high:
        raise InvalidRequest(f"{field} must be between {low} and {high}", {"field": field, "value": value})
    return number


def dumps(value: Any) -> bytes:
    """Compact JSON bytes for a payload that will be *kept*; exact for integers of any size.

    orjson's result object keeps its ~4 KiB output buffer however short the JSON (measured:
    4097 B retained per small payload), so a stored payload is copied into an exact-size
    ``bytes`` — 12x less memory per record for the price of one small copy.
    """
    try:
        return memoryview(orjson.dumps(value)).tobytes()
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
