"""Keep credentials out of cassettes.

Cassettes are committed, so a credential in one is a leak into git history.
Four layers, applied to every entry before it is written:

1. Headers by safe-list: request headers are dropped unless known harmless;
   response headers likewise (``set-cookie`` and account identifiers go).
2. Exact values: every credential the request carried (auth headers, cookies,
   credential query parameters, credential fields of a JSON, form or
   multipart body) is masked
   wherever it appears in the entry: URL, bodies (binary ones too), headers,
   even JSON keys. A secret is matched in any mix of plain, URL-encoded
   (``%2F``, ``+``), JSON-escaped (``\\"``, ``\\u0041``) and HTML-escaped
   forms, and where two secrets overlap, both go.
3. Shapes: known secret formats (``sk-…``, ``AIza…``, ``AKIA…``, ``gsk_…``,
   JWTs, ``Bearer …``) are masked in the stored request. Response bodies are
   replayed verbatim, so there only exact values are masked.
4. Body fields by explicit list (`_keys.is_credential_field`): ``api_key``,
   ``password``… are masked in the request body; ``max_tokens`` is not (no
   substring rules).

The match key is computed from the unredacted request, so none of this ever
changes what replays. Known gap: a secret that a streamed response splits
across two chunks is not recognised (no provider echoes keys in practice).
"""

from __future__ import annotations

import base64
import binascii
import functools
import html
import json
import re
import threading
from collections.abc import Iterable
from typing import Any, AnyStr
from urllib.parse import parse_qsl

import orjson

from ._keys import (
    has_credential_field,
    is_credential_field,
    is_credential_param,
    multipart_parts,
)

__all__ = [
    "MASK",
    "collect_secrets",
    "is_credential_header",
    "keep_request_header",
    "keep_response_header",
    "redact_entry",
    "scrub_text",
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
# Response headers are kept by this safe-list (DESIGN §3, exact; §4): the standard,
# non-identifying HTTP headers and the providers' own harmless ones, so replay hands
# the code the headers it saw live. Anything else goes, and so does anything in the
# list that `_identifying_response_header` says names an account or holds a credential.
_RESPONSE_HEADERS = frozenset(
    {
        # What the body is, and how to read it.
        "content-type",
        "content-language",
        "content-disposition",  # a download's file name (audio, files APIs)
        "content-range",
        "accept-ranges",
        # Caching: when the response was made and how long it stays fresh.
        "cache-control",
        "date",
        "etag",
        "expires",
        "age",
        "last-modified",
        "pragma",
        "vary",
        # Redirects replay as they happened live (credentials in them are masked).
        "location",
        "content-location",
        # The connection as the provider described it: harmless without one.
        "connection",
        "keep-alive",
        "alt-svc",  # protocols the host also speaks (h3)
        # Security policy for browsers: the same for every client.
        "strict-transport-security",
        "content-security-policy",
        "content-security-policy-report-only",
        "x-content-type-options",
        "x-frame-options",
        "x-xss-protection",
        "referrer-policy",
        "permissions-policy",
        "x-robots-tag",
        # The provider's software and proxies: the same for everyone.
        "server",
        "via",
        "cf-cache-status",
        # Ids of this one request (support tickets quote them), not of the account.
        "x-request-id",
        "request-id",
        "x-amz-request-id",
        "x-amz-id-2",
        "apim-request-id",
        "cf-ray",
        "x-cloud-trace-context",
        "mistral-correlation-id",
        "x-kong-request-id",
        "x-debug-trace-id",
        # How long the provider took.
        "server-timing",
        "x-envoy-upstream-service-time",
        "x-kong-upstream-latency",
        "x-kong-proxy-latency",
        # Retry hints the SDKs obey.
        "retry-after",
        "retry-after-ms",
        "x-should-retry",
        # Deprecation notices the SDKs surface.
        "warning",
        "deprecation",
        "sunset",
        "x-api-warning",
    }
)
_RESPONSE_HEADER_PREFIXES = (
    # Rate limits: what the SDKs and apps throttle by (OpenAI, Groq, Anthropic, IETF).
    "x-ratelimit-",
    "ratelimit-",
    "anthropic-ratelimit-",
    # Cross-origin rules for browsers: the same for every client.
    "access-control-",
    "cross-origin-",
    # Providers' own headers: API version, processing time, model, region, Bedrock's
    # token counts and error type (botocore builds its exceptions from x-amzn-errortype).
    # The account and credential ones among them go (`_identifying_response_header`).
    "openai-",
    "anthropic-",
    "x-goog-",
    "x-amzn-",
    "x-ms-",
    "x-groq-",
)
_CREDENTIAL_ENDINGS = (
    "key",
    "secret",
    "token",
    "password",
    "credential",
    "credentials",
    "signature",
    "authorization",
)
# Kept-looking names that identify the account, or hold what works like a credential.
_IDENTIFYING_RESPONSE_HEADERS = frozenset(
    {
        "x-goog-upload-url",  # a resumable upload's URL: it authorises the upload
        "x-goog-upload-control-url",
    }
)
# Words of a header name (split on "-") that make it identify an account, a person
# or a backend session: openai-organization, openai-project, anthropic-organization-id,
# x-goog-authenticated-user, x-ms-client-principal-id ...
_IDENTIFYING_WORDS = frozenset(
    {
        "organization",
        "organisation",
        "org",
        "project",
        "user",
        "account",
        "customer",
        "tenant",
        "principal",
        "email",
        "session",
        "subscription",
    }
)
# Request headers whose value is a credential: these by name, and any whose
# name has one of the words below (``x-goog-api-key``, ``x-amz-security-token``).
_CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "x-amz-security-token",
        "ocp-apim-subscription-key",
    }
)
_CREDENTIAL_HEADER_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "signature",
        "credential",
        "credentials",
        "auth",
        "authorization",
        "cookie",
    }
)
# Parameters of an authorization header that carry a secret (AWS SigV4's
# ``Credential=AKIA…/scope`` and ``Signature=…``, OAuth 1, Digest).
_AUTH_PARAMS = re.compile(
    r"\b(?:credential|signature|oauth_signature|oauth_token|response|token|sig)"
    r"=\"?([^\",\s]+)\"?",
    re.IGNORECASE,
)
_SECRET_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"sk-[A-Za-z0-9_\-]{16,}"  # OpenAI (sk-proj-), Anthropic (sk-ant-), OpenRouter (sk-or-)
    r"|gsk_[A-Za-z0-9]{20,}"  # Groq
    r"|xai-[A-Za-z0-9]{20,}"
    r"|pplx-[A-Za-z0-9]{20,}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|r8_[A-Za-z0-9]{20,}"
    r"|AIza[0-9A-Za-z_\-]{30,}"  # Google API keys
    r"|ya29\.[0-9A-Za-z_\-]{20,}"  # Google OAuth access tokens
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key ids
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|eyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+"  # JWTs
    r")"
    r"|(?<=Bearer )[A-Za-z0-9._~+/\-]{8,}=*"
    r"|-----BEGIN[A-Z ]*PRIVATE KEY-----.*?-----END[A-Z ]*PRIVATE KEY-----",
    re.DOTALL,
)
_COOKIE_NAME = re.compile(r"(?:^|;)\s*[^=;\s]+=")
_FORM = re.compile(r"[^=&\s]+=[^&\s]*(?:&[^=&\s]+=[^&\s]*)*")
_BASE64_KINDS = ("base64", "chunks_base64")
_BASE64_MARKERS = ('"base64"', '"chunks_base64"')
_WALK_MARKS = (*_BASE64_MARKERS, "\\u", "\\U")
# Where any secret shape starts: none of these can be split by JSON's escapes, so
# their absence from an entry's JSON text means no shape is in any of its strings.
_SHAPE_START = re.compile(
    r"sk-|gsk_|xai-|pplx-|hf_|r8_|AIza|ya29\.|AKIA|ASIA|gh[pousr]_|github_pat_|xox[abposr]-"
    r"|eyJ|Bearer |-----BEGIN"
)
_MIN_SECRET = 6  # shorter values would mask unrelated text
_MAX_REMEMBERED = 256

_remembered: set[str] = set()
_remembered_lock = threading.Lock()


# Header names are few and repeat on every request: each verdict is worked out once.
@functools.lru_cache(maxsize=1024)
def keep_request_header(name: str) -> bool:
    return name.lower() in _REQUEST_HEADERS


@functools.lru_cache(maxsize=1024)
def keep_response_header(name: str) -> bool:
    """True for a response header a cassette keeps (the safe-list above, minus identifiers)."""
    name = name.lower()
    listed = name in _RESPONSE_HEADERS or name.startswith(_RESPONSE_HEADER_PREFIXES)
    return listed and not _identifying_response_header(name)


def _identifying_response_header(name: str) -> bool:
    """A cookie, a credential, or an account's, a person's or a session's identifier.

    Credentials by DESIGN §4's rule on the squashed name (not by a word anywhere:
    ``x-amzn-bedrock-input-token-count`` is a count, ``x-ratelimit-limit-tokens`` a limit).
    """
    words = set(name.replace("_", "-").split("-"))
    squashed = name.replace("-", "").replace("_", "")
    return (
        name in _IDENTIFYING_RESPONSE_HEADERS
        or not _IDENTIFYING_WORDS.isdisjoint(words)
        or "cookie" in squashed
        or squashed.startswith("auth")
        or squashed.endswith(_CREDENTIAL_ENDINGS)
    )


@functools.lru_cache(maxsize=1024)
def is_credential_header(name: str) -> bool:
    name = name.lower()
    return name in _CREDENTIAL_HEADERS or not _CREDENTIAL_HEADER_WORDS.isdisjoint(name.split("-"))


def collect_secrets(
    headers: Iterable[tuple[str, str]], query: Iterable[tuple[str, str]] = ()
) -> frozenset[str]:
    """Every credential value a request carried in its headers and query.

    The credential fields of its body are found by `redact_entry` itself.
    """
    secrets = _secrets_of(
        tuple((name, value) for name, value in headers if is_credential_header(name)),
        tuple((name, value) for name, value in query if is_credential_param(name)),
    )
    _remember(secrets)
    return secrets


@functools.lru_cache(maxsize=128)
def _secrets_of(
    headers: tuple[tuple[str, str], ...], params: tuple[tuple[str, str], ...]
) -> frozenset[str]:
    """The secrets of a request's credentials: the same few on every request of a suite."""
    found: set[str] = set()
    for name, value in headers:
        found.update(_header_secrets(name.lower(), value))
    for _name, value in params:
        found.update({value, value.split("/")[0]})  # the key id of a SigV4 scope
    return _worth_masking(found)


def redact_entry(entry: dict[str, Any], secrets: frozenset[str]) -> dict[str, Any]:
    """Mask secrets in an entry ``{"request": ..., "response": ...}`` (a new dict)."""
    request = entry.get("request")
    request_text = _text_of(request)
    body = request.get("body") if isinstance(request, dict) else None
    # Walk the body for credential values only if a key names one.
    fields = isinstance(body, dict) and has_credential_field(body.get("json"))
    if isinstance(request, dict):
        headers = request.get("headers")
        ctype = headers.get("content-type", "") if isinstance(headers, dict) else ""
        secrets |= _body_secrets(body, fields=fields, content_type=str(ctype))
    if _may_hold(entry, secrets):
        patterns = _patterns(secrets)
        entry = {k: _mask_part(v, patterns) for k, v in entry.items()}
    else:
        entry = dict(entry)
    request = entry.get("request")
    if isinstance(request, dict):
        body = request.get("body")
        if fields and isinstance(body, dict) and "json" in body:
            body = {**body, "json": _mask_fields(body["json"])}
        request = {**request, "body": body} if "body" in request else request
        # Exact masking cannot make a shape, so the text from before it will do.
        if request_text is None or _SHAPE_START.search(request_text):
            request = _mask_shapes(request)
        entry["request"] = request
    return entry


def _may_hold(entry: Any, secrets: frozenset[str]) -> bool:
    """False only when no string in ``entry`` can hold a secret: the usual case, checked fast.

    Every pattern matches a secret in any encoding, JSON's included, so one search
    of the entry as JSON text stands for a search of each of its strings; and no
    pattern can match a text that has neither the secret itself nor one of the
    marks its escaped characters start with (`_clues`), so a few substring tests
    spare nearly every search. The string-by-string walk is left to bytes inside
    base64 bodies, to control characters (which JSON escapes its own way) and to
    ``\\u`` escapes written in a string (JSON doubles their backslash).
    """
    if not secrets:
        return False
    text = _text_of(entry)
    if text is None or any(mark in text for mark in _WALK_MARKS):
        return True
    clues = _clues(secrets)
    if clues is None:
        return True
    if not any(clue in text for clue in clues):
        return False
    return any(p.search(text) for p in _patterns(secrets))


@functools.lru_cache(maxsize=128)
def _clues(secrets: frozenset[str]) -> tuple[str, ...] | None:
    """Substrings one of which any match of `_patterns` in JSON text contains.

    A secret shows either as itself or with some characters escaped, and every
    escape `_char_forms` knows starts with one of these marks (``\\u`` is in
    `_WALK_MARKS`). None: a secret with a control character, always walked.
    """
    chars = set("".join(secrets))
    if any(ord(c) < 0x20 for c in chars):
        return None
    clues = {*secrets, "%"}
    if chars & set("&<>\"'"):
        clues.add("&")
    if " " in chars:
        clues.add("+")
    if chars & set('"\\/'):
        clues.add("\\")
    return tuple(sorted(clues, key=len))


def _text_of(value: Any) -> str | None:
    try:
        return orjson.dumps(value).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        return None  # not JSON (a user hook's doing): take the slow, sure path


def scrub_text(text: str, secrets: Iterable[str] = ()) -> str:
    """A text with secret shapes and every credential seen so far in this process masked.

    For what ghostrun writes besides cassettes (run logs, verdict files), where
    a recorded model output could repeat a key the request carried.
    """
    with _remembered_lock:
        known = frozenset(_remembered)
    patterns = _patterns(known | _worth_masking(secrets))
    return _SECRET_SHAPES.sub(MASK, _mask_text(text, patterns))


# -- collecting --------------------------------------------------------------


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


def _basic_parts(token: str) -> set[str]:
    try:
        decoded = base64.b64decode(token, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return set()
    user, _, password = decoded.partition(":")
    return {decoded, password, user}


def _body_secrets(body: Any, *, fields: bool = True, content_type: str = "") -> frozenset[str]:
    """Values of the credential fields of a stored body: JSON, a form, or multipart parts."""
    found: set[str] = set()
    if not isinstance(body, dict):
        return frozenset()
    if fields and "json" in body:
        _field_values(body["json"], found, inside=False)
    text = body.get("text")
    if isinstance(text, str) and _FORM.fullmatch(text.strip()):
        for name, value in parse_qsl(text.strip(), keep_blank_values=True):
            if is_credential_param(name):
                found.add(value)
    if content_type.lower().startswith("multipart/"):
        for part, content, _raw in multipart_parts(_stored_bytes(body), content_type) or ():
            if part and is_credential_param(part):
                value = content.decode("utf-8", "replace")
                found.update({value, value.strip()})
    return _worth_masking(found)


def _stored_bytes(body: dict[str, Any]) -> bytes:
    """The bytes of a stored ``text`` or ``base64`` body (empty for any other)."""
    text = body.get("text")
    if isinstance(text, str):
        return text.encode("utf-8")
    try:
        return base64.b64decode(str(body.get("base64", "")), validate=True)
    except (binascii.Error, ValueError):
        return b""


def _field_values(value: Any, found: set[str], *, inside: bool) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _field_values(item, found, inside=inside or is_credential_field(str(key)))
    elif isinstance(value, list):
        for item in value:
            _field_values(item, found, inside=inside)
    elif inside and isinstance(value, str | int | float) and not isinstance(value, bool):
        found.add(str(value))


def _worth_masking(values: Iterable[str]) -> frozenset[str]:
    return frozenset(v for v in values if len(v) >= _MIN_SECRET and v != MASK)


def _remember(secrets: frozenset[str]) -> None:
    if not secrets or secrets <= _remembered:
        return
    with _remembered_lock:
        if len(_remembered) + len(secrets) > _MAX_REMEMBERED:
            _remembered.clear()
        _remembered.update(secrets)


# -- matching a secret in any encoding ----------------------------------------


@functools.lru_cache(maxsize=128)
def _patterns(secrets: frozenset[str]) -> tuple[re.Pattern[str], ...]:
    """One pattern per secret, longest first: each matches every encoding of it."""
    ordered = sorted(secrets, key=lambda s: (-len(s), s))
    return tuple(re.compile("".join(_char_forms(c) for c in secret)) for secret in ordered)


def _char_forms(char: str) -> str:
    """A regex matching one character of a secret, plain or escaped in any common way."""
    forms = [re.escape(char)]
    percent = "".join(f"%{byte:02x}" for byte in char.encode("utf-8"))
    forms.append(f"(?i:{re.escape(percent)})")
    unicode_escape = json.dumps(char)[1:-1]  # \u00e9, or a surrogate pair
    if not unicode_escape.startswith("\\u") and ord(char) < 0x10000:
        unicode_escape = f"\\u{ord(char):04x}"
    forms.append(f"(?i:{re.escape(unicode_escape)})")
    if html.escape(char) != char:
        forms.extend(re.escape(e) for e in (html.escape(char), f"&#{ord(char)};"))
    if char == " ":
        forms.append(r"\+")
    elif char == '"':
        forms[0] = r'\\*"'  # JSON-escaped once or more (a JSON string inside JSON)
    elif char == "\\":
        forms[0] = r"\\+"
    elif char == "/":
        forms[0] = r"\\*/"
    return "(?:" + "|".join(forms) + ")"


def _mask_text(text: AnyStr, patterns: tuple[re.Pattern[str], ...]) -> AnyStr:
    """Mask every match of every pattern; overlapping matches merge into one mask."""
    if len(text) < _MIN_SECRET:  # no form of a secret is shorter than the secret
        return text
    if isinstance(text, bytes):
        compiled: Iterable[re.Pattern[Any]] = _byte_patterns(patterns)
        mask: Any = MASK.encode()
    else:
        compiled, mask = patterns, MASK
    spans = sorted(m.span() for p in compiled for m in p.finditer(text))
    if not spans:
        return text
    pieces, position = [], 0
    for start, end in spans:
        if end <= position:
            continue
        if start >= position:
            pieces.append(text[position:start])
            pieces.append(mask)
        position = end
    pieces.append(text[position:])
    return text[:0].join(pieces)


@functools.lru_cache(maxsize=128)
def _byte_patterns(patterns: tuple[re.Pattern[str], ...]) -> tuple[re.Pattern[bytes], ...]:
    return tuple(re.compile(p.pattern.encode("utf-8")) for p in patterns)


# -- masking an entry ------------------------------------------------------------


def _mask_part(part: Any, patterns: tuple[re.Pattern[str], ...]) -> Any:
    """Mask exact secrets in a request or a response; a binary body is masked as bytes."""
    if not patterns:
        return part
    if not isinstance(part, dict):
        return _mask_value(part, patterns)
    return {
        _mask_value(k, patterns): (
            _mask_body(v, patterns) if k == "body" else _mask_value(v, patterns)
        )
        for k, v in part.items()
    }


def _mask_value(value: Any, patterns: tuple[re.Pattern[str], ...]) -> Any:
    if isinstance(value, str):
        return _mask_text(value, patterns)
    if isinstance(value, dict):
        return {_mask_value(k, patterns): _mask_value(v, patterns) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_value(v, patterns) for v in value]
    return value


def _mask_body(body: Any, patterns: tuple[re.Pattern[str], ...]) -> Any:
    if not _is_binary(body):
        return _mask_value(body, patterns)
    ((kind, value),) = body.items()
    try:
        if kind == "base64":
            return {kind: _mask_base64(value, patterns)}
        return {kind: [_mask_base64(chunk, patterns) for chunk in value]}
    except (binascii.Error, TypeError, ValueError):
        return _mask_value(body, patterns)  # not base64 after all: mask it as text


def _mask_base64(value: str, patterns: tuple[re.Pattern[str], ...]) -> str:
    data = base64.b64decode(value, validate=True)
    return base64.b64encode(_mask_text(data, patterns)).decode("ascii")


def _mask_fields(value: Any, *, inside: bool = False) -> Any:
    """Mask every value under a credential field of a JSON body."""
    if isinstance(value, dict):
        return {
            k: _mask_fields(v, inside=inside or is_credential_field(str(k)))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask_fields(v, inside=inside) for v in value]
    if inside and isinstance(value, str | int | float) and not isinstance(value, bool):
        return MASK if value != "" else value
    return value


def _mask_shapes(value: Any) -> Any:
    if _is_binary(value):
        return value
    if isinstance(value, str):
        return _SECRET_SHAPES.sub(MASK, value)
    if isinstance(value, dict):
        return {k: _mask_shapes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_shapes(v) for v in value]
    return value


def _is_binary(body: Any) -> bool:
    return isinstance(body, dict) and len(body) == 1 and next(iter(body)) in _BASE64_KINDS
