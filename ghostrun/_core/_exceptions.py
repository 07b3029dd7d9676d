"""Every error ghostrun raises.

    BaseException
    ├── CacheMiss              a request or verdict has no recording and may not be made
    └── Exception
        └── GhostrunError      the base of the ordinary errors
            ├── CassetteError      a cassette or verdict file is corrupt, of an unknown
            │                      version, or cannot be written
            ├── UnsupportedHttpx   an installed HTTP library lacks the hook we wrap
            ├── JudgeUnavailable   the judge cannot be reached or cannot answer
            └── StaleCassette      replay used recordings older than ``max_age``
                                   (``on_stale="fail"``)
    UserWarning
    ├── UnlistedHostWarning    a request that looks like an LLM call passed through
    │                          unrecorded: its host is not listed
    └── StaleCassetteWarning   replay used recordings older than ``max_age``

``CacheMiss`` derives from ``BaseException`` on purpose, as pytest's own
outcome exceptions do: SDKs (anthropic, groq) wrap any ``Exception`` from the
transport in their connection error and retry it with backoff, and apps wrap
LLM calls in ``except Exception`` fallbacks. Neither may turn a replay miss
into a slow or silently green test.

A cassette that cannot be written while recording (a read-only directory, a
full disk, a failing ``redact=`` hook) raises its ordinary error, a
``CassetteError``, but not from inside the transport: there it would be an
``Exception`` raised by the HTTP layer, which those same SDKs wrap and retry,
sending (and billing) the request again and again. The response that was
received is handed on to the code under test, and the first write error is
raised when the session exits, the way a swallowed ``CacheMiss`` is. A test
therefore sees the write error once, after exactly one real request.
"""

from __future__ import annotations

from ._public import public

__all__ = [
    "CacheMiss",
    "CassetteError",
    "GhostrunError",
    "JudgeUnavailable",
    "StaleCassette",
    "StaleCassetteWarning",
    "UnlistedHostWarning",
    "UnsupportedHttpx",
]


@public
class GhostrunError(Exception):
    """Base class of ghostrun's ordinary errors."""


@public
class CassetteError(GhostrunError):
    """A cassette file is corrupt, of an unknown version, or cannot be written."""


@public
class UnsupportedHttpx(GhostrunError):
    """An installed HTTP library lacks the hook ghostrun wraps.

    Raised before any request is sent: falling through to the real network
    is the one failure this library must never have.
    """


@public
class JudgeUnavailable(GhostrunError):
    """The judge cannot be reached, lacks the model, timed out or said nothing."""


@public
class CacheMiss(BaseException):
    """A request (or judge verdict) has no recording, and the mode forbids making it."""


@public
class UnlistedHostWarning(UserWarning):
    """A request that looks like an LLM API call went to a host no session lists.

    Said once per session; the fix is in the message: list the host with
    ``hosts=[...]`` or ``GHOSTRUN_HOSTS``.
    """


@public
class StaleCassette(GhostrunError):
    """A replay used recordings older than ``max_age``, and ``on_stale="fail"`` was asked.

    Raised when the session closes, listing the cassettes; re-record them.
    """


@public
class StaleCassetteWarning(UserWarning):
    """A replay used recordings older than ``max_age``: one warning lists them all."""
