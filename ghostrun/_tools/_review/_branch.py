"""``ghostrun review --branch NAME``: a branch (``fork``, ``compare``) against the recording.

For each test the branch ran: its outcome in each; step by step, the model,
the answer and tool calls, the tokens and their cost (a price table given),
and whether the branch replayed the recorded step or sent its own; then the
verdicts of the test's judged assertions, the recording's as its run log keeps
them (cached verdicts) and the branch's as the judge graded them there. Both
sides are read from files ghostrun wrote (`_states`), and every text shown is
scrubbed of secret shapes once more and made safe where it goes (`_safe_text`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._core import _safe_text as safe
from ..._secrets._scrub import scrub_text
from .. import _tokens
from .._branches import model_steps
from ._answers import answer_lines
from ._states import State, state_from_dir

__all__ = ["FORMATS", "BranchReview", "branch_review", "render_branch"]

FORMATS = ("text", "markdown", "json")
_MAX_ANSWER = 300


@dataclass(frozen=True)
class Side:
    """One step as one run made it."""

    model: str | None
    answer: str
    tool_calls: list[dict[str, Any]]
    usage: _tokens.Usage | None

    def as_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "answer": self.answer,
            "tool_calls": self.tool_calls,
            "tokens": self.usage.as_json() if self.usage else None,
        }


@dataclass(frozen=True)
class StepPair:
    number: int
    recording: Side | None
    branch: Side | None
    same: bool  # the branch replayed the recorded exchange


@dataclass(frozen=True)
class VerdictPair:
    kind: str
    criterion: str
    recording: str | None  # PASS, FAIL, or None: not asked there
    branch: str | None
    reason: str  # the branch's judge's reason (else the recording's)


@dataclass(frozen=True)
class TestBranch:
    name: str
    outcome: tuple[str | None, str | None]  # (recording, branch)
    steps: list[StepPair]
    verdicts: list[VerdictPair]
    usage: tuple[_tokens.Usage | None, _tokens.Usage | None]


@dataclass(frozen=True)
class BranchReview:
    branch: str
    tests: list[TestBranch]


def branch_review(
    directory: Path, branch: Path, prices: _tokens.Prices | None = None
) -> BranchReview:
    """The branch at ``branch`` against the recording in ``directory``."""
    recording = state_from_dir(directory, label="recording")
    forked = state_from_dir(branch, label=branch.name)
    tests = [
        _test(name, recording, forked, prices)
        for name in sorted(forked.trajectories)
        if model_steps(forked.trajectories[name])
    ]
    return BranchReview(branch.name, tests)


def _test(name: str, recording: State, forked: State, prices: _tokens.Prices | None) -> TestBranch:
    old = model_steps(recording.trajectories.get(name))
    new = model_steps(forked.trajectories.get(name))
    pairs = [
        StepPair(
            number + 1,
            _side(recording, old[number], prices) if number < len(old) else None,
            _side(forked, new[number], prices) if number < len(new) else None,
            number < len(old) and number < len(new) and _same(old[number], new[number]),
        )
        for number in range(max(len(old), len(new)))
    ]
    old_run, new_run = _run_test(recording, name), _run_test(forked, name)
    return TestBranch(
        name,
        (old_run.get("outcome"), new_run.get("outcome")),
        pairs,
        _verdicts(old_run, new_run),
        (_tokens.usage(old, prices), _tokens.usage(new, prices)),
    )


def _same(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return bool(old.get("key") == new.get("key") and old.get("response") == new.get("response"))


def _side(state: State, step: dict[str, Any], prices: _tokens.Prices | None) -> Side:
    cassette = state.cassettes.get(str(step.get("key"))) or {}
    responses = cassette.get("responses") or []
    index = step.get("response")
    response = responses[index] if isinstance(index, int) and 0 <= index < len(responses) else None
    text = " ".join(line for line in answer_lines(response) if not line.startswith("tool call:"))
    calls = step.get("tool_calls")
    return Side(
        step.get("model") if isinstance(step.get("model"), str) else None,
        scrub_text(text)[:_MAX_ANSWER],
        [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else [],
        _tokens.usage([step], prices),
    )


def _run_test(state: State, name: str) -> dict[str, Any]:
    tests = (state.run or {}).get("tests")
    found = tests.get(name) if isinstance(tests, dict) else None
    return found if isinstance(found, dict) else {}


def _verdicts(old: dict[str, Any], new: dict[str, Any]) -> list[VerdictPair]:
    before, after = _judged(old), _judged(new)
    pairs = []
    for key in dict.fromkeys([*before, *after]):
        was, now = before.get(key), after.get(key)
        latest = now or was or {}
        pairs.append(
            VerdictPair(
                key[0],
                key[1],
                was.get("verdict") if was else None,
                now.get("verdict") if now else None,
                scrub_text(str(latest.get("reason", ""))),
            )
        )
    return pairs


def _judged(test: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for record in test.get("assertions") or ():
        if isinstance(record, dict) and record.get("judge"):
            found[str(record.get("kind")), str(record.get("criterion"))] = record
    return found


# -- rendering -------------------------------------------------------------------------


def render_branch(found: BranchReview, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(_as_json(found), indent=2)
    if fmt == "markdown":
        return _markdown(found)
    return _text(found)


def _usage(found: _tokens.Usage | None) -> str:
    if found is None:
        return "tokens -"
    cost = f", ${found.cost:.6f}" if found.cost is not None else ""
    return f"tokens in {found.tokens_in}, out {found.tokens_out}{cost}"


def _calls(side: Side) -> str:
    return ", ".join(
        f"{c.get('name')}({json.dumps(c.get('arguments'), sort_keys=True)})"
        for c in side.tool_calls
    )


def _side_text(side: Side | None) -> str:
    if side is None:
        return "(no such step)"
    said = f"calls {_calls(side)}" if side.tool_calls else repr(side.answer)
    return f"[{side.model or '?'}] {said}; {_usage(side.usage)}"


def _text(found: BranchReview) -> str:
    lines = [f"branch {found.branch} against the recording: {len(found.tests)} test(s)"]
    for test in found.tests:
        was, now = test.outcome
        lines += ["", f"{test.name}: recording {was or '?'}, branch {now or '?'}"]
        for step in test.steps:
            how = "replayed" if step.same else "live"
            lines.append(f"  step {step.number} ({how})")
            lines.append(f"    recording: {_side_text(step.recording)}")
            if not step.same:
                lines.append(f"    branch:    {_side_text(step.branch)}")
        for v in test.verdicts:
            lines.append(
                f"  verdict {v.kind}({v.criterion!r}): recording {v.recording or '-'}, "
                f"branch {v.branch or '-'}" + (f" ({v.reason})" if v.reason else "")
            )
        lines.append(f"  total: recording {_usage(test.usage[0])}; branch {_usage(test.usage[1])}")
    return "\n".join(safe.terminal(line) for line in lines) + "\n"


def _markdown(found: BranchReview) -> str:
    lines = [f"### Branch {safe.code(found.branch)} against the recording", ""]
    for test in found.tests:
        was, now = test.outcome
        lines += [
            f"#### {safe.code(test.name)}: recording {was or '?'}, branch {now or '?'}",
            "",
            "| step | | recording | branch |",
            "|---|---|---|---|",
        ]
        for step in test.steps:
            how = "replayed" if step.same else "live"
            branch = "(same)" if step.same else safe.cell(_side_text(step.branch))
            lines.append(
                f"| {step.number} | {how} | {safe.cell(_side_text(step.recording))} | {branch} |"
            )
        if test.verdicts:
            lines += ["", "| assertion | recording | branch | reason |", "|---|---|---|---|"]
            for v in test.verdicts:
                lines.append(
                    f"| {safe.cell(f'{v.kind}: {v.criterion}')} | {v.recording or '-'} | "
                    f"{v.branch or '-'} | {safe.cell(v.reason)} |"
                )
        lines += [
            "",
            f"Total: recording {safe.inline(_usage(test.usage[0]))}; "
            f"branch {safe.inline(_usage(test.usage[1]))}",
            "",
        ]
    return "\n".join(lines) + "\n"


def _as_json(found: BranchReview) -> dict[str, Any]:
    return {
        "branch": found.branch,
        "tests": {
            test.name: {
                "outcome": {"recording": test.outcome[0], "branch": test.outcome[1]},
                "steps": [
                    {
                        "step": s.number,
                        "replayed": s.same,
                        "recording": s.recording.as_json() if s.recording else None,
                        "branch": s.branch.as_json() if s.branch else None,
                    }
                    for s in test.steps
                ],
                "verdicts": [
                    {
                        "kind": v.kind,
                        "criterion": v.criterion,
                        "recording": v.recording,
                        "branch": v.branch,
                        "reason": v.reason,
                    }
                    for v in test.verdicts
                ],
                "tokens": {
                    "recording": test.usage[0].as_json() if test.usage[0] else None,
                    "branch": test.usage[1].as_json() if test.usage[1] else None,
                },
            }
            for test in found.tests
        },
    }
