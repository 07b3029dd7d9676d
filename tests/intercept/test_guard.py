"""The guard (DESIGN §1): in replay, no connection reaches a provider host or a session host.

Each client is aimed at a session host (a raw loopback listening socket that
counts the connections reaching it) or at a provider host (behind a stand-in
resolver that records every lookup that reaches it and resolves nothing), so
no test can reach the network even when the guard is broken.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import subprocess
import sys
import threading
import types
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._intercept import _guard, _patch
from ghostrun._recording._session import bypass_interception

pytest_plugins = ["pytester"]


class Listener:
    """A loopback socket that listens and never answers: it counts who connected."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.setblocking(False)
        self.port: int = self.sock.getsockname()[1]
        self.host = f"127.0.0.1:{self.port}"

    def connections(self) -> int:
        count = 0
        while True:
            try:
                conn, _address = self.sock.accept()
            except BlockingIOError:
                return count
            conn.close()
            count += 1


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.sock.close()


@pytest.fixture
def resolver(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any]]:
    """Stands in for the real resolver (the guard wraps it): records every name looked up.

    It resolves IP literals and ``localhost`` only, which never leave the machine.
    """
    reached: list[tuple[Any, Any]] = []
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "localhost" or _is_address(host):
            return real(host, port, *args, **kwargs)
        reached.append((host, port))
        raise socket.gaierror(socket.EAI_NONAME, f"test resolver: {host} reached the resolver")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return reached


def _is_address(host: Any) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Stands in for ``socket.connect`` to anything but loopback: records it, sends nothing."""
    reached: list[Any] = []
    real = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        reached.append(address)
        if not str(address[0]).startswith("127."):
            raise ConnectionRefusedError(f"test connect: {address} reached connect")
        return real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return reached


@contextlib.contextmanager
def replay(cassette_dir: Any, **kwargs: Any) -> Iterator[ghostrun.Session]:
    """A replay session whose first miss, swallowed by the test, is raised again at exit."""
    with pytest.raises(ghostrun.CacheMiss) as at_exit:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, **kwargs) as session:
            yield session
    assert at_exit.value.__cause__ is None  # the block ended normally, no other error hidden
    assert at_exit.value is session.misses[0]


# -- every road to a session host or a provider host is refused ----------------------


def test_create_connection_to_a_session_host(listener: Listener, cassette_dir: Any) -> None:
    with replay(cassette_dir, hosts=[listener.host]) as session:
        with pytest.raises(ghostrun.CacheMiss, match=listener.host) as info:
            socket.create_connection(("127.0.0.1", listener.port), timeout=1)
    assert listener.connections() == 0
    assert session.misses == [info.value]
    message = str(info.value)
    assert "listed in hosts=" in message
    assert f"test_guard ({__file__}:" in message  # the call site: this test, not socket.py


def test_socket_connect_by_address(listener: Listener, cassette_dir: Any) -> None:
    with replay(cassette_dir, hosts=[f"localhost:{listener.port}"]):
        with socket.socket() as sock, pytest.raises(ghostrun.CacheMiss, match=listener.host):
            sock.settimeout(1)
            sock.connect(("127.0.0.1", listener.port))
        with socket.socket() as sock, pytest.raises(ghostrun.CacheMiss, match=listener.host):
            sock.connect_ex(("127.0.0.1", listener.port))
    assert listener.connections() == 0


def test_a_provider_host_is_refused_before_any_lookup(
    resolver: list[Any], cassette_dir: Any
) -> None:
    with replay(cassette_dir):
        with pytest.raises(ghostrun.CacheMiss, match=r"look up api\.openai\.com:443") as info:
            socket.create_connection(("api.openai.com", 443), timeout=1)
        with pytest.raises(ghostrun.CacheMiss, match=r"api\.anthropic\.com"):
            socket.gethostbyname("api.anthropic.com")
        with pytest.raises(ghostrun.CacheMiss, match=r"bedrock-runtime\.us-east-1\.amazonaws\.com"):
            socket.getaddrinfo("bedrock-runtime.us-east-1.amazonaws.com", "https")
    assert resolver == []
    assert "a provider host (ghostrun.PROVIDER_HOSTS)" in str(info.value)


def test_urllib_request(listener: Listener, resolver: list[Any], cassette_dir: Any) -> None:
    with replay(cassette_dir, hosts=[listener.host]):
        with pytest.raises(ghostrun.CacheMiss, match=listener.host):
            urllib.request.urlopen(f"http://{listener.host}/v1/models", timeout=1)
        with pytest.raises(ghostrun.CacheMiss, match=r"api\.openai\.com:443"):
            urllib.request.urlopen("https://api.openai.com/v1/models", timeout=1)
    assert listener.connections() == 0
    assert resolver == []


def test_websockets_clients(listener: Listener, resolver: list[Any], cassette_dir: Any) -> None:
    from websockets.asyncio.client import connect as aconnect
    from websockets.sync.client import connect

    async def realtime() -> None:
        async with aconnect("wss://api.openai.com/v1/realtime", open_timeout=1):
            pass

    with replay(cassette_dir, hosts=[listener.host]):
        with pytest.raises(ghostrun.CacheMiss, match=listener.host):
            connect(f"ws://{listener.host}/v1/realtime", open_timeout=1)
        with pytest.raises(ghostrun.CacheMiss, match=r"api\.openai\.com"):
            asyncio.run(realtime())
    assert listener.connections() == 0
    assert resolver == []


def test_dspy_default_engine(
    listener: Listener, resolver: list[Any], cassette_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "true")  # no model-price download
    import dspy

    quick = {"api_key": "sk-test", "cache": False, "num_retries": 0, "timeout": 2}
    local = dspy.LM("openai/gpt-4o-mini", api_base=f"http://{listener.host}/v1", **quick)
    default = dspy.LM("openai/gpt-4o-mini", **quick)
    with replay(cassette_dir, hosts=[listener.host]):  # a road now: a miss, never a connection
        with pytest.raises(
            ghostrun.CacheMiss, match=f"no recording for POST http://{listener.host}"
        ):
            local("Where is my refund?")
        with pytest.raises(ghostrun.CacheMiss, match=r"no recording for POST https://api\.openai"):
            default("Where is my refund?")
    assert listener.connections() == 0
    assert resolver == []


def test_grpc_channels(
    listener: Listener, resolver: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside sessions no road answers a channel's calls: the suite-wide replay refuses it."""
    import grpc
    import grpc.aio

    monkeypatch.setenv("GHOSTRUN_MODE", "replay")
    monkeypatch.setenv("GHOSTRUN_HOSTS", listener.host)
    _guard.acquire()
    try:
        with pytest.raises(ghostrun.CacheMiss, match=listener.host) as info:
            grpc.insecure_channel(listener.host)
        with pytest.raises(ghostrun.CacheMiss, match=r"aiplatform\.googleapis\.com:443"):
            grpc.secure_channel("dns:///aiplatform.googleapis.com", grpc.ssl_channel_credentials())
        with pytest.raises(ghostrun.CacheMiss, match=listener.host):
            grpc.aio.insecure_channel(f"ipv4:{listener.host}")
    finally:
        _guard.release()
    assert listener.connections() == 0
    assert resolver == []
    assert "open a gRPC channel to" in str(info.value)


def test_grpc_channels_the_grpc_road_serves(
    listener: Listener, resolver: list[Any], cassette_dir: Any
) -> None:
    """In a replay session the grpc road answers a provider channel's calls: the channel is
    made (it never connects), a call with no recording is a miss; block_network still holds."""
    import grpc

    with replay(cassette_dir, hosts=[listener.host], block_network=True) as session:
        channel = grpc.insecure_channel(listener.host)
        with pytest.raises(ghostrun.CacheMiss, match="no recording for POST grpc://"):
            channel.unary_unary("/pkg.Service/Method")(b"request")
        with pytest.raises(ghostrun.CacheMiss, match="block_network"):
            grpc.insecure_channel("10.1.2.3:50051")
    assert len(session.misses) == 2
    assert listener.connections() == 0
    assert resolver == []


@pytest.mark.parametrize(
    ("target", "addresses"),
    [
        ("localhost:50051", [("localhost", 50051)]),
        ("api.example.com", [("api.example.com", 443)]),
        ("dns:///api.example.com:8443", [("api.example.com", 8443)]),
        ("dns://8.8.8.8/api.example.com:8443", [("api.example.com", 8443), ("8.8.8.8", 53)]),
        ("dns:api.example.com:80", [("api.example.com", 80)]),
        ("ipv4:10.0.0.1:50051,10.0.0.2:50051", [("10.0.0.1", 50051), ("10.0.0.2", 50051)]),
        ("ipv6:[::1]:50051", [("::1", 50051)]),
        ("[::1]:50051", [("::1", 50051)]),
        ("unix:/tmp/grpc.sock", []),
    ],
)
def test_grpc_targets(target: str, addresses: list[tuple[str, int]]) -> None:
    assert list(_guard.grpc_addresses(target)) == addresses


def test_asyncio_and_trio_lookups(resolver: list[Any], cassette_dir: Any) -> None:
    import trio

    async def open_asyncio() -> None:
        await asyncio.open_connection("api.openai.com", 443)

    async def open_trio() -> None:
        await trio.open_tcp_stream("api.openai.com", 443)

    with replay(cassette_dir):
        with pytest.raises(ghostrun.CacheMiss, match=r"api\.openai\.com:443") as info:
            asyncio.run(open_asyncio())
        with pytest.raises(ghostrun.CacheMiss, match=r"api\.openai\.com:443"):
            trio.run(open_trio)
    assert resolver == []
    assert "test_guard (" in str(info.value)  # named in the task, not in the resolver's thread


def test_a_swallowed_refusal_is_raised_at_exit(listener: Listener, cassette_dir: Any) -> None:
    with pytest.raises(ghostrun.CacheMiss, match=listener.host):
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=[listener.host]) as s:
            with contextlib.suppress(BaseException):  # an app's catch-all fallback
                socket.create_connection(("127.0.0.1", listener.port), timeout=1)
    assert len(s.misses) == 1
    assert listener.connections() == 0


# -- what the guard lets through -----------------------------------------------------


def test_other_modes_and_unlisted_hosts_pass(listener: Listener, cassette_dir: Any) -> None:
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=[listener.host]):
        socket.create_connection(("127.0.0.1", listener.port), timeout=1).close()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir) as session:
        socket.create_connection(("127.0.0.1", listener.port), timeout=1).close()
    assert listener.connections() == 2
    assert session.misses == []


def test_each_task_is_guarded_by_its_own_session(listener: Listener, cassette_dir: Any) -> None:
    """The lookup runs in an executor thread, which decides as the task's session would."""
    hosts = [f"localhost:{listener.port}"]
    auto_open, replay_open, connected = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def recording() -> None:
        with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=hosts):
            auto_open.set()
            await replay_open.wait()
            _reader, writer = await asyncio.open_connection("localhost", listener.port)
            writer.close()
            connected.set()

    async def replaying() -> BaseException:
        await auto_open.wait()
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=hosts) as session:
            replay_open.set()  # the last session opened: a thread without one falls back to it
            await connected.wait()
            with pytest.raises(ghostrun.CacheMiss) as info:
                await asyncio.open_connection("localhost", listener.port)
            session.misses.clear()  # checked below, not raised again at exit
            session._deck.closing.owed.unraised.clear()
        return info.value

    async def both() -> BaseException:
        refused = asyncio.create_task(replaying())
        await asyncio.wait_for(recording(), timeout=10)
        return await refused

    refused = asyncio.run(both())
    assert f"localhost:{listener.port}" in str(refused)
    assert listener.connections() == 1  # the recording task's


def test_the_judge_still_works_in_replay(provider: ProviderSimulator, cassette_dir: Any) -> None:
    provider.judge_reply = lambda body: '{"verdict": "PASS", "reason": "it apologises"}'
    judge = ghostrun.OllamaJudge(host=f"http://localhost:{provider.port}", timeout=5)
    with ghostrun.session(
        mode="replay",
        cassette_dir=cassette_dir,
        hosts=[f"localhost:{provider.port}"],
        block_network=True,
    ) as session:
        assert judge.judge("Sorry about that.", "apologises").passed
        assert asyncio.run(judge.ajudge("Sorry about that.", "apologises")).passed
        with bypass_interception():
            socket.create_connection((provider.host, provider.port), timeout=1).close()
    assert provider.served == 2
    assert session.misses == []


# -- block_network -------------------------------------------------------------------


def test_block_network_refuses_what_is_not_loopback(
    listener: Listener, connects: list[Any], resolver: list[Any], cassette_dir: Any
) -> None:
    with replay(cassette_dir, block_network=True):
        with pytest.raises(ghostrun.CacheMiss, match=r"192\.0\.2\.1:80") as info:
            socket.create_connection(("192.0.2.1", 80), timeout=1)
        with socket.socket(socket.AF_INET6) as sock, pytest.raises(ghostrun.CacheMiss):
            sock.connect(("2001:db8::1", 443, 0, 0))
        with pytest.raises(ghostrun.CacheMiss, match=r"example\.com"):
            socket.getaddrinfo("example.com", 80)
        for host in ("127.0.0.1", "localhost"):
            socket.create_connection((host, listener.port), timeout=1).close()
    assert connects[0] == ("127.0.0.1", listener.port)  # only loopback reached connect
    assert all(_guard.is_loopback(address[0]) for address in connects)
    assert resolver == []
    assert listener.connections() == 2
    message = str(info.value)
    assert "block_network is on (this session's block_network=True)" in message
    assert "tool_hosts=[" in message and "block_network=False" not in message  # the fix


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.255.0.9", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("api.localhost", True),
        ("10.255.255.1", False),
        ("192.0.2.1", False),
        ("2001:db8::1", False),
        ("128.0.0.1", False),
        ("localhost.example.com", False),
        ("example.com", False),
    ],
)
def test_what_block_network_counts_as_loopback(host: str, loopback: bool) -> None:
    assert _guard.is_loopback(host) is loopback


def test_block_network_from_the_environment(
    connects: list[Any], cassette_dir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GHOSTRUN_BLOCK_NETWORK", "1")
    with replay(cassette_dir):
        with pytest.raises(ghostrun.CacheMiss, match="GHOSTRUN_BLOCK_NETWORK=1"):
            socket.create_connection(("192.0.2.1", 80), timeout=1)
    assert connects == []
    # Allowed by the session that says so, and never outside replay.
    for mode, block in (("replay", False), ("auto", None)):
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, block_network=block):
            with pytest.raises(ConnectionRefusedError, match="test connect"):
                socket.create_connection(("192.0.2.1", 80), timeout=1)
    assert connects == [("192.0.2.1", 80)] * 2
    monkeypatch.setenv("GHOSTRUN_BLOCK_NETWORK", "maybe")
    with pytest.raises(ValueError, match="GHOSTRUN_BLOCK_NETWORK"):
        ghostrun.session(mode="replay")


# -- installing and restoring --------------------------------------------------------


def test_restoring_puts_back_the_exact_originals(cassette_dir: Any) -> None:
    import asyncio.base_events

    import grpc

    loop_class = asyncio.base_events.BaseEventLoop

    def originals() -> list[Any]:
        return [
            socket.getaddrinfo,
            socket.gethostbyname,
            socket.gethostbyname_ex,
            socket.socket.__dict__.get("connect"),  # inherited from _socket.socket
            socket.socket.__dict__.get("connect_ex"),
            loop_class.__dict__["getaddrinfo"],
            grpc.insecure_channel,
            grpc.secure_channel,
            grpc.aio.insecure_channel,
            grpc.aio.secure_channel,
        ]

    before = originals()
    assert before[3] is None and before[4] is None

    def other_thread() -> None:
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir):
            pass

    with ghostrun.session(mode="replay", cassette_dir=cassette_dir) as outer:
        patched = originals()
        assert all(p is not b for p, b in zip(patched, before, strict=True))
        with outer, ghostrun.session(mode="replay", cassette_dir=cassette_dir):
            thread = threading.Thread(target=other_thread)
            thread.start()
            thread.join()
        assert originals() == patched
    after = originals()
    assert all(a is b for a, b in zip(after, before, strict=True))
    assert not _guard.installed()
    assert not any(isinstance(f, _patch.LateImports) for f in sys.meta_path)


def test_a_hook_that_cannot_be_installed_leaves_nothing_installed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """socket is patched before grpc: a grpc without its channels makes the install fail whole."""
    monkeypatch.setitem(sys.modules, "grpc", types.ModuleType("grpc"))
    original = socket.getaddrinfo
    assert not _guard.installed()
    with pytest.raises(AttributeError, match="insecure_channel"):
        _guard.acquire()
    assert socket.getaddrinfo is original
    assert not _guard.installed()
    assert not any(isinstance(f, _patch.LateImports) for f in sys.meta_path)


# -- outside sessions: the suite-wide mode -------------------------------------------

SCRIPT = """
import sys
{first}
import ghostrun
socket_imported = "socket" in sys.modules
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=1)
except ghostrun.CacheMiss as exc:
    print("refused:", exc)
print("socket imported by ghostrun:", socket_imported and not {socket_first})
"""


@pytest.mark.parametrize("socket_first", [False, True])
def test_ghostrun_mode_replay_guards_a_plain_script(listener: Listener, socket_first: bool) -> None:
    code = SCRIPT.format(
        first="import socket" if socket_first else "", port=listener.port, socket_first=socket_first
    )
    env = {"GHOSTRUN_MODE": "replay", "GHOSTRUN_HOSTS": listener.host}
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**_base_env(), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "refused: ghostrun: replay mode never touches the network" in result.stdout
    assert "outside any session, with the suite-wide mode replay" in result.stdout
    assert "socket imported by ghostrun: False" in result.stdout
    assert listener.connections() == 0


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("GHOSTRUN_")}


SPY_PLUGIN = """
import socket

RESOLVED, CONNECTED = [], []
_real_connect, _real_resolver = socket.socket.connect, socket.getaddrinfo


def _resolver(host, port, *args, **kwargs):
    if host == "127.0.0.1":
        return _real_resolver(host, port, *args, **kwargs)
    RESOLVED.append(host)
    raise socket.gaierror(socket.EAI_NONAME, "test resolver: resolves nothing")


def _connect(self, address):
    CONNECTED.append(address)
    if not str(address[0]).startswith("127."):
        raise ConnectionRefusedError("test connect: sends nothing")
    return _real_connect(self, address)


# Loaded with -p, before ghostrun's own plugin imports ghostrun (and so its guard).
socket.getaddrinfo = _resolver
socket.socket.connect = _connect
"""

SUITE_TESTS = r"""
import os
import socket

import pytest
from spy_network import CONNECTED, RESOLVED

import ghostrun


def test_provider_outside_any_session():
    with pytest.raises(ghostrun.CacheMiss, match=r"api\.openai\.com:443") as info:
        socket.create_connection(("api.openai.com", 443), timeout=1)
    assert "outside any session" in str(info.value)
    assert RESOLVED == []


def test_block_network_outside_any_session():
    with pytest.raises(ghostrun.CacheMiss, match="--ghostrun-block-network"):
        socket.create_connection(("192.0.2.1", 80), timeout=1)
    port = int(os.environ["LISTENER_PORT"])
    socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert CONNECTED == [("127.0.0.1", port)]
"""


def test_pytest_flags_guard_the_whole_run(
    pytester: pytest.Pytester, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LISTENER_PORT", str(listener.port))
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    pytester.makepyfile(spy_network=SPY_PLUGIN, test_suite=SUITE_TESTS)
    spied = ("-p", "spy_network")
    # By flag: GHOSTRUN_MODE=replay in the environment guards the interpreter from its start
    # (the .pth hook, test_guard_escapes.py), before this spy could install under the guard.
    named = pytester.runpytest_subprocess(*spied, "--ghostrun-mode=replay", "-k", "provider")
    named.assert_outcomes(passed=1, deselected=1)
    blocked = pytester.runpytest_subprocess(*spied, "--ghostrun-replay", "--ghostrun-block-network")
    blocked.assert_outcomes(passed=2)
    assert listener.connections() == 1
