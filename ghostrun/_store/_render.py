"""A stored body as lines of text, to diff: what a miss and ``ghostrun review`` show.

A JSON body becomes one ``path: value`` line per leaf (keys sorted, a
multi-line string one line each), so two versions of a request diff field by
field; any other body is its text, line by line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

__all__ = ["render_body"]


def render_body(body: Any) -> list[str]:
    """A body as ``path: value`` lines; multi-line strings one line each, to diff well."""
    if isinstance(body, dict) and len(body) == 1 and "json" in body:
        return list(_flatten(body["json"], ""))
    if isinstance(body, dict) and len(body) == 1:
        (value,) = body.values()
        return str(value).splitlines() if isinstance(value, str) else [repr(value)]
    return [repr(body)]


def _flatten(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, dict):
        if not value:
            yield f"{path or '.'}: {{}}"
        for k in sorted(value):
            yield from _flatten(value[k], f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        if not value:
            yield f"{path or '.'}: []"
        for i, item in enumerate(value):
            yield from _flatten(item, f"{path}[{i}]")
    elif isinstance(value, str) and "\n" in value:
        first, *rest = value.split("\n")
        yield f"{path}: {first}"
        for line in rest:
            yield f"{' ' * len(path)}| {line}"
    else:
        yield f"{path}: {orjson.dumps(value).decode()}"
