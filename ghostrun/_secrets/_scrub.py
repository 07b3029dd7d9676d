"""Scrubbing a text ghostrun writes besides cassettes: run logs and verdict files.

Secret shapes, minted shapes and every credential the process remembers
(`_memory.MEMORY`) are masked, and a session's hook edits applied (`_user_hook`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ._collect import worth_masking
from ._credentials import MINTED_SHAPES, MINTED_STARTS, SECRET_SHAPES
from ._mask import MASK, candidates, mask_text, patterns
from ._memory import MEMORY

__all__ = ["scrub_text"]


def scrub_text(
    text: str, secrets: Iterable[str] = (), edits: Mapping[str, str] | None = None
) -> str:
    """A text with secret shapes and every credential seen so far in this process masked,
    and a session's hook ``edits`` applied: for run logs and verdict files."""
    known = candidates(text, MEMORY.known() | worth_masking(secrets))
    if known:
        text = mask_text(text, patterns(known))
    text = SECRET_SHAPES.sub(MASK, text)
    if any(start in text for start in MINTED_STARTS):
        text = MINTED_SHAPES.sub(MASK, text)
    for old, new in sorted((edits or {}).items(), key=lambda item: -len(item[0])):
        if old in text:
            text = text.replace(old, new)
    return text
