"""Coming over from a real vcrpy suite: what the import keeps, refuses and attributes.

Each source file is written by the real vcrpy against the loopback provider, as a
pytest-recording suite's would be; the import runs through the CLI as a user types it.
"""

from __future__ import annotations

import contextlib
import json
import secrets as random_secrets
import uuid
from pathlib import Path

import httpx
import openai
import pytest
import vcr
from leaks import assert_not_on_disk
from simulator import ProviderSimulator

import ghostrun
from ghostrun._tools._cli import main


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "GHOSTRUN_MODE", "CI"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def key() -> str:
    return "sk-proj-" + random_secrets.token_hex(20)


def _import(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["import", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _vcr_record(folder: Path, name: str) -> vcr.cassette.CassetteContextDecorator:
    return vcr.VCR(cassette_library_dir=str(folder), record_mode="all").use_cassette(name)


def _chat(provider: ProviderSimulator, key: str, call_id: str = "") -> httpx.Response:
    messages: list[dict[str, object]] = [{"role": "user", "content": "Where is my refund?"}]
    if call_id:
        messages += [
            {"role": "assistant", "tool_calls": [{"id": call_id, "type": "function"}]},
            {"role": "tool", "tool_call_id": call_id, "content": "refund sent"},
        ]
    return httpx.post(
        provider.url("/v1/chat/completions"),
        json={"model": "gpt-4o-mini", "messages": messages},
        headers={"authorization": f"Bearer {key}"},
    )


def test_an_imported_401_replays_as_it_was_recorded(
    provider: ProviderSimulator, tmp_path: Path, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite's test of a bad key expects the provider's 401: recording keeps every status,
    and so does the import."""
    provider.fail_next(401)
    client = openai.OpenAI(api_key=key, base_url=provider.url("/v1"), max_retries=0)
    with (
        _vcr_record(tmp_path / "tests/cassettes/test_auth", "test_bad_key.yaml"),
        pytest.raises(openai.AuthenticationError),
    ):
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )

    code, printed = _import("tests", "--cassette-dir", "out", capsys=capsys)
    assert code == 0, printed
    assert "imported 1 exchange" in printed
    provider.stop()

    with (
        ghostrun.session(mode="replay", cassette_dir="out", hosts=["127.0.0.1"]) as replay,
        pytest.raises(openai.AuthenticationError) as denied,
    ):
        replayer = openai.OpenAI(
            api_key="sk-placeholder", base_url=provider.url("/v1"), max_retries=0
        )
        replayer.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
    assert denied.value.status_code == 401
    assert (replay.replayed, provider.served) == (1, 1)
    assert_not_on_disk(tmp_path / "out", [key])


def test_importing_the_cassette_directory_into_itself_is_refused_with_the_fix(
    provider: ProviderSimulator, tmp_path: Path, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """getting-started's ``cassette_dir = "tests/cassettes"`` is pytest-recording's folder."""
    with _vcr_record(tmp_path / "tests/cassettes/test_app", "test_refund.yaml"):
        _chat(provider, key)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))

    for source in ("tests/cassettes", "tests/cassettes/test_app"):
        code, printed = _import(source, "--cassette-dir", "tests/cassettes", capsys=capsys)
        assert code == 2
        assert "inside the cassette directory" in printed and "--cassette-dir" in printed
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before

    code, printed = _import("tests/cassettes", "--cassette-dir", ".ghostrun_cache", capsys=capsys)
    assert code == 0 and "imported 1 exchange" in printed


def test_a_custom_layout_attributes_each_file_to_its_test(
    provider: ProviderSimulator, tmp_path: Path, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite whose ``vcr_cassette_dir`` is ``tests/_vcr/<module>`` names its layout."""
    with _vcr_record(tmp_path / "tests/_vcr/test_app", "test_refund.yaml"):
        _chat(provider, key)

    code, printed = _import("tests", "--cassette-dir", "plain", capsys=capsys)
    assert code == 0 and "test tests/" not in printed  # not pytest-recording's default layout

    layout = "{dir}/_vcr/{module}/{test}"
    code, printed = _import(
        "tests", "--cassette-dir", "out", "--test-from-path", layout, capsys=capsys
    )
    assert code == 0, printed
    assert "test tests/test_app.py::test_refund" in printed
    run = json.loads((tmp_path / "out/runs/_last.json").read_text())
    assert list(run["tests"]) == ["tests/test_app.py::test_refund"]

    code, printed = _import("tests", "--test-from-path", "{dir}/_vcr/{test}", capsys=capsys)
    assert code == 2 and "must name {module} and {test}" in printed


@pytest.mark.parametrize("shape", ["hex_id", "prefixed_id"])
def test_keys_follow_the_normalize_the_suite_replays_with(
    provider: ProviderSimulator,
    tmp_path: Path,
    key: str,
    capsys: pytest.CaptureFixture[str],
    shape: str,
) -> None:
    """A random ``call_`` + uuid4().hex per run: imported with the suite's shapes, the
    cassette replays a run that minted another id; imported without, it cannot."""
    with _vcr_record(tmp_path / "tests/cassettes/test_tools", "test_tool_loop.yaml"):
        live = _chat(provider, key, call_id="call_" + uuid.uuid4().hex).json()
    provider.stop()

    assert _import("tests", "--cassette-dir", "plain", capsys=capsys)[0] == 0
    code, printed = _import(
        "tests", "--cassette-dir", "shaped", "--normalize", shape, capsys=capsys
    )
    assert code == 0, printed

    def replay(directory: str) -> list[BaseException]:
        with ghostrun.session(
            mode="replay", cassette_dir=directory, hosts=["127.0.0.1"], normalize=[shape]
        ) as session:
            with contextlib.suppress(ghostrun.CacheMiss):
                assert _chat(provider, "sk-placeholder", "call_" + uuid.uuid4().hex).json() == live
        return session.misses

    assert replay("shaped") == []
    with pytest.raises(ghostrun.CacheMiss):
        replay("plain")


def test_a_bad_normalize_or_ignore_fields_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tests").mkdir()
    code, printed = _import("tests", "--normalize", "dates", capsys=capsys)
    assert code == 2 and "unknown normalize name 'dates'" in printed
    code, printed = _import("tests", "--ignore-fields", "a..b", capsys=capsys)
    assert code == 2 and "invalid ignore_fields path 'a..b'" in printed
