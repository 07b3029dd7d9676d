"""The replay guard's escapes found by the security review (issue 28, DESIGN §1 "The guard").

Each was tried with a listed loopback host (a simulator, which counts what
reaches it) and a replay session open, or with a provider host behind a
tripwire that refuses, and notes, every look-up and connect off loopback.
Each must be refused with `CacheMiss` before any byte is sent.
"""

from __future__ import annotations

import http.client
import multiprocessing
import multiprocessing.spawn
import os
import socket
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import openai
import pytest
from helpers import ROOT
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core._hosts import HostMatcher, host_name

GUARD_PTH = ROOT / "ghostrun_replay_guard.pth"


def replay(cassette_dir: Path, *hosts: str) -> Any:
    return ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=list(hosts))


# -- a host written with its trailing dot --------------------------------------------------


@pytest.mark.parametrize(
    ("written", "matched"),
    [
        ("api.openai.com.", "api.openai.com"),
        ("API.OpenAI.com.", "api.openai.com"),
        ("[::1]", "localhost"),
        ("localhost.", "localhost"),
        ("0.0.0.0", "localhost"),
        ("::", "localhost"),
        ("::ffff:127.0.0.1", "localhost"),
        ("[::ffff:7f00:1]", "localhost"),
        ("127.0.0.2", "127.0.0.2"),  # another address: a server on 127.0.0.1 is not there
        ("::ffff:10.0.0.1", "10.0.0.1"),
        ("2001:DB8::1", "2001:db8::1"),
        ("1password.com", "1password.com"),
    ],
)
def test_a_host_is_matched_by_what_it_reaches(written: str, matched: str) -> None:
    assert host_name(written) == matched


def test_a_listed_address_matches_every_spelling_that_reaches_it() -> None:
    listed = HostMatcher(["127.0.0.1:8080", "api.openai.com"])
    for host in ("0.0.0.0", "::ffff:127.0.0.1", "::ffff:7f00:1", "[::]", "localhost."):
        assert listed(host, 8080), host
    assert listed("api.openai.com.", 443)
    assert not listed("0.0.0.0", 8081)
    assert not listed("::ffff:10.0.0.1", 8080)


def test_the_openai_sdk_with_a_trailing_dot_is_intercepted(
    tripwire: list[str], cassette_dir: Path
) -> None:
    client = openai.OpenAI(api_key="sk-proj-" + "t" * 40, base_url="https://api.openai.com./v1")
    with pytest.raises(ghostrun.CacheMiss, match=r"api\.openai\.com"):
        with replay(cassette_dir):
            client.chat.completions.create(
                model="gpt-x", messages=[{"role": "user", "content": "hi"}]
            )
    assert tripwire == []


def test_http_client_with_a_trailing_dot_is_refused(
    tripwire: list[str], cassette_dir: Path
) -> None:
    with pytest.raises(ghostrun.CacheMiss), replay(cassette_dir):
        with pytest.raises(ghostrun.CacheMiss, match=r"api\.openai\.com\.:443"):
            http.client.HTTPSConnection("api.openai.com.", timeout=1).request("GET", "/v1/models")
    assert tripwire == []


# -- addresses judged by what they reach ----------------------------------------------------


@pytest.mark.parametrize("address", ["0.0.0.0", "::ffff:127.0.0.1", "::ffff:7f00:1"])
def test_an_address_that_reaches_a_listed_host_is_refused(
    provider: ProviderSimulator, cassette_dir: Path, address: str
) -> None:
    with pytest.raises(ghostrun.CacheMiss), replay(cassette_dir, "127.0.0.1"):
        with pytest.raises(ghostrun.CacheMiss):
            connection = http.client.HTTPConnection(address, provider.port, timeout=2)
            connection.request("GET", "/plain")
            connection.getresponse().read()
    assert provider.served == 0


# -- sendto and sendmsg, which connect without connect() -------------------------------------


def _fast_open(sock: socket.socket, port: int) -> None:
    sock.sendto(b"GET /plain HTTP/1.0\r\n\r\n", socket.MSG_FASTOPEN, ("127.0.0.1", port))


def _fast_open_msg(sock: socket.socket, port: int) -> None:
    sock.sendmsg([b"GET /plain HTTP/1.0\r\n\r\n"], [], socket.MSG_FASTOPEN, ("127.0.0.1", port))


@pytest.mark.parametrize("send", [_fast_open, _fast_open_msg], ids=["sendto", "sendmsg"])
def test_tcp_fast_open_is_refused(
    provider: ProviderSimulator, cassette_dir: Path, send: Any
) -> None:
    with pytest.raises(ghostrun.CacheMiss), replay(cassette_dir, provider.base_url):
        with socket.socket() as sock, pytest.raises(ghostrun.CacheMiss, match="send to"):
            sock.settimeout(2)
            send(sock, provider.port)
            sock.recv(64)
    assert provider.served == 0


# -- child Python processes that never import ghostrun ---------------------------------------

CHILD = """
import sys, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=5).read()
except BaseException as exc:
    print("refused:", type(exc).__name__)
else:
    print("reached")
"""


def _child_env(provider: ProviderSimulator, mode: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOSTRUN_")}
    env.pop("PYTHONPATH", None)  # the child finds ghostrun as an installed one does
    env["GHOSTRUN_HOSTS"] = provider.base_url
    if mode is not None:
        env["GHOSTRUN_MODE"] = mode
    return env


@pytest.mark.parametrize("mode", ["replay", "rebase", None])
def test_a_python_subprocess_is_guarded_in_a_replay_run(
    provider: ProviderSimulator, installed_python: str, mode: str | None
) -> None:
    result = subprocess.run(
        [installed_python, "-c", CHILD, provider.url("/plain")],
        env=_child_env(provider, mode),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    if mode in ("replay", "rebase"):  # rebase never touches the network either
        assert result.stdout.strip() == "refused: CacheMiss"
        assert provider.served == 0
    else:  # unset: the hook does nothing at all
        assert result.stdout.strip() == "reached"
        assert provider.served == 1


def test_a_multiprocessing_spawn_child_is_guarded(
    provider: ProviderSimulator, installed_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in _child_env(provider, "replay").items():
        monkeypatch.setenv(name, value)
    context = multiprocessing.get_context("spawn")
    monkeypatch.setattr(multiprocessing.spawn, "_python_exe", os.fsencode(installed_python))
    child = context.Process(target=urllib.request.urlopen, args=(provider.url("/plain"),))
    child.start()
    child.join(120)
    assert child.exitcode == 1  # the CacheMiss ended it
    assert provider.served == 0


def test_the_wheel_ships_the_start_up_hook() -> None:
    """hatch_build.py adds the hook to wheels and editable installs alike."""
    hook = (ROOT / "hatch_build.py").read_text()
    assert '"ghostrun_replay_guard.pth"' in hook and "force_include_editable" in hook
    assert "[tool.hatch.build.targets.wheel.hooks.custom]" in (ROOT / "pyproject.toml").read_text()
    line = GUARD_PTH.read_text()
    assert line.startswith("import ") and line.count("\n") == 1  # site runs it as one line
