"""Measuring the judge against a person's labels: ``ghostrun calibrate`` (DESIGN §5, §7).

A semantic assertion is only as trustworthy as its judge. A *labels file* is
JSON Lines, one case a line: what an assertion would ask, and the answer a
person gave::

    {"text": "Sorry for the wait!", "criterion": "apology", "kind": "intent", "expected": "PASS"}

``kind`` names the assertion (`KINDS`: ``intent``, ``no_intent``, ``tone``,
``grounded``, ``satisfies``, or the method names themselves); the judge is sent
the very words that assertion sends, so the figures describe the judge as the
tests use it. Without ``kind`` the criterion is sent as written.

Each case is graded at each vote count, ``repeats`` times (each repeat draws
with seeds of its own), through `_verdicts.grade`: the key rules and modes of
the assertions, so a second run sends nothing and ``replay`` works offline.
Gradings live under ``<cassette_dir>/calibration/judge/``, apart from the
tests' own verdicts (``check`` and ``prune`` never touch them), and each run's
figures are kept in ``<cassette_dir>/calibration/judges.json``: with
``configure(min_judge_kappa=...)`` or ``GHOSTRUN_MIN_JUDGE_KAPPA``, a judged
failure says so when its judge agreed with the labels less than that.

FAIL is the positive class of precision and recall: tests exist to catch failures.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .._core._config import settings
from .._core._exceptions import CassetteError
from .._core._files import dump_json, read_json, write_atomic
from .._core._modes import Mode
from .._core._words import plural
from ._criteria import JUDGED_KINDS, judge_criterion
from ._judges import RawVerdict
from ._verdicts import Verdict, current_cassette_dir, grade

__all__ = [
    "KINDS",
    "Agreement",
    "Case",
    "Grading",
    "Report",
    "VoteResult",
    "agreement",
    "calibrate",
    "export_verdicts",
    "failure_note",
    "load_cases",
    "render",
    "save",
]

KINDS = {
    "intent": "contains_intent",
    "no_intent": "does_not_contain_intent",
    "tone": "tone_is",
    "grounded": "is_grounded_in",
    **{name: name for name in JUDGED_KINDS},
}
"""The ``kind`` of a case: a short name or the assertion's method name."""

FORMATS = ("table", "markdown", "json")
SUMMARY_VERSION = 1
THRESHOLD_ENV = "GHOSTRUN_MIN_JUDGE_KAPPA"
_NEGATIONS = {
    "contains_intent": "does_not_contain_intent",
    "does_not_contain_intent": "contains_intent",
}
_REPEAT_SEEDS = 1000  # repeat r draws seeds r*1000 + 1..N: never another repeat's


# --- cases -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One labelled case: the assertion's argument, and the verdict a person expects."""

    line: int
    text: str
    argument: str  # the intent, tone, context or plain criterion, as the user wrote it
    kind: str  # an assertion's method name, or "" for a criterion sent as written
    expected: bool

    @property
    def criterion(self) -> str:
        """What the judge is sent, worded as the assertion words it."""
        return judge_criterion(self.kind, self.argument) if self.kind else self.argument

    @property
    def label(self) -> str:
        argument = " ".join(self.argument.split())
        shown = argument if len(argument) <= 60 else argument[:57] + "..."
        return f"{self.kind or 'criterion'}: {shown}"

    def negated(self) -> Case | None:
        """The same case asked the opposite way, where the assertion has an opposite."""
        other = _NEGATIONS.get(self.kind)
        return None if other is None else replace(self, kind=other, expected=not self.expected)


def load_cases(path: Path) -> list[Case]:
    """Every case of a labels file, or a ValueError naming the file, the line and the field."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read the labels file {path}: {exc}") from exc
    cases = [_case(path, n, line) for n, line in enumerate(lines, 1) if line.strip()]
    if not cases:
        raise ValueError(f"the labels file {path} has no cases (one JSON object a line)")
    return cases


def _case(path: Path, number: int, line: str) -> Case:
    where = f"{path}, line {number}"
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    text, argument = raw.get("text"), raw.get("criterion")
    for name, value in (("text", text), ("criterion", argument)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f'{where}: "{name}" must be a non-empty string, got {value!r}')
    kind = raw.get("kind") or ""
    if kind and kind not in KINDS:
        raise ValueError(f'{where}: unknown "kind" {kind!r}: expected one of {", ".join(KINDS)}')
    return Case(number, str(text), str(argument), KINDS.get(kind, ""), _expected(where, raw))


def _expected(where: str, raw: dict[str, Any]) -> bool:
    value = raw.get("expected")
    if value is None:
        raise ValueError(
            f'{where}: not labelled yet: set "expected" to "PASS" or "FAIL" '
            "(--from-verdicts leaves it empty for a person to fill in)"
        )
    word = value.strip().upper() if isinstance(value, str) else value
    if word not in ("PASS", "FAIL"):
        raise ValueError(f'{where}: "expected" must be "PASS" or "FAIL", got {value!r}')
    return word == "PASS"


# --- grading -----------------------------------------------------------------------------


class _Variant:
    """A judge at a chosen vote count; repeat r draws its own seeds, under its own keys."""

    def __init__(self, judge: Any, votes: int, repeat: int) -> None:
        self._judge, self.votes, self._repeat = judge, votes, repeat
        suffix = f" (repeat {repeat})" if repeat else ""
        self.identity = f"{judge.identity}{suffix}"
        self.setup_commands = getattr(judge, "setup_commands", ())

    def _seed(self, seed: int | None) -> int | None:
        return seed if not self._repeat else self._repeat * _REPEAT_SEEDS + (seed or 0)

    def judge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict:
        raw: RawVerdict = self._judge.judge(text, criterion, self._seed(seed), temperature)
        return raw

    async def ajudge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict:
        raw: RawVerdict = await self._judge.ajudge(text, criterion, self._seed(seed), temperature)
        return raw


@dataclass(frozen=True)
class Grading:
    """The judge's verdict on one case, at one vote count, in one repeat."""

    case: Case
    repeat: int
    verdict: Verdict

    @property
    def right(self) -> bool:
        return self.verdict.passed == self.case.expected


@dataclass(frozen=True)
class Agreement:
    """How a judge's verdicts compare with the labels (None where a figure is undefined)."""

    n: int
    accuracy: float
    fail_precision: float | None
    fail_recall: float | None
    kappa: float | None


def agreement(pairs: Iterable[tuple[bool, bool]]) -> Agreement:
    """Accuracy, FAIL precision and recall, and Cohen's kappa of ``(judged, expected)`` pairs.

    Both are ``passed`` booleans. Kappa is undefined (None) when chance alone
    would agree every time: both sides gave a single answer throughout.
    """
    pairs = list(pairs)
    n = len(pairs)
    if not n:
        raise ValueError("agreement needs at least one graded case")
    agree = sum(judged == expected for judged, expected in pairs)
    caught = sum(not judged and not expected for judged, expected in pairs)
    judged_fail = sum(not judged for judged, _ in pairs)
    labelled_fail = sum(not expected for _, expected in pairs)
    chance = (judged_fail * labelled_fail + (n - judged_fail) * (n - labelled_fail)) / n**2
    observed = agree / n
    return Agreement(
        n=n,
        accuracy=observed,
        fail_precision=caught / judged_fail if judged_fail else None,
        fail_recall=caught / labelled_fail if labelled_fail else None,
        kappa=(observed - chance) / (1 - chance) if chance < 1 else None,
    )


@dataclass(frozen=True)
class VoteResult:
    """The figures at one vote count, over every case and repeat."""

    votes: int
    agreement: Agreement
    flip_rate: float  # mean share of minority draws within a grading (0 with one vote)
    unstable: float | None  # share of cases whose verdict changed between repeats
    gradings: tuple[Grading, ...]

    @property
    def wrong(self) -> list[Grading]:
        return [g for g in self.gradings if not g.right]


def _vote_result(votes: int, gradings: Sequence[Grading], repeats: int) -> VoteResult:
    by_case: dict[int, set[bool]] = {}
    for g in gradings:
        by_case.setdefault(g.case.line, set()).add(g.verdict.passed)
    unstable = sum(len(v) > 1 for v in by_case.values()) / len(by_case) if repeats > 1 else None
    return VoteResult(
        votes=votes,
        agreement=agreement((g.verdict.passed, g.case.expected) for g in gradings),
        flip_rate=sum(g.verdict.flip_rate for g in gradings) / len(gradings),
        unstable=unstable,
        gradings=tuple(gradings),
    )


@dataclass(frozen=True)
class Report:
    """A calibration run: the figures per vote count, and the negation check."""

    labels: str
    judge: str
    cases: int
    repeats: int
    results: tuple[VoteResult, ...]
    negations_checked: int = 0
    unflipped: tuple[tuple[Grading, Grading], ...] = ()  # (asked, asked the opposite way)

    def more_votes(self, result: VoteResult) -> str:
        """Did this vote count agree with the labels better than the first one did?"""
        base = self.results[0]
        if result is base:
            return "baseline"
        ours, theirs = result.agreement, base.agreement
        if ours.kappa is not None and theirs.kappa is not None:
            delta = ours.kappa - theirs.kappa
        else:
            delta = ours.accuracy - theirs.accuracy
        return "helped" if delta > 1e-9 else "hurt" if delta < -1e-9 else "no change"


def calibrate(
    cases: Sequence[Case],
    judge: Any,
    *,
    cassette_dir: Path,
    votes: Sequence[int] = (1,),
    repeats: int = 1,
    mode: Mode | None = None,
    negation: bool = True,
    labels: str = "labels",
) -> Report:
    """Grade every case at every vote count, ``repeats`` times, and measure the agreement."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    if not votes:
        raise ValueError("votes needs at least one vote count")
    directory = Path(cassette_dir) / "calibration"

    def graded(case: Case, count: int, repeat: int) -> Grading:
        variant = _Variant(judge, count, repeat)
        verdict = grade(case.text, case.criterion, variant, mode=mode, cassette_dir=directory)
        return Grading(case, repeat, verdict)

    results = tuple(
        _vote_result(n, [graded(c, n, r) for c in cases for r in range(repeats)], repeats)
        for n in votes
    )
    checked: list[tuple[Grading, Grading]] = []
    if negation:
        first = {g.case.line: g for g in results[0].gradings if g.repeat == 0}
        for case in cases:
            opposite = case.negated()
            if opposite is not None:
                checked.append((first[case.line], graded(opposite, votes[0], 0)))
    unflipped = tuple(pair for pair in checked if pair[0].verdict.passed == pair[1].verdict.passed)
    return Report(
        labels, str(judge.identity), len(cases), repeats, results, len(checked), unflipped
    )


# --- the summary the assertions read -------------------------------------------------------


def summary_path(cassette_dir: Path) -> Path:
    return Path(cassette_dir) / "calibration" / "judges.json"


def save(report: Report, cassette_dir: Path) -> Path:
    """Keep this run's figures for the judge's failure messages; return the file written."""
    path = summary_path(cassette_dir)
    judges = _load_summary(path)
    entry = judges.setdefault(report.judge, {})
    for result in report.results:
        entry[str(result.votes)] = {
            "labels": report.labels,
            "cases": report.cases,
            "repeats": report.repeats,
            **_figures(result),
        }
    write_atomic(path, dump_json({"version": SUMMARY_VERSION, "judges": judges}))
    return path


def _load_summary(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    document = read_json(path)
    if document is None:
        return {}
    if not isinstance(document, dict) or document.get("version") != SUMMARY_VERSION:
        raise CassetteError(
            f"calibration summary {path} is not version {SUMMARY_VERSION} of the format: "
            "delete it and run `ghostrun calibrate` again"
        )
    judges = document.get("judges")
    if not isinstance(judges, dict) or not all(
        isinstance(v, dict) and all(isinstance(r, dict) for r in v.values())
        for v in judges.values()
    ):
        raise CassetteError(
            f'corrupt calibration summary {path}: "judges" must map each judge to '
            "{votes: figures}. Delete it and run `ghostrun calibrate` again."
        )
    return judges


def failure_note(identity: str, votes: int) -> str | None:
    """A line for a judged failure when its judge falls short of the user's kappa bar.

    None when no bar is set, or when the judge's recorded calibration meets it.
    """
    threshold = _threshold()
    if threshold is None:
        return None
    path = summary_path(current_cassette_dir())
    try:
        record = _load_summary(path).get(identity, {}).get(str(votes))
    except CassetteError as exc:
        return f"judge calibration: {exc}"
    if record is None:
        return (
            f"judge calibration: {identity} at {_votes(votes)} has no calibration in {path}, "
            f"and your bar is kappa {threshold:g}. Measure it: ghostrun calibrate LABELS"
        )
    kappa = record.get("kappa")
    if isinstance(kappa, int | float) and kappa >= threshold:
        return None
    shown = f"{kappa:.2f}" if isinstance(kappa, int | float) else "undefined"
    return (
        f"judge calibration: {identity} at {_votes(votes)} agreed with your labels at kappa "
        f"{shown} ({record.get('cases')} cases of {record.get('labels')}), below your bar of "
        f"{threshold:g}: this failure may be the judge's mistake, not a regression."
    )


def _threshold() -> float | None:
    """``GHOSTRUN_MIN_JUDGE_KAPPA`` (the per-run switch) beats ``configure(min_judge_kappa=)``."""
    env = os.environ.get(THRESHOLD_ENV, "").strip()
    if not env:
        return settings.resolve_min_judge_kappa()
    try:
        return float(env)
    except ValueError:
        raise ValueError(
            f"invalid {THRESHOLD_ENV}={env!r}: expected a number from -1 to 1"
        ) from None


# --- exporting verdicts for a person to label ---------------------------------------------


def export_verdicts(directory: Path) -> list[dict[str, Any]]:
    """The cached verdicts of ``directory`` (a cassette dir or its ``judge/``), unlabelled.

    Each keeps the judge's answer beside an empty ``expected``, for a person to fill in.
    """
    folder = Path(directory)
    if (folder / "judge").is_dir():
        folder = folder / "judge"
    if not folder.is_dir():
        raise ValueError(f"no verdict directory at {directory}")
    rows, seen = [], set()
    for path in sorted(folder.glob("*.json")):
        record = read_json(path)
        if not isinstance(record, dict) or not {"text", "criterion", "verdict"} <= record.keys():
            continue  # not a verdict file: nothing to label
        pair = (record["text"], record["criterion"])
        if pair in seen:
            continue
        seen.add(pair)
        rows.append(
            {
                "text": record["text"],
                "criterion": record["criterion"],
                "expected": None,
                "judge_said": record["verdict"],
                "judge_reason": record.get("reason", ""),
                "judge": record.get("judge", ""),
                "source": path.name,
            }
        )
    return rows


# --- output ------------------------------------------------------------------------------


def render(report: Report, fmt: str) -> str:
    """The report as ``table`` (a terminal), ``markdown`` (a pull request) or ``json``.

    Only ASCII is emitted outside quoted texts, and JSON is ASCII-escaped, so
    every console can show it.
    """
    if fmt == "json":
        return json.dumps(_as_json(report), indent=2, ensure_ascii=True)
    if fmt == "markdown":
        return _markdown(report)
    if fmt == "table":
        return _table(report)
    raise ValueError(f"unknown format {fmt!r}: expected one of {FORMATS}")


def _figures(result: VoteResult) -> dict[str, Any]:
    a = result.agreement
    return {
        "accuracy": a.accuracy,
        "kappa": a.kappa,
        "fail_precision": a.fail_precision,
        "fail_recall": a.fail_recall,
        "flip_rate": result.flip_rate,
        "unstable": result.unstable,
    }


def _as_json(report: Report) -> dict[str, Any]:
    return {
        "labels": report.labels,
        "judge": report.judge,
        "cases": report.cases,
        "repeats": report.repeats,
        "results": [
            {
                "votes": r.votes,
                "graded": r.agreement.n,
                **_figures(r),
                "more_votes": report.more_votes(r),
                "wrong": [_wrong_json(g) for g in r.wrong],
            }
            for r in report.results
        ],
        "negation": {
            "checked": report.negations_checked,
            "unflipped": [
                {**_case_json(a.case), "verdict": _word(a), "opposite_verdict": _word(b)}
                for a, b in report.unflipped
            ],
        },
    }


def _case_json(case: Case) -> dict[str, Any]:
    return {
        "line": case.line,
        "kind": case.kind or "criterion",
        "criterion": case.argument,
        "text": case.text,
    }


def _wrong_json(g: Grading) -> dict[str, Any]:
    return {
        **_case_json(g.case),
        "repeat": g.repeat,
        "expected": "PASS" if g.case.expected else "FAIL",
        "verdict": _word(g),
        "reason": g.verdict.reason,
    }


def _word(g: Grading) -> str:
    return "PASS" if g.verdict.passed else "FAIL"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _votes(n: int) -> str:
    return plural(n, "vote")


_COLUMNS = ("votes", "accuracy", "kappa", "FAIL precision", "FAIL recall", "flip rate")


def _rows(report: Report) -> list[list[str]]:
    rows = []
    for r in report.results:
        a = r.agreement
        row = [str(r.votes), _pct(a.accuracy), _num(a.kappa), _pct(a.fail_precision)]
        row += [_pct(a.fail_recall), _pct(r.flip_rate)]
        if report.repeats > 1:
            row.append(_pct(r.unstable))
        rows.append([*row, report.more_votes(r)])
    return rows


def _header(report: Report) -> list[str]:
    extra = ["unstable"] if report.repeats > 1 else []
    return [*_COLUMNS, *extra, "more votes"]


def _headline(report: Report) -> str:
    repeats = "" if report.repeats == 1 else f", {report.repeats} repeats each"
    return f"{report.judge} on {report.labels}: {report.cases} cases{repeats}"


def _table(report: Report) -> str:
    header, rows = _header(report), _rows(report)
    widths = [max(len(line[i]) for line in [header, *rows]) for i in range(len(header))]
    lines = [f"ghostrun calibrate: {_headline(report)}", ""]
    lines += [
        "  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True))
        for line in [header, *rows]
    ]
    for title, items in _findings(report):
        lines += ["", f"{title}{':' if items else '.'}"]
        lines += [f"  {head}\n      text: {text}" for head, text in items]
    return "\n".join(lines) + "\n"


def _markdown(report: Report) -> str:
    first = report.results[0]
    best = max(report.results, key=lambda r: (_kappa_or_floor(r), r.agreement.accuracy))
    summary = (
        f"**Judge calibration:** {report.judge} agrees with {report.labels} on "
        f"{_pct(first.agreement.accuracy)} of {report.cases} cases at {_votes(first.votes)} "
        f"(kappa {_num(first.agreement.kappa)})"
    )
    if best is not first:
        summary += f"; best at {_votes(best.votes)} (kappa {_num(best.agreement.kappa)})"
    header = _header(report)
    lines = [summary + ".", "", "| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" for _ in header) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in _rows(report)]
    for title, items in _findings(report):
        if not items:
            lines += ["", _escape(title) + "."]
            continue
        lines += ["", f"<details><summary>{_escape(title)}</summary>", ""]
        lines += [f"- {_escape(head)}<br>text: {_escape(text)}" for head, text in items]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    """Text shown as itself in Markdown: no tag in a reply or a reason renders as HTML."""
    return html.escape(text, quote=False).replace("|", "\\|")


def _kappa_or_floor(result: VoteResult) -> float:
    kappa = result.agreement.kappa
    return -2.0 if kappa is None else kappa


def _findings(report: Report) -> list[tuple[str, list[tuple[str, str]]]]:
    """The cases to look at: what the judge got wrong, and negations that did not flip."""
    found = []
    for r in report.results:
        if r.wrong:
            title = f"Wrong at {_votes(r.votes)} ({len(r.wrong)} of {r.agreement.n})"
            found.append((title, [(_wrong_head(g), _short(g.case.text)) for g in r.wrong]))
    if report.negations_checked:
        title = (
            f"Negation check: {len(report.unflipped)} of {report.negations_checked} intent "
            "cases got the same verdict when asked the opposite way"
        )
        items = [
            (f"line {a.case.line}: {a.case.label}: {_word(a)} both ways", _short(a.case.text))
            for a, _b in report.unflipped
        ]
        found.append((title, items))
    return found


def _wrong_head(g: Grading) -> str:
    repeat = f" (repeat {g.repeat})" if g.repeat else ""
    expected = "PASS" if g.case.expected else "FAIL"
    return (
        f"line {g.case.line}{repeat}: {g.case.label}: expected {expected}, "
        f"judge said {_word(g)}: {g.verdict.reason}"
    )


def _short(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return json.dumps(flat if len(flat) <= limit else flat[: limit - 3] + "...", ensure_ascii=False)
