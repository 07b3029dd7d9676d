"""``ghostrun review`` and ``ghostrun report``: a prompt edit, re-recorded, reviewed.

A small app and its pytest suite are written to a git repository, recorded
through the real openai SDK against the loopback simulator (which also plays
the Ollama judge), committed, then the system prompt is edited and the suite
re-recorded, as a user would. The review must name exactly the request that
changed and the words that changed, pair the new cassette with the one it
replaced, list the stale one, and show the verdict that regressed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT
from simulator import ProviderSimulator

from ghostrun._tools._cli import main

SUITE = """
import os

import openai
import pytest

import app
import ghostrun

URL = os.environ["SIM_URL"]
ghostrun.configure(judge=ghostrun.OllamaJudge(host=URL))
client = openai.OpenAI(base_url=URL + "/v1", api_key=os.environ["FAKE_KEY"], max_retries=0)
MARK = pytest.mark.ghostrun(
    hosts=[URL], cassette_dir="cassettes", ignore_fields=["metadata.trace_id"]
)


def ask(system: str | None, text: str) -> str:
    messages = [{"role": "system", "content": system}] if system else []
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[*messages, {"role": "user", "content": text}],
        metadata={"trace_id": os.urandom(6).hex()},
    )
    return reply.choices[0].message.content


@MARK
def test_refund():
    ghostrun.expect(ask(app.SYSTEM, "Where is my refund?")).contains_intent("apology")


@MARK
def test_order():
    ask(None, "Is my order on its way?")
    ask(None, "Is my order on its way?")
"""


def reply(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    system = first["content"] if first["role"] == "system" else ""
    if "kind" in system:
        return "Sorry for the wait! Your refund is on its way."
    if system:
        return "Refund sent."
    return "Your order shipped."


def judge(body: dict[str, Any]) -> str:
    """Ollama's /api/chat is the judge; the hook sees the app's chat requests too."""
    if "options" not in body:
        return reply(body)
    text = body["messages"][1]["content"].partition("\n\nTEXT: ")[2]
    verdict = "PASS" if "Sorry" in text else "FAIL"
    return json.dumps({"verdict": verdict, "reason": f"{verdict.lower()}: read the reply"})


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def record(repo: Path, provider: ProviderSimulator, *flags: str, status: int = 0) -> None:
    env = {**os.environ, "SIM_URL": provider.base_url, "FAKE_KEY": FAKE_KEY}
    env.pop("CI", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "test_app.py", "-q", "-p", "no:cacheprovider", *flags],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == status, done.stdout + done.stderr


FAKE_KEY = "sk-" + "reviewfake" * 4


@pytest.fixture(scope="module")
def provider() -> Iterator[ProviderSimulator]:
    """One simulator for the module: recording the repository below is the slow part."""
    with ProviderSimulator() as simulator:
        yield simulator


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, provider: ProviderSimulator) -> Path:
    """A repository whose prompt was edited and re-recorded after the first recording."""
    tmp_path = tmp_path_factory.mktemp("review")
    provider.reply = reply
    provider.judge_reply = judge
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "app.py").write_text('SYSTEM = "You are a kind support agent."\n')
    (repo / "test_app.py").write_text(SUITE)
    (repo / ".gitignore").write_text("__pycache__/\ncassettes/runs/_last.json\n")
    record(repo, provider, "--ghostrun-record", "--ghostrun-snapshot", "base")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "recorded")
    shutil.copytree(repo / "cassettes", tmp_path / "before")
    (repo / "app.py").write_text('SYSTEM = "You are a terse support agent."\n')
    record(repo, provider, "--ghostrun-record", "--ghostrun-snapshot", "after", status=1)
    return tmp_path


@pytest.fixture
def edited(recorded: Path, tmp_path: Path) -> Path:
    """A fresh copy of the recorded repository (and its ``before`` copy) for each test."""
    shutil.copytree(recorded, tmp_path, dirs_exist_ok=True)
    return tmp_path / "repo"


def review(repo: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["review", "--cassette-dir", str(repo / "cassettes"), *args])
    out, err = capsys.readouterr()
    assert err == ""
    return code, out


def keys(directory: Path) -> set[str]:
    return {p.stem for p in directory.glob("*.json")}


def test_review_names_the_changed_request_words_verdict_and_stale_cassette(
    edited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = keys(edited / "cassettes") - keys(tmp_path / "before")
    assert len(new) == 1  # only the edited prompt made a new request
    (new_key,) = new
    (old_key,) = keys(tmp_path / "before") - set(
        k["key"]
        for t in json.loads((edited / "cassettes/runs/_last.json").read_text())["tests"].values()
        for k in t["cassettes"]
    )

    code, out = review(edited, capsys)
    assert code == 1  # a verdict went from PASS to FAIL
    assert out.splitlines()[1] == (  # the outcome that changed first
        "1 test now failing, 1 test changed, 1 request, 1 verdict (1 PASS -> FAIL), "
        "1 stale cassette, tokens in 10, out 10 -> 2 (-8)"  # the terse prompt's answer is shorter
    )
    assert "  tokens: in 10, out 10 -> 2 (-8)\n    step 1: in 10, out 10 -> 2 (-8)\n" in out
    head = out.index("test_app.py::test_refund (failed)\n")  # the outcome first, and why
    assert out[head:].split("\n")[1].startswith("  fails: ghostrun.ExpectationFailed: expected:")
    assert "test_app.py::test_order" not in out  # re-recorded, same answers: not news
    assert (
        f"request 1: POST {edited_url(out)}/v1/chat/completions: {old_key}.json -> {new_key}.json"
        in out
    )
    assert '-messages[0].content: "You are a kind support agent."' in out
    assert '+messages[0].content: "You are a terse support agent."' in out
    assert "-Sorry for the wait! Your refund is on its way." in out
    assert "+Refund sent." in out
    assert re.search(r"contains_intent: .*apology: PASS -> FAIL \(ollama:llama3.2:3b\): fail", out)
    assert f"stale (replaced, still on disk): {old_key}.json" in out
    assert "trace_id" not in out  # an ignored field never shows
    assert FAKE_KEY not in out and "reviewfake" not in out


def edited_url(out: str) -> str:
    found = re.search(r"POST (http://127\.0\.0\.1:\d+)/v1/chat/completions", out)
    assert found, out
    return found.group(1)


def test_review_works_between_two_directories_and_two_run_snapshots(
    edited: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _code, from_git = review(edited, capsys)
    code, from_dirs = review(edited, capsys, str(tmp_path / "before"), str(edited / "cassettes"))
    assert code == 1
    # The same review, but for the header (what was compared) and the outcome before,
    # which only the directory's own run log knows (git has no run log: not committed).
    git_lines, dir_lines = from_git.splitlines(), from_dirs.splitlines()
    assert git_lines[3] == "test_app.py::test_refund (failed)"
    assert dir_lines[3] == "test_app.py::test_refund (passed -> failed)"
    assert dir_lines[1:3] + dir_lines[4:] == git_lines[1:3] + git_lines[4:]

    code, from_runs = review(edited, capsys, "--runs", "base", "after")
    assert code == 1
    # Tokens come from the committed trajectories, which two runs of one directory share.
    without_tokens = [
        re.sub(r", tokens in .*", "", line)
        for line in dir_lines[1:]
        if not line.startswith(("  tokens:", "    step "))
    ]
    assert from_runs.splitlines()[1:] == without_tokens


def test_review_markdown_is_sized_for_a_pull_request(
    edited: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _code, markdown = review(edited, capsys, "--format", "markdown")
    lines = markdown.splitlines()
    assert lines[0] == (
        "**ghostrun review:** 1 test now failing, 1 test changed, 1 request, 1 verdict "
        "(1 PASS -> FAIL), 1 stale cassette, tokens in 10, out 10 -> 2 (-8)"
    )
    opened = [i for i, line in enumerate(lines) if line.startswith("<details><summary>")]
    assert len(opened) == 1
    assert lines[opened[0]] == (
        "<details><summary>test_app.py::test_refund (failed): 1 request, 1 verdict</summary>"
    )
    assert lines.count("</details>") == 1
    fence = lines.index("```diff")
    assert "```" in lines[fence + 1 :]
    assert len(markdown) < 65_536


def test_review_json_is_for_tools(edited: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _code, out = review(edited, capsys, "--format", "json")
    found = json.loads(out)
    assert found["regressions"] == 1 and found["unchanged_tests"] == 1
    (test,) = found["tests"]
    (request,) = test["requests"]
    assert request["how"] == "replaced" and request["before"] in test["stale"]
    assert [(v["before"], v["after"], v["regressed"]) for v in test["verdicts"]] == [
        ("PASS", "FAIL", True)
    ]


def test_review_reads_old_run_logs_and_pairs_by_the_closest_body(
    edited: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run log from before per-test cassettes were kept: the pairing falls back to bodies."""
    last = edited / "cassettes" / "runs" / "_last.json"
    run = json.loads(last.read_text())
    for test in run["tests"].values():
        for field in ("cassettes", "verdicts", "ignore_fields"):
            del test[field]
    last.write_text(json.dumps(run))
    code, out = review(edited, capsys)
    assert code == 1  # the assertions still show the regression
    assert "1 verdict (1 PASS -> FAIL)" in out


def test_the_run_log_keeps_each_tests_cassettes_in_order(
    edited: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = json.loads((edited / "cassettes" / "runs" / "_last.json").read_text())
    order = run["tests"]["test_app.py::test_order"]
    (key,) = {entry["key"] for entry in order["cassettes"]}
    assert [entry["how"] for entry in order["cassettes"]] == ["recorded", "recorded"]
    assert order["ignore_fields"] == ["metadata.trace_id"]
    refund = run["tests"]["test_app.py::test_refund"]
    assert [entry["how"] for entry in refund["verdicts"]] == ["graded"]
    assert (edited / "cassettes" / f"{key}.json").is_file()


# --- the HTML report ------------------------------------------------------------------


def test_report_opens_in_a_real_browser_with_no_network_and_no_errors(
    edited: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = edited / "report.html"
    code = main(
        [
            "report",
            "--cassette-dir",
            str(edited / "cassettes"),
            "--base",
            "base",
            "-o",
            str(out_file),
        ]
    )
    assert code == 0 and f"wrote {out_file}" in capsys.readouterr().err
    page = browse(out_file)
    assert page["errors"] == [] and page["requests"] == []
    text = page["text"]
    # Regressions first, then the rest; each test's outcome and trajectory shown.
    assert text.index("Regressions") < text.index("test_app.py::test_refund")
    assert text.index("test_app.py::test_refund") < text.index("test_app.py::test_order")
    assert "failed" in page["badges"]["test_app.py::test_refund"]
    assert "passed" in page["badges"]["test_app.py::test_order"]
    assert "You are a terse support agent." in text and "Where is my refund?" in text
    assert "Refund sent." in text and "Your order shipped." in text
    assert "contains_intent" in text and "fail: read the reply" in text
    assert FAKE_KEY not in out_file.read_text()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "/usr/bin/chromium"


def browse(path: Path) -> dict[str, Any]:
    """Load a file in headless Chromium; what the page said, fetched and showed."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail("the report test needs Chromium: apt-get install chromium (.ci/run does)")
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        page = browser.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: None if r.url.startswith("file:") else requests.append(r.url))
        page.goto(path.as_uri())
        text = page.inner_text("body")
        badges = page.evaluate(
            """() => Object.fromEntries([...document.querySelectorAll('article')].map(a => [
                a.querySelector('h2').childNodes[1].textContent,
                [...a.querySelectorAll('h2 .badge')].map(b => b.textContent)]))"""
        )
        browser.close()
    return {"errors": errors, "requests": requests, "text": text, "badges": badges}


def test_the_readme_shows_a_real_review(edited: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's review output is this scenario's, but for its keys and port."""
    _code, out = review(edited, capsys)
    readme = (ROOT / "docs" / "review.md").read_text(encoding="utf-8")
    shown = readme.split("```text\nghostrun review:", 1)[1].split("```", 1)[0]

    def normal(text: str) -> list[str]:
        text = re.sub(r"\b[0-9a-f]{32}\b", "KEY", text)
        return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text).splitlines()

    assert normal("ghostrun review:" + shown) == normal(out)
