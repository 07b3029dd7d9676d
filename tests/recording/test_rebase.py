"""Rebase (DESIGN §2): after an SDK upgrade, re-key what changed outside the conversation.

A suite is recorded through the real SDKs (openai chat and Responses,
anthropic, pydantic-ai) against the loopback provider; then the requests change
the way an upgrade changes them (a new field, a renamed one, a default moved
from 8192 to 64000) and a rebase run must replay every step without a request
to the provider, write the new cassettes and note the steps in the trajectory,
after which a plain replay passes and writes nothing. A changed prompt still
misses, naming the field.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import orjson
import pytest
import vcr
from agents_under_test import PLAN, QUESTION, TOOLS, default_results
from helpers import ROOT
from simulator import ProviderSimulator

import ghostrun
from ghostrun._recording import _trajectory
from ghostrun._recording._cassettes import Cassettes
from ghostrun._tools._cli import main

pytest_plugins = ["pytester"]

KEY = "sk-" + "test-rebase-0123456789abcdef"
LOOPBACK = ["127.0.0.1"]
UPGRADE = {"parallel_tool_calls": True, "max_tokens": 64000}  # what the new SDK sends
SYSTEM = "You are a support agent. Use the tools."


@pytest.fixture
def new_process() -> Iterator[Callable[[], None]]:
    """Start the count of each test's sessions afresh, as the next run's process would."""
    saved = _trajectory.swap(_trajectory.Tracker())
    yield lambda: _trajectory.swap(_trajectory.Tracker()) and None
    _trajectory.swap(saved)


@pytest.fixture
def agent_provider(provider: ProviderSimulator) -> ProviderSimulator:
    provider.tool_plan = list(PLAN)
    return provider


# -- the app under test --------------------------------------------------------------------


def refund_agent(url: str, extra: dict[str, Any], system: str = SYSTEM) -> str | None:
    """An openai tool loop: lookup_order, refund, then the answer (three model calls)."""
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": QUESTION},
    ]
    for _ in range(5):
        reply = client.chat.completions.create(
            model="gpt-sim",
            messages=messages,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            max_tokens=8192,
            extra_body=extra,
        )
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            output = default_results(call.function.name, json.loads(call.function.arguments))  # type: ignore[union-attr]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return None


def greeting(url: str, extra: dict[str, Any]) -> str | None:
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-sim",
        messages=[{"role": "user", "content": "Say hello"}],
        max_tokens=8192,
        extra_body=extra,
    )
    return reply.choices[0].message.content


SUITE: dict[str, Callable[[str, dict[str, Any]], str | None]] = {
    "tests/test_app.py::test_refund": refund_agent,
    "tests/test_app.py::test_greeting": greeting,
}


def run_suite(
    url: str, cassette_dir: Path, mode: str, extra: dict[str, Any], **session: Any
) -> dict[str, tuple[ghostrun.Session, str | None]]:
    out = {}
    for name, test in SUITE.items():
        with ghostrun.session(
            mode=mode, cassette_dir=cassette_dir, hosts=LOOPBACK, name=name, **session
        ) as s:
            answer = test(url, extra)
        out[name] = (s, answer)
    return out


def _shaped(text: str) -> str:
    """Keys and test names made alike, to compare a message with the one a page shows."""
    text = re.sub(r"\b[0-9a-f]{32}\b", "KEY", text)
    return re.sub(r"step \d+ of \d+ of \S+", "step N", text)


def files(directory: Path) -> dict[str, bytes]:
    """Every cassette and trajectory, by its path: what a run wrote."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for pattern in ("*.json", "trajectories/*.json")
        for p in directory.glob(pattern)
    }


def trajectory(directory: Path, test: str) -> list[dict[str, Any]]:
    """The model steps of a test's trajectory (the steps a rebase compares with)."""
    path = _trajectory.trajectory_path(directory, test)
    steps: list[dict[str, Any]] = orjson.loads(path.read_bytes())["steps"]
    return [step for step in steps if step.get("kind", "model") == "model"]


# -- openai chat, end to end -----------------------------------------------------------------


def test_a_suite_recorded_before_an_sdk_upgrade_rebases_then_replays_offline(
    agent_provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    url = agent_provider.base_url
    recorded = run_suite(url, cassette_dir, "record", {})
    served = agent_provider.served
    assert served == 4
    before = files(cassette_dir)
    old_keys = {name: [s["key"] for s in trajectory(cassette_dir, name)] for name in SUITE}

    # The upgrade: every request now carries parallel_tool_calls, and max_tokens moved.
    new_process()
    with pytest.raises(ghostrun.CacheMiss):
        run_suite(url, cassette_dir, "replay", UPGRADE)
    new_process()
    rebased = run_suite(url, cassette_dir, "rebase", UPGRADE)
    assert agent_provider.served == served  # not one request reached the provider
    for name, (session, answer) in rebased.items():
        assert answer == recorded[name][1]
        steps = len(old_keys[name])
        assert (session.rebased, session.replayed, session.recorded) == (steps, steps, 0)
        assert session.misses == []
    after = files(cassette_dir)
    assert set(before) < set(after)
    assert len(set(after) - set(before)) == 4  # one new cassette per step
    assert all(after[path] == data for path, data in before.items() if "trajectories" not in path)

    steps = trajectory(cassette_dir, "tests/test_app.py::test_refund")
    assert [s["rebased_from"] for s in steps] == old_keys["tests/test_app.py::test_refund"]
    assert all(f"{s['key']}.json" in set(after) - set(before) for s in steps)
    assert [[c["name"] for c in s["tool_calls"]] for s in steps] == [
        ["lookup_order"],
        ["refund"],
        [],
    ]
    assert steps[0]["changed"] == [
        {"path": "max_tokens", "before": 8192, "after": 64000},
        {"path": "parallel_tool_calls", "after": True},
    ]
    new = orjson.loads(after[f"{steps[0]['key']}.json"])
    old = orjson.loads(before[f"{steps[0]['rebased_from']}.json"])
    assert new["request"]["body"]["json"]["parallel_tool_calls"] is True
    assert new["responses"] == old["responses"]  # the recorded answer, its recording day kept
    assert KEY not in b"".join(after.values()).decode()

    # A plain replay of the upgraded suite now passes, and writes nothing.
    new_process()
    replayed = run_suite(url, cassette_dir, "replay", UPGRADE)
    assert agent_provider.served == served
    assert all(s.misses == [] and s.rebased == 0 for s, _ in replayed.values())
    assert {n: a for n, (_, a) in replayed.items()} == {n: a for n, (_, a) in recorded.items()}
    assert files(cassette_dir) == after


def test_a_changed_prompt_still_misses_naming_the_field_and_writes_nothing(
    agent_provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    url = agent_provider.base_url
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        refund_agent(url, {})
    served, before = agent_provider.served, files(cassette_dir)

    new_process()
    with (
        pytest.raises(ghostrun.CacheMiss) as caught,
        ghostrun.session(mode="rebase", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t") as s,
    ):
        refund_agent(url, UPGRADE, system="You are a terse support agent.")
    message = str(caught.value)
    assert "rebase: not rebased: this request differs from step 1 of 3 of t" in message
    assert "OpenAI chat) in the conversation: messages[0].content." in message
    assert "re-record this test" in message
    assert '+messages[0].content: "You are a terse support agent."' in message  # the step diff
    assert (s.rebased, s.replayed, len(s.misses)) == (0, 0, 1)
    page = _shaped((ROOT / "docs" / "evolving-a-suite.md").read_text(encoding="utf-8"))
    said = [line for line in message.splitlines() if line.startswith(("  rebase:", "  The conv"))]
    assert len(said) == 2 and all(_shaped(line) in page for line in said)  # the page shows it
    assert agent_provider.served == served
    assert files(cassette_dir) == before  # neither a cassette nor the trajectory was written


def test_only_the_steps_before_a_conversation_change_are_rebased_and_the_trajectory_is_kept(
    agent_provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    url = agent_provider.base_url
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        refund_agent(url, {})
    path = _trajectory.trajectory_path(cassette_dir, "t")
    recorded = path.read_bytes()

    def results(name: str, arguments: dict[str, Any]) -> str:  # the tool now answers otherwise
        return "order A123: lost in transit" if name == "lookup_order" else "refund issued"

    new_process()
    with (
        pytest.raises(ghostrun.CacheMiss) as caught,
        ghostrun.session(mode="rebase", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t") as s,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(f"{__name__}.default_results", results)
        refund_agent(url, UPGRADE)
    assert "step 2 of 3 of t" in str(caught.value)
    assert "in the conversation: messages[3].content." in str(caught.value)
    assert s.rebased == 1  # step 1 was rebased (its cassette is written: it is right)
    assert path.read_bytes() == recorded  # a failed rebase leaves the trajectory as recorded


# -- more SDKs and formats --------------------------------------------------------------------


def responses_ask(url: str, extra: dict[str, Any]) -> str:
    client = openai.OpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    reply = client.responses.create(
        model="gpt-sim", input="Where is order A123?", max_output_tokens=1024, extra_body=extra
    )
    return reply.output_text


def anthropic_ask(url: str, extra: dict[str, Any]) -> str:
    client = anthropic.Anthropic(base_url=url, api_key="sk-ant-" + KEY, max_retries=0)
    arguments: dict[str, Any] = {
        "model": "claude-opus-4-7",
        "max_tokens": 8192,
        "system": "Answer briefly.",
        "messages": [{"role": "user", "content": "Where is order A123?"}],
        **extra,
    }
    with client.messages.stream(**arguments) as events:
        return "".join(events.text_stream)


def record_then_rebase(
    ask: Callable[[str, dict[str, Any]], str],
    provider: ProviderSimulator,
    cassette_dir: Path,
    new_process: Callable[[], None],
    changed: dict[str, Any],
) -> tuple[ghostrun.Session, list[dict[str, Any]]]:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        answer = ask(provider.base_url, {})
    served = provider.served
    new_process()
    with ghostrun.session(
        mode="rebase", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"
    ) as session:
        assert ask(provider.base_url, changed) == answer
    assert provider.served == served
    return session, trajectory(cassette_dir, "t")


def test_openai_responses_rebases_a_new_reasoning_summary_and_store_flag(
    provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    changed = {"reasoning": {"summary": "auto"}, "store": False, "max_output_tokens": 4096}
    session, steps = record_then_rebase(responses_ask, provider, cassette_dir, new_process, changed)
    assert session.rebased == 1
    assert [c["path"] for c in steps[0]["changed"]] == [
        "max_output_tokens",
        "reasoning",
        "store",
    ]
    assert steps[0]["changed"][1] == {"path": "reasoning", "after": '{"summary":"auto"}'}


def test_anthropics_default_max_tokens_moving_to_64000_rebases_a_streamed_call(
    provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    session, steps = record_then_rebase(
        anthropic_ask, provider, cassette_dir, new_process, {"max_tokens": 64000}
    )
    assert session.rebased == 1
    assert steps[0]["changed"] == [{"path": "max_tokens", "before": 8192, "after": 64000}]
    assert steps[0]["tokens"]["out"] > 0

    # A limit below what the recorded answer used cannot have produced it: a miss.
    new_process()
    with (
        pytest.raises(ghostrun.CacheMiss) as caught,
        ghostrun.session(mode="rebase", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"),
    ):
        anthropic_ask(provider.base_url, {"max_tokens": 1})
    message = str(caught.value)
    assert (
        "Anthropic messages) in the conversation: max_tokens (the recorded answer used" in message
    )


def pydantic_ai_refund(url: str, settings: dict[str, Any]) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key=KEY, max_retries=0)
    model = OpenAIChatModel("gpt-sim", provider=OpenAIProvider(openai_client=client))
    agent = Agent(model, instructions="Use the tools.", model_settings=settings)  # type: ignore[arg-type]

    @agent.tool_plain
    def lookup_order(order_id: str) -> str:
        """Look up an order by its id."""
        return default_results("lookup_order", {"order_id": order_id})

    @agent.tool_plain
    def refund(order_id: str) -> str:
        """Refund an order by its id."""
        return default_results("refund", {"order_id": order_id})

    async def run() -> Any:
        async with client:  # closed in the loop it connected in: never by a later test's
            return await agent.run(QUESTION)

    return str(asyncio.run(run()).output)


def test_a_pydantic_ai_agent_rebases_every_step_of_its_tool_loop(
    agent_provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    settings = {"max_tokens": 64000, "parallel_tool_calls": False, "temperature": 0.2}
    session, steps = record_then_rebase(
        pydantic_ai_refund, agent_provider, cassette_dir, new_process, settings
    )
    assert session.rebased == 3 and len(steps) == 3
    assert [[c["name"] for c in s["tool_calls"]] for s in steps] == [
        ["lookup_order"],
        ["refund"],
        [],
    ]
    assert {c["path"] for s in steps for c in s["changed"]} == {
        "max_completion_tokens",  # pydantic-ai's name for it
        "parallel_tool_calls",
        "temperature",
    }


# -- without a trajectory, repeated requests, the recording day ------------------------------


def test_without_a_trajectory_the_closest_recording_answers_and_a_trajectory_is_written(
    provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        answer = greeting(provider.base_url, {})
    shutil.rmtree(cassette_dir / "trajectories")  # as an import leaves a suite
    (old,) = cassette_dir.glob("*.json")
    document = orjson.loads(old.read_bytes())
    document["responses"][0]["recorded_on"] = "2025-01-15"  # recorded long ago
    old.write_bytes(orjson.dumps(document))

    new_process()
    with ghostrun.session(
        mode="rebase", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"
    ) as session:
        assert greeting(provider.base_url, UPGRADE) == answer
    assert session.rebased == 1
    (step,) = trajectory(cassette_dir, "t")
    assert step["rebased_from"] == old.stem
    new = orjson.loads((cassette_dir / f"{step['key']}.json").read_bytes())
    assert new["responses"][0]["recorded_on"] == "2025-01-15"  # max_age still means something


def test_a_secret_in_a_changed_field_is_masked_in_the_cassette_and_the_trajectory(
    provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    secret = "sk-" + "proj-" + "Zq8" * 14  # secret-shaped, in a field outside the conversation
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        greeting(provider.base_url, {})
    new_process()
    with ghostrun.session(
        mode="rebase", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"
    ) as session:
        greeting(provider.base_url, {"user": secret, "metadata": {"api_token": secret}})
    assert session.rebased == 1
    written = b"".join(files(cassette_dir).values()).decode()
    assert secret not in written and KEY not in written
    (step,) = trajectory(cassette_dir, "t")
    assert [c["path"] for c in step["changed"]] == ["user", "metadata"]


def test_a_cassette_keyed_before_ignore_fields_was_set_is_rebased_to_the_key_it_has_now(
    provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        answer = greeting(provider.base_url, {"metadata": {"trace_id": "a1"}})
    served = provider.served
    ignoring = {"ignore_fields": ["metadata.trace_id"], "hosts": LOOPBACK, "name": "t"}
    for mode, rebased in (("rebase", 1), ("replay", 0)):
        new_process()
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, **ignoring) as session:
            assert greeting(provider.base_url, {"metadata": {"trace_id": "b2"}}) == answer
        assert (session.rebased, session.misses) == (rebased, [])
    (step,) = trajectory(cassette_dir, "t")
    assert step["changed"] == []  # nothing differs but what the key now leaves out
    assert provider.served == served


def test_a_rebase_that_cannot_write_hands_the_answer_on_and_fails_at_exit(
    provider: ProviderSimulator,
    cassette_dir: Path,
    new_process: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        answer = greeting(provider.base_url, {})
    before = files(cassette_dir)

    def full(*args: Any) -> int:
        raise OSError("No space left on device")

    monkeypatch.setattr(Cassettes, "write", full)
    new_process()
    with (
        pytest.raises(OSError, match="No space left"),
        ghostrun.session(mode="rebase", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"),
    ):
        assert greeting(provider.base_url, UPGRADE) == answer  # not an SDK retry: handed on
    assert files(cassette_dir) == before  # no trajectory names a cassette that is not there


@pytest.mark.parametrize("with_trajectory", [True, False])
def test_a_request_made_twice_is_rebased_to_its_answers_in_order(
    provider: ProviderSimulator,
    cassette_dir: Path,
    new_process: Callable[[], None],
    with_trajectory: bool,
) -> None:
    client = openai.OpenAI(base_url=provider.base_url + "/v1", api_key=KEY, max_retries=0)

    def sample(extra: dict[str, Any]) -> list[str]:
        return [
            client.chat.completions.create(
                model="gpt-sim",
                messages=[{"role": "user", "content": "A name for a cat?"}],
                extra_body=extra,
            ).id
            for _ in range(2)
        ]

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        ids = sample({})
    assert ids[0] != ids[1]
    if not with_trajectory:  # as an import leaves it: the run of the old key is stepped through
        shutil.rmtree(cassette_dir / "trajectories")
    new_process()
    with ghostrun.session(
        mode="rebase", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"
    ) as session:
        assert sample({"seed": 7}) == ids
    assert session.rebased == 2
    steps = trajectory(cassette_dir, "t")
    assert steps[0]["key"] == steps[1]["key"] and [s["response"] for s in steps] == [0, 1]


def test_a_rebase_session_is_guarded_like_a_replay_one(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with (
        pytest.raises(ghostrun.CacheMiss, match=r"127\.0\.0\.1"),
        ghostrun.session(mode="rebase", cassette_dir=cassette_dir, hosts=LOOPBACK),
    ):
        socket.create_connection((provider.host, provider.port), timeout=5).close()
    assert provider.served == 0


# -- after an import from vcrpy (issue 46: vcrpy never compared bodies, so suites drifted) ------


def test_after_a_vcrpy_import_one_rebase_rekeys_drifted_tests_and_conversation_changes_miss(
    provider: ProviderSimulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    new_process: Callable[[], None],
) -> None:
    monkeypatch.chdir(tmp_path)

    def ask(text: str, max_tokens: int) -> Any:
        body = {
            "model": "claude-opus-4-7",
            "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": text}],
        }
        headers = {"x-api-key": "sk-ant-" + KEY, "anthropic-version": "2023-06-01"}
        return httpx.post(provider.url("/v1/messages"), json=body, headers=headers).json()

    prompts = {
        "test_refund": "Where is my refund?",
        "test_order": "Where is my order?",
        "test_version": "Which version is installed?",
    }
    recorder = vcr.VCR(cassette_library_dir=str(tmp_path / "tests/cassettes/test_app"))
    answers = {}
    for test, text in prompts.items():
        with recorder.use_cassette(f"{test}.yaml", record_mode="all"):
            answers[test] = ask(text, 8192)
    assert main(["import", "tests", "--cassette-dir", "imported"]) == 0
    served = provider.served

    # Today's code: the default max_tokens moved (every test), one test's prompt changed.
    prompts["test_version"] = "Which version is installed? 2.3.1"

    def run(mode: str) -> dict[str, Any]:
        new_process()
        found: dict[str, Any] = {}
        for test, text in prompts.items():
            name = f"tests/test_app.py::{test}"
            try:
                with ghostrun.session(
                    mode=mode, cassette_dir="imported", hosts=LOOPBACK, name=name
                ) as session:
                    found[test] = (ask(text, 64000) == answers[test], session.rebased)
            except ghostrun.CacheMiss as exc:
                found[test] = str(exc)
        return found

    rebased = run("rebase")
    assert rebased["test_refund"] == (True, 1) and rebased["test_order"] == (True, 1)
    assert "in the conversation: messages[0].content." in rebased["test_version"]
    replayed = run("replay")
    assert replayed["test_refund"] == (True, 0) and replayed["test_order"] == (True, 0)
    assert "no recording for POST" in replayed["test_version"]
    assert provider.served == served


# -- choosing it, and the user's conversation fields -------------------------------------------


def test_rebase_is_chosen_by_the_environment_or_code_never_by_the_project_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GHOSTRUN_MODE", "rebase")
    assert ghostrun.session().mode is ghostrun.Mode.REBASE
    monkeypatch.delenv("GHOSTRUN_MODE")
    assert ghostrun.session(mode="rebase").mode is ghostrun.Mode.REBASE
    monkeypatch.setenv("CI", "true")
    assert ghostrun.session().mode is ghostrun.Mode.REPLAY  # CI's default is replay, not rebase
    (tmp_path / "pyproject.toml").write_text('[tool.ghostrun]\nmode = "rebase"\n')
    ghostrun.configure()  # re-read the table
    with pytest.raises(ValueError, match="'rebase' is chosen for one run, never by the project"):
        ghostrun.session()
    ghostrun.configure(mode="rebase")
    try:
        assert ghostrun.session().mode is ghostrun.Mode.REBASE
    finally:
        ghostrun.configure(mode=None)


@pytest.mark.parametrize("where", ["session", "configure", "environment", "project"])
def test_the_users_conversation_fields_make_a_sampling_change_a_miss(
    provider: ProviderSimulator,
    cassette_dir: Path,
    new_process: Callable[[], None],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    where: str,
) -> None:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        greeting(provider.base_url, {"temperature": 0})
    monkeypatch.chdir(tmp_path)
    fields: dict[str, Any] = {}
    if where == "session":
        fields = {"conversation_fields": ["temperature"]}
    elif where == "configure":
        ghostrun.configure(conversation_fields=["temperature"])
    elif where == "environment":
        monkeypatch.setenv("GHOSTRUN_CONVERSATION_FIELDS", "metadata.tenant, temperature")
    else:
        (tmp_path / "pyproject.toml").write_text(
            '[tool.ghostrun]\nconversation_fields = ["temperature"]\n'
        )
        ghostrun.configure()
    new_process()
    try:
        with (
            pytest.raises(ghostrun.CacheMiss, match="in the conversation: temperature"),
            ghostrun.session(
                mode="rebase", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t", **fields
            ),
        ):
            greeting(provider.base_url, {"temperature": 0.9})
    finally:
        ghostrun.configure(conversation_fields=None)


def test_a_conversation_field_that_can_never_match_fails_where_it_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError, match=r"conversation_fields: invalid path 'messages\[x'"):
        ghostrun.session(conversation_fields=["messages[x"])
    monkeypatch.setenv("GHOSTRUN_CONVERSATION_FIELDS", "a..b")
    with pytest.raises(ValueError, match=r"conversation_fields: invalid path 'a\.\.b'"):
        ghostrun.session()


# -- a pytest project, and the review ---------------------------------------------------------

PROJECT_TESTS = """
import os

import openai
import pytest

import ghostrun

URL = os.environ["SIM_URL"]
EXTRA = {EXTRA}
MARK = pytest.mark.ghostrun(cassette_dir="cassettes")


def ask(text):
    client = openai.OpenAI(base_url=URL + "/v1", api_key="sk-fake-000000000000", max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{{"role": "user", "content": text}}],
        max_tokens=8192,
        extra_body=EXTRA,
    )
    return reply.choices[0].message.content


@MARK
def test_refund():
    ghostrun.expect(ask("Where is my refund?")).contains("refund")


@MARK
def test_order():
    ghostrun.expect(ask("Where is my order?")).contains("order")
"""


def test_a_pytest_project_rebases_with_the_flag_and_review_lists_the_rebased_tests(
    pytester: pytest.Pytester,
    pytester_env: None,
    provider: ProviderSimulator,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_app=PROJECT_TESTS.format(EXTRA="{}"))
    pytester.runpytest_subprocess("--ghostrun-record").assert_outcomes(passed=2)
    served = provider.served
    assert served == 2
    cassettes = pytester.path / "cassettes"
    shutil.copytree(cassettes, pytester.path / "before")

    pytester.makepyfile(test_app=PROJECT_TESTS.format(EXTRA=repr(UPGRADE)))
    missed = pytester.runpytest_subprocess("--ghostrun-replay")
    missed.assert_outcomes(failed=2)
    rebased = pytester.runpytest_subprocess("--ghostrun-rebase")
    rebased.assert_outcomes(passed=2)
    assert provider.served == served
    assert len(list(cassettes.glob("*.json"))) == 4
    written = files(cassettes)
    pytester.runpytest_subprocess("--ghostrun-replay").assert_outcomes(passed=2)
    assert files(cassettes) == written and provider.served == served

    capsys.readouterr()
    review = ["review", "--cassette-dir", str(cassettes), str(pytester.path / "before")]
    assert main([*review, str(cassettes)]) == 0
    shown = capsys.readouterr().out
    assert (
        "Rebased: 2 tests (2 steps) replay their recorded answers; the requests changed "
        "outside the conversation only: `max_tokens` 8192 -> 64000, "
        "`parallel_tool_calls: true` (new)\n"
        "  test_app.py::test_order: 1 step\n"
        "  test_app.py::test_refund: 1 step\n"
    ) in shown
    page = (ROOT / "docs" / "evolving-a-suite.md").read_text(encoding="utf-8")
    section = shown[shown.index("Rebased: ") :].rstrip("\n")
    assert f"```text\n{section}\n```" in page  # the page shows this very output
    assert main([*review, str(cassettes), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [t["test"] for t in document["rebased"]] == [
        "test_app.py::test_order",
        "test_app.py::test_refund",
    ]
    assert document["rebased"][0]["changes"][0] == {
        "path": "max_tokens",
        "before": "8192",
        "after": "64000",
    }
    assert main([*review, str(cassettes), "--format", "markdown"]) == 0
    assert "### Rebased: 2 tests (2 steps)" in capsys.readouterr().out
