"""Validation errors in words: what msgspec says of a request that breaks its schema, said
again in the one style every 400 of the server uses, with what the schema knows to fix it.

Style: ``<field>: <problem>`` — ``field`` the dotted path of the offending value (``records[0].tag``;
``body`` for the whole body), also in ``detail.field``; ``problem`` a phrase that says what
is wrong and what is right::

    durability: 'durable' is not one of ephemeral, memory, disk, fsync
    cap_records: must be an integer, not a string
    records: is required
    records[0].tga: is not a known field; did you mean tag?
    topics: must have at least 1 entry

The schema at the failing path (:class:`SchemaAt`, following ``$ref``, ``properties``,
``items``, ``additionalProperties`` and union members) supplies an enum's values, whether a
number is an integer, and the known fields a misspelt one is matched against (difflib, as
``argparse`` and the Spark connector's options do).
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from topics_engine.errors import InvalidRequest

_AT = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_SEGMENT = re.compile(r"\.(?P<name>[^.\[]+)|\[(?P<index>\d+|\.\.\.)\]")

_TYPE_WORDS = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "array": "an array",
    "object": "an object",
    "null": "null",
}
_GOT_WORDS = {**_TYPE_WORDS, "bool": "a boolean"}


def split_at(message: str) -> tuple[str, str]:
    """msgspec's ``<problem> - at `$<path>``` as ``(path, problem)``; path ``""`` at the root."""
    match = _AT.search(message)
    path = match.group("path") if match else ""
    return path, _AT.sub("", message)


def join(where: str, field: str) -> str:
    return f"{where}.{field}" if where else field


class SchemaAt:
    """Finds the schema of the value at a msgspec path within a root schema of a document."""

    def __init__(self, document: dict[str, Any], root: dict[str, Any]) -> None:
        self.document = document
        self.root = root

    def _resolve(self, schema: Any) -> dict[str, Any]:
        for _ in range(32):  # $ref chains are short; a cycle must not hang an error
            if not isinstance(schema, dict) or "$ref" not in schema:
                break
            node: Any = self.document
            for part in schema["$ref"].removeprefix("#/").split("/"):
                node = node[part]
            schema = node
        return schema if isinstance(schema, dict) else {}

    def candidates(self, path: str) -> list[dict[str, Any]]:
        """Every schema the value at ``path`` may be under (a union has several)."""
        found = [self._resolve(self.root)]
        for match in _SEGMENT.finditer(path):
            name, index = match.group("name"), match.group("index")
            found = [s for parent in found for s in self._children(parent, name, index)]
        return found

    def _children(self, schema: dict[str, Any], name: str | None, index: str | None) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for member in [schema, *(schema.get("oneOf") or schema.get("anyOf") or [])]:
            member = self._resolve(member)
            if name is not None:
                props = member.get("properties", {})
                if name in props:
                    out.append(self._resolve(props[name]))
                elif isinstance(member.get("additionalProperties"), dict):
                    out.append(self._resolve(member["additionalProperties"]))
            elif index == "...":
                if isinstance(member.get("additionalProperties"), dict):
                    out.append(self._resolve(member["additionalProperties"]))
            elif index is not None:
                prefix = member.get("prefixItems")
                if isinstance(prefix, list) and int(index) < len(prefix):
                    out.append(self._resolve(prefix[int(index)]))
                elif isinstance(member.get("items"), dict):
                    out.append(self._resolve(member["items"]))
        return out

    def enum(self, path: str) -> list[Any]:
        for schema in self.candidates(path):
            for member in [schema, *(schema.get("oneOf") or schema.get("anyOf") or [])]:
                values = self._resolve(member).get("enum")
                if values:
                    return list(values)
        return []

    def is_integer(self, path: str) -> bool:
        for schema in self.candidates(path):
            types = schema.get("type")
            if types == "integer" or (isinstance(types, list) and "integer" in types):
                return True
        return False

    def pattern(self, path: str) -> str | None:
        """The JSON Schema (ECMA-262) ``pattern`` of the string at ``path``, as the spec says it."""
        for schema in self.candidates(path):
            if isinstance(schema.get("pattern"), str):
                return str(schema["pattern"])
        return None

    def known_fields(self, path: str) -> list[str]:
        names: list[str] = []
        for schema in self.candidates(path):
            for member in [schema, *(schema.get("oneOf") or schema.get("anyOf") or [])]:
                names += [n for n in self._resolve(member).get("properties", {}) if n not in names]
        return names


def body_error(message: str, schema: SchemaAt | None) -> InvalidRequest:
    """A msgspec ``ValidationError`` message of a request body as the 400 to answer."""
    path, problem = split_at(message)
    field, words = explain(path, problem, schema)
    return InvalidRequest(f"{field}: {words}", {"field": field})


def parameter_error(name: str, message: str, value: Any, schema: SchemaAt | None) -> InvalidRequest:
    """The same for a path, query or header parameter ``name``."""
    _, problem = split_at(message)
    _, words = explain("", problem, schema)
    if words.startswith("must match the pattern"):
        words += f", not {value!r}"
    return InvalidRequest(f"parameter {name}: {words}", {"field": name, "value": value})


def explain(path: str, problem: str, schema: SchemaAt | None) -> tuple[str, str]:
    """``(field, words)`` for msgspec's ``problem`` at ``path``."""
    field = _field(path)
    unknown = re.fullmatch(r"Object contains unknown field `(?P<name>[^`]+)`", problem)
    if unknown:
        name = unknown.group("name")
        known = schema.known_fields(path) if schema else []
        return join(field, name), _unknown_field(name, known)
    missing = re.fullmatch(r"Object missing required field `(?P<name>[^`]+)`", problem)
    if missing:
        return join(field, missing.group("name")), "is required"
    enum = re.fullmatch(r"Invalid enum value (?P<value>.+)", problem)
    if enum:
        values = schema.enum(path) if schema else []
        allowed = ", ".join(str(v) for v in values) if values else "the allowed values"
        return field or "body", f"{enum.group('value')} is not one of {allowed}"
    if problem.startswith("Expected `str` matching regex") and schema is not None:
        pattern = schema.pattern(path)
        if pattern is not None:
            return field or "body", f"must match the pattern {pattern}"
    integer = schema.is_integer(path) if schema else False
    return field or "body", _constraint(problem, integer)


def _field(path: str) -> str:
    """``.records[0].tag`` -> ``records[0].tag``."""
    return path.lstrip(".")


def _unknown_field(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if close:
        return f"is not a known field; did you mean {close[0]}?"
    if known:
        return f"is not a known field (known: {', '.join(known)})"
    return "is not a known field"


def _type_words(expected: str, integer: bool) -> str:
    """``int | float`` -> ``an integer`` (an integer field) or ``a number``; ``str | array`` ->
    ``a string or an array``."""
    names = [n.strip() for n in expected.split("|")]
    if integer and "int" in names:
        names = [n for n in names if n != "float"]
    if not integer and "int" in names and "float" in names:
        names = [n for n in names if n != "int"]
    words = [_TYPE_WORDS.get(n, n) for n in names]
    return " or ".join(words)


def _constraint(problem: str, integer: bool) -> str:
    """msgspec's words for a type or bound violation, as ours."""
    typed = re.fullmatch(r"Expected `(?P<want>[^`]+)`, got `(?P<got>[^`]+)`", problem)
    if typed:
        got = typed.group("got")
        return f"must be {_type_words(typed.group('want'), integer)}, not {_GOT_WORDS.get(got, got)}"
    sized = re.fullmatch(r"Expected `(?P<kind>str|array|object)` of length (?P<op>[<>]=) (?P<n>\d+)", problem)
    if sized:
        kind, op, n = sized.group("kind"), sized.group("op"), int(sized.group("n"))
        bound = "at least" if op == ">=" else "at most"
        unit = {"str": "character", "array": "item", "object": "entry"}[kind]
        plural = unit if n == 1 else ("entries" if unit == "entry" else f"{unit}s")
        verb = "be" if kind == "str" else "have"
        return f"must {verb} {bound} {n} {plural}" + (" long" if kind == "str" else "")
    bounded = re.fullmatch(r"Expected `(?:int|float)` (?P<op>[<>]=) (?P<n>-?[\d.]+)", problem)
    if bounded:
        number = bounded.group("n").removesuffix(".0")
        return f"must be {'at least' if bounded.group('op') == '>=' else 'at most'} {number}"
    if re.fullmatch(r"Expected `float` that's a multiple of 1(\.0)?", problem):
        return "must be an integer, not a fraction"
    pattern = re.fullmatch(r"Expected `str` matching regex (?P<regex>.+)", problem)
    if pattern:
        return f"must match the pattern {pattern.group('regex')}"
    return problem[:1].lower() + problem[1:]
