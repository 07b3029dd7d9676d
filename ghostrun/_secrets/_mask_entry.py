"""Masking a cassette entry before it is written (DESIGN §4): `redact_entry`.

1. Exact values: every credential the request carried, or its answer minted,
   wherever it appears (`_mask_exact`), remembered for the run log (`_memory`).
2. Shapes: known secret formats (``sk-…``, ``AIza…``, ``AKIA…``, JWTs,
   ``Bearer …``) in the stored request; minted ones (``ek_…``) in the answer.
3. Names by rule: the values of credential fields of a JSON body, and of
   credential parameters of a form, whatever their length (`_walk`).
4. Signed URLs: credential parameters of a ``location`` header, and of any URL
   in a redirect's body (the server made them: the request never carried them).

The match key is computed from the unredacted request, so none of this ever
changes what replays.
"""

from __future__ import annotations

import base64
import re
from typing import Any
from urllib.parse import unquote_plus

import orjson

from .._wire._multipart import multipart_parts
from ._collect import entry_secrets, minted_secrets
from ._credentials import (
    MINTED_SHAPES,
    MINTED_STARTS,
    SECRET_SHAPES,
    SHAPE_START,
    is_credential_param,
)
from ._mask import MASK
from ._mask_exact import mask_exact
from ._memory import MEMORY
from ._stored import content_type, is_binary, is_form, stored_bytes, text_of
from ._walk import has_credential_field, map_strings, mask_credential_fields

__all__ = ["mask_shapes", "redact_entry"]

_FORM_PAIR = re.compile(r"(?:^|(?<=&))([^=&]+)=([^&]*)")
# A query parameter inside a URL in a text (``?key=…``, ``&amp;sig=…`` in HTML).
_URL_PARAM = re.compile(r"(?<=[?&;])([A-Za-z0-9_.\-]+)=([^&\s\"'<>#\\]+)")
# Headers whose value is a URL the client goes on to call: kept, so the client makes the
# same next request in replay (google-genai's resumable upload reads x-goog-upload-url),
# with credential parameters masked as in any URL.
_URL_HEADERS = ("location", "content-location", "x-goog-upload-url", "x-goog-upload-control-url")


def redact_entry(entry: dict[str, Any], secrets: frozenset[str]) -> dict[str, Any]:
    """Mask secrets in an entry ``{"request": ..., "response": ...}`` (a new dict).

    ``secrets`` are those of the request's headers and query (`collect_secrets`);
    those the stored request shows itself are added (and remembered). So are those
    every earlier request carried (`MEMORY`): a provider that echoes a key sent in one
    request inside the answer to another (a rotated key, a login) has it masked too.
    """
    entry = dict(entry)
    request = entry.get("request")
    if isinstance(request, dict):
        request = entry["request"] = _read_as_key_reads(request)
    secrets = secrets | entry_secrets(request) | minted_secrets(entry.get("response"))
    MEMORY.remember(secrets)
    secrets |= MEMORY.known()
    if secrets:
        entry = mask_exact(entry, secrets)
    response = entry.get("response")
    if isinstance(response, dict):
        entry["response"] = _mask_minted(_mask_signed_urls(response))
    request = entry.get("request")
    if isinstance(request, dict):
        body = request.get("body")
        if isinstance(body, dict) and "json" in body and has_credential_field(body["json"]):
            request = {
                **request,
                "body": {**body, "json": mask_credential_fields(body["json"], MASK)},
            }
        elif isinstance(body, dict) and ("text" in body or "base64" in body):
            request = {**request, "body": _mask_form_fields(body, content_type(request))}
        text = text_of(request)
        if text is None or SHAPE_START.search(text):
            request = mask_shapes(request)
        entry["request"] = request
    return entry


def _read_as_key_reads(request: dict[str, Any]) -> dict[str, Any]:
    """A request whose text body is JSON, with the body stored as JSON (as the key reads it)."""
    body = request.get("body")
    if not (isinstance(body, dict) and len(body) == 1 and isinstance(body.get("text"), str)):
        return request
    text = body["text"]
    if text[:1] not in ("{", "["):
        return request
    try:
        return {**request, "body": {"json": orjson.loads(text)}}
    except orjson.JSONDecodeError:
        return request


def _mask_form_fields(body: dict[str, Any], content_type: str) -> dict[str, Any]:
    """A form or multipart body with each credential parameter's value masked, whatever it
    is: the names are read by rule, as a JSON body's are (`_walk`): ``password=``
    holding a plain word is still a password."""
    text = body.get("text")
    if isinstance(text, str) and is_form(text, content_type):
        masked = _FORM_PAIR.sub(_masked_form_pair, text)
        return body if masked == text else {**body, "text": masked}
    if not content_type.lower().startswith("multipart/"):
        return body
    data = stored_bytes(body)
    out = data
    for name, content, raw in multipart_parts(data, content_type) or ():
        if name and is_credential_param(name) and content.strip():
            out = out.replace(raw, raw[: len(raw) - len(content)] + MASK.encode(), 1)
    if out == data:
        return body
    if isinstance(text, str):
        return {**body, "text": out.decode("utf-8", "replace")}
    return {**body, "base64": base64.b64encode(out).decode("ascii")}


def _masked_form_pair(match: re.Match[str]) -> str:
    name, value = match.group(1), match.group(2)
    if value.strip() and is_credential_param(unquote_plus(name).strip()):
        return f"{name}={MASK}"
    return match.group(0)


def mask_shapes(value: Any, shapes: re.Pattern[str] = SECRET_SHAPES) -> Any:
    """``value`` with every match of ``shapes`` in its strings masked; binary bodies as they are."""
    return map_strings(value, lambda text: shapes.sub(MASK, text), skip=is_binary)


def _mask_minted(response: dict[str, Any]) -> dict[str, Any]:
    """A response with the credentials a provider minted in it masked (a Realtime client
    secret ``ek_…``, a Gemini Live ``auth_tokens/…``): the request never carried them, so
    only their shape finds them."""
    text = text_of(response)
    if text is not None and not any(start in text for start in MINTED_STARTS):
        return response
    return {
        k: mask_shapes(v, MINTED_SHAPES) if k in ("body", "headers") else v
        for k, v in response.items()
    }


def _mask_signed_urls(response: dict[str, Any]) -> dict[str, Any]:
    """Credential parameters of a kept ``location`` and of URLs in a redirect's body."""
    headers = response.get("headers")
    if isinstance(headers, dict) and any(h in headers for h in _URL_HEADERS):
        headers = {k: _mask_url_params(v) if k in _URL_HEADERS else v for k, v in headers.items()}
        response = {**response, "headers": headers}
    status = response.get("status")
    body = response.get("body")
    if isinstance(status, int) and 300 <= status < 400 and not is_binary(body):
        response = {**response, "body": _mask_url_params(body)}
    return response


def _mask_url_params(value: Any) -> Any:
    return map_strings(
        value, lambda text: _URL_PARAM.sub(_masked_param, text) if "=" in text else text
    )


def _masked_param(match: re.Match[str]) -> str:
    name = match.group(1)
    return f"{name}={MASK}" if is_credential_param(name) else match.group(0)
