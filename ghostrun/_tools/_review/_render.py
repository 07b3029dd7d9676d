"""A review shown: ``text`` (a terminal), ``markdown`` (a pull request) or ``json``.

Text reaches the terminal without control characters (`_safe_text.terminal`);
Markdown quotes what came from a cassette, and is cut to fit a pull-request
comment.
"""

from __future__ import annotations

import json
from typing import Any

from ..._core import _safe_text as safe
from ..._core._words import plural
from .._tokens import Usage, delta
from ._compare import Change, Review, TestReview
from ._verdicts import VerdictChange

__all__ = ["FORMATS", "render", "summary"]

FORMATS = ("text", "markdown", "json")
_MARKDOWN_LIMIT = 60_000  # a pull-request comment holds 65,536 characters


def render(found: Review, fmt: str) -> str:
    """The review as ``text`` (a terminal), ``markdown`` (a pull request) or ``json``."""
    if fmt == "json":
        return json.dumps(_as_json(found), indent=2, ensure_ascii=True) + "\n"
    if fmt == "markdown":
        return _markdown(found)
    if fmt == "text":
        return _text(found)
    raise ValueError(f"unknown format {fmt!r}: expected one of {FORMATS}")


def summary(found: Review) -> str:
    """One line: the outcomes that changed first, then how many tests, requests and
    verdicts changed, and what is stale."""
    requests = sum(len(t.changes) for t in found.tests)
    verdicts = sum(len(t.verdicts) for t in found.tests)
    worse, better = len(found.worse), sum(t.better for t in found.tests)
    parts = [plural(worse, "test") + " now failing"] if worse else []
    parts += [plural(better, "test") + " now passing"] if better else []
    parts += [
        plural(len(found.tests), "test") + " changed",
        plural(requests, "request"),
        plural(verdicts, "verdict")
        + (f" ({found.regressions} PASS -> FAIL)" if found.regressions else ""),
    ]
    stale = len(found.stale) + sum(len(t.stale) for t in found.tests)
    if stale:
        parts.append(plural(stale, "stale cassette"))
    olds = [t.tokens[0] for t in found.tests if t.tokens[0] is not None]
    news = [t.tokens[1] for t in found.tests if t.tokens[1] is not None]
    if any(t.tokens_changed for t in found.tests):
        parts.append("tokens " + delta(_total(olds), _total(news)))
    return ", ".join(parts)


def _total(found: list[Usage]) -> Usage | None:
    if not found:
        return None
    costs = [u.cost for u in found]
    cost = None if None in costs else sum(c for c in costs if c is not None)
    return Usage(sum(u.tokens_in for u in found), sum(u.tokens_out for u in found), cost)


def _token_lines(test: TestReview) -> list[str]:
    """The test's tokens before and after, then each step whose tokens changed."""
    if not test.tokens_changed and not test.step_tokens:
        return []
    lines = [f"tokens: {delta(*test.tokens)}"]
    lines += [f"  step {s.position}: {delta(s.before, s.after)}" for s in test.step_tokens]
    return lines


def _test_head(test: TestReview) -> str:
    was, now = test.outcome
    if was and now and was != now:
        return f"{test.name} ({was} -> {now})"
    return f"{test.name} ({now})" if now else test.name


def _change_head(change: Change) -> str:
    if change.how == "re-recorded":
        return f"request {change.position}: {change.endpoint}: re-recorded ({change.after}.json)"
    if change.before is None:
        return f"request {change.position}: {change.endpoint}: new ({change.after}.json)"
    return (
        f"request {change.position}: {change.endpoint}: {change.before}.json -> {change.after}.json"
    )


def _verdict_line(v: VerdictChange) -> str:
    flip = f", flip rate {v.flip_rate:.0%}" if v.flip_rate else ""
    judge = f" ({v.judge}{flip})" if v.judge else ""
    change = f"{v.before or 'new'} -> {v.after or 'gone'}"
    return f"{v.kind}: {_short(v.criterion)}: {change}{judge}: {v.reason}"


def _short(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _failure_lines(failure: str) -> list[str]:
    first, *rest = failure.splitlines() or [""]
    return [f"fails: {first}", *(f"  {line}" for line in rest)]


def _same(change: Change) -> str:
    return "" if change.same_as is None else f" (same change as request {change.same_as})"


def _text(found: Review) -> str:
    lines = [f"ghostrun review: {found.before} -> {found.after}", summary(found)]
    for test in found.tests:
        lines += ["", _test_head(test)]
        if test.failure:
            lines += ["  " + line for line in _failure_lines(test.failure)]
        if test.answer:
            lines.append("  answer:")
            lines += ["    " + line for line in test.answer]
        for change in test.changes:
            lines.append("  " + _change_head(change) + _same(change))
            lines += ["    " + line for line in change.request_diff]
        lines += ["  " + line for line in _token_lines(test)]
        if test.verdicts:
            lines.append("  verdicts:")
            lines += ["    " + _verdict_line(v) for v in test.verdicts]
        if test.stale:
            lines.append(
                "  stale (replaced, still on disk): " + ", ".join(f"{k}.json" for k in test.stale)
            )
    if found.stale:
        lines += [
            "",
            "Stale cassettes no test used: " + ", ".join(f"{k}.json" for k in found.stale),
        ]
    if found.stale or any(t.stale for t in found.tests):
        lines.append(
            "Delete stale cassettes with `ghostrun prune` in the same commit, so git pairs "
            "each old file with its new one."
        )
    return safe.terminal("\n".join(lines) + "\n")


def _markdown(found: Review) -> str:
    lines = [
        f"**ghostrun review:** {summary(found)}",
        "",
        f"{safe.code(found.before)} -> {safe.code(found.after)}",
    ]
    for test in found.tests:
        body: list[str] = []
        if test.failure:
            body += ["", *safe.code_block(_failure_lines(test.failure), "text")]
        if test.answer:
            body += ["", "**answer**", "", *safe.code_block(test.answer, "diff")]
        for change in test.changes:
            body += ["", f"**{safe.inline(_change_head(change) + _same(change))}**", ""]
            if change.request_diff:
                body += safe.code_block(change.request_diff, "diff")
        tokens = _token_lines(test)
        if tokens:
            body += ["", "```", *tokens, "```"]
        if test.verdicts:
            body += [
                "",
                "Verdicts:",
                *(f"- {safe.inline(_verdict_line(v))}" for v in test.verdicts),
            ]
        if test.stale:
            body += ["", "Stale: " + ", ".join(safe.code(f"{k}.json") for k in test.stale)]
        head = safe.inline(_test_head(test))
        counts = f"{plural(len(test.changes), 'request')}, {plural(len(test.verdicts), 'verdict')}"
        lines += ["", f"<details><summary>{head}: {counts}</summary>", *body, "", "</details>"]
    if found.stale:
        lines += [
            "",
            "Stale cassettes no test used: "
            + ", ".join(safe.code(f"{k}.json") for k in found.stale),
        ]
    text = "\n".join(lines) + "\n"
    if len(text) > _MARKDOWN_LIMIT:
        cut = text[:_MARKDOWN_LIMIT].rsplit("\n<details>", 1)[0]
        text = (
            cut + "\n\n(cut to fit a pull-request comment: run `ghostrun review` for all of it)\n"
        )
    return text


def _as_json(found: Review) -> dict[str, Any]:
    return {
        "before": found.before,
        "after": found.after,
        "summary": summary(found),
        "regressions": found.regressions,
        "worse": [t.name for t in found.worse],
        "needs_review": found.needs_review,
        "unchanged_tests": found.unchanged,
        "tests": [
            {
                "name": t.name,
                "outcome": {"before": t.outcome[0], "after": t.outcome[1]},
                "failure": t.failure,
                "answer": t.answer,
                "requests": [vars(c) for c in t.changes],
                "verdicts": [{**vars(v), "regressed": v.regressed} for v in t.verdicts],
                "stale": t.stale,
                "tokens": {
                    "before": t.tokens[0].as_json() if t.tokens[0] else None,
                    "after": t.tokens[1].as_json() if t.tokens[1] else None,
                    "steps": [
                        {
                            "step": s.position,
                            "before": s.before.as_json() if s.before else None,
                            "after": s.after.as_json() if s.after else None,
                        }
                        for s in t.step_tokens
                    ],
                },
            }
            for t in found.tests
        ],
        "stale": found.stale,
    }
