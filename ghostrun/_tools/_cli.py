"""The ``ghostrun`` command (also ``python -m ghostrun``).

    ghostrun diff [BASE] [CANDIDATE]   what regressed, got fixed or drifted between two runs
    ghostrun check                      cassettes and verdicts the last run did not use; misses
    ghostrun prune                      delete what ``check`` reports as unused
    ghostrun show KEY|PATH              one cassette or verdict, readable
    ghostrun calibrate LABELS           how often the judge agrees with your labels
    ghostrun review [BEFORE] [AFTER]    what a prompt change did to requests, answers, verdicts
    ghostrun report [RUN]               a self-contained HTML page of a run
    ghostrun doctor                     each road's library: its version, hooked or why not
    ghostrun import PATH...             vcrpy and cassetter cassettes in, as if recorded here

Every command takes ``--cassette-dir`` (default: ``GHOSTRUN_CASSETTE_DIR``,
then ``.ghostrun_cache``). Exit status: 0 fine, 1 the finding the command
gates on (a regression; something stale or missed), 2 a usage error.

Output survives any console encoding (a Windows terminal's cp1252, ``ascii``):
JSON is ASCII-escaped there, so it stays valid JSON; text shows ASCII stand-ins
for ghostrun's own arrows and dots, and ``\\xe9``-style escapes for what else
the console cannot show.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._core import _safe_text as safe
from .._core._config import settings
from .._core._distribution import foreign_install
from .._core._exceptions import CacheMiss, CassetteError, JudgeUnavailable
from .._core._files import read_json, write_atomic
from .._core._modes import Mode
from .._core._project import ProjectConfigError
from .._core._version import __version__
from .._core._words import plural
from .._judging import _calibrate
from .._judging._judges import judge_from_spec
from .._recording import _runlog
from .._store import _inventory, _validate
from .._store._formats import RunLogFile
from . import _diff, _doctor, _import, _older, _report, _review, _show, _tokens

__all__ = ["main"]

_EPILOG = "Exit status: 0 fine, 1 a finding (see each command), 2 a usage error."


class _UsageError(Exception):
    """A mistake on the command line or a missing file: exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    _never_crash_on_encoding()
    warning = foreign_install()
    if warning:
        print(f"ghostrun: WARNING: {warning}", file=sys.stderr)
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.run(args))
    except (_UsageError, CassetteError, ProjectConfigError) as exc:
        print(f"ghostrun {args.command}: {exc}", file=sys.stderr)
        return 2


def _never_crash_on_encoding() -> None:
    """A console that cannot show a character shows ``\\xe9`` instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            with contextlib.suppress(ValueError):
                stream.reconfigure(errors="backslashreplace")


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--cassette-dir",
        metavar="DIR",
        type=Path,
        default=None,
        help="the cassette directory (default: GHOSTRUN_CASSETTE_DIR, then cassette_dir under "
        "[tool.ghostrun] in the nearest pyproject.toml, then .ghostrun_cache)",
    )
    parser = argparse.ArgumentParser(
        prog="ghostrun",
        description="Inspect ghostrun cassettes and compare test runs.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"ghostrun {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    diff = _command(
        commands,
        "diff",
        _run_diff,
        common,
        "compare two runs: regressions (PASS -> FAIL), fixes and output drift",
        "BASE and CANDIDATE are snapshot names (runs/NAME.json in the cassette directory) "
        "or paths to run files. Defaults: BASE is the most recent named snapshot, CANDIDATE "
        "the last run (_last). Save a snapshot with `pytest --ghostrun-snapshot NAME` or "
        "GHOSTRUN_SNAPSHOT=NAME. Exit status 1 when an assertion regressed.",
    )
    diff.add_argument(
        "base", nargs="?", metavar="BASE", help="the run before (default: latest snapshot)"
    )
    diff.add_argument(
        "candidate", nargs="?", metavar="CANDIDATE", help="the run after (default: _last)"
    )
    diff.add_argument(
        "--format",
        choices=_diff.FORMATS,
        default="text",
        help="text for a terminal, markdown for a pull-request comment, json for tools",
    )

    check = _command(
        commands,
        "check",
        _run_check,
        common,
        "list cassettes and verdicts the last run did not use, and requests that missed",
        "Reads runs/_last.json, so run the whole suite first (a partial run leaves the "
        "cassettes of the tests it skipped unused). Exit status 1 when anything is stale "
        "or missed.",
    )
    check.add_argument(
        "--older-than",
        metavar="AGE",
        help="instead, list the cassettes recorded more than AGE ago (90d, 12w, 6m; exit 1 if any)",
    )
    prune = _command(
        commands,
        "prune",
        _run_prune,
        common,
        "delete the cassettes and verdicts that `ghostrun check` reports as unused",
        "Shows the files, then asks before deleting them.",
    )
    prune.add_argument("--yes", "-y", action="store_true", help="delete without asking")
    prune.add_argument(
        "--force",
        action="store_true",
        help="prune even when the last run looks partial (narrowed, or fewer tests than before)",
    )

    show = _command(
        commands,
        "show",
        _run_show,
        common,
        "print one cassette or judge verdict readably (streams reassembled into text)",
        "KEY is a cassette key or verdict key (a unique prefix will do); PATH a file.",
    )
    show.add_argument("target", metavar="KEY|PATH")
    _calibrate_command(commands, common)
    _review_commands(commands, common)
    _command(
        commands,
        "doctor",
        lambda args: _doctor.run(args, _out),
        common,
        "show each road ghostrun intercepts: the library's version, hooked or why not",
        "Exit status 1 when an installed library lacks its hook (its calls to a provider "
        "raise UnsupportedLibrary). docs/roads.md lists the supported versions.",
    )
    _import.register(commands, common, _EPILOG)
    return parser


def _command(
    commands: Any,
    name: str,
    run: Callable[[argparse.Namespace], int],
    common: argparse.ArgumentParser,
    summary: str,
    details: str,
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(
        name, parents=[common], help=summary, description=f"{summary}. {details}", epilog=_EPILOG
    )
    parser.set_defaults(run=run)
    return parser


def _cassette_dir(args: argparse.Namespace) -> Path:
    directory: Path = args.cassette_dir or settings.resolve_cassette_dir()
    if not directory.is_dir():
        raise _UsageError(no_cassette_dir(directory))
    return directory


def no_cassette_dir(directory: Path) -> str:
    """Where ghostrun looked, and the three ways to point it at the project's cassettes."""
    return (
        f"no cassette directory at {directory.absolute()}: pass --cassette-dir DIR, set "
        "GHOSTRUN_CASSETTE_DIR, or say it once for the project in pyproject.toml:\n"
        '    [tool.ghostrun]\n    cassette_dir = "tests/cassettes"'
    )


# ghostrun's own typography, and what a console that cannot show it gets instead.
_ASCII_STAND_INS = str.maketrans({"\u2192": "->", "\u00b7": "-", "\u2026": "...", "\u2014": "--"})


def _out(text: str) -> None:
    """Text for a person: no control character from a cassette reaches the terminal."""
    text = safe.terminal(text)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _out_report(text: str) -> None:
    """A report in ghostrun's typography: ASCII arrows where the console has no others."""
    _out(text if _console_is_unicode() else text.translate(_ASCII_STAND_INS))


def _out_json(text: str) -> None:
    """JSON as is on a UTF-8 console, ASCII-escaped on any other (still valid JSON)."""
    if not _console_is_unicode():
        text = json.dumps(json.loads(text), indent=2, ensure_ascii=True) + "\n"
    sys.stdout.write(text)


def _console_is_unicode() -> bool:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        return codecs.lookup(encoding).name in ("utf-8", "utf-16", "utf-32")
    except LookupError:
        return False


# -- diff ------------------------------------------------------------------------------------


def _run_diff(args: argparse.Namespace) -> int:
    runs = _runlog.runs_dir(_cassette_dir(args))
    candidate_path = _run_path(runs, args.candidate or _runlog.LAST)
    candidate = _runlog.load_run(candidate_path)
    base_path = _run_path(runs, args.base) if args.base else _latest_snapshot(runs, candidate)
    base = _runlog.load_run(base_path)
    result = _diff.compare(base, candidate, _label(base_path), _label(candidate_path))
    (_out_json if args.format == "json" else _out_report)(_diff.render(result, args.format))
    return 1 if result.regressed else 0


def _run_path(runs: Path, name: str) -> Path:
    as_path = Path(name)
    if as_path.suffix == ".json" and as_path.is_file():
        return as_path
    path = runs / f"{name}.json"
    if path.is_file():
        return path
    known = ", ".join(sorted(p.stem for p in _run_files(runs))) or "none yet"
    raise _UsageError(
        f"no run named {name!r} (looked for {path}; runs saved: {known}). Run the tests to "
        "write _last, and save a snapshot with `pytest --ghostrun-snapshot NAME`."
    )


def _run_files(runs: Path) -> list[Path]:
    return [p for p in runs.glob("*.json") if not p.name.startswith(".")] if runs.is_dir() else []


def _latest_snapshot(runs: Path, candidate: RunLogFile) -> Path:
    """The most recent named snapshot that is not the candidate run itself."""
    snapshots = sorted(
        (p for p in _run_files(runs) if p.stem != _runlog.LAST),
        key=lambda p: (p.stat().st_mtime, p.name),
        reverse=True,
    )
    for path in snapshots:
        if _runlog.load_run(path).get("run_id") != candidate.get("run_id"):
            return path
    raise _UsageError(
        f"no snapshot to compare with in {runs}: save one with `pytest --ghostrun-snapshot "
        "NAME` (or GHOSTRUN_SNAPSHOT=NAME) before changing the prompt, or name both runs: "
        "ghostrun diff BASE CANDIDATE"
    )


def _label(path: Path) -> str:
    return path.stem if path.parent.name == "runs" else str(path)


# -- check and prune -------------------------------------------------------------------------


@dataclass
class _Unused:
    """What the last run left untouched in a cassette directory."""

    run: RunLogFile
    inventory: _inventory.Inventory
    cassettes: list[Path] = field(default_factory=list)
    verdicts: list[Path] = field(default_factory=list)
    verdicts_checked: bool = True

    @property
    def files(self) -> list[Path]:
        return self.cassettes + self.verdicts + self.inventory.leftovers


def _unused(directory: Path) -> _Unused:
    last = _runlog.runs_dir(directory) / f"{_runlog.LAST}.json"
    if not last.is_file():
        raise _UsageError(
            f"no run log at {last}: run the test suite first (in replay mode, e.g. "
            "`pytest --ghostrun-replay`), then check"
        )
    run = _runlog.load_run(last)
    found = _Unused(run, _inventory.take(directory))
    used = set(run.get("cassettes_used") or ()) | found.inventory.trajectory_keys
    found.cassettes = [p for p in found.inventory.cassettes if p.stem not in used]
    verdicts_used = run.get("verdicts_used")
    if verdicts_used is None:
        found.verdicts_checked = False
    else:
        found.verdicts = [p for p in found.inventory.verdicts if p.stem not in verdicts_used]
    return found


def _run_check(args: argparse.Namespace) -> int:
    directory = _cassette_dir(args)
    if args.older_than is not None:
        try:
            old, undated = _older.older_than(directory, args.older_than)
        except ValueError as exc:
            raise _UsageError(str(exc)) from None
        _out(_older.render(directory, args.older_than, old, undated))
        return 1 if old else 0
    found = _unused(directory)
    misses = found.run.get("misses") or []
    tests = len(found.run["tests"])
    finished = found.run.get("finished", "?")
    _out(f"ghostrun check: {directory} (last run {finished}, {plural(tests, 'test')})")
    _warn_partial(found.run)
    _list_unused(found, directory)
    if misses:
        _out(f"\n{plural(len(misses), 'miss', 'misses')} (requests or verdicts not recorded):")
        for miss in misses:
            _out(f"  {miss['test']}: {_first_line(miss['message'])}")
    if not found.verdicts_checked:
        _out("\nverdicts not checked: the last run did not report which judge verdicts it used")
    if found.files or misses:
        stale = f"{len(found.files)} stale"
        hint = "; `ghostrun prune` deletes the stale files" if found.files else ""
        _out(f"\nFAILED: {stale}, {len(misses)} missed{hint}")
        return 1
    _out("\nOK: every cassette and verdict was used, and nothing missed")
    return 0


def _warn_partial(run: RunLogFile) -> None:
    reasons = _inventory.partial_run(run)
    if reasons:
        _out(
            "\nwarning: the last run looks partial, so the cassettes and verdicts of the tests "
            "it did not run are listed as unused. Run the whole suite before pruning. Based on:"
        )
        for reason in reasons:
            _out(f"  {reason}")


def _list_unused(found: _Unused, directory: Path) -> None:
    if found.cassettes:
        _out(f"\n{plural(len(found.cassettes), 'stale cassette')} (the last run did not use):")
        for path in found.cassettes:
            _out(f"  {path.relative_to(directory)}  {_describe_cassette(path)}")
    if found.verdicts:
        _out(f"\n{plural(len(found.verdicts), 'stale verdict')} (the last run did not use):")
        for path in found.verdicts:
            _out(f"  {path.relative_to(directory)}  {_describe_verdict(path)}")
    leftovers = found.inventory.leftovers
    if leftovers:
        _out(
            f"\n{plural(len(leftovers), 'leftover file')} (temporary or lock files of "
            "writes that were interrupted):"
        )
        for path in leftovers:
            _out(f"  {path.relative_to(directory)}")
    if found.inventory.foreign:
        _out(
            f"\n{plural(len(found.inventory.foreign), 'file')} skipped (not named like a "
            "ghostrun cassette or verdict; never deleted):"
        )
        for path in found.inventory.foreign:
            _out(f"  {path.relative_to(directory)}")
    if found.inventory.links:
        _out(
            f"\n{plural(len(found.inventory.links), 'symbolic link')} skipped (ghostrun never "
            "follows or deletes a link inside a cassette directory; remove them yourself):"
        )
        for path in found.inventory.links:
            _out(f"  {path.relative_to(directory)}")


def _describe_cassette(path: Path) -> str:
    document: Mapping[str, Any] = _validate.load(path, "cassette") or {}
    if document.get("kind") == "websocket":  # a WebSocket cassette: its handshake URL
        conversations = document.get("conversations") or [{"handshake": {}}]
        return f"WEBSOCKET {conversations[0]['handshake'].get('url', '?')}"
    request = document.get("request") or {}
    return f"{request.get('method', '?')} {request.get('url', '?')}"


def _describe_verdict(path: Path) -> str:
    verdict: Mapping[str, Any] = _validate.load(path, "verdict") or {}
    criterion = str(verdict.get("criterion", "?"))
    return repr(_first_line(criterion)[:80])


def _run_prune(args: argparse.Namespace) -> int:
    directory = _cassette_dir(args)
    found = _unused(directory)
    _warn_partial(found.run)
    if _inventory.partial_run(found.run) and found.files and not args.force:
        _list_unused(found, directory)
        _out(
            "\nNothing deleted: the last run looks partial, so these files may belong to tests "
            "it did not run. Run the whole suite, then prune (or pass --force)."
        )
        return 1
    if not found.files:
        _list_unused(found, directory)
        _out("ghostrun prune: nothing to delete: the last run used every cassette and verdict")
        return 0
    _list_unused(found, directory)
    if not args.yes and not _confirm(f"\nDelete these {len(found.files)} files? [y/N] "):
        _out("Nothing deleted (pass --yes to delete without asking).")
        return 1
    deleted = 0
    for path in found.files:
        if path in found.inventory.leftovers:
            deleted += _inventory.remove(path)
        else:
            _validate.load(path, "verdict" if path in found.verdicts else "cassette")
            path.unlink(missing_ok=True)
            deleted += 1
    _out(f"Deleted {plural(deleted, 'file')}.")
    return 0


def _confirm(question: str) -> bool:
    sys.stdout.write(question)
    sys.stdout.flush()
    try:
        answer = input()
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


# -- show ------------------------------------------------------------------------------------


def _run_show(args: argparse.Namespace) -> int:
    path = _find(args.target, args)
    document = read_json(path)
    kind = _show.kind_of(path, document)
    if kind is None:
        raise _UsageError(f"{path} is neither a ghostrun cassette nor a judge verdict")
    newer = _validate.newer_version(document, kind)
    if newer is not None:
        print(
            f"ghostrun show: warning: {path} has {kind} format version {newer}, but this "
            f"ghostrun reads version {_validate.FORMAT_VERSIONS[kind]}; shown as raw JSON. "
            "Upgrade ghostrun to read it.",
            file=sys.stderr,
        )
        _out(_show.raw(document))
        return 0
    _out(_show.render_file(path, _validate.check(document, path, kind)))
    return 0


def _find(target: str, args: argparse.Namespace) -> Path:
    as_path = Path(target)
    if as_path.is_file():
        return as_path
    directory = _cassette_dir(args)
    key = target.removesuffix(".json")
    for folder in (directory, directory / "judge"):
        if (folder / f"{key}.json").is_file():
            return folder / f"{key}.json"
    matches = [p for f in (directory, directory / "judge") for p in _json_files(f)]
    matches = [p for p in matches if p.stem.startswith(key)] if key else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = ", ".join(str(p.relative_to(directory)) for p in matches[:5])
        raise _UsageError(f"{target!r} is ambiguous: {names}{', ...' if len(matches) > 5 else ''}")
    raise _UsageError(f"no cassette or verdict {target!r} in {directory}, and no such file")


def _json_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.glob("*.json") if not p.name.startswith("."))


# -- calibrate -------------------------------------------------------------------------------


def _calibrate_command(commands: Any, common: argparse.ArgumentParser) -> None:
    calibrate = _command(
        commands,
        "calibrate",
        _run_calibrate,
        common,
        "measure the judge against your labelled cases: accuracy, kappa, flip rate per vote count",
        "LABELS is a JSON Lines file of {text, criterion, kind?, expected: PASS|FAIL} cases. "
        "Gradings are cached under calibration/ in the cassette directory, like verdicts, so "
        "a second run sends nothing and replay works offline; the figures are kept there for "
        "the failure messages of judged assertions (configure(min_judge_kappa=...)). "
        "--from-verdicts DIR writes the cached verdicts of DIR as cases for you to label. "
        "Exit status 1 when a vote count falls short of --min-kappa.",
    )
    calibrate.add_argument("labels", nargs="?", metavar="LABELS", type=Path)
    calibrate.add_argument(
        "--judge",
        metavar="SPEC",
        help="ollama[:MODEL] (default), openai:MODEL with --judge-url, or package.module:name",
    )
    calibrate.add_argument("--judge-url", metavar="URL", help="the judge's server")
    calibrate.add_argument(
        "--votes", type=_vote_counts, default=(1,), help="vote counts to compare (1,3,5)"
    )
    calibrate.add_argument("--repeats", type=int, default=1, help="grade each case N times")
    calibrate.add_argument("--mode", choices=[m.value for m in Mode], help="auto, record, replay")
    calibrate.add_argument("--format", choices=_calibrate.FORMATS, default="table")
    calibrate.add_argument(
        "--no-negation", action="store_true", help="skip asking intent cases the opposite way"
    )
    calibrate.add_argument("--no-save", action="store_true", help="keep no figures on disk")
    calibrate.add_argument("--min-kappa", type=float, metavar="K", help="exit 1 below this")
    calibrate.add_argument(
        "--from-verdicts", metavar="DIR", type=Path, help="export cached verdicts to label"
    )
    calibrate.add_argument("--output", "-o", metavar="FILE", type=Path, help="write here")


def _vote_counts(text: str) -> tuple[int, ...]:
    try:
        counts = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        counts = ()
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"expected vote counts like 1,3,5, got {text!r}")
    return counts


def _run_calibrate(args: argparse.Namespace) -> int:
    if args.from_verdicts is not None:
        return _export_verdicts(args)
    if args.labels is None:
        raise _UsageError("give a labels file (LABELS), or --from-verdicts DIR to make one")
    directory: Path = args.cassette_dir or settings.resolve_cassette_dir()
    try:
        cases = _calibrate.load_cases(args.labels)
        judge = judge_from_spec(args.judge, args.judge_url)
        report = _calibrate.calibrate(
            cases,
            judge,
            cassette_dir=directory,
            votes=args.votes,
            repeats=args.repeats,
            mode=Mode(args.mode) if args.mode else None,
            negation=not args.no_negation,
            labels=args.labels.name,
        )
    except ValueError as exc:
        raise _UsageError(str(exc)) from None
    except (CacheMiss, JudgeUnavailable) as exc:
        print(f"ghostrun calibrate: {exc}", file=sys.stderr)
        return 2
    if not args.no_save:
        _calibrate.save(report, directory)
    _write(args.output, _calibrate.render(report, args.format))
    short = [r for r in report.results if not _meets(r.agreement.kappa, args.min_kappa)]
    return 1 if short else 0


def _meets(kappa: float | None, bar: float | None) -> bool:
    return bar is None or (kappa is not None and kappa >= bar)


def _export_verdicts(args: argparse.Namespace) -> int:
    try:
        rows = _calibrate.export_verdicts(args.from_verdicts)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None
    ascii_only = args.output is None  # a console may not show every character
    _write(args.output, "".join(json.dumps(r, ensure_ascii=ascii_only) + "\n" for r in rows))
    if args.output is not None:
        print(f"wrote {plural(len(rows), 'case')} to label to {args.output}", file=sys.stderr)
    return 0


def _write(path: Path | None, text: str) -> None:
    if path is None:
        _out(text)
    else:
        write_atomic(path, text.encode("utf-8"))


# -- review and report -----------------------------------------------------------------------


def _review_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    review = _command(
        commands,
        "review",
        _run_review,
        common,
        "what a prompt change did: the requests, answers and verdicts that changed, per test",
        "BEFORE and AFTER are git revisions or directories; BEFORE defaults to HEAD and AFTER "
        "to the cassette directory as it is now (run the tests, re-recording, first). With "
        "--runs they name two run snapshots of the cassette directory instead. Each new "
        "cassette is paired with the one it replaced, by test and endpoint, else by the "
        "closest body. Exit status 1 when a verdict went from PASS to FAIL.",
    )
    review.add_argument("before", nargs="?", metavar="BEFORE", help="default: HEAD")
    review.add_argument("after", nargs="?", metavar="AFTER", help="default: the directory now")
    review.add_argument("--runs", action="store_true", help="BEFORE and AFTER are run snapshots")
    review.add_argument(
        "--run", dest="run_name", default=_runlog.LAST, metavar="NAME", help="the run log to read"
    )
    review.add_argument("--format", choices=_review.FORMATS, default="text")
    review.add_argument("--prices", type=Path, metavar="FILE", help=_PRICES_HELP)

    report = _command(
        commands,
        "report",
        _run_report,
        common,
        "write one self-contained HTML page of a run: outcomes, trajectories, verdicts",
        "RUN is a snapshot name or a run file (default: the last run). With --base, the tests "
        "whose verdicts went from PASS to FAIL since that run come first. The page loads "
        "nothing from the network.",
    )
    report.add_argument("run_name", nargs="?", default=_runlog.LAST, metavar="RUN")
    report.add_argument("--base", metavar="RUN", help="the run to compare with")
    report.add_argument(
        "--output", "-o", type=Path, metavar="FILE", help="default: runs/report.html"
    )
    report.add_argument("--prices", type=Path, metavar="FILE", help=_PRICES_HELP)


def _run_review(args: argparse.Namespace) -> int:
    directory = _cassette_dir(args)
    try:
        if args.runs:
            if not (args.before and args.after):
                raise _UsageError("--runs compares two run snapshots: name BEFORE and AFTER")
            before = _review.state_from_dir(directory, args.before, f"run {args.before}")
            after = _review.state_from_dir(directory, args.after, f"run {args.after}")
        else:
            before = _review_state(args.before or "HEAD", directory, args.run_name)
            after = (
                _review_state(args.after, directory, args.run_name)
                if args.after
                else _review.state_from_dir(directory, args.run_name, "now")
            )
    except _review.ReviewError as exc:
        raise _UsageError(str(exc)) from None
    found = _review.review(before, after, _prices(args))
    _out(_review.render(found, args.format))
    return 1 if found.regressions else 0


_PRICES_HELP = (
    'your price table, a JSON file: {"MODEL": {"in": USD, "out": USD}, "*": {...}} in US '
    "dollars per million tokens; costs are shown beside the tokens (nothing is fetched)"
)


def _prices(args: argparse.Namespace) -> _tokens.Prices | None:
    if args.prices is None:
        return None
    try:
        return _tokens.load_prices(args.prices)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None


def _review_state(where: str, directory: Path, run: str) -> _review.State:
    """A directory on disk, or ``directory`` at a git revision."""
    if Path(where).is_dir():
        return _review.state_from_dir(Path(where), run)
    return _review.state_from_git(where, directory, run)


def _run_report(args: argparse.Namespace) -> int:
    directory = _cassette_dir(args)
    runs = _runlog.runs_dir(directory)
    run = _runlog.load_run(_run_path(runs, args.run_name))
    base = _runlog.load_run(_run_path(runs, args.base)) if args.base else None
    state = _review.state_from_dir(directory)
    output: Path = args.output or runs / "report.html"
    page = _report.render_report(run, state.cassettes, base, state.trajectories, _prices(args))
    root = None if args.output else directory  # runs/ may not be a link: refused
    write_atomic(output, page.encode("utf-8"), root=root)
    print(f"wrote {output}", file=sys.stderr)
    return 0


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""
