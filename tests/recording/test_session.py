"""Sessions: modes, nesting, the thread and task stacks, and the patch's lifetime."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import httpx2
import pytest
import sdk_calls
from simulator import ProviderSimulator

import ghostrun
from ghostrun import Mode
from ghostrun._core._config import resolve_mode
from ghostrun._recording._session import current_session

LOOPBACK = ("127.0.0.1",)
HOOKED = [(lib, cls) for lib in (httpx, httpx2) for cls in (lib.Client, lib.AsyncClient)]


def originals() -> list[object]:
    return [cls.__dict__["_transport_for_url"] for _, cls in HOOKED]


# -- modes -------------------------------------------------------------------

MODE_CASES = [
    # (GHOSTRUN_MODE, CI, configure(mode), session(mode), expected)
    (None, None, None, None, Mode.AUTO),
    (None, "true", None, None, Mode.REPLAY),
    (None, "1", None, None, Mode.REPLAY),
    (None, "0", None, None, Mode.AUTO),
    (None, "false", None, None, Mode.AUTO),
    (None, "", None, None, Mode.AUTO),
    (None, "true", None, "auto", Mode.AUTO),  # code beats the CI default
    (None, "true", "record", None, Mode.RECORD),
    (None, None, "replay", "auto", Mode.AUTO),  # session beats configure
    ("replay", None, None, "record", Mode.REPLAY),  # the suite switch beats code
    ("record", "true", "auto", "replay", Mode.RECORD),
    ("REPLAY", None, None, None, Mode.REPLAY),
]


@pytest.mark.parametrize(("env", "ci", "configured", "code", "expected"), MODE_CASES)
def test_mode_precedence(
    monkeypatch: pytest.MonkeyPatch,
    env: str | None,
    ci: str | None,
    configured: str | None,
    code: str | None,
    expected: Mode,
) -> None:
    if env is not None:
        monkeypatch.setenv("GHOSTRUN_MODE", env)
    if ci is not None:
        monkeypatch.setenv("CI", ci)
    ghostrun.configure(mode=configured)
    try:
        assert resolve_mode(code) is expected
        assert ghostrun.session(mode=code).mode is expected
    finally:
        ghostrun.configure(mode=None)


def test_invalid_mode_lists_the_valid_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="'auto', 'record', 'replay'"):
        ghostrun.session(mode="replya")
    with pytest.raises(ValueError, match="invalid mode"):
        ghostrun.configure(mode="nope")
    monkeypatch.setenv("GHOSTRUN_MODE", "offline")
    with pytest.raises(ValueError, match="GHOSTRUN_MODE 'offline'"), ghostrun.session():
        pass


def test_environment_cassette_dir_and_hosts(
    monkeypatch: pytest.MonkeyPatch, provider: ProviderSimulator, tmp_path: Path
) -> None:
    monkeypatch.setenv("GHOSTRUN_CASSETTE_DIR", str(tmp_path / "from-env"))
    monkeypatch.setenv("GHOSTRUN_HOSTS", "example.invalid, 127.0.0.1")
    with ghostrun.session() as s:
        sdk_calls.openai_chat(provider.base_url)
    assert s.recorded == 1
    assert len(list((tmp_path / "from-env").glob("*.json"))) == 1


def test_host_port_patterns(provider: ProviderSimulator, cassette_dir: Path) -> None:
    with ghostrun.session(cassette_dir=cassette_dir, hosts=[f"127.0.0.1:{provider.port + 1}"]):
        sdk_calls.openai_chat(provider.base_url)
    assert not cassette_dir.exists()
    with ghostrun.session(cassette_dir=cassette_dir, hosts=[f"127.0.0.1:{provider.port}"]) as s:
        sdk_calls.openai_chat(provider.base_url)
    assert s.recorded == 1


# -- the patch ---------------------------------------------------------------


def test_patch_is_restored_by_identity_after_the_last_session() -> None:
    before = originals()
    with ghostrun.session():
        patched = originals()
        assert all(a is not b for a, b in zip(before, patched, strict=True))
        with ghostrun.session():
            assert originals() == patched
        assert originals() == patched  # still one session open
    assert all(a is b for a, b in zip(before, originals(), strict=True))


def test_patch_is_restored_after_an_exception_inside_the_block() -> None:
    before = originals()
    with pytest.raises(RuntimeError), ghostrun.session():
        raise RuntimeError("boom")
    assert all(a is b for a, b in zip(before, originals(), strict=True))
    assert current_session() is None


def test_patch_refcount_across_threads() -> None:
    before = originals()
    opened, release = threading.Event(), threading.Event()

    def hold() -> None:
        with ghostrun.session():
            opened.set()
            release.wait(5)

    worker = threading.Thread(target=hold)
    worker.start()
    opened.wait(5)
    with ghostrun.session():
        pass
    assert originals() != before  # the worker's session still holds the patch
    release.set()
    worker.join()
    assert all(a is b for a, b in zip(before, originals(), strict=True))


def test_missing_hook_leaves_that_road_alone_and_raises_on_its_first_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hook = httpx2.AsyncClient.__dict__["_transport_for_url"]
    monkeypatch.delattr(httpx2.AsyncClient, "_transport_for_url")
    base = httpx2.AsyncClient.__mro__[1]
    monkeypatch.setattr(base, "_transport_for_url", hook, raising=False)  # inherited: works
    before = httpx.Client.__dict__["_transport_for_url"]
    with ghostrun.session():
        assert httpx.Client.__dict__["_transport_for_url"] is not before  # httpx is hooked
        with pytest.raises(ghostrun.UnsupportedLibrary, match=r"AsyncClient\._transport_for_url"):
            httpx2.get("https://api.openai.com/v1/models")
    assert httpx.Client.__dict__["_transport_for_url"] is before


# -- nesting and the stacks --------------------------------------------------


def test_innermost_session_governs(provider: ProviderSimulator, tmp_path: Path) -> None:
    with ghostrun.session(cassette_dir=tmp_path / "outer", hosts=LOOPBACK) as outer:
        with ghostrun.session(cassette_dir=tmp_path / "inner", hosts=LOOPBACK) as inner:
            sdk_calls.openai_chat(provider.base_url, "inner")
        sdk_calls.openai_chat(provider.base_url, "outer")
    assert (outer.recorded, inner.recorded) == (1, 1)
    assert len(list((tmp_path / "inner").glob("*.json"))) == 1
    assert len(list((tmp_path / "outer").glob("*.json"))) == 1


def test_a_session_object_can_be_reentered_and_nested(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    s = ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK)
    with s:
        sdk_calls.openai_chat(provider.base_url)
        with s:
            sdk_calls.openai_chat(provider.base_url, "nested")
        assert current_session() is s
    assert current_session() is None
    with s:
        sdk_calls.openai_chat(provider.base_url)
    assert (s.recorded, s.replayed) == (2, 1)


def test_thread_pool_inside_a_session_records_into_it(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK) as s:
        with ThreadPoolExecutor(4) as pool:
            replies = list(
                pool.map(lambda i: sdk_calls.openai_chat(provider.base_url, f"p{i}"), range(8))
            )
    assert replies == [f"Echo: p{i}" for i in range(8)]
    assert s.recorded == 8 and len(list(cassette_dir.glob("*.json"))) == 8


def test_two_asyncio_tasks_with_their_own_sessions_never_mix(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    async def worker(name: str, gate: asyncio.Event, other: asyncio.Event) -> ghostrun.Session:
        async with ghostrun.session(cassette_dir=tmp_path / name, hosts=LOOPBACK) as s:
            gate.set()
            await other.wait()  # both sessions are open from here on
            for i in range(3):
                await sdk_calls.openai_async(provider.base_url, f"{name}{i}")
                await asyncio.sleep(0)
            return s

    async def main() -> list[ghostrun.Session]:
        a, b = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(worker("a", a, b), worker("b", b, a))

    sa, sb = asyncio.run(main())
    assert (sa.recorded, sb.recorded) == (6, 6)
    for name in ("a", "b"):
        prompts = {
            p.read_text().split('"content": "', 1)[1].split('"', 1)[0]
            for p in (tmp_path / name).glob("*.json")
        }
        assert all(prompt.startswith(name) for prompt in prompts), prompts


def test_decorator_sync_and_async(provider: ProviderSimulator, cassette_dir: Path) -> None:
    @ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK)
    def check() -> ghostrun.Session | None:
        sdk_calls.openai_chat(provider.base_url, "decorated")
        return current_session()

    @ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay")
    async def acheck() -> ghostrun.Session | None:
        await sdk_calls.openai_async(provider.base_url, "decorated")
        return current_session()

    first = check()
    assert first is not None and first.recorded == 1
    assert check().replayed == 1  # type: ignore[union-attr]
    assert check.__name__ == "check"
    with pytest.raises(ghostrun.CacheMiss):
        asyncio.run(acheck())
    assert current_session() is None


def test_a_mode_written_in_code_is_checked_even_when_the_suite_switch_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GHOSTRUN_MODE", "replay")
    with pytest.raises(ValueError, match="invalid mode 'replya'"):
        ghostrun.session(mode="replya")


def test_hosts_may_be_any_iterable(provider: ProviderSimulator, cassette_dir: Path) -> None:
    hosts = (h for h in ["127.0.0.1"])
    with ghostrun.session(cassette_dir=cassette_dir, hosts=hosts) as s:
        sdk_calls.openai_chat(provider.base_url)
    assert s.recorded == 1 and s.hosts == ("127.0.0.1",)


def test_repr_reads_cleanly_with_and_without_a_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_CURRENT_TEST")  # else the test's id names the session
    unnamed = ghostrun.session(mode="replay", cassette_dir=tmp_path)
    assert repr(unnamed) == "<ghostrun.Session mode=replay replayed=0 recorded=0 misses=0>"
    named = ghostrun.session(mode="auto", cassette_dir=tmp_path, name="t")
    assert repr(named) == "<ghostrun.Session t mode=auto replayed=0 recorded=0 misses=0>"
