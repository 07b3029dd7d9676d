"""``ghostrun calibrate LABELS``: how often the judge agrees with your labels.

The experiment and its figures are `_judging._calibration`'s; this module reads
the options, keeps the figures (unless ``--no-save``) and writes the report.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..._core._config import settings
from ..._core._exceptions import CacheMiss, JudgeUnavailable
from ..._core._modes import Mode
from ..._core._words import plural
from ..._judging._calibration import _against, _cases, _experiment, _export, _render, _summary
from ..._judging._judges import judge_from_spec
from ._args import Subparsers, UsageError, add_command
from ._console import write

__all__ = ["add_parser", "run"]


def add_parser(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "calibrate",
        run,
        "measure the judge against your labelled cases: accuracy, kappa, flip rate per vote count",
        "LABELS is a JSON Lines file of {text, criterion, kind?, expected: PASS|FAIL} cases. "
        "Gradings are cached under calibration/ in the cassette directory, like verdicts, so "
        "a second run sends nothing and replay works offline; the figures are kept there for "
        "the failure messages of judged assertions (configure(min_judge_kappa=...)). "
        "--from-verdicts DIR writes the cached verdicts of DIR as cases for you to label. "
        "Each vote count also shows the judge's TPR and TNR (PASS the positive class) and "
        "the pass rate of the suite's cached verdicts corrected for them (Rogan-Gladen, "
        "with a seeded bootstrap 95% interval). --against JUDGE grades every cached verdict "
        "with a second judge instead and reports their agreement (Cohen's kappa) and each "
        "disagreement. Exit status 1 when a vote count (or the two judges) falls short of "
        "--min-kappa.",
    )
    parser.add_argument("labels", nargs="?", metavar="LABELS", type=Path)
    parser.add_argument(
        "--judge",
        metavar="SPEC",
        help="ollama[:MODEL] (default), openai:MODEL with --judge-url, or package.module:name",
    )
    parser.add_argument("--judge-url", metavar="URL", help="the judge's server")
    parser.add_argument(
        "--votes", type=_vote_counts, default=(1,), help="vote counts to compare (1,3,5)"
    )
    parser.add_argument("--repeats", type=int, default=1, help="grade each case N times")
    parser.add_argument("--mode", choices=[m.value for m in Mode], help="auto, record, replay")
    parser.add_argument("--format", choices=_render.FORMATS, default="table")
    parser.add_argument(
        "--no-negation", action="store_true", help="skip asking intent cases the opposite way"
    )
    parser.add_argument("--no-save", action="store_true", help="keep no figures on disk")
    parser.add_argument("--min-kappa", type=float, metavar="K", help="exit 1 below this")
    parser.add_argument(
        "--from-verdicts", metavar="DIR", type=Path, help="export cached verdicts to label"
    )
    parser.add_argument("--output", "-o", metavar="FILE", type=Path, help="write here")
    parser.add_argument(
        "--against",
        metavar="SPEC",
        help="a second judge (as --judge) to grade the cached verdicts with; --judge then "
        "names the first judge's verdicts to take (default: every judge's)",
    )
    parser.add_argument("--against-url", metavar="URL", help="the second judge's server")


def _vote_counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        counts = ()
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"expected vote counts like 1,3,5, got {text!r}")
    return counts


def run(args: argparse.Namespace) -> int:
    if args.from_verdicts is not None:
        return _export_verdicts(args)
    if args.against is not None:
        return _against_judge(args)
    if args.labels is None:
        raise UsageError("give a labels file (LABELS), or --from-verdicts DIR to make one")
    directory: Path = args.cassette_dir or settings.resolve_cassette_dir()
    try:
        cases = _cases.load_cases(args.labels)
        judge = judge_from_spec(args.judge, args.judge_url, data_dirs=(directory,))
        observed = _suite_verdicts(directory, str(judge.identity))
        report = _experiment.calibrate(
            cases,
            judge,
            cassette_dir=directory,
            votes=args.votes,
            repeats=args.repeats,
            mode=Mode(args.mode) if args.mode else None,
            negation=not args.no_negation,
            labels=args.labels.name,
            observed=observed,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except (CacheMiss, JudgeUnavailable) as exc:
        print(f"ghostrun calibrate: {exc}", file=sys.stderr)
        return 2
    if not args.no_save:
        _summary.save(report, directory)
    write(args.output, _render.render(report, args.format))
    short = [r for r in report.results if not _meets(r.agreement.kappa, args.min_kappa)]
    return 1 if short else 0


def _meets(kappa: float | None, bar: float | None) -> bool:
    return bar is None or (kappa is not None and kappa >= bar)


def _export_verdicts(args: argparse.Namespace) -> int:
    try:
        rows = _export.export_verdicts(args.from_verdicts)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    ascii_only = args.output is None  # a console may not show every character
    write(args.output, "".join(json.dumps(r, ensure_ascii=ascii_only) + "\n" for r in rows))
    if args.output is not None:
        print(f"wrote {plural(len(rows), 'case')} to label to {args.output}", file=sys.stderr)
    return 0


def _suite_verdicts(directory: Path, identity: str) -> list[bool]:
    """Whether each cached verdict of the suite by ``identity`` passed (none: no verdicts)."""
    try:
        records = _export.cached_verdicts(directory)
    except ValueError:
        return []
    return [r["verdict"] == "PASS" for _, r in records if r.get("judge") == identity]


def _against_judge(args: argparse.Namespace) -> int:
    """``--against JUDGE``: the cached verdicts graded again by a second judge."""
    directory: Path = args.cassette_dir or settings.resolve_cassette_dir()
    try:
        second = judge_from_spec(args.against, args.against_url)
        first = str(judge_from_spec(args.judge, args.judge_url).identity) if args.judge else None
        found = _against.compare_judges(
            directory, second, first=first, mode=Mode(args.mode) if args.mode else None
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except (CacheMiss, JudgeUnavailable) as exc:
        print(f"ghostrun calibrate: {exc}", file=sys.stderr)
        return 2
    write(args.output, _render.render_against(found, args.format))
    return 0 if _meets(found.agreement.kappa, args.min_kappa) else 1
