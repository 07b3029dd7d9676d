"""Symbolic links committed inside a cassette directory are never followed (issue 28,
DESIGN §3 "Safe"): not for a write, a lock or a delete. Each link points at a folder
outside the cassette directory, which must stay untouched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._judging._verdicts import grade
from ghostrun._recording import _runlog
from ghostrun._tools import _cli

LOOPBACK = ("127.0.0.1",)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """Outside the cassette directory: where a committed link points."""
    place = tmp_path / "elsewhere"
    place.mkdir()
    return place


def record(provider: ProviderSimulator, cassette_dir: Path, mode: str = "auto") -> Path:
    with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=LOOPBACK):
        httpx.post(provider.url("/v1/chat/completions"), json=BODY)
    (path,) = cassette_dir.glob("*.json")
    return path


def lock_link(cassette: Path, target: Path) -> Path:
    link = cassette.parent / f".{cassette.name}.ghostrun-lock"
    link.symlink_to(target)
    return link


def test_a_linked_lock_file_is_never_opened_by_a_recording(
    provider: ProviderSimulator, cassette_dir: Path, elsewhere: Path
) -> None:
    cassette = record(provider, cassette_dir)
    link = lock_link(cassette, elsewhere / "planted")
    with pytest.raises(ghostrun.CassetteError, match="is a symbolic link"):
        record(provider, cassette_dir, mode="record")  # re-records under the cassette's lock
    assert list(elsewhere.iterdir()) == []
    assert link.is_symlink()


def test_prune_reports_and_skips_links(
    provider: ProviderSimulator,
    cassette_dir: Path,
    elsewhere: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cassette = record(provider, cassette_dir)
    shutil.rmtree(cassette_dir / "trajectories")  # no test names the cassette: it is unused
    lock_link(cassette, elsewhere / "planted")
    outside_verdict = elsewhere / ("a" * 32 + ".json")
    outside_verdict.write_text("{}")  # what a linked judge/ folder would show prune
    (cassette_dir / "judge").symlink_to(elsewhere)
    (cassette_dir / ("b" * 32 + ".json")).symlink_to(cassette)  # a cassette name, linked
    (cassette_dir / "runs").mkdir()
    run = {"version": 1, "tests": {}, "cassettes_used": [], "verdicts_used": []}
    (cassette_dir / "runs" / "_last.json").write_text(json.dumps(run))

    assert _cli.main(["prune", "--yes", "--cassette-dir", str(cassette_dir)]) == 0
    out = capsys.readouterr().out
    assert "3 symbolic links skipped" in out
    assert "Deleted 1 file." in out  # the one real, unused cassette
    assert sorted(p.name for p in elsewhere.iterdir()) == [outside_verdict.name]
    assert outside_verdict.read_text() == "{}"
    links = [p for p in cassette_dir.iterdir() if p.is_symlink()]
    assert len(links) == 3


def test_a_linked_runs_folder_gets_no_run_log_nor_report(
    provider: ProviderSimulator, cassette_dir: Path, elsewhere: Path
) -> None:
    record(provider, cassette_dir)
    (cassette_dir / "runs").symlink_to(elsewhere)
    run = {"version": 1, "tests": {}, "cassettes_used": [], "verdicts_used": []}
    (elsewhere / "_last.json").write_text(json.dumps(run))  # as if committed there
    log = _runlog.RunLog()
    with _runlog.PROCESS.collecting(log):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
            httpx.post(provider.url("/v1/chat/completions"), json=BODY)
        written, errors = log.write()
    assert written == [] and "is a symbolic link" in str(errors[0])
    assert _cli.main(["report", "--cassette-dir", str(cassette_dir)]) == 2
    assert sorted(p.name for p in elsewhere.iterdir()) == ["_last.json"]
    assert json.loads((elsewhere / "_last.json").read_text()) == run


def test_a_linked_judge_folder_gets_no_verdict(cassette_dir: Path, elsewhere: Path) -> None:
    cassette_dir.mkdir()
    (cassette_dir / "judge").symlink_to(elsewhere)
    with pytest.raises(ghostrun.CassetteError, match="is a symbolic link"):
        with ghostrun.session(mode="auto", cassette_dir=cassette_dir):
            grade("the text", "the criterion", lambda text, criterion: True)
    assert list(elsewhere.iterdir()) == []
