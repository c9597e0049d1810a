"""JSON bytes of what a caller gives the SDK: ``orjson.dumps``, except that ``NaN`` and
``±Infinity`` are refused. JSON has no such numbers and the server refuses them, but orjson writes
each as ``null`` — a value changed without a word. Checking costs one ``b"null" in`` search of
the encoded bytes (in C); only bytes holding a ``null`` are walked for the float to blame.

Typed payloads: a dataclass is encoded by orjson itself; a pydantic model (anything with
``model_dump``) through orjson's ``default`` hook, as ``model_dump(mode="json")`` — called only for
values orjson cannot encode, so plain JSON values pay nothing for it. Both are walked for NaN like
dicts (pydantic's JSON mode writes NaN as ``null`` too)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import orjson


def dumps(value: Any, *, items_of: str = "", first: int = 0) -> bytes:
    """``orjson.dumps(value)``; ``ValueError`` naming the path of a NaN or an infinity in it.
    ``items_of``: ``value`` is a slice of that list starting at index ``first`` (a chunk of a
    write's records: the path then reads ``records[1234].data.price``)."""
    encoded = orjson.dumps(value, default=_model)
    if b"null" in encoded:
        path = _first_non_finite_item(value, items_of, first) if items_of else _non_finite(value, "")
        if path is not None:
            raise ValueError(
                f"{path or 'value'} is not a JSON number (NaN and Infinity have no JSON form); "
                "send null, a string or a finite number"
            )
    return encoded


def _model(value: Any) -> Any:
    """orjson's ``default``: a pydantic model as its JSON-mode dump; anything else is refused
    (orjson's ``TypeError``, as without the hook)."""
    dump = getattr(value, "model_dump", None)
    if dump is None or isinstance(value, type):
        raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")
    return dump(mode="json")


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
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _non_finite(fields, path)
    elif callable(getattr(value, "model_dump", None)) and not isinstance(value, type):
        return _non_finite(value.model_dump(), path)  # python mode: NaN stays a float
    return None


def _first_non_finite_item(items: list[Any], name: str, first: int) -> str | None:
    for i, item in enumerate(items):
        found = _non_finite(item, f"{name}[{first + i}]")
        if found is not None:
            return found
    return None
