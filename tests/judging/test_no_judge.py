"""A suite with no judge: the run says how many semantic checks it skipped, and the error
without the skip setting names it, with no frames of the judge's HTTP client.

The pytest and unittest runs are real runs in subprocesses, their judge an Ollama URL on a
closed loopback port.
"""

from __future__ import annotations

import textwrap
import traceback
from pathlib import Path

import pytest
from helpers import run_python
from simulator import closed_port_url

import ghostrun
from ghostrun._core._config import settings
from ghostrun._core._exceptions import JudgeUnavailable
from ghostrun._judging._judges import OllamaJudge
from ghostrun._judging._verdicts import grade

pytest_plugins = ["pytester"]

SUITE = """
import os
import unittest

import ghostrun

ghostrun.configure(judge=ghostrun.OllamaJudge(host=os.environ["JUDGE_URL"]))


class Replies(ghostrun.TestCaseMixin, unittest.TestCase):
    def test_apology(self):
        self.assertContainsIntent("Sorry for the wait!", "apology")

    def test_tone(self):
        self.assertToneIs("Sorry for the wait!", "empathetic")

    def test_plain(self):
        self.assertValidJson("{}")
"""

CLOSING = "ghostrun: 2 semantic checks skipped: no judge. To enable grading, start the judge"


def test_without_the_skip_setting_the_error_names_it_and_shows_no_client_frames(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GHOSTRUN_CASSETTE_DIR", str(tmp_path))
    monkeypatch.delenv("GHOSTRUN_ON_JUDGE_UNAVAILABLE", raising=False)
    monkeypatch.setattr(settings, "on_judge_unavailable", None)
    with pytest.raises(JudgeUnavailable) as info:
        grade("Sorry!", "apologises", OllamaJudge(host=closed_port_url()))
    message = str(info.value)
    assert "`ollama serve`" in message
    assert 'on_judge_unavailable = "skip"' in message and "[tool.ghostrun]" in message
    shown = "".join(traceback.format_exception(info.value))
    assert "site-packages/ollama" not in shown and "site-packages/httpx" not in shown, shown
    assert info.value.__cause__ is not None  # the client's error is kept, as one line
    assert ghostrun.JudgeUnavailable is JudgeUnavailable


def test_a_unittest_run_ends_with_the_count_of_skipped_semantic_checks(tmp_path: Path) -> None:
    (tmp_path / "test_replies.py").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    done = run_python(
        "-m",
        "unittest",
        "test_replies",
        cwd=tmp_path,
        JUDGE_URL=closed_port_url(),
        GHOSTRUN_CASSETTE_DIR=str(tmp_path / "cassettes"),
        GHOSTRUN_ON_JUDGE_UNAVAILABLE="skip",
    )
    assert done.returncode == 0, done.stderr
    assert "OK (skipped=2)" in done.stderr
    last = done.stderr.rstrip().splitlines()[-1]
    assert last.startswith(CLOSING) and "`ollama serve`" in last, done.stderr


def test_a_pytest_run_ends_with_the_count_of_skipped_semantic_checks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_replies=textwrap.dedent(SUITE))
    monkeypatch.setenv("JUDGE_URL", closed_port_url())
    monkeypatch.setenv("GHOSTRUN_ON_JUDGE_UNAVAILABLE", "skip")
    monkeypatch.setenv("GHOSTRUN_CASSETTE_DIR", str(pytester.path / "cassettes"))
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines([f"{CLOSING}*`ollama serve`*"])
