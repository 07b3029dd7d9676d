"""The one exit of every assertion: its outcome reported, then raised if it failed.

`check` hands every outcome, pass or fail, to the run log (the one place it
hears about assertions; outside a test it keeps nothing), and raises
`ExpectationFailed` with the message laid out by `message` and `block`.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from .._core._public import public
from .._core._safe_text import terminal
from .._recording import _runlog

if TYPE_CHECKING:
    from .._judging._verdicts import Verdict

__all__ = ["MAX_SHOWN", "ExpectationFailed", "block", "check", "failure_message", "shorten"]

# A failed expectation's traceback ends in the test, not in these frames: unittest
# leaves out modules that set ``__unittest``, pytest those that set ``__tracebackhide__``.
__unittest = True
__tracebackhide__ = True

# Texts longer than this are shown with their middle cut out.
MAX_SHOWN = 2000
_INDENT = "    "


@public
class ExpectationFailed(AssertionError):
    """An expectation on a model's output did not hold.

    ``kind`` is the method (``"contains_intent"``), ``criterion`` what was
    checked (for judge-backed methods, exactly what the judge was asked),
    ``text`` the full text checked, ``reason`` why it failed, ``judge`` the
    judge's identity and ``verdict`` its ``Verdict`` (both ``None`` for
    deterministic checks).
    """

    def __init__(
        self,
        message: str,
        *,
        kind: str,
        criterion: str,
        text: str,
        reason: str,
        judge: str | None = None,
        verdict: Verdict | None = None,
    ) -> None:
        # The message quotes the answer, the judge's reason, tool calls: text from a
        # cassette or a model, shown in terminals and CI logs. Its control characters
        # (OSC 52, CSI, U+202E...) are shown as escapes (`_safe_text.terminal`, idempotent).
        super().__init__(terminal(message))
        self.kind = kind
        self.criterion = criterion
        self.text = text
        self.reason = reason
        self.judge = judge
        self.verdict = verdict

    def __reduce__(self) -> tuple[Any, ...]:
        """Keyword-only arguments need help to survive pickling (multiprocessing)."""
        fields = {
            "kind": self.kind,
            "criterion": self.criterion,
            "text": self.text,
            "reason": self.reason,
            "judge": self.judge,
            "verdict": self.verdict,
        }
        return (_rebuild_failure, (str(self), fields))


def _rebuild_failure(message: str, fields: dict[str, Any]) -> ExpectationFailed:
    return ExpectationFailed(message, **fields)


def check(
    *,
    kind: str,
    criterion: str,
    text: str,
    passed: bool,
    reason: str,
    message: str,
    judge: str | None = None,
    verdict: Any = None,
) -> None:
    """Report an outcome, then raise ``ExpectationFailed`` if it failed."""
    _report(kind, criterion, text, passed, reason, judge)
    if not passed:
        raise ExpectationFailed(
            message,
            kind=kind,
            criterion=criterion,
            text=text,
            reason=reason,
            judge=judge,
            verdict=verdict,
        ) from None  # the message says what went wrong; a parser's error inside is noise


def _report(
    kind: str, criterion: str, text: str, passed: bool, reason: str, judge: str | None
) -> None:
    """Hand every assertion outcome to the run log (which ignores it outside a test)."""
    _runlog.record_assertion(
        kind=kind, criterion=criterion, text=text, passed=passed, reason=reason, judge=judge
    )


def failure_message(expected: str, label: str, found: str, *blocks: str) -> str:
    """What was expected, what was found (or what the judge said), then the evidence."""
    head = f"{label + ':':<10}"
    found = found.replace("\n", "\n" + " " * len(head))
    return "\n".join([f"{'expected:':<10}{expected}", f"{head}{found}", *blocks])


def block(label: str, text: str) -> str:
    """A labelled, indented, middle-shortened copy of ``text``."""
    if not text:
        return f"{label}: (empty)"
    shown = textwrap.indent(shorten(text, MAX_SHOWN), _INDENT, lambda line: True)
    return f"{label} ({len(text)} chars):\n{shown}"


def shorten(text: str, limit: int) -> str:
    """Cut the middle out of long text: the start and the end say the most."""
    if len(text) <= limit:
        return text
    half = limit // 2
    omitted = len(text) - 2 * half
    return f"{text[:half]}\n[... {omitted} characters omitted ...]\n{text[-half:]}"
