"""Keep credentials out of every file ghostrun writes (DESIGN §4).

Cassettes are committed, so a credential in one is a leak into git history.
Applied to every entry before it is written:

1. Headers by safe-list: request headers are dropped unless known harmless;
   response headers likewise (``set-cookie`` and account identifiers go).
2. Exact values: every credential the request carried (auth headers, cookies,
   credential query parameters, credential fields of its body read as the key
   reads it, JSON values of headers and strings, secret shapes in the prompt)
   is masked wherever it appears in the entry, responses and streams included
   (`_mask`: any encoding, base64 too, across chunks and events), if it could
   be a credential at all (`_credentials.could_be_credential`: ``"ollama"`` is
   dropped with its header, never masked inside a response).
3. Shapes: known secret formats (``sk-…``, ``AIza…``, ``AKIA…``, ``gsk_…``,
   JWTs, ``Bearer …``) are masked in the stored request.
4. Names by rule (`_credentials`): the values of credential fields of a JSON
   body are masked in the stored request, whatever their length; a field
   holding a JSON schema is structure, not a credential.
5. Signed URLs: credential parameters of a ``location`` header, and of any URL
   in a redirect's body, are masked (the server made them: the request never
   carried them).

Every credential collected is remembered for the process, so run logs and
verdict files are scrubbed of them (`scrub_text`), along with what the
session's ``redact=`` hook removed from its cassettes (`learn_hook_edits`). A
replayed request writes no cassette, so its credentials are collected only
when a scrub first needs them (`defer_secrets`): every file besides cassettes
is written through `scrub_text`, which collects what is held first.

The match key is computed from the unredacted request, so none of this ever
changes what replays.
"""

from __future__ import annotations

import base64
import binascii
import collections
import functools
import json
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote_plus

import orjson

from .._wire._bodies import Body, encode_body
from .._wire._multipart import multipart_parts
from ._credentials import (
    CREDENTIAL_STARTS,
    MINTED_SHAPES,
    MINTED_STARTS,
    SECRET_SHAPES,
    SHAPE_START,
    could_be_credential,
    has_credential_field,
    is_credential_field,
    is_credential_header,
    is_credential_name,
    is_credential_param,
    is_minted_field,
    is_schema,
    squash,
)
from ._mask import MASK, base64_forms, candidates, mask_text, patterns
from ._streams import mask_chunks, mask_events

__all__ = [
    "MASK",
    "SUBPROTOCOLS",
    "Frozen",
    "Request",
    "collect_secrets",
    "defer_secrets",
    "entry_secrets",
    "is_credential_header",
    "keep_request_header",
    "keep_response_header",
    "learn_hook_edits",
    "mask_shapes",
    "minted_secrets",
    "redact_entry",
    "remember_secrets",
    "request_secrets",
    "scrub_text",
]

_REQUEST_HEADERS = frozenset(
    {
        "accept",
        "content-type",
        "anthropic-version",
        "anthropic-beta",
        "openai-beta",
        "x-stainless-helper-method",
        "grpc-message-type",  # a gRPC request message's type name (the grpc road)
    }
)
# Response headers are kept by this safe-list (DESIGN §3, exact; §4), which decides by
# family first (`keep_response_header`). The standard, non-identifying HTTP headers and
# the standard families (`_STANDARD_FAMILIES`) are kept whatever words their names hold:
# the standard fixes what their values are (a date, an origin, a boolean), and none is a
# secret. The providers' families (`_PROVIDER_FAMILIES`) name anything, so a name among
# them is kept unless `_identifying_response_header` says it names an account or holds
# a credential. Anything else goes.
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
        # Protocols the host also speaks (h3). Hop-by-hop headers (connection, keep-alive)
        # describe a connection replay never makes: never kept (`_store._limits`).
        "alt-svc",
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
_STANDARD_FAMILIES = (
    # Cross-origin rules for browsers (Fetch standard): the same for every client.
    # access-control-allow-credentials is "true", not a credential.
    "access-control-",
    "cross-origin-",
)
_PROVIDER_FAMILIES = (
    # Rate limits: what the SDKs and apps throttle by (OpenAI, Groq, Anthropic, IETF).
    "x-ratelimit-",
    "ratelimit-",
    "anthropic-ratelimit-",
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
# Parameters of an authorization header that carry a secret (AWS SigV4's
# ``Credential=AKIA…/scope`` and ``Signature=…``, OAuth 1, Digest).
_AUTH_PARAMS = re.compile(
    r"\b(?:credential|signature|oauth_signature|oauth_token|response|token|sig)"
    r"=\"?([^\",\s]+)\"?",
    re.IGNORECASE,
)
SUBPROTOCOLS = "sec-websocket-protocol"
"""The handshake header (or the adapters' pseudo-header) listing offered subprotocols."""
_COOKIE_NAME = re.compile(r"(?:^|;)\s*[^=;\s]+=")
_FORM = re.compile(r"[^=&\s]+=[^&\s]*(?:&[^=&\s]+=[^&\s]*)*")
_FORM_TYPE = "application/x-www-form-urlencoded"
_FORM_PAIR = re.compile(r"(?:^|(?<=&))([^=&]+)=([^&]*)")
# A query parameter inside a URL in a text (``?key=…``, ``&amp;sig=…`` in HTML).
_URL_PARAM = re.compile(r"(?<=[?&;])([A-Za-z0-9_.\-]+)=([^&\s\"'<>#\\]+)")
_URL_HEADERS = ("location", "content-location")
# A text body that may hold a stream's events: a JSON array, SSE data lines or NDJSON lines.
_MAY_STREAM = re.compile(r"\A\s*\[|^data:|\}[ \t]*[\r\n]\s*\{", re.MULTILINE)
_STREAM_KINDS = ("sse", "ndjson", "chunks", "chunks_base64")
_BASE64_KINDS = ("base64", "chunks_base64")
_BASE64_MARKERS = ('"base64"', '"chunks_base64"')
_WALK_MARKS = (*_BASE64_MARKERS, "\\u", "\\U")
_MAX_REMEMBERED = 1024
_MIN_HOOK_EDIT = 4  # a shorter edit of the hook's is not applied to run logs
# Replayed requests held for a later scrub (`defer_secrets`), counted by their bytes
# (URL, body, header names and values). Past the bound they are collected at once and
# let go. An OpenAI SDK chat request counts about 0.6 KB and takes about 2 KB of memory
# held (measured with tracemalloc), so about 7,000 of them fill it (some 14 MB).
_MAX_HELD_BYTES = 4 * 1024 * 1024

_remembered: dict[str, None] = {}  # insertion-ordered: the oldest are forgotten first
_lock = threading.Lock()


Frozen = tuple[str, ...] | tuple[bytes, ...]
"""A request's headers held flat, ``(name, value, name, value, ...)``: as text, or as the
raw bytes while they are all ASCII (which decode alike in every encoding a library may
pick). One tuple of strings, which the garbage collector stops tracking, not an object."""


class Request(Protocol):
    """A request as the deck describes it (``_recording._deck.RequestInfo``): what
    `request_secrets` and `defer_secrets` read. A protocol, since this layer sits below
    the deck's."""

    @property
    def url(self) -> str: ...
    @property
    def headers(self) -> Iterable[tuple[str, str]]: ...
    @property
    def query(self) -> Iterable[tuple[str, str]]: ...
    @property
    def body(self) -> bytes: ...
    @property
    def content_type(self) -> str: ...
    def frozen_headers(self) -> Frozen: ...


def keep_request_header(name: str) -> bool:
    return name.lower() in _REQUEST_HEADERS


# Response header names are few and repeat on every recording: each verdict is worked out once.
@functools.lru_cache(maxsize=1024)
def keep_response_header(name: str) -> bool:
    """True for a response header a cassette keeps: by family first (the safe-list above),
    then, in a provider's family, unless it identifies or holds a credential."""
    name = name.lower()
    if name in _RESPONSE_HEADERS or name.startswith(_STANDARD_FAMILIES):
        return True
    return name.startswith(_PROVIDER_FAMILIES) and not _identifying_response_header(name)


def _identifying_response_header(name: str) -> bool:
    """A cookie, a credential, or an account's, a person's or a session's identifier.

    Credentials by DESIGN §4's rule (`is_credential_name`) on the squashed name, not
    on each word (``x-amzn-bedrock-input-token-count`` is a count,
    ``x-ratelimit-limit-tokens`` a limit), and any word starting as the rule's names
    do (``x-amzn-remapped-authorization``).
    """
    words = set(name.replace("_", "-").split("-"))
    squashed = squash(name)
    return (
        name in _IDENTIFYING_RESPONSE_HEADERS
        or not _IDENTIFYING_WORDS.isdisjoint(words)
        or "cookie" in squashed
        or is_credential_name(squashed)
        or any(word.startswith(CREDENTIAL_STARTS) and is_credential_name(word) for word in words)
    )


# -- collecting ----------------------------------------------------------------------


def collect_secrets(
    headers: Iterable[tuple[str, str]], query: Iterable[tuple[str, str]] = ()
) -> frozenset[str]:
    """Every credential value a request carried in its headers and query (remembered).

    Headers and parameters whose value is JSON (a gateway's config header) are
    walked for credential fields. The body's are found by `entry_secrets`.
    """
    secrets = _secrets_of(
        tuple(
            (n, v)
            for n, v in headers
            if is_credential_header(n) or v[:1] in ("{", "[") or n.lower() == SUBPROTOCOLS
        ),
        tuple((n, v) for n, v in query if is_credential_param(n) or v[:1] in ("{", "[")),
    )
    _remember(secrets)
    return secrets


def request_secrets(request: Request) -> frozenset[str]:
    """Every credential a request carried, wherever it was (remembered)."""
    return _request_secrets(
        request.url, request.headers, request.query, request.body, request.content_type
    )


def _request_secrets(
    url: str,
    headers: Iterable[tuple[str, str]],
    query: Iterable[tuple[str, str]],
    body: bytes,
    content_type: str,
) -> frozenset[str]:
    part = {"url": url, "body": request_body(body, content_type)}
    secrets = collect_secrets(headers, query) | entry_secrets(part)
    _remember(secrets)
    return secrets


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
    return _worth_masking(found)


def entry_secrets(request: Any) -> frozenset[str]:
    """The credentials a stored request shows itself: body fields and parameters, JSON
    inside its strings, and secret shapes anywhere in it."""
    if not isinstance(request, dict):
        return frozenset()
    found: set[str] = set()
    body = request.get("body")
    if isinstance(body, dict):
        if "json" in body:
            _field_values(body["json"], found, inside=False)
        found |= _form_secrets(body, _content_type(request))
    text = _text_of(request)
    shapes = text is None or bool(SHAPE_START.search(text))
    for value in _strings(request):
        if value[:1] in ("{", "[") and len(value) > 2:
            _json_secrets(value, found)
        if shapes:
            found.update(m.group(0) for m in SECRET_SHAPES.finditer(value))
    return _worth_masking(found)


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
        _minted_values(body["json"], found, inside=False)
    text = body.get("text") if isinstance(body, dict) else None
    if isinstance(text, str) and _is_form(text, _content_type(response)):
        found.update(v for n, v in parse_qsl(text.strip()) if is_minted_field(n))
    dumped = _text_of(response)
    if dumped is None or any(start in dumped for start in MINTED_STARTS):
        for value in _strings(response):
            found.update(match.group(0) for match in MINTED_SHAPES.finditer(value))
    return _worth_masking(found)


def _minted_values(value: Any, found: set[str], *, inside: bool) -> None:
    if isinstance(value, dict):
        inside = inside and not is_schema(value)
        for key, item in value.items():
            _minted_values(item, found, inside=inside or is_minted_field(str(key)))
    elif isinstance(value, list):
        for item in value:
            _minted_values(item, found, inside=inside)
    elif inside and isinstance(value, str):
        found.add(value)


def _content_type(request: dict[str, Any]) -> str:
    headers = request.get("headers")
    return str(headers.get("content-type", "")) if isinstance(headers, dict) else ""


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
        if dot and rest and is_credential_name(squash(name)):
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


def _is_form(text: Any, content_type: str) -> bool:
    """A text body read as a form: said so by its content type (as the key reads it), or
    shaped like one."""
    if not isinstance(text, str):
        return False
    return content_type.lower().startswith(_FORM_TYPE) or bool(_FORM.fullmatch(text.strip()))


def _form_secrets(body: dict[str, Any], content_type: str) -> set[str]:
    """Values of the credential parameters of a form or multipart body."""
    found: set[str] = set()
    text = body.get("text")
    if isinstance(text, str) and _is_form(text, content_type):
        for name, value in parse_qsl(text.strip(), keep_blank_values=True):
            if is_credential_param(name):
                found.add(value)
    if content_type.lower().startswith("multipart/"):
        for part, content, _raw in multipart_parts(_stored_bytes(body), content_type) or ():
            if part and is_credential_param(part):
                value = content.decode("utf-8", "replace")
                found.update({value, value.strip()})
    return found


def _stored_bytes(body: dict[str, Any]) -> bytes:
    """The bytes of a stored ``text`` or ``base64`` body (empty for any other)."""
    text = body.get("text")
    if isinstance(text, str):
        return text.encode("utf-8")
    try:
        return base64.b64decode(str(body.get("base64", "")), validate=True)
    except (binascii.Error, ValueError):
        return b""


def _json_secrets(text: str, found: set[str]) -> None:
    """The credential fields of a string that holds JSON (``x-portkey-config``)."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return
    _field_values(value, found, inside=False)


def _field_values(value: Any, found: set[str], *, inside: bool) -> None:
    """The values under credential fields; a JSON schema under one describes, not carries."""
    if isinstance(value, dict):
        inside = inside and not is_schema(value)
        for key, item in value.items():
            _field_values(item, found, inside=inside or is_credential_field(str(key)))
    elif isinstance(value, list):
        for item in value:
            _field_values(item, found, inside=inside)
    elif inside and isinstance(value, str | int | float) and not isinstance(value, bool):
        found.add(str(value))
    elif isinstance(value, str) and value[:1] in ("{", "[") and len(value) > 2:
        _json_secrets(value, found)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _worth_masking(values: Iterable[str]) -> frozenset[str]:
    return frozenset(v for v in values if v != MASK and MASK not in v and could_be_credential(v))


# -- remembering, for what ghostrun writes besides cassettes ---------------------------


def _remember(secrets: frozenset[str]) -> None:
    if not secrets or all(s in _remembered for s in secrets):
        return
    with _lock:
        for secret in secrets:
            _remembered.pop(secret, None)
            _remembered[secret] = None
        while len(_remembered) > _MAX_REMEMBERED:
            del _remembered[next(iter(_remembered))]


def remember_secrets(secrets: frozenset[str]) -> None:
    """Remember credentials seen as they pass (a WebSocket frame, long before its
    conversation's cassette is written), so the run log scrubs a test's output of them."""
    _remember(secrets)


_Snapshot = tuple[str, bytes, tuple[tuple[str, str], ...], Frozen, int]
"""A held request: URL, body, query, headers (flat) and the bytes they count."""


class _Held:
    """Replayed requests whose credentials no scrub has needed yet, and their bytes.

    Each is held as one tuple of strings and bytes (`_Snapshot`), never as the
    request's objects: thousands of these cost the garbage collector nothing,
    where thousands of held requests (a few objects each) cost a W1 replay about
    as much in full collections as collecting their secrets would have.
    """

    __slots__ = ("lock", "requests", "size")

    def __init__(self) -> None:
        # Held while collecting: a scrub never reads what is remembered while another
        # thread is still collecting the requests it took.
        self.lock = threading.Lock()
        self.requests: collections.deque[_Snapshot] = collections.deque()
        self.size = 0

    def add(self, request: Request) -> None:
        url, body, headers = request.url, request.body, request.frozen_headers()
        size = len(url) + len(body) + sum(map(len, headers))
        with self.lock:
            self.requests.append((url, body, tuple(request.query), headers, size))
            self.size += size
            if self.size > _MAX_HELD_BYTES:
                self._collect()

    def collect(self) -> None:
        with self.lock:
            self._collect()

    def _collect(self) -> None:
        """Oldest first, so the newest stay remembered longest; one at a time, so a
        request that fails to be read costs no other its collection."""
        while self.requests:
            url, body, query, frozen, size = self.requests.popleft()
            self.size -= size
            headers = _thawed(frozen)
            content_type = next((v for n, v in headers if n == "content-type"), "")
            _request_secrets(url, headers, query, body, content_type)


def _thawed(frozen: Frozen) -> list[tuple[str, str]]:
    """Held headers as the request's (lower-case name, value) pairs again."""
    texts = [item.decode("ascii") if isinstance(item, bytes) else item for item in frozen]
    return [(name.lower(), value) for name, value in zip(texts[::2], texts[1::2], strict=True)]


_held = _Held()


def defer_secrets(request: Request) -> None:
    """A replayed request: its credentials are collected when a scrub first needs them.

    Replay writes no cassette, and every other file is written through
    `scrub_text`, which collects what is held first; until then the request's
    URL, body, query and headers are only held, up to `_MAX_HELD_BYTES`: past
    it, they are collected at once and let go. Collecting costs a few per cent of
    a replay (a second parse of the body and a walk of its strings), which a run
    that writes no run log never pays.
    """
    _held.add(request)


def learn_hook_edits(before: Any, after: Any, edits: dict[str, str]) -> None:
    """Add to ``edits`` what the user's ``redact=`` hook changed in an entry (`scrub_text`).

    Each string it changed: the whole string and the part that changed (common
    start and end trimmed) are replaced as it replaced them; each string it
    removed is masked. A session keeps its own, so its run log shows what its
    cassettes show, and no other session's texts are touched.
    """
    _diff(before, after, edits)
    while len(edits) > _MAX_REMEMBERED:
        del edits[next(iter(edits))]


def _diff(before: Any, after: Any, edits: dict[str, str]) -> None:
    if isinstance(before, str):
        if not isinstance(after, str):
            _removed(before, edits)
        elif after != before:
            _changed(before, after, edits)
    elif isinstance(before, dict):
        other = after if isinstance(after, dict) else {}
        for key, item in before.items():
            if key in other:
                _diff(item, other[key], edits)
            else:
                _removed(item, edits)
    elif isinstance(before, list):
        other_items = after if isinstance(after, list) else []
        for index, item in enumerate(before):
            if index < len(other_items):
                _diff(item, other_items[index], edits)
            else:
                _removed(item, edits)


def _removed(value: Any, edits: dict[str, str]) -> None:
    for text in _strings(value):
        if len(text) >= _MIN_HOOK_EDIT and MASK not in text:
            edits[text] = MASK


def _changed(before: str, after: str, edits: dict[str, str]) -> None:
    if len(before) >= _MIN_HOOK_EDIT:
        edits[before] = after
    start = 0
    while start < min(len(before), len(after)) and before[start] == after[start]:
        start += 1
    end = 0
    while end < min(len(before), len(after)) - start and before[-1 - end] == after[-1 - end]:
        end += 1
    middle = before[start : len(before) - end]
    if len(middle) >= _MIN_HOOK_EDIT and MASK not in middle:
        edits[middle] = after[start : len(after) - end]


def scrub_text(
    text: str, secrets: Iterable[str] = (), edits: Mapping[str, str] | None = None
) -> str:
    """A text with secret shapes and every credential seen so far in this process masked,
    and a session's hook ``edits`` applied: for run logs and verdict files."""
    _held.collect()
    with _lock:
        known = frozenset(_remembered)
    known = candidates(text, known | _worth_masking(secrets))
    if known:
        text = mask_text(text, patterns(known))
    text = SECRET_SHAPES.sub(MASK, text)
    if any(start in text for start in MINTED_STARTS):
        text = MINTED_SHAPES.sub(MASK, text)
    for old, new in sorted((edits or {}).items(), key=lambda item: -len(item[0])):
        if old in text:
            text = text.replace(old, new)
    return text


# -- masking an entry ------------------------------------------------------------------


def redact_entry(entry: dict[str, Any], secrets: frozenset[str]) -> dict[str, Any]:
    """Mask secrets in an entry ``{"request": ..., "response": ...}`` (a new dict).

    ``secrets`` are those of the request's headers and query (`collect_secrets`);
    those the stored request shows itself are added (and remembered).
    """
    entry = dict(entry)
    request = entry.get("request")
    if isinstance(request, dict):
        request = entry["request"] = _read_as_key_reads(request)
    secrets = secrets | entry_secrets(request) | minted_secrets(entry.get("response"))
    _remember(secrets)
    if secrets:
        entry = _mask_exact(entry, secrets)
    response = entry.get("response")
    if isinstance(response, dict):
        entry["response"] = _mask_minted(_mask_signed_urls(response))
    request = entry.get("request")
    if isinstance(request, dict):
        body = request.get("body")
        if isinstance(body, dict) and "json" in body and has_credential_field(body["json"]):
            request = {**request, "body": {**body, "json": _mask_fields(body["json"])}}
        elif isinstance(body, dict) and ("text" in body or "base64" in body):
            request = {**request, "body": _mask_form_fields(body, _content_type(request))}
        text = _text_of(request)
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


def _mask_exact(entry: dict[str, Any], secrets: frozenset[str]) -> dict[str, Any]:
    """Mask exact secrets everywhere; a stream is searched across its chunks and events."""
    compiled = patterns(secrets)
    response = entry.get("response")
    body = response.get("body") if isinstance(response, dict) else None
    if isinstance(response, dict) and isinstance(body, dict):
        read = _across_eventstream(body, compiled) if "eventstream" in body else body
        read = _across_whole_body(read, compiled)
        if read is not body:
            body = read
            entry = {**entry, "response": {**response, "body": body}}
    kind = _stream_kind(body)
    if kind is None or not isinstance(response, dict) or not isinstance(body, dict):
        return (
            {k: _mask_part(v, compiled) for k, v in entry.items()}
            if _may_hold(entry, secrets)
            else entry
        )
    rest = {**entry, "response": {**response, "body": None}}
    if _may_hold(rest, secrets):
        rest = {k: _mask_part(v, compiled) for k, v in rest.items()}
    masked, moved = _mask_stream(kind, body, compiled)
    rest["response"] = {**rest["response"], "body": masked}
    if moved:
        rest["response"]["masked_across_chunks"] = moved
    return rest


def _across_whole_body(body: dict[str, Any], compiled: Any) -> dict[str, Any]:
    """A body read whole, masked across its values: Gemini's ``streamGenerateContent``
    without ``alt=sse`` answers one JSON array of chunks as ``application/json``, a
    server may send SSE or NDJSON under another type, and one answer may spell a secret
    over the items of a list (logprobs' tokens and their bytes, Gemini's parts).

    The events' joined fields are searched even when no whole secret is in the body
    (the fast check `_may_hold` only sees whole ones).
    """
    if "json" in body and set(body) <= {"json", "format"}:
        value = body["json"]
        events = value if isinstance(value, list) else [value]
        masked = mask_events(events, compiled)
        if masked is events:
            return body
        return {**body, "json": masked if isinstance(value, list) else masked[0]}
    text = body.get("text")
    if len(body) == 1 and isinstance(text, str) and _MAY_STREAM.search(text):
        (masked_text,), _moved = mask_chunks([text], compiled)
        return body if masked_text == text else {"text": masked_text}
    return body


def _across_eventstream(body: dict[str, Any], compiled: Any) -> dict[str, Any]:
    """An AWS event-stream body whose JSON payloads are masked together: a model may
    spell a key over two ``contentBlockDelta`` events, as over two SSE events.

    A payload ``{"bytes": <base64 JSON>}`` (InvokeModelWithResponseStream; real Bedrock
    adds a ``"p"`` padding field beside it) is read, masked and encoded again as the
    event it carries, so that a mask never lands inside its base64 and the stream
    still decodes on replay.
    """
    chunks = body["eventstream"]
    if not isinstance(chunks, list):
        return body
    at = [
        (c, f)
        for c, chunk in enumerate(chunks)
        if isinstance(chunk, list)
        for f, frame in enumerate(chunk)
        if isinstance(frame, dict) and "json" in frame
    ]
    payloads = [chunks[c][f]["json"] for c, f in at]
    events = [_carried(payload) for payload in payloads]
    masked = mask_events(events, compiled)
    out = [list(chunk) if isinstance(chunk, list) else chunk for chunk in chunks]
    changed = False
    for (c, f), payload, event, value in zip(at, payloads, events, masked, strict=True):
        if event is not payload:  # the event its bytes carry
            value = _mask_value(value, compiled)
            if value == event:
                continue
            data = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
            value = {**payload, "bytes": base64.b64encode(data).decode("ascii")}
        elif value is event:
            continue
        out[c][f] = {**out[c][f], "json": value}
        changed = True
    return {**body, "eventstream": out} if changed else body


def _carried(payload: Any) -> Any:
    """The event a ``{"bytes": <base64 JSON>, ...}`` payload carries, else the payload.

    Whatever else the payload holds (Bedrock's ``"p"`` padding) does not hide the event.
    """
    if isinstance(payload, dict) and isinstance(payload.get("bytes"), str):
        try:
            return orjson.loads(base64.b64decode(payload["bytes"], validate=True))
        except (binascii.Error, ValueError):
            pass
    return payload


def _stream_kind(body: Any) -> str | None:
    """The key holding a stream's chunks, beside at most a ``carry`` of split characters."""
    if not isinstance(body, dict) or not set(body) - {"carry"}:
        return None
    kinds = [k for k in body if k in _STREAM_KINDS]
    return kinds[0] if len(kinds) == 1 and set(body) <= {kinds[0], "carry"} else None


def _mask_stream(
    kind: str, body: dict[str, Any], compiled: Any
) -> tuple[dict[str, Any], list[int]]:
    chunks = body[kind]
    if not isinstance(chunks, list):
        return body, []
    if kind == "chunks_base64":
        try:
            data = [base64.b64decode(c, validate=True) for c in chunks]
        except (binascii.Error, TypeError, ValueError):
            return {**body, kind: _mask_value(chunks, compiled)}, []
        masked, moved = mask_chunks(data, compiled)
        return {**body, kind: [base64.b64encode(c).decode("ascii") for c in masked]}, moved
    if not all(isinstance(c, str) for c in chunks):
        return {**body, kind: _mask_value(chunks, compiled)}, []
    texts, moved = mask_chunks(list(chunks), compiled)
    out: dict[str, Any] = {**body, kind: texts}
    carry = body.get("carry")
    if isinstance(carry, list):
        # A character carried to the start of the next chunk (DESIGN §3) stays carried
        # only where that chunk still starts with it.
        def still(c: Any) -> bool:
            index = c[0] if isinstance(c, list) and c and isinstance(c[0], int) else -1
            return 0 <= index < len(texts) - 1 and texts[index + 1][:1] == chunks[index + 1][:1]

        kept = [c for c in carry if still(c)]
        dropped = [c[0] + 1 for c in carry if not still(c) and isinstance(c, list) and c]
        moved = sorted({*moved, *(i for i in dropped if isinstance(i, int))})
        if kept:
            out["carry"] = kept
        else:
            del out["carry"]
    return out, moved


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
    text = entry if isinstance(entry, str) else _text_of(entry)
    if text is None or any(mark in text for mark in _WALK_MARKS):
        return True
    clues = _clues(secrets)
    if clues is None:
        return True
    if not any(clue in text for clue in clues):
        return False
    return any(p.search(text) for p in patterns(secrets))


@functools.lru_cache(maxsize=128)
def _clues(secrets: frozenset[str]) -> tuple[str, ...] | None:
    """Substrings one of which any match of `patterns` in JSON text contains.

    A secret shows either as itself (or a base64 form of it) or with some
    characters escaped, and every escape `_mask` knows starts with one of
    these marks (``\\u`` is in `_WALK_MARKS`). None: a secret with a control
    character, always walked.
    """
    chars = set("".join(secrets))
    if any(ord(c) < 0x20 for c in chars):
        return None
    clues = {*secrets, "%"}
    for secret in secrets:
        clues.update(base64_forms(secret))
    if chars & set("&<>\"'") or any("+" in c or "/" in c for c in clues):
        clues.add("&")
    if " " in chars:
        clues.add("+")
    if chars & set('"\\/') or any("/" in c for c in clues):
        clues.add("\\")
    return tuple(sorted(clues, key=len))


def _text_of(value: Any) -> str | None:
    try:
        return orjson.dumps(value).decode("utf-8")
    except (TypeError, orjson.JSONEncodeError):
        return None  # not JSON (a user hook's doing): take the slow, sure path


def _mask_part(part: Any, compiled: Any) -> Any:
    """Mask exact secrets in a request or a response; a binary body is masked as bytes."""
    if not isinstance(part, dict):
        return _mask_value(part, compiled)
    return {
        _mask_value(k, compiled): (
            _mask_body(v, compiled) if k == "body" else _mask_value(v, compiled)
        )
        for k, v in part.items()
    }


def _mask_value(value: Any, compiled: Any) -> Any:
    if isinstance(value, str):
        return mask_text(value, compiled)
    if isinstance(value, dict):
        return {_mask_value(k, compiled): _mask_value(v, compiled) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_value(v, compiled) for v in value]
    return value


def _mask_body(body: Any, compiled: Any) -> Any:
    if not _is_binary(body):
        return _mask_value(body, compiled)
    ((kind, value),) = body.items()
    try:
        if kind == "base64":
            return {kind: _mask_base64(value, compiled)}
        return {kind: [_mask_base64(chunk, compiled) for chunk in value]}
    except (binascii.Error, TypeError, ValueError):
        return _mask_value(body, compiled)  # not base64 after all: mask it as text


def _mask_base64(value: str, compiled: Any) -> str:
    data = base64.b64decode(value, validate=True)
    return base64.b64encode(mask_text(data, compiled)).decode("ascii")


def _mask_fields(value: Any, *, inside: bool = False) -> Any:
    """Mask every value under a credential field of a JSON body (a schema under one stays)."""
    if isinstance(value, dict):
        inside = inside and not is_schema(value)
        return {
            k: _mask_fields(v, inside=inside or is_credential_field(str(k)))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_mask_fields(v, inside=inside) for v in value]
    if inside and isinstance(value, str | int | float) and not isinstance(value, bool):
        return MASK if value != "" else value
    return value


def _mask_form_fields(body: dict[str, Any], content_type: str) -> dict[str, Any]:
    """A form or multipart body with each credential parameter's value masked, whatever it
    is: the names are read by rule, as `_mask_fields` reads a JSON body's (``password=``
    holding a plain word is still a password)."""
    text = body.get("text")
    if isinstance(text, str) and _is_form(text, content_type):
        masked = _FORM_PAIR.sub(_masked_form_pair, text)
        return body if masked == text else {**body, "text": masked}
    if not content_type.lower().startswith("multipart/"):
        return body
    data = _stored_bytes(body)
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
    if _is_binary(value):
        return value
    if isinstance(value, str):
        return shapes.sub(MASK, value)
    if isinstance(value, dict):
        return {k: mask_shapes(v, shapes) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_shapes(v, shapes) for v in value]
    return value


def _mask_minted(response: dict[str, Any]) -> dict[str, Any]:
    """A response with the credentials a provider minted in it masked (a Realtime client
    secret ``ek_…``, a Gemini Live ``auth_tokens/…``): the request never carried them, so
    only their shape finds them."""
    text = _text_of(response)
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
    if isinstance(status, int) and 300 <= status < 400 and not _is_binary(body):
        response = {**response, "body": _mask_url_params(body)}
    return response


def _mask_url_params(value: Any) -> Any:
    if isinstance(value, str):
        return _URL_PARAM.sub(_masked_param, value) if "=" in value else value
    if isinstance(value, dict):
        return {k: _mask_url_params(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_url_params(v) for v in value]
    return value


def _masked_param(match: re.Match[str]) -> str:
    name = match.group(1)
    return f"{name}={MASK}" if is_credential_param(name) else match.group(0)


def _is_binary(body: Any) -> bool:
    return isinstance(body, dict) and len(body) == 1 and next(iter(body)) in _BASE64_KINDS
