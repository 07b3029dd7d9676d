"""Learning what the user's ``redact=`` hook edited, so run logs show what cassettes do.

A session's hook changes its cassettes; the run log and verdict files are
written as text, so each string the hook changed or removed is learnt as an
edit (`learn_hook_edits`), and `_scrub.scrub_text` applies a session's edits.
"""

from __future__ import annotations

from typing import Any

from ._mask import MASK
from ._memory import MAX_REMEMBERED
from ._walk import strings

__all__ = ["learn_hook_edits"]

_MIN_HOOK_EDIT = 4  # a shorter edit of the hook's is not applied to run logs


def learn_hook_edits(before: Any, after: Any, edits: dict[str, str]) -> None:
    """Add to ``edits`` what the user's ``redact=`` hook changed in an entry (`scrub_text`).

    Each string it changed: the whole string and the part that changed (common
    start and end trimmed) are replaced as it replaced them; each string it
    removed is masked. A session keeps its own, so its run log shows what its
    cassettes show, and no other session's texts are touched.
    """
    _diff(before, after, edits)
    while len(edits) > MAX_REMEMBERED:
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
    for text in strings(value):
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
