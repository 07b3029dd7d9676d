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
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._recording import _runlog
from ._extract import extract_text
from ._schema import schema_errors
from ._tool_calls import ExpectToolCalls

__all__ = ["Expectation", "ExpectationFailed", "expect", "expect_tool_calls"]

# Texts longer than this are shown with their middle cut out.
MAX_SHOWN = 2000
_INDENT = "    "


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
        verdict: Any = None,
    ) -> None:
        super().__init__(message)
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


def expect(value: object, judge: Any = None) -> Expectation:
    """Assertions on a reply: a string, or an SDK response whose text is read.

    ``judge`` overrides the configured judge for the semantic checks. A value
    whose text cannot be read raises ``TypeError`` at once.
    """
    return Expectation(value, judge=judge)


def expect_tool_calls(value: object) -> ExpectToolCalls:
    """Assertions on the tool calls in a response, a message, or a list of calls."""
    return ExpectToolCalls(value)


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
        return f"expect({_shorten(self._text, 80)!r})"

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
        return self._judged("contains_intent", _intent(intent))

    async def acontains_intent(self, intent: str) -> Expectation:
        """Async twin of :meth:`contains_intent`."""
        return await self._ajudged("contains_intent", _intent(intent))

    def does_not_contain_intent(self, intent: str) -> Expectation:
        """The text nowhere expresses ``intent``; the judge is asked this directly."""
        return self._judged("does_not_contain_intent", _no_intent(intent))

    async def adoes_not_contain_intent(self, intent: str) -> Expectation:
        """Async twin of :meth:`does_not_contain_intent`."""
        return await self._ajudged("does_not_contain_intent", _no_intent(intent))

    def tone_is(self, tone: str) -> Expectation:
        """The text's overall tone is ``tone`` (empathetic, formal...)."""
        return self._judged("tone_is", _tone(tone))

    async def atone_is(self, tone: str) -> Expectation:
        """Async twin of :meth:`tone_is`."""
        return await self._ajudged("tone_is", _tone(tone))

    def satisfies(self, criterion: str) -> Expectation:
        """The text meets a criterion written in plain words."""
        return self._judged("satisfies", _satisfies(criterion))

    async def asatisfies(self, criterion: str) -> Expectation:
        """Async twin of :meth:`satisfies`."""
        return await self._ajudged("satisfies", _satisfies(criterion))

    def is_grounded_in(self, context: str | Sequence[str]) -> Expectation:
        """Every claim is supported by ``context``: no new facts, numbers or entities.

        ``context`` is a string or a list of documents (joined by blank lines).
        """
        return self._judged("is_grounded_in", _grounded(context))

    async def ais_grounded_in(self, context: str | Sequence[str]) -> Expectation:
        """Async twin of :meth:`is_grounded_in`."""
        return await self._ajudged("is_grounded_in", _grounded(context))

    # -- internals -------------------------------------------------------------------------

    def _plain(self, kind: str, criterion: str, passed: bool, reason: str) -> Expectation:
        """Settle a deterministic check."""
        message = _message(f"the text {criterion}", "found", reason, _block("text", self._text))
        _check(
            kind=kind,
            criterion=criterion,
            text=self._text,
            passed=passed,
            reason=reason,
            message=message,
        )
        return self

    def _judged(self, kind: str, ask: _Ask) -> Expectation:
        verdict = _grade(self._text, ask.criterion, self._judge)
        return self._settle(kind, ask, verdict)

    async def _ajudged(self, kind: str, ask: _Ask) -> Expectation:
        verdict = await _agrade(self._text, ask.criterion, self._judge)
        return self._settle(kind, ask, verdict)

    def _settle(self, kind: str, ask: _Ask, verdict: Any) -> Expectation:
        """Settle a judge-backed check from the judge's verdict."""
        passed = bool(verdict.passed)
        said = _verdict_line(verdict)
        blocks = [_block("text", self._text), *([ask.extra] if ask.extra else [])]
        if not passed:
            blocks += _calibration_note(verdict)
        message = _message(ask.expected, "judge", said, *blocks)
        _check(
            kind=kind,
            criterion=ask.criterion,
            text=self._text,
            passed=passed,
            reason=str(verdict.reason),
            judge=str(verdict.judge),
            verdict=verdict,
            message=message,
        )
        return self


# -- the judge seam and the one exit of every assertion -----------------------------------


def _calibration_note(verdict: Any) -> list[str]:
    """What the user's calibration says of this judge, when it falls short of their bar.

    ``_calibrate`` is imported only on a judged failure: passing tests never pay for it.
    """
    from .._judging import _calibrate

    note = _calibrate.failure_note(str(verdict.judge), int(getattr(verdict, "votes", 1)))
    return [note] if note else []


def _grade(text: str, criterion: str, judge: Any) -> Any:
    """Ask the judge (``_verdicts`` is imported late: it pulls in the judge client)."""
    from .._judging import _verdicts

    return _verdicts.grade(text, criterion, judge=judge)


async def _agrade(text: str, criterion: str, judge: Any) -> Any:
    from .._judging import _verdicts

    return await _verdicts.agrade(text, criterion, judge=judge)


def _check(
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
        )


def _report(
    kind: str, criterion: str, text: str, passed: bool, reason: str, judge: str | None
) -> None:
    """Hand every assertion outcome to the run log (which ignores it outside a test)."""
    _runlog.record_assertion(
        kind=kind, criterion=criterion, text=text, passed=passed, reason=reason, judge=judge
    )


# -- criteria: what the judge is asked, what the user is told ------------------------------


@dataclass(frozen=True)
class _Ask:
    """A judge question: the criterion sent, and how a failure message words it."""

    criterion: str
    expected: str
    extra: str = ""


def _required(what: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value.strip()


def _intent(intent: str) -> _Ask:
    intent = _required("intent", intent)
    return _Ask(
        f"The text expresses or contains this intent: {intent}",
        f"the text expresses the intent: {intent}",
    )


def _no_intent(intent: str) -> _Ask:
    intent = _required("intent", intent)
    return _Ask(
        f"The text does NOT express or contain this intent anywhere: {intent}",
        f"the text does not express the intent: {intent}",
    )


def _tone(tone: str) -> _Ask:
    tone = _required("tone", tone)
    return _Ask(f"The overall tone of the text is {tone}.", f"the tone of the text is {tone}")


def _satisfies(criterion: str) -> _Ask:
    criterion = _required("criterion", criterion)
    return _Ask(criterion, f"the text satisfies: {criterion}")


def _grounded(context: str | Sequence[str]) -> _Ask:
    if not isinstance(context, str):
        context = "\n\n".join(_required("each context document", doc) for doc in context)
    context = _required("context", context)
    criterion = (
        "Every claim in the text is supported by the CONTEXT below. The text states no "
        "facts, numbers or named entities that are not in the CONTEXT. Leaving things out "
        f"is fine; adding things is not.\n\nCONTEXT:\n{context}"
    )
    extra = _block("context", context)
    return _Ask(criterion, "every claim in the text is supported by the context", extra)


_ASKS: dict[str, Callable[[str], _Ask]] = {
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
    try:
        ask = _ASKS[kind]
    except KeyError:
        raise ValueError(
            f"unknown judged assertion {kind!r}: expected one of {JUDGED_KINDS}"
        ) from None
    return ask(argument).criterion


# -- messages ------------------------------------------------------------------------------


def _message(expected: str, label: str, found: str, *blocks: str) -> str:
    """What was expected, what was found (or what the judge said), then the evidence."""
    head = f"{label + ':':<10}"
    found = found.replace("\n", "\n" + " " * len(head))
    return "\n".join([f"{'expected:':<10}{expected}", f"{head}{found}", *blocks])


def _verdict_line(verdict: Any) -> str:
    notes = []
    votes = getattr(verdict, "votes", 1)
    if votes and votes > 1:
        notes.append(f"{votes} votes, flip rate {getattr(verdict, 'flip_rate', 0.0):.0%}")
    if getattr(verdict, "cached", False):
        notes.append("cached")
    note = f" ({', '.join(notes)})" if notes else ""
    outcome = "PASS" if verdict.passed else "FAIL"
    return f"{verdict.judge} said {outcome}{note}: {verdict.reason}"


def _block(label: str, text: str) -> str:
    """A labelled, indented, middle-shortened copy of ``text``."""
    if not text:
        return f"{label}: (empty)"
    shown = textwrap.indent(_shorten(text, MAX_SHOWN), _INDENT, lambda line: True)
    return f"{label} ({len(text)} chars):\n{shown}"


def _shorten(text: str, limit: int) -> str:
    """Cut the middle out of long text: the start and the end say the most."""
    if len(text) <= limit:
        return text
    half = limit // 2
    omitted = len(text) - 2 * half
    return f"{text[:half]}\n[... {omitted} characters omitted ...]\n{text[-half:]}"


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
