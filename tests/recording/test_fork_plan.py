"""A fork plan (`_recording._fork`): which steps replay, and how a live step's body changes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ghostrun._core._modes import Mode
from ghostrun._recording._fork import ENV, ForkError, ForkPlan, current_plan, parse_set

BODY = json.dumps(
    {"model": "gpt-big", "temperature": 1, "messages": [{"role": "user", "content": "Hi"}]}
).encode()


def sent(plan: ForkPlan, body: bytes = BODY) -> tuple[Mode, Any]:
    step = plan.next_step(body)
    return step.mode, json.loads(step.body)


def test_steps_before_at_replay_unchanged_and_the_rest_go_live_changed() -> None:
    plan = ForkPlan(Path("b"), at=3, model="gpt-small", sets=[parse_set("temperature=0")])
    assert plan.next_step(BODY).mode is Mode.REPLAY and plan.next_step(BODY).body is BODY
    mode, body = sent(plan)
    assert mode is Mode.RECORD
    assert (body["model"], body["temperature"], body["messages"]) == (
        "gpt-small",
        0,
        [{"role": "user", "content": "Hi"}],
    )


@pytest.mark.parametrize(
    ("setting", "path", "value"),
    [
        ("messages[0].content=Hello there", ("messages", 0, "content"), "Hello there"),
        ('metadata={"trace": 1}', ("metadata",), {"trace": 1}),
        ("max_tokens=64", ("max_tokens",), 64),
        ("messages.0.role=system", ("messages", 0, "role"), "system"),
    ],
)
def test_set_takes_the_miss_diffs_notation_and_json_values(
    setting: str, path: tuple[Any, ...], value: Any
) -> None:
    _, body = sent(ForkPlan(Path("b"), sets=[parse_set(setting)]))
    for segment in path:
        body = body[segment]
    assert body == value


def test_a_mapping_changes_only_the_models_it_names() -> None:
    plan = ForkPlan(Path("b"), models={"gpt-big": "gpt-alt"})
    assert sent(plan)[1]["model"] == "gpt-alt"
    other = BODY.replace(b"gpt-big", b"gpt-other")
    assert sent(plan, other)[1]["model"] == "gpt-other"


@pytest.mark.parametrize(
    ("plan", "body", "problem"),
    [
        (ForkPlan(Path("b"), model="m"), b"not json", "only change a JSON request body"),
        (ForkPlan(Path("b"), model="m"), b'{"contents": []}', "has none"),
        (ForkPlan(Path("b"), sets=[("messages[5].content", 1)]), BODY, "not an index"),
        (ForkPlan(Path("b"), sets=[("tools.x", 1)]), BODY, "has no 'tools' there"),
    ],
)
def test_a_body_the_plan_cannot_change_is_an_error_naming_why(
    plan: ForkPlan, body: bytes, problem: str
) -> None:
    with pytest.raises(ForkError, match=problem):
        plan.next_step(body)


def test_bad_plans_are_refused_where_they_are_written() -> None:
    with pytest.raises(ForkError, match="numbered from 1"):
        ForkPlan(Path("b"), at=0)
    with pytest.raises(ForkError, match="PATH=VALUE"):
        parse_set("temperature")
    with pytest.raises(ValueError, match="can never match"):
        parse_set("messages[=1")


def test_the_plan_travels_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    plan = ForkPlan(Path("/x/branches/b"), 2, None, {"a": "b"}, [("temperature", 0.5)])
    monkeypatch.setenv(ENV, plan.to_env())
    found = current_plan()
    assert found is not None and found is current_plan()  # one object: one step count
    assert (found.branch, found.at, found.models, list(found.sets)) == (
        Path("/x/branches/b"),
        2,
        {"a": "b"},
        [("temperature", 0.5)],
    )
    monkeypatch.setenv(ENV, "{not json")
    with pytest.raises(ForkError, match="does not hold a fork plan"):
        current_plan()
