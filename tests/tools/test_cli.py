"""The ``ghostrun`` command: diff, check, prune and show, run as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._tools import _cli

LOOPBACK = ("127.0.0.1",)
GHOSTRUN = Path(sys.executable).parent / "ghostrun"

# A prompt check as a user writes it: a plain script, one session per "test".
# Changing REFUND_PROMPT so that the reply no longer mentions a refund turns
# exactly one assertion from PASS to FAIL, and the script stops there.
APP = """
import os
import httpx
import ghostrun

def ask(prompt):
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    return httpx.post(os.environ["SIM"] + "/v1/chat/completions", json=body).json()

with ghostrun.session(hosts=["127.0.0.1"], name="greeting"):
    ghostrun.expect(ask("hello there")).contains("hello")

with ghostrun.session(hosts=["127.0.0.1"], name="refund"):
    reply = ask(os.environ["REFUND_PROMPT"])
    ghostrun.expect(reply).contains("Echo")
    ghostrun.expect(reply).contains("refund")
    ghostrun.expect(reply).length_between(1, 500)
"""


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GHOSTRUN_") and k not in ("CI", "PYTEST_CURRENT_TEST")
    }
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return {**env, **extra}


def ghostrun_cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(GHOSTRUN), *args],
        cwd=cwd,
        env=clean_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def _prompt_change(root: Path, before: str, after: str) -> Path:
    """``root`` made a project whose prompt changed: snapshot ``before``, then ``_last``."""
    (root / "app.py").write_text(APP)
    with ProviderSimulator() as provider:
        for prompt, snapshot in ((before, "before"), (after, "")):
            env = clean_env(SIM=provider.base_url, REFUND_PROMPT=prompt, GHOSTRUN_SNAPSHOT=snapshot)
            done = subprocess.run(
                [sys.executable, "app.py"], cwd=root, env=env, capture_output=True, timeout=60
            )
            assert done.returncode == (0 if snapshot else 1), done.stderr
    return root


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A project whose prompt changed: snapshot ``before``, then ``_last`` with a regression."""
    root = tmp_path_factory.mktemp("project")
    yield _prompt_change(root, "Where is my refund?", "Where is my money?")


def test_a_prompt_change_shows_as_exactly_one_regression_in_text(project: Path) -> None:
    done = ghostrun_cli("diff", cwd=project)
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert out.startswith("ghostrun diff: before -> _last")
    assert out.count("REGRESSION") == 1
    assert "REGRESSION  refund\n    contains: contains 'refund'\n    PASS -> FAIL" in out
    assert "NOT-RUN     refund\n    length_between" in out
    assert "DRIFT       refund (output 1, similarity" in out
    assert "-Echo: Where is my refund?\n    +Echo: Where is my money?" in out
    assert out.rstrip().endswith(
        "1 regression, 0 fixes, 2 stable, 0 added, 0 removed, 1 not run; 1 output drifted"
    )


def test_a_prompt_change_shows_as_exactly_one_regression_in_markdown(project: Path) -> None:
    done = ghostrun_cli("diff", "before", "_last", "--format", "markdown", cwd=project)
    assert done.returncode == 1, done.stderr
    out = done.stdout
    assert out.startswith("### ghostrun diff: `before` → `_last`")
    assert "**1 regression** · 0 fixes · 2 stable" in out
    rows = [line for line in out.splitlines() if line.startswith("| **regression**")]
    assert rows == [
        "| **regression** | `refund` | contains: contains 'refund' | PASS | FAIL "
        "| 'refund' is not in the text |"
    ]
    assert "| not-run | `refund` | length_between:" in out
    assert "```diff\n--- base\n+++ candidate" in out


def test_a_prompt_change_shows_as_exactly_one_regression_in_json(project: Path) -> None:
    done = ghostrun_cli("diff", "--format", "json", cwd=project)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["summary"] == {
        "regression": 1,
        "fix": 0,
        "stable": 2,
        "added": 0,
        "removed": 0,
        "not-run": 1,
        "drift": 1,
    }
    [regression] = [a for a in report["assertions"] if a["status"] == "regression"]
    assert (regression["test"], regression["criterion"]) == ("refund", "contains 'refund'")
    assert (regression["base"]["verdict"], regression["candidate"]["verdict"]) == ("PASS", "FAIL")
    [drift] = report["drift"]
    assert drift["test"] == "refund" and 0 < drift["ratio"] < 1


def test_diff_of_a_run_with_itself_is_clean(project: Path) -> None:
    done = ghostrun_cli("diff", "before", "before", cwd=project)
    assert done.returncode == 0
    assert "0 regressions, 0 fixes, 4 stable" in done.stdout


def test_check_finds_the_orphaned_cassette_and_passes_once_pruned(
    project: Path, tmp_path: Path
) -> None:
    cassettes = tmp_path / "cassettes"
    shutil.copytree(project / ".ghostrun_cache", cassettes)
    run = json.loads((cassettes / "runs" / "_last.json").read_text())
    [orphan] = {p.stem for p in cassettes.glob("*.json")} - set(run["cassettes_used"])
    (cassettes / "judge").mkdir()
    verdict = {"version": 1, "key": "0123abcd" * 4, "criterion": "is polite"}
    verdict.update(verdict="PASS", reason="it is", judge="ollama:llama3.2:3b")
    (cassettes / "judge" / f"{'0123abcd' * 4}.json").write_text(json.dumps(verdict))

    done = ghostrun_cli("check", "--cassette-dir", str(cassettes), cwd=tmp_path)
    assert done.returncode == 1
    assert f"1 stale cassette (the last run did not use):\n  {orphan}.json  POST http://" in (
        done.stdout
    )
    assert (
        f"1 stale verdict (the last run did not use):\n  judge/{'0123abcd' * 4}.json  'is polite'"
        in (done.stdout)
    )
    assert "FAILED: 2 stale, 0 missed" in done.stdout

    declined = subprocess.run(
        [str(GHOSTRUN), "prune", "--cassette-dir", str(cassettes)],
        input="n\n",
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert declined.returncode == 1 and "Nothing deleted" in declined.stdout
    assert (cassettes / f"{orphan}.json").exists()

    pruned = ghostrun_cli("prune", "--yes", "--cassette-dir", str(cassettes), cwd=tmp_path)
    assert pruned.returncode == 0 and "Deleted 2 files." in pruned.stdout
    assert not (cassettes / f"{orphan}.json").exists()
    assert len(list(cassettes.glob("*.json"))) == len(run["cassettes_used"])

    again = ghostrun_cli("check", cwd=tmp_path, GHOSTRUN_CASSETTE_DIR=str(cassettes))
    assert again.returncode == 0, again.stdout
    assert "OK: every cassette and verdict was used" in again.stdout


def test_check_lists_the_requests_that_missed(
    provider: ProviderSimulator, cassette_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ghostrun._recording import _runlog

    cassette_dir.mkdir()  # replay never creates it, run log included
    log = _runlog.RunLog()
    with _runlog.PROCESS.collecting(log):
        with (
            pytest.raises(ghostrun.CacheMiss),
            ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay", name="t"),
        ):
            httpx.post(provider.url("/v1/chat/completions"), json={"model": "m"})
        _runlog.write_run()

    assert _cli.main(["check", "--cassette-dir", str(cassette_dir)]) == 1
    out = capsys.readouterr().out
    assert (
        "1 miss (requests or verdicts not recorded):\n  t: ghostrun: no recording for POST" in out
    )
    assert "(last run " in out and ", 1 test)\n" in out  # not "1 tests"


def test_check_leaves_verdicts_alone_when_the_run_could_not_say_which_it_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = {"version": 1, "tests": {}, "cassettes_used": [], "verdicts_used": None, "misses": []}
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "_last.json").write_text(json.dumps(run))
    (tmp_path / "judge").mkdir()
    (tmp_path / "judge" / "abc.json").write_text("{}")
    assert _cli.main(["check", "--cassette-dir", str(tmp_path)]) == 0
    assert "verdicts not checked" in capsys.readouterr().out
    assert _cli.main(["prune", "--yes", "--cassette-dir", str(tmp_path)]) == 0
    assert (tmp_path / "judge" / "abc.json").exists()


def record_streams(provider: ProviderSimulator, cassette_dir: Path, prompt: str) -> dict[str, str]:
    """One streamed reply per wire format; returns each cassette's key."""
    calls = {
        "openai": ("/v1/chat/completions", {"model": "m", "stream": True}),
        "anthropic": ("/v1/messages", {"model": "m", "stream": True, "max_tokens": 9}),
        "ollama": ("/api/chat", {"model": "llama3.2:3b"}),
    }
    keys = {}
    for name, (path, body) in calls.items():
        body = {**body, "messages": [{"role": "user", "content": prompt}]}
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK) as session:
            httpx.post(provider.url(path), json=body).read()
        (keys[name],) = session._deck.used_keys
    return keys


@pytest.mark.parametrize("wire", ["openai", "anthropic", "ollama"])
def test_show_reassembles_a_stream_into_its_text(
    provider: ProviderSimulator,
    cassette_dir: Path,
    capsys: pytest.CaptureFixture[str],
    wire: str,
) -> None:
    keys = record_streams(provider, cassette_dir, "tell me a story")
    assert _cli.main(["show", keys[wire][:10], "--cassette-dir", str(cassette_dir)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"cassette {keys[wire]}")
    assert "REQUEST  POST http://127.0.0.1:" in out
    assert "reassembled text:\n    Echo: tell me a story\n" in out


def test_show_renders_a_judge_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    verdict = {
        "version": 1,
        "key": "f" * 32,
        "judge": "ollama:llama3.2:3b",
        "criterion": "The text apologises.",
        "text": "Sorry!",
        "verdict": "PASS",
        "reason": "it says sorry",
        "votes": 3,
        "flip_rate": 1 / 3,
    }
    (tmp_path / "judge").mkdir()
    (tmp_path / "judge" / f"{'f' * 32}.json").write_text(json.dumps(verdict))
    assert _cli.main(["show", "f" * 32, "--cassette-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "VERDICT   PASS  (3 votes, flip rate 33%)" in out
    assert "criterion:\n    The text apologises.\ntext:\n    Sorry!" in out


def test_show_survives_a_console_that_is_not_utf8(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    keys = record_streams(provider, cassette_dir, "café — naïve ✓")
    path = cassette_dir / f"{keys['openai']}.json"
    done = subprocess.run(
        [sys.executable, "-m", "ghostrun", "show", str(path)],
        env=clean_env(PYTHONIOENCODING="ascii"),
        capture_output=True,
        text=True,
        encoding="ascii",
        errors="strict",
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Echo: caf\\xe9 \\u2014 na\\xefve \\u2713" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "--cassette-dir", "nowhere"], "no cassette directory at /"),
        (["diff", "v9"], "no run named 'v9'"),
        (["diff"], "no snapshot to compare with"),
        (["show", "deadbeef"], "no cassette or verdict 'deadbeef'"),
        (["check"], "no run log at"),
    ],
)
def test_a_missing_directory_run_or_file_is_a_clear_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    (tmp_path / ".ghostrun_cache" / "runs").mkdir(parents=True)
    (tmp_path / ".ghostrun_cache" / "runs" / "_last.json").write_text('{"version": 1, "tests": {}}')
    if args == ["check"]:
        (tmp_path / ".ghostrun_cache" / "runs" / "_last.json").unlink()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert _cli.main(args) == 2
    finally:
        os.chdir(cwd)
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("command", ["diff", "check", "prune", "show"])
def test_every_command_has_help_and_takes_a_cassette_dir(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        _cli.main([command, "--help"])
    assert exited.value.code == 0
    assert "--cassette-dir DIR" in capsys.readouterr().out


def test_python_dash_m_ghostrun_is_the_same_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ghostrun", "--help"],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0
    for command in ("diff", "check", "prune", "show"):
        assert command in done.stdout
    bare = subprocess.run([str(GHOSTRUN)], env=clean_env(), capture_output=True, text=True)
    assert bare.returncode == 2 and "usage: ghostrun" in bare.stderr


def test_diff_skips_a_snapshot_written_by_the_same_run_as_last(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ghostrun._recording import _runlog

    fields = {"kind": "contains", "criterion": "c", "reason": "r", "judge": None}
    for passed, snapshot in ((True, "v1"), (False, "v2")):
        log = _runlog.RunLog()
        log.assertion(_runlog.Where("t", None, tmp_path), text="x", passed=passed, **fields)
        log.write(snapshot)
    os.utime(tmp_path / "runs" / "v1.json", (1, 1))  # v2 is the newest snapshot, but it is _last

    assert _cli.main(["diff", "--cassette-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().out.startswith("ghostrun diff: v1 -> _last")


@pytest.fixture(scope="module")
def dessert_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A snapshot and a last run whose outputs hold text no cp1252 or ascii console shows."""
    root = tmp_path_factory.mktemp("dessert")
    yield _prompt_change(root, "Une crème brûlée 🍮 refund?", "Une crème 🍮?")


def _diff_on(console: str, fmt: str, cwd: Path) -> bytes:
    done = subprocess.run(
        [str(GHOSTRUN), "diff", "--format", fmt],
        cwd=cwd,
        env=clean_env(PYTHONIOENCODING=console),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    return done.stdout


@pytest.mark.parametrize("console", ["cp1252", "ascii"])
def test_json_output_is_valid_json_on_a_console_that_is_not_utf8(
    dessert_project: Path, console: str
) -> None:
    raw = _diff_on(console, "json", dessert_project)  # what `> d.json` writes
    report = json.loads(raw.decode("ascii"))
    [drift] = report["drift"]
    assert "Une crème brûlée 🍮 refund?" in json.dumps(drift, ensure_ascii=False)


@pytest.mark.parametrize("console", ["cp1252", "ascii"])
@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_text_output_uses_ascii_arrows_where_the_console_has_none(
    dessert_project: Path, console: str, fmt: str
) -> None:
    out = _diff_on(console, fmt, dessert_project).decode(console)
    assert "\\u2192" not in out and "\\xb7" not in out
    assert ("`before` -> `_last`" if fmt == "markdown" else "before -> _last") in out
    assert "PASS -> FAIL" in out or "| PASS | FAIL |" in out


def test_utf8_console_keeps_the_arrows(dessert_project: Path) -> None:
    out = _diff_on("utf-8", "markdown", dessert_project).decode("utf-8")
    assert "`before` → `_last`" in out and "brûlée 🍮" in out


def test_a_partial_run_of_one_test_says_1_test() -> None:
    from ghostrun._store._inventory import partial_run

    run = {"tests": {"t": {}}, "previous": {"tests": 5, "finished": "earlier"}}
    assert partial_run(run) == ["it ran 1 test, the run before it (finished earlier) 5"]


# -- check and prune as library functions, without argparse ----------------------------------


def test_check_returns_what_the_run_left_unused_and_prune_deletes_it(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    from ghostrun._store import _check

    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="auto"):
        httpx.post(provider.url("/v1/chat/completions"), json={"model": "m"})
    (stale,) = cassette_dir.glob("*.json")
    shutil.rmtree(cassette_dir / "trajectories", ignore_errors=True)  # a trajectory keeps it
    miss = {"test": "t", "message": "ghostrun: no recording for POST"}
    run = {"version": 1, "tests": {"t": {}}, "cassettes_used": [], "verdicts_used": []}
    run.update(misses=[miss], previous={"tests": 3, "finished": "earlier"})

    found = _check.check(cassette_dir, run)
    assert found.cassettes == [stale] and found.verdicts == [] and found.files == [stale]
    assert found.misses == [miss] and found.verdicts_checked
    assert found.partial == ["it ran 1 test, the run before it (finished earlier) 3"]
    assert _check.prune(found) == 1 and not stale.exists()
    assert _check.check(cassette_dir, {**run, "cassettes_used": []}).files == []


def test_check_names_a_damaged_cassette_rather_than_listing_it(tmp_path: Path) -> None:
    from ghostrun._store import _check

    damaged = tmp_path / f"{'a' * 32}.json"
    damaged.write_text('{"version": 2, "key": "' + "a" * 32 + '"}')
    run = {"version": 1, "tests": {}, "cassettes_used": [], "verdicts_used": []}
    with pytest.raises(ghostrun.CassetteError) as info:
        _check.check(tmp_path, run)
    assert str(damaged) in str(info.value) and "request: missing" in str(info.value)
    assert damaged.exists()


def test_check_older_than_is_a_library_function_too(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    from ghostrun._store import _check

    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="auto"):
        httpx.post(provider.url("/v1/chat/completions"), json={"model": "m"})
    assert _check.older_than(cassette_dir, "90d") == ([], 0)  # recorded today
    with pytest.raises(ValueError, match="max_age"):
        _check.older_than(cassette_dir, "soon")
