"""The trajectory vocabulary (DESIGN §7): each rule, as a table of runs that keep and break it.

One recorded run of a real tool loop against the loopback model: it looks the
order up three times in a row (with a nested argument), then refunds it, then
answers. Every rule is checked on it both ways; a failure names what broke
and lists the run step by step. ``achieves`` is judged through the verdict
cache, so its replay never calls the judge.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_under_test import tool_loop
from simulator import ProviderSimulator

import ghostrun

PLAN = ["lookup_order", "lookup_order", "lookup_order", "refund"]
ARGUMENTS = {"order_id": "A123", "address": {"city": "Berlin", "zip": "10115"}}
Check = Callable[[ghostrun.TrajectoryExpectation], Any]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ghostrun.Session]:
    with ProviderSimulator() as provider:
        provider.tool_plan, provider.tool_args = list(PLAN), dict(ARGUMENTS)
        directory = tmp_path_factory.mktemp("cassettes")
        with ghostrun.session(
            mode="record", cassette_dir=directory, hosts=[provider.base_url], name="vocabulary"
        ) as session:
            tool_loop(provider.base_url)
        yield session


KEPT: list[Check] = [
    lambda e: e.tool_sequence(PLAN),
    lambda e: e.tools_in_any_order(["refund", "lookup_order"]),
    lambda e: e.called_with("lookup_order", order_id="A123"),
    lambda e: e.called_with("lookup_order", address={"city": "Berlin"}),
    lambda e: e.never_called_with("refund", order_id="B9"),
    lambda e: e.never_called_with("escalate"),
    lambda e: e.max_repeats(3),
    lambda e: e.only_tools(["lookup_order", "refund", "escalate"]),
    lambda e: e.at_most_steps(5),
]


@pytest.mark.parametrize("check", KEPT)
def test_a_run_that_keeps_the_rule_passes(run: ghostrun.Session, check: Check) -> None:
    assert isinstance(check(ghostrun.expect_trajectory(run)), ghostrun.TrajectoryExpectation)


BROKEN: list[tuple[Check, str, str]] = [
    (
        lambda e: e.tool_sequence(["lookup_order", "refund"]),
        "exactly the tool calls ['lookup_order', 'refund']",
        "call 2 was 'lookup_order', not 'refund'",
    ),
    (
        lambda e: e.tool_sequence([*PLAN, "escalate"]),
        "exactly the tool calls",
        "the run stopped before ['escalate']",
    ),
    (
        lambda e: e.tool_sequence(PLAN[:3]),
        "exactly the tool calls",
        "1 more call(s) after them: ['refund']",
    ),
    (
        lambda e: e.tools_in_any_order(["refund", "escalate"]),
        "calls to each of ['refund', 'escalate']",
        "never called: ['escalate']",
    ),
    (
        lambda e: e.called_with("lookup_order", order_id="B9"),
        "a call lookup_order(order_id='B9')",
        "its calls had {'order_id': 'A123', 'address'",
    ),
    (
        lambda e: e.called_with("lookup_order", address={"city": "Paris"}),
        "a call lookup_order(address={'city': 'Paris'})",
        "its calls had",
    ),
    (
        lambda e: e.called_with("escalate"),
        "a call escalate()",
        "'escalate' was never called",
    ),
    (
        lambda e: e.never_called_with("refund", order_id="A123"),
        "no call refund(order_id='A123')",
        "it was called with {'order_id': 'A123'",
    ),
    (
        lambda e: e.max_repeats(2),
        "no tool more than 2 times in a row",
        "'lookup_order' 3 times in a row, from call 1 to 3",
    ),
    (
        lambda e: e.only_tools(["lookup_order"]),
        "only tools from ['lookup_order']",
        "called 'refund' at call 4",
    ),
    (lambda e: e.at_most_steps(4), "at most 4 steps", "5 model calls"),
]


@pytest.mark.parametrize(("check", "expected", "found"), BROKEN)
def test_a_run_that_breaks_the_rule_fails_naming_it_and_listing_the_run(
    run: ghostrun.Session, check: Check, expected: str, found: str
) -> None:
    with pytest.raises(ghostrun.ExpectationFailed) as caught:
        check(ghostrun.expect_trajectory(run))
    message = str(caught.value)
    assert f"expected: {expected}" in message, message
    assert f"found:    {found}" in message, message
    assert "step 1: http://127.0.0.1:" in message and "called lookup_order(" in message
    assert "step 4: " in message and "called refund(" in message
    assert "final answer: 'Echo: " in message


@pytest.mark.parametrize(
    "check",
    [
        lambda e: e.tool_sequence("lookup_order"),
        lambda e: e.only_tools("refund"),
        lambda e: e.max_repeats(-1),
        lambda e: e.max_repeats(True),
        lambda e: e.achieves(""),
    ],
)
def test_a_rule_written_wrong_is_a_type_error(run: ghostrun.Session, check: Check) -> None:
    with pytest.raises(TypeError):
        check(ghostrun.expect_trajectory(run))


def test_a_goal_is_judged_from_the_tool_calls_and_the_answer_and_replays_from_its_verdict(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.tool_plan = ["lookup_order", "refund"]
    asked: list[str] = []

    def refunded(text: str, criterion: str) -> tuple[bool, str]:
        asked.append(text)
        done = "called refund(" in text and "final answer:" in text
        return done, "It refunded the order." if done else "No refund."

    def session(mode: str) -> ghostrun.Session:
        with ghostrun.session(
            mode=mode, cassette_dir=cassette_dir, hosts=[provider.base_url], name="goal"
        ) as found:
            tool_loop(provider.base_url)
        return found

    recorded = session("record")
    ghostrun.expect_trajectory(recorded).achieves("refund order A123", judge=refunded)
    assert len(asked) == 1 and "step 1: " in asked[0] and "lookup_order" in asked[0]
    assert list((cassette_dir / "judge").glob("*.json"))  # the verdict, cached beside the run

    provider.stop()
    replayed = session("replay")
    ghostrun.expect_trajectory(replayed).achieves("refund order A123", judge=refunded)
    assert len(asked) == 1  # replay read the verdict; the judge was not called
    with pytest.raises(ghostrun.CacheMiss):
        ghostrun.expect_trajectory(replayed).achieves("apologise", judge=refunded)
    assert len(asked) == 1


def test_a_goal_the_run_missed_fails_with_the_judges_reason(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.tool_plan = ["lookup_order"]
    with ghostrun.session(cassette_dir=cassette_dir, hosts=[provider.base_url]) as session:
        tool_loop(provider.base_url)

    def refunded(text: str, criterion: str) -> tuple[bool, str]:
        return "called refund(" in text, "No refund was made."

    with pytest.raises(ghostrun.ExpectationFailed) as caught:
        ghostrun.expect_trajectory(session).achieves("refund order A123", judge=refunded)
    message = str(caught.value)
    assert "expected: a run that achieves: refund order A123" in message
    assert "said FAIL: No refund was made." in message
    assert "called lookup_order(" in message
