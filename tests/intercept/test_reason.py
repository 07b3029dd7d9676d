"""The reason phrase is stored and replayed on every road that shows it (issue 29, item 4).

httpx and httpx2 show it as ``response.reason_phrase`` (from
``extensions["reason_phrase"]``), requests and urllib3 as ``reason``, aiohttp
as ``reason``. A provider's own phrase (Azure's ``PermissionDenied``) or none
at all must reach the client while recording and come back in replay; a
cassette keeps it only when it is not the standard phrase, so older files
(without the field) replay the standard one, as they always did.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import aiohttp
import httpx
import httpx2
import orjson
import pytest
import requests
from simulator import ProviderSimulator, RawReply

import ghostrun
from ghostrun._core._exceptions import CassetteError
from ghostrun._store._cassette import read_run

LOOPBACK = ("127.0.0.1",)
JSON = [("content-type", "application/json")]
SSE = [("content-type", "text/event-stream")]

Fetch = Callable[[str], tuple[int, str, bytes]]


def _httpx(lib: object) -> Fetch:
    def fetch(url: str) -> tuple[int, str, bytes]:
        response = lib.get(url)  # type: ignore[attr-defined]
        return response.status_code, response.reason_phrase, response.content

    return fetch


def _requests(url: str) -> tuple[int, str, bytes]:
    response = requests.get(url)
    return response.status_code, response.reason, response.content


def _aiohttp(url: str) -> tuple[int, str, bytes]:
    async def fetch() -> tuple[int, str, bytes]:
        async with aiohttp.ClientSession() as client, client.get(url) as response:
            return response.status, response.reason or "", await response.read()

    return asyncio.run(fetch())


ROADS: dict[str, Fetch] = {
    "httpx": _httpx(httpx),
    "httpx2": _httpx(httpx2),
    "requests": _requests,
    "aiohttp": _aiohttp,
}
REPLIES = {
    "azure-denied": (RawReply(401, JSON, b'{"error":{"code":"401"}}', reason="PermissionDenied"),),
    "empty-reason": (RawReply(200, JSON, b'{"ok":true}', reason=""),),
    "standard": (RawReply(200, JSON, b'{"ok":true}'),),
    "stream-no-reason": (RawReply(200, SSE, chunks=[b"data: 1\n\n", b"data: 2\n\n"], reason=""),),
}
STORED = {"azure-denied": "PermissionDenied", "empty-reason": "", "standard": None}


@pytest.mark.filterwarnings("ignore::ghostrun.AuthFailureWarning")
@pytest.mark.parametrize("name", REPLIES)
@pytest.mark.parametrize("road", ROADS)
def test_the_reason_phrase_is_handed_on_recording_and_replayed(
    provider: ProviderSimulator, cassette_dir: Path, road: str, name: str
) -> None:
    (provider.raw_replies[name],) = REPLIES[name]
    url, fetch = provider.url(f"/raw/{name}"), ROADS[road]
    without = fetch(url)
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = fetch(url)
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as rep:
        again = fetch(url)
    assert rep.replayed == 1
    assert again == live == without
    expected = REPLIES[name][0].reason
    assert live[1] == ("OK" if expected is None else expected)
    (path,) = cassette_dir.glob("*.json")
    response = orjson.loads(path.read_bytes())["responses"][0]
    assert response.get("reason") == STORED.get(name, "")


def test_a_cassette_without_a_reason_replays_the_standard_phrase(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.raw_replies["denied"] = RawReply(403, JSON, b"{}", reason="Nope")
    url = provider.url("/raw/denied")
    with pytest.warns(ghostrun.AuthFailureWarning):
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
            assert _requests(url)[1] == "Nope"
    (path,) = cassette_dir.glob("*.json")
    document = orjson.loads(path.read_bytes())
    del document["responses"][0]["reason"]  # as every file written before the field
    path.write_bytes(orjson.dumps(document))
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        assert [fetch(url)[1] for fetch in ROADS.values()] == ["Forbidden"] * 4


@pytest.mark.parametrize("reason", ["two\r\nlines", 401, "x" * 513, "emoji 👋"])
def test_the_validator_checks_a_stored_reason(tmp_path: Path, reason: object) -> None:
    document = {
        "key": "k",
        "request": {"method": "GET", "url": "https://h/p"},
        "responses": [{"status": 401, "reason": reason, "body": {"text": ""}}],
        "version": 2,
    }
    path = tmp_path / "k.json"
    path.write_bytes(orjson.dumps(document))
    with pytest.raises(CassetteError, match=r"responses\[0\]\.reason"):
        read_run(str(path), None)
    document["responses"][0]["reason"] = "PermissionDenied"
    path.write_bytes(orjson.dumps(document))
    found = read_run(str(path), None)
    assert found is not None and found[1][0].reason == "PermissionDenied"


def test_show_prints_a_stored_reason(
    provider: ProviderSimulator, cassette_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ghostrun._tools import _cli

    (provider.raw_replies["denied"],) = REPLIES["azure-denied"]
    with pytest.warns(ghostrun.AuthFailureWarning):
        with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
            _requests(provider.url("/raw/denied"))
    (path,) = cassette_dir.glob("*.json")
    assert _cli.main(["show", str(path), "--cassette-dir", str(cassette_dir)]) == 0
    assert "status 401 reason 'PermissionDenied'" in capsys.readouterr().out
