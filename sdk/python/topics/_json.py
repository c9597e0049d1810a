"""JSON bytes of what a caller gives the SDK: ``orjson.dumps``, except that ``NaN`` and
``±Infinity`` are refused. JSON has no such numbers and the server refuses them, but orjson writes
each as ``null`` — a value changed without a word. Checking costs one ``b"null" in`` search of
the encoded bytes (in C); only bytes holding a ``null`` are walked for the float to blame."""

from __future__ import annotations

import math
from typing import Any

import orjson


def dumps(value: Any, *, items_of: str = "", first: int = 0) -> bytes:
    """``orjson.dumps(value)``; ``ValueError`` naming the path of a NaN or an infinity in it.
    ``items_of``: ``value`` is a slice of that list starting at index ``first`` (a chunk of a
    write's records: the path then reads ``records[1234].data.price``)."""
    encoded = orjson.dumps(value)
    if b"null" in encoded:
        path = _first_non_finite_item(value, items_of, first) if items_of else _non_finite(value, "")
        if path is not None:
            raise ValueError(
                f"{path or 'value'} is not a JSON number (NaN and Infinity have no JSON form); "
                "send null, a string or a finite number"
            )
    return encoded


def _non_finite(value: Any, path: str) -> str | None:
    """The path of the first NaN or infinity in ``value`` (``None``: there is none)."""
    kind = type(value)
    if kind is float:
        return None if math.isfinite(value) else path
    if kind is dict:
        for key, item in value.items():
            found = _non_finite(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    elif kind is list or kind is tuple:
        for i, item in enumerate(value):
            found = _non_finite(item, f"{path}[{i}]")
            if found is not None:
                return found
    elif isinstance(value, float):  # a float subclass (numpy.float64)
        return None if math.isfinite(value) else path
    return None


def _first_non_finite_item(items: list[Any], name: str, first: int) -> str | None:
    for i, item in enumerate(items):
        found = _non_finite(item, f"{name}[{first + i}]")
        if found is not None:
            return found
    return None
