"""List pages: opaque cursors — base64 of ``{"after": "<last name on the page>"}`` — and
the walk over a sorted name list restricted to a request prefix and an allowlist of prefixes.

Clients treat the cursor as opaque and pass ``next_cursor`` back unchanged. Any other non-empty
string is a name to start after (like S3's ``start-after``), so every cursor the served schema
admits has a meaning (docs/DECISIONS.md, "List cursors"); only an empty one is refused.
"""

from __future__ import annotations

import base64
import binascii
import bisect
from collections.abc import Iterator

import orjson

from .errors import InvalidRequest


def encode_cursor(after: str) -> str:
    return base64.b64encode(orjson.dumps({"after": after})).decode()


def decode_cursor(cursor: str) -> str:
    """The name a page starts after: the one an issued cursor carries, else ``cursor`` itself."""
    if not cursor:
        raise InvalidRequest(
            "cursor is empty; pass back the next_cursor of the previous page unchanged, or omit it",
            {"field": "cursor"},
        )
    try:
        decoded = orjson.loads(base64.b64decode(cursor.encode(), validate=True))
    except (binascii.Error, orjson.JSONDecodeError, UnicodeError, ValueError):
        return cursor
    if isinstance(decoded, dict) and isinstance(decoded.get("after"), str):
        after: str = decoded["after"]
        return after
    return cursor


DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


def page_size(requested: int) -> int:
    """A list page's size: 0 (or less) means the default, at most 1000 (docs/DECISIONS.md, "`page_size`")."""
    return DEFAULT_PAGE_SIZE if requested <= 0 else min(MAX_PAGE_SIZE, requested)


def effective_prefixes(prefix: str, within: tuple[str, ...] = ()) -> list[str]:
    """The prefixes a name must start with to match both ``prefix`` and one of ``within`` (an
    API key's allowlist; empty: any name), ascending, none covered by another — so the names
    they match form disjoint runs of a sorted list, in order."""
    if not within:
        return [prefix]
    narrowed = set()
    for p in within:
        if p.startswith(prefix):
            narrowed.add(p)  # the allowed prefix is the narrower one
        elif prefix.startswith(p):
            narrowed.add(prefix)
    candidates = sorted(narrowed)
    kept: list[str] = []
    for p in candidates:
        if not kept or not p.startswith(kept[-1]):
            kept.append(p)
    return kept


def names_after(names: list[str], prefixes: list[str], after: str | None) -> Iterator[str]:
    """The names of the sorted list ``names`` that start with one of ``prefixes`` (see
    :func:`effective_prefixes`) and sort after ``after``, in order."""
    for p in prefixes:
        i = bisect.bisect_left(names, p)
        if after is not None:
            i = max(i, bisect.bisect_right(names, after))
        while i < len(names) and names[i].startswith(p):
            yield names[i]
            i += 1
