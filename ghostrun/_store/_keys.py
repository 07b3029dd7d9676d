"""The match key: what makes two requests "the same request".

The key is the sha256 of the method, the canonical URL and the canonical
body. Canonical means independent of what does not change the answer: key
order and white space in JSON, the random multipart boundary, fields the user
chose to ignore, and credentials (headers are never part of the key;
credential query parameters, form and multipart fields and JSON body fields
are dropped), so a cassette recorded with one API key replays with another,
or none.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode

import orjson

from .._core._normalize import Normalizer
from .._secrets._credentials import is_credential_field, is_credential_param
from .._secrets._walk import has_credential_field, without_credential_fields
from .._wire._multipart import multipart_parts

__all__ = [
    "canonical_body",
    "canonical_url",
    "is_credential_field",
    "is_credential_param",
    "match_key",
    "remove_field",
    "split_field_paths",
    "without_fields",
]

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "grpc": 443}
_SORTED_COMPACT = orjson.OPT_SORT_KEYS


def canonical_url(scheme: str, host: str, port: int | None, path: str, query: str) -> str:
    """Scheme, host, port (when not the default), path and sorted query without credentials."""
    scheme = scheme.lower()
    netloc = host.lower().rstrip(".")  # api.openai.com. is api.openai.com
    if ":" in netloc and not netloc.startswith("["):
        netloc = f"[{netloc}]"
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc = f"{netloc}:{port}"
    url = f"{scheme}://{netloc}{path or '/'}"
    if query:
        pairs = sorted(
            p for p in parse_qsl(query, keep_blank_values=True) if not is_credential_param(p[0])
        )
        if pairs:
            url += "?" + urlencode(pairs)
    return url


_SEGMENT = re.compile(r"\.?([^.\[\]]+)|\[(\d+|\*)\]")
_FIELD_NOTATION = "'metadata.trace_id', 'messages[0].name' or 'messages[*].name'"


def split_field_paths(fields: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    """``ignore_fields`` in the miss diff's notation, as the key's path tuples.

    ``"metadata.trace_id"`` -> ``("metadata", "trace_id")``, ``"messages[0].name"``
    -> ``("messages", "0", "name")``; ``[*]`` (or ``.*``) matches any index or key.
    The dotted ``messages.0.name`` reads the same. A path that can never match (empty,
    unbalanced brackets, a bracket that holds no index) is a ValueError naming it.
    """
    return tuple(_field_path(field) for field in fields)


def _field_path(field: object) -> tuple[str, ...]:
    if not isinstance(field, str):
        raise ValueError(f"ignore_fields takes strings ({_FIELD_NOTATION}), got {field!r}")
    segments: list[str] = []
    at = 0
    while at < len(field):
        found = _SEGMENT.match(field, at)
        if found is None or (found.group(1) is not None and at > 0 and field[at] != "."):
            break
        if found.group(1) is not None and at == 0 and field[0] == ".":
            break
        segments.append(found.group(1) or found.group(2))
        at = found.end()
    if not segments or at < len(field):
        raise ValueError(
            f"invalid ignore_fields path {field!r}: it can never match a field (write it "
            f"as the miss diff shows it: {_FIELD_NOTATION})"
        )
    return tuple(segments)


def without_fields(value: Any, ignore: Sequence[tuple[str, ...]]) -> Any:
    """A copy of a parsed JSON value with the ``ignore`` paths removed (for showing it)."""
    value = orjson.loads(orjson.dumps(value))
    for path in ignore:
        remove_field(value, path)
    return value


def canonical_body(
    body: bytes,
    content_type: str,
    ignore: Sequence[tuple[str, ...]] = (),
    normalize: Normalizer | None = None,
) -> bytes:
    """The body as the key sees it (see the module docstring; ``normalize``: `_normalize`)."""
    if not body:
        return b""
    ctype = content_type.lower()
    if "json" in ctype or body[:1] in (b"{", b"["):
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            return body
        if has_credential_field(value):
            value = without_credential_fields(value)
        for path in ignore:
            remove_field(value, path)
        if normalize is not None:
            value = normalize.value(value)
        return orjson.dumps(value, option=_SORTED_COMPACT)
    if normalize is not None and ctype.startswith("text/"):
        return normalize.text(body.decode("utf-8", "surrogateescape")).encode(
            "utf-8", "surrogateescape"
        )
    if ctype.startswith("multipart/"):
        return _canonical_multipart(body, content_type)
    if ctype.startswith("application/x-www-form-urlencoded"):
        pairs = parse_qsl(body.decode("latin-1"), keep_blank_values=True)
        return urlencode(sorted(p for p in pairs if not is_credential_param(p[0]))).encode()
    return body


def match_key(method: str, url: str, body: bytes) -> str:
    digest = hashlib.sha256(b"\n".join((method.upper().encode(), url.encode(), body)))
    return digest.hexdigest()[:32]


def remove_field(value: Any, path: tuple[str, ...]) -> None:
    """Delete the field at ``path`` (from `split_field_paths`) from a parsed JSON value."""
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        targets = list(value) if head == "*" else [head] if head in value else []
        for name in targets:
            if rest:
                remove_field(value[name], rest)
            else:
                del value[name]
    elif isinstance(value, list):
        indices = range(len(value)) if head == "*" else [int(head)] if head.isdigit() else []
        for index in reversed(indices):
            if index >= len(value):
                continue
            if rest:
                remove_field(value[index], rest)
            else:
                del value[index]


def _canonical_multipart(body: bytes, content_type: str) -> bytes:
    parts = multipart_parts(body, content_type)
    if parts is None:
        return body
    kept = [raw for name, _content, raw in parts if not (name and is_credential_param(name))]
    return b"\x00".join(kept)
