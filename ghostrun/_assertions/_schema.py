"""A small JSON Schema validator: the subset that checks an LLM's JSON reply.

Enough for hand-written schemas and for pydantic's ``model_json_schema()``
(local ``$ref``, ``anyOf`` for optional fields). A keyword outside the subset
raises ``ValueError`` instead of being skipped: a constraint the user wrote
must never pass unchecked.

Errors name the JSON path that failed: ``$.items[2].price: expected number,
got string "12"``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["json_equal", "schema_errors"]

# A failed expectation's traceback ends in the test, not in these frames: unittest
# leaves out modules that set ``__unittest``, pytest those that set ``__tracebackhide__``.
__unittest = True
__tracebackhide__ = True

# Keywords that describe but never constrain (and containers of definitions).
_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "format",
        "readOnly",
        "writeOnly",
        "deprecated",
    }
)


def schema_errors(instance: Any, schema: Mapping[str, Any] | bool) -> list[str]:
    """Every violation of ``schema`` by ``instance`` as ``"<path>: <problem>"``.

    An empty list means valid. ``ValueError`` if the schema uses a keyword
    outside the supported subset or is itself malformed.
    """
    return _Validator(schema).errors(instance, schema, "$")


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: ``True`` is not ``1``, ``1`` is ``1.0``, tuples are arrays."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (Mapping, list, tuple)) or isinstance(b, (Mapping, list, tuple)):
        return False
    return bool(a == b)


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    """JSON Schema counts ``1.0`` as an integer; ``True`` is never one."""
    if isinstance(value, float):
        return value.is_integer()
    return _is_number(value)


_TYPE_TESTS: dict[str, Callable[[Any], bool]] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": _is_integer,
    "number": _is_number,
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, (list, tuple)),
    "object": lambda v: isinstance(v, Mapping),
}


def _show(value: Any) -> str:
    """A value as JSON for a message, cut short when long."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 80 else text[:77] + "..."


def _got(value: Any) -> str:
    return f"{json_type(value)} {_show(value)}"


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


class _Validator:
    """Holds the root schema so local ``$ref`` pointers can be resolved."""

    def __init__(self, root: Mapping[str, Any] | bool) -> None:
        self.root = root

    def errors(self, instance: Any, schema: Any, path: str) -> list[str]:
        if schema is True:
            return []
        if schema is False:
            return [f"{path}: no value is allowed here, got {_got(instance)}"]
        if not isinstance(schema, Mapping):
            raise ValueError(f"invalid JSON Schema at {path}: expected an object, got {schema!r}")
        found: list[str] = []
        for keyword in schema:
            if keyword in _ANNOTATIONS:
                continue
            check = _CHECKS.get(keyword)
            if check is None:
                raise ValueError(
                    f"unsupported JSON Schema keyword {keyword!r} (at {path}); "
                    f"ghostrun supports: {', '.join(sorted(_CHECKS))}"
                )
            found += check(self, instance, schema, path)
        return found

    def resolve(self, ref: str) -> Any:
        """A local JSON pointer such as ``#/$defs/Order``."""
        if not (ref == "#" or ref.startswith("#/")):
            raise ValueError(f"unsupported $ref {ref!r}: only local '#/...' references")
        node: Any = self.root
        for token in ref[2:].split("/") if ref != "#" else []:
            key = token.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or key not in node:
                raise ValueError(f"$ref {ref!r} points to nothing in the schema")
            node = node[key]
        return node


_Check = Callable[[_Validator, Any, Mapping[str, Any], str], list[str]]


def _type(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    wanted = schema["type"]
    names = [wanted] if isinstance(wanted, str) else list(wanted)
    unknown = [n for n in names if n not in _TYPE_TESTS]
    if unknown:
        raise ValueError(f"invalid JSON Schema at {path}: unknown type {unknown[0]!r}")
    if any(_TYPE_TESTS[n](instance) for n in names):
        return []
    return [f"{path}: expected {' or '.join(names)}, got {_got(instance)}"]


def _enum(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    options = schema["enum"]
    if any(json_equal(instance, option) for option in options):
        return []
    return [f"{path}: expected one of {_show(options)}, got {_show(instance)}"]


def _const(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    if json_equal(instance, schema["const"]):
        return []
    return [f"{path}: expected {_show(schema['const'])}, got {_show(instance)}"]


def _required(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    if not isinstance(instance, Mapping):
        return []
    return [
        f"{path}: missing required property {name!r}"
        for name in schema["required"]
        if name not in instance
    ]


def _properties(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    if not isinstance(instance, Mapping):
        return []
    found: list[str] = []
    for name, sub in schema["properties"].items():
        if name in instance:
            found += v.errors(instance[name], sub, _child(path, name))
    return found


def _additional(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    if not isinstance(instance, Mapping):
        return []
    known = schema.get("properties", {})
    extra = [name for name in instance if name not in known]
    sub = schema["additionalProperties"]
    if sub is False:
        return [f"{path}: unexpected property {name!r}" for name in extra]
    found: list[str] = []
    for name in extra:
        found += v.errors(instance[name], sub, _child(path, name))
    return found


def _items(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    if not isinstance(instance, (list, tuple)):
        return []
    found: list[str] = []
    for index, item in enumerate(instance):
        found += v.errors(item, schema["items"], f"{path}[{index}]")
    return found


def _bound(
    keyword: str,
    within: Callable[[Any, Any], bool],
    applies: Callable[[Any], bool],
    size: Callable[[Any], Any],
    says: str,
) -> _Check:
    """A check comparing a size (length, count or the number itself) with a limit."""

    def check(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
        limit = schema[keyword]
        if not applies(instance) or within(size(instance), limit):
            return []
        return [f"{path}: expected {says.format(limit)}, got {_got(instance)}"]

    return check


def _pattern(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    if not isinstance(instance, str) or re.search(schema["pattern"], instance):
        return []
    return [f"{path}: expected a string matching {schema['pattern']!r}, got {_show(instance)}"]


def _any_of(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    branches = [v.errors(instance, sub, path) for sub in schema["anyOf"]]
    if any(not errs for errs in branches):
        return []
    details = " | ".join("; ".join(errs) for errs in branches)
    return [f"{path}: matches none of anyOf ({details})"]


def _one_of(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    branches = [v.errors(instance, sub, path) for sub in schema["oneOf"]]
    matched = sum(1 for errs in branches if not errs)
    if matched == 1:
        return []
    if matched > 1:
        return [f"{path}: matches {matched} branches of oneOf, expected exactly one"]
    details = " | ".join("; ".join(errs) for errs in branches)
    return [f"{path}: matches none of oneOf ({details})"]


def _all_of(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    found: list[str] = []
    for sub in schema["allOf"]:
        found += v.errors(instance, sub, path)
    return found


def _ref(v: _Validator, instance: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    return v.errors(instance, v.resolve(schema["$ref"]), path)


def _is_array(value: Any) -> bool:
    return isinstance(value, (list, tuple))


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _same(value: Any) -> Any:
    return value


def _le(n: Any, limit: Any) -> bool:
    return bool(n <= limit)


def _ge(n: Any, limit: Any) -> bool:
    return bool(n >= limit)


def _lt(n: Any, limit: Any) -> bool:
    return bool(n < limit)


def _gt(n: Any, limit: Any) -> bool:
    return bool(n > limit)


_CHECKS: dict[str, _Check] = {
    "$ref": _ref,
    "additionalProperties": _additional,
    "allOf": _all_of,
    "anyOf": _any_of,
    "const": _const,
    "enum": _enum,
    "exclusiveMaximum": _bound("exclusiveMaximum", _lt, _is_number, _same, "a number < {}"),
    "exclusiveMinimum": _bound("exclusiveMinimum", _gt, _is_number, _same, "a number > {}"),
    "items": _items,
    "maxItems": _bound("maxItems", _le, _is_array, len, "at most {} items"),
    "maxLength": _bound("maxLength", _le, _is_str, len, "at most {} characters"),
    "maximum": _bound("maximum", _le, _is_number, _same, "a number <= {}"),
    "minItems": _bound("minItems", _ge, _is_array, len, "at least {} items"),
    "minLength": _bound("minLength", _ge, _is_str, len, "at least {} characters"),
    "minimum": _bound("minimum", _ge, _is_number, _same, "a number >= {}"),
    "oneOf": _one_of,
    "pattern": _pattern,
    "properties": _properties,
    "required": _required,
    "type": _type,
}
