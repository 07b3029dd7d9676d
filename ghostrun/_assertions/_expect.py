"""``expect(reply)``: assertions on what a model said.

Plain methods that raise :class:`ExpectationFailed` (an ``AssertionError``),
so they work under pytest, unittest and plain scripts alike. Deterministic
checks run here; semantic ones build a criterion and ask the judge through
``_verdicts.grade`` (``agrade`` for the ``a``-prefixed async twins, which do
not block the event loop).

Every outcome, pass or fail, goes through :func:`_check` and so through
:func:`_report`, the one place the run log hears about assertions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._core._public import public
from .._judging._criteria import Ask, ask_for
from ._extract import extract_text
from ._outcome import ExpectationFailed, block, check, failure_message, shorten
from ._schema import schema_errors
from ._tool_calls import ToolCallExpectation

if TYPE_CHECKING:
    from .._judging._verdicts import Verdict

__all__ = ["Expectation", "ExpectationFailed", "expect", "expect_tool_calls"]

# A failed expectation's traceback ends in the test, not in these frames: unittest
# leaves out modules that set ``__unittest``, pytest those that set ``__tracebackhide__``.
__unittest = True
__tracebackhide__ = True


@public
def expect(value: object, judge: Any = None) -> Expectation:
    """Assertions on a reply: a string, or an SDK response whose text is read.

    ``judge`` overrides the configured judge for the semantic checks. A value
    whose text cannot be read raises ``TypeError`` at once.
    """
    return Expectation(value, judge=judge)


@public
def expect_tool_calls(value: object) -> ToolCallExpectation:
    """Assertions on the tool calls in a response, a message, or a list of calls."""
    return ToolCallExpectation(value)


@public
class Expectation:
    """The text of one reply and the checks on it; every check returns ``self``."""

    def __init__(self, value: object, *, judge: Any = None) -> None:
        self._text = extract_text(value)
        self._judge = judge

    @property
    def text(self) -> str:
        """The text the checks run on (extracted from an SDK response)."""
        return self._text

    def __repr__(self) -> str:
        return f"expect({shorten(self._text, 80)!r})"

    # -- deterministic ---------------------------------------------------------------------

    def contains(self, substring: str, case_sensitive: bool = True) -> Expectation:
        """``substring`` occurs in the text."""
        at = _find(self._text, substring, case_sensitive)
        how = "" if case_sensitive else " (ignoring case)"
        criterion = f"contains {substring!r}{how}"
        reason = f"found at character {at}" if at >= 0 else f"{substring!r} is not in the text"
        return self._plain("contains", criterion, at >= 0, reason)

    def does_not_contain(self, substring: str, case_sensitive: bool = True) -> Expectation:
        """``substring`` occurs nowhere in the text."""
        at = _find(self._text, substring, case_sensitive)
        how = "" if case_sensitive else " (ignoring case)"
        criterion = f"does not contain {substring!r}{how}"
        reason = f"{substring!r} is not in the text"
        if at >= 0:
            reason = f"found at character {at}: {_around(self._text, at, len(substring))}"
        return self._plain("does_not_contain", criterion, at < 0, reason)

    def matches_regex(self, pattern: str | re.Pattern[str], flags: int = 0) -> Expectation:
        """``re.search(pattern, text)`` finds a match (anchor it for a full match)."""
        compiled = re.compile(pattern, flags) if isinstance(pattern, str) else pattern
        match = compiled.search(self._text)
        criterion = f"matches the regex /{compiled.pattern}/"
        reason = f"matched {match.group(0)!r}" if match else "no match anywhere in the text"
        return self._plain("matches_regex", criterion, match is not None, reason)

    def is_valid_json(self, schema: Mapping[str, Any] | bool | None = None) -> Expectation:
        """The whole text is strict JSON and, if ``schema`` is given, valid against it.

        The schema is a JSON Schema subset (type, required, properties, enum,
        items, additionalProperties, bounds, anyOf, local $ref); other keywords
        raise ``ValueError``. No code fence is stripped: an app calling
        ``json.loads`` on the reply could not either.
        """
        criterion = "is valid JSON" if schema is None else "is valid JSON matching the schema"
        try:
            value = _strict_json(self._text)
        except ValueError as exc:
            return self._plain("is_valid_json", criterion, False, _json_problem(self._text, exc))
        errors = [] if schema is None else schema_errors(value, schema)
        reason = "\n".join(errors) if errors else "valid"
        return self._plain("is_valid_json", criterion, not errors, reason)

    def length_between(self, min_chars: int | None, max_chars: int | None) -> Expectation:
        """The text has ``min_chars`` to ``max_chars`` characters, inclusive; ``None``: no bound."""
        if min_chars is not None and max_chars is not None and min_chars > max_chars:
            raise ValueError(f"length_between: min_chars {min_chars} > max_chars {max_chars}")
        n = len(self._text)
        low = min_chars is None or n >= min_chars
        high = max_chars is None or n <= max_chars
        criterion = f"has {_bounds(min_chars, max_chars)} characters"
        return self._plain("length_between", criterion, low and high, f"it has {n} characters")

    # -- judge-backed ----------------------------------------------------------------------

    def contains_intent(self, intent: str) -> Expectation:
        """The text expresses ``intent`` (an apology, a refund offer...), as the judge sees it."""
        return self._judged("contains_intent", intent)

    async def acontains_intent(self, intent: str) -> Expectation:
        """Async twin of :meth:`contains_intent`."""
        return await self._ajudged("contains_intent", intent)

    def does_not_contain_intent(self, intent: str) -> Expectation:
        """The text nowhere expresses ``intent``; the judge is asked this directly."""
        return self._judged("does_not_contain_intent", intent)

    async def adoes_not_contain_intent(self, intent: str) -> Expectation:
        """Async twin of :meth:`does_not_contain_intent`."""
        return await self._ajudged("does_not_contain_intent", intent)

    def tone_is(self, tone: str) -> Expectation:
        """The text's overall tone is ``tone`` (empathetic, formal...)."""
        return self._judged("tone_is", tone)

    async def atone_is(self, tone: str) -> Expectation:
        """Async twin of :meth:`tone_is`."""
        return await self._ajudged("tone_is", tone)

    def satisfies(self, criterion: str) -> Expectation:
        """The text meets a criterion written in plain words."""
        return self._judged("satisfies", criterion)

    async def asatisfies(self, criterion: str) -> Expectation:
        """Async twin of :meth:`satisfies`."""
        return await self._ajudged("satisfies", criterion)

    def is_grounded_in(self, context: str | Sequence[str]) -> Expectation:
        """Every claim is supported by ``context``: no new facts, numbers or entities.

        ``context`` is a string or a list of documents (joined by blank lines).
        """
        return self._judged("is_grounded_in", context)

    async def ais_grounded_in(self, context: str | Sequence[str]) -> Expectation:
        """Async twin of :meth:`is_grounded_in`."""
        return await self._ajudged("is_grounded_in", context)

    # -- internals -------------------------------------------------------------------------

    def _plain(self, kind: str, criterion: str, passed: bool, reason: str) -> Expectation:
        """Settle a deterministic check."""
        message = failure_message(
            f"the text {criterion}", "found", reason, block("text", self._text)
        )
        check(
            kind=kind,
            criterion=criterion,
            text=self._text,
            passed=passed,
            reason=reason,
            message=message,
        )
        return self

    def _judged(self, kind: str, argument: Any) -> Expectation:
        ask = ask_for(kind, argument)
        verdict = _grade(self._text, ask.criterion, self._judge)
        return self._settle(kind, ask, verdict)

    async def _ajudged(self, kind: str, argument: Any) -> Expectation:
        ask = ask_for(kind, argument)
        verdict = await _agrade(self._text, ask.criterion, self._judge)
        return self._settle(kind, ask, verdict)

    def _settle(self, kind: str, ask: Ask, verdict: Verdict) -> Expectation:
        """Settle a judge-backed check from the judge's verdict."""
        passed = verdict.passed
        said = _verdict_line(verdict)
        blocks = [
            block("text", self._text),
            *([block("context", ask.context)] if ask.context else []),
        ]
        if not passed:
            blocks += _calibration_note(verdict)
        message = failure_message(ask.expected, "judge", said, *blocks)
        check(
            kind=kind,
            criterion=ask.criterion,
            text=self._text,
            passed=passed,
            reason=verdict.reason,
            judge=verdict.judge,
            verdict=verdict,
            message=message,
        )
        return self


# -- the judge seam and the one exit of every assertion -----------------------------------


def _calibration_note(verdict: Verdict) -> list[str]:
    """What the user's calibration says of this judge, when it falls short of their bar.

    ``_summary`` is imported only on a judged failure: passing tests never pay for it.
    """
    from .._judging._calibration import _summary

    note = _summary.failure_note(verdict.judge, verdict.votes)
    return [note] if note else []


def _grade(text: str, criterion: str, judge: Any, **where: Any) -> Verdict:
    """Ask the judge (``_verdicts`` is imported late: it pulls in the judge client).

    ``where``: ``mode`` and ``cassette_dir``, for a check made after its session closed.
    """
    from .._judging import _verdicts

    return _verdicts.grade(text, criterion, judge=judge, **where)


async def _agrade(text: str, criterion: str, judge: Any) -> Verdict:
    from .._judging import _verdicts

    return await _verdicts.agrade(text, criterion, judge=judge)


# -- messages ------------------------------------------------------------------------------


def _verdict_line(verdict: Verdict) -> str:
    notes = []
    if verdict.votes > 1:
        notes.append(f"{verdict.votes} votes, flip rate {verdict.flip_rate:.0%}")
    if verdict.cached:
        notes.append("cached")
    note = f" ({', '.join(notes)})" if notes else ""
    outcome = "PASS" if verdict.passed else "FAIL"
    return f"{verdict.judge} said {outcome}{note}: {verdict.reason}"


def _find(text: str, substring: str, case_sensitive: bool) -> int:
    if not isinstance(substring, str):
        raise TypeError(f"expected a string to look for, got {type(substring).__name__}")
    if not substring:
        raise ValueError("expected a non-empty string to look for, got ''")
    if case_sensitive:
        return text.find(substring)
    match = re.search(re.escape(substring), text, re.IGNORECASE)  # keeps text's indices
    return match.start() if match else -1


def _around(text: str, at: int, length: int) -> str:
    """The found substring with some context either side."""
    start, end = max(0, at - 30), min(len(text), at + length + 30)
    head = "..." if start else ""
    tail = "..." if end < len(text) else ""
    return f"{head}{text[start:end]}{tail}".replace("\n", " ")


def _bounds(low: int | None, high: int | None) -> str:
    if low is None:
        return "no limit on" if high is None else f"at most {high}"
    return f"at least {low}" if high is None else f"between {low} and {high}"


def _strict_json(text: str) -> Any:
    """``json.loads`` without the NaN/Infinity extensions other parsers reject."""

    def reject(constant: str) -> Any:
        raise ValueError(f"{constant} is not valid JSON")

    return json.loads(text, parse_constant=reject)


def _json_problem(text: str, exc: ValueError) -> str:
    reason = f"not valid JSON: {exc}"
    if text.lstrip().startswith("```"):
        reason += " (the text is wrapped in a ``` code fence)"
    return reason
