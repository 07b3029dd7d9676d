"""The store under pressure (issue 16): parallel writers, kills, foreign files, bad dirs.

Every live response the simulator sent must be found in the cassette, and no
session may be handed one response twice; a killed writer leaves no half
file, and its temporary file is listed by ``check``, removed by ``prune`` and
ignored by git; ``prune`` deletes only ghostrun's own files.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from helpers import ROOT
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core._files import GITIGNORE
from ghostrun._store import _formats, _inventory, _validate
from ghostrun._tools import _cli

LOOPBACK = ("127.0.0.1",)
BODY = {"model": "gpt-sim", "messages": [{"role": "user", "content": "Next step?"}]}
pytest_plugins = ["pytester"]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GHOSTRUN_", "CI"))}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def stored_ids(path: Path) -> list[str]:
    document = _validate.load(path, "cassette")
    assert document is not None
    return [r["body"]["json"]["id"] for r in document["responses"]]


def run_log(directory: Path, used: list[str], **extra: Any) -> None:
    run = {"version": 1, "tests": {}, "cassettes_used": used, "verdicts_used": [], **extra}
    (directory / "runs").mkdir(parents=True, exist_ok=True)
    (directory / "runs" / "_last.json").write_text(json.dumps(run))


# -- the format as types ----------------------------------------------------------------------


def declared(kind: Any) -> set[str]:
    """The fields a `_formats` type declares (required or not)."""
    return set(kind.__annotations__)


def test_a_written_cassette_holds_only_the_fields_its_types_declare(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with ghostrun.session(cassette_dir=cassette_dir, hosts=("127.0.0.1",), name="t"):
        httpx.post(provider.url("/v1/chat/completions"), json=BODY)
    (path,) = cassette_dir.glob("*.json")
    document = _validate.load(path, "cassette")
    assert document is not None and "request" in document
    assert set(document) == declared(_formats.CassetteFile)
    assert {"method", "url"} <= set(document["request"]) <= declared(_formats.RequestRecord)
    (response,) = document["responses"]
    assert "status" in response and set(response) <= declared(_formats.ResponseRecord)
    assert set(response.get("body", {})) <= declared(_formats.Body)


def test_load_reads_each_kind_of_file_as_its_type(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "_last.json"
    run_log(tmp_path, ["a" * 32])
    document = _validate.load(path, "run log")
    assert document == {
        "version": 1,
        "tests": {},
        "cassettes_used": ["a" * 32],
        "verdicts_used": [],
    }
    assert set(document) <= declared(_formats.RunLogFile)
    assert _validate.load(tmp_path / "absent.json", "verdict") is None


# -- appends across processes and sessions ---------------------------------------------------

LOOPER = """
import json, sys, time
import httpx, ghostrun

import os
url, cassette_dir, count, go, out, body = sys.argv[1:]
BODY = json.loads(body)
seen = []
open(out + ".ready", "w").close()
while not os.path.exists(go):  # both processes start together
    time.sleep(0.002)
with httpx.Client() as client, ghostrun.session(
    mode="auto", cassette_dir=cassette_dir, hosts=["127.0.0.1"]
) as session:
    for _ in range(int(count)):
        seen.append(client.post(url, json=BODY).json()["id"])
with open(out, "w") as f:
    json.dump({"seen": seen, "recorded": session.recorded}, f)
"""


def test_two_processes_recording_one_key_lose_no_response(
    provider: ProviderSimulator, cassette_dir: Path, tmp_path: Path
) -> None:
    script = tmp_path / "looper.py"
    script.write_text(LOOPER)
    go = tmp_path / "go"
    url = provider.url("/v1/chat/completions")
    outs = [tmp_path / f"out{i}.json" for i in range(2)]
    children = [
        subprocess.Popen(
            [sys.executable, script, url, cassette_dir, "30", go, out, json.dumps(BODY)],
            env=child_env(),
        )
        for out in outs
    ]
    deadline = time.monotonic() + 60
    while not all(Path(f"{out}.ready").exists() for out in outs) and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    for child in children:
        assert child.wait(timeout=60) == 0
    results = [json.loads(out.read_text()) for out in outs]

    live = [f"chatcmpl-sim{seq:04d}" for seq in range(1, provider.served + 1)]
    (path,) = cassette_dir.glob("*.json")
    stored = stored_ids(path)
    assert sorted(stored) == live  # every live response, each once
    assert sum(r["recorded"] for r in results) == len(live)
    for result in results:
        assert len(result["seen"]) == 30
        assert len(set(result["seen"])) == 30  # no response twice in one session


def test_eight_sessions_in_one_process_on_one_key_lose_no_response(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    url = provider.url("/v1/chat/completions")
    seen: list[list[str]] = [[] for _ in range(8)]
    barrier = threading.Barrier(8)

    def loop(mine: list[str]) -> None:
        with (
            httpx.Client() as client,
            ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK),
        ):
            barrier.wait()
            for _ in range(12):
                mine.append(client.post(url, json=BODY).json()["id"])

    threads = [threading.Thread(target=loop, args=(mine,)) for mine in seen]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    (path,) = cassette_dir.glob("*.json")
    assert sorted(stored_ids(path)) == [
        f"chatcmpl-sim{seq:04d}" for seq in range(1, provider.served + 1)
    ]
    for mine in seen:
        assert len(mine) == 12 and len(set(mine)) == 12


XDIST_LOOPS = """
import json, os
from pathlib import Path
import httpx, pytest, ghostrun

BODY = {"model": "m", "messages": [{"role": "user", "content": "the same question"}]}

@pytest.mark.parametrize("n", range(40))
def test_loop(n):
    with ghostrun.session(cassette_dir="cassettes"):
        ids = [httpx.post(os.environ["SIM_URL"], json=BODY).json()["id"] for _ in range(3)]
    mine = Path("ids") / f"{n}.json"
    if os.environ["GHOSTRUN_MODE"] == "record":
        mine.write_text(json.dumps(ids))
    else:
        assert ids == json.loads(mine.read_text())
"""


def test_xdist_record_keeps_each_tests_own_sequence(
    pytester: pytest.Pytester, provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIM_URL", provider.url("/v1/chat/completions"))
    monkeypatch.setenv("GHOSTRUN_HOSTS", "127.0.0.1")
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_loops=XDIST_LOOPS)
    (pytester.path / "ids").mkdir()
    fast = ("-p", "no:anyio", "-p", "no:asyncio", "-p", "no:hypothesispytest")
    recorded = pytester.runpytest_subprocess("-n", "4", "--ghostrun-record", *fast)
    recorded.assert_outcomes(passed=40)
    assert provider.served == 120
    provider.stop()

    replayed = pytester.runpytest_subprocess("-n", "4", "--ghostrun-replay", *fast)
    replayed.assert_outcomes(passed=40)
    (path,) = (pytester.path / "cassettes").glob("*.json")
    assert len(stored_ids(path)) == 120


# -- kill -9 while writing ------------------------------------------------------------------

WRITER = """
import os
import sys
from ghostrun._core import _files
from ghostrun._store._cassette import Cassette

directory, named = sys.argv[1], sys.argv[2] == "named"
if named:  # as where the system makes no unnamed file: each is written under a temp name
    _files._UNNAMED = 0  # and each turn replaces a file; else each turn makes a new one
keys = [f"{n:032x}" for n in range(3)]
big = {"text": "x" * 1_500_000}
request = {"method": "POST", "url": "http://127.0.0.1/v1/chat", "body": {"json": {}}}
print("writing", flush=True)
for turn in range(10_000):
    key = keys[turn % 3] if named else f"{os.getpid():016x}{turn:016x}"
    cassette = Cassette(f"{directory}/{key}.json", key, request, [{"status": 200, "body": big}])
    print("saving", flush=True)
    cassette.save() if named else cassette.create()
    print("saved", flush=True)
"""


def kill_writers(tmp_path: Path, directory: Path, how: str) -> int:
    """Kill 20 writers at random moments; how many were killed inside a save."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(16)
    inside = 0
    for _ in range(20):
        child = subprocess.Popen(
            [sys.executable, str(script), str(directory), how],
            env=child_env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdout.readline() == "writing\n"
        time.sleep(rng.uniform(0.0, 0.15))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        said = child.stdout.read().split()
        inside += bool(said) and said[-1] == "saving"
        child.stdout.close()
    return inside


def test_kill_9_mid_write_of_a_new_unnamed_file_leaves_no_half_file_and_no_temp_file(
    tmp_path: Path,
) -> None:
    """Where the system makes unnamed files (Linux), a new file has no name until it is
    whole, then gets its own: a writer killed while making one leaves nothing to prune."""
    directory = tmp_path / "cassettes"
    assert kill_writers(tmp_path, directory, "unnamed"), "no kill landed mid-write"
    cassettes = sorted(directory.glob("*.json"))
    assert cassettes  # at least one write completed
    for path in cassettes:
        assert _validate.load(path, "cassette") is not None  # whole, valid, never half
    assert sorted(directory.iterdir()) == sorted([*cassettes, directory / ".gitignore"])


def test_kill_9_mid_write_leaves_no_half_file_and_no_unlisted_temp_file(tmp_path: Path) -> None:
    directory = tmp_path / "cassettes"
    kill_writers(tmp_path, directory, "named")
    cassettes = sorted(directory.glob("*.json"))
    assert cassettes  # at least one write completed
    for path in cassettes:
        assert _validate.load(path, "cassette") is not None  # whole, valid, never half
    temps = sorted(set(directory.iterdir()) - {*cassettes, directory / ".gitignore"})
    assert temps, "no kill landed mid-write: the test proved nothing"
    assert (directory / ".gitignore").read_text() == GITIGNORE

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", *(str(p) for p in temps)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert sorted(ignored.stdout.split()) == sorted(str(p) for p in temps)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "ghostrun-tmp" not in status.stdout

    run_log(directory, [p.stem for p in cassettes])
    assert _inventory.take(directory).leftovers == temps
    assert _cli.main(["prune", "--yes", "--cassette-dir", str(directory)]) == 0
    assert sorted(p for p in directory.iterdir() if p.is_file()) == sorted(
        [*cassettes, directory / ".gitignore"]
    )


def test_a_temp_file_of_a_running_writer_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    mine = tmp_path / f".{'a' * 32}.json.ghostrun-tmp-{os.getpid()}-1-1"
    mine.write_text("half")
    run_log(tmp_path, [])
    assert _inventory.take(tmp_path).leftovers == []
    old = time.time() - _inventory.TEMP_MAX_AGE - 60
    os.utime(mine, (old, old))
    assert _inventory.take(tmp_path).leftovers == [mine]


def test_a_lock_file_left_by_a_killed_writer_is_listed_and_pruned(tmp_path: Path) -> None:
    from ghostrun._core._lock import cassette_lock, lock_path

    target = str(tmp_path / f"{'b' * 32}.json")
    stale = Path(lock_path(target))
    stale.write_text("")  # what a writer killed while holding it leaves
    run_log(tmp_path, [])
    with cassette_lock(target):  # held: not a leftover
        assert _inventory.take(tmp_path).leftovers == []
    stale.write_text("")
    assert _inventory.take(tmp_path).leftovers == [stale]
    assert _cli.main(["prune", "--yes", "--cassette-dir", str(tmp_path)]) == 0
    assert not stale.exists()


# -- durability -----------------------------------------------------------------------------


def test_a_write_is_synced_to_disk_before_it_replaces_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ghostrun._core._files import write_atomic

    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: events.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: events.append("replace") or real_replace(a, b))
    (tmp_path / "d").mkdir()
    write_atomic(tmp_path / "d" / "new.json", b"{}")
    assert events == ["fsync", "replace", "fsync"]  # the file, then its new name (the dir)
    events.clear()
    write_atomic(tmp_path / "d" / "new.json", b"{}")
    assert events == ["fsync", "replace"]  # an existing name needs no directory sync


def test_a_new_file_is_synced_then_linked_and_never_replaces_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ghostrun._core._files import create_atomic

    events: list[str] = []
    real_fsync, real_link = os.fsync, os.link
    monkeypatch.setattr(os, "fsync", lambda fd: events.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(
        os, "link", lambda a, b, **kw: events.append("link") or real_link(a, b, **kw)
    )
    (tmp_path / "d").mkdir()
    target = tmp_path / "d" / "new.json"
    assert create_atomic(target, b"{}") is True
    assert events == ["fsync", "link", "fsync"]  # the file, then its new name (the dir)
    assert create_atomic(target, b"[]") is False
    assert target.read_bytes() == b"{}"
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["new.json"]  # no temporary file


def test_where_no_unnamed_file_can_be_made_files_are_named_from_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system without ``O_TMPFILE`` (EOPNOTSUPP) is asked once per directory; then
    each file is written under a temporary name, synced, and linked or renamed as before."""
    import ghostrun._core._files as files

    refused: list[str] = []
    real_open = os.open

    def no_unnamed(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if files._UNNAMED and flags & files._UNNAMED == files._UNNAMED:
            refused.append(os.fspath(path))
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_unnamed)
    monkeypatch.setattr(files, "_no_unnamed", set())
    (tmp_path / "d").mkdir()
    assert files.create_atomic(tmp_path / "d" / "new.json", b"{}") is True
    files.write_atomic(tmp_path / "d" / "new.json", b"[]")
    files.write_atomic(tmp_path / "d" / "other.json", b"{}")
    assert refused == ([str(tmp_path / "d")] if files._UNNAMED else [])
    assert (tmp_path / "d" / "new.json").read_bytes() == b"[]"
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["new.json", "other.json"]


def test_a_link_that_fails_for_a_reason_other_than_the_name_is_a_cassette_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ghostrun._core._files import create_atomic

    def full(a: str, b: str, **kw: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "link", full)
    with pytest.raises(ghostrun.CassetteError, match="No space left"):
        create_atomic(tmp_path / "new.json", b"{}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", ["without the lock", "under the lock"])
def test_a_cassette_another_writer_creates_meanwhile_is_added_to_under_the_lock(
    provider: ProviderSimulator,
    cassette_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
) -> None:
    """Both writers saw no file; the other one's link wins, this one's then fails.

    This writer must not replace the other's file: it takes the lock, reads the
    file and adds its response to it (auto: to the file's first run).
    """
    url = provider.url("/v1/chat/completions")
    other = ghostrun.session(
        mode="auto", cassette_dir=tmp_path / "other", hosts=LOOPBACK, name="other"
    )
    with other:
        other_id = httpx.post(url, json=BODY).json()["id"]
    (theirs,) = (tmp_path / "other").glob("*.json")
    cassette_dir.mkdir()
    mine = cassette_dir / theirs.name
    real_link, real_lexists = os.link, os.path.lexists
    opened: list[str] = []
    real_open = os.open

    def other_writer_first(source: str, target: str, **kw: Any) -> None:
        if os.fspath(target) == str(mine) and not mine.exists():
            mine.write_bytes(theirs.read_bytes())
        real_link(source, target, **kw)

    def watch(name: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.path.basename(os.fspath(name)))
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "link", other_writer_first)
    monkeypatch.setattr(os, "open", watch)
    if path == "under the lock":  # the file looks present at first: the lock is taken at once
        monkeypatch.setattr(os.path, "lexists", lambda p: p == str(mine) or real_lexists(p))
    me = ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK, name="me")
    with me as session:
        my_id = httpx.post(url, json=BODY).json()["id"]
    assert session.recorded == 1
    assert stored_ids(mine) == [other_id, my_id]
    assert f".{mine.name}.ghostrun-lock" in opened
    assert not [p for p in cassette_dir.iterdir() if "ghostrun-" in p.name]  # no temp, no lock


def test_without_hard_links_a_new_cassette_is_written_under_the_lock(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ghostrun._core._files as files

    links: list[str] = []

    def no_links(source: str, target: str, **kw: Any) -> None:
        links.append(os.fspath(target))
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    monkeypatch.setattr(files, "_no_links", set())
    cassette_dir.mkdir()
    url = provider.url("/v1/chat/completions")
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK) as session:
        first = httpx.post(url, json=BODY).json()["id"]
        second = httpx.post(url, json={**BODY, "model": "other"}).json()["id"]
    assert session.recorded == 2
    asked = [os.path.dirname(target) for target in links]
    assert asked[0] == str(cassette_dir)  # the first cassette's link, refused
    assert len(asked) == len(set(asked))  # each directory is remembered: then no link is tried
    stored = sorted(i for p in cassette_dir.glob("*.json") for i in stored_ids(p))
    assert stored == sorted([first, second])
    assert not [p for p in cassette_dir.iterdir() if "ghostrun-tmp" in p.name]


# -- the cassette directory -----------------------------------------------------------------


def test_a_new_cassette_dir_gets_a_gitignore_an_existing_one_is_kept(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    fresh, existing = tmp_path / "fresh", tmp_path / "existing"
    existing.mkdir()
    for directory in (fresh, existing):
        with ghostrun.session(mode="auto", cassette_dir=directory, hosts=LOOPBACK):
            httpx.post(provider.url("/v1/chat/completions"), json=BODY)
    assert (fresh / ".gitignore").read_text() == GITIGNORE
    assert not (existing / ".gitignore").exists()  # the user's directory: not ours to edit

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (fresh / "runs").mkdir()
    (fresh / "runs" / "snapshot.json").write_text("{}")
    names = [
        ".a.json.ghostrun-lock",
        "runs/_last.json",
        "runs/report.html",  # what `ghostrun report` writes by default
        "judge/.b.json.ghostrun-tmp-1-2-3",
    ]
    for name in names:
        (fresh / name).parent.mkdir(exist_ok=True)
        (fresh / name).write_text("")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "fresh"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "fresh/runs/snapshot.json" in status and ".json\n" in status  # cassettes are kept
    assert not [name for name in names if name.split("/")[-1] in status]


def test_a_dangling_symlink_as_cassette_dir_is_named(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    link = tmp_path / "cassettes"
    link.symlink_to(tmp_path / "gone")
    with pytest.raises(ghostrun.CassetteError, match=r"is a symbolic link to .*gone, which does"):
        with ghostrun.session(mode="auto", cassette_dir=link, hosts=LOOPBACK):
            httpx.post(provider.url("/v1/chat/completions"), json=BODY)


# -- prune deletes only ghostrun's files ----------------------------------------------------


def test_prune_keeps_a_foreign_json_file(
    provider: ProviderSimulator, cassette_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK):
        httpx.post(provider.url("/v1/chat/completions"), json=BODY)
    (stale,) = cassette_dir.glob("*.json")
    foreign = cassette_dir / "user_config.json"
    foreign.write_text('{"theme": "dark"}')
    run_log(cassette_dir, [])
    shutil.rmtree(cassette_dir / "trajectories")  # no test's trajectory names it either

    assert _cli.main(["check", "--cassette-dir", str(cassette_dir)]) == 1
    out = capsys.readouterr().out
    assert "1 file skipped (not named like a ghostrun cassette" in out
    assert "  user_config.json" in out
    assert _cli.main(["prune", "--yes", "--cassette-dir", str(cassette_dir)]) == 0
    assert "Deleted 1 file." in capsys.readouterr().out
    assert foreign.read_text() == '{"theme": "dark"}' and not stale.exists()


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ({"selection": {"limited_by": ["-k 'refund'"]}}, "it was narrowed: -k 'refund'"),
        ({"previous": {"tests": 40, "finished": "T0"}}, "it ran 1 test, the run before it"),
    ],
)
def test_check_and_prune_warn_when_the_last_run_looks_partial(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: dict[str, Any], reason: str
) -> None:
    test = {"outcome": "passed", "outputs": [], "assertions": []}
    run_log(tmp_path, [], **extra)
    document = json.loads((tmp_path / "runs" / "_last.json").read_text())
    document["tests"] = {"t": test}
    (tmp_path / "runs" / "_last.json").write_text(json.dumps(document))
    for command in (["check"], ["prune", "--yes"]):
        assert _cli.main([*command, "--cassette-dir", str(tmp_path)]) == 0
        out = capsys.readouterr().out
        assert "warning: the last run looks partial" in out and reason in out, command


def test_the_plugin_notes_a_narrowed_run_and_the_run_before(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    pytester.makepyfile(
        test_two=textwrap.dedent(
            """
            import ghostrun
            def test_a(): ghostrun.expect("a").contains("a")
            def test_b(): ghostrun.expect("b").contains("b")
            """
        )
    )
    pytester.runpytest_subprocess("-p", "no:xdist").assert_outcomes(passed=2)
    pytester.runpytest_subprocess("-p", "no:xdist", "-k", "test_a").assert_outcomes(passed=1)
    run = orjson.loads((pytester.path / ".ghostrun_cache" / "runs" / "_last.json").read_bytes())
    assert run["selection"] == {"limited_by": ["-k 'test_a'"]}
    assert run["previous"]["tests"] == 2
    # A second narrowed run still compares with the whole run, not with the narrowed one.
    pytester.runpytest_subprocess("-p", "no:xdist", "-k", "test_a").assert_outcomes(passed=1)
    run = orjson.loads((pytester.path / ".ghostrun_cache" / "runs" / "_last.json").read_bytes())
    assert run["previous"]["tests"] == 2


def test_prune_deletes_nothing_after_a_partial_run_unless_forced(
    provider: ProviderSimulator, cassette_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK):
        httpx.post(provider.url("/v1/chat/completions"), json=BODY)
    (unused,) = cassette_dir.glob("*.json")
    shutil.rmtree(cassette_dir / "trajectories")  # no test names the cassette: it is unused
    run_log(cassette_dir, [], selection={"limited_by": ["-k 'refund'"]})
    assert _cli.main(["prune", "--yes", "--cassette-dir", str(cassette_dir)]) == 1
    assert "Nothing deleted: the last run looks partial" in capsys.readouterr().out
    assert unused.exists()
    assert _cli.main(["prune", "--yes", "--force", "--cassette-dir", str(cassette_dir)]) == 0
    assert "Deleted 1 file." in capsys.readouterr().out and not unused.exists()
