"""The one leak scanner: is a secret anywhere in what ghostrun wrote?

A secret counts as written in any of the ways a file may spell it: plain,
URL-encoded, JSON-escaped, HTML-escaped, inside a base64 body; with
``pieces``, also any 12-character piece of it (half a key is a leak too) and
any base64 encoding of a longer text holding it.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import secrets as random_secrets
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from hypothesis import assume


def token(prefix: str = "", size: int = 20) -> str:
    return prefix + random_secrets.token_hex(size)


def encoded_forms(secret: str) -> set[str]:
    """The ways a secret can be spelled in a file."""
    escaped = json.dumps(secret)[1:-1]
    return {
        secret,
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
        escaped,
        escaped.replace("/", "\\/"),
        json.dumps(secret, ensure_ascii=False)[1:-1],
        html.escape(secret),
    }


def fragments(secret: str, size: int = 12) -> list[str]:
    """Every ``size``-character piece of a secret: half a key is a leak too."""
    return [secret[i : i + size] for i in range(max(1, len(secret) - size + 1))]


def base64_cores(secret: str) -> set[str]:
    """Text that any base64 encoding of a longer text holding ``secret`` contains."""
    cores = set()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + secret.encode()).decode()[4:-4]
        cores |= {encoded, encoded.replace("+", "-").replace("/", "_")}
    return cores


def leak_forms(leaks: Iterable[str], *, pieces: bool = False) -> dict[str, str]:
    """Each spelling that would show a secret, and the secret it shows."""
    forms: dict[str, str] = {}
    for secret in leaks:
        shown = {secret, *fragments(secret), *base64_cores(secret)} if pieces else {secret}
        for text in shown:
            forms.update(dict.fromkeys(encoded_forms(text), secret))
    return forms


def written_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*") if p.is_file())


def blobs(path: Path) -> Iterable[bytes]:
    """The file's bytes, and the decoded bytes of every base64 body in it."""
    data = path.read_bytes()
    yield data

    def walk(value: Any) -> Iterable[bytes]:
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "base64" and isinstance(item, str):
                    yield base64.b64decode(item)
                elif key == "chunks_base64" and isinstance(item, list):
                    yield from (base64.b64decode(chunk) for chunk in item)
                else:
                    yield from walk(item)
        elif isinstance(value, list):
            for item in value:
                yield from walk(item)

    with contextlib.suppress(ValueError):  # not JSON: the bytes alone
        yield from walk(json.loads(data))


def assert_not_on_disk(directory: Path, leaks: Iterable[str], *, pieces: bool = False) -> None:
    """No secret in any file under ``directory`` (with ``pieces``: nor any piece of one)."""
    files = written_files(directory)
    assert files, f"nothing was written under {directory}"
    forms = leak_forms(leaks, pieces=pieces)
    for path in files:
        for blob in blobs(path):
            for form, secret in forms.items():
                assert form.encode() not in blob, f"{secret!r} as {form!r} in {path}"


def assert_not_written(secret: str, written: Callable[[str], str]) -> None:
    """No piece of ``secret`` in the text ``written(secret)``, unless the same text with a
    random secret in its place spells that piece anyway."""
    forms = {form for piece in fragments(secret) for form in encoded_forms(piece)}
    assume(not any(form in written(uuid.uuid4().hex) for form in forms))
    text = written(secret)
    for form in forms:
        assert form not in text, form


def stored(directory: Path) -> list[dict[str, Any]]:
    """The cassettes written, parsed (not the .gitignore ghostrun writes beside them, nor the
    trajectories: `assert_not_on_disk` reads those too)."""
    return [
        json.loads(p.read_text())
        for p in written_files(directory)
        if p.suffix == ".json" and p.parent.name != "trajectories"
    ]


def only_cassette(directory: Path) -> dict[str, Any]:
    (cassette,) = stored(directory)
    return cassette
