"""A test's trajectory (DESIGN §3, §2 ``on_unplayed``): one file per test, checked in replay.

Through three real agents (a hand-written openai tool loop, openai-agents'
``Runner``, pydantic-ai) against the loopback provider, whose model calls
``lookup_order``, then ``refund``, then answers: three steps.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from agents_under_test import AGENTS, KEY, PLAN, default_results, tool_loop
from helpers import AGENT_NAMES
from simulator import ProviderSimulator

import ghostrun
from ghostrun._recording import _trajectory

LOOPBACK = ("127.0.0.1",)


def first_words(text: str) -> str:
    """What a trajectory keeps of an answer: its first eight words."""
    words = text.split()
    return " ".join(words[:8]) + (" …" if len(words) > 8 else "")


TEST = "tests/test_agent.py::test_refund"


@pytest.fixture
def new_process() -> Iterator[Callable[[], None]]:
    """Start the count of each test's sessions afresh, as the next run's process would."""
    saved = _trajectory.swap(_trajectory.Tracker())

    def fresh() -> None:
        _trajectory.swap(_trajectory.Tracker())

    yield fresh
    _trajectory.swap(saved)


@pytest.fixture
def agent_provider(provider: ProviderSimulator) -> ProviderSimulator:
    provider.tool_plan = list(PLAN)
    return provider


def run(
    agent: Callable[..., Any],
    provider: ProviderSimulator,
    cassette_dir: Path,
    mode: str,
    **knobs: Any,
) -> tuple[ghostrun.Session, Any]:
    with ghostrun.session(
        mode=mode, cassette_dir=cassette_dir, hosts=LOOPBACK, name=TEST
    ) as session:
        answer = agent(provider.base_url, **knobs)
    return session, answer


def trajectory_files(cassette_dir: Path) -> list[Path]:
    return sorted((cassette_dir / "trajectories").glob("*.json"))


@pytest.mark.parametrize("agent", AGENT_NAMES)
def test_recording_writes_one_readable_trajectory_that_replay_leaves_unchanged(
    agent_provider: ProviderSimulator,
    cassette_dir: Path,
    new_process: Callable[[], None],
    agent: str,
) -> None:
    recorded, answer = run(AGENTS[agent], agent_provider, cassette_dir, "record")
    assert answer and recorded.recorded == 3
    (path,) = trajectory_files(cassette_dir)
    assert path.name.startswith("tests_test_agent.py--test_refund-")
    written = path.read_bytes()
    document = orjson.loads(written)
    assert document["version"] == 1 and document["test"] == TEST
    *steps, last = document["steps"]
    assert last == {"kind": "answer", "session": 0, "text": first_words(answer)}
    assert [s["method"] for s in steps] == ["POST"] * 3
    assert all(s["endpoint"].endswith("/v1/chat/completions") for s in steps)
    assert [[c["name"] for c in s["tool_calls"]] for s in steps] == [
        ["lookup_order"],
        ["refund"],
        [],
    ]
    assert steps[0]["tool_calls"][0]["arguments"] == {"order_id": "A123"}
    assert all(s["tokens"]["in"] > 0 and s["tokens"]["out"] > 0 for s in steps)
    assert steps[1]["tokens"]["in"] > steps[0]["tokens"]["in"]  # the history grows
    assert [s["response"] for s in steps] == [0, 0, 0]
    assert all((cassette_dir / f"{s['key']}.json").is_file() for s in steps)
    assert KEY not in written.decode()

    agent_provider.stop()
    new_process()
    replayed, again = run(AGENTS[agent], agent_provider, cassette_dir, "replay")
    assert again == answer and replayed.replayed == 3
    assert path.read_bytes() == written  # replay never rewrites it


@pytest.mark.parametrize("agent", AGENT_NAMES)
def test_an_agent_that_stops_a_step_early_fails_in_replay_naming_the_unplayed_step(
    agent_provider: ProviderSimulator,
    cassette_dir: Path,
    new_process: Callable[[], None],
    agent: str,
) -> None:
    run(AGENTS[agent], agent_provider, cassette_dir, "record")
    agent_provider.stop()
    new_process()
    with pytest.raises(ghostrun.UnplayedSteps) as caught:
        run(AGENTS[agent], agent_provider, cassette_dir, "replay", max_steps=2)
    message = str(caught.value)
    assert isinstance(caught.value, AssertionError)
    assert f"{TEST} used 2 of the 3 steps" in message, message
    assert "step 3: POST http://127.0.0.1:" in message, message
    assert "/v1/chat/completions: 'refund issued: 40 EUR'" in message, message
    assert "step 2:" not in message


def test_on_unplayed_warn_and_ignore_relax_it_from_the_session_configure_and_environment(
    agent_provider: ProviderSimulator,
    cassette_dir: Path,
    new_process: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run(tool_loop, agent_provider, cassette_dir, "record")
    agent_provider.stop()

    def replay_two_steps(**session: Any) -> None:
        new_process()
        with ghostrun.session(
            mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK, name=TEST, **session
        ):
            tool_loop(agent_provider.base_url, max_steps=2)

    with pytest.warns(ghostrun.UnplayedStepsWarning, match="used 2 of the 3 steps"):
        replay_two_steps(on_unplayed="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ghostrun.UnplayedStepsWarning)
        replay_two_steps(on_unplayed="ignore")
        monkeypatch.setenv("GHOSTRUN_ON_UNPLAYED", "ignore")
        replay_two_steps()
        monkeypatch.delenv("GHOSTRUN_ON_UNPLAYED")
        ghostrun.configure(on_unplayed="ignore")
        try:
            replay_two_steps()
            with pytest.raises(ghostrun.UnplayedSteps):  # the session's own beats configure()
                replay_two_steps(on_unplayed="fail")
        finally:
            ghostrun.configure(on_unplayed=None)
    with pytest.raises(ghostrun.UnplayedSteps):
        replay_two_steps()
    with pytest.raises(ValueError, match="expected 'fail', 'warn' or 'ignore'"):
        ghostrun.session(on_unplayed="maybe")
    monkeypatch.setenv("GHOSTRUN_ON_UNPLAYED", "loud")
    with pytest.raises(ValueError, match="GHOSTRUN_ON_UNPLAYED"):
        replay_two_steps()


def test_a_test_that_fails_anyway_is_not_also_told_of_unplayed_steps(
    agent_provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    run(tool_loop, agent_provider, cassette_dir, "record")
    agent_provider.stop()
    new_process()
    with pytest.raises(KeyError):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK, name=TEST):
            tool_loop(agent_provider.base_url, max_steps=1)
            raise KeyError("the test's own failure")


def test_a_longer_run_and_a_second_session_of_the_test_are_not_unplayed_steps(
    agent_provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    for _ in range(2):  # one test, two sessions: each keeps its own part of the trajectory
        run(tool_loop, agent_provider, cassette_dir, "record")
    (path,) = trajectory_files(cassette_dir)
    sessions = [s["session"] for s in orjson.loads(path.read_bytes())["steps"]]
    assert sessions == [0, 0, 0, 0, 1, 1, 1, 1]  # three model steps and the answer, twice
    agent_provider.stop()
    new_process()
    run(tool_loop, agent_provider, cassette_dir, "replay")
    with pytest.raises(ghostrun.UnplayedSteps, match="used 1 of the 3 steps"):
        run(tool_loop, agent_provider, cassette_dir, "replay", max_steps=1)


def test_a_corrupt_trajectory_is_a_cassette_error_naming_the_file_and_field(
    agent_provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    run(tool_loop, agent_provider, cassette_dir, "record")
    (path,) = trajectory_files(cassette_dir)
    document = orjson.loads(path.read_bytes())
    document["steps"][1]["response"] = "first"
    broken = orjson.dumps(document)
    path.write_bytes(broken)
    new_process()
    with pytest.raises(ghostrun.CassetteError) as caught:
        run(tool_loop, agent_provider, cassette_dir, "replay")
    assert str(path) in str(caught.value)
    assert "steps[1].response: expected an integer" in str(caught.value)
    new_process()
    with pytest.raises(ghostrun.CassetteError):
        run(tool_loop, agent_provider, cassette_dir, "record")
    assert path.read_bytes() == broken  # never overwritten


def test_a_secret_in_a_prompt_or_a_tool_argument_never_reaches_the_trajectory(
    agent_provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    leaked = "sk-" + "proj-leakedleakedleakedleaked0123"
    agent_provider.tool_args = {"order_id": "A123", "note": f"use {leaked}"}

    def results(name: str, arguments: dict[str, Any]) -> str:
        return f"{default_results(name, arguments)} with key {leaked}"

    run(tool_loop, agent_provider, cassette_dir, "record", results=results)
    (path,) = trajectory_files(cassette_dir)
    text = path.read_text()
    assert leaked not in text and KEY not in text
    assert '"note": "use ' in text  # the argument is there, masked


@pytest.mark.parametrize("agent", AGENT_NAMES)
def test_a_changed_tool_result_is_a_miss_at_its_step_showing_only_the_new_tool_message(
    agent_provider: ProviderSimulator,
    cassette_dir: Path,
    new_process: Callable[[], None],
    agent: str,
) -> None:
    run(AGENTS[agent], agent_provider, cassette_dir, "record")
    agent_provider.stop()
    new_process()

    def changed(name: str, arguments: dict[str, Any]) -> str:
        return default_results(name, arguments).replace("Monday", "Tuesday")

    with pytest.raises(ghostrun.CacheMiss) as caught:
        run(AGENTS[agent], agent_provider, cassette_dir, "replay", results=changed)
    message = str(caught.value)
    assert f"step 2 of 3 of {TEST}: the request differs from the recorded step 2" in message, (
        message
    )
    assert "The history up to step 1 is unchanged; what step 2 added:" in message, message
    changes = [
        line.strip()[1:]
        for line in message.splitlines()
        if line.strip()[:1] in "+-" and not line.strip().startswith(("---", "+++"))
    ]
    assert changes and all(line.startswith("messages[") for line in changes), message
    assert len({line.split("]")[0] for line in changes}) == 1  # one message changed
    assert any("Monday" in line for line in changes) and any("Tuesday" in line for line in changes)
    assert "Where is my refund" not in message  # the user's turn, unchanged, is not shown
    assert "Closest recorded request" not in message


def test_check_and_prune_keep_the_cassettes_a_committed_trajectory_names(
    agent_provider: ProviderSimulator,
    cassette_dir: Path,
    new_process: Callable[[], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from ghostrun._recording import _runlog
    from ghostrun._tools import _cli

    with _runlog.PROCESS.collecting(_runlog.RunLog()):
        run(tool_loop, agent_provider, cassette_dir, "record")
        _runlog.write_run()
        # A later run that did not run the agent's test (narrowed, or another script).
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, name="other"):
            tool_loop(agent_provider.base_url, max_steps=1)
        _runlog.write_run()
    capsys.readouterr()
    assert _cli.main(["check", "--cassette-dir", str(cassette_dir)]) == 0
    assert "OK: every cassette and verdict was used" in capsys.readouterr().out
    assert _cli.main(["prune", "--yes", "--cassette-dir", str(cassette_dir)]) == 0
    assert len(list(cassette_dir.glob("*.json"))) == 3

    for path in trajectory_files(cassette_dir):
        path.unlink()
    assert _cli.main(["check", "--cassette-dir", str(cassette_dir)]) == 1
    assert "2 stale cassettes" in capsys.readouterr().out  # step 1 is also "other"'s


def test_review_shows_the_tokens_a_prompt_change_costs_per_test_and_per_step(
    agent_provider: ProviderSimulator,
    tmp_path: Path,
    new_process: Callable[[], None],
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json
    import shutil

    from agents_under_test import SYSTEM

    from ghostrun._tools import _cli

    before, after = tmp_path / "before", tmp_path / "after"
    run(tool_loop, agent_provider, before, "record")
    shutil.copytree(before, after)
    new_process()
    longer = SYSTEM + " Always check the order twice and be kind."
    run(tool_loop, agent_provider, after, "record", system=longer)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-sim": {"in": 2.5, "out": 10.0}}))
    capsys.readouterr()

    assert _cli.main(["review", str(before), str(after)]) == 0
    text = capsys.readouterr().out
    old, new = (
        [
            step
            for step in orjson.loads(next((d / "trajectories").glob("*.json")).read_bytes())[
                "steps"
            ]
            if step.get("kind", "model") == "model"
        ]
        for d in (before, after)
    )
    was, now = (sum(s["tokens"]["in"] for s in steps) for steps in (old, new))
    assert now - was == 3 * 8  # eight more words in each of the three steps' prompts
    assert f"\n  tokens: in {was} -> {now} (+{now - was}), out " in text, text
    first = (old[0]["tokens"]["in"], new[0]["tokens"]["in"])
    assert f"    step 1: in {first[0]} -> {first[1]} (+8), out " in text, text
    assert "request 1: POST http://127.0.0.1:" in text
    assert text.splitlines()[1].endswith(f", tokens in {was} -> {now} (+{now - was}), out 9")

    assert _cli.main(["review", str(before), str(after), "--format", "json"]) == 0
    (test,) = json.loads(capsys.readouterr().out)["tests"]
    assert test["name"] == TEST
    assert test["tokens"]["before"]["in"] == was and test["tokens"]["after"]["in"] == now
    assert [s["step"] for s in test["tokens"]["steps"]] == [1, 2, 3]

    assert _cli.main(["review", str(before), str(after), "--prices", str(prices)]) == 0
    priced = capsys.readouterr().out
    cost = lambda steps: sum(  # noqa: E731
        s["tokens"]["in"] * 2.5 / 1e6 + s["tokens"]["out"] * 10.0 / 1e6 for s in steps
    )
    assert f"cost ${cost(old):.4f} -> ${cost(new):.4f}" in priced, priced

    from ghostrun._recording import _runlog

    with _runlog.PROCESS.collecting(_runlog.RunLog()):
        new_process()
        run(tool_loop, agent_provider, after, "replay", system=longer)
        _runlog.write_run()
    report = tmp_path / "report.html"
    args = ["report", "--cassette-dir", str(after), "-o", str(report), "--prices", str(prices)]
    assert _cli.main(args) == 0
    page = report.read_text()
    total_out = sum(s["tokens"]["out"] for s in new)
    assert f"tokens: {now} in, {total_out} out, ${cost(new):.4f}" in page
    assert f"(replayed, tokens: {new[0]['tokens']['in']} in, " in page


def test_a_transient_failure_retried_past_is_no_step(
    agent_provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    import openai

    def ask() -> None:
        client = openai.OpenAI(base_url=agent_provider.base_url + "/v1", api_key=KEY)
        client.chat.completions.create(
            model="gpt-sim", messages=[{"role": "user", "content": "hello"}]
        )

    agent_provider.fail_next(429)
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name=TEST) as s:
        ask()
    assert agent_provider.served == 2
    assert ghostrun.expect_trajectory(s).steps == 1
    (path,) = trajectory_files(cassette_dir)
    kinds = [s.get("kind", "model") for s in orjson.loads(path.read_bytes())["steps"]]
    assert kinds == ["model", "answer"]
    new_process()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK, name=TEST):
        ask()  # one step, as recorded: nothing unplayed


def test_only_json_rpc_messages_and_their_endpoints_plumbing_are_mcp_plumbing() -> None:
    """A prompt that quotes JSON-RPC is still a model call; a batch, a reply to the server,
    and the GET and DELETE at the endpoint that took JSON-RPC are plumbing; a
    ``tools/call`` is the tool step, and a GET elsewhere is whatever it was."""
    from ghostrun._recording._steps import Step, mcp_plumbing, settled
    from ghostrun._store._cassette import Recording

    ok = Recording(200, [], b"{}")
    mcp, api = "http://127.0.0.1:8000/mcp", "https://api.openai.com/v1/chat/completions"

    def step(method: str, url: str, body: object = None) -> Step:
        sent = b"" if body is None else orjson.dumps(body)
        return Step(method, url, "k", 0, sent, ok)

    quoting = step("POST", api, {"model": "m", "messages": [{"content": '"jsonrpc": "2.0"'}]})
    hello = step("POST", mcp, {"jsonrpc": "2.0", "id": 0, "method": "initialize"})
    batch = step("POST", mcp, [{"jsonrpc": "2.0", "method": "notifications/initialized"}])
    reply = step("POST", mcp, {"jsonrpc": "2.0", "id": 7, "result": {}})
    call = step("POST", mcp, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}})
    listen, close = step("GET", mcp), step("DELETE", mcp + "?session=1")
    other = step("GET", "http://127.0.0.1:8000/health")
    steps = [quoting, hello, batch, reply, call, listen, close, other]
    assert mcp_plumbing(steps) == {id(s) for s in (hello, batch, reply, listen, close)}
    assert settled(steps) == [quoting, call, other]
    assert mcp_plumbing([quoting, other]) == set()  # no JSON-RPC: nothing is plumbing
