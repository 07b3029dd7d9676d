"""The JSON Schema subset behind ``expect(...).is_valid_json(schema)``: pure tables."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ghostrun._assertions._schema import json_equal, schema_errors

ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^A[0-9]+$"},
        "qty": {"type": "integer", "minimum": 1},
        "status": {"enum": ["open", "shipped"]},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"sku": {"type": "string"}, "price": {"type": "number"}},
                "required": ["sku", "price"],
            },
        },
        "note": {"type": ["string", "null"]},
    },
    "required": ["id", "qty"],
    "additionalProperties": False,
}
VALID_ORDER = {
    "id": "A123",
    "qty": 2,
    "status": "open",
    "items": [{"sku": "x", "price": 9.5}],
    "note": None,
}


@pytest.mark.parametrize(
    ("instance", "schema"),
    [
        ("hi", {"type": "string"}),
        (3, {"type": "integer"}),
        (3.0, {"type": "integer"}),  # JSON Schema: a zero fraction is an integer
        (3, {"type": "number"}),
        (3.5, {"type": "number"}),
        (True, {"type": "boolean"}),
        (None, {"type": "null"}),
        ([], {"type": "array"}),
        ({}, {"type": "object"}),
        (None, {"type": ["string", "null"]}),
        ("b", {"enum": ["a", "b"]}),
        (1, {"const": 1}),
        ({"a": 1, "b": 2}, {"properties": {"a": {"type": "integer"}}}),  # extra keys allowed
        ({"a": 1, "b": "x"}, {"additionalProperties": {"type": "string"}, "properties": {"a": {}}}),
        ("abc", {"minLength": 3, "maxLength": 3}),
        ([1, 2], {"minItems": 2, "maxItems": 2}),
        (5, {"minimum": 5, "maximum": 5}),
        (5, {"exclusiveMinimum": 4, "exclusiveMaximum": 6}),
        ("anything", True),
        ("hi", {"title": "Greeting", "description": "annotations only", "default": "x"}),
        (VALID_ORDER, ORDER),
        ("not an object", {"required": ["a"], "properties": {"a": {}}}),  # applies to objects
        (1, {"anyOf": [{"type": "string"}, {"type": "integer"}]}),
        (1, {"oneOf": [{"type": "string"}, {"type": "integer"}]}),
        (2, {"allOf": [{"type": "integer"}, {"minimum": 1}]}),
    ],
)
def test_valid(instance: Any, schema: Any) -> None:
    assert schema_errors(instance, schema) == []


@pytest.mark.parametrize(
    ("instance", "schema", "errors"),
    [
        (1, {"type": "string"}, ["$: expected string, got integer 1"]),
        (True, {"type": "integer"}, ["$: expected integer, got boolean true"]),
        (True, {"type": "number"}, ["$: expected number, got boolean true"]),
        (2.5, {"type": "integer"}, ["$: expected integer, got number 2.5"]),
        ("1", {"type": "number"}, ['$: expected number, got string "1"']),
        (1, {"type": ["string", "null"]}, ["$: expected string or null, got integer 1"]),
        ("c", {"enum": ["a", "b"]}, ['$: expected one of ["a", "b"], got "c"']),
        (True, {"enum": [1]}, ["$: expected one of [1], got true"]),
        (2, {"const": 1}, ["$: expected 1, got 2"]),
        (
            {},
            {"required": ["a", "b"]},
            ["$: missing required property 'a'", "$: missing required property 'b'"],
        ),
        (
            {"a": 1, "z": 2},
            {"properties": {"a": {}}, "additionalProperties": False},
            ["$: unexpected property 'z'"],
        ),
        (
            {"a": {"b": [1, "x"]}},
            {"properties": {"a": {"properties": {"b": {"items": {"type": "integer"}}}}}},
            ['$.a.b[1]: expected integer, got string "x"'],
        ),
        (
            {"my key": 1},
            {"properties": {"my key": {"type": "string"}}},
            ['$["my key"]: expected string, got integer 1'],
        ),
        ("ab", {"minLength": 3}, ['$: expected at least 3 characters, got string "ab"']),
        ([1, 2, 3], {"maxItems": 2}, ["$: expected at most 2 items, got array [1, 2, 3]"]),
        (0, {"minimum": 1}, ["$: expected a number >= 1, got integer 0"]),
        (6, {"exclusiveMaximum": 6}, ["$: expected a number < 6, got integer 6"]),
        ("B1", {"pattern": "^A"}, ["$: expected a string matching '^A', got \"B1\""]),
        (1, False, ["$: no value is allowed here, got integer 1"]),
        (
            1.5,
            {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            [
                "$: matches none of anyOf ($: expected string, got number 1.5 | "
                "$: expected integer, got number 1.5)"
            ],
        ),
        (
            1,
            {"oneOf": [{"type": "integer"}, {"type": "number"}]},
            ["$: matches 2 branches of oneOf, expected exactly one"],
        ),
        (
            {**VALID_ORDER, "qty": 0, "extra": 1, "items": [{"sku": "x"}]},
            ORDER,
            [
                "$.qty: expected a number >= 1, got integer 0",
                "$.items[0]: missing required property 'price'",
                "$: unexpected property 'extra'",
            ],
        ),
    ],
)
def test_invalid_names_the_path(instance: Any, schema: Any, errors: list[str]) -> None:
    assert schema_errors(instance, schema) == errors


def test_pydantic_style_schema_with_refs_and_optional() -> None:
    """What ``BaseModel.model_json_schema()`` emits: $defs, $ref, anyOf with null."""
    schema = {
        "$defs": {
            "Status": {"enum": ["open", "shipped"], "title": "Status", "type": "string"},
        },
        "properties": {
            "status": {"$ref": "#/$defs/Status"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["status"],
        "title": "Order",
        "type": "object",
    }

    assert schema_errors({"status": "open", "note": None}, schema) == []
    assert schema_errors({"status": "lost"}, schema) == [
        '$.status: expected one of ["open", "shipped"], got "lost"'
    ]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "str"}, "unknown type 'str'"),
        ({"uniqueItems": True}, "unsupported JSON Schema keyword 'uniqueItems'"),
        ({"properties": {"a": {"if": {}}}}, "unsupported JSON Schema keyword 'if' (at $.a)"),
        ({"$ref": "https://example.com/s.json"}, "only local '#/...' references"),
        ({"$ref": "#/$defs/Missing"}, "points to nothing"),
        ({"properties": {"a": 3}}, "expected an object"),
    ],
)
def test_unsupported_or_broken_schema_is_an_error_not_a_pass(schema: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        schema_errors({"a": 1}, schema)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1, True),
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        (True, True, True),
        ("1", 1, False),
        ([1, 2], (1, 2), True),
        ([1, 2], [2, 1], False),
        ({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),  # nested values compare exactly, not as subsets
        ({"a": True}, {"a": 1}, False),
        (None, None, True),
        (None, 0, False),
    ],
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal
