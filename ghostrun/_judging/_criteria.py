"""What each judged assertion asks the judge, in the very words it sends.

``expect(...).contains_intent(...)`` and ``ghostrun calibrate`` share these,
so calibration describes the judge as the assertions use it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["JUDGED_KINDS", "Ask", "ask_for", "judge_criterion"]


@dataclass(frozen=True)
class Ask:
    """A judge question: the criterion sent, and how a failure message words it."""

    criterion: str
    expected: str
    context: str = ""  # shown beside a failure


def _required(what: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value.strip()


def _intent(intent: str) -> Ask:
    intent = _required("intent", intent)
    return Ask(
        f"The text expresses or contains this intent: {intent}",
        f"the text expresses the intent: {intent}",
    )


def _no_intent(intent: str) -> Ask:
    intent = _required("intent", intent)
    return Ask(
        f"The text does NOT express or contain this intent anywhere: {intent}",
        f"the text does not express the intent: {intent}",
    )


def _tone(tone: str) -> Ask:
    tone = _required("tone", tone)
    return Ask(f"The overall tone of the text is {tone}.", f"the tone of the text is {tone}")


def _satisfies(criterion: str) -> Ask:
    criterion = _required("criterion", criterion)
    return Ask(criterion, f"the text satisfies: {criterion}")


def _grounded(context: str | Sequence[str]) -> Ask:
    if not isinstance(context, str):
        context = "\n\n".join(_required("each context document", doc) for doc in context)
    context = _required("context", context)
    criterion = (
        "Every claim in the text is supported by the CONTEXT below. The text states no "
        "facts, numbers or named entities that are not in the CONTEXT. Leaving things out "
        f"is fine; adding things is not.\n\nCONTEXT:\n{context}"
    )
    return Ask(criterion, "every claim in the text is supported by the context", context)


_ASKS: dict[str, Callable[[Any], Ask]] = {
    "contains_intent": _intent,
    "does_not_contain_intent": _no_intent,
    "tone_is": _tone,
    "satisfies": _satisfies,
    "is_grounded_in": _grounded,
}
JUDGED_KINDS = tuple(_ASKS)
"""The judge-backed assertions, by method name."""


def judge_criterion(kind: str, argument: str) -> str:
    """The criterion the assertion ``kind`` sends the judge for ``argument``.

    ``ghostrun calibrate`` grades labelled cases with these very words, so its
    figures describe the judge as the assertions use it.
    """
    return ask_for(kind, argument).criterion


def ask_for(kind: str, argument: str | Sequence[str]) -> Ask:
    """What the assertion ``kind`` asks the judge, and how its failure words it."""
    try:
        ask = _ASKS[kind]
    except KeyError:
        raise ValueError(
            f"unknown judged assertion {kind!r}: expected one of {JUDGED_KINDS}"
        ) from None
    return ask(argument)
