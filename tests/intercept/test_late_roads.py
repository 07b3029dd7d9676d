"""Roads whose library is imported only after the first session opened (DESIGN §1).

Opening a session imports no HTTP library: a road whose library is not
imported yet is patched the moment the library is imported while the roads
are installed, and the last session to close restores it with the others.
Each case runs in a fresh interpreter, since this process's import state is
the whole suite's (every library here is long imported).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
from pathlib import Path

import aiohttp
import httpx
import pytest
import requests

import ghostrun
from ghostrun._intercept import _patch
from tests.fresh import run_fresh
from tests.simulator import ProviderSimulator

LIBRARIES = ("httpx", "httpx2", "aiohttp", "urllib3", "websockets", "requests")
BODY = {"model": "m", "messages": [{"role": "user", "content": "imported late"}]}

AIOHTTP_POST = """
async def post():
    async with aiohttp.ClientSession() as client:
        async with client.post(URL, json=BODY) as response:
            return await response.text()
"""

# library: (the import, the call returning the body's text, the hooked class, its attribute)
ROADS: dict[str, tuple[str, str, str, str]] = {
    "httpx": (
        "import httpx",
        "httpx.post(URL, json=BODY).text",
        "httpx.Client",
        "_transport_for_url",
    ),
    "requests": (
        "import requests, urllib3",
        "requests.post(URL, json=BODY).text",
        "urllib3.connectionpool.HTTPConnectionPool",
        "_make_request",
    ),
    "aiohttp": (
        "import asyncio, aiohttp" + AIOHTTP_POST,
        "asyncio.run(post())",
        "aiohttp.ClientSession",
        "_request",
    ),
}

LATE = """
import json, sys
import ghostrun
URL, BODY, HOSTS, CASSETTES = {url!r}, {body!r}, {hosts!r}, {cassettes!r}
with ghostrun.session(mode="replay", cassette_dir=CASSETTES, hosts=HOSTS, name="late") as s:
    imported_at_open = {owner!r}.partition(".")[0] in sys.modules
{imports}
    text = {call}
    hooked = {owner}.__dict__[{attr!r}]
    replayed = s.replayed
original = {owner}.__dict__[{attr!r}]
print(json.dumps({{
    "imported_at_open": imported_at_open,
    "text": text,
    "replayed": replayed,
    "hooked": hooked is not original,
    "restored": getattr(hooked, "__wrapped__", None) is original,
}}))
"""


def test_opening_a_session_imports_no_http_library() -> None:
    code = (
        "import json, sys, ghostrun\n"
        f"libraries = {LIBRARIES!r}\n"
        "before = [m for m in libraries if m in sys.modules]\n"
        "with ghostrun.session(mode='replay'):\n"
        "    opened = [m for m in libraries if m in sys.modules]\n"
        "print(json.dumps([before, opened]))\n"
    )
    assert run_fresh(code) == [[], []]


def record(library: str, url: str) -> str:
    """The call, made here through ``library`` (imported long ago) and recorded live."""
    if library == "httpx":
        return httpx.post(url, json=BODY).text
    if library == "requests":
        return requests.post(url, json=BODY).text

    async def post() -> str:
        async with aiohttp.ClientSession() as client, client.post(url, json=BODY) as response:
            return await response.text()

    return asyncio.run(post())


@pytest.mark.parametrize("library", sorted(ROADS))
def test_a_library_imported_inside_a_session_is_replayed_and_restored_at_close(
    library: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    url, hosts = provider.url("/v1/chat/completions"), [provider.base_url]
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=hosts, name="late"):
        live = record(library, url)
    served = provider.served
    assert served == 1

    imports, call, owner, attr = ROADS[library]
    indented = "\n".join("    " + line for line in imports.splitlines())
    code = LATE.format(
        url=url,
        body=BODY,
        hosts=hosts,
        cassettes=str(cassette_dir),
        imports=indented,
        call=call,
        owner=owner,
        attr=attr,
    )
    result = run_fresh(code)

    # Replayed by the road (the guard alone would refuse it as a miss), never sent.
    assert result == {
        "imported_at_open": False,
        "text": live,
        "replayed": 1,
        "hooked": True,
        "restored": True,
    }
    assert provider.served == served


def test_an_unpatchable_library_imported_late_imports_and_its_calls_are_refused() -> None:
    """Loud, never a silent pass-through: the import works, the road's first call raises."""
    code = """
import json, sys
import ghostrun
from ghostrun._intercept import _httpx

def check(adapter):
    raise ghostrun.UnsupportedLibrary(f"{adapter.module_name} has no hook")

_httpx.HttpxFamilyAdapter.check = check
errors = []
with ghostrun.session(mode="auto"):
    import httpx
    for _ in range(2):
        try:
            httpx.get("https://api.openai.com/v1/models")
        except ghostrun.UnsupportedLibrary as error:
            errors.append(str(error).splitlines()[1].strip())
print(json.dumps(errors))
"""
    assert run_fresh(code) == ["httpx has no hook"] * 2


@pytest.mark.parametrize(
    ("statement", "module", "finder"),
    [
        ("import websockets.sync.client", "websockets.sync.client", "_sync_hook"),
        ("import websockets.asyncio.client", "websockets.asyncio.client", "_async_hook"),
    ],
)
def test_websockets_imported_by_a_client_module_inside_a_session_is_hooked_then_restored(
    statement: str, module: str, finder: str
) -> None:
    """Importing a client module imports the package first: both clients are hooked then.

    The hook is the one the installed websockets has (``connect``/``__await_impl__``
    before 17, ``reconnect.connect``/``connect.connect`` from 17 on).
    """
    code = (
        "import json, sys, ghostrun\n"
        "from ghostrun._intercept import _websockets\n"
        "with ghostrun.session(mode='replay'):\n"
        "    before = 'websockets' in sys.modules\n"
        f"    {statement}\n"
        f"    owner, attr = _websockets.{finder}({module})\n"
        "    hooked = owner.__dict__[attr]\n"
        "original = owner.__dict__[attr]\n"
        "print(json.dumps([before, hooked is not original, hooked.__wrapped__ is original]))\n"
    )
    assert run_fresh(code) == [False, True, True]


def _road(road: str) -> list[_patch.Adapter]:
    """A road's adapters, made fresh."""
    adapters: list[_patch.Adapter] = importlib.import_module(
        f"{_patch.__package__}.{road}"
    ).adapters()
    return adapters


@pytest.mark.parametrize(
    ("road", "index"),
    [
        pytest.param(road, i, id=f"{road.lstrip('_')}-{adapter.waits_for}")
        for road in _patch.ROADS
        for i, adapter in enumerate(_road(road))
    ],
)
def test_an_adapter_whose_library_is_not_installed_stands_aside(
    road: str, index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its check says False and raises nothing: the road is skipped, not an error."""
    adapter = _road(road)[index]
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == adapter.waits_for else real(name, *a),
    )
    assert adapter.check() is False
