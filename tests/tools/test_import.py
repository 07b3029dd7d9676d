"""``ghostrun import``: cassettes written by the real vcrpy and cassetter replay through the SDKs.

Each test records against the loopback provider with the other tool itself,
imports what it wrote, stops the provider, and replays through the openai and
anthropic SDKs in replay mode: the same parsed results (the planted key masked),
the same SSE events, no connection. The key planted in the source's headers,
URI and echoed body is on no imported file, in any encoding the secrets tests
scan for.
"""

from __future__ import annotations

import gzip
import json
import secrets as random_secrets
import zlib
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import anthropic
import brotli
import cassetter
import httpx
import openai
import pytest
import requests
import vcr
import yaml
from leaks import assert_not_on_disk
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core import _age
from ghostrun._tools._cli import main

MASK = "[REDACTED]"
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Where is my refund?"}]}
MESSAGES = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Where is my refund?"}],
}
SPEECH = {"model": "tts-1", "input": "hello", "voice": "alloy"}


@pytest.fixture
def key() -> str:
    return "sk-proj-" + random_secrets.token_hex(20)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_age, "_clock", lambda: date(2031, 1, 1))  # imports keep the source's day
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _masked(value: Any, key: str) -> Any:
    """``value`` with the key masked; with its scheme or without (a source that scrubbed the
    header left ghostrun only the key's shape to find), both spelled the same."""
    text = json.dumps(value).replace(key, MASK).replace(f"Bearer {MASK}", MASK)
    return json.loads(text)


def _events(events: list[Any], key: str) -> tuple[list[Any], str]:
    """A stream's events with their text pieces taken out, and the text they spell, masked.

    Masking a key that spans events (" Bearer", " sk-...") edits both events, so the
    pieces are compared joined; everything else event by event.
    """
    pieces: list[str] = []

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: pieces.append(v) or ""
                if k in ("content", "text") and isinstance(v, str)
                else walk(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    shapes = [walk(event) for event in events if event.get("type") != "ping"]  # SDKs skip it
    return shapes, _masked("".join(pieces), key)


def _sse_json(text: str) -> list[Any]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data: {")]


class Live:
    """What the provider answered while the source tool recorded, as parsed JSON."""

    def __init__(self) -> None:
        self.chats: list[Any] = []
        self.chat_stream: list[Any] = []
        self.messages: Any = None
        self.message_stream: list[Any] = []
        self.gzipped: Any = None
        self.audio = b""


def _raw_traffic(provider: ProviderSimulator, key: str, binary: bool = True) -> Live:
    """The SDKs' requests, sent by httpx and requests (the clients vcrpy hooks)."""
    live = Live()
    auth = {"authorization": f"Bearer {key}"}
    for _ in range(2):  # the same request twice: two answers, replayed in order
        live.chats.append(
            httpx.post(
                provider.url(f"/v1/chat/completions?api_key={key}"), json=CHAT, headers=auth
            ).json()
        )
    stream = httpx.post(
        provider.url("/v1/chat/completions"), json={**CHAT, "stream": True}, headers=auth
    )
    live.chat_stream = _sse_json(stream.text)
    anthropic_auth = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    live.messages = httpx.post(
        provider.url("/v1/messages"), json=MESSAGES, headers=anthropic_auth
    ).json()
    streamed = httpx.post(
        provider.url("/v1/messages"), json={**MESSAGES, "stream": True}, headers=anthropic_auth
    )
    live.message_stream = _sse_json(streamed.text)
    provider.gzip = True
    gz = {**CHAT, "messages": [{"role": "user", "content": "gzip me"}]}
    live.gzipped = requests.post(provider.url("/v1/chat/completions"), json=gz, headers=auth).json()
    provider.gzip = False
    if binary:
        live.audio = httpx.post(provider.url("/v1/audio/speech"), json=SPEECH, headers=auth).content
    return live


def _sdk_traffic(provider: ProviderSimulator, key: str) -> Live:
    """The same traffic through the SDKs themselves (cassetter hooks httpx2)."""
    live = Live()
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key=key, max_retries=0)
    for _ in range(2):
        live.chats.append(client.chat.completions.create(**CHAT).to_dict())  # type: ignore[call-overload]
    stream = client.chat.completions.create(**CHAT, stream=True)  # type: ignore[call-overload]
    live.chat_stream = [event.to_dict() for event in stream]
    claude = anthropic.Anthropic(base_url=provider.base_url, api_key=key, max_retries=0)
    live.messages = claude.messages.create(**MESSAGES).to_dict()  # type: ignore[call-overload]
    events = claude.messages.create(**MESSAGES, stream=True)  # type: ignore[call-overload]
    live.message_stream = [event.to_dict() for event in events]
    provider.gzip = True
    gz = {**CHAT, "messages": [{"role": "user", "content": "gzip me"}]}
    live.gzipped = client.chat.completions.create(**gz).to_dict()  # type: ignore[call-overload]
    provider.gzip = False
    live.audio = client.audio.speech.create(**SPEECH).content  # type: ignore[arg-type]
    return live


def _replay(provider: ProviderSimulator, directory: Path, live: Live, key: str, **kw: Any) -> None:
    """Replay everything through the SDKs with the provider stopped."""
    provider.stop()
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key="sk-other-key", max_retries=0)
    claude = anthropic.Anthropic(base_url=provider.base_url, api_key="other", max_retries=0)
    with ghostrun.session(mode="replay", cassette_dir=directory, hosts=["127.0.0.1"], **kw) as s:
        chats = [client.chat.completions.create(**CHAT).to_dict() for _ in range(2)]  # type: ignore[call-overload]
        stream = client.chat.completions.create(**CHAT, stream=True)  # type: ignore[call-overload]
        chat_events = [event.to_dict() for event in stream]
        message = claude.messages.create(**MESSAGES).to_dict()  # type: ignore[call-overload]
        events = claude.messages.create(**MESSAGES, stream=True)  # type: ignore[call-overload]
        message_events = [event.to_dict() for event in events]
        gz = {**CHAT, "messages": [{"role": "user", "content": "gzip me"}]}
        gzipped = client.chat.completions.create(**gz).to_dict()  # type: ignore[call-overload]
        audio = client.audio.speech.create(**SPEECH).content if live.audio else b""  # type: ignore[arg-type]
    assert s.misses == [] and s.recorded == 0
    assert _masked(chats, key) == _masked(live.chats, key)
    assert chats[0]["id"] != chats[1]["id"]  # two answers to one request, in order
    assert _events(chat_events, key) == _events(live.chat_stream, key)
    assert len(chat_events) > 3
    assert _masked(message, key) == _masked(live.messages, key)
    assert _events(message_events, key) == _events(live.message_stream, key)
    assert [e["type"] for e in message_events][:2] == ["message_start", "content_block_start"]
    assert _masked(gzipped, key) == _masked(live.gzipped, key)
    assert audio == live.audio


def _days(directory: Path) -> set[str | None]:
    return {
        r.get("recorded_on")
        for p in directory.glob("*.json")
        for r in json.loads(p.read_text())["responses"]
    }


def _import(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["import", *args])
    return code, capsys.readouterr().out


# -- vcrpy -----------------------------------------------------------------------------------


@pytest.mark.parametrize("serializer", ["yaml", "json", "yaml.gz"])
def test_vcrpy_cassettes_replay_through_the_sdks(
    provider: ProviderSimulator,
    tmp_path: Path,
    key: str,
    serializer: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    provider.echo_auth = True  # the provider repeats the key: an echoed body
    source = tmp_path / "vcr"
    recorder = vcr.VCR(cassette_library_dir=str(source), record_mode="all")
    with recorder.use_cassette("chat", serializer=serializer.removesuffix(".gz")):
        live = _raw_traffic(provider, key, binary=serializer != "json")  # json holds no bytes
    if serializer == "yaml.gz":  # langchain's persister: the YAML, gzipped
        (source / "chat.yaml.gz").write_bytes(gzip.compress((source / "chat").read_bytes()))
        (source / "chat").unlink()
    else:
        (source / "chat").rename(source / f"chat.{serializer}")
    raw = b"".join(p.read_bytes() for p in source.iterdir())
    assert key.encode() in raw or serializer == "yaml.gz"  # the source did leak it

    out = tmp_path / "ghostrun"
    code, printed = _import(str(source), "--cassette-dir", str(out), capsys=capsys)

    assert code == 0, printed
    assert "vcrpy: imported" in printed and "masked: " in printed
    assert "authorization header" in printed and "api_key= in the URL" in printed
    assert _days(out) == {datetime.now(UTC).date().isoformat()}  # the responses' date header
    assert_not_on_disk(out, [key])
    _replay(provider, out, live, key)


def test_vcrpy_binary_bodies_compressed_three_ways_are_stored_decoded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``!!binary`` bodies still gzip-, deflate- or br-encoded, as vcrpy keeps them."""
    payload = json.dumps({"id": "x", "choices": [{"message": {"content": "hi"}}]}).encode()
    compress = {"gzip": gzip.compress, "deflate": zlib.compress, "br": brotli.compress}
    interactions = [
        {
            "request": {
                "method": "POST",
                "uri": "https://api.openai.com/v1/chat/completions",
                "body": json.dumps({"model": coding}),
                "headers": {"Content-Type": ["application/json"]},
            },
            "response": {
                "status": {"code": 200, "message": "OK"},
                "headers": {"Content-Encoding": [coding], "Content-Type": ["application/json"]},
                "body": {"string": compress[coding](payload)},
            },
        }
        for coding in compress
    ]
    source = tmp_path / "c.yaml"
    source.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}))
    assert "!!binary" in source.read_text()

    code, printed = _import(str(source), "--cassette-dir", str(tmp_path / "out"), capsys=capsys)

    assert code == 0, printed
    stored = [json.loads(p.read_text()) for p in sorted((tmp_path / "out").glob("*.json"))]
    assert len(stored) == 3
    for cassette in stored:
        (response,) = cassette["responses"]
        assert response["body"]["json"] == json.loads(payload)
        assert "content-encoding" not in response["headers"]


def test_a_pytest_recording_cassette_is_attached_to_its_test(
    provider: ProviderSimulator, tmp_path: Path, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``tests/cassettes/<module>/<test>.yaml``: the exchanges become that test's run."""
    provider.echo_auth = True
    recorder = vcr.VCR(cassette_library_dir=str(tmp_path / "tests/cassettes/test_app"))
    with recorder.use_cassette("test_refund.yaml", record_mode="all"):
        live = _raw_traffic(provider, key)
    out = tmp_path / "ghostrun"

    code, printed = _import("tests", "--cassette-dir", str(out), capsys=capsys)

    test = "tests/test_app.py::test_refund"
    assert code == 0, printed
    assert f"test {test}" in printed
    cassettes = [json.loads(p.read_text()) for p in out.glob("*.json")]
    assert {r["session"] for c in cassettes for r in c["responses"]} == {test}
    run = json.loads((out / "runs" / "_last.json").read_text())
    used = [entry["key"] for entry in run["tests"][test]["cassettes"]]
    assert len(used) == 7 and set(used) == {c["key"] for c in cassettes}
    assert set(run["cassettes_used"]) == set(used)
    assert_not_on_disk(out, [key])
    _replay(provider, out, live, key, name=test)


def test_import_never_replaces_a_cassette_without_force_and_a_dry_run_writes_nothing(
    provider: ProviderSimulator, tmp_path: Path, key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = vcr.VCR(cassette_library_dir=str(tmp_path / "vcr"), record_mode="all")
    with recorder.use_cassette("chat.yaml"):
        httpx.post(provider.url("/v1/chat/completions"), json=CHAT)
    out = tmp_path / "out"

    code, printed = _import("vcr", "--cassette-dir", str(out), "--dry-run", capsys=capsys)
    assert code == 0 and "would import 1 exchange" in printed and not out.exists()

    assert _import("vcr", "--cassette-dir", str(out), capsys=capsys)[0] == 0
    (cassette,) = out.glob("*.json")
    cassette.write_text(cassette.read_text().replace("Echo:", "Edited:"))

    code, printed = _import("vcr", "--cassette-dir", str(out), capsys=capsys)
    assert code == 1 and "exists (pass --force to replace it)" in printed
    assert "Edited:" in cassette.read_text()

    code, printed = _import("vcr", "--cassette-dir", str(out), "--force", capsys=capsys)
    assert code == 0 and "Edited:" not in cassette.read_text()
    assert len(json.loads(cassette.read_text())["responses"]) == 1

    code, printed = _import(".", "--cassette-dir", "out", "--dry-run", capsys=capsys)
    assert "out/" not in printed  # its own cassettes, inside the directory searched, are not read


def test_what_cannot_be_imported_is_skipped_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.yaml").write_text("just: a config\n")
    (tmp_path / "broken.json").write_text("{")
    denied = {
        "request": {"method": "POST", "uri": "https://api.openai.com/v1/models", "body": None},
        "response": {"status": {"code": 401}, "headers": {}, "body": {"string": "no"}},
    }
    (tmp_path / "auth.yaml").write_text(yaml.safe_dump({"interactions": [denied], "version": 1}))

    code, printed = _import(str(tmp_path), "--cassette-dir", str(tmp_path / "o"), capsys=capsys)

    assert code == 1
    assert "not a vcrpy or cassetter cassette" in printed
    assert "not valid JSON" in printed
    assert "Imported 1 exchange into 1 cassette" in printed  # the 401: kept, as recording keeps it


# -- cassetter -------------------------------------------------------------------------------


@pytest.mark.parametrize("extension", ["yaml", "toml"])
def test_cassetter_cassettes_replay_through_the_sdks(
    provider: ProviderSimulator,
    tmp_path: Path,
    key: str,
    extension: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    provider.echo_auth = True
    source = tmp_path / "cassettes" / f"chat.{extension}"
    with cassetter.use_cassette(source, record_mode="all"):
        live = _sdk_traffic(provider, key)
    assert key.encode() in source.read_bytes()  # cassetter left the echo in

    out = tmp_path / "ghostrun"
    code, printed = _import(str(source), "--cassette-dir", str(out), capsys=capsys)

    assert code == 0, printed
    assert "cassetter: imported 7 exchanges" in printed
    assert_not_on_disk(out, [key])
    assert _days(out) == {datetime.now(UTC).date().isoformat()}  # cassetter's recorded_at
    _replay(provider, out, live, key)
