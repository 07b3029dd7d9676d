"""Each test's trajectory: written when it records, checked when it replays (DESIGN §2, §3).

A session keeps its steps (``Deck.steps``: each model call's request and
response, by reference, and each exchange with a declared tool host; ``Deck.tools``:
each tool call an MCP server answered, placed among them) from the moment its outermost
block opens. The file tells the whole run: a model step per model call, a tool step
(``"kind": "tool"``) per tool host exchange, MCP ``tools/call`` (stdio, or over MCP's
streamable HTTP: `_steps.mcp_http_call`), and last the session's final answer
(``"kind": "answer"``: the first words of its last model step's text). When that block
closes:

- if the session recorded a step (or an earlier session of the same test did,
  in this process), the test's trajectory file is rewritten: the steps of its
  earlier sessions as the file held them, then this session's;
- else, in ``replay``, the session's steps are compared with the ones the file
  holds for it: a session that ended with steps unplayed fails
  (`UnplayedSteps`), warns, or says nothing, as ``on_unplayed`` says. Model and
  tool steps count there; the answer is no step to play.

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
import threading
import warnings
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from .._core._config import resolve_on_unplayed
from .._core._exceptions import UnplayedSteps, UnplayedStepsWarning
from .._core._modes import Mode
from .._core._safe_text import terminal
from .._secrets._scrub import scrub_text
from .._secrets._walk import map_strings
from .._store._formats import AnswerStep
from .._store._trajectory import (
    AnyStep,
    StepRecord,
    ToolStep,
    Trajectory,
    load_trajectory,
    played,
    trajectory_file,
    trajectory_path,
    write_trajectory,
)
from ._settings import current_test_id, script_name
from ._steps import (
    Step,
    ToolUse,
    answer_text,
    endpoint,
    first_words,
    mcp_http_call,
    model_name,
    prompt_words,
    push_streams,
    settled,
    tokens_used,
    tool_arguments,
    tool_calls,
    tool_name,
    tool_result,
)

if TYPE_CHECKING:
    from ._deck import Deck

__all__ = [
    "Tracker",
    "answer_record",
    "closed",
    "in_order",
    "opened",
    "played",
    "session_closed",
    "step_record",
    "swap",
    "test_ended",
    "test_identity",
    "test_started",
    "tool_record",
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
        scope = self._test if self._test is not None else current_test_id()  # `scope`
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
    name = deck.settings.name
    if name:
        return name
    return script_name()


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
    steps = in_order(deck)
    recorded_now = bool(steps) and any(step.recorded for step in steps)
    mode = deck.settings.mode
    if mode is Mode.REBASE and failed:
        return None  # a rebase that missed keeps the recorded trajectory: it is re-recorded
    if _tracker.recorded(test, recorded_now):
        _write(deck, test, steps)
        return None
    if failed or not mode.offline:
        return None
    return _check(deck, test, len(steps))


def in_order(deck: Deck) -> list[Step | ToolUse]:
    """The session's model calls (`settled`) and tool calls, in the order they happened."""
    raw, tools = deck.steps, deck.tools
    if not (raw or tools):
        return []
    kept = {id(step) for step in settled(raw)}
    out: list[Step | ToolUse] = []
    for position, step in enumerate(raw):
        out += [tool for tool in tools if tool.after == position]
        if id(step) in kept:
            out.append(step)
    return out + [tool for tool in tools if tool.after >= len(raw)]


def _write(deck: Deck, test: str, steps: list[Step | ToolUse]) -> None:
    path = trajectory_path(deck.cassette_dir, test)
    earlier = load_trajectory(path)
    index, edits = deck.session_index, deck.hook_edits
    kept = [s for s in earlier["steps"] if s["session"] < index] if earlier else []
    mine: list[AnyStep] = []
    last: list[Any] | None = None  # the last model step's documents: the answer's
    pushed = push_streams(deck.steps)  # where a tools/call over MCP's SSE finds its answer
    for step in steps:  # a tools/call over MCP's HTTP is a tool step, not a model call
        use = mcp_http_call(step, pushed) if isinstance(step, Step) else step
        if use is not None:
            mine.append(tool_record(use, index, edits))
        elif isinstance(step, Step):
            documents = None if step.tool else step.documents()  # a stream's: read once
            mine.append(step_record(step, index, edits, documents))
            last = last if documents is None else documents
    if last is not None:
        mine.append(_answer(last, index, edits))
    write_trajectory(deck.cassette_dir, Trajectory(version=1, test=test, steps=kept + mine))


def answer_record(
    steps: list[Step], session: int, edits: dict[str, str] | None = None
) -> AnswerStep | None:
    """The session's final answer: its last model step's first words; None without one."""
    models = [step for step in steps if not step.tool and mcp_http_call(step) is None]
    if not models:
        return None
    return _answer(models[-1].documents(), session, edits)


def _answer(documents: list[Any], session: int, edits: dict[str, str] | None) -> AnswerStep:
    """The answer step of a session whose last model step carried ``documents``."""
    text = first_words(answer_text(documents))
    return AnswerStep(kind="answer", session=session, text=scrub_text(text, edits=edits))


def tool_record(use: ToolUse, session: int, edits: dict[str, str] | None = None) -> ToolStep:
    """A tool call an MCP server answered, as its trajectory file stores it, scrubbed as a
    model step is."""
    return ToolStep(
        kind="tool",
        session=session,
        transport=use.transport,  # type: ignore[typeddict-item]  # the road's own word
        server=scrub_text(use.server, edits=edits),
        tool=scrub_text(use.tool, edits=edits),
        arguments=_scrubbed(use.arguments, edits),
        result=scrub_text(first_words(use.result), edits=edits),
        key=use.key,
        response=use.index,
    )


def step_record(
    step: Step,
    session: int,
    edits: dict[str, str] | None = None,
    documents: list[Any] | None = None,
) -> StepRecord | ToolStep:
    """A step as its trajectory file stores it, with every credential masked (DESIGN §4).

    ``documents``: the step's `Step.documents`, when the caller read them already.
    """
    if step.tool:
        return _tool_record(step, session, edits)
    if documents is None:
        documents = step.documents()
    request = step.request_json()
    record = StepRecord(
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
    if step.rebased is not None:  # rebase: which recorded step answers it, and what changed
        record["rebased_from"] = step.rebased[0]
        record["changed"] = _scrubbed(step.rebased[1], edits)
    return record


def _tool_record(step: Step, session: int, edits: dict[str, str] | None) -> ToolStep:
    """A tool host's exchange: which host, which call, its arguments and first words."""
    return ToolStep(
        kind="tool",
        session=session,
        transport="http",
        server=scrub_text(urlsplit(step.url).netloc, edits=edits),
        tool=scrub_text(tool_name(step.method, step.url), edits=edits),
        arguments=_scrubbed(tool_arguments(step.url, step.request_json()), edits),
        result=scrub_text(first_words(tool_result(step.recording)), edits=edits),
        key=step.key,
        response=step.index,
    )


def _scrubbed(value: Any, edits: dict[str, str] | None) -> Any:
    """Every string of a JSON value scrubbed (tool-call arguments may echo a secret)."""
    return map_strings(value, lambda text: scrub_text(text, edits=edits))


def _check(deck: Deck, test: str, used: int) -> Exception | None:
    """Steps the recorded trajectory holds for this session beyond those it used."""
    path = trajectory_file(deck.settings.prefix, test)
    # A test that never recorded a call has no file: asked without the error a failed open
    # raises, which costs three times the look (an empty session's largest single cost).
    found = load_trajectory(path) if os.access(path, os.F_OK) else None
    if found is None:
        return None
    mine = played([s for s in found["steps"] if s["session"] == deck.session_index])
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


def _unplayed_message(
    test: str, recorded: list[StepRecord | ToolStep], used: int, path: Any
) -> str:
    left = recorded[used:]
    lines = [
        f"ghostrun: {test} used {used} of the {len(recorded)} steps its trajectory recorded; "
        f"{len(left)} unplayed:"
    ]
    for number, step in enumerate(left[:_SHOWN_UNPLAYED], start=used + 1):
        lines.append(f"  step {number}: {_told(step)}")
    if len(left) > _SHOWN_UNPLAYED:
        lines.append(f"  ... and {len(left) - _SHOWN_UNPLAYED} more")
    lines.append(
        f"  trajectory: {path}\n"
        "  The code under test stopped earlier than when it was recorded. If that is "
        "intended, re-record the test (GHOSTRUN_MODE=record); to allow it, pass "
        'on_unplayed="warn" or "ignore" (session, configure(), GHOSTRUN_ON_UNPLAYED, '
        "[tool.ghostrun])."
    )
    return terminal("\n".join(lines))  # it quotes the recording: no control reaches a terminal


def _told(step: StepRecord | ToolStep) -> str:
    """One recorded step in a line: a model call and what it called, or a tool call."""
    if step.get("kind") == "tool":
        tool = cast(ToolStep, step)
        return f"tool {tool['tool']} ({tool['transport']} {tool['server']}) -> {tool['result']!r}"
    model = cast(StepRecord, step)
    calls = ", ".join(call["name"] for call in model["tool_calls"])
    said = f" -> called {calls}" if calls else ""
    return f"{model['method']} {model['endpoint']}: {model['prompt']!r}{said}"
