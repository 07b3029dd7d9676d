"""The tests a ``rebase`` run re-keyed, apart from the rest of the review, their changes said once.

A rebased step (``_recording._rebase``) replays the answer recorded for the
same step; only its request changed, outside the conversation. The trajectory
after says which steps were rebased and which fields changed (``rebased_from``,
``changed``); a step is new to this review when the state before lacked its
cassette. A reviewer approves "the SDK now sends ``parallel_tool_calls: true``,
``max_tokens`` 8192 -> 64000" once, for every test it touched, instead of
reading the same request diff in each.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..._core import _safe_text as safe
from ..._core._words import plural
from ._states import State

__all__ = ["RebasedTest", "rebased_tests", "with_rebased"]


@dataclass(frozen=True)
class RebasedTest:
    """A test some of whose steps were rebased, and the field changes of those steps."""

    name: str
    steps: int
    changes: tuple[FieldChange, ...]  # each said once, in the order first seen


@dataclass(frozen=True)
class FieldChange:
    """A field a rebase changed: its path, and its values as JSON (None: absent)."""

    path: str
    before: str | None
    after: str | None

    def said(self, code: Callable[[str], str], value: Callable[[str], str]) -> str:
        """``max_tokens`` 8192 -> 64000: ``code`` marks up a field, ``value`` its values."""
        if self.before is None:
            return f"{code(f'{self.path}: {self.after}')} (new)"
        if self.after is None:
            return f"{code(self.path)} dropped (was {value(self.before)})"
        return f"{code(self.path)} {value(self.before)} -> {value(self.after)}"


def rebased_tests(before: State, after: State) -> list[RebasedTest]:
    """The tests whose trajectory after holds rebased steps whose cassette is new."""
    found = []
    for name, trajectory in sorted(after.trajectories.items()):
        steps = [s for s in trajectory.get("steps") or () if _new_rebase(s, before)]
        if steps:
            changes = dict.fromkeys(
                _change(c) for s in steps for c in s.get("changed") or () if isinstance(c, dict)
            )
            found.append(RebasedTest(name, len(steps), tuple(changes)))
    return found


def _new_rebase(step: Any, before: State) -> bool:
    """A rebased step whose cassette the state before did not hold."""
    return (
        isinstance(step, dict)
        and bool(step.get("rebased_from"))
        and step.get("key") not in before.cassettes
    )


def _change(change: dict[str, Any]) -> FieldChange:
    before, after = (
        json.dumps(change[side], ensure_ascii=False) if side in change else None
        for side in ("before", "after")
    )
    return FieldChange(str(change.get("path")), before, after)


def _backticks(text: str) -> str:
    return f"`{text}`"


def with_rebased(rendered: str, tests: list[RebasedTest], fmt: str) -> str:
    """The review as rendered, with the rebased tests' section (nothing when there are none)."""
    if not tests:
        return rendered
    if fmt == "json":
        document = json.loads(rendered)
        document["rebased"] = [
            {"test": t.name, "steps": t.steps, "changes": [c.__dict__ for c in t.changes]}
            for t in tests
        ]
        return json.dumps(document, indent=2, ensure_ascii=True) + "\n"
    markdown = fmt == "markdown"
    code = safe.code if markdown else _backticks
    value = safe.code if markdown else str  # Markdown: a value from a file is only ever code
    shared = [c for c in tests[0].changes if all(c in t.changes for t in tests)]
    head = (
        f"Rebased: {plural(len(tests), 'test')} ({plural(sum(t.steps for t in tests), 'step')}) "
        "replay their recorded answers; the requests changed outside the conversation only"
        + (": " + ", ".join(c.said(code, value) for c in shared) if shared else "")
    )
    lines = [f"### {head}", ""] if markdown else [head]
    for test in tests:
        own = ", ".join(c.said(code, value) for c in test.changes if c not in shared)
        name = safe.code(test.name) if markdown else test.name
        lines.append(
            ("- " if markdown else "  ")
            + f"{name}: {plural(test.steps, 'step')}"
            + (f"; also {own}" if own else "")
        )
    return rendered.rstrip("\n") + "\n\n" + safe.terminal("\n".join(lines)) + "\n"
