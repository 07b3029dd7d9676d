"""The run log (DESIGN §7): what each test produced and how it was judged."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._session import Session


def session_closed(session: Session) -> None:
    """Called when a session's outermost block ends."""


def record_assertion(**fields: Any) -> None:
    """Called for every assertion outcome, passed or failed."""
