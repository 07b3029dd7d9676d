"""cassetter's cassettes (0.16): YAML or TOML, written by its Rust core.

YAML::

    version: 1
    interactions:
    - request:  {method, uri, headers: {name: [value]}, body: {type, content}}
      response: {status: 200, headers: {...}, body: {type, content}}
      recorded_at: 2026-12-02T17:52:15.074645+00:00

TOML spells each body as ``body_type`` and ``body_content`` beside the other
fields (``[[interactions]]``, ``[interactions.request]``, ...). ``type`` is
``json`` (content: the value in YAML, its text in TOML), ``text``, ``binary``
(hex digits) or ``none``. Bodies are stored decoded. gRPC and WebSocket
interactions are not imported (said as skipped).
"""

from __future__ import annotations

import tomllib
import zlib
from pathlib import Path
from typing import Any

import orjson

from ..._store._limits import limit_message
from ._bounded import OverLimit, read_file
from ._source import Exchange, SourceFile, UnreadableSource, decoded, header_pairs

__all__ = ["looks_like_cassetter", "read_cassetter", "read_toml"]


def read_toml(path: Path) -> Any:
    """A TOML file within replay's limit for a file; nesting Python's parser cannot follow
    (it recurses) is refused, as replay refuses nesting past its limit."""
    try:
        return tomllib.loads(read_file(path).decode("utf-8"))
    except OverLimit as exc:
        raise UnreadableSource(str(exc)) from None
    except RecursionError:
        raise UnreadableSource(
            f"its TOML nests deeper than Python's parser follows: {_DEEP}"
        ) from None
    except (OSError, zlib.error, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UnreadableSource(f"not a readable TOML file ({exc})") from None


_DEEP = limit_message("json_depth", "more than Python's recursion limit")


def looks_like_cassetter(document: Any) -> bool:
    if not isinstance(document, dict):
        return False
    interactions = document.get("interactions")
    if not isinstance(interactions, list):
        return "grpc_interactions" in document or "ws_interactions" in document
    first = (interactions or [{}])[0]
    return isinstance(first, dict) and (
        "recorded_at" in first or isinstance((first.get("response") or {}).get("status"), int)
    )


def read_cassetter(path: Path, document: dict[str, Any]) -> SourceFile:
    source = SourceFile(path, "cassetter")
    for number, interaction in enumerate(document.get("interactions") or [], 1):
        try:
            source.exchanges.append(_exchange(interaction))
        except UnreadableSource as exc:
            source.skipped.append(f"interaction {number}: {exc}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            source.skipped.append(f"interaction {number}: not a cassetter interaction ({exc!r})")
    for kind, what in (("grpc_interactions", "gRPC"), ("ws_interactions", "WebSocket")):
        count = len(document.get(kind) or [])
        if count:
            source.skipped.append(f"{count} {what} interaction(s): not imported (HTTP only)")
    return source


def _exchange(interaction: dict[str, Any]) -> Exchange:
    request, response = interaction["request"], interaction["response"]
    request_headers = header_pairs(request.get("headers"))
    response_headers = header_pairs(response.get("headers"))
    return Exchange(
        method=str(request["method"]).upper(),
        uri=str(request["uri"]),
        request_headers=request_headers,
        request_body=decoded(_body(request), request_headers),
        status=int(response["status"]),
        response_headers=response_headers,
        response_body=decoded(_body(response), response_headers),
        recorded_on=str(interaction.get("recorded_at") or "")[:10],
    )


def _body(holder: dict[str, Any]) -> bytes:
    body = holder.get("body")
    if isinstance(body, dict):
        kind, content = body.get("type"), body.get("content")
    else:  # TOML
        kind, content = holder.get("body_type"), holder.get("body_content")
    if kind in (None, "none") or content is None:
        return b""
    if kind == "binary":
        try:
            return bytes.fromhex(str(content))
        except ValueError:
            raise UnreadableSource("a binary body that is not hex digits") from None
    if kind == "json" and not isinstance(content, str):
        return orjson.dumps(content)
    if kind in ("json", "text"):
        return str(content).encode("utf-8")
    raise UnreadableSource(f"a body of unknown type {kind!r}")
