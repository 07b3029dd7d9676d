"""The labels file: JSON Lines, one case a line, what an assertion asks and a person's answer::

    {"text": "Sorry for the wait!", "criterion": "apology", "kind": "intent", "expected": "PASS"}

``kind`` names the assertion (`KINDS`: ``intent``, ``no_intent``, ``tone``,
``grounded``, ``satisfies``, or the method names themselves); the judge is sent
the very words that assertion sends, so the figures describe the judge as the
tests use it. Without ``kind`` the criterion is sent as written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .._criteria import JUDGED_KINDS, judge_criterion

__all__ = ["KINDS", "Case", "load_cases"]

KINDS = {
    "intent": "contains_intent",
    "no_intent": "does_not_contain_intent",
    "tone": "tone_is",
    "grounded": "is_grounded_in",
    **{name: name for name in JUDGED_KINDS},
}
"""The ``kind`` of a case: a short name or the assertion's method name."""

_NEGATIONS = {
    "contains_intent": "does_not_contain_intent",
    "does_not_contain_intent": "contains_intent",
}


@dataclass(frozen=True)
class Case:
    """One labelled case: the assertion's argument, and the verdict a person expects."""

    line: int
    text: str
    argument: str  # the intent, tone, context or plain criterion, as the user wrote it
    kind: str  # an assertion's method name, or "" for a criterion sent as written
    expected: bool

    @property
    def criterion(self) -> str:
        """What the judge is sent, worded as the assertion words it."""
        return judge_criterion(self.kind, self.argument) if self.kind else self.argument

    @property
    def label(self) -> str:
        argument = " ".join(self.argument.split())
        shown = argument if len(argument) <= 60 else argument[:57] + "..."
        return f"{self.kind or 'criterion'}: {shown}"

    def negated(self) -> Case | None:
        """The same case asked the opposite way, where the assertion has an opposite."""
        other = _NEGATIONS.get(self.kind)
        return None if other is None else replace(self, kind=other, expected=not self.expected)


def load_cases(path: Path) -> list[Case]:
    """Every case of a labels file, or a ValueError naming the file, the line and the field."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the labels file {path}: {exc}") from exc
    cases = [_case(path, n, line) for n, line in enumerate(lines, 1) if line.strip()]
    if not cases:
        raise ValueError(f"the labels file {path} has no cases (one JSON object a line)")
    return cases


def _case(path: Path, number: int, line: str) -> Case:
    where = f"{path}, line {number}"
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    text, argument = raw.get("text"), raw.get("criterion")
    for name, value in (("text", text), ("criterion", argument)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f'{where}: "{name}" must be a non-empty string, got {value!r}')
    kind = raw.get("kind") or ""
    if kind and kind not in KINDS:
        raise ValueError(f'{where}: unknown "kind" {kind!r}: expected one of {", ".join(KINDS)}')
    return Case(number, str(text), str(argument), KINDS.get(kind, ""), _expected(where, raw))


def _expected(where: str, raw: dict[str, Any]) -> bool:
    value = raw.get("expected")
    if value is None:
        raise ValueError(
            f'{where}: not labelled yet: set "expected" to "PASS" or "FAIL" '
            "(--from-verdicts leaves it empty for a person to fill in)"
        )
    word = value.strip().upper() if isinstance(value, str) else value
    if word not in ("PASS", "FAIL"):
        raise ValueError(f'{where}: "expected" must be "PASS" or "FAIL", got {value!r}')
    return word == "PASS"
