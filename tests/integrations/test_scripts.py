"""Plain scripts: ``python check.py`` needs no test framework.

A failed expectation (an ``AssertionError``) or a replay miss left uncaught
ends the script with exit status 1 and a traceback that carries the message,
so a shell, a Makefile or CI sees the failure.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from helpers import run_python
from simulator import ProviderSimulator

SCRIPT = """\
import os

import openai

import ghostrun

ghostrun.configure(judge=lambda text, criterion: ("refund" in text, "looked for 'refund'"))
client = openai.OpenAI(
    base_url=os.environ["SIMULATOR_URL"] + "/v1", api_key="sk-script", max_retries=0
)

with ghostrun.session(hosts=["127.0.0.1"]):
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": os.environ["PROMPT"]}]
    )
    ghostrun.expect(reply).contains("refund").contains_intent("offers a refund")

print("all expectations held")
"""


def run_script(
    tmp_path: Path, provider: ProviderSimulator, prompt: str, **env: str
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "check_reply.py"
    script.write_text(SCRIPT, encoding="utf-8")
    return run_python(
        str(script),
        cwd=tmp_path,
        SIMULATOR_URL=provider.base_url,
        PROMPT=prompt,
        GHOSTRUN_CASSETTE_DIR=str(tmp_path / "cassettes"),
        **env,
    )


def test_a_passing_script_exits_0_and_replays_offline(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    recorded = run_script(tmp_path, provider, "Can I get a refund?")
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == "all expectations held\n"
    assert provider.served == 1

    provider.stop()
    replayed = run_script(tmp_path, provider, "Can I get a refund?", GHOSTRUN_MODE="replay")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == "all expectations held\n"


def test_a_failed_expectation_exits_1_with_its_message(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    result = run_script(tmp_path, provider, "hello")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "Traceback (most recent call last)" in result.stderr
    assert "ExpectationFailed: expected: the text contains 'refund'" in result.stderr
    assert "Echo: hello" in result.stderr


def test_a_judge_verdict_failure_exits_1(tmp_path: Path, provider: ProviderSimulator) -> None:
    script = tmp_path / "judged.py"
    script.write_text(
        "import ghostrun\n"
        "ghostrun.configure(judge=lambda text, criterion: (False, 'no refund is offered'))\n"
        "ghostrun.expect('We will look into it.').contains_intent('offers a refund')\n",
        encoding="utf-8",
    )
    result = run_python(str(script), GHOSTRUN_CASSETTE_DIR=str(tmp_path / "cassettes"))
    assert result.returncode == 1
    assert "expected: the text expresses the intent: offers a refund" in result.stderr
    assert "said FAIL: no refund is offered" in result.stderr


def test_a_replay_miss_exits_1_with_the_miss(tmp_path: Path, provider: ProviderSimulator) -> None:
    result = run_script(tmp_path, provider, "never recorded", GHOSTRUN_MODE="replay")
    assert result.returncode == 1
    assert "ghostrun.CacheMiss: ghostrun: no recording for POST" in result.stderr
    assert "run once with GHOSTRUN_MODE=record" in result.stderr
    assert provider.served == 0


def test_a_failure_prints_on_a_console_that_is_not_utf8(
    tmp_path: Path, provider: ProviderSimulator
) -> None:
    result = run_script(
        tmp_path, provider, "Caf\u00e9 \u2615 \u2014 merci", PYTHONIOENCODING="ascii"
    )
    assert result.returncode == 1
    assert "UnicodeEncodeError" not in result.stderr
    assert "ExpectationFailed: expected: the text contains 'refund'" in result.stderr
    assert "Echo: Caf\\xe9 \\u2615 \\u2014 merci" in result.stderr


SKIPPING_SCRIPT = """\
import ghostrun

ghostrun.expect("We are so sorry.").contains("sorry")
print("deterministic check held")
ghostrun.expect("We are so sorry.").contains_intent("an apology")
print("never reached")
"""


def test_a_skip_left_uncaught_in_a_script_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    script = tmp_path / "check.py"
    script.write_text(SKIPPING_SCRIPT, encoding="utf-8")
    result = run_python(
        str(script),
        cwd=tmp_path,
        GHOSTRUN_MODE="replay",
        GHOSTRUN_ON_JUDGE_UNAVAILABLE="skip",
        GHOSTRUN_CASSETTE_DIR=str(tmp_path / "cassettes"),
    )
    assert result.returncode == 1  # the script did not run to its end
    assert result.stdout == "deterministic check held\n"
    assert "Traceback" not in result.stderr, result.stderr
    [line, closing] = result.stderr.splitlines()  # the skip, then the run's closing count
    assert closing.startswith("ghostrun: 1 semantic check skipped: no judge. To enable"), closing
    assert line.startswith(
        "ghostrun: the script stopped at a skipped check: semantic assertion skipped: "
        "no cached verdict for 'The text expresses or contains this intent: an apology'"
    ), line
