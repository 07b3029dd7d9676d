"""Every error ghostrun raises.

    BaseException
    ├── CacheMiss              a request or verdict has no recording and may not be made
    │   └── DamagedCassette    the cassette or verdict file a request read is damaged
    │                          (its CassetteError is the cause)
    └── Exception
        └── GhostrunError      the base of the ordinary errors
            ├── CassetteError      a cassette or verdict file is corrupt, of an unknown
            │                      version, or cannot be written
            ├── UnsupportedLibrary an installed HTTP library lacks the hook we wrap
            │                      (alias: UnsupportedHttpx, its first name)
            ├── JudgeUnavailable   the judge cannot be reached or cannot answer
            ├── ReplayRefused      in replay, a connection refused where no test and no
            │                      session runs (a module's probe at import, collection)
            └── StaleCassette      replay used recordings older than ``max_age``
                                   (``on_stale="fail"``)
        └── AssertionError
            └── UnplayedSteps      a replayed test stopped before the steps its trajectory
                                   recorded (``on_unplayed="fail"``)
    UserWarning
    ├── UnlistedHostWarning    a request that looks like an LLM call, or any traffic in replay,
    │                          went out unrecorded: its host is not listed
    ├── AuthFailureWarning     a session recorded a 401 or 403: the key is likely bad
    ├── StaleCassetteWarning   replay used recordings older than ``max_age``
    └── UnplayedStepsWarning   the same as ``UnplayedSteps``, with ``on_unplayed="warn"``

``CacheMiss`` derives from ``BaseException`` on purpose, as pytest's own
outcome exceptions do: SDKs (anthropic, groq) wrap any ``Exception`` from the
transport in their connection error and retry it with backoff, and apps wrap
LLM calls in ``except Exception`` fallbacks. Neither may turn a replay miss
into a slow or silently green test.

Where no test runs and no session is open (a test module's import-time probe
during collection, a conftest), nothing can turn green by swallowing a refusal,
and a probe written ``try: ... except Exception: skip`` must be able to decide:
there the guard raises `ReplayRefused`, an ordinary ``Exception``, so one probe
does not stop the whole run.

A damaged cassette or verdict file read *during* a request (truncated,
malformed, of an unknown version) is a `DamagedCassette`, a ``CacheMiss``
for the same reasons: the request cannot be answered from it and may not be
sent, so it must reach the test at once, never turn into an SDK's connection
error after its retries, nor into an app's fallback answer and a green test.
The ordinary ``CassetteError`` is its ``__cause__`` and is what the CLI and
every read outside a request raise.

``UnplayedSteps`` is an ``AssertionError``, not a ``GhostrunError``: nothing is
wrong with ghostrun or its files; the code under test behaved otherwise than
when it was recorded (an agent that now stops after 2 of its 5 steps), which
is a failure of the test, and pytest and unittest report it as one (``F``, not
``E``). It is raised when the session exits, outside the code under test, so
no ``except Exception`` in an app can swallow it.

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
    "AuthFailureWarning",
    "CacheMiss",
    "CassetteError",
    "DamagedCassette",
    "GhostrunError",
    "JudgeUnavailable",
    "ReplayRefused",
    "StaleCassette",
    "StaleCassetteWarning",
    "UnlistedHostWarning",
    "UnplayedSteps",
    "UnplayedStepsWarning",
    "UnsupportedHttpx",
    "UnsupportedLibrary",
]


@public
class GhostrunError(Exception):
    """Base class of ghostrun's ordinary errors."""


@public
class CassetteError(GhostrunError):
    """A cassette file is corrupt, of an unknown version, or cannot be written."""


@public
class UnsupportedLibrary(GhostrunError):
    """An installed HTTP library lacks the hook ghostrun wraps.

    That road alone is left unhooked; the other roads record and replay. Its
    first call toward a provider or session host raises this, in every mode,
    before any byte is sent: an unrecorded live exchange is the one failure
    this library must never have. The message names the library, its
    version, the missing hook and the supported versions.
    """


UnsupportedHttpx = UnsupportedLibrary
"""The first name of `UnsupportedLibrary`, kept so existing ``except`` clauses still work."""


@public
class JudgeUnavailable(GhostrunError):
    """The judge cannot be reached, lacks the model, timed out or said nothing."""


@public
class ReplayRefused(GhostrunError):
    """In replay, a connection refused where no test runs and no session is open.

    A test module that probes a provider when it is imported (to skip itself when
    the provider is down) catches ``Exception``: the refusal lets it decide, and
    collection goes on. Inside a test or a session the refusal is a `CacheMiss`.
    """


@public
class CacheMiss(BaseException):
    """A request (or judge verdict) has no recording, and the mode forbids making it."""


@public
class DamagedCassette(CacheMiss):
    """A cassette or verdict file a request read is damaged; its `CassetteError` is the cause.

    A ``CacheMiss`` so that no ``except Exception`` (an SDK's retry loop, an
    app's fallback) can hide it, and the session raises it again at exit.
    """

    @classmethod
    def of(cls, error: CassetteError) -> DamagedCassette:
        return cls(
            f"ghostrun: {error}\n"
            "  The request that read it is failed like a miss, not sent instead: restore the "
            "file from version control, or delete it and record again."
        )


@public
class AuthFailureWarning(UserWarning):
    """A session recorded an authentication failure (401, 403) from a provider.

    The failure is in the cassette, and replays as it happened (a test of the
    app's error handling needs it so); said once, when the session closes, so
    that a recording made with a bad key is noticed rather than replayed green.
    """


@public
class UnlistedHostWarning(UserWarning):
    """Traffic went to a host no session lists, unrecorded.

    Said once per session for a request that looks like an LLM API call (the fix:
    ``hosts=[...]`` or ``GHOSTRUN_HOSTS``), and in replay once per host per run for
    any host beyond loopback that went live (the fix: ``tool_hosts=[...]`` for a
    tool API, ``hosts=[...]`` for a model; ``--ghostrun-block-network`` refuses it).
    """


@public
class UnplayedSteps(AssertionError):
    """A replayed test ended having used fewer steps than its recorded trajectory holds.

    The message lists the steps left unplayed: their endpoint and the first
    words of their prompt.
    """


@public
class StaleCassette(GhostrunError):
    """A replay used recordings older than ``max_age``, and ``on_stale="fail"`` was asked.

    Raised when the session closes, listing the cassettes; re-record them.
    """


@public
class UnplayedStepsWarning(UserWarning):
    """Steps left unplayed by a replayed test whose ``on_unplayed`` is ``"warn"``."""


@public
class StaleCassetteWarning(UserWarning):
    """A replay used recordings older than ``max_age``: one warning lists them all."""
