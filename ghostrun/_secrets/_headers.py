"""Which headers a cassette keeps (DESIGN §3, exact; §4): a safe-list each way.

Request headers are dropped unless known harmless. Response headers are kept by
family first: the standard ones by name, the providers' families unless a name
identifies an account or holds a credential; anything else goes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from ._credentials import is_credential_name, names_authorization, squash

__all__ = ["SUBPROTOCOLS", "keep_request_header", "keep_response_header"]

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
# Names the identifying rule would drop ("session"), kept because replay cannot make the
# requests made live without them; each with why it identifies no account.
_KEPT_DESPITE_THEIR_NAME: Mapping[str, str] = {
    "mcp-session-id": "MCP over streamable HTTP: the id the server made for this one "
    "connection. The client sends it back on each later request, and only with it does it "
    "open its GET listener and close with a DELETE: without it, replay makes other requests",
}
SUBPROTOCOLS = "sec-websocket-protocol"
"""The handshake header (or the adapters' pseudo-header) listing offered subprotocols."""


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
    if name in _KEPT_DESPITE_THEIR_NAME:
        return True
    return name.startswith(_PROVIDER_FAMILIES) and not _identifying_response_header(name)


def _identifying_response_header(name: str) -> bool:
    """A cookie, a credential, or an account's, a person's or a session's identifier.

    Credentials by DESIGN §4's rule (`is_credential_name`) on the whole name, not on
    each word (``x-amzn-bedrock-input-token-count`` is a count,
    ``x-ratelimit-limit-tokens`` a limit), and any authorization word in it
    (``x-amzn-remapped-authorization``).
    """
    words = set(name.replace("_", "-").split("-"))
    return (
        not _IDENTIFYING_WORDS.isdisjoint(words)
        or "cookie" in squash(name)
        or is_credential_name(name)
        or names_authorization(name)
    )
