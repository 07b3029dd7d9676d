"""The run log (DESIGN §7): what each test produced and how it was judged.

While tests run, every assertion outcome, every session's cassette use and
misses, every judge verdict used and every test outcome a framework reports
are collected in memory, per cassette directory. At the end of the run each
directory gets one readable JSON file, ``<cassette_dir>/runs/_last.json``, and
``runs/<NAME>.json`` as well when a snapshot name is given
(``pytest --ghostrun-snapshot NAME`` or ``GHOSTRUN_SNAPSHOT=NAME``). The pytest
plugin writes at session finish (under pytest-xdist the controller writes one
complete run from every worker's part); anywhere else (unittest, plain
scripts) an ``atexit`` hook does. A process that never touched ghostrun
writes nothing.

The file::

    {
      "version": 1,
      "name": "_last" | "<snapshot name>",
      "run_id": "<unique per run: a snapshot and _last written together share it>",
      "finished": "2026-01-01T12:00:00Z",
      "tests": {
        "<test name (pytest node id, unittest id, or the script's name)>": {
          "outcome": "passed" | "failed" | "error" | "skipped" | "xfailed" | null,
          "failure": "<a failed test's message, its first lines>",  (only when it failed)
          "outputs": ["<each distinct text asserted on, in order>"],
          "assertions": [
            {"kind": "contains_intent", "criterion": "<what was checked>",
             "verdict": "PASS" | "FAIL", "reason": "...",
             "judge": "<judge identity>" | null, "output": <index in outputs>}
          ],
          "requests": {"replayed": 0, "recorded": 0, "misses": 0},
          "cassettes": [{"key": "<cassette key>",
                         "how": "replayed" | "recorded" | "rebased" | "missed"}],
          "verdicts": [{"key": "<verdict key>", "how": "cached" | "graded" | "missed"}],
          "ignore_fields": ["<the sessions' ignore_fields>", ...],
          "normalize": ["<the sessions' normalize: a built-in's name, or a regex>", ...]
        }
      },
      "cassettes_used": ["<cassette key>", ...],
      "verdicts_used": ["<verdict key>", ...] | null,
      "misses": [{"test": "<test name>", "message": "<the CacheMiss message>"}],
      "selection": {"limited_by": ["-k 'refund'", "--lf", "test paths: tests/test_a.py"]},
      "previous": {"tests": 40, "finished": "..."}
    }

``selection.limited_by`` says how the run was narrowed (the pytest plugin
fills it in; empty for a whole run) and ``previous`` how many tests the run
before it ran (``_last.json`` only; absent for a first run): ``ghostrun check``
and ``prune`` warn when the run looks partial, since the cassettes of tests
that did not run look unused. Every file is validated when read
(`ghostrun._store._validate`).

``cassettes`` and ``verdicts`` are each test's requests and gradings in the
order they were made (``ghostrun review`` and ``report`` read them); run logs
written before they existed load as if both were empty.

``verdicts_used`` is ``null`` when the run graded with a judge but did not
report which verdict files it read: ``ghostrun check`` then leaves verdicts
alone rather than calling them all stale.
"""

from __future__ import annotations

import atexit
import os
import re
import sys
import threading
import uuid
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, TypedDict

import orjson

from .._core._config import resolve_mode, settings
from .._core._exceptions import CassetteError
from .._core._files import dump_json, write_atomic
from .._core._modes import Mode
from .._core._normalize import BUILTINS
from .._secrets._scrub import scrub_text
from .._store import _validate
from .._store._formats import (
    AssertionRecord,
    MissRecord,
    RunLogEntry,
    RunLogFile,
    SelectionRecord,
    UsedRecord,
)
from ._deck import Deck, current_test_id
from ._session import current_deck
from ._settings import script_name

__all__ = [
    "LAST",
    "OUTCOMES",
    "PROCESS",
    "RUN_FORMAT_VERSION",
    "ProcessRun",
    "RunLog",
    "Where",
    "check_snapshot_name",
    "load_run",
    "record_assertion",
    "run_limited_by",
    "runs_dir",
    "session_closed",
    "snapshot_from_env",
    "test_outcome",
    "verdict_in_test",
    "verdict_used",
    "write_run",
]

RUN_FORMAT_VERSION = _validate.FORMAT_VERSIONS["run log"]
LAST = "_last"
RUN_ID_ENV = "GHOSTRUN_RUN_ID"
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed")
_FAILURE_LINES = 5  # of a failed test's message: what a review shows beside the outcome
SNAPSHOT_ENV = "GHOSTRUN_SNAPSHOT"
_SNAPSHOT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class Where(NamedTuple):
    """Whose an outcome is: the test's name in the log, its id if a framework knows it
    (an alias when a session's ``name`` differs), and the cassette directory."""

    test: str
    alias: str | None
    cassette_dir: Path


class _TestLog(TypedDict):
    """A test while the run collects: its `RunLogEntry` to be, and the names it goes by."""

    outputs: list[str]
    assertions: list[AssertionRecord]
    requests: dict[str, int]
    cassettes: list[UsedRecord]
    verdicts: list[UsedRecord]
    ignore_fields: list[str]
    normalize: list[str]
    aliases: list[str]


class _DirLog(TypedDict):
    """One cassette directory's part of the run while it collects (`RunLog.export` sends
    it with its sets as sorted lists)."""

    tests: dict[str, _TestLog]
    cassettes_used: set[str]
    verdicts_used: set[str]
    judged: bool
    misses: list[MissRecord]
    replay: bool | None  # True: only replay used it, so a missing one is not made


def runs_dir(cassette_dir: Path) -> Path:
    return Path(cassette_dir) / "runs"


def check_snapshot_name(name: str) -> str:
    """A snapshot name usable as a file name, or a ValueError saying what is allowed."""
    if not _SNAPSHOT_NAME.fullmatch(name) or name.endswith(".json"):
        raise ValueError(
            f"invalid snapshot name {name!r}: use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit (e.g. 'baseline' or 'gpt-4o-2026-01')"
        )
    return name


class RunLog:
    """What one run saw, per cassette directory; thread-safe, JSON-ready.

    The state is plain JSON values (sets aside), so a worker process can hand
    it to the process that writes the run (`export` / `merge`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._dirs: dict[str, _DirLog] = {}
        self._outcomes: dict[str, str] = {}
        self._failures: dict[str, str] = {}  # a failed test's message (`outcome`)
        # Semantic checks skipped for want of a judge, and how to enable one (`skip_line`).
        self.judge_skips: int = 0
        self.enable_judge: str = ""
        self.limited_by: list[str] = []  # how the run was narrowed (-k, --lf, paths), if it was
        self._seen: weakref.WeakKeyDictionary[Deck, tuple[int, int, int, int]] = (
            weakref.WeakKeyDictionary()
        )
        # What sessions that did nothing brought, once in (`session`): (directory with its
        # separator, test, alias, mode, ignore_fields, normalizer).
        self._quiet: set[tuple[Any, ...]] = set()

    def __bool__(self) -> bool:
        return bool(self._dirs)

    # -- collecting ----------------------------------------------------------------------

    def assertion(
        self,
        where: Where,
        *,
        kind: str,
        criterion: str,
        text: str,
        passed: bool,
        reason: str,
        judge: str | None,
    ) -> None:
        with self._lock:
            log = self._dir(where.cassette_dir)
            test = _test(log, where.test, where.alias)
            outputs = test["outputs"]
            if text not in outputs:
                outputs.append(text)
            test["assertions"].append(
                {
                    "kind": kind,
                    "criterion": criterion,
                    "verdict": "PASS" if passed else "FAIL",
                    "reason": reason,
                    "judge": judge,
                    "output": outputs.index(text),
                }
            )
            log["judged"] = log["judged"] or judge is not None

    def session(self, deck: Deck, where: Where) -> None:
        """Count what a session did since it was last seen (a session may be re-entered).

        A session that did nothing (no request, no miss) adds nothing but its test's
        entry, its ``ignore_fields`` and ``normalize``: once these are in, another such
        session of the same shape is nothing to add (`_quiet`, until the log is cleared).
        """
        name, alias, directory = where
        settings = deck.settings
        if deck.idle:  # nothing to count: its test's entry, its ignore_fields and normalize
            ignored, shapes = deck.arguments.ignore_fields, settings.normalizer
            quiet = (settings.prefix, name, alias, settings.mode, ignored, shapes)
            if quiet in self._quiet:
                return
            with self._lock:
                log = self._dir(directory)
                log["replay"] = _only_replay(log["replay"], settings.mode is Mode.REPLAY)
                test = _test(log, name, alias)
                _add_new(test["ignore_fields"], ignored)
                if shapes is not None:
                    _add_new(test["normalize"], _shapes(deck))
                if directory in _absolute:
                    if len(self._quiet) >= _QUIET:  # a long run's older shapes: seen again
                        self._quiet.clear()
                    self._quiet.add(quiet)
            return
        with self._lock:
            replayed, recorded, missed, trailed = self._seen.get(deck, (0, 0, 0, 0))
            now = (deck.replayed, deck.recorded, len(deck.misses), len(deck.trail))
            self._seen[deck] = now
            log = self._dir(directory)
            log["replay"] = _only_replay(log["replay"], deck.mode is Mode.REPLAY)
            test = _test(log, name, alias)
            counts = test["requests"]
            counts["replayed"] += deck.replayed - replayed
            counts["recorded"] += deck.recorded - recorded
            counts["misses"] += len(deck.misses) - missed
            test["cassettes"] += [{"key": k, "how": h} for k, h in deck.trail[trailed:]]
            _add_new(test["ignore_fields"], deck.arguments.ignore_fields)
            _add_new(test["normalize"], _shapes(deck))
            log["cassettes_used"].update(deck.used_keys)
            for miss in deck.misses[missed:]:
                log["misses"].append({"test": name, "message": _scrub(str(miss), deck)})

    def verdict(self, key: str, directory: Path) -> None:
        with self._lock:
            self._dir(directory)["verdicts_used"].add(key)

    def verdict_in_test(self, key: str, directory: Path, how: str, where: Where) -> None:
        """``where``: the test (its cassette directory aside: ``directory`` holds the verdict)."""
        with self._lock:
            test = _test(self._dir(directory), where.test, where.alias)
            test["verdicts"].append({"key": key, "how": how})

    def mode_seen(self, directory: Path, mode: Mode) -> None:
        """Something in ``mode`` used this directory outside any session."""
        with self._lock:
            log = self._dir(directory)
            log["replay"] = _only_replay(log["replay"], mode is Mode.REPLAY)

    def outcome(self, name: str, outcome: str, failure: str | None = None) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"invalid test outcome {outcome!r}: expected one of {OUTCOMES}")
        with self._lock:
            self._outcomes[name] = outcome
            if failure:
                lines = scrub_text(failure).strip().splitlines()[:_FAILURE_LINES]
                self._failures[name] = "\n".join(lines)
            else:
                self._failures.pop(name, None)

    def judge_skipped(self, enable: str) -> None:
        with self._lock:
            self.judge_skips += 1
            self.enable_judge = self.enable_judge or enable

    def skip_line(self) -> str | None:
        """The run's closing line when semantic checks were skipped: nothing else shows that
        a suite has no semantic coverage but a count of skips among the others."""
        if not self.judge_skips:
            return None
        checks = "semantic check" + ("s" if self.judge_skips != 1 else "")
        return f"ghostrun: {self.judge_skips} {checks} skipped: no judge. {self.enable_judge}"

    def _dir(self, directory: Path) -> _DirLog:
        key = _absolute.get(directory)  # every session closing asks: the same few directories
        if key is None:
            path = Path(directory)
            key = str(path.absolute())
            if path.is_absolute():  # a relative one: as cwd is now
                if len(_absolute) >= 256:  # a run of many directories (a temporary one a test)
                    _absolute.clear()
                _absolute[directory] = key
        log = self._dirs.get(key)
        if log is None:
            log = self._dirs[key] = {
                "tests": {},
                "cassettes_used": set(),
                "verdicts_used": set(),
                "judged": False,
                "misses": [],
                "replay": None,
            }
        return log

    # -- handing over and writing -------------------------------------------------------

    def export(self) -> str:
        """The whole state as a JSON string (what an xdist worker sends)."""
        with self._lock:
            dirs = {
                path: {
                    **log,
                    "cassettes_used": sorted(log["cassettes_used"]),
                    "verdicts_used": sorted(log["verdicts_used"]),
                }
                for path, log in self._dirs.items()
            }
            state = {
                "dirs": dirs,
                "outcomes": self._outcomes,
                "failures": self._failures,
                "judge_skips": [self.judge_skips, self.enable_judge],
            }
            return orjson.dumps(state).decode()

    def merge(self, exported: str) -> None:
        """Add another process's `export` to this run."""
        state = orjson.loads(exported)
        with self._lock:
            self._outcomes.update(state["outcomes"])
            self._failures.update(state.get("failures") or {})
            skips, enable = state.get("judge_skips") or (0, "")
            self.judge_skips += skips
            self.enable_judge = self.enable_judge or enable
            for path, part in state["dirs"].items():
                log = self._dir(Path(path))
                for name, theirs in part["tests"].items():
                    ours = _test(log, name, None)
                    _merge_test(ours, theirs)
                log["cassettes_used"].update(part["cassettes_used"])
                log["verdicts_used"].update(part["verdicts_used"])
                log["judged"] = log["judged"] or part["judged"]
                log["misses"].extend(part["misses"])
                if part.get("replay") is not None:
                    log["replay"] = _only_replay(log["replay"], part["replay"])

    def documents(self, name: str = LAST) -> dict[Path, RunLogFile]:
        """The run file of each cassette directory, as written under ``runs/``."""
        finished = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        run_id = os.environ.get(RUN_ID_ENV) or uuid.uuid4().hex
        with self._lock:
            return {
                Path(path): self._document(log, name, run_id, finished)
                for path, log in self._dirs.items()
            }

    def _document(self, log: _DirLog, name: str, run_id: str, finished: str) -> RunLogFile:
        tests: dict[str, RunLogEntry] = {}
        for test_name, test in log["tests"].items():
            outcome = self._outcomes.get(test_name)
            failure = self._failures.get(test_name)
            for alias in test["aliases"]:
                outcome = outcome or self._outcomes.get(alias)
                failure = failure or self._failures.get(alias)
            tests[test_name] = {
                "outcome": outcome,
                "outputs": test["outputs"],
                "assertions": test["assertions"],
                "requests": test["requests"],
                "cassettes": test["cassettes"],
                "verdicts": test["verdicts"],
                "ignore_fields": test["ignore_fields"],
            }
            if test["normalize"]:  # what review leaves out of its diffs, as the key did
                tests[test_name]["normalize"] = test["normalize"]
            if failure and outcome in ("failed", "error"):
                tests[test_name]["failure"] = failure
        untracked = log["judged"] and not log["verdicts_used"]
        return {
            "version": RUN_FORMAT_VERSION,
            "name": name,
            "run_id": run_id,
            "finished": finished,
            "tests": tests,
            "cassettes_used": sorted(log["cassettes_used"]),
            "verdicts_used": None if untracked else sorted(log["verdicts_used"]),
            "misses": log["misses"],
            "selection": {"limited_by": list(self.limited_by)},
        }

    def write(self, snapshot: str | None = None) -> tuple[list[Path], list[CassetteError]]:
        """Write ``runs/_last.json`` (and the snapshot) in every directory.

        Returns the paths written and the errors of directories that could not
        be written (one unwritable directory does not cost the others their log).
        A cassette directory that does not exist and that only ``replay`` used
        is left alone: replay never creates a directory.
        """
        written, errors = [], []
        names = [LAST] if snapshot is None else [LAST, snapshot]
        with self._lock:
            replay_only = {Path(p) for p, log in self._dirs.items() if log["replay"]}
        for directory, document in self.documents().items():
            if directory in replay_only and not directory.is_dir():
                continue
            for name in names:
                path = runs_dir(directory) / f"{name}.json"
                try:
                    document = _joined(document, path)
                    if name == LAST:
                        document = _with_previous(document, path)
                    write_atomic(path, dump_json({**document, "name": name}), root=directory)
                except CassetteError as exc:
                    errors.append(exc)
                    break
                written.append(path)
        return written, errors

    def clear(self) -> None:
        with self._lock:
            self._quiet.clear()
            self._dirs.clear()
            self._outcomes.clear()
            self.limited_by = []


def _only_replay(seen: bool | None, replay: bool) -> bool:
    """Whether every mode seen so far in a directory was replay."""
    return replay if seen is None else seen and replay


def _joined(document: RunLogFile, path: Path) -> RunLogFile:
    """Fold in the file's earlier part of the same run (processes run one after another).

    A run that spans several processes (unittest, then pytest, then a script)
    shares ``GHOSTRUN_RUN_ID``; each process adds its tests to the run log
    instead of replacing the earlier ones'.
    """
    if not os.environ.get(RUN_ID_ENV):
        return document
    try:
        earlier = load_run(path)
    except (CassetteError, FileNotFoundError):
        return document
    if earlier.get("run_id") != document["run_id"]:
        return document
    before, now = earlier.get("verdicts_used"), document.get("verdicts_used")
    verdicts_used = None if before is None or now is None else sorted({*before, *now})
    return {
        **document,
        "tests": {**earlier.get("tests", {}), **document["tests"]},
        "cassettes_used": sorted(
            {*earlier.get("cassettes_used", []), *document.get("cassettes_used", [])}
        ),
        "verdicts_used": verdicts_used,
        "misses": [*earlier.get("misses", []), *document.get("misses", [])],
        "selection": {"limited_by": _limits(earlier) + _limits(document)},
    }


def _limits(document: RunLogFile) -> list[str]:
    selection: SelectionRecord = document.get("selection") or {}
    return list(selection.get("limited_by") or [])


def _with_previous(document: RunLogFile, path: Path) -> RunLogFile:
    """Note how many tests the run before this one ran, for `ghostrun check`'s partial-run warning.

    A run that spans processes (``GHOSTRUN_RUN_ID``) keeps what its first part found, and
    a run after a narrowed one (``-k``, a path) compares with the run before that.
    """
    try:
        earlier = load_run(path)
    except CassetteError:
        return document  # no earlier run, or one this ghostrun cannot read: nothing to compare
    if earlier.get("run_id") == document["run_id"]:
        previous = earlier.get("previous")
        return document if previous is None else {**document, "previous": previous}
    carried = earlier.get("previous")
    if _limits(earlier) and carried is not None and carried["tests"] > len(earlier["tests"]):
        return {**document, "previous": carried}  # a narrowed run is no baseline: look past it
    previous = {"tests": len(earlier["tests"]), "finished": str(earlier.get("finished", "?"))}
    return {**document, "previous": previous}


def _scrub(text: str, deck: Deck | None) -> str:
    """Credentials, secret shapes and what the session's hook removed, masked (DESIGN §4)."""
    return scrub_text(text, edits=deck.hook_edits if deck is not None else None)


def _test(log: _DirLog, name: str, alias: str | None) -> _TestLog:
    test = log["tests"].get(name)
    if test is None:
        test = {
            "outputs": [],
            "assertions": [],
            "requests": {"replayed": 0, "recorded": 0, "misses": 0},
            "cassettes": [],
            "verdicts": [],
            "ignore_fields": [],
            "normalize": [],
            "aliases": [],
        }
        log["tests"][name] = test
    if alias and alias != name and alias not in test["aliases"]:
        test["aliases"].append(alias)
    return test


def _shapes(deck: Deck) -> list[str]:
    """A session's ``normalize`` as it can be written down: names, and regexes' sources."""
    shapes = deck.normalizer
    if shapes is None:
        return []
    return [name if name in BUILTINS else p.pattern for name, p in shapes.patterns]


def _merge_test(ours: _TestLog, theirs: _TestLog) -> None:
    """Fold another process's test (`RunLog.export`) into ours."""
    offset: dict[int, int] = {}
    for index, text in enumerate(theirs["outputs"]):
        if text not in ours["outputs"]:
            ours["outputs"].append(text)
        offset[index] = ours["outputs"].index(text)
    for assertion in theirs["assertions"]:
        ours["assertions"].append({**assertion, "output": offset[assertion["output"]]})
    for field, count in theirs["requests"].items():
        ours["requests"][field] = ours["requests"].get(field, 0) + count
    ours["cassettes"] += theirs.get("cassettes", [])
    ours["verdicts"] += theirs.get("verdicts", [])
    _add_new(ours["ignore_fields"], theirs.get("ignore_fields", []))
    _add_new(ours["normalize"], theirs.get("normalize", []))
    _add_new(ours["aliases"], theirs["aliases"])


def _add_new(items: list[str], more: Iterable[str]) -> None:
    """Append what ``items`` lacks of ``more``, in order."""
    for item in more:
        if item not in items:
            items.append(item)


_QUIET = 4096  # quiet sessions' shapes kept (`RunLog.session`)
_absolute: dict[Path, str] = {}  # an absolute cassette directory: its key in `RunLog._dirs`


# -- the process's run: what the rest of ghostrun calls ------------------------------------


class ProcessRun:
    """The run this process collects: its `RunLog`, and who writes it.

    One object, `PROCESS`, that every function below reads. By default the run
    is written at interpreter exit (``autoflush``); the pytest plugin turns that
    off for its session, since it writes at session finish (or, on an xdist
    worker, hands the run to the controller instead). Code that needs a run of
    its own (the plugin, a test) collects inside `collecting`, which puts the
    previous log and setting back when it ends::

        with _runlog.PROCESS.collecting() as log:   # a fresh RunLog
            ...                                       # sessions and assertions fill it
        log.documents()
    """

    def __init__(self) -> None:
        self.log = RunLog()
        self.autoflush = True
        self._atexit_registered = False

    @contextmanager
    def collecting(
        self, log: RunLog | None = None, *, autoflush: bool | None = None
    ) -> Iterator[RunLog]:
        """Collect into ``log`` (a fresh one by default) until the block ends; ``autoflush``:
        whether the run is written at exit meanwhile (unchanged by default)."""
        previous = self.log, self.autoflush
        self.log = RunLog() if log is None else log
        if autoflush is not None:
            self.autoflush = autoflush
        try:
            yield self.log
        finally:
            self.log, self.autoflush = previous

    def arm_atexit(self) -> None:
        """Have the run written at exit, once, unless someone else writes it."""
        if self.autoflush and not self._atexit_registered:
            self._atexit_registered = True
            atexit.register(self._flush_at_exit)

    def _flush_at_exit(self) -> None:
        if not self.autoflush:
            return
        errors: list[Exception]
        try:
            errors = list(write_run()[1])
        except ValueError as exc:  # a bad GHOSTRUN_SNAPSHOT: say so, without a traceback at exit
            errors = [exc]
        for error in errors:
            print(f"ghostrun: could not write the run log: {error}", file=sys.stderr)
        skipped = self.log.skip_line()  # a unittest run's or a script's closing line
        if skipped:
            print(skipped, file=sys.stderr)


PROCESS = ProcessRun()


def session_closed(deck: Deck) -> None:
    """Called when a session's outermost block ends (a `Deck` subscriber)."""
    PROCESS.log.session(deck, _where_session(deck))
    PROCESS.arm_atexit()


def record_assertion(
    *,
    kind: str,
    criterion: str,
    text: str,
    passed: bool,
    reason: str,
    judge: str | None = None,
) -> None:
    """Called for every assertion outcome, passed or failed."""
    found = current_deck()
    where = _where_session(found) if found is not None else _where_default()
    if found is None:
        PROCESS.log.mode_seen(where.cassette_dir, resolve_mode(None))
    PROCESS.log.assertion(
        where,
        kind=kind,
        criterion=_scrub(criterion, found),
        text=_scrub(text, found),
        passed=passed,
        reason=_scrub(reason, found),
        judge=judge,
    )
    PROCESS.arm_atexit()


def judge_skipped(enable: str) -> None:
    """A semantic check was skipped for want of a judge; ``enable``: how to have one."""
    PROCESS.log.judge_skipped(enable)
    PROCESS.arm_atexit()


def test_outcome(name: str, outcome: str, failure: str | None = None) -> None:
    """A framework reports how a test ended: passed, failed, error, skipped or xfailed
    (and, when it failed, its message: ``ghostrun review`` shows it with the outcome)."""
    PROCESS.log.outcome(name, outcome, failure)


test_outcome.__test__ = False  # type: ignore[attr-defined]  # not a test, despite its name


def run_limited_by(limits: list[str]) -> None:
    """How this run was narrowed (``-k``, ``--lf``, test paths): written into the run log."""
    PROCESS.log.limited_by = list(limits)


def verdict_used(key: str, cassette_dir: Path, mode: Mode | None = None) -> None:
    """The judge cache read or wrote the verdict ``key`` (for ``ghostrun check``).

    ``mode`` is given when no session governs the grading.
    """
    PROCESS.log.verdict(key, cassette_dir)
    if mode is not None:
        PROCESS.log.mode_seen(cassette_dir, mode)


def verdict_in_test(key: str, cassette_dir: Path, how: str) -> None:
    """The test running now read (``cached``), wrote (``graded``) or lacked (``missed``) ``key``.

    Each test lists its gradings in order, for ``ghostrun review`` and ``report``.
    """
    found = current_deck()
    where = _where_session(found) if found is not None else _where_default()
    PROCESS.log.verdict_in_test(key, cassette_dir, how, where)


def write_run(snapshot: str | None = None) -> tuple[list[Path], list[CassetteError]]:
    """Write the run collected so far, then forget it: the paths written and the errors.

    ``snapshot`` defaults to ``GHOSTRUN_SNAPSHOT``; an invalid name is a ValueError.
    """
    if snapshot is None:
        snapshot = snapshot_from_env()
    log = PROCESS.log
    if not log:
        return [], []
    try:
        return log.write(snapshot)
    finally:
        log.clear()


def snapshot_from_env() -> str | None:
    value = os.environ.get(SNAPSHOT_ENV, "").strip()
    return check_snapshot_name(value) if value else None


def load_run(path: Path) -> RunLogFile:
    """A run file, checked (`_store._validate`): a CassetteError names the file and field."""
    data = _validate.load(path, "run log")
    if data is None:
        raise CassetteError(f"no run log at {path}")
    return data


def _where_session(deck: Deck) -> Where:
    test_id, settings = current_test_id(), deck.settings
    return Where(settings.name or test_id or script_name(), test_id, settings.cassette_dir)


def _where_default() -> Where:
    test_id = current_test_id()
    return Where(test_id or script_name(), test_id, settings.resolve_cassette_dir())
