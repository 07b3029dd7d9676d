"""``ghostrun.expect_trajectory(session)`` (DESIGN §7): checks on a whole agent run.

The loopback model calls ``lookup_order``, then ``refund``, then answers: the
checks read that from the session's steps, recorded or replayed alike.
"""

from __future__ import annotations

import unittest
from pathlib import Path
from typing import Any

import pytest
from agents_under_test import AGENTS, PLAN, tool_loop
from helpers import AGENT_NAMES
from simulator import ProviderSimulator

import ghostrun

LOOPBACK = ("127.0.0.1",)


def agent_run(
    provider: ProviderSimulator, cassette_dir: Path, mode: str = "auto", **knobs: Any
) -> ghostrun.Session:
    provider.tool_plan = list(PLAN)
    with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=LOOPBACK) as session:
        tool_loop(provider.base_url, **knobs)
    return session


@pytest.mark.parametrize("agent", AGENT_NAMES)
@pytest.mark.parametrize("mode", ["record", "replay"])
def test_a_finished_run_passes_every_check(
    provider: ProviderSimulator, cassette_dir: Path, agent: str, mode: str
) -> None:
    provider.tool_plan = list(PLAN)
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK) as session:
        AGENTS[agent](provider.base_url)
    if mode == "replay":
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as session:
            AGENTS[agent](provider.base_url)
        assert session.replayed == 3
    found = (
        ghostrun.expect_trajectory(session)
        .tool_order(["lookup_order", "refund"])
        .tool_order(["refund"])
        .never_called("delete_account")
        .at_most_steps(3)
        .ends_with_text()
    )
    assert isinstance(found, ghostrun.TrajectoryExpectation)
    assert found.steps == 3
    assert [c["name"] for c in found.tool_calls] == ["lookup_order", "refund"]
    assert found.tool_calls[0]["arguments"] == {"order_id": "A123"}
    assert found.tokens["in"] > 0 and found.tokens["out"] > 0


@pytest.mark.parametrize(
    ("check", "expected", "found"),
    [
        (
            lambda e: e.tool_order(["refund", "lookup_order"]),
            "tool calls in the order ['refund', 'lookup_order']",
            "'lookup_order' was not called after ['refund']",
        ),
        (
            lambda e: e.tool_order(["escalate"]),
            "tool calls in the order ['escalate']",
            "'escalate' was never called",
        ),
        (
            lambda e: e.never_called("refund"),
            "no call to 'refund'",
            "'refund' was called at step 2",
        ),
        (lambda e: e.at_most_steps(2), "at most 2 steps", "3 model calls"),
    ],
)
def test_a_check_that_fails_says_what_it_expected_and_shows_the_run(
    provider: ProviderSimulator, cassette_dir: Path, check: Any, expected: str, found: str
) -> None:
    session = agent_run(provider, cassette_dir)
    with pytest.raises(AssertionError) as caught:
        check(ghostrun.expect_trajectory(session))
    message = str(caught.value)
    assert isinstance(caught.value, ghostrun.ExpectationFailed)
    assert f"expected: {expected}" in message, message
    assert f"found:    {found}" in message, message
    assert "step 1: http://127.0.0.1:" in message
    assert "/v1/chat/completions -> called lookup_order({'order_id': 'A123'})" in message
    assert "step 3: " in message and "-> answered" in message


def test_a_run_that_stopped_on_a_tool_call_does_not_end_with_text(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    session = agent_run(provider, cassette_dir, max_steps=2)
    with pytest.raises(AssertionError, match=r"the last step called \['refund'\]"):
        ghostrun.expect_trajectory(session).ends_with_text()
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK) as empty:
        pass
    with pytest.raises(AssertionError, match="no step at all"):
        ghostrun.expect_trajectory(empty).ends_with_text()
    with pytest.raises(TypeError, match="takes a ghostrun session"):
        ghostrun.expect_trajectory("not a session")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes a list of names"):
        ghostrun.expect_trajectory(session).tool_order("refund")  # type: ignore[arg-type]


def test_the_unittest_mixin_has_them_in_unittest_spelling(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.tool_plan = list(PLAN)

    class AgentTests(ghostrun.TestCaseMixin, unittest.TestCase):
        ghostrun_session_kwargs = {"cassette_dir": cassette_dir, "hosts": list(LOOPBACK)}

        def test_passes(self) -> None:
            tool_loop(provider.base_url)
            self.assertToolOrder(["lookup_order", "refund"])
            self.assertNeverCalled("delete_account")
            self.assertAtMostSteps(3)
            self.assertEndsWithText()

        def test_order_fails(self) -> None:
            tool_loop(provider.base_url)
            self.assertToolOrder(["refund", "lookup_order"], msg="refund first")

        def test_budget_fails(self) -> None:
            tool_loop(provider.base_url)
            self.assertAtMostSteps(1)

    suite = unittest.defaultTestLoader.loadTestsFromTestCase(AgentTests)
    result = unittest.TestResult()
    suite.run(result)
    assert result.errors == []
    failed = {test.id().rsplit(".", 1)[-1]: text for test, text in result.failures}
    assert sorted(failed) == ["test_budget_fails", "test_order_fails"]
    assert "refund first" in failed["test_order_fails"]
    assert "at most 1 steps" in failed["test_budget_fails"]
    assert result.testsRun == 3
