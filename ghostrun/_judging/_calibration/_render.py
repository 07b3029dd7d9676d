"""A calibration run shown: ``table`` (a terminal), ``markdown`` (a pull request), ``json``.

Only ASCII is emitted outside quoted texts, and JSON is ASCII-escaped, so
every console can show it. Markdown escapes what a reply or a reason holds,
so no tag in them renders as HTML.
"""

from __future__ import annotations

import html
import json
from typing import Any

from ..._core._words import plural
from ._against import Comparison
from ._cases import Case
from ._correction import Correction
from ._experiment import Report
from ._statistics import Grading, VoteResult, figures

__all__ = ["FORMATS", "render", "render_against"]

FORMATS = ("table", "markdown", "json")
_COLUMNS = ("votes", "accuracy", "kappa", "FAIL precision", "FAIL recall", "flip rate")


def render(report: Report, fmt: str) -> str:
    """The report in the format ``fmt`` (one of `FORMATS`)."""
    if fmt == "json":
        return json.dumps(_as_json(report), indent=2, ensure_ascii=True)
    if fmt == "markdown":
        return _markdown(report)
    if fmt == "table":
        return _table(report)
    raise ValueError(f"unknown format {fmt!r}: expected one of {FORMATS}")


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
                **figures(r),
                "more_votes": report.more_votes(r),
                "wrong": [_wrong_json(g) for g in r.wrong],
                **_correction_json(report, index),
            }
            for index, r in enumerate(report.results)
        ],
        "negation": {
            "checked": report.negations_checked,
            "unflipped": [
                {**_case_json(a.case), "verdict": _word(a), "opposite_verdict": _word(b)}
                for a, b in report.unflipped
            ],
        },
    }


def _correction_json(report: Report, index: int) -> dict[str, Any]:
    if index >= len(report.corrections):
        return {}
    c = report.corrections[index]
    return {
        "tpr": c.tpr,
        "tnr": c.tnr,
        "pass_rate": {
            "observed": c.observed,
            "of": report.observed_from,
            "n": c.observed_n,
            "corrected": c.corrected,
            "interval_95": list(c.interval) if c.interval else None,
        },
    }


def _correction_line(report: Report, index: int) -> str | None:
    """``at 1 vote: TPR 83.3%, TNR 75.0%; pass rate of 12 suite verdicts 66.7%, corrected
    72.1% (95% bootstrap 50.0% to 100.0%)``."""
    if index >= len(report.corrections):
        return None
    c: Correction = report.corrections[index]
    votes = _votes(report.results[index].votes)
    line = f"at {votes}: TPR {_pct(c.tpr)}, TNR {_pct(c.tnr)} (PASS the positive class)"
    if c.observed is None:
        return line
    line += f"; pass rate of {c.observed_n} {report.observed_from} {_pct(c.observed)}, corrected "
    if c.corrected is None:
        return line + "undefined (TPR + TNR <= 1: the judge is no better than chance)"
    shown = f"{c.interval[0]:.1%} to {c.interval[1]:.1%}" if c.interval else "none"
    return line + f"{_pct(c.corrected)} (95% bootstrap {shown})"


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
    corrections = [_correction_line(report, i) for i in range(len(report.results))]
    if any(corrections):
        lines += ["", "Judge-corrected pass rate (Rogan-Gladen):"]
        lines += [f"  {line}".replace("; pass", "\n    pass") for line in corrections if line]
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
    corrections = [_correction_line(report, i) for i in range(len(report.results))]
    if any(corrections):
        lines += ["", "Judge-corrected pass rate (Rogan-Gladen):", ""]
        lines += [f"- {_escape(line)}" for line in corrections if line]
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


# -- two judges (``--against``) -------------------------------------------------------------


def render_against(found: Comparison, fmt: str) -> str:
    """Two judges' agreement on the suite's criteria, in the format ``fmt``."""
    a = found.agreement
    if fmt == "json":
        return json.dumps(
            {
                "first": list(found.first),
                "second": found.second,
                "criteria": a.n,
                "agreement": a.accuracy,
                "kappa": a.kappa,
                "disagreements": [
                    {
                        "text": d.text,
                        "criterion": d.criterion,
                        "first": d.first,
                        "first_verdict": "PASS" if d.first_passed else "FAIL",
                        "second_verdict": "PASS" if d.second_passed else "FAIL",
                        "reason": d.reason,
                    }
                    for d in found.disagreements
                ],
            },
            indent=2,
            ensure_ascii=True,
        )
    criteria = plural(a.n, "cached criterion", "cached criteria")
    head = (
        f"{found.second} against {', '.join(found.first)} on {criteria}: "
        f"agree on {_pct(a.accuracy)}, kappa {_num(a.kappa)}; "
        f"{plural(len(found.disagreements), 'disagreement')}"
    )
    items = [
        (
            f"{d.first} said {'PASS' if d.first_passed else 'FAIL'}, {found.second} said "
            f"{'PASS' if d.second_passed else 'FAIL'} ({d.reason}): {d.criterion}",
            _short(d.text),
        )
        for d in found.disagreements
    ]
    if fmt == "markdown":
        lines = [f"**Judges compared:** {_escape(head)}.", ""]
        lines += [f"- {_escape(h)}<br>text: {_escape(t)}" for h, t in items]
        return "\n".join(lines) + "\n"
    lines = [f"ghostrun calibrate --against: {head}"]
    lines += [f"  {h}\n      text: {t}" for h, t in items]
    return "\n".join(lines) + "\n"
