"""Each test's trajectory: written when it records, checked when it replays (DESIGN §2, §3).

A session keeps its steps (``Deck.steps``: each model call's request and
response, by reference) from the moment its outermost block opens. When that
block closes:

- if the session recorded a step (or an earlier session of the same test did,
  in this process), the test's trajectory file is rewritten: the steps of its
  earlier sessions as the file held them, then this session's;
- else, in ``replay``, the session's steps are compared with the ones the file
  holds for it: a session that ended with steps unplayed fails
  (`UnplayedSteps`), warns, or says nothing, as ``on_unplayed`` says.

A test's identity is the session's name: ``name=``, else the running test's id
(the pytest node id; the unittest mixin computes the same one), else the
script's file name. Its sessions are numbered in the order they open within
one run of the test (`Tracker`), so a test that opens two sessions keeps two
parts. Opening the test's name again after its sessions closed is a re-run of
the test (a loop in a script, ``pytest-rerunfailures``, a notebook cell run
again), numbered from 0 again, unless it opens inside the same test of a runner
(the pytest item, the unittest test: `test_started`) as the test's earlier
session: then it is the test's next session. So a replayed re-run writes
nothing (DESIGN §3), and a recorded one rewrites the file instead of growing it.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from typing import TYPE_CHECKING, Any

from .._core._config import resolve_on_unplayed
from .._core._exceptions import UnplayedSteps, UnplayedStepsWarning
from .._core._modes import Mode
from .._secrets._scrub import scrub_text
from .._secrets._walk import map_strings
from .._store._trajectory import (
    StepRecord,
    Trajectory,
    load_trajectory,
    trajectory_path,
    write_trajectory,
)
from ._settings import current_test_id
from ._steps import Step, endpoint, model_name, prompt_words, settled, tokens_used, tool_calls

if TYPE_CHECKING:
    from ._deck import Deck

__all__ = [
    "Tracker",
    "closed",
    "opened",
    "session_closed",
    "step_record",
    "swap",
    "test_ended",
    "test_identity",
    "test_started",
]

_SHOWN_UNPLAYED = 10


class _Run:
    """One run of a test: its sessions opened so far, those open now, whether it recorded."""

    __slots__ = ("open", "opened", "recorded", "scope")

    def __init__(self, scope: object) -> None:
        self.scope = scope  # the runner's test it runs in (`Tracker.scope`); None: none
        self.opened = 0
        self.open = 0
        self.recorded = False


class Tracker:
    """Per process: each test's current run, and the runner's test running now.

    One object, so a test of ghostrun can start afresh as a new process would (`swap`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, _Run] = {}
        self._open: dict[int, str] = {}  # id of an open deck: the test it opened as
        self._test: object = None  # set by a runner from its test's start to its end

    def scope(self) -> object:
        """The runner's test running now: a token from `started`, else the pytest id."""
        return self._test if self._test is not None else current_test_id()

    def started(self) -> None:
        """A runner starts a test (again): sessions opened from now on are a new run."""
        self._test = object()

    def ended(self) -> None:
        self._test = None

    def opened(self, test: str, deck: object) -> int:
        """A session of ``test`` opens: its number among the sessions of the test's run.

        The same run goes on while one of its sessions is open, or in the runner's
        same test; else this is a re-run, numbered from 0 again.
        """
        scope = self.scope()
        with self._lock:
            run = self._runs.get(test)
            if run is None or not (run.open or (scope is not None and scope == run.scope)):
                run = self._runs[test] = _Run(scope)
            run.open += 1
            self._open[id(deck)] = test
            index = run.opened
            run.opened += 1
            return index

    def closed(self, deck: object) -> None:
        """The session opened as `opened` said has closed (its outermost block)."""
        with self._lock:
            test = self._open.pop(id(deck), None)
            run = self._runs.get(test) if test is not None else None
            if run is not None and run.open:
                run.open -= 1

    def recorded(self, test: str, now: bool) -> bool:
        """Whether ``test`` recorded in its current run, now or in an earlier session."""
        with self._lock:
            run = self._runs.get(test)
            if run is None:
                return now
            run.recorded = run.recorded or now
            return run.recorded


_tracker = Tracker()


def swap(tracker: Tracker) -> Tracker:
    """Track into ``tracker`` from now on; returns the one used so far."""
    global _tracker
    previous, _tracker = _tracker, tracker
    return previous


def test_identity(deck: Deck) -> str:
    """The test a session belongs to: its name, else the script's file name."""
    if deck.name:
        return deck.name
    return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "__main__"


test_identity.__test__ = False  # type: ignore[attr-defined]  # not a test, despite its name


def opened(deck: Deck) -> int:
    """The session's outermost block opens: its number among its test's run's sessions."""
    return _tracker.opened(test_identity(deck), deck)


def closed(deck: Deck) -> None:
    """The session's outermost block has closed, whatever happened while it closed."""
    _tracker.closed(deck)


def test_started() -> None:
    """A runner (the pytest plugin, the unittest mixin) starts a test, or runs it again.

    Sessions of one name opened one after another inside it are one run's
    sessions; the same name opened in another test, or in the same test run
    again, starts a new run of that name (DESIGN §3).
    """
    _tracker.started()


def test_ended() -> None:
    """The runner's test has ended: sessions opened after it are nobody's test."""
    _tracker.ended()


test_started.__test__ = test_ended.__test__ = False  # type: ignore[attr-defined]


def session_closed(deck: Deck, failed: bool) -> Exception | None:
    """Write or check the test's trajectory; returns the error to raise, if any.

    ``failed``: the block ended with an error, so steps left unplayed are no news.
    """
    test = test_identity(deck)
    steps = settled(deck.steps)
    recorded_now = any(step.recorded for step in steps)
    if _tracker.recorded(test, recorded_now):
        _write(deck, test, steps)
        return None
    if deck.mode is not Mode.REPLAY or failed:
        return None
    return _check(deck, test, len(steps))


def _write(deck: Deck, test: str, steps: list[Step]) -> None:
    path = trajectory_path(deck.cassette_dir, test)
    earlier = load_trajectory(path)
    index = deck.session_index
    kept = [s for s in earlier["steps"] if s["session"] < index] if earlier else []
    mine = [step_record(step, index, deck.hook_edits) for step in steps]
    write_trajectory(deck.cassette_dir, Trajectory(version=1, test=test, steps=kept + mine))


def step_record(step: Step, session: int, edits: dict[str, str] | None = None) -> StepRecord:
    """A step as its trajectory file stores it, with every credential masked (DESIGN §4)."""
    documents = step.documents()
    request = step.request_json()
    return StepRecord(
        session=session,
        method=step.method,
        endpoint=scrub_text(endpoint(step.url), edits=edits),
        key=step.key,
        response=step.index,
        prompt=scrub_text(prompt_words(request), edits=edits),
        model=model_name(request, step.url),
        tool_calls=_scrubbed(tool_calls(documents), edits),
        tokens=tokens_used(documents),
    )


def _scrubbed(value: Any, edits: dict[str, str] | None) -> Any:
    """Every string of a JSON value scrubbed (tool-call arguments may echo a secret)."""
    return map_strings(value, lambda text: scrub_text(text, edits=edits))


def _check(deck: Deck, test: str, used: int) -> Exception | None:
    """Steps the recorded trajectory holds for this session beyond those it used."""
    path = trajectory_path(deck.cassette_dir, test)
    found = load_trajectory(path)
    if found is None:
        return None
    mine = [s for s in found["steps"] if s["session"] == deck.session_index]
    if used >= len(mine):
        return None
    policy = resolve_on_unplayed(deck.arguments.on_unplayed)
    if policy == "ignore":
        return None
    message = _unplayed_message(test, mine, used, path)
    if policy == "warn":
        warnings.warn(message, UnplayedStepsWarning, stacklevel=4)
        return None
    return UnplayedSteps(message)


def _unplayed_message(test: str, recorded: list[StepRecord], used: int, path: Any) -> str:
    left = recorded[used:]
    lines = [
        f"ghostrun: {test} used {used} of the {len(recorded)} steps its trajectory recorded; "
        f"{len(left)} unplayed:"
    ]
    for number, step in enumerate(left[:_SHOWN_UNPLAYED], start=used + 1):
        calls = ", ".join(call["name"] for call in step["tool_calls"])
        said = f" -> called {calls}" if calls else ""
        lines.append(
            f"  step {number}: {step['method']} {step['endpoint']}: {step['prompt']!r}{said}"
        )
    if len(left) > _SHOWN_UNPLAYED:
        lines.append(f"  ... and {len(left) - _SHOWN_UNPLAYED} more")
    lines.append(
        f"  trajectory: {path}\n"
        "  The code under test stopped earlier than when it was recorded. If that is "
        "intended, re-record the test (GHOSTRUN_MODE=record); to allow it, pass "
        'on_unplayed="warn" or "ignore" (session, configure(), GHOSTRUN_ON_UNPLAYED).'
    )
    return "\n".join(lines)
