"""A test run again in one process (DESIGN §3): a re-run, not the test's next session.

A loop in a script, a notebook cell run again, ``pytest-rerunfailures``: each
opens the same test name again after its earlier session closed. In replay
that must write nothing (a CI replay leaves ``git status`` clean), and a
re-run that records rewrites the test's trajectory instead of growing it.
Counted with an audit hook in a child process (files opened for writing,
renames) and a wrapped ``os.fsync`` (it raises no audit event), never timed.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from helpers import run_python
from simulator import ProviderSimulator

# Record the test once, then re-run it in replay, counting what the re-runs write.
SCRIPT = """\
import json, os, sys

import httpx2

import ghostrun

URL, CASSETTES, RERUNS = os.environ["SIM_URL"], sys.argv[1], int(sys.argv[2])
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
counting, writes, renames, fsyncs = False, [], [], []
WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def audit(event, args):
    if not counting:
        return
    if event == "open":
        path, mode, flags = args
        if (isinstance(mode, str) and set(mode) & set("wax+")) or (flags or 0) & WRITING:
            writes.append(str(path))
    elif event in ("os.rename", "os.replace", "os.link", "shutil.move"):
        renames.append(str(args[1]))


sys.addaudithook(audit)
real_fsync = os.fsync


def fsync(fd):
    if counting:
        fsyncs.append(fd)
    return real_fsync(fd)


os.fsync = fsync


def test(mode):
    with ghostrun.session(mode=mode, cassette_dir=CASSETTES, hosts=["127.0.0.1"], name="t1") as s:
        httpx2.post(URL + "/v1/chat/completions", json=BODY).raise_for_status()
    return s


test("record")
counting = True
replayed = [test("replay").replayed for _ in range(RERUNS)]
counting = False
print(json.dumps({"replayed": replayed, "writes": writes, "renames": renames, "fsyncs": fsyncs}))
"""


def trajectory(cassette_dir: Path) -> dict[str, object]:
    (path,) = (cassette_dir / "trajectories").glob("*.json")
    document: dict[str, object] = orjson.loads(path.read_bytes())
    return document


def test_a_hundred_replayed_reruns_open_no_file_for_writing_sync_none_rename_none(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    """The issue's case: recorded, then replayed again and again in one process."""
    script = tmp_path / "rerun.py"
    script.write_text(SCRIPT)
    cassette_dir = tmp_path / "cassettes"
    done = run_python(str(script), str(cassette_dir), "100", SIM_URL=provider.base_url)
    assert done.returncode == 0, done.stderr
    recorded = trajectory(cassette_dir)
    counted = json.loads(done.stdout)
    assert counted["replayed"] == [1] * 100
    assert (counted["writes"], counted["renames"], counted["fsyncs"]) == ([], [], [])
    assert [s["session"] for s in recorded["steps"] if s.get("kind") != "answer"] == [0]  # type: ignore[attr-defined]


def test_a_rerecorded_rerun_rewrites_the_trajectory_instead_of_growing_it(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    script = tmp_path / "rerun.py"
    script.write_text(SCRIPT.replace('test("replay")', 'test("record")'))
    cassette_dir = tmp_path / "cassettes"
    done = run_python(str(script), str(cassette_dir), "5", SIM_URL=provider.base_url)
    assert done.returncode == 0, done.stderr
    steps = trajectory(cassette_dir)["steps"]
    assert [s["session"] for s in steps if s.get("kind") != "answer"] == [0]  # type: ignore[attr-defined]
