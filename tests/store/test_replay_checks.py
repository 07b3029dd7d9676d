"""What reading a cassette and a trajectory costs a replayed test, counted (issue 43).

A replayed stream is checked, decoded and handed to the SDK with no Python work per
event: ghostrun's calls for a stream of 190 events are those for one of 40. The
checks on read stay as strict as they were (`_store._validate`): their fast paths
only skip the work the everyday file does not need, and a hand-edited file still
gets the full check, which names the field. Counts, never times.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simulator import ProviderSimulator

import ghostrun
from ghostrun._recording import _trajectory
from ghostrun._store import _validate
from ghostrun._store._limits import header_problem, headers_replayable

LOOPBACK = ("127.0.0.1",)
MODEL = "gpt-sim"
_ROOT = os.path.dirname(ghostrun.__file__)


@pytest.fixture
def new_process() -> Iterator[Callable[[], None]]:
    """Start the count of each test's sessions afresh, as the next run's process would:
    a replay after recording in one test is then a replayed run, not the next session."""
    saved = _trajectory.swap(_trajectory.Tracker())
    yield lambda: _trajectory.swap(_trajectory.Tracker()) and None
    _trajectory.swap(saved)


def _client(provider: ProviderSimulator) -> openai.OpenAI:
    return openai.OpenAI(base_url=provider.url("/v1"), api_key="sk-test", max_retries=0)


def _stream(client: openai.OpenAI, prompt: str) -> str:
    chunks = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": prompt}], stream=True
    )
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def _ghostrun_calls(run: Callable[[], Any]) -> int:
    """Python functions of ghostrun entered (generators resumed included), and the C
    functions its code called, while ``run`` runs."""
    counted = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal counted
        if event in ("call", "c_call") and frame.f_code.co_filename.startswith(_ROOT):
            counted += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return counted


def test_a_replayed_stream_costs_no_python_call_per_event(
    provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    client = _client(provider)
    prompts = {"short": "short" + " w" * 40, "long": "long" + " w" * 190}
    for name, prompt in prompts.items():
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name=name):
            _stream(client, prompt)
    events = {}
    for path in cassette_dir.glob("*.json"):
        document = json.loads(path.read_text())
        events[document["request"]["body"]["json"]["messages"][0]["content"]] = len(
            document["responses"][0]["body"]["sse"]
        )
    assert events[prompts["long"]] - events[prompts["short"]] >= 140

    calls, replies = {}, {}

    def replay(name: str) -> None:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK, name=name):
            replies[name] = _stream(client, prompts[name])

    for name in prompts:
        new_process()
        replay(name)  # warm: the first replay of a process builds what it keeps
        new_process()
        calls[name] = _ghostrun_calls(lambda name=name: replay(name))

    assert replies == {name: "Echo: " + prompt for name, prompt in prompts.items()}
    assert calls["long"] == calls["short"], calls


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    """Each call of ``_validate.<name>``, its arguments kept."""
    seen: list[Any] = []
    original = getattr(_validate, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(_validate, name, counted)
    return seen


def test_replayed_headers_are_checked_at_once_and_a_bad_one_still_refused(
    provider: ProviderSimulator,
    cassette_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    new_process: Callable[[], None],
) -> None:
    client = _client(provider)
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    new_process()
    one_by_one = _counting(monkeypatch, "header_problem")
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert one_by_one == []

    (path,) = cassette_dir.glob("*.json")
    document = json.loads(path.read_text())
    document["responses"][0]["headers"]["x-note"] = "line\nbreak"
    path.write_text(json.dumps(document))
    with (
        pytest.raises((ghostrun.CassetteError, ghostrun.DamagedCassette)) as info,
        ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK),
    ):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert "x-note" in str(info.value) and "line break" in str(info.value)


def test_closing_a_replayed_test_checks_its_trajectory_without_the_field_walk(
    provider: ProviderSimulator,
    cassette_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    new_process: Callable[[], None],
) -> None:
    client = _client(provider)
    prompts = ["one", "two", "three"]

    def calls() -> None:
        for prompt in prompts:
            client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": prompt}]
            )

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        calls()
    new_process()
    walked = _counting(monkeypatch, "_step")
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        calls()
    assert walked == []

    (path,) = (cassette_dir / "trajectories").glob("t-*.json")
    document = json.loads(path.read_text())
    assert len([s for s in document["steps"] if s.get("kind", "model") == "model"]) == 3
    document["steps"][1]["tokens"]["out"] = -1
    path.write_text(json.dumps(document))
    new_process()
    with (
        pytest.raises(ghostrun.CassetteError, match=r"steps\[1\]\.tokens\.out"),
        ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"),
    ):
        calls()


_NAMES = st.sampled_from(
    ["content-type", "x-request-id", "Server", "location", "set-cookie", "proxy-auth", "a b", ""]
) | st.text(alphabet="abcxyz-_:\u00e9 ", min_size=1, max_size=8)
_VALUES = st.sampled_from(
    ["application/json", "", "https://x.test/a", "javascript:alert(1)", "a\tb", "x" * 17000]
) | st.text(alphabet="ab \t\r\n\x00\x7f\u00e9/:", max_size=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_NAMES, _VALUES, max_size=6))
def test_headers_checked_at_once_never_let_through_one_header_problem_refuses(
    headers: dict[str, str],
) -> None:
    one_by_one = all(header_problem(name, value) is None for name, value in headers.items())
    if headers_replayable(headers):
        assert one_by_one
    elif not {name.lower() for name in headers} & {"location", "content-location"}:
        assert not one_by_one  # only a redirect's URL is left to the one-by-one check


_ANY = st.sampled_from([None, True, -1, 0, 2, "s", "model", "answer", "tool", [], {}, 1.5])
_MODEL_STEP = {"session": 0, "method": "POST", "endpoint": "e", "key": "k", "prompt": "p"}
_MODEL_STEP |= {"response": 0, "model": None, "tool_calls": [{"name": "f"}], "tokens": None}
_ANSWER_STEP = {"kind": "answer", "session": 0, "text": "done"}
_FIELDS = [*_MODEL_STEP, "kind", "text", "changed", "rebased_from", "in", "out", "name"]


@st.composite
def _steps(draw: st.DrawFn) -> dict[str, Any]:
    """A valid step, or one with a field (or a field of its tokens or call) changed or gone."""
    step = json.loads(json.dumps(draw(st.sampled_from([_MODEL_STEP, _ANSWER_STEP]))))
    if step.get("kind") != "answer" and draw(st.booleans()):
        step["tokens"] = {"in": 1, "out": 2}
    for _ in range(draw(st.integers(0, 2))):
        field = draw(st.sampled_from(_FIELDS))
        holder = step
        if field in ("in", "out"):
            holder = step["tokens"] if isinstance(step.get("tokens"), dict) else step
        elif field == "name" and isinstance(step.get("tool_calls"), list) and step["tool_calls"]:
            holder = step["tool_calls"][0]
        if draw(st.booleans()):
            holder.pop(field, None)
        else:
            holder[field] = draw(_ANY)
    return step


@settings(max_examples=1500, deadline=None)
@given(
    st.fixed_dictionaries(
        {"version": st.sampled_from([1, 1, 2, True]), "test": st.sampled_from(["t", None])},
        optional={"steps": st.lists(_steps(), max_size=3)},
    )
)
def test_the_plain_trajectory_check_accepts_only_what_the_full_one_accepts(
    document: dict[str, Any],
) -> None:
    if _validate._plain_trajectory(document):
        _validate._trajectory(document, "t")  # raises if it would refuse it


def test_the_plain_trajectory_check_takes_the_trajectory_replay_reads() -> None:
    steps = [_MODEL_STEP, {**_MODEL_STEP, "tokens": {"in": 3, "out": 4}}, _ANSWER_STEP]
    assert _validate._plain_trajectory({"version": 1, "test": "t", "steps": steps})


# Ghostrun's own calls (Python functions, and the C functions its code calls) per replayed
# request, trajectory check included (issue 43): 238 for an openai stream and 211 for an
# anthropic one before the store read a plain cassette without scanning its bytes or walking
# its request body, decoded a stream's chunks in one step, checked a trajectory's step in
# one look-up and walked a key's body by its objects and lists only (189 and 195 after).
_CALLS_PER_REQUEST = {"openai": 205, "anthropic": 203}


def _anthropic_stream(client: Any, prompt: str) -> str:
    events = client.messages.create(
        model="claude-sim",
        max_tokens=64,
        messages=[{"role": "user", "content": prompt}],
        stream=True,
    )
    return "".join(e.delta.text for e in events if e.type == "content_block_delta")


@pytest.mark.parametrize("lane", sorted(_CALLS_PER_REQUEST))
def test_a_replayed_stream_request_costs_ghostrun_a_bounded_number_of_calls(
    provider: ProviderSimulator,
    cassette_dir: Path,
    new_process: Callable[[], None],
    lane: str,
) -> None:
    import anthropic

    if lane == "openai":
        client: Any = _client(provider)
        ask: Callable[[Any, str], str] = _stream
    else:
        client = anthropic.Anthropic(base_url=provider.url(), api_key="sk-test", max_retries=0)
        ask = _anthropic_stream
    prompts = [f"question {i}:" + " w" * 25 for i in range(3)]

    def run(mode: str, count: int) -> None:
        name = f"t{count}"
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=LOOPBACK, name=name):
            for prompt in prompts[:count]:
                assert ask(client, prompt).endswith(prompt)

    def replay(count: int) -> None:
        run("replay", count)

    calls = {}
    for count in (3, 1):
        run("record", count)
    for count in (3, 1):
        new_process()
        replay(count)  # warm: the first replay of a process builds what it keeps
        new_process()
        calls[count] = _ghostrun_calls(lambda count=count: replay(count))
    per_request = (calls[3] - calls[1]) / 2
    assert per_request <= _CALLS_PER_REQUEST[lane], (per_request, calls)


@st.composite
def _nested(draw: st.DrawFn) -> Any:
    """A JSON value nested 0 to 110 levels deep, its strings holding brackets or not."""
    value: Any = draw(st.sampled_from(["[{", "plain", 3, None, "}]]"]))
    noted = draw(st.sampled_from([(), ("[[",), ("{", "x")]))  # strings beside each level
    for _ in range(draw(st.integers(0, 110))):
        value = [value, *noted] if draw(st.booleans()) else {"k": value, **dict.fromkeys(noted)}
    return value


@settings(max_examples=300, deadline=None)
@given(request=_nested(), response=_nested(), streamed=st.booleans())
def test_a_plain_cassettes_depth_is_refused_exactly_when_the_walk_refuses_it(
    request: Any, response: Any, streamed: bool
) -> None:
    """Its JSON bodies are bounded by their brackets, not the file's: the same verdicts."""
    from ghostrun._store._limits import LIMITS, json_depth

    key = "0" * 32
    body = {"sse": ["data: {[[[[\n\n"] * 60} if streamed else {"json": response}
    document = {
        "key": key,
        "version": 2,
        "request": {"method": "POST", "url": "http://127.0.0.1/v1", "body": {"json": request}},
        "responses": [{"status": 200, "headers": {"content-type": "text/plain"}, "body": body}],
    }
    within = json_depth(document, LIMITS["json_depth"].value) <= LIMITS["json_depth"].value
    for data in (orjson.dumps(document), None):
        try:
            _validate._check(document, f"/cassettes/{key}.json", "cassette", data)
        except ghostrun.CassetteError as exc:
            assert not within and "json_depth" in str(exc), exc
        else:
            assert within
