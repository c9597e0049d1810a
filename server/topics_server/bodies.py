"""Request bodies: decoded and validated in one pass by msgspec types compiled from the spec.

Each operation's request-body schema (``openapi/v0.yaml``, JSON Schema 2020-12) is compiled at
start-up into a msgspec type — objects become ``Struct`` types (closed when the schema sets
``additionalProperties: false``; absent fields are :data:`msgspec.UNSET`), strings keep their
length/pattern/enum constraints, arrays their item counts, unions their members — plus
*post-checks* for the constraints msgspec cannot express:

* ``integer``: JSON Schema counts ``5.0`` as an integer and allows any magnitude, so integers
  decode as ``int | float``; the post-check rejects fractions and non-finite values, applies
  ``minimum``/``maximum`` (u64 bounds included) and stores the ``int``.
* a value with no ``type`` (a record's ``data``) decodes as :class:`msgspec.Raw`: its JSON bytes
  exactly as sent (validated as JSON, never re-encoded — stored verbatim).
* an ``object`` without ``properties`` (a record's ``meta``) decodes as ``dict[str, Raw]``
  (``maxProperties`` enforced by msgspec): its values stay verbatim.
* ``minProperties`` of an object with ``properties`` (an at-least-one-of rule over a closed
  object, e.g. ``DeleteRecordsRequest``): a post-check counting the fields present.
* ``if``/``then`` (a rule between items, e.g. a ``Glob`` match's operand pattern): a post-check
  that validates the decoded value against them with jsonschema-rs (small values only: the
  value is converted back to plain JSON types first).
* ``if``/``then``/``else`` on an object, speaking only of which fields are present
  (``required``, and ``properties`` set to ``false``) — e.g. exactly one of a schedule's ``cron``
  and ``every_ms``: a post-check over the set fields, the failing branch's ``description`` as
  the message.
* ``allOf`` on an object, each member such a presence rule: ``if``/``then``/``else`` (e.g. a diff's
  ``from_ts`` excludes ``from_seq``) or ``not: {required: [a, b, ...]}`` (the fields exclude each
  other: not all of them together — e.g. a diff's ``consumer`` and ``from_seq``); a failing
  member's ``description`` is the message.
* ``x-topics-explain`` on a string with a ``pattern`` (a schedule's ``cron``): the pattern is a
  post-check whose failure is explained in words by the named engine function
  (:data:`EXPLAINERS`) instead of quoting the pattern.

A keyword the compiler does not know fails start-up, so the spec can never say more than the
server checks. Validation errors become ``400 invalid_request`` naming the field.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal, Union

import jsonschema_rs
import msgspec
from topics_engine.errors import InvalidRequest
from topics_engine.records import NewRecords
from topics_engine.schedules import cron_problem

from .errors import PayloadTooLarge
from .schema_errors import SchemaAt, body_error, parameter_error
from .spec import RUNTIME_LIMITS, load_document

Check = Callable[[Any, str], Any]
"""A post-check: ``(value, where) -> value`` (possibly converted); raises InvalidRequest."""

WHOLE_NUMBER = "x-topics-whole-number"
"""On an ``integer`` whose consumer also takes a whole-number float (``5.0`` stays a float, the
engine converts it): validated by msgspec alone — the bounds on both members, ``multiple_of: 1``
on the float — with no post-check, so an array of objects holding one (a write's records'
``delay_ms``) is not walked item by item in Python."""
EXPLAIN = "x-topics-explain"
EXPLAINERS: dict[str, Callable[[str], str]] = {"cron": cron_problem}
"""``x-topics-explain`` names -> what says why a string does not match its pattern."""

_IGNORED = {"description", "title", "examples", "example", "deprecated", "$comment", "default", "components"}
_HANDLED = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "enum",
    "const",
    "minimum",
    "maximum",
    "oneOf",
    "anyOf",
    "maxProperties",
    "minProperties",
    "propertyNames",
    "$ref",
    "if",
    "then",
    "else",
    "allOf",
}


def static_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without vendor extensions and without the keywords its runtime limits name
    (``x-topics-limits``, stated as configured by ``spec.served_document``): the engine enforces
    those with the contract's own codes (``batch_too_large``, ...), so the compiler skips them."""
    if not any(key.startswith("x-") for key in schema):
        return schema
    limited = schema.get(RUNTIME_LIMITS, {})
    return {k: v for k, v in schema.items() if not k.startswith("x-") and k not in limited}


class UnsupportedSchema(Exception):
    """The spec uses a JSON Schema keyword the body compiler does not implement."""


@dataclass(slots=True)
class Compiled:
    type: Any
    check: Check | None = None
    int_bounds: tuple[int | None, int | None] | None = None
    """For an ``integer``: its ``(minimum, maximum)`` (lets an array of them be checked at
    once when every item decoded as an in-range ``int``)."""


class BodyCompiler:
    """Compiles schemas of one OpenAPI document; ``$ref`` targets compile once and are shared."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self._refs: dict[str, Compiled] = {}
        self._counter = 0

    def compile(self, schema: dict[str, Any], name: str = "Body") -> Compiled:
        explain = schema.get(EXPLAIN)
        whole_number = schema.get(WHOLE_NUMBER) is True
        schema = static_schema(schema)
        if whole_number:
            return self._whole_number(schema, name)
        unknown = set(schema) - _HANDLED - _IGNORED
        if unknown:
            raise UnsupportedSchema(f"{name}: unsupported schema keywords {sorted(unknown)}")
        if "$ref" in schema:
            compiled: Compiled = self._ref(schema["$ref"])
            return compiled
        if "allOf" in schema:
            return self._presence_rules(schema, name)
        if "if" in schema or "then" in schema or "else" in schema:
            return self._conditional(schema, name)
        if explain is not None:
            return self._explained(schema, name, explain)
        if "oneOf" in schema or "anyOf" in schema:
            return self._union(schema.get("oneOf") or schema["anyOf"], name)
        if "const" in schema:
            return Compiled(Literal[schema["const"]])
        types = schema.get("type")
        if isinstance(types, list):
            members = [self.compile({**schema, "type": t}, name) for t in types]
            return self._merge(members)
        if types is None:
            return Compiled(msgspec.Raw)
        if "enum" in schema:
            return Compiled(Literal[tuple(schema["enum"])])
        kind: Callable[[dict[str, Any], str], Compiled] = getattr(self, f"_{types}")
        return kind(schema, name)

    def decoder(self, schema: dict[str, Any], name: str = "Body") -> BodyDecoder:
        """A :class:`BodyDecoder` for ``schema``, its errors worded from ``schema``."""
        return BodyDecoder(self.compile(schema, name), SchemaAt(self.document, schema))

    def validator(self, schema: dict[str, Any], name: str) -> ValueValidator:
        """A :class:`ValueValidator` of parameter ``name`` for ``schema``."""
        return ValueValidator(self.compile(schema, name), name, SchemaAt(self.document, schema))

    # -- kinds --------------------------------------------------------------------------------

    def _ref(self, ref: str) -> Compiled:
        if ref not in self._refs:
            node: Any = self.document
            for part in ref.removeprefix("#/").split("/"):
                node = node[part]
            self._refs[ref] = self.compile(node, ref.rsplit("/", 1)[-1])
        return self._refs[ref]

    def _conditional(self, schema: dict[str, Any], name: str) -> Compiled:
        """``if``/``then`` on top of the rest of ``schema``: decoded by the rest, then the
        decoded value is validated against the condition. Only on an array (a rule between its
        items) — its items decode to plain values — and never ``then`` without ``if``."""
        if "if" in schema and schema.get("type") == "object":
            return self._presence_rules(schema, name)
        if "if" not in schema or "else" in schema or schema.get("type") != "array":
            raise UnsupportedSchema(
                f"{name}: if/then only together and only on an array, or if/then/else on an object"
            )
        rest = {k: v for k, v in schema.items() if k not in ("if", "then")}
        inner = self.compile(rest, name)
        then = schema.get("then", True)
        validator = jsonschema_rs.validator_for({"if": schema["if"], "then": then})
        explained = then.get("description") if isinstance(then, dict) else None
        inner_check = inner.check

        def check(value: Any, where: str) -> Any:
            if inner_check is not None:
                value = inner_check(value, where)
            plain = msgspec.to_builtins(value)
            for error in validator.iter_errors(plain):
                problem = f"{error.message}: {explained}" if explained else error.message
                raise _invalid(where, problem, plain)
            return value

        return Compiled(inner.type, check)

    def _presence_rules(self, schema: dict[str, Any], name: str) -> Compiled:
        """Rules over which fields of an object are present: ``if``/``then``/``else`` (each a
        ``required`` list and ``properties`` whose schema is ``false``: must be absent), and
        ``allOf`` members that are such a conditional or ``not: {required: [...]}`` (those
        fields are not all present together). The object is decoded by the rest of ``schema``;
        the first rule that fails names its offending field and says its ``description``."""
        if schema.get("type") != "object":
            raise UnsupportedSchema(f"{name}: presence rules (if/then/else, allOf) only on an object")
        rules: list[PresenceRule] = []
        if "if" in schema:
            rules.append(_conditional_rule({k: schema.get(k, True) for k in ("if", "then", "else")}, name))
        for member in schema.get("allOf", ()):
            rules.append(_member_rule(member, name))
        rest = {k: v for k, v in schema.items() if k not in ("if", "then", "else", "allOf")}
        inner = self.compile(rest, name)
        wire = list(schema.get("properties", {}))
        attrs = [_identifier(p) for p in wire]
        inner_check = inner.check

        def check(value: Any, where: str) -> Any:
            if inner_check is not None:
                value = inner_check(value, where)
            present = {w for w, a in zip(wire, attrs, strict=True) if getattr(value, a) is not msgspec.UNSET}
            for rule in rules:
                broken = rule(present)
                if broken is not None:
                    field = _join(where, broken[0])
                    raise InvalidRequest(f"{field}: {broken[1]}", {"field": field})
            return value

        return Compiled(inner.type, check)

    def _explained(self, schema: dict[str, Any], name: str, explain: str) -> Compiled:
        """A string whose ``pattern`` is checked after decoding, a mismatch explained by
        :data:`EXPLAINERS` ``[explain]`` (which says what is wrong, not the pattern)."""
        explainer = EXPLAINERS.get(explain)
        if explainer is None or schema.get("type") != "string" or "pattern" not in schema:
            raise UnsupportedSchema(f"{name}: {EXPLAIN} {explain!r} needs a known explainer and a pattern")
        inner = self._string({k: v for k, v in schema.items() if k != "pattern"}, name)
        regex = re.compile(python_pattern(schema["pattern"]))

        def check(value: Any, where: str) -> Any:
            if isinstance(value, str) and not regex.search(value):
                field = where or "body"
                raise InvalidRequest(f"{field}: {explainer(value)}", {"field": field, "value": value})
            return value

        return Compiled(inner.type, check)

    def _union(self, options: list[dict[str, Any]], name: str) -> Compiled:
        return self._merge([self.compile(o, name) for o in options])

    def _merge(self, members: list[Compiled]) -> Compiled:
        checks = [m.check for m in members if m.check is not None]
        if len(checks) > 1:
            raise UnsupportedSchema("a union may have at most one member that needs a post-check")
        return Compiled(Union[tuple(m.type for m in members)], checks[0] if checks else None)  # noqa: UP007

    def _null(self, schema: dict[str, Any], name: str) -> Compiled:
        return Compiled(None)

    def _boolean(self, schema: dict[str, Any], name: str) -> Compiled:
        return Compiled(bool)

    def _string(self, schema: dict[str, Any], name: str) -> Compiled:
        meta = {}
        if "minLength" in schema:
            meta["min_length"] = schema["minLength"]
        if "maxLength" in schema:
            meta["max_length"] = schema["maxLength"]
        if "pattern" in schema:
            meta["pattern"] = python_pattern(schema["pattern"])
        return Compiled(Annotated[str, msgspec.Meta(**meta)] if meta else str)

    def _integer(self, schema: dict[str, Any], name: str) -> Compiled:
        low, high = schema.get("minimum"), schema.get("maximum")

        def check(value: Any, where: str) -> Any:
            if not isinstance(value, int | float):  # another member of a union (null)
                return value
            if isinstance(value, float):
                if not math.isfinite(value) or not value.is_integer():
                    raise _invalid(where, f"must be an integer, not {value}", value)
                value = int(value)
            if low is not None and value < low:
                raise _invalid(where, f"must be at least {low}", value)
            if high is not None and value > high:
                raise _invalid(where, f"must be at most {high}", value)
            return int(value)

        return Compiled(Union[int, float], check, (low, high))  # noqa: UP007

    def _whole_number(self, schema: dict[str, Any], name: str) -> Compiled:
        """An ``integer`` marked :data:`WHOLE_NUMBER`: ``int`` or a whole ``float`` within its
        bounds, checked by msgspec (no post-check)."""
        if schema.get("type") != "integer" or set(schema) - {"type", "minimum", "maximum"} - _IGNORED:
            raise UnsupportedSchema(f"{name}: {WHOLE_NUMBER} only on a plain integer with bounds")
        bounds = {k: schema[key] for k, key in (("ge", "minimum"), ("le", "maximum")) if key in schema}
        whole = Union[  # noqa: UP007
            Annotated[int, msgspec.Meta(**bounds)], Annotated[float, msgspec.Meta(**bounds, multiple_of=1)]
        ]
        return Compiled(whole)

    def _array(self, schema: dict[str, Any], name: str) -> Compiled:
        meta = {}
        if "minItems" in schema:
            meta["min_length"] = schema["minItems"]
        if "maxItems" in schema:
            meta["max_length"] = schema["maxItems"]
        if "prefixItems" in schema:
            prefix = [self.compile(s, name) for s in schema["prefixItems"]]
            if (
                any(p.check for p in prefix)
                or meta.get("min_length") != len(prefix)
                or meta.get("max_length") != len(prefix)
            ):
                raise UnsupportedSchema(f"{name}: prefixItems only as a fixed-size tuple")
            return Compiled(tuple[tuple(p.type for p in prefix)])  # type: ignore[misc]
        item = self.compile(schema.get("items", {}), f"{name}Item")
        list_type = list[item.type]  # type: ignore[name-defined]
        typ = Annotated[list_type, msgspec.Meta(**meta)] if meta else list_type
        if item.check is None:
            return Compiled(typ)
        item_check, bounds = item.check, item.int_bounds

        def check(value: list[Any], where: str) -> list[Any]:
            if bounds is not None and _all_ints_within(value, *bounds):
                return value
            for i, v in enumerate(value):
                value[i] = item_check(v, f"{where}[{i}]")
            return value

        return Compiled(typ, check)

    def _object(self, schema: dict[str, Any], name: str) -> Compiled:
        properties = schema.get("properties")
        if properties is None:
            if isinstance(schema.get("additionalProperties"), dict):
                return self._map(schema, name)
            return self._opaque_object(schema, name)
        required = set(schema.get("required", ()))
        fields: list[tuple[Any, ...]] = []
        checks: list[tuple[str, Check]] = []
        for prop, sub in properties.items():
            compiled = self.compile(sub, f"{name}.{prop}")
            attr = _identifier(prop)
            if prop in required:
                fields.append((attr, compiled.type))
            else:
                fields.append((attr, Union[compiled.type, msgspec.UnsetType], msgspec.UNSET))  # noqa: UP007
            if compiled.check is not None:
                checks.append((attr, compiled.check))
        fields.sort(key=len)  # required fields (no default) first
        renames = {_identifier(p): p for p in properties if _identifier(p) != p}
        struct = msgspec.defstruct(
            schema.get("title", name).replace(".", "_"),
            fields,
            forbid_unknown_fields=schema.get("additionalProperties") is False,
            rename=renames or None,
        )
        least = schema.get("minProperties", 0)
        if (least and schema.get("additionalProperties") is not False) or "maxProperties" in schema:
            raise UnsupportedSchema(
                f"{name}: minProperties only on a closed object with properties, maxProperties never"
            )
        if not checks and not least:
            return Compiled(struct)
        attrs = [_identifier(p) for p in properties]

        def check(value: Any, where: str) -> Any:
            for attr, field_check in checks:
                current = getattr(value, attr)
                if current is not msgspec.UNSET:
                    setattr(value, attr, field_check(current, _join(where, renames.get(attr, attr))))
            if least and sum(getattr(value, a) is not msgspec.UNSET for a in attrs) < least:
                names = ", ".join(properties)
                raise InvalidRequest(
                    f"{where or 'body'}: must have at least {least} of {names}", {"field": where or "body"}
                )
            return value

        return Compiled(struct, check)

    def _map(self, schema: dict[str, Any], name: str) -> Compiled:
        """An object of uniform values (``additionalProperties: <schema>``, no ``properties``):
        a ``dict``, its keys checked by ``propertyNames`` (a string schema) and its size by
        ``minProperties``/``maxProperties``."""
        key = self.compile(schema.get("propertyNames", {"type": "string"}), f"{name}Key")
        value = self.compile(schema["additionalProperties"], f"{name}Value")
        if key.check is not None:
            raise UnsupportedSchema(f"{name}: propertyNames must be a plain string schema")
        meta = {}
        if "minProperties" in schema:
            meta["min_length"] = schema["minProperties"]
        if "maxProperties" in schema:
            meta["max_length"] = schema["maxProperties"]
        dict_type = dict[key.type, value.type]  # type: ignore[name-defined]
        typ = Annotated[dict_type, msgspec.Meta(**meta)] if meta else dict_type
        if value.check is None:
            return Compiled(typ)
        value_check = value.check

        def check(mapping: dict[str, Any], where: str) -> dict[str, Any]:
            for k, v in mapping.items():
                mapping[k] = value_check(v, _join(where, k))
            return mapping

        return Compiled(typ, check)

    def _opaque_object(self, schema: dict[str, Any], name: str) -> Compiled:
        """An object with no declared properties (a record's ``meta``): its values stay raw
        JSON; ``minProperties``/``maxProperties`` are enforced while decoding."""
        typ: Any = dict[str, msgspec.Raw]
        meta = {}
        if "minProperties" in schema:
            meta["min_length"] = schema["minProperties"]
        if "maxProperties" in schema:
            meta["max_length"] = schema["maxProperties"]
        if meta:
            typ = Annotated[typ, msgspec.Meta(**meta)]
        return Compiled(typ)


def python_pattern(ecma: str) -> str:
    """A JSON Schema (ECMA-262) pattern for Python's ``re``: each ``$`` outside a character class
    becomes ``\\Z`` — in ECMA-262 ``$`` is the end of the input, in Python it also matches
    before a final newline (so ``"wid\\n"`` would pass ``^[A-Za-z0-9_-]+$``)."""
    out: list[str] = []
    escaped = in_class = False
    for char in ecma:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "[":
            in_class = True
        elif char == "]":
            in_class = False
        elif char == "$" and not in_class:
            out.append("\\Z")
            continue
        out.append(char)
    return "".join(out)


def _all_ints_within(values: list[Any], low: int | None, high: int | None) -> bool:
    """Whether every item is an ``int`` in ``[low, high]`` (the common case of an array of
    integers, checked without a Python step per item)."""
    if not values or set(map(type, values)) != {int}:
        return False
    return (low is None or min(values) >= low) and (high is None or max(values) <= high)


def _identifier(prop: str) -> str:
    name = re.sub(r"\W", "_", prop)
    return f"f_{name}" if not name or name[0].isdigit() or name in ("from", "in", "class") else name


PresenceRule = Callable[[set[str]], tuple[str, str] | None]
"""A rule over the fields present in an object: ``None`` if it holds, else ``(field, problem)``."""


def _conditional_rule(rules: dict[str, Any], name: str) -> PresenceRule:
    """``if``/``then``/``else``, each ``True`` or a rule that only requires or forbids fields."""
    for key, rule in rules.items():
        if rule is True:
            continue
        props = rule.get("properties", {}) if isinstance(rule, dict) else None
        if (
            not isinstance(rule, dict)
            or set(rule) - {"required", "properties", "description"}
            or any(v is not False for v in (props or {}).values())
        ):
            raise UnsupportedSchema(f"{name}: an object's {key} may only require or forbid fields")

    def holds(present: set[str]) -> tuple[str, str] | None:
        branch = rules["then"] if not _breaks(rules["if"], present) else rules["else"]
        broken = _breaks(branch, present)
        if not broken:
            return None
        return broken[0], branch.get("description") or f"{broken[0]} breaks the rule"

    return holds


def _member_rule(member: Any, name: str) -> PresenceRule:
    """An ``allOf`` member of an object: a conditional, or ``not: {required: [...]}``."""
    if isinstance(member, dict) and "if" in member:
        extra = set(member) - {"if", "then", "else", "description"}
        if extra:
            raise UnsupportedSchema(f"{name}: an allOf conditional with {sorted(extra)}")
        return _conditional_rule({k: member.get(k, True) for k in ("if", "then", "else")}, name)
    negated = member.get("not") if isinstance(member, dict) else None
    if (
        not isinstance(negated, dict)
        or set(member) - {"not", "description"}
        or set(negated) != {"required"}
        or len(negated["required"]) < 2
    ):
        raise UnsupportedSchema(
            f"{name}: an object's allOf members may only be presence rules "
            "(not: {required: [a, b, ...]}, or if/then/else)"
        )
    together: list[str] = list(negated["required"])
    problem = member.get("description") or f"{', '.join(together)} exclude each other"

    def holds(present: set[str]) -> tuple[str, str] | None:
        return (together[-1], problem) if all(f in present for f in together) else None

    return holds


def _breaks(rule: Any, present: set[str]) -> list[str]:
    """The fields that make a presence rule (see ``BodyCompiler._presence_rules``) fail: present
    ones it forbids, then absent ones it requires."""
    if rule is True:
        return []
    forbidden = [f for f, s in rule.get("properties", {}).items() if s is False and f in present]
    return forbidden + [f for f in rule.get("required", ()) if f not in present]


def _join(where: str, field: str) -> str:
    return f"{where}.{field}" if where else field


def _invalid(where: str, problem: str, value: Any) -> InvalidRequest:
    field = where or "body"
    return InvalidRequest(f"{field}: {problem}", {"field": field, "value": _json_safe(value)})


def _json_safe(value: Any) -> Any:
    """Integers beyond 64 bits are echoed as strings (orjson renders at most 64-bit ints)."""
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        return str(value)
    return value


class BodyDecoder:
    """Decodes and validates one operation's request body (bytes -> msgspec value); a value
    that breaks the schema is a 400 in words (``schema_errors``), using ``schema`` (the body's
    schema) to name enum values and near-miss fields."""

    def __init__(self, compiled: Compiled, schema: SchemaAt | None = None) -> None:
        self._decoder = msgspec.json.Decoder(compiled.type)
        self._check = compiled.check
        self._schema = schema

    def decode(self, raw: bytes) -> Any:
        if not raw.isascii():  # JSON is UTF-8 (RFC 8259 §8.1); msgspec keeps Raw values unchecked
            check_utf8(raw)
        try:
            value = self._decoder.decode(raw)
        except msgspec.ValidationError as err:
            raise body_error(str(err), self._schema) from None
        except msgspec.DecodeError as err:
            raise InvalidRequest(f"request body is not valid JSON: {err}", {"field": "body"}) from None
        if self._check is not None:
            value = self._check(value, "")
        return value


class ValueValidator:
    """Validates an already-decoded value (a path, query or header parameter). Valid strings
    are remembered (a topic name is checked against its pattern once, not per request)."""

    def __init__(self, compiled: Compiled, name: str, schema: SchemaAt | None = None) -> None:
        self._type = compiled.type
        self._check = compiled.check
        self._name = name
        self._schema = schema
        self._valid: dict[str, Any] = {}

    def validate(self, value: Any) -> Any:
        if type(value) is str:
            known = self._valid.get(value)
            if known is not None:
                return known
            checked = self._validate(value)
            if len(self._valid) >= 4096:
                self._valid.clear()
            self._valid[value] = checked
            return checked
        return self._validate(value)

    def _validate(self, value: Any) -> Any:
        try:
            value = msgspec.convert(value, self._type)
        except msgspec.ValidationError as err:
            raise parameter_error(self._name, str(err), _json_safe(value), self._schema) from None
        if self._check is not None:
            value = self._check(value, self._name)
        return value


def check_utf8(raw: bytes) -> None:
    """400 unless ``raw`` is valid UTF-8."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvalidRequest(
            f"request body is not valid UTF-8 (byte {err.start}): JSON text must be UTF-8", {"field": "body"}
        ) from None


def opt(value: Any, default: Any = None) -> Any:
    """A decoded body field, ``default`` when the request left it unset (``UNSET``)."""
    return default if value is msgspec.UNSET else value


def fields_set(value: Any) -> dict[str, Any]:
    """The fields of a decoded struct that the request set (``UNSET`` ones dropped), under
    their wire names, nested structs included — e.g. a topic config for ``resolve_config``."""
    if not isinstance(value, msgspec.Struct):
        return value  # type: ignore[no-any-return]
    out: dict[str, Any] = {}
    renames = getattr(type(value), "__struct_encode_fields__", value.__struct_fields__)
    for attr, wire in zip(value.__struct_fields__, renames, strict=True):
        v = getattr(value, attr)
        if v is not msgspec.UNSET:
            out[wire] = fields_set(v)
    return out


def too_large(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"request body exceeds {limit} bytes (TOPICS_MAX_BODY_BYTES); split the write",
        {"max_bytes": limit},
    )


# -- records of a write ----------------------------------------------------------------------------


def new_records(records: list[Any], batch_node: str | None, batch_delay: int | None = None) -> NewRecords:
    """The decoded records of a write (``RecordIn`` structs) as the codec's columns: ``data``
    stays the raw JSON bytes as sent (never parsed or re-encoded); ``meta``'s values too; a
    record's own ``delay_ms`` wins over ``batch_delay``. Every write's records go through here:
    an append's, a WebSocket ``publish``'s, a schedule's run."""
    return NewRecords.from_objects(records, batch_node, msgspec.UNSET, msgspec.json.encode, batch_delay)


@cache
def _records_decoder() -> BodyDecoder:
    records = {"type": "array", "items": {"$ref": "#/components/schemas/RecordIn"}}
    return BodyCompiler(load_document()).decoder(records, "Records")


def decode_records(text: bytes, node: str | None) -> NewRecords:
    """A schedule's stored records (the JSON text of a write body's ``records``) decoded exactly
    as an append's — by the spec's ``RecordIn`` and :func:`new_records` — with the batch
    ``node`` applied: the engine's ``schedules.RecordsDecoder`` in a server."""
    return new_records(_records_decoder().decode(text), node)
