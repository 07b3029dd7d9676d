"""``ghostrun.TestCaseMixin``: unittest suites run for real with ``python -m unittest``.

Each test writes a unittest module into a temporary directory and runs it in a
subprocess against the loopback simulator, as a user's suite would run; the
in-process tests at the end cover what needs no HTTP.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
import unittest
from pathlib import Path

import pytest
from helpers import run_python
from simulator import ProviderSimulator

import ghostrun

HEADER = """\
import asyncio
import os
import unittest

import openai

import ghostrun
from ghostrun._recording._session import current_session

URL = os.environ["SIMULATOR_URL"]
REPLAYING = os.environ.get("GHOSTRUN_MODE") == "replay"
LOOPBACK = {"hosts": ["127.0.0.1"]}
TOOLS = [{"type": "function", "function": {"name": "search_orders", "parameters": {
    "type": "object", "properties": {"order_id": {"type": "string"}}}}}]


def ask(text, **extra):
    client = openai.OpenAI(base_url=URL + "/v1", api_key="sk-unit-test", max_retries=0)
    messages = [{"role": "user", "content": text}]
    return client.chat.completions.create(model="gpt-4o-mini", messages=messages, **extra)


async def aask(text, **extra):
    client = openai.AsyncOpenAI(base_url=URL + "/v1", api_key="sk-unit-test", max_retries=0)
    messages = [{"role": "user", "content": text}]
    return await client.chat.completions.create(model="gpt-4o-mini", messages=messages, **extra)

"""


def run_unittest(
    tmp_path: Path, url: str, body: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """Write ``test_generated.py`` (HEADER + body) and run it with ``python -m unittest -v``."""
    (tmp_path / "test_generated.py").write_text(HEADER + textwrap.dedent(body), encoding="utf-8")
    return run_python(
        "-m",
        "unittest",
        "-v",
        "test_generated",
        cwd=tmp_path,
        SIMULATOR_URL=url,
        GHOSTRUN_CASSETTE_DIR=str(tmp_path / "cassettes"),
        **env,
    )


def outcomes(tmp_path: Path) -> dict[str, str | None]:
    """Each test's outcome as the run log wrote it."""
    run = json.loads((tmp_path / "cassettes" / "runs" / "_last.json").read_text("utf-8"))
    return {name: test["outcome"] for name, test in run["tests"].items()}


def cassettes(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cassettes").glob("*.json"))


# -- record, then replay ------------------------------------------------------------------

RECORD_REPLAY = """
class SyncChat(ghostrun.TestCaseMixin, unittest.TestCase):
    ghostrun_session_kwargs = LOOPBACK

    def setUp(self):
        super().setUp()
        self.greeting = ask("hello from setUp")  # setUp runs in the test's session

    def test_reply(self):
        reply = ask("Where is my parcel?")
        self.assertIs(current_session(), self.ghostrun_session)
        self.assertEqual(self.ghostrun_session.name, "test_generated.py::SyncChat::test_reply")
        ghostrun.expect(reply).contains("Echo: Where is my parcel?")
        ghostrun.expect(self.greeting).contains("Echo: hello from setUp")
        counts = (self.ghostrun_session.recorded, self.ghostrun_session.replayed)
        self.assertEqual(counts, (0, 2) if REPLAYING else (2, 0))


class AsyncChat(ghostrun.TestCaseMixin, unittest.IsolatedAsyncioTestCase):
    ghostrun_session_kwargs = LOOPBACK

    async def asyncSetUp(self):
        self.greeting = await aask("hello from asyncSetUp")

    async def test_tool_call(self):
        self.assertIs(current_session(), self.ghostrun_session)
        reply = await aask("Where is order A123?", tools=TOOLS)
        self.assertToolCalled(reply, "search_orders", times=1)
        self.assertToolCalledWith(reply, "search_orders", order_id="A123")
        self.assertToolNotCalled(reply, "refund")
        ghostrun.expect(self.greeting).contains("Echo: hello from asyncSetUp")

    async def test_child_tasks_see_the_session(self):
        replies = await asyncio.gather(aask("first"), aask("second"))
        self.assertEqual([r.choices[0].message.content for r in replies],
                         ["Echo: first", "Echo: second"])
        session = self.ghostrun_session
        self.assertEqual(session.recorded + session.replayed, 3)
"""


def test_sync_and_async_tests_record_then_replay(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    recorded = run_unittest(tmp_path, provider.base_url, RECORD_REPLAY)
    assert recorded.returncode == 0, recorded.stderr
    assert "Ran 3 tests" in recorded.stderr
    assert provider.served == 6  # asyncSetUp asks the same twice: the second is replayed
    assert len(cassettes(tmp_path)) == 6

    provider.stop()
    replayed = run_unittest(tmp_path, provider.base_url, RECORD_REPLAY, GHOSTRUN_MODE="replay")
    assert replayed.returncode == 0, replayed.stderr
    assert "OK" in replayed.stderr
    assert outcomes(tmp_path) == {
        "test_generated.py::SyncChat::test_reply": "passed",
        "test_generated.py::AsyncChat::test_tool_call": "passed",
        "test_generated.py::AsyncChat::test_child_tasks_see_the_session": "passed",
    }


# -- misses -------------------------------------------------------------------------------

MISSES = """
class Misses(ghostrun.TestCaseMixin, unittest.TestCase):
    ghostrun_session_kwargs = LOOPBACK

    def test_raised(self):
        ask("never recorded")

    def test_swallowed(self):
        try:
            ask("never recorded either")
        except BaseException:
            pass  # an over-eager fallback: the test would pass without the session's check

    def test_in_setup(self):
        pass

    def setUp(self):
        super().setUp()
        if self._testMethodName == "test_in_setup":
            ask("setUp was never recorded")


class AsyncMisses(ghostrun.TestCaseMixin, unittest.IsolatedAsyncioTestCase):
    ghostrun_session_kwargs = LOOPBACK

    async def test_raised(self):
        await aask("never recorded, async")

    async def test_swallowed(self):
        try:
            await aask("never recorded, async, swallowed")
        except BaseException:
            pass
"""


def test_a_miss_errors_the_test_once_with_the_miss_message(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    (tmp_path / "cassettes").mkdir()  # replay never creates it, run log included
    result = run_unittest(tmp_path, provider.base_url, MISSES, GHOSTRUN_MODE="replay")
    assert result.returncode == 1
    # One error per test: a miss the test raised is not raised again when the session closes.
    assert "FAILED (errors=5)" in result.stderr, result.stderr
    for test in ("test_raised", "test_swallowed", "test_in_setup"):
        assert f"ERROR: {test} (test_generated.Misses.{test})" in result.stderr
    for test in ("test_raised", "test_swallowed"):
        assert f"ERROR: {test} (test_generated.AsyncMisses.{test})" in result.stderr
    assert result.stderr.count("ghostrun.CacheMiss: ghostrun: no recording") == 5
    assert "(session test_generated.py::Misses::test_swallowed)" in result.stderr
    assert "run once with GHOSTRUN_MODE=record" in result.stderr
    assert provider.served == 0
    assert set(outcomes(tmp_path).values()) == {"error"}


# -- assertion failures -------------------------------------------------------------------

FAILURES = """
class Failures(ghostrun.TestCaseMixin, unittest.TestCase):
    ghostrun_session_kwargs = LOOPBACK

    def test_expect(self):
        ghostrun.expect(ask("hello")).contains("refund")

    def test_valid_json(self):
        self.assertValidJson(ask("hello"), msg="the reply must be machine-readable")

    def test_tool(self):
        self.assertToolCalled(ask("Where is order B77?", tools=TOOLS), "refund")

    def test_tool_arguments(self):
        self.assertToolCalledWith(ask("Where is order B77?", tools=TOOLS), "search_orders",
                                  order_id="A123")

    def test_passes(self):
        self.assertValidJson('{"ok": true}', {"type": "object", "required": ["ok"]})
"""


def test_a_failed_assertion_is_a_failure_with_its_message(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    result = run_unittest(tmp_path, provider.base_url, FAILURES)
    out = result.stderr
    assert result.returncode == 1
    assert "FAILED (failures=4)" in out, out
    assert "FAIL: test_expect (test_generated.Failures.test_expect)" in out
    assert "ghostrun.ExpectationFailed: expected: the text contains 'refund'" in out
    assert "'refund' is not in the text" in out
    assert "Echo: hello" in out
    assert "note:     the reply must be machine-readable" in out  # msg=, after the message
    assert "not valid JSON" in out
    assert "search_orders" in out and "'refund'" in out
    assert 'order_id: expected "A123", got "B77"' in out
    failures = [block for block in out.split("=" * 70) if block.lstrip().startswith("FAIL:")]
    assert len(failures) == 4
    for block in failures:  # the traceback ends in the test: no frame of ghostrun's own
        frames = [line for line in block.splitlines() if line.lstrip().startswith('File "')]
        assert frames and all("test_generated.py" in frame for frame in frames), block
        assert "During handling of the above exception" not in block
    assert outcomes(tmp_path) == {
        "test_generated.py::Failures::test_expect": "failed",
        "test_generated.py::Failures::test_valid_json": "failed",
        "test_generated.py::Failures::test_tool": "failed",
        "test_generated.py::Failures::test_tool_arguments": "failed",
        "test_generated.py::Failures::test_passes": "passed",
    }


# -- judge-backed assertions --------------------------------------------------------------

JUDGED = """
def apologetic(text, criterion):
    return "sorry" in text.lower(), "looked for the word 'sorry'"


ghostrun.configure(judge=apologetic)


class Judged(ghostrun.TestCaseMixin, unittest.TestCase):
    ghostrun_session_kwargs = LOOPBACK

    def test_passes(self):
        reply = ask("Sorry about the delay.")
        self.assertContainsIntent(reply, "apology")
        self.assertNotContainsIntent(reply, "blaming the customer")
        self.assertToneIs(reply, "empathetic")
        self.assertSatisfies(reply, "acknowledges the delay")
        self.assertGroundedIn(reply, ["The parcel is late.", "We are sorry about it."])

    def test_fails(self):
        self.assertContainsIntent(ask("hello"), "apology", msg="support replies apologise")


class AsyncJudged(ghostrun.TestCaseMixin, unittest.IsolatedAsyncioTestCase):
    ghostrun_session_kwargs = LOOPBACK

    async def test_fails(self):
        self.assertToneIs(await aask("whatever"), "empathetic")
"""


def test_judge_backed_assertions_pass_and_fail(tmp_path: Path, provider: ProviderSimulator) -> None:
    expected = {
        "test_generated.py::Judged::test_passes": "passed",
        "test_generated.py::Judged::test_fails": "failed",
        "test_generated.py::AsyncJudged::test_fails": "failed",
    }
    graded = run_unittest(tmp_path, provider.base_url, JUDGED)
    out = graded.stderr
    assert "FAILED (failures=2)" in out, out
    assert "expected: the text expresses the intent: apology" in out
    assert "judge:    callable:test_generated.apologetic said FAIL: looked for the word" in out
    assert "\nnote:     support replies apologise" in out
    assert "Echo: hello" in out
    assert "expected: the tone of the text is empathetic" in out
    assert outcomes(tmp_path) == expected

    provider.stop()  # the verdicts are cached next to the cassettes: replay needs no judge
    replayed = run_unittest(tmp_path, provider.base_url, JUDGED, GHOSTRUN_MODE="replay")
    assert "FAILED (failures=2)" in replayed.stderr, replayed.stderr
    assert "(cached)" in replayed.stderr
    assert outcomes(tmp_path) == expected


# -- in process: what needs no HTTP -------------------------------------------------------


def run_case(case: type[unittest.TestCase], *names: str) -> unittest.TestResult:
    result = unittest.TestResult()
    unittest.TestSuite(case(name) for name in names).run(result)
    return result


def test_session_options_are_computed_per_test(tmp_path: Path) -> None:
    seen: dict[str, tuple[str, str | None]] = {}

    class PerTest(ghostrun.TestCaseMixin, unittest.TestCase):
        ghostrun_session_kwargs = {"mode": "record", "cassette_dir": tmp_path}

        def ghostrun_session_options(self) -> dict[str, object]:
            options = super().ghostrun_session_options()
            if self._testMethodName == "test_replay":
                options["mode"] = "replay"
            return options

        def test_record(self) -> None:
            seen["record"] = (self.ghostrun_session.mode.value, self.ghostrun_session.name)

        def test_replay(self) -> None:
            seen["replay"] = (self.ghostrun_session.mode.value, self.ghostrun_session.name)

    result = run_case(PerTest, "test_record", "test_replay")
    assert result.wasSuccessful(), result.errors
    prefix = "tests/integrations/test_unittest_mixin.py"
    prefix += "::test_session_options_are_computed_per_test::<locals>::PerTest"
    assert seen == {
        "record": ("record", f"{prefix}::test_record"),
        "replay": ("replay", f"{prefix}::test_replay"),
    }
    assert PerTest.ghostrun_session_kwargs == {"mode": "record", "cassette_dir": tmp_path}


def test_the_mixin_must_come_before_testcase() -> None:
    with pytest.raises(TypeError, match=r"list ghostrun.TestCaseMixin before unittest.TestCase"):

        class Wrong(unittest.TestCase, ghostrun.TestCaseMixin):
            pass


def test_a_setup_that_skips_super_fails_the_test_instead_of_going_unrecorded() -> None:
    class NoSuper(ghostrun.TestCaseMixin, unittest.TestCase):
        def setUp(self) -> None:
            pass

        def test_it(self) -> None:
            raise AssertionError("never reached")

    result = run_case(NoSuper, "test_it")
    assert len(result.errors) == 1
    assert "setUp override must call super().setUp()" in result.errors[0][1]
    assert "never reached" not in result.errors[0][1]


def test_assertions_follow_unittest_conventions(tmp_path: Path) -> None:
    class Custom(ghostrun.TestCaseMixin, unittest.TestCase):
        ghostrun_session_kwargs = {"cassette_dir": tmp_path}
        failureException = RuntimeError

        def test_custom_failure_exception(self) -> None:
            self.assertValidJson("not json")

    class Short(ghostrun.TestCaseMixin, unittest.TestCase):
        ghostrun_session_kwargs = {"cassette_dir": tmp_path}
        longMessage = False

        def test_short_message(self) -> None:
            self.assertValidJson("not json", msg="only this")

    class Judged(ghostrun.TestCaseMixin, unittest.TestCase):
        ghostrun_session_kwargs = {"cassette_dir": tmp_path}

        def test_judge_keyword(self) -> None:
            self.assertSatisfies("anything", "is fine", judge=lambda text, criterion: True)
            with self.assertRaises(ghostrun.ExpectationFailed) as caught:
                self.assertSatisfies("anything", "is bad", judge=lambda text, criterion: False)
            assert caught.exception.kind == "satisfies"

    custom = run_case(Custom, "test_custom_failure_exception")
    assert len(custom.failures) == 1 and not custom.errors
    assert "RuntimeError: expected: the text is valid JSON" in custom.failures[0][1]
    short = run_case(Short, "test_short_message")
    assert short.failures[0][1].rstrip().endswith("ExpectationFailed: only this")
    judged = run_case(Judged, "test_judge_keyword")
    assert judged.wasSuccessful(), judged.failures + judged.errors


def test_each_outcome_is_reported_to_the_run_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reported: dict[str, str] = {}
    failures: dict[str, str | None] = {}

    def report(name: str, outcome: str, failure: str | None = None) -> None:
        reported[name], failures[name] = outcome, failure

    monkeypatch.setattr(ghostrun._recording._runlog, "test_outcome", report)

    class Outcomes(ghostrun.TestCaseMixin, unittest.TestCase):
        ghostrun_session_kwargs = {"cassette_dir": tmp_path}

        def test_passed(self) -> None:
            pass

        def test_failed(self) -> None:
            self.assertValidJson("{")

        def test_error(self) -> None:
            raise KeyError("boom")

        @unittest.skip("not today")
        def test_skipped(self) -> None:
            pass

        def test_skipped_inside(self) -> None:
            self.skipTest("not now")

        @unittest.expectedFailure
        def test_expected_failure(self) -> None:
            self.assertValidJson("{")

        @unittest.expectedFailure
        def test_unexpected_success(self) -> None:
            pass

    names = [name for name in dir(Outcomes) if name.startswith("test_")]
    result = run_case(Outcomes, *names)
    assert result.testsRun == len(names)
    prefix = "tests/integrations/test_unittest_mixin.py"
    prefix += "::test_each_outcome_is_reported_to_the_run_log::<locals>::Outcomes"
    assert reported == {
        f"{prefix}::test_passed": "passed",
        f"{prefix}::test_failed": "failed",
        f"{prefix}::test_error": "error",
        f"{prefix}::test_skipped": "skipped",
        f"{prefix}::test_skipped_inside": "skipped",
        f"{prefix}::test_expected_failure": "xfailed",  # not a skip: it ran, and failed
        f"{prefix}::test_unexpected_success": "failed",
    }
    assert failures[f"{prefix}::test_error"] == "KeyError: 'boom'"
    assert (failures[f"{prefix}::test_failed"] or "").startswith("ghostrun.ExpectationFailed")
    assert failures[f"{prefix}::test_passed"] is None


# -- one failure per test, told as the test's own ----------------------------------------

STOPPED_EARLY = """
class Agent(ghostrun.TestCaseMixin, unittest.TestCase):
    ghostrun_session_kwargs = LOOPBACK

    def test_tool_api_down(self):
        ask("step one")
        if REPLAYING:
            raise ConnectionError("the tool API is down")
        ask("step two")

    def test_stops_early(self):
        ask("first step")
        if not REPLAYING:
            ask("second step")
"""


def test_a_failed_test_is_not_told_of_unplayed_steps_and_unplayed_ones_show_the_message_only(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    recorded = run_unittest(tmp_path, provider.base_url, STOPPED_EARLY)
    assert recorded.returncode == 0, recorded.stderr
    provider.stop()

    result = run_unittest(tmp_path, provider.base_url, STOPPED_EARLY, GHOSTRUN_MODE="replay")
    report = result.stderr
    assert "FAILED (failures=1, errors=1)" in report, report
    down = report.split("ERROR: test_tool_api_down")[1].split("=" * 70)[0]
    assert "ConnectionError: the tool API is down" in down and "Unplayed" not in down, report
    early = report.split("FAIL: test_stops_early")[1].split("-" * 70)[1]
    assert early.lstrip("\n").startswith("ghostrun.UnplayedSteps: "), report
    for internal in ("_close", "Deck.exit", "_deck.py", "_trajectory.py", "_session.py"):
        assert internal not in report, report
