"""Guards of the replay hot path (issue 8) that count, never time, so they cannot flake.

The timings live in ``benchmarks/``; these tests pin what makes them good:
a replayed request reads one file and parses it once, opening a session
touches nothing on disk, and ``import ghostrun`` stays light.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import orjson
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core import _files

LOOPBACK = ("127.0.0.1",)
BODY = {"model": "gpt-sim", "messages": [{"role": "user", "content": "Where is my refund?"}]}


class DiskLog:
    """What ghostrun asked of the files under one directory."""

    def __init__(self, root: Path) -> None:
        self.root = os.path.realpath(root)
        self.opened: list[str] = []
        self.listed: list[str] = []
        self.parsed: list[bytes] = []

    def under_root(self, path: Any) -> bool:
        try:
            return os.path.realpath(os.fspath(path)).startswith(self.root)
        except TypeError:  # a file descriptor
            return False


@contextmanager
def watching(monkeypatch: pytest.MonkeyPatch, root: Path) -> Iterator[DiskLog]:
    """Record every open, listing and JSON parse of files under ``root``."""
    log = DiskLog(root)

    def spy(original: Callable[..., Any], into: list[str]) -> Callable[..., Any]:
        def wrapper(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            if log.under_root(path):
                into.append(os.fspath(path))
            return original(path, *args, **kwargs)

        return wrapper

    def parse_spy(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(data: Any, *args: Any, **kwargs: Any) -> Any:
            binary = isinstance(data, bytes | bytearray)
            log.parsed.append(bytes(data) if binary else str(data).encode())
            return original(data, *args, **kwargs)

        return wrapper

    with monkeypatch.context() as patch:
        for module, name in ((os, "open"), (io, "open"), (builtins, "open")):
            patch.setattr(module, name, spy(getattr(module, name), log.opened))
        for name in ("listdir", "scandir"):
            patch.setattr(os, name, spy(getattr(os, name), log.listed))
        patch.setattr(orjson, "loads", parse_spy(orjson.loads))
        patch.setattr(json, "loads", parse_spy(json.loads))
        yield log


def record_one(provider: ProviderSimulator, cassette_dir: Path) -> Path:
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        httpx2.post(provider.url("/v1/chat/completions"), json=BODY).raise_for_status()
    (path,) = cassette_dir.glob("*.json")
    return path


@pytest.mark.parametrize("lib", [httpx, httpx2], ids=["httpx", "httpx2"])
def test_a_replayed_request_reads_one_file_and_parses_it_once(
    provider: ProviderSimulator,
    cassette_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    lib: Any,
) -> None:
    path = record_one(provider, cassette_dir)
    file_bytes = path.read_bytes()
    with (
        lib.Client() as client,
        ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as session,
    ):
        with watching(monkeypatch, cassette_dir) as log:
            reply = client.post(provider.url("/v1/chat/completions"), json=BODY)
        assert session.replayed == 1

    assert reply.json()["choices"][0]["message"]["content"] == "Echo: Where is my refund?"
    assert [os.path.realpath(p) for p in log.opened] == [os.path.realpath(path)]
    assert log.parsed.count(file_bytes) == 1
    assert log.listed == []


def test_a_repeated_request_reads_its_cassette_again_but_never_another(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replay repeats the last response; nothing else on disk is touched for it."""
    path = record_one(provider, cassette_dir)
    with (
        httpx2.Client() as client,
        ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as session,
    ):
        with watching(monkeypatch, cassette_dir) as log:
            for _ in range(3):
                client.post(provider.url("/v1/chat/completions"), json=BODY).raise_for_status()
        assert session.replayed == 3

    assert {os.path.realpath(p) for p in log.opened} == {os.path.realpath(path)}
    assert len(log.opened) <= 3
    assert log.listed == []


def test_recording_a_new_request_looks_for_its_cassette_once_then_creates_it_once(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Auto mode: the replay attempt finds no file; the write creates it, taking no lock.

    One file written without a name (``O_TMPFILE``; else under a temporary name), linked
    to the name only if no other writer made it meanwhile (`tests/store/test_store.py`
    has that writer: the lock is then taken and the file read again). The directory is
    synced once, when the session closes (`tests/recording/test_session_cost.py`), not
    during the request.
    """
    cassette_dir.mkdir(parents=True, exist_ok=True)
    with (
        httpx2.Client() as client,
        ghostrun.session(mode="auto", cassette_dir=cassette_dir, hosts=LOOPBACK) as session,
    ):
        with watching(monkeypatch, cassette_dir) as log:
            client.post(provider.url("/v1/chat/completions"), json=BODY).raise_for_status()
        assert session.recorded == 1

    (path,) = cassette_dir.glob("*.json")
    names = [os.path.basename(p) for p in log.opened]
    temp = f".{path.name}.ghostrun-tmp-{os.getpid()}-"
    assert names[0] == path.name and len(names) == 2, names
    assert names[1] == cassette_dir.name if _files._UNNAMED else names[1].startswith(temp), names
    assert log.listed == []


def test_opening_a_session_neither_lists_nor_reads_the_cassette_dir(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_one(provider, cassette_dir)
    for i in range(20):  # more cassettes: none of them may be looked at
        (cassette_dir / f"{i:032x}.json").write_text("{}")
    for mode in ("replay", "auto", "record"):
        session = ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=LOOPBACK)
        with watching(monkeypatch, cassette_dir) as log:
            session.__enter__()
        try:
            assert log.opened == [] and log.listed == [] and log.parsed == [], mode
        finally:
            session.__exit__(None, None, None)


def test_import_ghostrun_imports_neither_ollama_nor_pytest_nor_aiohttp() -> None:
    heavy = ("ollama", "pytest", "_pytest", "aiohttp")
    code = (
        f"import sys, ghostrun\nprint([m for m in sys.modules if m.split('.')[0] in {heavy!r}])\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GHOSTRUN_", "PYTEST_"))}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]", out.stdout
