"""Guards of what one test costs (issue 32) that count, never time, so they cannot flake.

A session per test is the common use, so what a session does when it opens and
closes is paid once per test: the roads' hook checks, the host patterns, the
files it opens and the ``fsync`` calls of a recording. What does not change
between sessions is computed once, and again only when its inputs change; a
recording syncs each new file before its name appears, and its directory once,
when the session closes (DESIGN §3).
"""

from __future__ import annotations

import inspect
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import httpx2
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core import _hosts
from ghostrun._intercept import _patch

LOOPBACK = ("127.0.0.1",)


@contextmanager
def counting(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> Iterator[list[Any]]:
    """Every call of ``owner.name`` while inside, by its first argument."""
    calls: list[Any] = []
    original: Callable[..., Any] = getattr(owner, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0] if args else None)
        return original(*args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(owner, name, spy)
        yield calls


def empty_session(cassette_dir: Path, hosts: tuple[str, ...] = LOOPBACK) -> None:
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=hosts):
        pass


# -- what does not change between sessions ----------------------------------------------


def test_aiohttp_hook_is_checked_by_signature_once_not_per_session(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """openai and anthropic import aiohttp: its check ran four signature reads per session."""
    assert aiohttp.ClientSession  # imported: every session checks its hook
    empty_session(cassette_dir)
    with counting(monkeypatch, inspect, "signature") as signatures:
        for _ in range(3):
            empty_session(cassette_dir)
    assert signatures == []


def test_the_roads_are_checked_once_not_per_session(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the checks passed and the installs set is set again while nothing changed."""
    from ghostrun._intercept import _aiohttp, _httpx

    empty_session(cassette_dir)
    with (
        counting(monkeypatch, _aiohttp.AiohttpAdapter, "check") as aiohttp_checks,
        counting(monkeypatch, _httpx.HttpxFamilyAdapter, "check") as httpx_checks,
    ):
        for _ in range(3):
            with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
                assert httpx2.Client.__dict__["_transport_for_url"].__wrapped__  # installed
    assert aiohttp_checks == httpx_checks == []
    assert not hasattr(httpx2.Client.__dict__["_transport_for_url"], "__wrapped__")  # restored


def test_a_hook_replaced_between_sessions_is_checked_afresh(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check still sees a library changed since: a new function is read anew."""
    empty_session(cassette_dir)

    async def without_middlewares(self: Any, method: str, url: Any) -> Any:
        raise AssertionError("never called")

    monkeypatch.setattr(aiohttp.ClientSession, "_request", without_middlewares)
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        assert _patch.is_unhooked("aiohttp")  # that road alone is left unhooked
    monkeypatch.undo()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        assert not _patch.is_unhooked("aiohttp")  # the library as it was: hooked again


def test_host_patterns_are_parsed_once_for_a_host_list_not_per_session(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty_session(cassette_dir)
    with counting(monkeypatch, _hosts, "_pattern") as parsed:
        for _ in range(3):
            empty_session(cassette_dir)
    assert parsed == []


def test_a_new_host_list_is_parsed_and_matched(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session's own ``hosts=``, or ``configure(hosts=)``, is a new list: parsed, used."""
    empty_session(cassette_dir)
    url = provider.url("/v1/chat/completions")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    host = provider.base_url.split("://", 1)[1]  # 127.0.0.1:<port>, a list never seen before
    with counting(monkeypatch, _hosts, "_pattern") as parsed:
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=[host]) as own:
            httpx2.post(url, json=body).raise_for_status()
    assert own.recorded == 1
    assert host in parsed
    try:
        ghostrun.configure(hosts=[host.replace("127.0.0.1", "localhost")])
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir) as configured:
            httpx2.post(url, json=body).raise_for_status()
        assert configured.replayed == 1
    finally:
        ghostrun.configure(hosts=None)


def test_the_project_file_is_looked_at_once_per_session_not_once_per_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mode, hosts, ignored URLs and block_network each read [tool.ghostrun]: one stat."""
    (tmp_path / "pyproject.toml").write_text('[tool.ghostrun]\nhosts = ["example.test"]\n')
    monkeypatch.chdir(tmp_path)
    pyproject = str(tmp_path / "pyproject.toml")
    empty_session(tmp_path / "cassettes")
    with counting(monkeypatch, os, "stat") as stats:
        for _ in range(3):
            empty_session(tmp_path / "cassettes")
    assert [os.fspath(p) for p in stats].count(pyproject) == 3


def test_a_changed_project_file_counts_from_the_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.ghostrun]\nhosts = ["one.example.test"]\n')
    monkeypatch.chdir(tmp_path)
    with ghostrun.session(mode="replay", cassette_dir=tmp_path / "c") as first:
        assert first._deck.matcher("one.example.test")
    pyproject.write_text('[tool.ghostrun]\nhosts = ["two.example.test"]\n')
    os.utime(pyproject, ns=(1, 1))  # a new mtime, however coarse the file system's clock
    with ghostrun.session(mode="replay", cassette_dir=tmp_path / "c") as second:
        assert second._deck.matcher("two.example.test")
        assert not second._deck.matcher("one.example.test")


def test_a_tests_trajectory_file_name_is_made_once_not_per_session(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replayed session looks its trajectory up: the name (a hash of the id) is kept."""
    from ghostrun._store import _trajectory as stored

    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, name="tests/t.py::t"):
        pass
    with counting(monkeypatch, stored.hashlib, "sha256") as hashed:
        for _ in range(3):
            with ghostrun.session(mode="replay", cassette_dir=cassette_dir, name="tests/t.py::t"):
                pass
    assert hashed == []


# -- files opened ---------------------------------------------------------------------


def test_a_one_call_replay_session_opens_only_its_cassette(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    url = provider.url("/v1/chat/completions")
    # Recorded as another test would have (a test that records writes its trajectory).
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t0"):
        httpx2.post(url, json=body).raise_for_status()
    (cassette,) = cassette_dir.glob("*.json")
    with httpx2.Client() as client, counting(monkeypatch, os, "open") as opened:
        for _ in range(2):
            with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
                client.post(url, json=body).raise_for_status()
    trajectory = next(p for p in opened if "trajectories" in str(p))  # read, for unplayed steps
    assert [os.path.realpath(p) for p in opened] == [
        os.path.realpath(cassette),
        os.path.realpath(trajectory),
    ] * 2


# -- fsyncs ---------------------------------------------------------------------------


@contextmanager
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Each ``os.fsync`` as "file" or "dir"."""
    synced: list[str] = []
    real = os.fsync

    def spy(fd: int) -> None:
        synced.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", spy)
        yield synced


def test_recording_syncs_each_new_file_and_its_directory_once_when_the_session_closes(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = provider.url("/v1/chat/completions")
    cassette_dir.mkdir()
    (cassette_dir / ".gitignore").write_text("")  # the directory exists: only cassettes are new
    with fsyncs(monkeypatch) as synced:
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
            for n in range(3):
                body = {"model": "m", "messages": [{"role": "user", "content": f"q{n}"}]}
                httpx2.post(url, json=body).raise_for_status()
            assert synced == ["file"] * 3  # each file before its name; no directory yet
        # The three cassettes and the test's trajectory, then each new name's directory
        # (the cassettes' and trajectories/), once, at the close.
        assert synced == ["file"] * 4 + ["dir"] * 2
    assert len(list(cassette_dir.glob("*.json"))) == 3
    with fsyncs(monkeypatch) as synced:  # again: each file replaced, its name already there
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
            body = {"model": "m", "messages": [{"role": "user", "content": "q0"}]}
            httpx2.post(url, json=body).raise_for_status()
    assert synced == ["file", "file"]  # the cassette and the trajectory, over their names


def test_a_write_outside_any_session_syncs_its_directory_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ghostrun._core._files import write_atomic

    (tmp_path / "d").mkdir()
    with fsyncs(monkeypatch) as synced:
        write_atomic(tmp_path / "d" / "verdict.json", b"{}")
    assert synced == ["file", "dir"]


def test_a_session_that_records_nothing_syncs_nothing(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with fsyncs(monkeypatch) as synced:
        for _ in range(3):
            empty_session(cassette_dir)
    assert synced == []


# -- what a recorded test does to its directory ----------------------------------------


@contextmanager
def file_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, list[str]]]:
    """The file system calls a recording makes, by kind: files created under a name, files
    made without one (``O_TMPFILE``), links, renames, removals, ``fsync`` calls."""
    calls: dict[str, list[str]] = {
        k: [] for k in ("named", "unnamed", "link", "rename", "remove", "fsync")
    }
    unnamed = getattr(os, "O_TMPFILE", 0)
    real_open, real_link, real_replace, real_unlink, real_fsync = (
        os.open,
        os.link,
        os.replace,
        os.unlink,
        os.fsync,
    )

    def opened(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if unnamed and flags & unnamed == unnamed:
            calls["unnamed"].append(os.path.basename(os.fspath(path)))
        elif flags & os.O_CREAT:
            calls["named"].append(os.path.basename(os.fspath(path)))
        return real_open(path, flags, *args, **kwargs)

    def linked(source: Any, target: Any, **kwargs: Any) -> None:
        calls["link"].append(os.path.basename(os.fspath(target)))
        real_link(source, target, **kwargs)

    def replaced(source: Any, target: Any) -> None:
        calls["rename"].append(os.path.basename(os.fspath(target)))
        real_replace(source, target)

    def removed(path: Any) -> None:
        calls["remove"].append(os.path.basename(os.fspath(path)))
        real_unlink(path)

    def synced(fd: int) -> None:
        calls["fsync"].append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real_fsync(fd)

    with monkeypatch.context() as patch:
        for name, spy in (
            ("open", opened),
            ("link", linked),
            ("replace", replaced),
            ("unlink", removed),
            ("fsync", synced),
        ):
            patch.setattr(os, name, spy)
        yield calls


def test_a_recorded_test_names_no_temporary_file_for_its_new_cassette_and_removes_none(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test re-run in record mode, as a suite recorded again: one call, a new cassette,
    its trajectory rewritten. Each file is written with no name, synced, then named: the
    cassette by its own name (no temporary name made and removed), the trajectory by a
    temporary name that replaces the old one. Durability is unchanged: each file synced
    before it is named, the directory once at the close (DESIGN §3)."""
    url = provider.url("/v1/chat/completions")

    def recorded_test(prompt: str) -> None:
        body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
            httpx2.post(url, json=body).raise_for_status()

    recorded_test("first run")
    with file_calls(monkeypatch) as calls:
        recorded_test("run again")
    (cassette,) = [p.name for p in cassette_dir.glob("*.json") if "first" not in p.read_text()]
    (trajectory,) = [p.name for p in (cassette_dir / "trajectories").iterdir()]
    assert calls["named"] == [] and calls["remove"] == []
    assert calls["unnamed"] == ["cassettes", "trajectories"]
    assert calls["link"][0] == cassette and calls["link"][1].startswith(f".{trajectory}")
    assert calls["rename"] == [trajectory]
    assert calls["fsync"] == ["file", "file", "dir"]  # each file before its name; the dir once


def test_a_recorded_steps_response_is_read_once_for_its_trajectory(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trajectory's model step (tool calls, tokens) and the session's answer come from
    the same response: a stream's events are parsed once for both, not once each."""
    from ghostrun._recording import _steps

    url = provider.url("/v1/chat/completions")
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "a b c"}]}
    with counting(monkeypatch, _steps, "response_documents") as parsed:
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
            with httpx2.stream("POST", url, json=body) as response:
                events = list(response.iter_lines())
    assert any("data:" in line for line in events)
    assert len(parsed) == 1
