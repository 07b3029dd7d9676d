"""Which hosts are LLM providers, and so intercepted.

Everything else passes through untouched. A pattern is a host name (which
also matches its subdomains), a ``*`` wildcard (``bedrock-runtime.*.amazonaws.com``),
or either of these with a ``:port``.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

__all__ = ["PROVIDER_HOSTS", "HostMatcher"]

PROVIDER_HOSTS: tuple[str, ...] = (
    "api.openai.com",
    "openai.azure.com",
    "cognitiveservices.azure.com",
    "services.ai.azure.com",
    "models.inference.ai.azure.com",
    "api.anthropic.com",
    "generativelanguage.googleapis.com",
    "aiplatform.googleapis.com",
    "*-aiplatform.googleapis.com",
    "bedrock-runtime.*.amazonaws.com",
    "bedrock-agent-runtime.*.amazonaws.com",
    "api.mistral.ai",
    "api.cohere.com",
    "api.cohere.ai",
    "api.groq.com",
    "api.together.xyz",
    "api.together.ai",
    "api.fireworks.ai",
    "api.deepseek.com",
    "api.x.ai",
    "api.perplexity.ai",
    "openrouter.ai",
    "api.ai21.com",
    "api.voyageai.com",
    "api.cerebras.ai",
    "api.deepinfra.com",
    "api-inference.huggingface.co",
    "router.huggingface.co",
    "api.replicate.com",
    "api.moonshot.ai",
    "dashscope.aliyuncs.com",
)


class HostMatcher:
    """Answers "is this host a provider?" in one dict lookup after the first time."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(dict.fromkeys(_pattern(p) for p in patterns if p.strip()))
        self._cache: dict[tuple[str, int | None], bool] = {}

    def __call__(self, host: str, port: int | None = None) -> bool:
        found = self._cache.get((host, port))
        if found is None:
            found = self._cache[(host, port)] = self._match(host.lower(), port)
        return found

    def _match(self, host: str, port: int | None) -> bool:
        return any(_matches(pattern, host, port) for pattern in self.patterns)


def _pattern(text: str) -> str:
    """Accept what users paste: ``https://host:port/v1`` means ``host:port``."""
    text = text.strip().lower()
    if "://" in text:
        text = text.split("://", 1)[1]
    return text.split("/", 1)[0]


def _matches(pattern: str, host: str, port: int | None) -> bool:
    name, sep, want_port = pattern.rpartition(":") if _has_port(pattern) else (pattern, "", "")
    if sep and str(port) != want_port:
        return False
    if "*" in name:
        return fnmatchcase(host, name)
    return host == name or host.endswith("." + name)


def _has_port(pattern: str) -> bool:
    _head, sep, tail = pattern.rpartition(":")
    return bool(sep) and tail.isdigit() and "]" not in tail
