"""``ghostrun compare --model CANDIDATE``: the suite on a candidate model, against the recording.

The suite is replayed once (the recording's outcomes and cached verdicts), then
run ``--repeat K`` times with the model replaced in every request, each run
live into its own branch ``compare-<candidate>-<k>`` (`_tools._branches`, a
fork plan from step 1), where every semantic assertion is graded by the judge
and every deterministic one runs. The figures and the verdict are
`_tools._candidate`'s; this module runs the suite and shows them.
"""

from __future__ import annotations

import argparse
import html
import json
import sys
from pathlib import Path

from ..._core import _safe_text as safe
from ..._recording import _runlog
from ..._recording._fork import ForkPlan
from .. import _tokens
from .._branches import BranchError, fresh_branch, run_pytest, run_replay
from .._candidate import Comparison, PerTest, Rate, compare_runs
from ._args import PRICES_HELP, Subparsers, UsageError, add_command, cassette_dir, prices
from ._console import out, out_json
from ._fork import model_override, safe_label

__all__ = ["FORMATS", "add_parser", "render", "run"]

FORMATS = ("text", "markdown", "json", "html")


def add_parser(subparsers: Subparsers) -> None:
    parser = add_command(
        subparsers,
        "compare",
        run,
        "the suite on a candidate model: pass rates with 95 percent intervals, outcomes, cost",
        "The suite is replayed once (the recording), then run --repeat K times live with the "
        "model of every request replaced (--model CANDIDATE, or OLD=NEW for OLD's requests "
        "only), each run into <cassette_dir>/branches/compare-<candidate>-<k>/, every judged "
        "assertion graded. A test, or the suite, is worse when the upper end of the "
        "candidate's 95% Wilson interval is below the recording's pass rate minus --threshold. "
        "Arguments after -- go to pytest. Exit status 1 when the suite or a test is worse.",
    )
    parser.add_argument("--model", required=True, metavar="CANDIDATE", help="or OLD=NEW")
    parser.add_argument("--repeat", type=int, default=3, metavar="K", help="runs (default 3)")
    parser.add_argument(
        "--threshold", type=float, default=0.0, metavar="X", help="tolerated drop (default 0)"
    )
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("--prices", type=Path, metavar="FILE", help=PRICES_HELP)
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="-- then pytest's own")


def run(args: argparse.Namespace) -> int:
    directory = cassette_dir(args)
    if args.repeat < 1 or not 0 <= args.threshold <= 1:
        raise UsageError("--repeat takes 1 or more runs, --threshold a rate from 0 to 1")
    model, models = model_override(args.model)
    table = prices(args)
    extra = ["-p", "no:cacheprovider", *(a for a in args.pytest_args if a != "--")]
    name = safe_label(args.model, "candidate", 60)
    print(f"ghostrun compare: replaying the recording in {directory}", file=sys.stderr)
    run_replay(extra, directory)
    recorded = _runlog.load_run(_runlog.runs_dir(directory) / f"{_runlog.LAST}.json")
    runs = []
    for k in range(1, args.repeat + 1):
        try:
            branch = fresh_branch(directory, f"compare-{name}-{k}")
        except BranchError as exc:
            raise UsageError(str(exc)) from None
        print(f"ghostrun compare: run {k} of {args.repeat} on {args.model}", file=sys.stderr)
        run_pytest(extra, ForkPlan(branch.absolute(), 1, model, models))
        last = _runlog.runs_dir(branch) / f"{_runlog.LAST}.json"
        runs.append((branch, dict(_runlog.load_run(last)) if last.is_file() else {}))
    found = compare_runs(args.model, directory, dict(recorded), runs, args.threshold, table)
    text = render(found, args.format)
    (out_json if args.format == "json" else _raw if args.format == "html" else out)(text)
    return 1 if found.worse else 0


def _raw(text: str) -> None:
    sys.stdout.write(text)


# -- what it shows -----------------------------------------------------------------------


def render(found: Comparison, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(_as_json(found), indent=2)
    if fmt == "markdown":
        return _markdown(found)
    if fmt == "html":
        return _html(found)
    return _text(found)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _rate(rate: Rate) -> str:
    low, high = rate.interval
    return f"{rate.passes}/{rate.runs} ({_pct(rate.rate)}, 95% CI {low:.1%} to {high:.1%})"


def _usage(found: _tokens.Usage | None) -> str:
    if found is None:
        return "-"
    cost = f" ${found.cost:.6f}" if found.cost is not None else ""
    return f"in {found.tokens_in} out {found.tokens_out}{cost}"


def _change(test: PerTest) -> str:
    was, runs = test.outcomes
    changed = [o for o in runs if o != was]
    nows = ", ".join(sorted({str(o) for o in changed}))
    return f"{was} -> {nows} in {len(changed)} of {len(runs)} runs"


def _verdict(found: Comparison) -> str:
    if not found.worse:
        return "OK: the candidate is not worse beyond the 95% interval"
    worse = [t.name for t in found.tests if t.worse]
    if found.suite_worse:
        worse.insert(0, "the suite")
    return f"WORSE: {', '.join(worse)}"


def _text(found: Comparison) -> str:
    lines = [
        f"ghostrun compare: {found.candidate} against the recording, {found.repeat} run(s), "
        f"threshold {found.threshold:g}",
        "",
    ]
    for test in found.tests:
        mark = "WORSE " if test.worse else ""
        lines.append(f"{mark}{test.name}")
        lines.append(f"  pass rate: recording {_rate(test.recording)}")
        lines.append(f"             candidate {_rate(test.candidate)}")
        lines.append(
            f"  tokens:    recording {_usage(test.usage[0])}; candidate per run "
            f"{_usage(test.usage[1])}"
        )
    lines += ["", f"overall: recording {_rate(found.recording)}"]
    lines.append(f"         candidate {_rate(found.overall)}")
    lines.append(
        f"tokens:  recording {_usage(found.usage[0])}; candidate per run {_usage(found.usage[1])}"
    )
    changed = [t for t in found.tests if t.changed]
    lines.append(f"changed outcome: {len(changed)}")
    lines += [f"  {t.name}: {_change(t)}" for t in changed]
    lines.append(_verdict(found))
    return "\n".join(safe.terminal(line) for line in lines) + "\n"


def _markdown(found: Comparison) -> str:
    lines = [
        f"### ghostrun compare: {safe.code(found.candidate)} against the recording",
        "",
        f"**{safe.inline(_verdict(found))}** ({found.repeat} runs, threshold {found.threshold:g})",
        "",
        "| test | recording | candidate | tokens (recording) | tokens (candidate, per run) |",
        "|---|---|---|---|---|",
    ]
    for test in found.tests:
        name = safe.cell(test.name, as_code=True) + (" **worse**" if test.worse else "")
        lines.append(
            f"| {name} | {safe.cell(_rate(test.recording))} | {safe.cell(_rate(test.candidate))} "
            f"| {safe.cell(_usage(test.usage[0]))} | {safe.cell(_usage(test.usage[1]))} |"
        )
    lines.append(
        f"| **overall** | {safe.cell(_rate(found.recording))} | {safe.cell(_rate(found.overall))}"
        f" | {safe.cell(_usage(found.usage[0]))} | {safe.cell(_usage(found.usage[1]))} |"
    )
    changed = [t for t in found.tests if t.changed]
    if changed:
        lines += ["", "Changed outcome:", ""]
        lines += [f"- {safe.code(t.name)}: {safe.inline(_change(t))}" for t in changed]
    return "\n".join(lines) + "\n"


def _as_json(found: Comparison) -> dict[str, object]:
    def usage(u: _tokens.Usage | None) -> object:
        return u.as_json() if u else None

    return {
        "candidate": found.candidate,
        "repeat": found.repeat,
        "threshold": found.threshold,
        "worse": found.worse,
        "suite_worse": found.suite_worse,
        "overall": {"recording": found.recording.as_json(), "candidate": found.overall.as_json()},
        "tokens": {"recording": usage(found.usage[0]), "candidate_per_run": usage(found.usage[1])},
        "tests": {
            t.name: {
                "worse": t.worse,
                "changed": t.changed,
                "outcomes": {"recording": t.outcomes[0], "candidate": list(t.outcomes[1])},
                "recording": t.recording.as_json(),
                "candidate": t.candidate.as_json(),
                "tokens": {"recording": usage(t.usage[0]), "candidate_per_run": usage(t.usage[1])},
            }
            for t in found.tests
        },
    }


def _html(found: Comparison) -> str:
    def e(text: str) -> str:
        return html.escape(text, quote=True)

    rows = "".join(
        f"<tr><td>{e(t.name)}{' <b>worse</b>' if t.worse else ''}</td>"
        f"<td>{e(_rate(t.recording))}</td><td>{e(_rate(t.candidate))}</td>"
        f"<td>{e(_usage(t.usage[0]))}</td><td>{e(_usage(t.usage[1]))}</td></tr>"
        for t in found.tests
    )
    title = f"ghostrun compare: {found.candidate} against the recording"
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{e(title)}</title></head><body><h1>{e(title)}</h1>"
        f"<p><b>{e(_verdict(found))}</b> ({found.repeat} runs)</p>"
        "<table><tr><th>test</th><th>recording</th><th>candidate</th>"
        "<th>tokens (recording)</th><th>tokens (candidate, per run)</th></tr>"
        f"{rows}<tr><td><b>overall</b></td><td>{e(_rate(found.recording))}</td>"
        f"<td>{e(_rate(found.overall))}</td><td>{e(_usage(found.usage[0]))}</td>"
        f"<td>{e(_usage(found.usage[1]))}</td></tr></table></body></html>\n"
    )
