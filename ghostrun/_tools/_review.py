"""What a prompt change did: ``ghostrun review`` (DESIGN §7).

Two states of a cassette directory are compared: *before* (a git revision,
``HEAD`` by default, or a directory) and *after* (the working tree, another
revision or directory), each with its cassettes, its verdicts and its run log
(``runs/_last.json``, or a snapshot). Two run snapshots of one directory
compare the same way.

A request is *new* when the run after used a cassette the state before did
not have (or its run did not use); it replaced a cassette that the run after
no longer uses: the one at the same place in the same test, where the run
before says which that was, else the one to the same endpoint whose body is
closest. A cassette both sides used but whose answers differ was re-recorded.
For each, the request diff is drawn in the miss diff's notation
(``messages[0].content: ...``, ignored fields left out) and the answer diff
on the text ``expect()`` would read, with tool calls and their arguments, so a
re-record that only changed a response id shows nothing. Verdicts compare the
two runs' assertions by kind and criterion. Everything shown comes from files
ghostrun already redacted, and is scrubbed of secret shapes once more.

Where a state has no run log for a test (run logs are rarely committed), its
committed trajectory (``trajectories/<test>.json``) says which cassettes are
the test's and in which order; each test also shows the tokens it used before and
after, in total and for each step whose tokens changed (`_tokens`), and their
cost when a price table is given.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .._assertions._extract import extract_text
from .._assertions._tool_calls import normalize_tool_calls
from .._core import _safe_text as safe
from .._core._files import parse_json
from .._core._words import plural
from .._secrets._redact import scrub_text
from .._store._keys import split_field_paths, without_fields
from .._store._render import render_body
from .._wire._bodies import MODIFIERS
from ._show import stream_text
from ._tokens import Prices, StepTokens, Usage, delta, step_tokens, usage

__all__ = [
    "Change",
    "Review",
    "State",
    "TestReview",
    "VerdictChange",
    "answer_lines",
    "review",
    "state_from_dir",
    "state_from_git",
    "verdict_changes",
]

_MAX_DIFF_LINES = 40


class ReviewError(Exception):
    """A state that cannot be read: a bad revision, no git, no such directory."""


# --- the two states ------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """A cassette directory as it was: cassettes and verdicts by key, and its run log."""

    label: str
    cassettes: dict[str, dict[str, Any]]
    verdicts: dict[str, dict[str, Any]]
    run: dict[str, Any] | None
    trajectories: dict[str, dict[str, Any]] = field(default_factory=dict)  # by test

    def tests(self) -> dict[str, dict[str, Any]]:
        tests = (self.run or {}).get("tests")
        found = dict(tests) if isinstance(tests, dict) else {}
        for name in self.trajectories:
            found.setdefault(name, {})
        return found

    def trail(self, name: str, test: dict[str, Any]) -> list[str]:
        """A test's distinct cassettes in order: as its run used them when the state has
        its run log (two runs of one directory differ there), else as its trajectory says."""
        found = _trail(test)
        trajectory = self.trajectories.get(name)
        if found or trajectory is None:
            return found
        return list(dict.fromkeys(step["key"] for step in _steps(trajectory)))

    def steps(self, name: str) -> list[dict[str, Any]]:
        """The steps of a test's trajectory (none without one)."""
        return _steps(self.trajectories.get(name) or {})

    def used(self) -> set[str]:
        """The cassettes this state's run used (every cassette when there is no run)."""
        if self.run is None and not self.trajectories:
            return set(self.cassettes)
        return {key for name, test in self.tests().items() for key in self.trail(name, test)}


def state_from_dir(directory: Path, run: str = "_last", label: str | None = None) -> State:
    """The state of a directory on disk."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ReviewError(
            f"no cassette directory at {directory.absolute()}: pass --cassette-dir DIR, set "
            "GHOSTRUN_CASSETTE_DIR, or set cassette_dir under [tool.ghostrun] in pyproject.toml"
        )
    files = {
        str(path.relative_to(directory)): path.read_bytes()
        for pattern in ("*.json", "judge/*.json", "trajectories/*.json", f"runs/{run}.json")
        for path in directory.glob(pattern)
    }
    return _state(label or str(directory), files, run)


def state_from_git(revision: str, directory: Path, run: str = "_last") -> State:
    """The state of ``directory`` as committed at ``revision``."""
    directory = Path(directory).absolute()
    top = Path(
        _git(
            directory.parent if not directory.exists() else directory,
            "rev-parse",
            "--show-toplevel",
        ).strip()
    )
    prefix = os.path.relpath(directory, top).replace(os.sep, "/")
    names = _git(top, "ls-tree", "-r", "--name-only", revision, "--", prefix).splitlines()
    wanted = [n for n in names if _wanted(n[len(prefix) + 1 :], run)]
    blobs = _cat(top, [f"{revision}:{name}" for name in wanted])
    files = {name[len(prefix) + 1 :]: blob for name, blob in zip(wanted, blobs, strict=True)}
    return _state(f"{revision} ({prefix})", files, run)


def _wanted(relative: str, run: str) -> bool:
    parts = relative.split("/")
    if not relative.endswith(".json"):
        return False
    return (
        len(parts) == 1
        or (len(parts) == 2 and parts[0] in ("judge", "trajectories"))
        or relative == f"runs/{run}.json"
    )


def _git(where: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(where), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError as exc:
        raise ReviewError("git is not installed: compare two directories instead") from exc
    if done.returncode:
        raise ReviewError(f"git {args[0]} failed: {done.stderr.strip() or done.returncode}")
    return done.stdout


def _cat(top: Path, objects: list[str]) -> list[bytes]:
    """The contents of many blobs in one ``git cat-file --batch``."""
    if not objects:
        return []
    done = subprocess.run(
        ["git", "-C", str(top), "cat-file", "--batch"],
        input="".join(f"{o}\n" for o in objects).encode(),
        capture_output=True,
        check=True,
    )
    out, blobs, at = done.stdout, [], 0
    for _ in objects:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        blobs.append(out[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1
    return blobs


def _state(label: str, files: dict[str, bytes], run: str) -> State:
    cassettes, verdicts, run_log, trajectories = {}, {}, None, {}
    for name, data in sorted(files.items()):
        document = parse_json(data)
        if not isinstance(document, dict):
            continue
        if name == f"runs/{run}.json":
            run_log = document
        elif name.startswith("trajectories/"):
            if isinstance(document.get("test"), str) and isinstance(document.get("steps"), list):
                trajectories[document["test"]] = document
        elif name.startswith("judge/"):
            verdicts[Path(name).stem] = document
        elif isinstance(document.get("request"), dict) and isinstance(
            document.get("responses"), list
        ):
            cassettes[Path(name).stem] = document
    return State(label, cassettes, verdicts, run_log, trajectories)


def _steps(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    steps = trajectory.get("steps")
    if not isinstance(steps, list):
        return []
    return [s for s in steps if isinstance(s, dict) and isinstance(s.get("key"), str)]


def _trail(test: dict[str, Any]) -> list[str]:
    """A test's distinct cassette keys in the order of first use (old run logs: none)."""
    keys = [entry.get("key") for entry in test.get("cassettes") or () if isinstance(entry, dict)]
    return list(dict.fromkeys(k for k in keys if isinstance(k, str)))


# --- the review ----------------------------------------------------------------------


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


@dataclass(frozen=True)
class VerdictChange:
    """An assertion whose verdict is not what it was."""

    kind: str
    criterion: str
    before: str | None  # "PASS", "FAIL", or None for a new assertion
    after: str | None  # None: the assertion is gone
    reason: str
    judge: str | None
    flip_rate: float | None

    @property
    def regressed(self) -> bool:
        return self.before == "PASS" and self.after == "FAIL"


@dataclass
class TestReview:
    """What changed for one test."""

    name: str
    outcome: tuple[str | None, str | None]
    changes: list[Change] = field(default_factory=list)
    verdicts: list[VerdictChange] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)  # cassettes it replaced, still on disk
    tokens: tuple[Usage | None, Usage | None] = (None, None)  # the whole test, before and after
    step_tokens: list[StepTokens] = field(default_factory=list)  # the steps whose usage changed

    @property
    def tokens_changed(self) -> bool:
        return self.tokens[0] != self.tokens[1]


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


def review(before: State, after: State, prices: Prices | None = None) -> Review:
    """Pair what the run after used with what it replaced, test by test."""
    used_before, used_after = before.used(), after.used()
    candidates = [k for k in sorted(used_before - used_after) if k in before.cassettes]
    owners = {k: name for name, test in before.tests().items() for k in before.trail(name, test)}
    tests: list[TestReview] = []
    unchanged, paired = 0, set[str]()
    for name, test in after.tests().items():
        found = _review_test(name, test, before, after, candidates, owners, used_before, paired)
        old_steps, new_steps = before.steps(name), after.steps(name)
        found.tokens = (usage(old_steps, prices), usage(new_steps, prices))
        found.step_tokens = step_tokens(old_steps, new_steps, prices)
        if found.changes or found.verdicts or found.tokens_changed:
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
) -> TestReview:
    old_test = before.tests().get(name, {})
    outcome = (old_test.get("outcome"), test.get("outcome"))
    found = TestReview(name, outcome)
    ignore = split_field_paths(test.get("ignore_fields") or ())
    old_trail = before.trail(name, old_test)
    for position, key in enumerate(after.trail(name, test), 1):
        new = after.cassettes.get(key)
        if new is None:
            continue
        if key in used_before and key in before.cassettes:
            answers = _answer_diff(before.cassettes[key], new)
            if answers:
                found.changes.append(
                    Change(position, _endpoint(new), key, key, "re-recorded", [], answers)
                )
            continue
        hint = old_trail[position - 1] if position <= len(old_trail) else None
        old_key = _pair(new, hint, name, before, candidates, owners, paired)
        old = before.cassettes.get(old_key) if old_key else None
        how = "new" if old is None else "replaced"
        request = _request_diff(old, new, ignore) if old is not None else []
        answers = _answer_diff(old, new) if old is not None else []
        found.changes.append(Change(position, _endpoint(new), old_key, key, how, request, answers))
        if old_key and old_key in after.cassettes:
            found.stale.append(old_key)
    if old_test:
        found.verdicts = verdict_changes(old_test, test, after)
    else:  # no run log before (often not committed): the verdict files tell
        found.verdicts = _verdicts_by_criterion(test, before, after)
    return found


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
    endpoint = _endpoint(new)
    free = [k for k in candidates if k not in paired and _endpoint(before.cassettes[k]) == endpoint]
    if hint in free:
        choice: str | None = hint
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


def _endpoint(cassette: dict[str, Any]) -> str:
    request = cassette.get("request") or {}
    parts = urlsplit(str(request.get("url", "")))
    return f"{request.get('method', '?')} {parts.scheme}://{parts.netloc}{parts.path}"


def _request_diff(old: dict[str, Any], new: dict[str, Any], ignore: Any) -> list[str]:
    before = _request_lines(old, ignore)
    after = _request_lines(new, ignore)
    return _unified(before, after, "before", "after")


def _request_lines(cassette: dict[str, Any], ignore: Any) -> list[str]:
    request = cassette["request"]
    body = request.get("body") or {}
    if isinstance(body, dict) and "json" in body and ignore:
        body = {"json": without_fields(body["json"], ignore)}
    return [f"{request.get('method')} {request.get('url')}", *render_body(body)]


def _answer_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    before = [line for r in old.get("responses") or () for line in answer_lines(r)]
    after = [line for r in new.get("responses") or () for line in answer_lines(r)]
    return _unified(before, after, "answer before", "answer after")


def answer_lines(response: Any) -> list[str]:
    """A recorded response as the lines a reviewer reads: its text and its tool calls."""
    if not isinstance(response, dict):
        return []
    body = response.get("body") or {}
    status = response.get("status")
    head = [] if status in (200, None) else [f"(status {status})"]
    # A body's modifiers (a JSON format, a stream's carries) do not change its text.
    kinds = [name for name in body if name not in MODIFIERS] if isinstance(body, dict) else []
    if len(kinds) != 1:
        return head
    kind, value = kinds[0], body[kinds[0]]
    if kind == "json":
        return head + _json_answer(value)
    if kind in ("sse", "ndjson") and isinstance(value, list):
        text = stream_text(kind, [str(chunk) for chunk in value])
        return head + (text.splitlines() if text else [])
    if kind == "text":
        return head + str(value).splitlines()
    return [*head, f"({kind} body)"]


def _json_answer(value: Any) -> list[str]:
    lines = []
    try:
        lines = extract_text(value).splitlines()
    except (TypeError, ValueError):
        lines = render_body({"json": value})
    try:
        calls = normalize_tool_calls(value)
    except (TypeError, ValueError):
        calls = []
    return lines + [f"tool call: {call}" for call in calls]


def _unified(before: list[str], after: list[str], a: str, b: str) -> list[str]:
    diff = list(difflib.unified_diff(before, after, a, b, lineterm="", n=1))
    diff = [scrub_text(line) for line in diff]
    if len(diff) > _MAX_DIFF_LINES:
        diff = [*diff[:_MAX_DIFF_LINES], f"... ({len(diff) - _MAX_DIFF_LINES} more diff lines)"]
    return diff


def verdict_changes(
    old_test: Mapping[str, Any], test: Mapping[str, Any], after: State | None = None
) -> list[VerdictChange]:
    """The judged assertions of a test whose verdict changed between two runs."""
    old = _assertions(old_test)
    new = _assertions(test)
    flips = _flip_rates(test, after) if after is not None else {}
    changes = []
    for key in dict.fromkeys([*old, *new]):
        was, now = old.get(key), new.get(key)
        if was is not None and now is not None and was["verdict"] == now["verdict"]:
            continue
        latest = now or was or {}
        changes.append(
            VerdictChange(
                kind=key[0],
                criterion=key[1],
                before=was["verdict"] if was else None,
                after=now["verdict"] if now else None,
                reason=scrub_text(str(latest.get("reason", ""))),
                judge=latest.get("judge"),
                flip_rate=flips.get(key[1]) if now else None,
            )
        )
    return changes


def _verdicts_by_criterion(
    test: dict[str, Any], before: State, after: State
) -> list[VerdictChange]:
    """The test's judged assertions against the old verdict files on the same criterion.

    With no run log from before (it is often not committed), an old verdict is
    a verdict file of the state before, by the same judge on the same criterion,
    that the run after no longer used: the grading of the text it replaced.
    """
    used = set((after.run or {}).get("verdicts_used") or ())
    changes = []
    for (kind, criterion, _n), item in _assertions(test).items():
        same = (criterion, item.get("judge"))
        mine = [
            k for k, v in before.verdicts.items() if (v.get("criterion"), v.get("judge")) == same
        ]
        if not mine or any(k in used for k in mine):
            continue  # never graded before, or graded on the same text: unchanged
        was = before.verdicts[sorted(mine)[0]].get("verdict")
        if was == item.get("verdict"):
            continue
        now = [
            v for k, v in after.verdicts.items() if k in used and v.get("criterion") == criterion
        ]
        changes.append(
            VerdictChange(
                kind=kind,
                criterion=criterion,
                before=str(was),
                after=str(item.get("verdict")),
                reason=scrub_text(str(item.get("reason", ""))),
                judge=item.get("judge"),
                flip_rate=now[0].get("flip_rate") if now else None,
            )
        )
    return changes


def _assertions(test: Mapping[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """A test's judged assertions by (kind, criterion, n-th of that pair)."""
    found: dict[tuple[str, str, int], dict[str, Any]] = {}
    seen: dict[tuple[str, str], int] = {}
    for item in test.get("assertions") or ():
        if not isinstance(item, dict) or not item.get("judge"):
            continue
        pair = (str(item.get("kind")), str(item.get("criterion")))
        seen[pair] = seen.get(pair, 0) + 1
        found[(*pair, seen[pair])] = item
    return found


def _flip_rates(test: Mapping[str, Any], state: State) -> dict[str, float]:
    rates = {}
    for entry in test.get("verdicts") or ():
        verdict = state.verdicts.get(str(entry.get("key"))) if isinstance(entry, dict) else None
        if isinstance(verdict, dict) and isinstance(verdict.get("flip_rate"), int | float):
            rates[str(verdict.get("criterion"))] = float(verdict["flip_rate"])
    return rates


# --- output --------------------------------------------------------------------------

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
    """One line: how many tests, requests and verdicts changed, and what is stale."""
    requests = sum(len(t.changes) for t in found.tests)
    verdicts = sum(len(t.verdicts) for t in found.tests)
    parts = [
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


def _text(found: Review) -> str:
    lines = [f"ghostrun review: {found.before} -> {found.after}", summary(found)]
    for test in found.tests:
        lines += ["", _test_head(test)]
        lines += ["  " + line for line in _token_lines(test)]
        for change in test.changes:
            lines.append("  " + _change_head(change))
            lines += ["    " + line for line in change.request_diff]
            lines += ["    " + line for line in change.answer_diff]
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
        tokens = _token_lines(test)
        if tokens:
            body += ["", "```", *tokens, "```"]
        for change in test.changes:
            body += ["", f"**{safe.inline(_change_head(change))}**", ""]
            if change.request_diff or change.answer_diff:
                body += safe.code_block([*change.request_diff, *change.answer_diff], "diff")
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
        "unchanged_tests": found.unchanged,
        "tests": [
            {
                "name": t.name,
                "outcome": {"before": t.outcome[0], "after": t.outcome[1]},
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
