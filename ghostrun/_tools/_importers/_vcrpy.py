"""vcrpy's cassettes: YAML or JSON, gzipped or not (as langchain writes ``.yaml.gz``).

The format (vcrpy 1.x to 9.x)::

    interactions:
    - request:  {method, uri, headers: {Name: [value, ...]}, body: str | !!binary | null}
      response: {status: {code, message}, headers: {...}, body: {string: str | !!binary}}
    version: 1

Bodies may still be compressed (``content-encoding`` kept), or decoded with the
header left in place (vcrpy's urllib3 stub does that, and so does
``decode_compressed_response=True``); both read right. vcrpy keeps no recording
time, so the response's ``date`` header, when it has one, gives the day.
"""

from __future__ import annotations

import zlib
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import orjson

from ._bounded import OverLimit, read_file
from ._source import (
    Exchange,
    SourceFile,
    UnreadableSource,
    decoded,
    header_pairs,
    load_yaml,
)

__all__ = ["looks_like_vcrpy", "read_document", "read_vcrpy"]


def read_document(path: Path) -> Any:
    """The parsed document of a YAML or JSON cassette file, gzipped or not."""
    try:
        raw = read_file(path)  # within replay's limit for a file, inflated or not
    except OverLimit as exc:
        raise UnreadableSource(str(exc)) from None
    except OSError as exc:
        raise UnreadableSource(f"cannot be read ({exc.strerror or exc})") from None
    except zlib.error as exc:
        raise UnreadableSource(f"a broken gzip file ({exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UnreadableSource("not UTF-8 text") from None
    if text.lstrip()[:1] in ("{", "["):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise UnreadableSource(f"not valid JSON ({exc})") from None
    return load_yaml(text, path)


def looks_like_vcrpy(document: Any) -> bool:
    if not isinstance(document, dict) or not isinstance(document.get("interactions"), list):
        return False
    first = (document["interactions"] or [{}])[0]
    response = first.get("response") if isinstance(first, dict) else None
    return not isinstance(response, dict) or isinstance(response.get("status"), dict)


def read_vcrpy(path: Path, document: dict[str, Any]) -> SourceFile:
    source = SourceFile(path, "vcrpy")
    for number, interaction in enumerate(document["interactions"], 1):
        try:
            source.exchanges.append(_exchange(interaction))
        except UnreadableSource as exc:
            source.skipped.append(f"interaction {number}: {exc}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            source.skipped.append(f"interaction {number}: not a vcrpy interaction ({exc!r})")
    return source


def _exchange(interaction: dict[str, Any]) -> Exchange:
    request, response = interaction["request"], interaction["response"]
    request_headers = header_pairs(request.get("headers"))
    response_headers = header_pairs(response.get("headers"))
    body = response.get("body") or {}
    content = body.get("string", body.get("content")) if isinstance(body, dict) else body
    status = response["status"]
    return Exchange(
        method=str(request["method"]).upper(),
        uri=str(request["uri"]),
        request_headers=request_headers,
        request_body=decoded(_bytes(request.get("body")), request_headers),
        status=int(status["code"] if isinstance(status, dict) else status),
        response_headers=response_headers,
        response_body=decoded(_bytes(content), response_headers),
        recorded_on=_day(response_headers),
    )


def _bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, dict | list):  # a body some stubs kept parsed
        return orjson.dumps(value)
    raise UnreadableSource(f"a body of an unknown kind ({type(value).__name__})")


def _day(headers: list[tuple[str, str]]) -> str:
    """The day of the response's ``date`` header, or "" when it has none that parses."""
    for name, value in headers:
        if name == "date":
            try:
                return parsedate_to_datetime(value).date().isoformat()
            except (TypeError, ValueError, IndexError):
                return ""
    return ""
