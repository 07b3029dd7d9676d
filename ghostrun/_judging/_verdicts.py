"""Grading with cached, voted verdicts: what semantic assertions call.

A verdict is cached as one readable JSON file, ``<cassette_dir>/judge/<key>.json``,
keyed by the judge's identity (backend and model), the prompt-template
version, the vote count, the text and the criterion, so changing any of them
re-grades and no judge ever reuses another's opinion. The session's mode
applies as for requests: ``auto`` grades on a miss, ``record`` always
re-grades, ``replay`` never calls the judge and raises `CacheMiss`.

The core (keys, vote plans, tallies, the file format) is pure; `grade` and
`agrade` are thin shells that differ only in how the draws run: threads for
sync code, an anyio task group for async code (asyncio or trio).
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import unittest
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._core._config import resolve_mode, setting_source, settings
from .._core._exceptions import CacheMiss, CassetteError, DamagedCassette, JudgeUnavailable
from .._core._files import dump_json, write_atomic
from .._core._modes import Mode
from .._core._public import public
from .._recording import _runlog, _session
from .._recording._deck import Deck
from .._secrets._scrub import scrub_text as _scrub
from .._store import _validate
from .._store._formats import VerdictFile, VerdictWord
from ._judges import (
    PROMPT_TEMPLATE_VERSION,
    Judge,
    OllamaJudge,
    RawVerdict,
    as_judge,
    judge_from_spec,
    no_recording,
)
from ._script import ghostrun_skip

__all__ = [
    "VERDICT_FORMAT_VERSION",
    "VOTE_TEMPERATURE",
    "Verdict",
    "agrade",
    "current_cassette_dir",
    "draw_plan",
    "grade",
    "resolve_judge",
    "tally",
    "verdict_key",
]

VERDICT_FORMAT_VERSION = _validate.FORMAT_VERSIONS["verdict"]
VOTE_TEMPERATURE = 0.7
"""Sampling temperature of a multi-vote grade: at 0 every seed would draw the same answer."""

_ON_UNAVAILABLE_ENV = "GHOSTRUN_ON_JUDGE_UNAVAILABLE"


@public
@dataclass(frozen=True)
class Verdict:
    """A judge's (majority) answer on whether a text meets a criterion."""

    passed: bool
    reason: str
    judge: str
    votes: int = 1
    flip_rate: float = 0.0
    cached: bool = False


@dataclass(frozen=True)
class _Draw:
    seed: int | None
    temperature: float


# --- the pure core ---------------------------------------------------------------------


def verdict_key(identity: str, votes: int, text: str, criterion: str) -> str:
    """The cache key: 32 hex digits of sha256 over everything that changes the verdict."""
    payload = orjson.dumps([identity, PROMPT_TEMPLATE_VERSION, votes, text, criterion])
    return hashlib.sha256(payload).hexdigest()[:32]


def draw_plan(votes: int) -> list[_Draw]:
    """One deterministic draw, or N sampled draws with distinct seeds 1..N."""
    if isinstance(votes, bool) or not isinstance(votes, int) or votes < 1:
        raise ValueError(f"a judge's votes must be a positive integer, got {votes!r}")
    if votes == 1:
        return [_Draw(None, 0.0)]
    return [_Draw(seed, VOTE_TEMPERATURE) for seed in range(1, votes + 1)]


def tally(draws: Sequence[RawVerdict], identity: str) -> Verdict:
    """The majority verdict and its flip rate (minority / N); a tie fails."""
    n = len(draws)
    passes = sum(d.passed for d in draws)
    passed = passes * 2 > n
    reason = next(d.reason for d in draws if d.passed == passed)
    if passes * 2 == n:
        reason = f"tie ({passes} PASS, {n - passes} FAIL) counts as FAIL: {reason}"
    flip_rate = min(passes, n - passes) / n
    return Verdict(passed, reason, identity, votes=n, flip_rate=flip_rate)


def _record(
    key: str,
    text: str,
    criterion: str,
    verdict: Verdict,
    plan: Sequence[_Draw],
    draws: Sequence[RawVerdict],
    edits: Mapping[str, str] | None = None,
) -> VerdictFile:
    """The verdict file's content: everything a reviewer needs to judge the judge.

    Scrubbed like a run log: of every credential seen, and of what the session's
    ``redact=`` hook changed in its cassettes (``edits``), so a verdict never shows
    what the cassette it grades does not.
    """

    def scrub_text(text: str) -> str:
        return _scrub(text, edits=edits)

    return {
        "version": VERDICT_FORMAT_VERSION,
        "key": key,
        "judge": verdict.judge,
        "prompt_template_version": PROMPT_TEMPLATE_VERSION,
        "criterion": scrub_text(criterion),
        "text": scrub_text(text),
        "verdict": _word(verdict.passed),
        "reason": scrub_text(verdict.reason),
        "votes": verdict.votes,
        "flip_rate": verdict.flip_rate,
        "draws": [
            {
                "seed": step.seed,
                "temperature": step.temperature,
                "verdict": _word(d.passed),
                "reason": scrub_text(d.reason),
            }
            for step, d in zip(plan, draws, strict=True)
        ],
    }


def _word(passed: bool) -> VerdictWord:
    return "PASS" if passed else "FAIL"


def _from_record(record: VerdictFile) -> Verdict:
    """A cached Verdict from a file `ghostrun._store._validate` checked."""
    return Verdict(
        record["verdict"] == "PASS",
        record["reason"],
        record["judge"],
        record.get("votes", 1),
        float(record.get("flip_rate", 0.0)),
        cached=True,
    )


# --- context: judge, mode, cassette dir ------------------------------------------------


def resolve_judge(judge: Any = None, cassette_dir: Path | None = None) -> Judge:
    """The judge given, else the configured one, else a default `OllamaJudge`.

    The project's table names its judge as data: no environment key for a URL other than
    OpenAI's, and no code from the cassette directory (``cassette_dir``, and the one the
    settings name), in any mode (`_named`).
    """
    if judge is None:
        judge = settings.judge
    if judge is None:
        spec, url = settings.judge_spec()  # the project's [tool.ghostrun] judge
        if not (spec or url):
            return OllamaJudge()
        data = (settings.resolve_cassette_dir(), *(() if cassette_dir is None else (cassette_dir,)))
        return judge_from_spec(spec, url, from_table=True, data_dirs=data)
    return as_judge(judge)


@dataclass(frozen=True)
class _Context:
    mode: Mode
    cassette_dir: Path
    session: Deck | None  # the governing session's, whose misses a verdict miss joins


def _context(mode: Mode | None = None, cassette_dir: Path | None = None) -> _Context:
    """The governing session's mode and directory, else the suite-wide ones.

    A caller outside any test (``ghostrun calibrate``) names its own directory,
    and its mode if it has one; the suite-wide switch still beats that mode.
    """
    if cassette_dir is not None:
        return _Context(resolve_mode(mode), Path(cassette_dir), None)

    session = _session.current_deck()
    if session is not None:
        return _Context(session.mode, Path(session.cassette_dir), session)
    return _Context(resolve_mode(None), settings.resolve_cassette_dir(), None)


def current_cassette_dir() -> Path:
    """Where verdicts are read and written here and now."""
    return _context().cassette_dir


def _verdict_path(cassette_dir: Path, key: str) -> Path:
    return cassette_dir / "judge" / f"{key}.json"


@dataclass(frozen=True)
class _Job:
    """One grading request, resolved: either answered from cache or to be graded."""

    judge: Judge
    text: str
    criterion: str
    key: str
    path: Path
    context: _Context
    cached: Verdict | None


def _prepare(text: str, criterion: str, judge: Any, context: _Context) -> _Job:
    """Resolve the judge and look up the cache; raise CacheMiss in replay mode."""
    if not isinstance(text, str) or not isinstance(criterion, str):
        raise TypeError(
            f"text and criterion must be strings, got {type(text).__name__} "
            f"and {type(criterion).__name__}"
        )
    resolved = resolve_judge(judge, context.cassette_dir)
    key = verdict_key(resolved.identity, resolved.votes, text, criterion)
    path = _verdict_path(context.cassette_dir, key)
    _runlog.verdict_used(
        key, context.cassette_dir, context.mode if context.session is None else None
    )
    cached = None
    if context.mode is not Mode.RECORD:
        try:
            record = _validate.load(path, "verdict")
        except CassetteError as exc:  # a damaged verdict file fails the test like a miss
            raise _book(context.session, DamagedCassette.of(exc)) from exc
        cached = None if record is None else _from_record(record)
        if cached is None and context.mode.offline:
            _runlog.verdict_in_test(key, context.cassette_dir, "missed")
            if _skip_when_unavailable():
                raise _replay_skip(resolved, criterion, path)
            miss = _miss(resolved, text, criterion, path, _edits(context))
            raise _book(context.session, miss)
    if cached is not None:
        _runlog.verdict_in_test(key, context.cassette_dir, "cached")
    return _Job(resolved, text, criterion, key, path, context, cached)


def _finish(job: _Job, draws: Sequence[RawVerdict]) -> Verdict:
    """Tally the draws, store the verdict atomically, and return it."""
    plan = draw_plan(job.judge.votes)
    verdict = tally(draws, job.judge.identity)
    edits = job.context.session.hook_edits if job.context.session is not None else None
    record = _record(job.key, job.text, job.criterion, verdict, plan, draws, edits)
    write_atomic(job.path, dump_json(record), root=job.context.cassette_dir)
    _runlog.verdict_in_test(job.key, job.context.cassette_dir, "graded")
    return verdict


def _edits(context: _Context) -> Mapping[str, str] | None:
    return context.session.hook_edits if context.session is not None else None


def _miss(
    judge: Judge, text: str, criterion: str, path: Path, edits: Mapping[str, str] | None = None
) -> CacheMiss:
    """The miss, its criterion and text scrubbed as a verdict file is (a criterion may
    name a key: ``does not reveal sk-proj-…``)."""
    setup = getattr(judge, "setup_commands", ())
    running = f" (`{'`, `'.join(setup)}`)" if setup else ""
    preview = text if len(text) <= 200 else text[:200] + "…"
    criterion, preview = _scrub(criterion, edits=edits), _scrub(preview, edits=edits)
    return CacheMiss(
        f"no cached verdict for criterion {criterion!r} from judge {judge.identity} "
        f"(votes={judge.votes}), and replay mode never calls the judge.\n"
        f"  text: {preview!r}\n"
        f"  expected file: {path}\n"
        f"Record it: run once with GHOSTRUN_MODE=record (or in auto mode) with the "
        f"judge running{running}, then commit the file."
    )


def _book(session: Deck | None, miss: CacheMiss) -> CacheMiss:
    """A verdict miss is booked like a request miss: in ``misses``, and raised again
    when the session closes if the code under test swallowed it."""
    return miss if session is None else session.book(miss)


# --- JudgeUnavailable -> skip --------------------------------------------------------------


def _skip_when_unavailable() -> bool:
    """``GHOSTRUN_ON_JUDGE_UNAVAILABLE`` (the per-run switch) beats ``configure()``."""
    env = os.environ.get(_ON_UNAVAILABLE_ENV, "").strip().lower()
    if env:
        if env not in ("error", "skip"):
            raise ValueError(f"invalid {_ON_UNAVAILABLE_ENV}={env!r}: expected 'error' or 'skip'")
        return env == "skip"
    return settings.resolve_on_judge_unavailable() == "skip"


def _skip_source() -> str:
    """Where the skip was asked for: the variable, configure(), or the project's table."""
    return setting_source("on_judge_unavailable", "skip")


def _replay_skip(judge: Judge, criterion: str, path: Path) -> unittest.SkipTest:
    """Replay never calls the judge: with the skip setting, an uncached verdict skips."""
    _runlog.judge_skipped(f"{_how_to_grade(judge)} Then run once with GHOSTRUN_MODE=auto.")
    return ghostrun_skip(
        f"semantic assertion skipped: no cached verdict for {_scrub(criterion)!r} from "
        f"{judge.identity}, and replay mode never calls the judge "
        f"({_skip_source()}). {_how_to_grade(judge)} Then run once with "
        f"GHOSTRUN_MODE=auto to store {path.absolute()}, and commit it."
    )


def _how_to_grade(judge: Judge) -> str:
    """The judge's setup, once: its server first (which keeps running), then the rest."""
    setup = getattr(judge, "setup_commands", ())
    if not setup:
        return "To enable grading, start the judge's server."
    server, *then = setup
    rest = "".join(f", then run `{command}`" for command in then)
    return (
        f"To enable grading, start the judge with `{server}` (it keeps running: use another "
        f"terminal, or the desktop app){rest}."
    )


@contextlib.contextmanager
def _skipped_if_unavailable(judge: Judge) -> Iterator[None]:
    """A `JudgeUnavailable` becomes a SkipTest when the user asked for skips (both shells)."""
    try:
        yield
    except JudgeUnavailable as exc:
        if not _skip_when_unavailable():
            raise _naming_the_skip(exc) from _short(exc.__cause__)
        raise _skip_for(exc, judge) from exc


_SKIP_SETTING = (
    'To skip semantic checks while no judge runs, set on_judge_unavailable = "skip" '
    f"([tool.ghostrun], configure(), or {_ON_UNAVAILABLE_ENV}=skip)."
)


def _naming_the_skip(exc: JudgeUnavailable) -> JudgeUnavailable:
    """``exc`` with the setting that turns it into a skip, for a user with no judge yet."""
    return JudgeUnavailable(f"{exc} {_SKIP_SETTING}")


def _short(cause: BaseException | None) -> BaseException | None:
    """The client's error, kept as the cause but without its frames: the judge's HTTP
    client's traceback says nothing the message does not."""
    if cause is None:
        return None
    cause.__cause__, cause.__suppress_context__ = None, True
    return cause.with_traceback(None)


def _skip_for(exc: JudgeUnavailable, judge: Judge) -> unittest.SkipTest:
    """The SkipTest that replaces ``exc``."""
    _runlog.judge_skipped(_how_to_grade(judge))
    setup: tuple[str, ...] = tuple(getattr(judge, "setup_commands", ()))
    told = bool(setup) and f"`{setup[0]}`" in str(exc)  # the error already gives the fix
    return ghostrun_skip(
        f"semantic assertion skipped: no cached verdict and the judge {judge.identity} "
        f"is unavailable ({_skip_source()}). {exc}" + ("" if told else f" {_how_to_grade(judge)}")
    )


# --- the shells -----------------------------------------------------------------------------


def _draw(judge: Judge, text: str, criterion: str, step: _Draw) -> RawVerdict:
    with no_recording():
        return _checked(judge, judge.judge(text, criterion, step.seed, step.temperature))


async def _adraw(judge: Judge, text: str, criterion: str, step: _Draw) -> RawVerdict:
    with no_recording():
        raw = await judge.ajudge(text, criterion, step.seed, step.temperature)
    return _checked(judge, raw)


def _checked(judge: Judge, raw: Any) -> RawVerdict:
    if not isinstance(raw, RawVerdict):
        raise TypeError(f"the judge {judge.identity} returned {raw!r}, not a RawVerdict")
    return raw


def _draw_all(job: _Job) -> list[RawVerdict]:
    """Run the draws, concurrently in threads when there are several."""
    plan = draw_plan(job.judge.votes)
    if len(plan) == 1:
        return [_draw(job.judge, job.text, job.criterion, plan[0])]
    with ThreadPoolExecutor(len(plan), thread_name_prefix="ghostrun-judge") as pool:
        futures = [
            pool.submit(
                contextvars.copy_context().run, _draw, job.judge, job.text, job.criterion, step
            )
            for step in plan
        ]
        return [future.result() for future in futures]


async def _adraw_all(job: _Job) -> list[RawVerdict]:
    """Run the draws, concurrently in an anyio task group when there are several."""
    import anyio

    plan = draw_plan(job.judge.votes)
    if len(plan) == 1:
        return [await _adraw(job.judge, job.text, job.criterion, plan[0])]
    results: list[RawVerdict | BaseException | None] = [None] * len(plan)

    async def run(index: int, step: _Draw) -> None:
        try:
            results[index] = await _adraw(job.judge, job.text, job.criterion, step)
        except Exception as exc:  # re-raised below, unwrapped from the ExceptionGroup
            results[index] = exc

    async with anyio.create_task_group() as group:
        for index, step in enumerate(plan):
            group.start_soon(run, index, step)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [r for r in results if isinstance(r, RawVerdict)]


def grade(
    text: str,
    criterion: str,
    judge: Any = None,
    *,
    mode: Mode | None = None,
    cassette_dir: Path | None = None,
) -> Verdict:
    """Does ``text`` meet ``criterion``? Answered from the cache, or by the judge.

    ``cassette_dir`` (and ``mode``) replace the governing session's, for callers
    that grade outside any test.
    """
    job = _prepare(text, criterion, judge, _context(mode, cassette_dir))
    if job.cached is not None:
        return job.cached
    with _skipped_if_unavailable(job.judge):
        draws = _draw_all(job)
    return _finish(job, draws)


async def agrade(text: str, criterion: str, judge: Any = None) -> Verdict:
    """The async twin of `grade`: the event loop keeps running while the judge thinks."""
    job = _prepare(text, criterion, judge, _context())
    if job.cached is not None:
        return job.cached
    with _skipped_if_unavailable(job.judge):
        draws = await _adraw_all(job)
    return _finish(job, draws)
