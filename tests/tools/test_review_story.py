"""``ghostrun review`` tells one story per test: a one-line prompt change in an agent suite.

Two agents (a hand-written openai Chat Completions tool loop, and an openai
Responses tool loop), a stream, a tool whose result carries a fresh uuid the
suite normalizes, and a test the change does not touch: recorded through the
real openai SDK against the loopback simulator into a git repository, committed,
then one line of the system prompt changes and the suite is re-recorded, as a
user would. The review must be bounded by the changed tests and their answer
diffs (see `bound`), count the test that now fails first, show the request
change once per test, and show no minted id and no normalized value.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from agents_under_test import KEY, PLAN, QUESTION, TOOLS, default_results, tool_loop
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core._config import settings
from ghostrun._recording import _runlog, _trajectory
from ghostrun._tools._cli import main
from ghostrun._tools._commands._review import suite_settings

pytest_plugins = ["pytester"]

LOOPBACK = ("127.0.0.1",)
SYSTEM = "You are a support agent. Use the tools.\nAnswer in one sentence."
CHANGED = "You are a support agent. Use the tools.\nAnswer in one short sentence, no dates."
TICKETS: list[str] = []  # the fresh ids the tool handed out, never to be shown


def final_answer(body: dict[str, Any]) -> str:
    """The model's last answer: it follows the system prompt's second line."""
    system = body.get("instructions") or body["messages"][0]["content"]
    return "Your refund is on its way." if "no dates" in system else "Refund on Monday."


def ticketed(name: str, arguments: dict[str, Any]) -> str:
    ticket = str(uuid.uuid4())
    TICKETS.append(ticket)
    return f"{default_results(name, arguments)} (ticket {ticket})"


def responses_loop(base_url: str, system: str) -> str:
    """An openai Responses tool loop: call the model, answer its function calls, until text."""
    client = openai.OpenAI(base_url=base_url + "/v1", api_key=KEY, max_retries=0)
    tools = [{"type": "function", **tool["function"]} for tool in TOOLS]
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    for _ in range(5):
        reply = client.responses.create(
            model="gpt-sim",
            instructions=system,
            input=items,
            tools=tools,  # type: ignore[arg-type]
        )
        calls = [item for item in reply.output if item.type == "function_call"]
        if not calls:
            return reply.output_text
        for call in calls:
            items.append({"type": "function_call", "call_id": call.call_id, "name": call.name,
                          "arguments": call.arguments})  # fmt: skip
            output = default_results(call.name, json.loads(call.arguments))
            items.append({"type": "function_call_output", "call_id": call.call_id,
                          "output": output})  # fmt: skip
    return ""


def streamed(base_url: str, system: str) -> str:
    client = openai.OpenAI(base_url=base_url + "/v1", api_key=KEY, max_retries=0)
    stream = client.chat.completions.create(
        model="gpt-sim",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": QUESTION}],
        stream=True,
    )
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def untouched(base_url: str, system: str) -> str:
    return streamed(base_url, "You greet customers.")


Agent = Callable[[str, str], Any]
SUITE: dict[str, tuple[Agent, dict[str, Any]]] = {
    "test_chat_refund": (lambda url, system: tool_loop(url, system=system), {}),
    "test_chat_ticket": (
        lambda url, system: tool_loop(url, system=system, results=ticketed),
        {"normalize": ["uuid"]},
    ),
    "test_responses_refund": (responses_loop, {}),
    "test_streamed_answer": (streamed, {}),
    "test_greeting": (untouched, {}),
}


def run_suite(provider: ProviderSimulator, cassettes: Path, system: str) -> None:
    """Every test recorded in its session, its outcome told to the run log, as a runner does."""
    _trajectory.swap(_trajectory.Tracker())  # a new process: each test's first session
    with _runlog.PROCESS.collecting(_runlog.RunLog()):
        for test, (agent, options) in SUITE.items():
            name = f"tests/test_support.py::{test}"
            with ghostrun.session(
                mode="record", cassette_dir=cassettes, hosts=LOOPBACK, name=name, **options
            ):
                answer = agent(provider.base_url, system)
            failed = test == "test_chat_refund" and "Monday" not in answer
            failure = f"AssertionError: assert 'Monday' in {answer!r}" if failed else None
            _runlog.test_outcome(name, "failed" if failed else "passed", failure)
        _runlog.write_run()


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def suite_normalize() -> Iterator[None]:
    """The suite's ``normalize``, as configure() (or the pytest ini) sets it for the run."""
    saved = settings.normalize
    ghostrun.configure(normalize=["uuid"])
    yield
    settings.normalize = saved


def changed_files(repo: Path) -> int:
    return len(git(repo, "status", "--porcelain", "--untracked-files=all").splitlines())


def bound(found: dict[str, Any]) -> int:
    """The most lines the text review may have, the bound: 2 header lines; per changed test
    a blank line, its head and its failure's message, its final answer ("answer:" and the
    diff), one line per changed request (k) and the first request diff (plus any later diff
    that holds a change not shown before: none here), its tokens (a line and at most k step
    lines), a verdict heading and its verdicts, its stale line; the stale list and the prune
    advice at the end."""
    lines = 2 + 2
    for test in found["tests"]:
        requests = test["requests"]
        first = next((r["request_diff"] for r in requests if r["request_diff"]), [])
        shown = [r for r in requests if r["request_diff"]]
        k = len(requests)
        answer = len(test["answer"]) + 1 if test["answer"] else 0
        verdicts = len(test["verdicts"]) + 1 if test["verdicts"] else 0
        failure = len((test["failure"] or "").splitlines())
        lines += 1 + 1 + failure + answer + k + len(first) + (1 + k) + verdicts + 1
        lines += sum(len(r["request_diff"]) for r in shown[1:])  # changes that are new
    return lines


def test_a_one_line_prompt_change_reads_as_one_story_per_test(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ticket test's ``normalize=["uuid"]`` reaches the review through its run log."""
    provider.tool_plan = list(PLAN)
    provider.reply = final_answer
    repo = tmp_path / "repo"
    cassettes = repo / "cassettes"
    repo.mkdir()
    git(repo, "init", "-q")
    run_suite(provider, cassettes, SYSTEM)
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "recorded")

    run_suite(provider, cassettes, CHANGED)  # one line of the system prompt changed
    capsys.readouterr()
    code = main(["review", "--cassette-dir", str(cassettes)])
    text = capsys.readouterr().out
    assert main(["review", "--cassette-dir", str(cassettes), "--format", "json"]) == code
    found = json.loads(capsys.readouterr().out)

    assert code == 1, text  # test_chat_refund passed, and now fails
    lines = text.splitlines()
    assert lines[1].startswith("1 test now failing, 4 tests changed, 10 requests"), text
    assert "test_greeting" not in text
    head = lines.index("tests/test_support.py::test_chat_refund (failed)")
    failure = "  fails: AssertionError: assert 'Monday' in 'Your refund is on its way.'"
    assert lines[head + 1] == failure  # the outcome first, with its message
    assert len(lines) <= bound(found), text
    # The prompt line's change is shown once per test, at its first step.
    assert text.count("-                   | Answer in one sentence.") == 3  # messages[0]
    assert text.count("-            | Answer in one sentence.") == 1  # instructions
    assert text.count("(same change as request 1)") == 6, text
    # No id the provider minted, and no value the suite normalizes.
    for minted in ("call_sim", "fc_sim", "resp_sim", "chatcmpl-sim", "msg_sim"):
        assert minted not in text, text
    assert TICKETS and not any(ticket in text for ticket in TICKETS), text
    # The answer before and after, once per test.
    assert text.count("-Refund on Monday.") == 4 and text.count("+Your refund is on its way.") == 4

    markdown = main(["review", "--cassette-dir", str(cassettes), "--format", "markdown"])
    assert markdown == 1
    md = capsys.readouterr().out
    assert md.count("<details><summary>") == 4 and md.count("</details>") == 4
    assert "call_sim" not in md

    # What git shows for the same change, after `ghostrun prune`: the files a reviewer
    # would otherwise read (new cassettes, their deletions, the trajectories), against the
    # review's one section per changed test.
    assert main(["prune", "--yes", "--cassette-dir", str(cassettes)]) == 0
    capsys.readouterr()
    # 9 new cassettes (two tests share their first request), the 9 they replaced deleted,
    # 4 trajectories, and the untouched test's cassette, re-recorded with fresh ids.
    assert changed_files(repo) == 9 + 9 + 4 + 1


XFAIL_SUITE = """
import os

import openai
import pytest

URL = os.environ["SIM_URL"]


def ask(text):
    client = openai.OpenAI(base_url=URL + "/v1", api_key="sk-test-xfail", max_retries=0)
    messages = [{"role": "user", "content": text}]
    return client.chat.completions.create(model="m", messages=messages).choices[0].message.content


@pytest.mark.ghostrun(cassette_dir="cassettes")
@pytest.mark.xfail(reason="the model does not know yet", strict=True)
def test_known_gap():
    assert ask("What is the capital of Atlantis?") == "Poseidonia"


@pytest.mark.ghostrun(cassette_dir="cassettes")
def test_fails():
    assert ask("Where is my parcel?") == "On its way."
"""


def test_the_run_log_keeps_xfailed_apart_from_skipped_and_a_failures_message(
    pytester: pytest.Pytester, pytester_env: None
) -> None:
    pytester.makepyfile(test_app=XFAIL_SUITE)
    result = pytester.runpytest_subprocess("--ghostrun-record", "-p", "no:randomly")
    result.assert_outcomes(xfailed=1, failed=1)
    run = json.loads((pytester.path / "cassettes" / "runs" / "_last.json").read_text())
    tests = run["tests"]
    assert tests["test_app.py::test_known_gap"]["outcome"] == "xfailed"
    assert "failure" not in tests["test_app.py::test_known_gap"]
    failing = tests["test_app.py::test_fails"]
    assert failing["outcome"] == "failed"
    assert failing["failure"].startswith("AssertionError: assert 'Echo: Where is my parcel?'")


def test_review_reads_the_suites_normalize_as_its_sessions_do(suite_normalize: None) -> None:
    assert suite_settings().normalize == ("uuid",)  # configure(), or the pytest ini
