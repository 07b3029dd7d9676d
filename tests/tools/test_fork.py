"""``ghostrun fork`` and ``ghostrun review --branch``: a recorded agent run, forked.

The agent suite (`agent_suite`) is recorded through the real openai SDK with
``gpt-big``; its three-step tool loop is then forked at step 2 onto
``gpt-small``, which answers without the word the judged assertion looks for.
Exactly steps 2 and 3 reach the simulator, with the new model; the recording
is byte for byte as it was; the review shows both runs side by side.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_suite import (
    AGENT_TEST,
    BAD,
    GOOD,
    chat_models,
    digests,
    docs_block,
    make_project,
    record,
)
from simulator import ProviderSimulator

from ghostrun._tools._cli import main


@pytest.fixture
def project(tmp_path: Path, provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_project(tmp_path / "project")
    record(provider, root)
    monkeypatch.chdir(root)
    monkeypatch.setenv("SIM_URL", provider.base_url)
    monkeypatch.setenv("JUDGED", str(root / "judged.log"))
    return root


def test_fork_sends_exactly_the_steps_from_n_on_with_the_new_model(
    project: Path, provider: ProviderSimulator, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = project / "cassettes"
    before = digests(recording)
    assert chat_models(provider) == ["gpt-big"] * 4  # the agent's 3 steps, the greeting's 1
    provider.reset()
    provider.model_replies = {"gpt-big": GOOD, "gpt-small": BAD}

    status = main(["fork", AGENT_TEST, "--at", "2", "--model", "gpt-small", "--name", "small"])

    assert status == 1  # the branch's answer fails the judged assertion
    assert chat_models(provider) == ["gpt-small", "gpt-small"]  # steps 2 and 3, nothing else
    assert digests(recording) == before  # the recording, byte for byte
    branch = recording / "branches" / "small"
    trajectory = json.loads(next((branch / "trajectories").glob("*.json")).read_text())
    models = [s["model"] for s in trajectory["steps"] if s.get("kind", "model") == "model"]
    assert models == ["gpt-big", "gpt-small", "gpt-small"]
    assert trajectory["steps"][-1]["kind"] == "answer"  # the branch's run, told whole
    assert (branch / "runs" / "_last.json").is_file()
    capsys.readouterr()

    prices = project / "prices.json"
    prices.write_text(json.dumps({"gpt-big": {"in": 10, "out": 30}, "*": {"in": 1, "out": 2}}))
    assert main(["review", "--branch", "small", "--format", "json", "--prices", str(prices)]) == 0
    found = json.loads(capsys.readouterr().out)["tests"][AGENT_TEST]
    assert found["outcome"] == {"recording": "passed", "branch": "failed"}
    steps = found["steps"]
    assert [s["replayed"] for s in steps] == [True, False, False]
    assert [c["name"] for c in steps[1]["recording"]["tool_calls"]] == ["issue_refund"]
    assert [c["name"] for c in steps[1]["branch"]["tool_calls"]] == ["issue_refund"]
    assert (steps[2]["recording"]["answer"], steps[2]["branch"]["answer"]) == (GOOD, BAD)
    verdict = found["verdicts"][0]
    assert (verdict["kind"], verdict["recording"], verdict["branch"]) == (
        "contains_intent",
        "PASS",
        "FAIL",
    )
    served = [r.json for r in provider.requests]
    served_in = sum(_prompt_tokens(body) for body in served)
    last = steps[2]["branch"]["tokens"]
    assert (last["in"], last["out"]) == (_prompt_tokens(served[1]), len(BAD.split()))
    assert last["cost_usd"] == pytest.approx((last["in"] * 1 + last["out"] * 2) / 1e6)
    branch_in = found["tokens"]["branch"]["in"]
    assert branch_in == steps[0]["recording"]["tokens"]["in"] + served_in

    assert main(["review", "--branch", "small", "--prices", str(prices)]) == 0
    text = capsys.readouterr().out
    assert f"{AGENT_TEST}: recording passed, branch failed" in text
    assert "step 2 (live)" in text and "[gpt-small] calls issue_refund" in text
    assert "intent: the refund is under way'): recording PASS, branch FAIL (no)" in text
    assert repr(BAD) in text and repr(GOOD) in text
    assert f"out {len(BAD.split())}, ${(last['in'] + 2 * last['out']) / 1e6:.6f}" in text
    assert text.splitlines() == docs_block("branch small against the recording")

    assert main(["review", "--branch", "small", "--format", "markdown"]) == 0
    markdown = capsys.readouterr().out
    assert f"#### `{AGENT_TEST}`: recording passed, branch failed" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| 3 | live |"))
    assert "'Order A123 is noted.'" in row and "\\[gpt-small\\]" in row


def _prompt_tokens(body: dict[str, Any]) -> int:
    """A chat request's prompt tokens as the simulator counts them: a message's words, 1 at
    least (a tool call's message has no text)."""
    texts = [
        m.get("content") if isinstance(m.get("content"), str) else "" for m in body["messages"]
    ]
    return sum(max(1, len(text.split())) for text in texts)


def test_fork_refuses_a_step_the_recording_does_not_have(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fork", AGENT_TEST, "--at", "4", "--model", "gpt-small"]) == 2
    assert "recorded 3 steps: --at takes 1 to 3" in capsys.readouterr().err
    assert main(["fork", "test_agent.py::nope", "--at", "1"]) == 2
    assert "no recorded trajectory for 'test_agent.py::nope'" in capsys.readouterr().err
