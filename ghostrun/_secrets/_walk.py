"""The two walks of a JSON value every road shares (DESIGN §4): one rule, one walker.

Credential fields: the value of a field whose name is a credential by the rule
(`_credentials.is_credential_field`), unless it holds a JSON schema (a schema
describes a credential field, it does not carry one). The match key drops them,
redaction collects and masks what they hold: over HTTP, WebSocket frames and
gRPC messages alike, all through `map_fields` (or its reader, `visit_fields`).

Every string: `map_strings` changes each string of a value (mask a secret, a
shape, a URL's credential parameters, scrub a run log's text); `strings` reads
them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

from ._credentials import is_credential_field, is_schema

__all__ = [
    "DROP",
    "credential_values",
    "has_credential_field",
    "map_field_leaves",
    "map_fields",
    "map_strings",
    "mask_credential_fields",
    "strings",
    "visit_fields",
    "without_credential_fields",
]

DROP: Final = object()
"""What `map_fields`'s ``at_field`` returns to drop the field."""

Rule = Callable[[str], bool]
"""Which field names carry a credential: `is_credential_field`, or a response's
`_credentials.is_minted_field`."""


def map_fields(
    value: Any,
    at_field: Callable[[Any], Any],
    *,
    is_field: Rule = is_credential_field,
    at_other: Callable[[Any], Any] | None = None,
) -> Any:
    """``value`` with each credential field's value replaced by ``at_field(item)`` (`DROP`
    drops the field), and each other number or string by ``at_other(item)``.

    A field whose value is a JSON schema is structure: walked on as any other value.
    What does not change is returned as it was (the same objects): a walk that only
    reads builds nothing.
    """

    def walk(value: Any) -> Any:  # one closure, so the recursion passes one argument
        if isinstance(value, dict):
            out: dict[Any, Any] | None = None
            for index, (key, item) in enumerate(value.items()):
                new = at_field(item) if is_field(str(key)) and not is_schema(item) else walk(item)
                if out is None and new is not item:
                    out = dict(list(value.items())[:index])
                if out is not None and new is not DROP:
                    out[key] = new
            return value if out is None else out
        if isinstance(value, list):
            items: list[Any] | None = None
            for index, item in enumerate(value):
                new = walk(item)
                if items is None and new is not item:
                    items = value[:index]
                if items is not None:
                    items.append(new)
            return value if items is None else items
        if at_other is not None and _is_leaf(value):
            return at_other(value)
        return value

    return walk(value)


def map_field_leaves(
    value: Any,
    at_leaf: Callable[[str | int | float], Any],
    *,
    is_field: Rule = is_credential_field,
    at_other: Callable[[Any], Any] | None = None,
) -> Any:
    """``value`` with each number and string a credential field holds, however deep,
    replaced by ``at_leaf(item)`` (a schema inside one is structure: walked on)."""

    def at_field(item: Any) -> Any:
        if isinstance(item, dict):
            if is_schema(item):
                return map_fields(item, at_field, is_field=is_field, at_other=at_other)
            return {k: at_field(v) for k, v in item.items()}
        if isinstance(item, list):
            return [at_field(v) for v in item]
        return at_leaf(item) if _is_leaf(item) else item

    return map_fields(value, at_field, is_field=is_field, at_other=at_other)


def visit_fields(
    value: Any,
    at_leaf: Callable[[str | int | float], object],
    *,
    is_field: Rule = is_credential_field,
    at_string: Callable[[str], object] | None = None,
) -> None:
    """`map_field_leaves` for a reader: ``at_leaf`` sees each number and string a credential
    field holds, ``at_string`` each other string; nothing is built (the hot path's
    collecting reads every request body)."""

    def held(item: Any) -> None:  # all a credential field holds, but a schema inside it
        if isinstance(item, dict):
            if is_schema(item):
                walk(item)
            else:
                for inner in item.values():
                    held(inner)
        elif isinstance(item, list):
            for inner in item:
                held(inner)
        elif _is_leaf(item):
            at_leaf(item)

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if is_field(str(key)) and not is_schema(item):
                    held(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif at_string is not None and isinstance(value, str):
            at_string(value)

    walk(value)


def credential_values(
    value: Any, *, is_field: Rule = is_credential_field
) -> list[str | int | float]:
    """The numbers and strings credential fields hold, in the order they appear."""
    found: list[str | int | float] = []
    visit_fields(value, found.append, is_field=is_field)
    return found


def mask_credential_fields(value: Any, mask: str) -> Any:
    """``value`` with every number and non-empty string a credential field holds masked."""
    return map_field_leaves(value, lambda item: mask if item != "" else item)


def without_credential_fields(value: Any) -> Any:
    """``value`` without its credential fields (the match key's reading)."""
    return map_fields(value, lambda item: DROP)


def has_credential_field(value: Any) -> bool:
    """Whether any field of a parsed JSON value is a credential field: most bodies have none.

    Read only, and it stops at the first: `map_fields`'s rule, without its building. It
    reads every request's body (the match key): it calls itself for objects and lists
    only, never for a string or a number."""
    if isinstance(value, dict):
        for key, item in value.items():
            if is_credential_field(str(key)) and not is_schema(item):
                return True
            if isinstance(item, _CONTAINERS) and has_credential_field(item):
                return True
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, _CONTAINERS) and has_credential_field(item):
                return True
    return False


_CONTAINERS = (dict, list)


def _is_leaf(value: Any) -> bool:
    """A JSON value's number or string (True and False, ints to isinstance, are neither)."""
    return isinstance(value, str | int | float) and value is not True and value is not False


def map_strings(
    value: Any,
    change: Callable[[str], Any],
    *,
    keys: bool = False,
    skip: Callable[[Any], bool] | None = None,
) -> Any:
    """``value`` with each string ``s`` in it replaced by ``change(s)``, the objects' keys
    too if ``keys``; a part ``skip`` picks is kept as it is (a binary body)."""
    if skip is not None and skip(value):
        return value
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {
            (change(k) if keys and isinstance(k, str) else k): map_strings(
                v, change, keys=keys, skip=skip
            )
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [map_strings(v, change, keys=keys, skip=skip) for v in value]
    return value


def strings(value: Any, *, keys: bool = True) -> Iterator[str]:
    """Every string of a JSON value, the objects' keys too if ``keys``."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if keys:
                yield str(key)
            yield from strings(item, keys=keys)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item, keys=keys)
