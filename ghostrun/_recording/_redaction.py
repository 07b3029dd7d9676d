"""What a cassette entry looks like once redacted: credentials masked, the user's hook run.

Every entry a session writes, and the request a miss diff shows, goes through
the session's `EntryRedactor`: the request's credentials are masked
(`_secrets._mask_entry`), then the session's ``redact=`` hook edits the entry,
then the credentials are masked again (the hook may not reintroduce one).
What the hook changed is learnt (`hook_edits`), so run logs show what the
cassette does.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from .._core._age import today
from .._secrets._collect import request_body
from .._secrets._headers import keep_request_header, keep_response_header
from .._secrets._mask_entry import redact_entry
from .._secrets._memory import collect_secrets
from .._secrets._user_hook import learn_hook_edits
from .._store._cassette import Recording, encode_response
from ._request import RequestInfo, content_type
from ._settings import Redactor

__all__ = ["EntryRedactor"]


class EntryRedactor:
    """A session's redaction of the entries it writes; ``hook`` is its ``redact=``."""

    __slots__ = ("hook", "hook_edits")

    def __init__(self, hook: Redactor | None) -> None:
        self.hook = hook
        self.hook_edits: dict[str, str] = {}  # what ``redact`` changed: applied to run logs

    def entry(self, info: RequestInfo, recording: Recording) -> dict[str, Any]:
        """The entry to write for ``info`` answered by ``recording`` (stamped today if new)."""
        response = encode_response(
            Recording(
                recording.status,
                [(k, v) for k, v in recording.headers if keep_response_header(k)],
                recording.body,
                recording.chunks,
                recording.stream_error,
                reason=recording.reason,
                recorded_on=today() if recording.recorded_on is None else recording.recorded_on,
            ),
            content_type(recording.headers),
        )
        return self.redacted(info, response)

    def stored_request(self, info: RequestInfo) -> dict[str, Any]:
        """The request as its cassette would store it: what a miss diff compares.

        The user's hook sees it with an empty response; if the hook fails on
        that, the body is not shown rather than shown unredacted.
        """
        try:
            request: dict[str, Any] = self.redacted(info, {})["request"]
        except Exception as exc:  # the user's hook, on an entry it was not written for
            note = f"(not shown: the redact hook raised {type(exc).__name__} on it)"
            return {"body": {"text": note}}
        return request

    def redacted(self, info: RequestInfo, response: Mapping[str, Any]) -> dict[str, Any]:
        """An entry with every credential masked, then the user's hook applied."""
        entry = {
            "request": {
                "method": info.method,
                "url": info.url,
                "headers": {k: v for k, v in info.headers if keep_request_header(k)},
                "body": request_body(info.body, info.content_type),
            },
            "response": response,
        }
        secrets = collect_secrets(info.headers, info.query)
        entry = redact_entry(entry, secrets)
        if self.hook is None:
            return entry
        return redact_entry(self.run_hook(entry), secrets)  # the hook may not reintroduce one

    def run_hook(self, entry: dict[str, Any]) -> Any:
        """``entry`` as the user's hook leaves it, what it changed learnt for the run logs.

        Every file the session writes goes through here (DESIGN §4): HTTP entries,
        and each WebSocket frame (``_intercept._wslink``). Only with a hook.
        """
        redact = self.hook
        if redact is None:
            return entry
        before = copy.deepcopy(entry)
        scrubbed = redact(entry)  # returns the entry, or None if it edited in place
        entry = entry if scrubbed is None else scrubbed
        learn_hook_edits(before, entry, self.hook_edits)  # runs/ shows what the cassette does
        return entry
