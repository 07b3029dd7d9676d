"""Every error ghostrun raises.

    BaseException
    ├── CacheMiss              a request or verdict has no recording and may not be made
    └── Exception
        └── GhostrunError      the base of the ordinary errors
            ├── CassetteError      a cassette or verdict file is corrupt, of an unknown
            │                      version, or cannot be written
            ├── UnsupportedHttpx   an installed HTTP library lacks the hook we wrap
            └── JudgeUnavailable   the judge cannot be reached or cannot answer

``CacheMiss`` derives from ``BaseException`` on purpose, as pytest's own
outcome exceptions do: SDKs (anthropic, groq) wrap any ``Exception`` from the
transport in their connection error and retry it with backoff, and apps wrap
LLM calls in ``except Exception`` fallbacks. Neither may turn a replay miss
into a slow or silently green test.
"""

from __future__ import annotations

__all__ = [
    "CacheMiss",
    "CassetteError",
    "GhostrunError",
    "JudgeUnavailable",
    "UnsupportedHttpx",
]


class GhostrunError(Exception):
    """Base class of ghostrun's ordinary errors."""


class CassetteError(GhostrunError):
    """A cassette file is corrupt, of an unknown version, or cannot be written."""


class UnsupportedHttpx(GhostrunError):
    """An installed HTTP library lacks the hook ghostrun wraps.

    Raised before any request is sent: falling through to the real network
    is the one failure this library must never have.
    """


class JudgeUnavailable(GhostrunError):
    """The judge cannot be reached, lacks the model, timed out or said nothing."""


class CacheMiss(BaseException):
    """A request (or judge verdict) has no recording, and the mode forbids making it."""
