"""The run log: what each test produced and how it was judged, and comparing two runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core._exceptions import CassetteError
from ghostrun._recording import _runlog
from ghostrun._tools import _diff

LOOPBACK = ("127.0.0.1",)


@pytest.fixture
def log() -> Iterator[_runlog.RunLog]:
    """A fresh run log for this test; the suite's own run log is put back after."""
    fresh = _runlog.RunLog()
    with _runlog.PROCESS.collecting(fresh):
        yield fresh


def chat(provider: ProviderSimulator, prompt: str) -> dict[str, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    response = httpx.post(provider.url("/v1/chat/completions"), json=body)
    return dict(response.json())


def only(documents: dict[Path, dict[str, Any]]) -> dict[str, Any]:
    assert len(documents) == 1, documents.keys()
    return next(iter(documents.values()))


# -- collecting ----------------------------------------------------------------------------


def test_collecting_puts_back_the_log_and_the_exit_setting_it_replaced() -> None:
    process = _runlog.PROCESS
    before, autoflush = process.log, process.autoflush
    with process.collecting(autoflush=not autoflush) as fresh:
        assert process.log is fresh and fresh is not before and not fresh
        assert process.autoflush is not autoflush
        with process.collecting(_runlog.RunLog()) as inner:
            assert process.log is inner and process.autoflush is not autoflush
        assert process.log is fresh
    assert process.log is before and process.autoflush is autoflush


def test_an_outcome_is_logged_where_it_says_test_alias_and_directory(
    log: _runlog.RunLog, cassette_dir: Path
) -> None:
    where = _runlog.Where("named", "tests/test_x.py::test_y", cassette_dir)
    assert (where.test, where.alias, where.cassette_dir) == tuple(where)
    log.assertion(
        where, kind="contains", criterion="c", text="t", passed=True, reason="r", judge=None
    )
    log.outcome("tests/test_x.py::test_y", "passed")  # the test's id reaches its alias
    test = log.documents()[cassette_dir.absolute()]["tests"]["named"]
    assert test["outcome"] == "passed" and test["outputs"] == ["t"]
    assert test["assertions"][0]["verdict"] == "PASS"


def test_a_session_logs_outputs_verdicts_and_the_cassettes_it_used(
    log: _runlog.RunLog, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, name="refund") as session:
        reply = chat(provider, "where is my refund")
        ghostrun.expect(reply).contains("refund")
        with pytest.raises(AssertionError):
            ghostrun.expect(reply).contains("apology")
        ghostrun.expect("another text").contains("text")

    document = log.documents()[cassette_dir.absolute()]
    test = document["tests"]["refund"]
    assert test["outputs"] == ["Echo: where is my refund", "another text"]
    assert [(a["kind"], a["verdict"], a["output"]) for a in test["assertions"]] == [
        ("contains", "PASS", 0),
        ("contains", "FAIL", 0),
        ("contains", "PASS", 1),
    ]
    assert test["assertions"][1]["criterion"] == "contains 'apology'"
    assert "'apology' is not in the text" in test["assertions"][1]["reason"]
    assert test["requests"] == {"replayed": 0, "recorded": 1, "misses": 0}
    assert document["cassettes_used"] == sorted(session._deck.used_keys)
    assert document["misses"] == []


def test_an_assertion_outside_any_session_goes_to_the_test_and_default_directory(
    log: _runlog.RunLog, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    ghostrun.configure(cassette_dir=tmp_path / "default")
    try:
        ghostrun.expect("plain").contains("plain")
    finally:
        ghostrun.configure(cassette_dir=None)
    document = log.documents()[(tmp_path / "default").absolute()]
    assert list(document["tests"]) == [request.node.nodeid]


def test_outcomes_reported_under_the_test_id_reach_a_session_with_its_own_name(
    log: _runlog.RunLog, request: pytest.FixtureRequest, cassette_dir: Path
) -> None:
    with ghostrun.session(cassette_dir=cassette_dir, name="my-prompt"):
        ghostrun.expect("x").contains("x")
    _runlog.test_outcome(request.node.nodeid, "failed")
    assert only(log.documents())["tests"]["my-prompt"]["outcome"] == "failed"
    with pytest.raises(ValueError, match="invalid test outcome"):
        _runlog.test_outcome("t", "crashed")


def test_a_reentered_session_counts_each_request_and_miss_once(
    log: _runlog.RunLog, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    session = ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, name="t")
    with session:
        chat(provider, "one")
    replay = ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, name="t", mode="replay")
    for _ in range(2):
        with replay:
            chat(provider, "one")
    with pytest.raises(ghostrun.CacheMiss), replay:
        chat(provider, "never recorded")

    document = only(log.documents())
    assert document["tests"]["t"]["requests"] == {"replayed": 2, "recorded": 1, "misses": 1}
    [miss] = document["misses"]
    assert miss["test"] == "t" and "no recording for POST" in miss["message"]


def test_verdicts_used_is_null_when_the_run_judged_but_did_not_say_which(
    log: _runlog.RunLog, cassette_dir: Path
) -> None:
    where = _runlog.Where("t", None, cassette_dir)
    fields: dict[str, Any] = {"criterion": "c", "text": "x", "passed": True, "reason": "r"}
    log.assertion(where, kind="satisfies", judge="ollama:llama3.2:3b", **fields)
    assert only(log.documents())["verdicts_used"] is None
    _runlog.verdict_used("k" * 32, cassette_dir)
    assert only(log.documents())["verdicts_used"] == ["k" * 32]


def test_an_exported_part_merges_into_one_complete_run(log: _runlog.RunLog, tmp_path: Path) -> None:
    fields: dict[str, Any] = {"kind": "contains", "criterion": "c", "reason": "r", "judge": None}
    worker = _runlog.RunLog()
    worker.assertion(_runlog.Where("a", None, tmp_path), text="A", passed=True, **fields)
    worker.verdict("v1", tmp_path)
    worker.outcome("a", "passed")
    log.assertion(_runlog.Where("b", None, tmp_path), text="B", passed=False, **fields)
    log.assertion(_runlog.Where("a", None, tmp_path), text="A2", passed=True, **fields)
    log.merge(worker.export())

    document = only(log.documents())
    assert sorted(document["tests"]) == ["a", "b"]
    a = document["tests"]["a"]
    assert a["outcome"] == "passed"
    assert a["outputs"] == ["A2", "A"]
    assert [x["output"] for x in a["assertions"]] == [0, 1]
    assert document["verdicts_used"] == ["v1"]


def test_write_puts_last_and_the_snapshot_in_each_directory(
    log: _runlog.RunLog, tmp_path: Path
) -> None:
    fields: dict[str, Any] = {"kind": "contains", "criterion": "c", "reason": "r", "judge": None}
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where a directory should be")
    log.assertion(_runlog.Where("a", None, tmp_path / "one"), text="A", passed=True, **fields)
    log.assertion(_runlog.Where("b", None, blocked), text="B", passed=True, **fields)

    written, errors = _runlog.write_run("v1")

    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == [
        "one/runs/_last.json",
        "one/runs/v1.json",
    ]
    assert len(errors) == 1 and "blocked" in str(errors[0])
    last, snapshot = (
        _runlog.load_run(tmp_path / "one" / "runs" / f) for f in ("_last.json", "v1.json")
    )
    assert last["name"] == "_last" and snapshot["name"] == "v1"
    assert last["run_id"] == snapshot["run_id"]
    assert not log  # written runs are forgotten


@pytest.mark.parametrize("name", ["", "../up", ".hidden", "a/b", "x.json", "sp ace"])
def test_a_snapshot_name_must_be_a_plain_file_name(name: str) -> None:
    with pytest.raises(ValueError, match="invalid snapshot name"):
        _runlog.check_snapshot_name(name)


def test_a_corrupt_or_foreign_run_file_names_itself(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text('{"version": 99, "tests": {}}')
    with pytest.raises(CassetteError, match=r"run\.json has format version 99"):
        _runlog.load_run(path)
    path.write_text("[]")
    with pytest.raises(CassetteError, match="corrupt run log"):
        _runlog.load_run(path)


def test_a_plain_script_writes_its_run_at_exit(provider: ProviderSimulator, tmp_path: Path) -> None:
    script = tmp_path / "check_prompt.py"
    script.write_text(
        "import os, httpx, ghostrun\n"
        "with ghostrun.session(hosts=['127.0.0.1'], cassette_dir='cassettes'):\n"
        "    r = httpx.post(os.environ['SIM'] + '/v1/chat/completions',\n"
        "                   json={'model': 'm', 'messages': [{'role': 'user', 'content': 'hi'}]})\n"
        "    ghostrun.expect(r.json()).contains('hi')\n"
    )
    env = {**os.environ, "SIM": provider.base_url, "GHOSTRUN_SNAPSHOT": "first"}
    del env["PYTEST_CURRENT_TEST"]  # else the script's test is named after this one
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 0
    for name in ("_last", "first"):
        run = json.loads((tmp_path / "cassettes" / "runs" / f"{name}.json").read_text())
        assert run["tests"]["check_prompt.py"]["outputs"] == ["Echo: hi"]
        assert len(run["cassettes_used"]) == 1


# -- comparing -----------------------------------------------------------------------------


def run(**tests: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "tests": tests}


def test(
    *verdicts: str, outcome: str | None = None, outputs: tuple[str, ...] = ("out",)
) -> dict[str, Any]:
    assertions = [
        {
            "kind": "contains",
            "criterion": f"c{i}",
            "verdict": v,
            "reason": f"r{i}",
            "judge": None,
            "output": 0,
        }
        for i, v in enumerate(verdicts)
    ]
    return {"outcome": outcome, "outputs": list(outputs), "assertions": assertions}


test.__test__ = False  # type: ignore[attr-defined]  # a builder, not a test


def statuses(diff: _diff.RunDiff) -> list[tuple[str, str, str]]:
    return [(c.test, c.criterion, c.status) for c in diff.assertions]


def test_each_assertion_is_classified() -> None:
    base = run(t=test("PASS", "FAIL", "PASS", "PASS"), gone=test("PASS"))
    candidate = run(t=test("FAIL", "PASS", "PASS"), new=test("PASS"))
    diff = _diff.compare(base, candidate, "base", "candidate")
    assert statuses(diff) == [
        ("gone", "c0", "removed"),
        ("new", "c0", "added"),
        ("t", "c0", "regression"),
        ("t", "c1", "fix"),
        ("t", "c2", "stable"),
        ("t", "c3", "removed"),  # the test ran to its end: the assertion is gone
    ]
    assert diff.regressed


@pytest.mark.parametrize(
    "candidate",
    [
        test("PASS", "FAIL", outcome="failed"),
        test("PASS", "FAIL"),  # no framework outcome (a script): its last assertion failed
        test("PASS", outcome="error"),
        test(outcome="skipped"),
    ],
)
def test_an_aborted_tests_later_assertions_are_not_run(candidate: dict[str, Any]) -> None:
    diff = _diff.compare(run(t=test("PASS", "PASS", "PASS")), run(t=candidate), "a", "b")
    assert [c.status for c in diff.assertions][-1] == "not-run"
    assert diff.counts()["removed"] == 0


def test_repeated_criteria_are_matched_by_rank_not_position() -> None:
    before = test("PASS")
    after = test("PASS")
    after["assertions"].insert(0, {**after["assertions"][0], "criterion": "inserted"})
    before["assertions"].append(dict(before["assertions"][0]))
    after["assertions"].append({**after["assertions"][1], "verdict": "FAIL"})
    diff = _diff.compare(run(t=before), run(t=after), "a", "b")
    assert sorted((c.criterion, c.status) for c in diff.assertions) == [
        ("c0", "regression"),
        ("c0", "stable"),
        ("inserted", "added"),
    ]


def test_output_drift_has_a_similarity_ratio_and_a_unified_diff() -> None:
    base = run(t=test("PASS", outputs=("We are sorry, your refund is on its way.", "same")))
    candidate = run(t=test("PASS", outputs=("Your refund is on its way.", "same")))
    diff = _diff.compare(base, candidate, "a", "b")
    [drift] = diff.drift
    assert drift.output == 0
    assert 0.5 < drift.ratio < 1
    assert drift.diff[:2] == ["--- base", "+++ candidate"]
    assert "-We are sorry, your refund is on its way." in drift.diff
    assert "+Your refund is on its way." in drift.diff
    assert not diff.regressed


def test_the_markdown_fence_outlasts_backticks_in_the_output() -> None:
    base = run(t=test("PASS", outputs=("```python\nx = 1\n```",)))
    candidate = run(t=test("PASS", outputs=("```python\nx = 2\n```",)))
    markdown = _diff.render(_diff.compare(base, candidate, "a", "b"), "markdown")
    assert "````diff" in markdown


def test_processes_sharing_a_run_id_add_to_one_run_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """examples/run_all.py runs three processes as one run: none may drop another's tests."""
    from ghostrun._core._files import dump_json, write_atomic
    from ghostrun._recording._runlog import RUN_FORMAT_VERSION, _joined

    def part(test: str, cassette: str) -> dict[str, Any]:
        return {
            "version": RUN_FORMAT_VERSION,
            "name": "_last",
            "run_id": "shared",
            "finished": "2026-11-29T00:00:00Z",
            "tests": {test: {"outcome": "passed", "outputs": [], "assertions": []}},
            "cassettes_used": [cassette],
            "verdicts_used": [],
            "misses": [],
        }

    path = tmp_path / "runs" / "_last.json"
    write_atomic(path, dump_json(part("unittest::a", "k1")))
    monkeypatch.setenv("GHOSTRUN_RUN_ID", "shared")
    joined = _joined(part("pytest::b", "k2"), path)
    assert sorted(joined["tests"]) == ["pytest::b", "unittest::a"]
    assert joined["cassettes_used"] == ["k1", "k2"]
    monkeypatch.setenv("GHOSTRUN_RUN_ID", "another run")
    alone = _joined({**part("pytest::b", "k2"), "run_id": "another run"}, path)
    assert list(alone["tests"]) == ["pytest::b"]  # a new run replaces the old one
    monkeypatch.delenv("GHOSTRUN_RUN_ID")
    assert list(_joined(part("pytest::b", "k2"), path)["tests"]) == ["pytest::b"]
