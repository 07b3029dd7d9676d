"""The review: what the run after used, paired with what it replaced, test by test.

A request is *new* when the run after used a cassette the state before did
not have (or its run did not use); it replaced a cassette that the run after
no longer uses: the one at the same place in the same test, where the run
before says which that was, else the one to the same endpoint whose body is
closest. A cassette both sides used but whose answers differ was re-recorded.

Each test tells one story: its outcome change, its final answer before and
after (once), and each change to its requests once: a later request whose
diff holds nothing the earlier ones did not (the same system-prompt line, sent
again at every step of an agent loop) is marked as the same change.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from typing import Any

from ..._core._normalize import Normalizer, normalizer
from ..._store._keys import split_field_paths
from ..._store._render import render_body
from .._tokens import Prices, StepTokens, Usage, step_tokens, usage
from ._answers import answer_diff, changed_lines, endpoint_of, request_diff
from ._states import State
from ._verdicts import VerdictChange, verdict_changes, verdicts_by_criterion

__all__ = ["Change", "Review", "Suite", "TestReview", "review"]


@dataclass(frozen=True)
class Change:
    """One request of a test whose cassette changed."""

    position: int  # its place among the test's distinct requests, from 1
    endpoint: str
    before: str | None  # the cassette it replaced (None: a request the test did not make)
    after: str
    how: str  # "replaced", "new" or "re-recorded"
    request_diff: list[str]
    answer_diff: list[str]
    same_as: int | None = None  # its request diff repeats that earlier request's change


@dataclass
class TestReview:
    """What changed for one test."""

    name: str
    outcome: tuple[str | None, str | None]
    changes: list[Change] = field(default_factory=list)
    answer: list[str] = field(default_factory=list)  # its final answer's diff
    failure: str | None = None  # why it fails now, as its run log says
    verdicts: list[VerdictChange] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # cassettes it replaced, still on disk
    tokens: tuple[Usage | None, Usage | None] = (None, None)  # the whole test, before and after
    step_tokens: list[StepTokens] = field(default_factory=list)  # the steps whose usage changed

    @property
    def tokens_changed(self) -> bool:
        return self.tokens[0] != self.tokens[1]

    @property
    def worse(self) -> bool:
        """Its outcome got worse: it fails (or errors) now, and did not before."""
        was, now = self.outcome
        return now in _FAILING and was not in _FAILING

    @property
    def better(self) -> bool:
        was, now = self.outcome
        return was in _FAILING and now is not None and now not in _FAILING


_FAILING = ("failed", "error")


@dataclass
class Review:
    before: str
    after: str
    tests: list[TestReview]
    stale: list[str]  # cassettes no test of the run after used, and no change accounts for
    unchanged: int  # tests that used cassettes and changed nothing

    @property
    def regressions(self) -> int:
        return sum(v.regressed for t in self.tests for v in t.verdicts)

    @property
    def worse(self) -> list[TestReview]:
        """The tests whose outcome got worse (passed, now failed or an error)."""
        return [t for t in self.tests if t.worse]

    @property
    def needs_review(self) -> bool:
        """The exit status's rule: an outcome got worse, or a verdict went PASS -> FAIL."""
        return bool(self.worse) or self.regressions > 0


@dataclass(frozen=True)
class Suite:
    """What the suite leaves out of its keys, read as its sessions read it: shown left out."""

    normalize: tuple[Any, ...] = ()  # as `normalize=` takes them: names, regexes
    ignore: tuple[str, ...] = ()


def review(
    before: State, after: State, prices: Prices | None = None, suite: Suite | None = None
) -> Review:
    """Pair what the run after used with what it replaced, test by test."""
    suite = suite or Suite()
    used_before, used_after = before.used(), after.used()
    candidates = [k for k in sorted(used_before - used_after) if k in before.cassettes]
    owners = {k: name for name, test in before.tests().items() for k in before.trail(name, test)}
    tests: list[TestReview] = []
    unchanged, paired = 0, set[str]()
    for name, test in after.tests().items():
        found = _review_test(
            name, test, before, after, candidates, owners, used_before, paired, suite
        )
        old_steps, new_steps = before.steps(name), after.steps(name)
        found.tokens = (usage(old_steps, prices), usage(new_steps, prices))
        found.step_tokens = step_tokens(old_steps, new_steps, prices)
        found.changes = _told_once(found.changes)
        found.answer = _final_answer(name, test, before, after)
        outcome_changed = found.outcome[0] != found.outcome[1] and None not in found.outcome
        if found.changes or found.verdicts or found.tokens_changed or outcome_changed:
            tests.append(found)
        elif after.trail(name, test):
            unchanged += 1
    stale = [k for k in sorted(set(after.cassettes) - used_after) if k not in paired]
    return Review(before.label, after.label, tests, stale, unchanged)


def _review_test(
    name: str,
    test: dict[str, Any],
    before: State,
    after: State,
    candidates: list[str],
    owners: dict[str, str],
    used_before: set[str],
    paired: set[str],
    suite: Suite,
) -> TestReview:
    old_test = before.tests().get(name, {})
    outcome = (old_test.get("outcome"), test.get("outcome"))
    found = TestReview(name, outcome)
    failure = test.get("failure")
    found.failure = failure if isinstance(failure, str) and outcome[1] in _FAILING else None
    ignore = split_field_paths([*suite.ignore, *(test.get("ignore_fields") or ())])
    shapes = _shapes(suite, test.get("normalize"))
    old_trail = before.trail(name, old_test)
    for position, key in enumerate(after.trail(name, test), 1):
        new = after.cassettes.get(key)
        if new is None:
            continue
        if key in used_before and key in before.cassettes:
            answers = answer_diff(before.cassettes[key], new)
            if answers:
                found.changes.append(
                    Change(position, endpoint_of(new), key, key, "re-recorded", [], answers)
                )
            continue
        hint = old_trail[position - 1] if position <= len(old_trail) else None
        old_key = _pair(new, hint, name, before, candidates, owners, paired)
        old = before.cassettes.get(old_key) if old_key else None
        how = "new" if old is None else "replaced"
        request = request_diff(old, new, ignore, shapes) if old is not None else []
        answers = answer_diff(old, new) if old is not None else []
        found.changes.append(
            Change(position, endpoint_of(new), old_key, key, how, request, answers)
        )
        if old_key and old_key in after.cassettes:
            found.stale.append(old_key)
    if old_test:
        found.verdicts = verdict_changes(old_test, test, after)
    else:  # no run log before (often not committed): the verdict files tell
        found.verdicts = verdicts_by_criterion(test, before, after)
    return found


def _shapes(suite: Suite, logged: object) -> Normalizer | None:
    """The suite's shapes and those the test's sessions used (its run log says which)."""
    extra = [s for s in logged if isinstance(s, str)] if isinstance(logged, list) else []
    try:
        return normalizer([*suite.normalize, *extra])
    except ValueError:  # a run log is data: a bad entry shows the values, no more
        return normalizer(list(suite.normalize))


def _told_once(changes: list[Change]) -> list[Change]:
    """Each request change shown once: a later diff with nothing new says which it repeats."""
    told: list[tuple[int, frozenset[str]]] = []
    kept = []
    for change in changes:
        lines = changed_lines(change.request_diff)
        seen = frozenset().union(*(earlier for _, earlier in told)) if told else frozenset()
        if lines and lines <= seen:
            first = next(p for p, earlier in told if earlier & lines)
            change = dataclasses.replace(change, request_diff=[], same_as=first)
        elif lines:
            told.append((change.position, lines))
        kept.append(change)
    return kept


def _final_answer(name: str, test: dict[str, Any], before: State, after: State) -> list[str]:
    """The diff of the test's last answer, before and after: what the reviewer reads first."""
    old_trail = before.trail(name, before.tests().get(name, {}))
    new_trail = after.trail(name, test)
    old = before.cassettes.get(old_trail[-1]) if old_trail else None
    new = after.cassettes.get(new_trail[-1]) if new_trail else None
    if old is None or new is None:
        return []
    return answer_diff(old, new, last=True)


def _pair(
    new: dict[str, Any],
    hint: str | None,
    test: str,
    before: State,
    candidates: list[str],
    owners: dict[str, str],
    paired: set[str],
) -> str | None:
    """The cassette ``new`` replaced: the run before's at this place, else the closest body."""
    endpoint = endpoint_of(new)
    free = [
        k for k in candidates if k not in paired and endpoint_of(before.cassettes[k]) == endpoint
    ]
    if hint in free or (hint in candidates and endpoint_of(before.cassettes[hint]) == endpoint):
        choice: str | None = hint  # the test's own, even when another test shared it
    else:
        ours = [k for k in free if owners.get(k) in (None, test)]
        mine = render_body(new["request"].get("body") or {})
        choice = max(
            ours or free,
            key=lambda k: (owners.get(k) == test, _likeness(before.cassettes[k], mine)),
            default=None,
        )
    if choice is not None:
        paired.add(choice)
    return choice


def _likeness(old: dict[str, Any], new_lines: list[str]) -> float:
    old_lines = render_body(old["request"].get("body") or {})
    return difflib.SequenceMatcher(None, old_lines, new_lines).ratio()
