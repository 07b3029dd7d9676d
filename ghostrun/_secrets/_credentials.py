"""Which names carry credentials, and which values could be credentials (DESIGN §4).

Names, by rule, read as *words* (`name_words`: split on ``_``, ``-``, ``.``,
spaces, digits and camelCase, lower-cased: ``api_key``, ``apiKey`` and
``X-API-KEY`` all read ``api key``): a body field, query or form parameter or
header whose last word is one of `CREDENTIAL_ENDINGS`, or whose first word is
one of `CREDENTIAL_STARTS`, is a credential, except the harmless names listed
below, each with the reason it is harmless. Words, never prefixes or bare
substrings: ``max_tokens`` ends in ``tokens``, not ``token``; ``author_email``,
``authored_at`` and ``authority`` start with other words than ``auth``; but
``auth``, ``auth_token`` and ``x-auth-key`` are credentials. A name written as
one word from a credential word and a `COMPOUND_HEADS` word (``apikey``,
``accesstoken``, ``authtoken``) reads as its credential word. A few names the
rule cannot see are listed per place (``code=`` in a URL is an OAuth code).

Values, by rule: a credential's exact value is masked wherever it appears
(responses, run logs, verdicts) only if it could be a credential at all:
long enough, varied enough, and not a known placeholder. ``api_key="ollama"``
is dropped with its header, but "is ollama free?" stays as the model said it.

Everything that decides a name is derived from these tables, the fast check
for secret shapes included (`SHAPE_START`), so no second list can drift from the rule.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "COMPOUND_HEADS",
    "CREDENTIAL_ENDINGS",
    "CREDENTIAL_STARTS",
    "HARMLESS_FIELDS",
    "HARMLESS_NAMES",
    "MINTED_SHAPES",
    "MINTED_STARTS",
    "PLACEHOLDERS",
    "RESPONSE_HARMLESS",
    "SECRET_SHAPES",
    "SHAPE_START",
    "could_be_credential",
    "is_credential_field",
    "is_credential_header",
    "is_credential_name",
    "is_credential_param",
    "is_minted_field",
    "is_schema",
    "name_words",
    "names_authorization",
    "squash",
]

CREDENTIAL_ENDINGS = (
    "key",
    "secret",
    "token",
    "password",
    "passwd",
    "credential",
    "credentials",
    "signature",
)
CREDENTIAL_STARTS = ("auth", "authorization", "authentication")
COMPOUND_HEADS = (
    "api",
    "access",
    "secret",
    "private",
    "client",
    "auth",
    "refresh",
    "id",
    "session",
    "bearer",
    "app",
    "service",
    "master",
    "user",
    "admin",
    "security",
    "oauth",
    "xapi",
)
"""Words that, written together with a credential word (``apikey``, ``accesstoken``),
make one: such a one-word name reads as its last, credential, word."""

# Squashed names the rule matches that carry no credential, wherever they appear.
HARMLESS_NAMES: Mapping[str, str] = {
    "idempotencykey": "a retry-deduplication id the client makes up (Idempotency-Key)",
    "cachekey": "a label choosing a cache entry, chosen by the caller, not a secret",
    "promptcachekey": "OpenAI's prompt-cache routing label: it changes the answer's routing,"
    " so it must stay in the match key",
    "pagetoken": "a pagination cursor (Google APIs' pageToken), handed out by the server",
    "nextpagetoken": "the pagination cursor a list response hands back",
    "progresstoken": "MCP's progress token: a label the client picks to match progress"
    " notifications to its request",
}
# Harmless as JSON body fields only: in a URL the same names are credentials.
HARMLESS_FIELDS: Mapping[str, str] = {
    "key": "JSON bodies use 'key' for structure (key/value lists, sort keys); in a URL,"
    " key= is Gemini's API key, and there it stays a credential",
    "signature": "Anthropic thinking blocks carry the model's signature of its own thinking,"
    " which the client must send back unchanged: it authorises nothing",
    "thoughtsignature": "Gemini parts carry the model's signature of its own thinking,"
    " sent back unchanged: it authorises nothing",
}
# Names the rule cannot see that are credentials in a query string or form.
EXTRA_PARAMS: Mapping[str, str] = {
    "code": "an OAuth 2 authorization code (RFC 6749 4.1.2), exchanged for a token",
    "sig": "the signature of an Azure SAS URL",
    "clientassertion": "an OAuth client assertion (RFC 7523): a signed JWT",
}
# Request headers the rule cannot see.
EXTRA_HEADERS: Mapping[str, str] = {
    "cookie": "session cookies authenticate the request",
}

# Values users pass when a server needs no key (Ollama, LM Studio, vLLM, llama.cpp,
# LiteLLM docs...): never masked in a response, compared lower-cased.
PLACEHOLDERS = frozenset(
    {
        "ollama",
        "lm-studio",
        "lmstudio",
        "empty",
        "none",
        "null",
        "sk-no-key-required",
        "no-key",
        "nokey",
        "no-key-required",
        "not-needed",
        "not-used",
        "unused",
        "dummy",
        "test",
        "fake",
        "placeholder",
        "x",
        "xxx",
        "key",
        "api-key",
        "apikey",
        "api_key",
        "your-api-key",
        "your_api_key",
        "token",
        "secret",
        "password",
        "changeme",
        "anything",
        "local",
        "vllm",
        "llama.cpp",
        "sk-1234",
        "sk-xxx",
        "sk-dummy",
        "sk-fake",
        "sk-test",
    }
)
MIN_CREDENTIAL = 12
"""A value shorter than this is never masked in a response (no provider key is this short)."""
MIN_DISTINCT = 6
"""Nor one with fewer distinct characters (``sk-xxxxxxxxxxxxxxxx``)."""
LONG_CREDENTIAL = 24
"""From this length a value of letters alone counts (a passphrase)."""
# Each known secret shape: where it starts (a plain prefix JSON never escapes), and the
# rest. `SECRET_SHAPES` and its fast check `SHAPE_START` are both built from this table.
_SHAPES = (
    ("sk-", r"[A-Za-z0-9_\-]{16,}"),  # OpenAI (sk-proj-), Anthropic (sk-ant-), OpenRouter
    ("gsk_", r"[A-Za-z0-9]{20,}"),  # Groq
    ("xai-", r"[A-Za-z0-9]{20,}"),
    ("pplx-", r"[A-Za-z0-9]{20,}"),
    ("hf_", r"[A-Za-z0-9]{30,}"),
    ("r8_", r"[A-Za-z0-9]{20,}"),
    ("AIza", r"[0-9A-Za-z_\-]{30,}"),  # Google API keys
    (r"ya29\.", r"[0-9A-Za-z_\-]{20,}"),  # Google OAuth access tokens
    ("AKIA", r"[0-9A-Z]{16}"),  # AWS access key ids
    ("ASIA", r"[0-9A-Z]{16}"),
    ("gh[pousr]_", r"[A-Za-z0-9]{30,}"),
    ("github_pat_", r"[A-Za-z0-9_]{30,}"),
    ("xox[abposr]-", r"[A-Za-z0-9\-]{10,}"),  # Slack
    ("eyJ", r"[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+"),  # JWTs
)
_BEARER = ("Bearer ", r"[A-Za-z0-9._~+/\-]{8,}=*")  # the token only, after its scheme
_PRIVATE_KEY = ("-----BEGIN", r"[A-Z ]*PRIVATE KEY-----.*?-----END[A-Z ]*PRIVATE KEY-----")
SECRET_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:" + "|".join(start + rest for start, rest in _SHAPES) + ")"
    f"|(?<={_BEARER[0]}){_BEARER[1]}"
    f"|{_PRIVATE_KEY[0]}{_PRIVATE_KEY[1]}",
    re.DOTALL,
)
# None of these starts can be split by orjson's escapes, so their absence from an
# entry's JSON text means no shape is in any of its strings.
SHAPE_START = re.compile("|".join(start for start, _ in (*_SHAPES, _BEARER, _PRIVATE_KEY)))
# Credentials a provider mints and hands out in an answer: never what the request carried,
# so no exact value finds them; masked in every answer (and WebSocket frame) by shape.
_MINTED = (
    ("ek_", r"[A-Za-z0-9_\-]{12,}"),  # OpenAI Realtime client secrets
    ("auth_tokens/", r"[A-Za-z0-9_\-]{12,}"),  # Gemini Live ephemeral tokens
    ("sk-admin-", r"[A-Za-z0-9_\-]{16,}"),  # OpenAI admin keys, shown once on creation
    ("sk-svcacct-", r"[A-Za-z0-9_\-]{16,}"),  # OpenAI service account keys, likewise
    (r"ya29\.", r"[0-9A-Za-z_\-]{20,}"),  # Google OAuth access tokens (token endpoint)
)
MINTED_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:" + "|".join(start + rest for start, rest in _MINTED) + ")"
)
MINTED_STARTS = tuple(start.replace("\\", "") for start, _ in _MINTED)  # absent: no shape
# Fields whose value a provider mints in an answer, by DESIGN §4's rule on names
# (``access_token``, ``refresh_token``, ``id_token``, ``client_secret``, ``api_key``),
# except names an answer uses for content.
RESPONSE_HARMLESS: Mapping[str, str] = {
    "token": "logprobs' token: a piece of the model's own text",
    "tokens": "a list of the model's tokens",
}
_SEPARATORS = frozenset("-_. ")
_SCHEMA_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_SCHEMA_WORDS = ("$ref", "anyOf", "oneOf", "allOf", "enum", "const", "properties", "items")


_SPLIT = re.compile(r"[\W_\d]+")  # separators: anything but a letter (digits included)
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


@functools.lru_cache(maxsize=4096)
def name_words(name: str) -> tuple[str, ...]:
    """A name's words, lower-cased: ``X-Api-Key``, ``x_api_key``, ``xAPIKey`` -> x, api, key."""
    return tuple(
        word.lower()
        for chunk in _SPLIT.split(name)
        if chunk
        for word in _CAMEL.split(chunk)
        if word
    )


def squash(name: str) -> str:
    """A name's words run together (``X-Api-Key-2`` -> ``xapikey``): how the
    safe-lists spell a name, so each entry holds however the name is written."""
    return "".join(name_words(name))


def _credential_word(word: str) -> bool:
    """A last word that names a credential: one of the endings, or a compound of one."""
    if word in CREDENTIAL_ENDINGS:
        return True
    return any(
        word.endswith(ending) and word[: -len(ending)] in COMPOUND_HEADS
        for ending in CREDENTIAL_ENDINGS
    )


@functools.lru_cache(maxsize=4096)
def is_credential_name(name: str) -> bool:
    """The rule alone, on a name as written (no place-specific entries).

    The last word, or the first, may be spelled across several (``Pass-Word``,
    ``a_p_i_k_e_y``): the words at the end, run together, and those at the start are
    read too, always whole words, so ``author_email`` stays content.
    """
    if squash(name) in HARMLESS_NAMES:
        return False
    words = name_words(name)
    ends = ("".join(words[i:]) for i in range(len(words)))
    starts = ("".join(words[:i]) for i in range(1, len(words) + 1))
    return any(map(_credential_word, ends)) or any(s in CREDENTIAL_STARTS for s in starts)


def names_authorization(name: str) -> bool:
    """Any word of the name is an authorization word (``x-amzn-remapped-authorization``)."""
    return any(word in CREDENTIAL_STARTS for word in name_words(name))


# Field names repeat on every request; the key and a replay's secrets both ask (about
# 1 % of a replay in place, measured uncached).
@functools.lru_cache(maxsize=2048)
def is_credential_field(name: str) -> bool:
    """A JSON body field whose value carries a credential (dropped from the key)."""
    return squash(name) not in HARMLESS_FIELDS and is_credential_name(name)


@functools.lru_cache(maxsize=2048)
def is_minted_field(name: str) -> bool:
    """A JSON field of a response whose value is a credential the provider minted."""
    squashed = squash(name)
    return squashed not in RESPONSE_HARMLESS and is_credential_field(name)


def is_credential_param(name: str) -> bool:
    """A query, form or multipart parameter that carries a credential (dropped from the key)."""
    return squash(name) in EXTRA_PARAMS or is_credential_name(name)


# Asked for every header of every request, replayed or recorded: uncached, the rule's
# word-by-word reading costs about 5 % of a replay in place.
@functools.lru_cache(maxsize=1024)
def is_credential_header(name: str) -> bool:
    """A request header whose value carries a credential.

    Headers are never part of the key, so here the rule is also applied to
    each ``-``-separated word of the name (``helicone-auth``): a header
    taken for a credential wrongly costs nothing.
    """
    squashed = squash(name)
    if squashed in HARMLESS_NAMES:
        return False
    if squashed in EXTRA_HEADERS or is_credential_name(name):
        return True
    return any(is_credential_name(word) for word in name.split("-") if word)


def is_schema(value: Any) -> bool:
    """A JSON-schema object: it describes a credential field, it does not carry one.

    A tool's ``"properties": {"password": {"type": "string"}}`` is structure (issue 22).
    """
    if not isinstance(value, dict):
        return False
    kind = value.get("type")
    if isinstance(kind, str) and kind in _SCHEMA_TYPES:
        return True
    if (
        isinstance(kind, list)
        and kind
        and all(isinstance(k, str) and k in _SCHEMA_TYPES for k in kind)
    ):
        return True
    return any(word in value for word in _SCHEMA_WORDS)


def could_be_credential(value: str) -> bool:
    """Whether an exact value is worth masking outside the header or field that carried it.

    Not a placeholder; at least `MIN_CREDENTIAL` characters, `MIN_DISTINCT` of them
    distinct; and either a digit, both letter cases, or a symbol other than ``-_.``
    (keys and passwords have them, words and placeholders do not), or at least
    `LONG_CREDENTIAL` characters, or a known secret shape (``AKIA…``).
    """
    value = value.strip()
    if value.lower() in PLACEHOLDERS or len(value) < MIN_CREDENTIAL:
        return False
    if len(set(value)) < MIN_DISTINCT:
        return False
    if len(value) >= LONG_CREDENTIAL or SECRET_SHAPES.fullmatch(value):
        return True
    has_digit = any(c.isdigit() for c in value)
    mixed_case = any(c.islower() for c in value) and any(c.isupper() for c in value)
    symbol = any(not c.isalnum() and c not in _SEPARATORS for c in value)
    return has_digit or mixed_case or symbol
