"""Assertions on a whole agent run: ``ghostrun.expect_trajectory(session)`` (DESIGN §7).

A session keeps its steps in order: its model calls (each request sent and
response received, replayed or recorded) and the exchanges with its declared
tool hosts (``tool_hosts=``: tool steps). These checks read them::

    ghostrun.expect_trajectory(session) \\
        .tool_sequence(["lookup_order", "refund"]) \\
        .called_with("lookup_order", order_id="A123") \\
        .never_called("delete_account") \\
        .at_most_steps(5) \\
        .ends_with_text()

*The tool calls* the rules check are the model's: the calls it asked for
across the run (every provider the step reader knows, `_recording._steps`),
by the names and arguments the model used. They are the agent's decisions,
whatever then ran the tool (a Python function, a tool host, an MCP server);
the tool steps say what answered, and show in every failure's story and in
what `achieves` gives the judge. ``at_most_steps`` counts model calls only.

Each check raises ``ghostrun.ExpectationFailed`` (an ``AssertionError``)
listing the run step by step, and is reported to the run log like every
other assertion. `achieves` asks the judge through the verdict cache of the
session's cassette directory, in the session's mode: replay never calls it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._core._public import public
from .._recording._session import Session
from .._recording._steps import (
    Step,
    Tokens,
    ToolCall,
    answer_text,
    endpoint,
    mcp_http_call,
    push_streams,
    settled,
    tokens_used,
    tool_calls,
)
from .._recording._trajectory import step_record, tool_record
from .._store._formats import ToolStep
from ._expect import _grade
from ._outcome import block, check, failure_message

if TYPE_CHECKING:
    from .._core._modes import Mode

__all__ = ["TrajectoryExpectation", "expect_trajectory"]

__unittest = True
__tracebackhide__ = True

_GOAL = (
    "The text is the record of an AI agent's run: the tools it called, with their "
    "arguments and results, then its final answer. Judge whether the run achieved "
    "this goal: {goal}"
)


@dataclass(frozen=True)
class _Read:
    """A model step as the checks see it."""

    endpoint: str
    calls: list[ToolCall]
    text: str
    tokens: Tokens | None


def _as_run(step: Step, pushed: Sequence[Step]) -> _Read | ToolStep:
    """A step as the checks see it: a model call, or a tool step (a tool host's exchange, a
    ``tools/call`` over MCP's HTTP, answered there or on the push stream ``pushed`` names)."""
    use = mcp_http_call(step, pushed)
    if use is not None:
        return tool_record(use, 0)
    return step_record(step, 0) if step.tool else _read(step)  # type: ignore[return-value]  # a tool step


@public
def expect_trajectory(session: Session) -> TrajectoryExpectation:
    """Checks on the steps of ``session``'s latest run (call it after, or inside, the block)."""
    if not isinstance(session, Session):
        raise TypeError(
            f"expect_trajectory() takes a ghostrun session, got {type(session).__name__}"
        )
    deck = session._deck
    return TrajectoryExpectation(deck.steps, where=(deck.mode, deck.cassette_dir))


@public
class TrajectoryExpectation:
    """The steps of one session, and the checks on them; each check returns ``self``."""

    def __init__(self, steps: Sequence[Step], *, where: tuple[Mode, Any] | None = None) -> None:
        pushed = push_streams(steps)
        self._run: list[_Read | ToolStep] = [_as_run(s, pushed) for s in settled(list(steps))]
        self._steps = [step for step in self._run if isinstance(step, _Read)]
        self._where = where  # the session's mode and cassette directory, for the judge

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call the model asked for, in order, each ``{"name", "arguments"}``."""
        return [call for step in self._steps for call in step.calls]

    @property
    def tool_steps(self) -> list[ToolStep]:
        """What tool hosts answered, in order: tool, server, arguments, first words."""
        return [step for step in self._run if not isinstance(step, _Read)]

    @property
    def steps(self) -> int:
        """How many model calls the run made (tool steps are not counted)."""
        return len(self._steps)

    @property
    def final_answer(self) -> str:
        """The text of the last model call: the run's answer (empty if it answered none)."""
        return self._steps[-1].text if self._steps else ""

    @property
    def tokens(self) -> Tokens:
        """Tokens in and out over the whole run (steps whose provider said)."""
        counted = [step.tokens for step in self._steps if step.tokens]
        return {"in": sum(t["in"] for t in counted), "out": sum(t["out"] for t in counted)}

    def __repr__(self) -> str:
        return f"TrajectoryExpectation(steps={self.steps}, tool_calls={self._names()!r})"

    # -- the sequence of tools -------------------------------------------------------------

    def tool_order(self, names: Sequence[str]) -> TrajectoryExpectation:
        """The tools were called in this order; other calls may come between (a subsequence)."""
        wanted = _name_list("tool_order", names)
        at = 0
        for name in self._names():
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

    def tool_sequence(self, names: Sequence[str]) -> TrajectoryExpectation:
        """The tools called were exactly these, in this order, and no others."""
        wanted, made = _name_list("tool_sequence", names), self._names()
        differs = next(
            (i for i, pair in enumerate(zip(wanted, made, strict=False)) if pair[0] != pair[1]),
            min(len(wanted), len(made)),
        )
        if wanted == made:
            reason = "exactly that sequence"
        elif differs < len(wanted) and differs < len(made):
            reason = f"call {differs + 1} was {made[differs]!r}, not {wanted[differs]!r}"
        elif len(made) > len(wanted):
            reason = f"{len(made) - len(wanted)} more call(s) after them: {made[differs:]!r}"
        else:
            reason = f"the run stopped before {wanted[differs:]!r}"
        return self._check(
            "tool_sequence", f"exactly the tool calls {wanted!r}", wanted == made, reason
        )

    def tools_in_any_order(self, names: Collection[str]) -> TrajectoryExpectation:
        """Each of these tools was called, in any order; other calls may come between."""
        wanted = _name_list("tools_in_any_order", names)
        missing = [name for name in dict.fromkeys(wanted) if name not in self._names()]
        reason = f"never called: {missing!r}" if missing else "all called"
        return self._check(
            "tools_in_any_order", f"calls to each of {wanted!r}", not missing, reason
        )

    def only_tools(self, allowed: Collection[str]) -> TrajectoryExpectation:
        """No tool outside ``allowed`` was called."""
        permitted = _name_list("only_tools", allowed)
        outside = [
            f"{name!r} at call {i}"
            for i, name in enumerate(self._names(), start=1)
            if name not in permitted
        ]
        reason = "called " + ", ".join(outside) if outside else "only those"
        return self._check(
            "only_tools", f"only tools from {sorted(set(permitted))!r}", not outside, reason
        )

    def max_repeats(self, n: int) -> TrajectoryExpectation:
        """No tool was called more than ``n`` times in a row (a loop, caught)."""
        _count("max_repeats", n)
        name: str | None = None
        run, at = 0, 0
        longest: tuple[str | None, int, int] = (None, 0, 0)
        for index, called in enumerate(self._names(), start=1):
            run = run + 1 if called == name else 1
            name = called
            if run > longest[1]:
                longest, at = (called, run, index - run + 1), index
        repeated, times, start = longest
        passed = times <= n
        reason = (
            f"{repeated!r} {times} times in a row, from call {start} to {at}"
            if times
            else "no tool calls"
        )
        return self._check("max_repeats", f"no tool more than {n} times in a row", passed, reason)

    # -- the calls and their arguments --------------------------------------------------------

    def never_called(self, name: str) -> TrajectoryExpectation:
        """No step called ``name``."""
        steps = [i + 1 for i, step in enumerate(self._steps) if name in _names(step)]
        where = ", ".join(map(str, steps))
        reason = f"{name!r} was called at step {where}" if steps else "never called"
        return self._check("never_called", f"no call to {name!r}", not steps, reason)

    def called_with(self, name: str, /, **arguments: Any) -> TrajectoryExpectation:
        """Some call of ``name`` had these arguments (a partial match: others may be there too;
        a nested dict is matched partially too)."""
        calls = self._calls_of(name)
        passed = any(_partial(arguments, call["arguments"]) for call in calls)
        reason = (
            "a call matches"
            if passed
            else f"{name!r} was never called"
            if not calls
            else "its calls had " + "; ".join(repr(call["arguments"]) for call in calls)
        )
        wanted = f"a call {name}({_shown(arguments)})"
        return self._check("called_with", wanted, passed, reason)

    def never_called_with(self, name: str, /, **arguments: Any) -> TrajectoryExpectation:
        """No call of ``name`` had these arguments (matched partially, as `called_with`)."""
        bad = [call for call in self._calls_of(name) if _partial(arguments, call["arguments"])]
        reason = (
            "it was called with " + "; ".join(repr(call["arguments"]) for call in bad)
            if bad
            else "no such call"
        )
        wanted = f"no call {name}({_shown(arguments)})"
        return self._check("never_called_with", wanted, not bad, reason)

    # -- how it ended ------------------------------------------------------------------------

    def at_most_steps(self, n: int) -> TrajectoryExpectation:
        """The run took at most ``n`` model calls (tool steps are not counted)."""
        _count("at_most_steps", n)
        reason = f"{self.steps} model calls"
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

    def achieves(self, goal: str, *, judge: Any = None) -> TrajectoryExpectation:
        """The judge finds that the run achieved ``goal``, from its tool calls and final answer.

        The verdict is cached like every other (under the session's cassette
        directory, in its mode): a replayed test reads it, and never calls the judge.
        """
        if not isinstance(goal, str) or not goal.strip():
            raise TypeError(f"achieves(goal): the goal must be a non-empty string, got {goal!r}")
        run, criterion = self._story(), _GOAL.format(goal=goal)
        mode, cassette_dir = self._where if self._where else (None, None)
        verdict = _grade(run, criterion, judge, mode=mode, cassette_dir=cassette_dir)
        said = f"{verdict.judge} said {'PASS' if verdict.passed else 'FAIL'}: {verdict.reason}"
        check(
            kind="achieves",
            criterion=criterion,
            text=run,
            passed=verdict.passed,
            reason=verdict.reason,
            judge=verdict.judge,
            verdict=verdict,
            message=failure_message(
                f"a run that achieves: {goal}", "judge", said, block("trajectory", run)
            ),
        )
        return self

    # -- the one exit --------------------------------------------------------------------------

    def _names(self) -> list[str]:
        return [call["name"] for call in self.tool_calls]

    def _calls_of(self, name: str) -> list[ToolCall]:
        return [call for call in self.tool_calls if call["name"] == name]

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
        """The run, one line a step: where it went, what it called or said; then its answer."""
        lines = []
        for number, step in enumerate(self._run, start=1):
            if not isinstance(step, _Read):
                said = f"tool {step['tool']} on {step['server']}"
                lines.append(f"step {number}: {said} -> {step['result']!r}")
                continue
            if step.calls:
                did = "called " + ", ".join(_call_text(call) for call in step.calls)
            else:
                did = f"answered {step.text[:60]!r}"
            lines.append(f"step {number}: {step.endpoint} -> {did}")
        if self._steps and self._steps[-1].text:
            lines.append(f"final answer: {self._steps[-1].text[:200]!r}")
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


def _name_list(check: str, names: Collection[str]) -> list[str]:
    """A list of tool names, refusing one bare string (whose letters are no names)."""
    if isinstance(names, str) or not all(isinstance(name, str) for name in names):
        raise TypeError(f'{check}() takes a list of names: {check}(["a", "b"])')
    return list(names)


def _count(check: str, n: object) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise TypeError(f"{check}(n): n must be a non-negative int, got {n!r}")


def _partial(wanted: Any, found: Any) -> bool:
    """``found`` holds ``wanted``: every key of a wanted dict, its value matched the same way."""
    if isinstance(wanted, Mapping):
        return isinstance(found, Mapping) and all(
            key in found and _partial(value, found[key]) for key, value in wanted.items()
        )
    return bool(wanted == found)


def _shown(arguments: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value!r}" for key, value in arguments.items())
