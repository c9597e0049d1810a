"""Presence rules of the body compiler (``bodies.BodyCompiler``): an object's ``allOf`` members
``not: {required: [...]}`` (fields that exclude each other, e.g. a diff's ``consumer`` and
``from_seq``) and ``if``/``then``/``else`` — checked after decoding, the failing member's
``description`` as the message — and any other ``allOf`` refused at start-up, so the spec never
states a rule the server skips."""

from __future__ import annotations

from typing import Any

import pytest
from topics_engine.errors import InvalidRequest
from topics_server.bodies import BodyCompiler, BodyDecoder, UnsupportedSchema

PROPS = {"a": {"type": "integer"}, "b": {"type": "boolean"}, "c": {"type": "string"}}


def decoder(**rules: Any) -> BodyDecoder:
    schema = {"type": "object", "additionalProperties": False, "properties": PROPS, **rules}
    return BodyDecoder(BodyCompiler({}).compile(schema, "Rules"))


EXCLUSIONS = decoder(
    allOf=[
        {"not": {"required": ["c", "a"]}, "description": "c and a exclude each other"},
        {"not": {"required": ["c", "b"]}},
        {"if": {"required": ["b"]}, "then": {"required": ["a"], "description": "b needs a"}},
    ]
)


@pytest.mark.parametrize("body", [b"{}", b'{"a": 1}', b'{"c": "x"}', b'{"a": 1, "b": true}'])
def test_bodies_that_keep_the_rules_decode(body: bytes) -> None:
    EXCLUSIONS.decode(body)


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (b'{"c": "x", "a": 1}', "a", "a: c and a exclude each other"),
        (b'{"c": "x", "b": false, "a": 1}', "a", "a: c and a exclude each other"),
        (b'{"c": "x", "b": false}', "b", "b: c, b exclude each other"),
        (b'{"b": true}', "a", "a: b needs a"),
    ],
)
def test_the_first_broken_rule_names_its_field(body: bytes, field: str, message: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        EXCLUSIONS.decode(body)
    assert info.value.detail == {"field": field}
    assert info.value.message == message


def test_rules_of_a_nested_object_name_its_path() -> None:
    inner = {"type": "object", "properties": PROPS, "allOf": [{"not": {"required": ["a", "b"]}}]}
    outer = {"type": "object", "properties": {"per": {"type": "object", "additionalProperties": inner}}}
    decode = BodyDecoder(BodyCompiler({}).compile(outer, "Outer")).decode
    decode(b'{"per": {"x": {"a": 1}}}')
    with pytest.raises(InvalidRequest) as info:
        decode(b'{"per": {"x": {"a": 1, "b": true}}}')
    assert info.value.detail == {"field": "per.x.b"}


@pytest.mark.parametrize(
    "member",
    [
        {"not": {"required": ["a"]}},  # a single field: that is "absent", say it with properties
        {"not": {"properties": {"a": False}}},
        {"required": ["a"]},
        {"$ref": "#/components/schemas/Other"},
        {"if": {"required": ["a"]}, "then": {"minimum": 1}},
    ],
)
def test_other_all_of_members_fail_the_start(member: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedSchema):
        decoder(allOf=[member])


def test_all_of_only_on_an_object() -> None:
    with pytest.raises(UnsupportedSchema):
        BodyCompiler({}).compile({"type": "string", "allOf": [{"not": {"required": ["a", "b"]}}]}, "S")
