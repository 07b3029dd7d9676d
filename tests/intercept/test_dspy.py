"""dspy's default engine (3.4 on): its vendored HTTP client, lm15, is a road like the others.

dspy sends through ``dspy._vendor.lm15`` (plain sockets, a hand-written
HTTP/1.1 request), not httpx. Recorded once against the loopback provider,
replayed identically with the provider receiving nothing more, sync and
async. With its hook missing, the guard names dspy as the caller.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._intercept import _lm15, _patch

LOOPBACK = ("127.0.0.1",)
QUICK = {"api_key": "sk-test", "cache": False, "num_retries": 0, "timeout": 5}


@pytest.fixture
def lm(provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "true")  # no model-price download
    import dspy

    return dspy.LM("openai/gpt-4o-mini", api_base=provider.url("/v1"), **QUICK)


def _cause(error: BaseException | None, kind: type[BaseException]) -> BaseException:
    """``error`` or the first of its causes that is a ``kind``."""
    while error is not None and not isinstance(error, kind):
        error = error.__cause__ or error.__context__
    if error is None:
        raise AssertionError(f"no {kind.__name__} among the causes")
    return error


def _calls(lm: Any) -> list[Any]:
    return [lm("Where is my refund?"), asyncio.run(lm.acall("Where is my parcel?"))]


def test_dspy_records_once_and_replays_identically_without_connecting(
    lm: Any, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="record") as rec:
        live = _calls(lm)
    assert (rec.recorded, rec.passed_through, provider.served) == (2, 0, 2)
    assert live == [["Echo: Where is my refund?"], ["Echo: Where is my parcel?"]]

    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as rep:
        replayed = _calls(lm)
    assert replayed == live
    assert rep.replayed == 2
    assert provider.served == 2  # not one request more: replay never connected


def test_dspy_keys_its_requests_as_the_httpx_road_does(
    lm: Any, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """The same request sent by httpx replays from the cassette dspy recorded."""
    import httpx

    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="record"):
        lm("Where is my refund?")
    sent = provider.last_request
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as rep:
        reply = httpx.post(
            provider.url(sent.path),
            content=sent.body,
            headers={"content-type": "application/json"},
        )
    assert rep.replayed == 1
    assert reply.json()["choices"][0]["message"]["content"] == "Echo: Where is my refund?"


@pytest.mark.parametrize("how", ["sync", "async"])
def test_without_its_hook_the_refusal_names_dspy_as_the_caller(
    how: str, lm: Any, provider: ProviderSimulator, cassette_dir: Path, monkeypatch: Any
) -> None:
    def check(adapter: Any) -> bool:
        raise ghostrun.UnsupportedLibrary("dspy 99.0 has no StdlibTransport.stream")

    monkeypatch.setattr(_lm15.Lm15Adapter, "check", check)
    _patch.forget_plan()  # the roads' last install is no longer what a session would find
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
        import dspy  # noqa: F401  (imported: its road is checked, and left unhooked)

        with pytest.raises(Exception) as raised:  # dspy wraps it in its LMUnexpectedError
            if how == "sync":
                lm("Where is my refund?")
            else:
                asyncio.run(lm.acall("Where is my refund?"))
    message = str(_cause(raised.value, ghostrun.UnsupportedLibrary))
    assert message.startswith("ghostrun: dspy (")  # the library the call came from
    assert "through dspy (lm15), a road ghostrun could not hook" in message
    assert provider.served == 0
