"""Collecting the credentials a request carried, and those an answer minted (DESIGN §4).

Auth headers, cookies, credential query parameters, credential fields of a body
read as the key reads it (`_walk.map_fields`), JSON inside header values and
strings, secret shapes in the prompt: each exact value is masked wherever it
appears, if it could be a credential at all (`_credentials.could_be_credential`).
Pure functions: `_memory` remembers what they find.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl

import orjson

from .._wire._bodies import Body, encode_body
from .._wire._multipart import multipart_parts
from ._credentials import (
    MINTED_SHAPES,
    MINTED_STARTS,
    SECRET_SHAPES,
    SHAPE_START,
    could_be_credential,
    is_credential_header,
    is_credential_name,
    is_credential_param,
    is_minted_field,
)
from ._headers import SUBPROTOCOLS
from ._mask import MASK
from ._stored import binary_payloads, content_type, is_form, stored_bytes, text_of
from ._walk import credential_values, strings, visit_fields

__all__ = [
    "carried_secrets",
    "entry_secrets",
    "field_secrets",
    "minted_secrets",
    "request_body",
    "request_secrets_of",
    "worth_masking",
]

# Parameters of an authorization header that carry a secret (AWS SigV4's
# ``Credential=AKIA…/scope`` and ``Signature=…``, OAuth 1, Digest).
_AUTH_PARAMS = re.compile(
    r"\b(?:credential|signature|oauth_signature|oauth_token|response|token|sig)"
    r"=\"?([^\",\s]+)\"?",
    re.IGNORECASE,
)
_COOKIE_NAME = re.compile(r"(?:^|;)\s*[^=;\s]+=")


def carried_secrets(
    headers: Iterable[tuple[str, str]], query: Iterable[tuple[str, str]] = ()
) -> frozenset[str]:
    """Every credential value a request carried in its headers and query.

    Headers and parameters whose value is JSON (a gateway's config header) are
    walked for credential fields. The body's are found by `entry_secrets`.
    """
    return _secrets_of(
        tuple(
            (n, v)
            for n, v in headers
            if is_credential_header(n) or v[:1] in ("{", "[") or n.lower() == SUBPROTOCOLS
        ),
        tuple((n, v) for n, v in query if is_credential_param(n) or v[:1] in ("{", "[")),
    )


def request_secrets_of(
    url: str,
    headers: Iterable[tuple[str, str]],
    query: Iterable[tuple[str, str]],
    body: bytes,
    content_type: str,
) -> frozenset[str]:
    """Every credential a request carried, wherever it was."""
    part = {"url": url, "body": request_body(body, content_type)}
    return carried_secrets(headers, query) | entry_secrets(part)


def request_body(body: bytes, content_type: str) -> Body:
    """A request body as stored: JSON whenever the key reads it as JSON."""
    return encode_body(body, "application/json" if body[:1] in (b"{", b"[") else content_type)


@functools.lru_cache(maxsize=128)
def _secrets_of(
    headers: tuple[tuple[str, str], ...], params: tuple[tuple[str, str], ...]
) -> frozenset[str]:
    """The secrets of a request's credentials: the same few on every request of a suite."""
    found: set[str] = set()
    for name, value in headers:
        if value[:1] in ("{", "["):
            _json_secrets(value, found)
        if is_credential_header(name):
            found.update(_header_secrets(name.lower(), value))
        elif name.lower() == SUBPROTOCOLS:
            found.update(_subprotocol_secrets(value))
    for name, value in params:
        if value[:1] in ("{", "["):
            _json_secrets(value, found)
        if is_credential_param(name):
            found.update({value, value.split("/")[0]})  # the key id of a SigV4 scope
    return worth_masking(found)


def entry_secrets(request: Any) -> frozenset[str]:
    """The credentials a stored request shows itself: body fields and parameters, JSON
    inside its strings, and secret shapes anywhere in it, decoded binary bodies and raw
    gRPC messages included."""
    if not isinstance(request, dict):
        return frozenset()
    found: set[str] = set()
    body = request.get("body")
    if isinstance(body, dict):
        if "json" in body:
            found |= field_secrets(body["json"])
        found |= _form_secrets(body, content_type(request))
    text = text_of(request)
    shapes = text is None or bool(SHAPE_START.search(text))
    if shapes or _may_hold_json(text):
        _strings_secrets(request, shapes, found)
    for data in binary_payloads(request.get("body")):  # base64 hides shapes from the text
        decoded = data.decode("latin-1")  # byte for character: a shape is ASCII
        if SHAPE_START.search(decoded):
            found.update(m.group(0) for m in SECRET_SHAPES.finditer(decoded))
    return worth_masking(found)


def _may_hold_json(text: str | None) -> bool:
    """Whether a string of the value ``text`` spells (as JSON) may start with ``{`` or ``[``:
    JSON escapes neither, so such a string shows as ``"{`` or ``"[``. Nearly no request
    has one, and then its strings are not walked for JSON inside them."""
    return text is None or '"{' in text or '"[' in text


def _strings_secrets(request: dict[str, Any], shapes: bool, found: set[str]) -> None:
    """The credential fields of JSON inside a request's strings, and (``shapes``) the
    secret shapes in them."""
    for value in strings(request):
        if value[:1] in ("{", "[") and len(value) > 2:
            _json_secrets(value, found)
        if shapes:
            found.update(m.group(0) for m in SECRET_SHAPES.finditer(value))


def minted_secrets(response: Any) -> frozenset[str]:
    """Credentials a provider minted in an answer, which no request carried: the values
    of its JSON body's credential fields (an OAuth token response's ``access_token``,
    ``refresh_token`` and ``id_token``; a created key's ``api_key``), the same in a
    form-encoded answer, and minted shapes anywhere (``sk-admin-…``, ``ya29.…``)."""
    if not isinstance(response, dict):
        return frozenset()
    found: set[str] = set()
    body = response.get("body")
    if isinstance(body, dict) and "json" in body:
        values = credential_values(body["json"], is_field=is_minted_field)
        found.update(value for value in values if isinstance(value, str))
    text = body.get("text") if isinstance(body, dict) else None
    if isinstance(text, str) and is_form(text, content_type(response)):
        found.update(v for n, v in parse_qsl(text.strip()) if is_minted_field(n))
    dumped = text_of(response)
    if dumped is None or any(start in dumped for start in MINTED_STARTS):
        for value in strings(response):
            found.update(match.group(0) for match in MINTED_SHAPES.finditer(value))
    return worth_masking(found)


def field_secrets(value: Any) -> set[str]:
    """What the credential fields of a JSON value hold, and of JSON its other strings hold."""
    found: set[str] = set()

    def held(item: str | int | float) -> None:
        found.add(str(item))

    def other(item: str) -> None:
        if item[:1] in ("{", "[") and len(item) > 2:
            _json_secrets(item, found)

    visit_fields(value, held, at_string=other)
    return found


def _json_secrets(text: str, found: set[str]) -> None:
    """The credential fields of a string that holds JSON (``x-portkey-config``)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return
    found |= field_secrets(value)


def _header_secrets(name: str, value: str) -> set[str]:
    value = value.strip()
    found = {value}
    if "cookie" in name:
        for start in _COOKIE_NAME.finditer(value):
            rest = value[start.end() :].strip()  # a last cookie whose value holds a ";"
            cookie = rest.split(";")[0].strip()
            found.update({rest, cookie, cookie.strip('"')})
        return found
    scheme, _, rest = value.partition(" ")
    rest = rest.strip()
    found.add(rest)
    if scheme.lower() == "basic":
        found.update(_basic_parts(rest))
    if "authorization" in name:
        for match in _AUTH_PARAMS.finditer(value):
            found.add(match.group(1))
            found.add(match.group(1).split("/")[0])  # the access key id of a SigV4 scope
    return found


def _subprotocol_secrets(value: str) -> set[str]:
    """Credentials offered as WebSocket subprotocols, the browser's way to authenticate
    (``openai-insecure-api-key.<key>``): a ``name.value`` item whose name is a credential
    by the rule carries its value; any item may hold a secret shape."""
    found: set[str] = set()
    for item in value.split(","):
        item = item.strip()
        name, dot, rest = item.partition(".")
        if dot and rest and is_credential_name(name):
            found.add(rest)
        found.update(match.group(0) for match in SECRET_SHAPES.finditer(item))
    return found


def _basic_parts(token: str) -> set[str]:
    """The user and password of a Basic token: UTF-8 (httpx), else Latin-1 (requests
    encodes them so), which any bytes decode as."""
    try:
        data = base64.b64decode(token, validate=True)
    except binascii.Error:
        return set()
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        decoded = data.decode("latin-1")
    user, _, password = decoded.partition(":")
    return {decoded, password, user}


def _form_secrets(body: dict[str, Any], content_type: str) -> set[str]:
    """Values of the credential parameters of a form or multipart body."""
    found: set[str] = set()
    text = body.get("text")
    if isinstance(text, str) and is_form(text, content_type):
        for name, value in parse_qsl(text.strip(), keep_blank_values=True):
            if is_credential_param(name):
                found.add(value)
    if content_type.lower().startswith("multipart/"):
        for part, content, _raw in multipart_parts(stored_bytes(body), content_type) or ():
            if part and is_credential_param(part):
                value = content.decode("utf-8", "replace")
                found.update({value, value.strip()})
    return found


def worth_masking(values: Iterable[str]) -> frozenset[str]:
    return frozenset(v for v in values if v != MASK and MASK not in v and could_be_credential(v))
