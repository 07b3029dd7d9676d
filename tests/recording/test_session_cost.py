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
import json
import os
import socket
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
    with (
        httpx2.Client() as client,
        counting(monkeypatch, os, "open") as opened,
        counting(monkeypatch, os, "access") as looked,
    ):
        for _ in range(2):
            with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
                client.post(url, json=body).raise_for_status()
    assert [os.path.realpath(p) for p in opened] == [os.path.realpath(cassette)] * 2
    # Its test's trajectory looked for (for unplayed steps): there is none, so none is
    # opened, and no failed open raised an error to catch.
    assert len(looked) == 2 and all("trajectories" in str(p) for p in looked)


def test_an_empty_replay_of_a_recorded_test_still_fails_for_its_unplayed_steps(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch, leased: None
) -> None:
    """The look for the trajectory is cheaper (no failed open when there is none), never
    skipped: a replayed test that made none of its recorded calls fails, under a lease too."""
    url = provider.url("/v1/chat/completions")
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK, name="t"):
        httpx2.post(url, json=body).raise_for_status()
    from ghostrun._recording import _trajectory

    recorded_in = _trajectory.swap(_trajectory.Tracker())  # replayed as a later process would
    try:
        with (
            counting(monkeypatch, os, "access") as looked,
            counting(monkeypatch, os, "open") as read,
            pytest.raises(ghostrun.UnplayedSteps, match="used 0 of the 1 steps"),
            ghostrun.session(mode="replay", cassette_dir=cassette_dir, name="t"),
        ):
            pass
    finally:
        _trajectory.swap(recorded_in)
    (trajectory,) = (cassette_dir / "trajectories").iterdir()
    assert [os.path.realpath(p) for p in looked] == [os.path.realpath(trajectory)]
    assert [os.path.realpath(p) for p in read] == [os.path.realpath(trajectory)]


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


# -- a session per test under a runner's lease (issue 43) ------------------------------


@pytest.fixture
def leased() -> Iterator[None]:
    """The roads held as the pytest plugin holds them for a run (the unittest mixin, a class)."""
    release = _patch.lease()
    try:
        yield
    finally:
        release()


def guard_hooks() -> tuple[Any, ...]:
    """What the guard replaces in the socket module: the originals, or its hooks."""
    return (socket.getaddrinfo, socket.gethostbyname, socket.socket.__dict__.get("connect"))


def test_under_a_lease_a_replay_session_installs_no_guard_hook_and_still_refuses(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DESIGN §2: under a lease the guard acts as without it. Its hooks are held with the
    roads and ask whether anyone holds the guard: a replay session refuses, a record
    session and no session let through, and the lease's end puts the originals back."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    guarded = (f"127.0.0.1:{port}",)
    originals = guard_hooks()

    def connect() -> None:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()

    release = _patch.lease()
    try:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=guarded):
            installed = guard_hooks()
        assert installed != originals  # the first replay session installed them
        for _ in range(3):
            with pytest.raises(ghostrun.CacheMiss, match="replay mode never touches"):
                with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=guarded):
                    assert guard_hooks() == installed  # nothing installed anew
                    connect()
            assert guard_hooks() == installed  # nothing restored either
            connect()  # no session: let through, as without the lease
            with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=guarded):
                connect()
        # A resolver replaced between sessions (a test's fixture) is guarded all the same.
        looked_up: list[Any] = []

        def resolver(host: Any, *args: Any, **kwargs: Any) -> Any:
            looked_up.append(host)
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

        with monkeypatch.context() as patch:
            patch.setattr(socket, "getaddrinfo", resolver)
            with pytest.raises(ghostrun.CacheMiss):
                with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=guarded):
                    socket.getaddrinfo("127.0.0.1", port)
            assert looked_up == []
            assert socket.getaddrinfo("127.0.0.1", port)  # no session: the resolver answers
            assert looked_up == ["127.0.0.1"]
        with pytest.raises(ghostrun.CacheMiss):
            with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=guarded):
                socket.getaddrinfo("127.0.0.1", port)
    finally:
        release()
        listener.close()
    assert guard_hooks() == originals  # the exact originals, once the lease ended
    assert all(a is b for a, b in zip(guard_hooks(), originals, strict=True))


def test_a_session_per_test_resolves_its_settings_from_one_look_at_the_directory(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch, leased: None
) -> None:
    """Mode, directory, hosts, ignored URLs... each read the project's table for the working
    directory: eleven ``getcwd`` a session. The settings resolved are kept per their inputs."""
    empty_session(cassette_dir)
    with counting(monkeypatch, os, "getcwd") as looked:
        for _ in range(3):
            empty_session(cassette_dir)
    assert len(looked) <= 3 * 2  # where it is written (its check), and when it enters


def test_kept_settings_follow_every_input_that_changes_between_sessions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leased: None
) -> None:
    """The environment, configure(), the pytest plugin's settings, the working directory and
    its [tool.ghostrun] table each change what the same session's arguments resolve to."""

    def opened(**given: Any) -> ghostrun.Session:
        with ghostrun.session(**given) as session:
            return session

    from ghostrun._core._config import settings

    monkeypatch.chdir(tmp_path)
    assert opened(mode="replay").cassette_dir == Path(".ghostrun_cache")
    monkeypatch.setenv("GHOSTRUN_CASSETTE_DIR", str(tmp_path / "env"))
    assert opened(mode="replay").cassette_dir == tmp_path / "env"
    monkeypatch.setenv("GHOSTRUN_HOSTS", "env.example.test")
    assert opened(mode="replay")._deck.matcher("env.example.test")
    monkeypatch.setenv("GHOSTRUN_MODE", "replay")
    assert opened(mode="auto").mode is ghostrun.Mode.REPLAY
    monkeypatch.delenv("GHOSTRUN_MODE")
    assert opened(mode="auto").mode is ghostrun.Mode.AUTO
    monkeypatch.setenv("GHOSTRUN_BLOCK_NETWORK", "1")
    assert opened(mode="replay").block_network
    monkeypatch.setattr(settings, "suite_mode", ghostrun.Mode.REPLAY)  # pytest --ghostrun-replay
    assert opened(mode="auto").mode is ghostrun.Mode.REPLAY
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    try:
        ghostrun.configure(hosts=["configured.example.test"])
        assert opened(mode="replay")._deck.matcher("configured.example.test")
    finally:
        ghostrun.configure(hosts=None)
    assert not opened(mode="replay")._deck.matcher("configured.example.test")
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[tool.ghostrun]\ncassette_dir = "kept"\nhosts = ["table.example.test"]\n'
    )
    monkeypatch.chdir(project)
    table = opened(mode="replay")
    assert table.cassette_dir == project / "kept"
    assert table._deck.matcher("table.example.test")
    monkeypatch.chdir(tmp_path)
    assert not opened(mode="replay")._deck.matcher("table.example.test")
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/test_a.py::test_one (call)")
    assert opened(mode="replay").name == "tests/test_a.py::test_one"
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/test_a.py::test_two (call)")
    assert opened(mode="replay").name == "tests/test_a.py::test_two"


def test_the_kept_settings_are_keyed_on_every_variable_and_setting_resolving_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variable or a ``configure()`` setting read while resolving, but left out of the
    key (`_settings.READS`, `CONFIGURED`), would leave kept settings stale."""
    import dataclasses

    from ghostrun._core import _config
    from ghostrun._recording import _settings

    names: set[str] = set()
    fields = {f.name for f in dataclasses.fields(_config.Settings)}

    class Environment(dict[str, str]):
        def get(self, key: str, default: Any = None) -> Any:
            names.add(key)
            return super().get(key, default)

        def __getitem__(self, key: str) -> str:
            names.add(key)
            return super().__getitem__(key)

        def __contains__(self, key: object) -> bool:
            names.add(str(key))
            return super().__contains__(key)

    class Configured(_config.Settings):
        def __getattribute__(self, name: str) -> Any:
            if name in fields:
                names.add(f"settings.{name}")
            return super().__getattribute__(name)

    spy = Configured(**{f: getattr(_config.settings, f) for f in fields})
    monkeypatch.setattr(os, "environ", Environment(os.environ))
    monkeypatch.setattr(_config, "settings", spy)
    monkeypatch.setattr(_settings, "settings", spy)
    monkeypatch.chdir(tmp_path)
    arguments = ghostrun.session()._deck.arguments
    _settings._resolve(arguments, None)
    assert names - {"PYTEST_CURRENT_TEST"} <= {
        *_settings.READS,
        *(f"settings.{name}" for name in _settings.CONFIGURED),
    }
    assert "GHOSTRUN_MODE" in names and "settings.cassette_dir" in names  # it saw the reads


def test_a_replayed_session_per_test_registers_its_exit_handler_only_after_another(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch, leased: None
) -> None:
    """Telemetry at exit (`_at_exit`): its handler is the newest, so it runs before the
    handlers a framework registered in a session; re-registered when one was, only then."""
    import atexit

    from ghostrun._intercept import _at_exit

    empty_session(cassette_dir)
    with counting(monkeypatch, atexit, "register") as registered:
        for _ in range(3):
            empty_session(cassette_dir)
    assert registered == []

    def framework_flush() -> None:
        """Registered inside a session, as openai-agents' trace exporter is."""

    try:
        with counting(monkeypatch, atexit, "register") as registered:
            with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
                atexit.register(framework_flush)
        assert registered == [framework_flush, _at_exit.answer_at_exit]
    finally:
        atexit.unregister(framework_flush)


def test_a_session_that_did_nothing_adds_to_the_run_log_only_what_is_new(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch, leased: None
) -> None:
    from ghostrun._recording import _runlog

    with _runlog.PROCESS.collecting(autoflush=False) as log:
        empty_session(cassette_dir)
        with counting(monkeypatch, _runlog, "_test") as entries:
            for _ in range(3):
                empty_session(cassette_dir)
            with ghostrun.session(
                mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK, ignore_fields=["seed"]
            ):
                pass
        assert len(entries) == 1  # the new ignore_fields only
        (directory,) = json.loads(log.export())["dirs"].values()
        (test,) = directory["tests"].values()
        assert test["ignore_fields"] == ["seed"]
        log.clear()  # written: the next session's test is new to the log
        empty_session(cassette_dir)
        (directory,) = json.loads(log.export())["dirs"].values()
        assert len(directory["tests"]) == 1


def python_calls(run: Callable[[], None]) -> int:
    """The Python functions ``run`` calls (deterministic, unlike time)."""
    import sys

    calls = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event == "call"

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls


def test_an_empty_replay_session_under_a_lease_runs_few_python_functions(
    cassette_dir: Path, leased: None
) -> None:
    """Opening and closing a session is paid once per test: counted in Python function
    calls, it was about 360 under the lease, then 112, now 68: its settings looked up, its
    stacks, the roads' and the guard's counts, the variables its children inherit, its
    trajectory looked for and its run logged. A session that makes no request builds no
    store, counts, closing or redactor, and interception hears of it once each way."""
    for _ in range(3):
        empty_session(cassette_dir)
    assert python_calls(lambda: empty_session(cassette_dir)) <= 75


def test_a_new_tests_empty_session_under_a_lease_runs_few_python_functions(
    cassette_dir: Path, leased: None
) -> None:
    """A suite's tests each have a name of their own: a session under a name never seen
    costs about what one seen before does: 71 calls, where it was 155 (its trajectory's
    path built as a ``Path``, its run log entry made through the whole count of what it
    did)."""
    for n in range(3):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, name=f"t{n}"):
            pass

    def new_test() -> None:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, name="a new test"):
            pass

    assert python_calls(new_test) <= 78


def test_a_session_that_makes_no_request_builds_none_of_its_decks_parts(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch, leased: None
) -> None:
    """Its store, counts, closing, redactor and redirect hops are made at their first use:
    none for an empty session, in any mode; a request makes them, once."""
    from ghostrun._recording import _deck

    made: list[str] = []
    for name in ("Cassettes", "Counts", "Closing", "EntryRedactor", "Hops"):
        real = getattr(_deck, name)

        def making(*args: Any, _real: Any = real, _name: str = name) -> Any:
            made.append(_name)
            return _real(*args)

        monkeypatch.setattr(_deck, name, making)
    for mode in ("replay", "record", "auto"):
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=LOOPBACK) as quiet:
            pass
    assert made == []
    assert quiet.replayed == 0 and quiet.misses == []  # read back: counts made, all naught
    assert made == ["Counts"]


def test_a_replay_session_defers_no_directory_sync_and_a_recording_one_does(
    cassette_dir: Path, monkeypatch: pytest.MonkeyPatch, leased: None
) -> None:
    """Replay names no new file, so it has no directory to sync at its close (DESIGN §3:
    the directory once per session that wrote); a session that may record defers them."""
    from ghostrun._recording import _deck

    calls: list[str] = []
    for name in ("defer_dir_syncs", "sync_deferred_dirs"):
        real = getattr(_deck, name)

        def counted(_real: Any = real, _name: str = name) -> None:
            calls.append(_name)
            _real()

        monkeypatch.setattr(_deck, name, counted)
    for _ in range(3):
        empty_session(cassette_dir)
    assert calls == []
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        pass
    assert calls == ["defer_dir_syncs", "sync_deferred_dirs"]


def test_a_run_past_many_directories_still_adds_a_quiet_session_to_its_log_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leased: None
) -> None:
    """A suite whose tests each use a directory of their own (``tmp_path``) passes the
    run log's directory cache: it starts afresh, it does not stop caching."""
    from ghostrun._recording import _runlog

    with _runlog.PROCESS.collecting(autoflush=False) as log:
        for n in range(300):
            empty_session(tmp_path / f"d{n}")
        log.clear()
        empty_session(tmp_path / "last")
        with counting(monkeypatch, _runlog, "_test") as entries:
            for _ in range(3):
                empty_session(tmp_path / "last")
        assert entries == []
