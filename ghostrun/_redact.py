"""Keep credentials out of cassettes.

Cassettes are committed, so a credential in one is a leak into git history.
Four layers, applied to every entry before it is written:

1. Headers by safe-list: request headers are dropped unless known harmless;
   response headers likewise (``set-cookie`` and account identifiers go).
2. Exact values: every credential the request carried (auth headers, cookies,
   credential query parameters) is masked wherever it appears in the entry,
   in plain, URL-encoded and JSON-escaped form.
3. Shapes: known secret formats (``sk-…``, ``AIza…``, ``AKIA…``, JWTs,
   ``Bearer …``) are masked in the stored request.
4. Body keys by explicit list: ``api_key``, ``password``… are masked in the
   request body; ``max_tokens`` is not (no substring rules).

The match key is computed from the unredacted request, so none of this ever
changes what replays.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus

import orjson

__all__ = [
    "MASK",
    "collect_secrets",
    "keep_request_header",
    "keep_response_header",
    "redact_entry",
]

MASK = "[REDACTED]"

_REQUEST_HEADERS = frozenset(
    {
        "accept",
        "content-type",
        "anthropic-version",
        "anthropic-beta",
        "openai-beta",
        "x-stainless-helper-method",
    }
)
_RESPONSE_HEADERS = frozenset(
    {
        "content-type",
        "x-request-id",
        "request-id",
        "openai-processing-ms",
        "openai-version",
        "openai-model",
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        "cache-control",
    }
)
_RESPONSE_HEADER_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-", "ratelimit-")
_CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "ocp-apim-subscription-key",
        "cookie",
    }
)
_SECRET_BODY_KEYS = frozenset(
    {
        "api_key",
        "apikey",
        "password",
        "passwd",
        "secret",
        "client_secret",
        "secret_key",
        "private_key",
        "access_token",
        "refresh_token",
        "id_token",
        "auth_token",
        "session_token",
        "token",
        "aws_secret_access_key",
        "aws_session_token",
        "authorization",
    }
)
_SECRET_SHAPES = re.compile(
    r"sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"
    r"|AIza[0-9A-Za-z_\-]{30,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}"
    r"|eyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+"
    r"|(?<=Bearer )[A-Za-z0-9._~+/\-]{8,}=*"
)
_AWS_FIELDS = re.compile(r"(?:Credential=([^/,\s]+)|Signature=([0-9a-fA-F]+))")
_MIN_SECRET = 6  # shorter values would mask unrelated text


def keep_request_header(name: str) -> bool:
    return name in _REQUEST_HEADERS


def keep_response_header(name: str) -> bool:
    return name in _RESPONSE_HEADERS or name.startswith(_RESPONSE_HEADER_PREFIXES)


def collect_secrets(
    headers: Iterable[tuple[str, str]], query: Iterable[tuple[str, str]] = ()
) -> frozenset[str]:
    """Every credential value a request carried, in each form it could reappear in."""
    from ._keys import is_credential_param

    found: set[str] = set()
    for name, value in headers:
        name = name.lower()
        if name in _CREDENTIAL_HEADERS or (name.startswith("x-amz-") and "token" in name):
            found.update(_header_secrets(name, value))
    for name, value in query:
        if is_credential_param(name):
            found.add(value)
    return frozenset(s for s in found if len(s) >= _MIN_SECRET)


def redact_entry(entry: dict[str, Any], secrets: frozenset[str]) -> dict[str, Any]:
    """Mask secrets in an entry ``{"request": ..., "response": ...}`` (a new dict)."""
    variants = _variants(secrets)
    entry = _mask_exact(entry, variants)
    entry["request"] = _mask_shapes(_mask_body_keys(entry["request"]))
    return entry


def _header_secrets(name: str, value: str) -> set[str]:
    found = {value.strip()}
    if name in ("authorization", "proxy-authorization"):
        scheme, _, token = value.strip().partition(" ")
        found.add(token.strip())
        if scheme.lower() == "basic":
            found.update(_basic_parts(token.strip()))
        for match in _AWS_FIELDS.finditer(value):
            found.update(g for g in match.groups() if g)
    elif name == "cookie":
        for pair in value.split(";"):
            found.add(pair.partition("=")[2].strip())
    return found


def _basic_parts(token: str) -> set[str]:
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return set()
    user, _, password = decoded.partition(":")
    return {decoded, password, user}


def _variants(secrets: frozenset[str]) -> tuple[str, ...]:
    forms: set[str] = set()
    for secret in secrets:
        escaped = orjson.dumps(secret).decode()[1:-1]
        forms.update({secret, quote(secret, safe=""), quote_plus(secret), escaped})
        forms.add(escaped.replace("/", "\\/"))
    # Longest first, so a secret's prefix never leaves its tail behind.
    return tuple(sorted((f for f in forms if len(f) >= _MIN_SECRET), key=len, reverse=True))


def _mask_exact(value: Any, variants: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        for secret in variants:
            if secret in value:
                value = value.replace(secret, MASK)
        return value
    if isinstance(value, dict):
        return {k: _mask_exact(v, variants) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_exact(v, variants) for v in value]
    return value


def _mask_shapes(value: Any) -> Any:
    if isinstance(value, str):
        return _SECRET_SHAPES.sub(MASK, value)
    if isinstance(value, dict):
        return {k: _mask_shapes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_shapes(v) for v in value]
    return value


def _mask_body_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: MASK if _is_secret_key(k) and not isinstance(v, dict | list) else _mask_body_keys(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask_body_keys(v) for v in value]
    return value


def _is_secret_key(key: str) -> bool:
    return key.lower().replace("-", "_") in _SECRET_BODY_KEYS
