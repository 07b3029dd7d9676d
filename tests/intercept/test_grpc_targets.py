"""A gRPC target is judged as gRPC reads it (issue 41, item 1; DESIGN §1 "The guard").

gRPC's C core resolves and connects below Python's socket module, so in replay
the target is the only gate. Each test opens a real grpcio channel (sync or
``grpc.aio``) to a loopback server (`grpc_simulator`) that counts the calls it
serves and keeps their metadata, with the server's address listed as a
provider host, and a credential in the call's metadata: in replay no spelling
gRPC accepts may reach it, and every refusal names the target as written.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from grpc_simulator import GrpcSimulator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ghostrun
from ghostrun._intercept import _guard

KEY = "xai-" + "targetSECRET0123456789abcdefghij"  # assembled: no key shape is committed
ECHO = "/ghostrun.test.Echo/Unary"


@pytest.fixture(scope="module")
def server() -> Iterator[GrpcSimulator]:
    with GrpcSimulator() as simulator:
        yield simulator


def _call_sync(target: str) -> None:
    channel = grpc.insecure_channel(target)
    try:
        channel.unary_unary(ECHO)(b"hi", timeout=2, metadata=[("x-api-key", KEY)])
    finally:
        channel.close()


def _call_aio(target: str) -> None:
    async def run() -> None:
        async with grpc.aio.insecure_channel(target) as channel:
            await channel.unary_unary(ECHO)(b"hi", timeout=2, metadata=[("x-api-key", KEY)])

    asyncio.run(run())


CLIENTS: dict[str, Callable[[str], None]] = {"sync": _call_sync, "aio": _call_aio}


def _refused(server: GrpcSimulator, call: Callable[[str], None], target: str) -> str:
    """The refusal of a call to ``target``; fails if it was not refused or reached the server."""
    calls = len(server.calls)
    try:
        call(target)
    except ghostrun.CacheMiss as miss:
        message = str(miss)
    except grpc.RpcError as error:  # gRPC tried: the guard let it by
        pytest.fail(f"{target!r} was not refused ({error.code()}); server calls: {server.calls}")
    else:
        pytest.fail(f"{target!r} reached the server")
    assert len(server.calls) == calls, f"{target!r} reached the server"
    assert not any("x-api-key" in seen for seen in server.metadata[calls:])
    return message


def _guarded_suite(monkeypatch: pytest.MonkeyPatch, host: str) -> Iterator[None]:
    """The suite-wide replay, outside any session: no road answers, the guard alone judges."""
    monkeypatch.setenv("GHOSTRUN_MODE", "replay")
    monkeypatch.setenv("GHOSTRUN_HOSTS", host)
    _guard.acquire()
    try:
        yield
    finally:
        _guard.release()


@pytest.fixture
def suite_replay(server: GrpcSimulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    yield from _guarded_suite(monkeypatch, server.target)


def _reaching(port: int) -> list[str]:
    """Spellings of the server's address that gRPC dials (`test_the_spellings_reach`)."""
    return [
        # the four the review found live
        f"ipv4:///127.0.0.1:{port}",
        f"ipv4:10.255.255.1:{port},127.0.0.1:{port}",
        f"%31%32%37.0.0.1:{port}",
        f"dns:///%31%32%37.0.0.1:{port}",
        # refused before, and still
        f"127.0.0.1:{port}",
        f"dns:///127.0.0.1:{port}",
        f"dns:127.0.0.1:{port}",
        f"dns:/127.0.0.1:{port}",
        f"ipv4:127.0.0.1:{port}",
        f"ipv4:/127.0.0.1:{port}",
        f"localhost:{port}",
        f"dns:///localhost:{port}",
        f"0.0.0.0:{port}",
        f"[::ffff:127.0.0.1]:{port}",
        f"ipv6:[::ffff:127.0.0.1]:{port}",
        f"dns://[::1]:53/127.0.0.1:{port}",
        # more that gRPC reads as the same address
        f"DNS:///127.0.0.1:{port}",
        f"IPv4:127.0.0.1:{port}",
        f"127.0.0.1%3A{port}",
        f"ipv4:,127.0.0.1:{port}",
        f"ipv4:127.0.0.1:{port},",
        f"127.0.0.1:0{port}",
        f"foo.localhost:{port}",
    ]


def _fail_closed(port: int) -> list[str]:
    """Spellings gRPC dials but reads differently from what is plain: refused as unreadable."""
    return [
        f"localhost:{port + 65536}",  # gRPC's resolver wraps the port to 16 bits
        f"127.0.0.1:+{port}",
        f"ipv4:127.0.0.1:{port}abc",
        f"ipv4:127.0.0.1: {port}",
        f"127.0.0.1:{port}?x=1",
        f"127.0.0.1:{port}#frag",
    ]


def test_the_spellings_reach(server: GrpcSimulator) -> None:
    """Without ghostrun's guard each spelling really reaches the server: the tests below
    would prove nothing of a spelling gRPC never dials."""
    for target in _reaching(server.port) + _fail_closed(server.port):
        calls = len(server.calls)
        _call_sync(target)
        assert len(server.calls) == calls + 1, target
        assert server.metadata[-1]["x-api-key"] == KEY


@pytest.mark.parametrize("client", CLIENTS)
def test_every_spelling_is_refused_by_the_guard(
    server: GrpcSimulator, suite_replay: None, client: str
) -> None:
    for target in _reaching(server.port) + _fail_closed(server.port):
        message = _refused(server, CLIENTS[client], target)
        assert repr(target) in message, message
    assert "cannot read for certain" in _refused(server, _call_sync, f"127.0.0.1:+{server.port}")


@pytest.mark.parametrize("client", CLIENTS)
def test_every_spelling_is_answered_or_refused_in_a_session(
    server: GrpcSimulator, cassette_dir: Path, client: str
) -> None:
    """In a replay session the grpc road answers a listed address (here: a miss, as nothing
    was recorded); the guard refuses what it cannot read. Nothing reaches the server."""
    targets = _reaching(server.port) + _fail_closed(server.port)
    outcomes: dict[str, str] = {}
    with pytest.raises(ghostrun.CacheMiss):  # the misses, raised again as the session closes
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=[server.target]):
            for target in targets:
                outcomes[target] = _outcome(server, CLIENTS[client], target)
    for target, outcome in outcomes.items():
        assert outcome.startswith("refused:"), (target, outcome)
        assert repr(target) in outcome or f":{server.port}{ECHO} in" in outcome, outcome


def _outcome(server: GrpcSimulator, call: Callable[[str], None], target: str) -> str:
    """What a call to ``target`` met: ``refused: <message>``, or how it reached or failed."""
    calls = len(server.calls)
    try:
        call(target)
    except ghostrun.CacheMiss as miss:
        outcome = f"refused: {miss}"
    except grpc.RpcError as error:
        outcome = f"not refused: {error.code()}"
    else:
        outcome = "not refused: answered"
    return outcome if len(server.calls) == calls else f"reached the server: {outcome}"


def test_a_name_is_judged_by_what_it_resolves_to(
    server: GrpcSimulator, suite_replay: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name in /etc/hosts reaches a listed address; one that does not resolve is refused."""
    resolved: dict[str, list[str]] = {"loop-alias": ["127.0.0.1"]}
    original = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in resolved:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in resolved[host]]
        if host == "nowhere-at-all":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return original(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    message = _refused(server, _call_sync, f"loop-alias:{server.port}")
    assert "'loop-alias:" in message and "resolves to" in message
    assert "does not resolve" in _refused(server, _call_sync, f"nowhere-at-all:{server.port}")


def test_the_hosts_own_name_when_it_is_loopback(server: GrpcSimulator, suite_replay: None) -> None:
    name = socket.gethostname()
    if "127.0.0.1" not in {info[4][0] for info in socket.getaddrinfo(name, None)}:
        name = "localhost"  # elsewhere the machine's name is not loopback: the plain name
    assert repr(f"{name}:{server.port}") in _refused(server, _call_sync, f"{name}:{server.port}")


def test_other_targets_still_pass(server: GrpcSimulator, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside replay nothing is judged; in replay an unlisted address and a unix socket pass."""
    _call_sync(f"ipv4:///127.0.0.1:{server.port}")
    for _ in _guarded_suite(monkeypatch, "api.x.ai"):
        _call_sync(f"ipv4:///127.0.0.1:{server.port}")
        grpc.insecure_channel("unix:/tmp/ghostrun-no-such.sock").close()
    assert server.calls[-2:] == ["Unary", "Unary"]


# -- the property: any spelling gRPC accepts ----------------------------------------------


def _percent(text: str, draw: Any) -> str:
    """Some characters of ``text`` percent-encoded, in either case of hex digit."""
    out = []
    for char in text:
        if draw(st.integers(0, 3)) == 0:
            escape = f"%{ord(char):02x}"
            out.append(escape.upper() if draw(st.booleans()) else escape)
        else:
            out.append(char)
    return "".join(out)


@st.composite
def spellings(draw: Any, port: int) -> str:
    """A target whose addresses include the listed server, in one of gRPC's spellings."""
    decoys4 = [f"10.255.255.1:{port}", f"192.0.2.7:{port + 1}"]
    kind = draw(st.sampled_from(["plain", "dns", "ipv4", "ipv6"]))
    if kind in ("ipv4", "ipv6"):
        loop = f"127.0.0.1:{port}" if kind == "ipv4" else f"[::ffff:127.0.0.1]:{port}"
        decoys = decoys4 if kind == "ipv4" else ["[2001:db8::1]:443", f"[::ffff:10.0.0.9]:{port}"]
        items = draw(st.lists(st.sampled_from(["", *decoys]), max_size=3))
        items.insert(draw(st.integers(0, len(items))), loop)
        items = [("/" if draw(st.booleans()) else "") + item for item in items]
        scheme = draw(st.sampled_from([kind, kind.upper(), kind + "://"]))
        body = ",".join(items)
        return scheme + (_percent(body, draw) if draw(st.booleans()) else body)
    host = draw(
        st.sampled_from(
            ["127.0.0.1", "localhost", "LocalHost", "0.0.0.0", "[::ffff:127.0.0.1]",
             "[::ffff:7f00:1]", "[::ffff:127.0.0.1%25lo]", "127.0.0.1.", "x.localhost"]
        )
    )  # fmt: skip
    written_port = draw(st.sampled_from([str(port), "0" + str(port), str(port + 65536)]))
    address = _percent(f"{host}:{written_port}", draw)
    if kind == "plain":
        return address
    authority = draw(st.sampled_from(["", "", "8.8.8.8", "[::1]:53", "dns.example"]))
    prefix = draw(st.sampled_from(["dns:", "dns:/", "dns://{}/", "Dns://{}/"])).format(authority)
    return prefix + address


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_no_spelling_reaches_a_listed_server(
    server: GrpcSimulator, suite_replay: None, data: st.DataObject
) -> None:
    target = data.draw(spellings(server.port), label="target")
    client = data.draw(st.sampled_from(sorted(CLIENTS)), label="client")
    message = _refused(server, CLIENTS[client], target)
    assert repr(target) in message, message
