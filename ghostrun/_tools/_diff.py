"""Comparing two runs: what regressed, what got fixed, whose output drifted.

Pure functions over two run logs (see ``_runlog`` for the format). An
assertion is identified by its test, its kind, its criterion and its rank
among the test's assertions with that same kind and criterion, so adding one
assertion does not shift the others. Each is classified:

- ``regression``: PASS in the base, FAIL in the candidate;
- ``fix``: FAIL, then PASS;
- ``stable``: the same verdict in both;
- ``added`` / ``removed``: in one run only;
- ``not-run``: in the base only, and the candidate's test aborted before it
  (failed, errored or was skipped, or its last assertion failed): it may still
  exist, it just never ran.

Output drift compares the texts each test asserted on, in order: a changed
text gets a similarity ratio (over words) and a unified diff.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

import orjson

from .._core import _safe_text as safe
from .._core._words import plural
from .._store._formats import AssertionRecord, RunLogEntry, RunLogFile

__all__ = ["STATUSES", "AssertionChange", "Drift", "RunDiff", "compare", "render"]

STATUSES = ("regression", "fix", "stable", "added", "removed", "not-run")
FORMATS = ("text", "markdown", "json")
_ABORTED = ("failed", "error", "skipped", "xfailed")
_SHOWN_DIFF_LINES = 40
_SHOWN_CRITERION = 110


@dataclass(frozen=True)
class AssertionChange:
    """One assertion in either run, and how it changed."""

    test: str
    kind: str
    criterion: str
    status: str
    base: AssertionRecord | None  # the assertion as logged: verdict, reason, judge
    candidate: AssertionRecord | None


@dataclass(frozen=True)
class Drift:
    """A text a test asserted on that differs between the runs."""

    test: str
    output: int
    ratio: float
    diff: list[str]


@dataclass(frozen=True)
class OutcomeChange:
    test: str
    base: str | None
    candidate: str | None


@dataclass
class RunDiff:
    base: str
    candidate: str
    assertions: list[AssertionChange] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    outcomes: list[OutcomeChange] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(STATUSES, 0)
        for change in self.assertions:
            counts[change.status] += 1
        return counts

    def of(self, status: str) -> list[AssertionChange]:
        return [change for change in self.assertions if change.status == status]

    @property
    def regressed(self) -> bool:
        return any(change.status == "regression" for change in self.assertions)


# -- comparing -----------------------------------------------------------------------------


def compare(
    base: RunLogFile, candidate: RunLogFile, base_label: str, candidate_label: str
) -> RunDiff:
    """Classify every assertion of two run logs, and find the outputs that drifted."""
    result = RunDiff(base_label, candidate_label)
    base_tests, candidate_tests = base["tests"], candidate["tests"]
    for test in sorted(set(base_tests) | set(candidate_tests)):
        before, after = base_tests.get(test), candidate_tests.get(test)
        result.assertions.extend(_assertions(test, before, after))
        if before is not None and after is not None:
            result.drift.extend(_drift(test, before["outputs"], after["outputs"]))
            if before.get("outcome") != after.get("outcome"):
                result.outcomes.append(
                    OutcomeChange(test, before.get("outcome"), after.get("outcome"))
                )
    return result


def _assertions(
    test: str, before: RunLogEntry | None, after: RunLogEntry | None
) -> Iterator[AssertionChange]:
    old = _identified(before)
    new = _identified(after)
    aborted = after is not None and _aborted(after)
    for ident, record in old.items():
        kind, criterion, _ = ident
        theirs = new.get(ident)
        if theirs is None:
            status = "not-run" if aborted else "removed"
        else:
            status = _status(record["verdict"], theirs["verdict"])
        yield AssertionChange(test, kind, criterion, status, record, theirs)
    for ident, record in new.items():
        if ident not in old:
            yield AssertionChange(test, ident[0], ident[1], "added", None, record)


def _identified(test: RunLogEntry | None) -> dict[tuple[str, str, int], AssertionRecord]:
    """Each assertion under (kind, criterion, rank among its equals)."""
    found: dict[tuple[str, str, int], AssertionRecord] = {}
    if test is None:
        return found
    ranks: dict[tuple[str, str], int] = {}
    for record in test["assertions"]:
        pair = (record["kind"], record["criterion"])
        rank = ranks[pair] = ranks.get(pair, -1) + 1
        found[(*pair, rank)] = record
    return found


def _aborted(test: RunLogEntry) -> bool:
    if test.get("outcome") in _ABORTED:
        return True
    assertions = test["assertions"]
    return bool(assertions) and assertions[-1]["verdict"] == "FAIL"


def _status(before: str, after: str) -> str:
    if before == after:
        return "stable"
    return "regression" if after == "FAIL" else "fix"


def _drift(test: str, before: list[str], after: list[str]) -> Iterator[Drift]:
    for index, (old, new) in enumerate(zip(before, after, strict=False)):
        if old != new:
            yield Drift(test, index, similarity(old, new), _unified(old, new))


def similarity(a: str, b: str) -> float:
    """How alike two texts are, 0 to 1, over their words."""
    return difflib.SequenceMatcher(None, a.split(), b.split(), autojunk=False).ratio()


def _unified(old: str, new: str) -> list[str]:
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), "base", "candidate", lineterm="", n=2
    )
    return list(lines)


# -- rendering -----------------------------------------------------------------------------


def render(diff: RunDiff, fmt: str = "text") -> str:
    if fmt == "text":
        return render_text(diff)
    if fmt == "markdown":
        return render_markdown(diff)
    if fmt == "json":
        return render_json(diff)
    raise ValueError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")


def summary(diff: RunDiff) -> str:
    """``1 regression, 0 fixes, 4 stable, ...; 1 output drifted``."""
    *counts, drift = _summary_parts(diff)
    return ", ".join(counts) + "; " + drift


def _summary_parts(diff: RunDiff) -> list[str]:
    counts = diff.counts()
    return [
        plural(counts["regression"], "regression"),
        plural(counts["fix"], "fix", "fixes"),
        f"{counts['stable']} stable",
        f"{counts['added']} added",
        f"{counts['removed']} removed",
        f"{counts['not-run']} not run",
        plural(len(diff.drift), "output drifted", "outputs drifted"),
    ]


_LISTED = ("regression", "fix", "not-run", "added", "removed")


def render_text(diff: RunDiff) -> str:
    lines = [f"ghostrun diff: {diff.base} -> {diff.candidate}", ""]
    for status in _LISTED:
        for change in diff.of(status):
            lines.append(f"{status.upper():<11} {change.test}")
            lines.append(f"    {change.kind}: {_one_line(change.criterion)}")
            lines.append(f"    {_verdicts(change)}")
    for outcome in diff.outcomes:
        lines.append(f"OUTCOME     {outcome.test}: {outcome.base} -> {outcome.candidate}")
    for drift in diff.drift:
        lines.append(
            f"DRIFT       {drift.test} (output {drift.output + 1}, similarity {drift.ratio:.0%})"
        )
        lines.extend("    " + line for line in _capped(drift.diff))
    if len(lines) > 2:
        lines.append("")
    lines.append(summary(diff))
    return safe.terminal("\n".join(lines) + "\n")


def render_markdown(diff: RunDiff) -> str:
    regressions, *rest = _summary_parts(diff)
    lines = [
        f"### ghostrun diff: {safe.code(diff.base)} → {safe.code(diff.candidate)}",
        "",
        " · ".join([f"**{regressions}**", *rest]),
        "",
    ]
    listed = [change for status in _LISTED for change in diff.of(status)]
    if listed:
        lines += [
            "| Status | Test | Assertion | Base | Candidate | Reason |",
            "|---|---|---|---|---|---|",
        ]
        for change in listed:
            status = f"**{change.status}**" if change.status == "regression" else change.status
            lines.append(
                f"| {status} | {_cell(change.test, code=True)} "
                f"| {_cell(change.kind + ': ' + _one_line(change.criterion))} "
                f"| {_cell(_verdict_of(change.base))} | {_cell(_verdict_of(change.candidate))} "
                f"| {_cell(_explained(change.candidate))} |"
            )
        lines.append("")
    for outcome in diff.outcomes:
        lines.append(
            f"- {safe.code(outcome.test)}: {safe.inline(str(outcome.base))} → "
            f"{safe.inline(str(outcome.candidate))}"
        )
    if diff.outcomes:
        lines.append("")
    for drift in diff.drift:
        lines += [
            "<details><summary>Output drift: "
            f"{safe.inline(drift.test)} output {drift.output + 1} "
            f"(similarity {drift.ratio:.0%})</summary>",
            "",
            *safe.code_block(_capped(drift.diff), "diff"),
            "",
            "</details>",
            "",
        ]
    return "\n".join(lines).rstrip("\n") + "\n"


def render_json(diff: RunDiff) -> str:
    document = {
        "base": diff.base,
        "candidate": diff.candidate,
        "summary": {**diff.counts(), "drift": len(diff.drift)},
        "assertions": [asdict(change) for change in diff.assertions],
        "drift": [asdict(drift) for drift in diff.drift],
        "outcomes": [asdict(outcome) for outcome in diff.outcomes],
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"


def _verdicts(change: AssertionChange) -> str:
    before, after = _verdict_of(change.base), _verdict_of(change.candidate)
    if change.status == "not-run":
        return f"{before} -> not run: the test stopped before this assertion"
    if change.candidate is None:
        return f"{before} -> -"
    return f"{before} -> {after}  {_explained(change.candidate)}".rstrip()


def _explained(record: AssertionRecord | None) -> str:
    if record is None:
        return ""
    judge = f"judge {record['judge']}: " if record.get("judge") else ""
    return judge + _one_line(str(record.get("reason", "")))


def _verdict_of(record: AssertionRecord | None) -> str:
    return "-" if record is None else str(record["verdict"])


def _one_line(text: str, limit: int = _SHOWN_CRITERION) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _capped(lines: list[str]) -> list[str]:
    if len(lines) <= _SHOWN_DIFF_LINES:
        return lines
    hidden = len(lines) - _SHOWN_DIFF_LINES
    return [*lines[:_SHOWN_DIFF_LINES], f"... {hidden} more diff lines (see --format json)"]


def _cell(text: str, code: bool = False) -> str:
    return safe.cell(text, as_code=code)
