"""A child of a replay run is a replay run (issue 41, items 3 and 10; DESIGN §1).

Whatever made the parent replay (a session in replay, the CI default, another
spelling of ``GHOSTRUN_MODE``, pytest's ``--ghostrun-replay``, the project's
table), a child Python process it starts (``subprocess.run([sys.executable,
...])``, ``multiprocessing`` with the ``spawn`` start method) is refused as the
parent is. Each parent is a real Python with ghostrun installed as a wheel
installs it (`installed_python`: the start-up hook beside it), so its children
start the way a user's do; the provider is a loopback simulator that counts
what reaches it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from simulator import ProviderSimulator

PARENT = '''
import multiprocessing, subprocess, sys, urllib.request

import ghostrun

CHILD = """
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=5).read()
except BaseException as exc:
    print("refused:", type(exc).__name__)
else:
    print("reached")
"""


def reach(url):  # the spawn child's target
    try:
        urllib.request.urlopen(url, timeout=5).read()
    except BaseException as exc:
        print("spawn refused:", type(exc).__name__, flush=True)
        raise SystemExit(3)
    print("spawn reached", flush=True)


def children(url):
    run = subprocess.run([sys.executable, "-c", CHILD, url], capture_output=True, text=True)
    print("subprocess", run.stdout.strip() or run.stderr[-300:], flush=True)
    child = multiprocessing.get_context("spawn").Process(target=reach, args=(url,))
    child.start()
    child.join(120)


if __name__ == "__main__":
    url, how, hosts = sys.argv[1], sys.argv[2], sys.argv[3:]
    if how == "session":
        with ghostrun.session(mode=None if hosts == ["-"] else "replay", hosts=hosts[1:]):
            children(url)
    elif how == "auto":
        with ghostrun.session(mode="auto", hosts=hosts):
            children(url)
    else:
        children(url)
'''

REFUSED = ["subprocess refused: CacheMiss", "spawn refused: CacheMiss"]
REACHED = ["subprocess reached", "spawn reached"]


def _env(**extra: str) -> dict[str, str]:
    """This environment without ghostrun's variables, CI, pytest's or the checkout's path."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GHOSTRUN_") and k not in ("CI", "PYTHONPATH", "PYTEST_CURRENT_TEST")
    }
    return {**env, **extra}


def _parent(python: str, cwd: Path, env: dict[str, str], *args: str) -> list[str]:
    """Run `PARENT` with ``args``; what its two children said, in order."""
    script = cwd / "parent.py"
    script.write_text(PARENT)
    run = subprocess.run(
        [python, str(script), *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=240, check=False,
    )  # fmt: skip
    lines = [line for line in run.stdout.splitlines() if line.startswith(("subprocess", "spawn"))]
    assert len(lines) == 2, run.stdout + run.stderr
    return lines


def test_a_child_of_a_replay_session_is_refused(
    provider: ProviderSimulator, installed_python: str, tmp_path: Path
) -> None:
    """``session(mode="replay", hosts=[...])``: the session's own hosts are refused in the
    child too, though no variable of the parent's environment names them."""
    said = _parent(installed_python, tmp_path, _env(), provider.url("/plain"), "session", "replay",
                   provider.base_url)  # fmt: skip
    assert said == REFUSED
    assert provider.served == 0


def test_a_child_of_a_ci_run_is_refused(
    provider: ProviderSimulator, installed_python: str, tmp_path: Path
) -> None:
    """``CI`` set and no mode anywhere: the session replays by the CI default, its child too."""
    env = _env(CI="true", GHOSTRUN_HOSTS=provider.base_url)
    assert (
        _parent(installed_python, tmp_path, env, provider.url("/plain"), "session", "-") == REFUSED
    )
    assert provider.served == 0


@pytest.mark.parametrize("spelling", ["none", "NONE"])
def test_a_child_of_any_spelling_of_replay_is_refused(
    provider: ProviderSimulator, installed_python: str, tmp_path: Path, spelling: str
) -> None:
    """``GHOSTRUN_MODE`` as ghostrun reads it (vcrpy's ``none`` is replay)."""
    env = _env(GHOSTRUN_MODE=spelling, GHOSTRUN_HOSTS=provider.base_url)
    assert _parent(installed_python, tmp_path, env, provider.url("/plain"), "import") == REFUSED
    assert provider.served == 0


def test_a_child_of_a_non_replay_run_still_reaches(
    provider: ProviderSimulator, installed_python: str, tmp_path: Path
) -> None:
    env = _env(GHOSTRUN_HOSTS=provider.base_url)
    said = _parent(
        installed_python, tmp_path, env, provider.url("/plain"), "auto", provider.base_url
    )
    assert said == REACHED
    assert provider.served == 2


# -- pytest runs -------------------------------------------------------------------------

TEST_FILE = '''
import os, subprocess, sys
from pathlib import Path

CHILD = """
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=5).read()
except BaseException as exc:
    print("refused:", type(exc).__name__)
else:
    print("reached")
"""


def test_starts_a_child():
    run = subprocess.run([sys.executable, "-c", CHILD, os.environ["SIM_URL"]],
                         capture_output=True, text=True)
    Path("child.txt").write_text(run.stdout.strip() or run.stderr[-300:])
'''


def _pytest_child(
    python: str, project: Path, env: dict[str, str], table: str = "", *flags: str
) -> str:
    """Run pytest on a project whose one test starts a child; what the child said."""
    (project / "pyproject.toml").write_text(f"[project]\nname = 'p'\n\n{table}")
    (project / "test_child.py").write_text(TEST_FILE)
    run = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *flags],
        cwd=project, env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    return (project / "child.txt").read_text()


@pytest.mark.parametrize(
    ("flags", "ci", "table"),
    [
        pytest.param(["--ghostrun-replay"], "", "", id="--ghostrun-replay"),
        pytest.param(["--ghostrun-mode", "none"], "", "", id="--ghostrun-mode=none"),
        pytest.param([], "true", "", id="CI"),
        pytest.param([], "", '[tool.ghostrun]\nmode = "replay"\n', id="table-mode"),
        pytest.param([], "1", '[tool.ghostrun]\nhosts = ["{host}"]\n', id="table-hosts-under-CI"),
    ],
)
def test_a_child_of_a_replaying_pytest_run_is_refused(
    provider: ProviderSimulator,
    installed_python: str,
    tmp_path: Path,
    flags: list[str],
    ci: str,
    table: str,
) -> None:
    listed = {} if "{host}" in table else {"GHOSTRUN_HOSTS": provider.base_url}
    env = _env(SIM_URL=provider.url("/plain"), **listed, **({"CI": ci} if ci else {}))
    table = table.replace("{host}", provider.base_url)
    assert _pytest_child(installed_python, tmp_path, env, table, *flags) == "refused: CacheMiss"
    assert provider.served == 0


def test_a_child_of_a_live_pytest_run_still_reaches(
    provider: ProviderSimulator, installed_python: str, tmp_path: Path
) -> None:
    env = _env(SIM_URL=provider.url("/plain"), GHOSTRUN_HOSTS=provider.base_url)
    assert _pytest_child(installed_python, tmp_path, env) == "reached"
    assert provider.served == 1


BLOCKING_PARENT = '''
import subprocess, sys

import ghostrun

CHILD = """
import socket
try:
    socket.create_connection(("192.0.2.1", 9), timeout=2).close()
except BaseException as exc:
    print("child:", type(exc).__name__, "block_network" in str(exc))
else:
    print("child: connected")
"""

with ghostrun.session(mode="replay", block_network=sys.argv[1] == "block"):
    run = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
print(run.stdout.strip() or run.stderr[-300:])
'''


@pytest.mark.parametrize(("block", "said"), [("block", "CacheMiss True"), ("-", "")])
def test_a_child_of_a_blocking_replay_session_blocks_too(
    installed_python: str, tmp_path: Path, block: str, said: str
) -> None:
    """``session(block_network=True)`` in the parent, nothing in the environment: its child
    refuses a connection that is not loopback, as the session would (192.0.2.1 is a
    documentation address: unblocked, the connect fails on its own, with no refusal)."""
    script = tmp_path / "parent.py"
    script.write_text(BLOCKING_PARENT)
    run = subprocess.run(
        [installed_python, str(script), block], cwd=tmp_path, env=_env(), capture_output=True,
        text=True, timeout=120, check=False,
    )  # fmt: skip
    (line,) = [line for line in run.stdout.splitlines() if line.startswith("child:")]
    if said:
        assert line == f"child: {said}", run.stdout + run.stderr
    else:
        assert "CacheMiss" not in line and line.endswith("False"), line  # not refused by us


def test_the_block_travels_with_the_parents_variable_while_a_blocking_session_is_open(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import ghostrun
    from ghostrun._core import _children

    monkeypatch.delenv(_children.ENV, raising=False)
    pid = str(os.getpid())
    with ghostrun.session(mode="replay", cassette_dir=tmp_path):
        assert os.environ[_children.ENV] == pid
        with ghostrun.session(mode="replay", cassette_dir=tmp_path, block_network=True):
            assert os.environ[_children.ENV] == pid + ":block"  # the nested one blocks
        assert os.environ[_children.ENV] == pid
    assert _children.ENV not in os.environ
