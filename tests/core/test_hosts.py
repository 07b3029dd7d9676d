"""Which hosts are intercepted: patterns, ports, and the one loopback host (DESIGN §1)."""

from __future__ import annotations

from typing import Any

import pytest
from sdk_calls import ollama_chat
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core._hosts import HostMatcher


@pytest.mark.parametrize(
    ("pattern", "host", "port", "matches"),
    [
        ("localhost:11434", "127.0.0.1", 11434, True),  # the ollama client's default
        ("localhost:11434", "::1", 11434, True),
        ("localhost:11434", "[::1]", 11434, True),
        ("localhost:11434", "localhost", 11434, True),
        ("localhost:11434", "127.0.0.1", 11435, False),
        ("localhost", "127.0.0.1", 11434, True),
        ("localhost", "::1", None, True),
        ("127.0.0.1", "localhost", 8080, True),
        ("127.0.0.1:8080", "LOCALHOST", 8080, True),
        ("::1", "127.0.0.1", 5, True),  # a bare IPv6 address has no port
        ("[::1]:8080", "localhost", 8080, True),
        ("[::1]:8080", "localhost", 80, False),
        ("http://localhost:11434/api", "127.0.0.1", 11434, True),
        ("localhost", "127.0.0.2", 80, False),  # only the three spellings are one host
        ("localhost", "10.0.0.1", 80, False),
        ("api.openai.com", "api.openai.com", 443, True),
        ("openai.azure.com", "me.openai.azure.com", 443, True),  # a subdomain
        ("api.openai.com:8443", "api.openai.com", 443, False),
        ("bedrock-runtime.*.amazonaws.com", "bedrock-runtime.us-east-1.amazonaws.com", 443, True),
        ("2001:db8::1", "2001:db8::1", 443, True),
    ],
)
def test_host_patterns(pattern: str, host: str, port: int | None, matches: bool) -> None:
    assert HostMatcher([pattern])(host, port) is matches


@pytest.mark.parametrize("listed", ["localhost", "localhost:{port}", "[::1]:{port}"])
def test_localhost_records_ollamas_127_0_0_1_traffic(
    provider: ProviderSimulator, cassette_dir: Any, listed: str
) -> None:
    hosts = [listed.format(port=provider.port)]
    base_url = provider.base_url  # http://127.0.0.1:<port>, as the ollama client's default
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=hosts) as session:
        live = ollama_chat(base_url)
    assert (session.recorded, session.passed_through) == (1, 0)
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=hosts) as session:
        assert ollama_chat(base_url) == live
    assert session.replayed == 1


# -- a local provider's port ------------------------------------------------------------


@pytest.mark.parametrize(
    ("patterns", "host", "port", "portless"),
    [
        (["localhost"], "127.0.0.1", 40123, True),  # a local provider, any port
        (["127.0.0.1"], "localhost", 40123, True),
        (["http://localhost/v1"], "::1", 40123, True),
        (["localhost:11434"], "127.0.0.1", 11434, False),  # the port was written: it counts
        (["localhost", "localhost:11434"], "127.0.0.1", 11434, False),
        (["localhost", "localhost:11434"], "127.0.0.1", 40123, True),
        (["llm.internal"], "llm.internal", 8080, False),  # not loopback: its port is its own
        (["api.openai.com"], "api.openai.com", 8443, False),
        (["localhost"], "127.0.0.1", None, False),  # nothing to leave out
        (["api.openai.com"], "127.0.0.1", 40123, True),  # unlisted (an import): keyed alike
    ],
)
def test_which_requests_are_keyed_without_their_port(
    patterns: list[str], host: str, port: int | None, portless: bool
) -> None:
    assert HostMatcher(patterns).keys_without_port(host, port) is portless


def test_a_local_provider_recorded_on_one_port_replays_on_another(cassette_dir: Any) -> None:
    with ProviderSimulator() as first:
        with ghostrun.session(cassette_dir=cassette_dir, hosts=["localhost"]) as recording:
            live = ollama_chat(first.base_url)
    assert recording.recorded == 1
    with ProviderSimulator() as second:  # the next run: the same server, another port
        assert second.port != first.port
        with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=["localhost"]) as s:
            assert ollama_chat(second.base_url) == live
        assert (s.replayed, second.served) == (1, 0)

        with (
            pytest.raises(ghostrun.CacheMiss) as miss,
            ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=["localhost"]),
        ):
            ollama_chat(second.base_url, "another question")
        assert "Closest recorded request to the same endpoint" in str(miss.value)

        pinned = [f"localhost:{first.port}", f"localhost:{second.port}"]  # ports written
        with (
            pytest.raises(ghostrun.CacheMiss),
            ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=pinned),
        ):
            ollama_chat(second.base_url)
        assert second.served == 0
