"""The tag-match predicate language (record deletes, router filters): ``["tag","Eq","X"]``,
``["tag","Glob","X*"]``, or a bare string as shorthand for ``Eq``. ``Glob`` is a literal prefix
followed by exactly one trailing ``*`` — no other wildcard — so a match is a point lookup or a
bounded prefix range scan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from .errors import InvalidRequest

MatchSpec: TypeAlias = "str | list[str] | tuple[str, str, str]"
"""A tag match as a request holds it: a bare tag, or ``["tag", "Eq"|"Glob", operand]`` (a list
or, decoded from the spec's ``prefixItems``, a tuple). :func:`parse_match` checks it."""


@dataclass(frozen=True, slots=True)
class TagMatch:
    exact: str | None
    prefix: str | None

    def matches(self, tag: str | None) -> bool:
        if tag is None:
            return False
        if self.exact is not None:
            return tag == self.exact
        assert self.prefix is not None
        return tag.startswith(self.prefix)


def _bad(message: str, value: Any, field: str) -> InvalidRequest:
    return InvalidRequest(f"{field}: {message}", {"field": field, "value": value})


def parse_match(value: Any, field_name: str = "match") -> TagMatch:
    """A match tuple (or bare tag string) -> :class:`TagMatch`; errors name ``field_name``."""
    if isinstance(value, str):
        return TagMatch(exact=value, prefix=None)
    if isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list) or len(value) != 3:
        raise _bad('expected a tag string or a tuple ["tag", "Eq"|"Glob", "<value>"]', value, field_name)
    field, op, operand = value
    if field != "tag":
        raise _bad('the only matchable field is "tag"', value, field_name)
    if not isinstance(operand, str):
        raise _bad("the operand must be a string", value, field_name)
    if op == "Eq":
        return TagMatch(exact=operand, prefix=None)
    if op == "Glob":
        if not operand.endswith("*") or "*" in operand[:-1]:
            raise _bad(
                'Glob takes a literal prefix followed by one trailing "*", e.g. "chat-42:*"',
                value,
                field_name,
            )
        return TagMatch(exact=None, prefix=operand[:-1])
    raise _bad('op must be "Eq" or "Glob"', value, field_name)
