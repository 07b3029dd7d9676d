"""Flows that read their next URL from a response header replay (DESIGN §3, exact; §4).

google-genai's ``files.upload`` is a resumable upload: the first response names, in
``x-goog-upload-url``, the URL the bytes go to. A cassette that drops the header can
never replay it; one that keeps it must still hold no credential.
"""

from __future__ import annotations

from pathlib import Path

from google import genai
from google.genai import types
from helpers import cassettes
from simulator import ProviderSimulator

import ghostrun

KEY = "AIza" + "SyUploadFlowKey0123456789abcdefghijk"  # fake, assembled at run time


def _upload(base_url: str, path: Path) -> types.File:
    client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=base_url))
    return client.files.upload(file=path, config={"mime_type": "text/plain"})


def test_a_resumable_upload_replays_from_its_cassettes(
    provider: ProviderSimulator, cassette_dir: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("the order A123 shipped on Monday\n")
    base_url, hosts = provider.base_url, [provider.base_url]
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=hosts) as recording:
        live = _upload(base_url, notes)
    assert (recording.recorded, provider.served) == (2, 2)  # the start, then the bytes
    provider.stop()

    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=hosts) as replay:
        replayed = _upload(base_url, notes)

    assert (replay.replayed, replay.misses) == (2, [])
    assert (replayed.name, replayed.size_bytes) == (live.name, live.size_bytes)
    started = next(c for c in cassettes(cassette_dir) if "upload_id" not in c["request"]["url"])
    assert "upload_id=" in started["responses"][0]["headers"]["x-goog-upload-url"]
    assert KEY not in "".join(p.read_text() for p in cassette_dir.rglob("*.json"))


def test_a_credential_parameter_in_the_upload_url_is_masked(
    provider: ProviderSimulator, cassette_dir: Path, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    signature = "c2lnbmVkLWJ5LXRoZS1wcm92aWRlcg0123456789"  # the provider's, not the request's
    provider.extra_response_headers = {
        "x-goog-upload-url": provider.url(
            f"/upload/v1beta/files?upload_id=u1&upload_signature={signature}"
        )
    }
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=[provider.base_url]):
        _upload(provider.base_url, notes)

    written = "".join(p.read_text() for p in cassette_dir.rglob("*.json"))
    assert "upload_id=u1&upload_signature=" in written
    assert signature not in written
