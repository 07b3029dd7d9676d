"""Assertions on a whole agent run: ``ghostrun.expect_trajectory(session)`` (DESIGN §7).

A session keeps its model calls in order (its steps: each request sent and
response received, replayed or recorded). These checks read them: the tool
calls the model asked for across the run (every provider the step reader
knows, `_recording._steps`), how many calls it took, how it ended::

    ghostrun.expect_trajectory(session) \\
        .tool_order(["lookup_order", "refund"]) \\
        .never_called("delete_account") \\
        .at_most_steps(5) \\
        .ends_with_text()

Each raises ``ghostrun.ExpectationFailed`` (an ``AssertionError``) listing the
run step by step, and is reported to the run log like every other assertion.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._core._public import public
from .._recording._session import Session
from .._recording._steps import (
    Step,
    Tokens,
    ToolCall,
    answer_text,
    endpoint,
    settled,
    tokens_used,
    tool_calls,
)
from ._outcome import block, check, failure_message

__all__ = ["TrajectoryExpectation", "expect_trajectory"]


@dataclass(frozen=True)
class _Read:
    """A step as the checks see it."""

    endpoint: str
    calls: list[ToolCall]
    text: str
    tokens: Tokens | None


@public
def expect_trajectory(session: Session) -> TrajectoryExpectation:
    """Checks on the steps of ``session``'s latest run (call it after, or inside, the block)."""
    if not isinstance(session, Session):
        raise TypeError(
            f"expect_trajectory() takes a ghostrun session, got {type(session).__name__}"
        )
    return TrajectoryExpectation(session._deck.steps)


@public
class TrajectoryExpectation:
    """The steps of one session, and the checks on them; each check returns ``self``."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self._steps = [_read(step) for step in settled(list(steps))]

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of the run, in order, each ``{"name", "arguments"}``."""
        return [call for step in self._steps for call in step.calls]

    @property
    def steps(self) -> int:
        """How many model calls the run made."""
        return len(self._steps)

    @property
    def tokens(self) -> Tokens:
        """Tokens in and out over the whole run (steps whose provider said)."""
        counted = [step.tokens for step in self._steps if step.tokens]
        return {"in": sum(t["in"] for t in counted), "out": sum(t["out"] for t in counted)}

    def __repr__(self) -> str:
        return f"TrajectoryExpectation(steps={self.steps}, tool_calls={self._names()!r})"

    def tool_order(self, names: Sequence[str]) -> TrajectoryExpectation:
        """The tools were called in this order; other calls may come between (a subsequence)."""
        if isinstance(names, str):
            raise TypeError('tool_order() takes a list of names: tool_order(["a", "b"])')
        wanted = list(names)
        made = self._names()
        at = 0
        for name in made:
            if at < len(wanted) and name == wanted[at]:
                at += 1
        reason = (
            "all in order"
            if at == len(wanted)
            else f"{wanted[at]!r} was not called after {wanted[:at]!r}"
            if at
            else f"{wanted[0]!r} was never called"
        )
        return self._check(
            "tool_order", f"tool calls in the order {wanted!r}", at == len(wanted), reason
        )

    def never_called(self, name: str) -> TrajectoryExpectation:
        """No step called ``name``."""
        steps = [i + 1 for i, step in enumerate(self._steps) if name in _names(step)]
        where = ", ".join(map(str, steps))
        reason = f"{name!r} was called at step {where}" if steps else "never called"
        return self._check("never_called", f"no call to {name!r}", not steps, reason)

    def at_most_steps(self, n: int) -> TrajectoryExpectation:
        """The run took at most ``n`` model calls."""
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise TypeError(f"at_most_steps(n): n must be a non-negative int, got {n!r}")
        reason = f"{self.steps} steps"
        return self._check("at_most_steps", f"at most {n} steps", self.steps <= n, reason)

    def ends_with_text(self) -> TrajectoryExpectation:
        """The last step answered in text and called no tool: the agent finished."""
        last = self._steps[-1] if self._steps else None
        if last is None:
            passed, reason = False, "no step at all"
        elif last.calls:
            passed, reason = False, f"the last step called {_names(last)!r}"
        else:
            passed = bool(last.text.strip())
            reason = "it answered in text" if passed else "the last step answered no text"
        return self._check("ends_with_text", "a last step that answers in text", passed, reason)

    # -- the one exit --------------------------------------------------------------------------

    def _names(self) -> list[str]:
        return [call["name"] for call in self.tool_calls]

    def _check(self, kind: str, expected: str, passed: bool, reason: str) -> TrajectoryExpectation:
        run = self._story()
        check(
            kind=kind,
            criterion=expected,
            text=run,
            passed=passed,
            reason=reason,
            message=failure_message(expected, "found", reason, block("trajectory", run)),
        )
        return self

    def _story(self) -> str:
        """The run, one line a step: where it went, what it called or said."""
        lines = []
        for number, step in enumerate(self._steps, start=1):
            if step.calls:
                did = "called " + ", ".join(_call_text(call) for call in step.calls)
            else:
                did = f"answered {step.text[:60]!r}"
            lines.append(f"step {number}: {step.endpoint} -> {did}")
        return "\n".join(lines) or "(no model calls)"


def _read(step: Step) -> _Read:
    documents = step.documents()
    return _Read(
        endpoint(step.url), tool_calls(documents), answer_text(documents), tokens_used(documents)
    )


def _names(step: _Read) -> list[str]:
    return [call["name"] for call in step.calls]


def _call_text(call: ToolCall) -> str:
    return f"{call['name']}({call['arguments']!r})"[:80]
