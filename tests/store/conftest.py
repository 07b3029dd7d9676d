"""Fixtures the store's tests share: one good cassette, recorded once a module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from simulator import ProviderSimulator

import ghostrun

LOOPBACK = ("127.0.0.1",)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def simulator() -> Iterator[ProviderSimulator]:
    with ProviderSimulator() as running:
        yield running


@pytest.fixture(scope="module")
def good(simulator: ProviderSimulator, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One recorded cassette, for each test of a module to copy and edit (or break)."""
    directory = tmp_path_factory.mktemp("good")
    with ghostrun.session(mode="record", cassette_dir=directory, hosts=LOOPBACK):
        httpx.post(simulator.url("/v1/chat/completions"), json=BODY)
    (path,) = directory.glob("*.json")
    return path
