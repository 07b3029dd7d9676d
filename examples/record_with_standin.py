"""Re-record the committed example cassettes against a local stand-in for OpenAI.

    .venv/bin/python examples/record_with_standin.py

This repository is built without network access, so the cassettes in
``examples/cassettes/`` were NOT recorded from api.openai.com. They were
recorded by this script, against a stand-in server on 127.0.0.1 that speaks
OpenAI's wire format: the loopback provider simulator of ghostrun's own test
suite (``tests/simulator.py``), answering with the scripted replies below.
The replies were written by people, not by a model.

How: the script starts the stand-in, then patches httpx2's two network
transports (in this process only) so a request for ``https://api.openai.com``
is sent to the stand-in instead. ghostrun wraps whatever transport the SDK
routes to, so it sees and stores the real URL; the cassettes hold
``https://api.openai.com/v1/chat/completions``, exactly as with a real key.
Then it runs both example suites and ``prompt_check.py`` in record mode.

The key is a fake (``sk-test-…``); the cassettes never hold it anyway.

To record real cassettes instead, with your own key (see examples/README.md):

    OPENAI_API_KEY=sk-... GHOSTRUN_MODE=record python -m pytest examples/pytest
    OPENAI_API_KEY=sk-... GHOSTRUN_MODE=record python -m unittest discover -s examples/unittest -t .
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import unittest
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CASSETTES = ROOT / "examples" / "cassettes"
FAKE_KEY = "sk-" + "test-standin-0000000000000000"

sys.path.insert(0, str(ROOT))  # for `examples.*` when run as `python examples/...py`

import httpx2  # noqa: E402


def _load_simulator() -> Any:
    """ghostrun's test-suite simulator, loaded from its file (tests/ is no package)."""
    spec = importlib.util.spec_from_file_location("standin_simulator", ROOT / "tests/simulator.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


ProviderSimulator = _load_simulator().ProviderSimulator

# -- the stand-in's scripted replies -------------------------------------------------------

REPLIES = {
    "broken pole": (
        "I'm so sorry your Trailblazer 2 tent arrived with a broken pole, that is not the "
        "start to a trip anyone wants. I've arranged a free replacement pole, which ships "
        "today, and you don't need to send anything back. If it hasn't arrived within five "
        "days, just reply here and I'll sort it out."
    ),
    "refund": (
        "Of course. You can return unworn items within 30 days of delivery for a full "
        "refund, and the refund reaches your card 5 to 7 business days after we receive "
        "the parcel. Start the return from the Orders page and print the free label."
    ),
    "waterproof": (
        "Thanks for asking! The Summit 40L backpack is water-resistant rather than "
        "waterproof, so for heavy rain I'd pair it with its rain cover. Happy trails!"
    ),
}

DOC_ANSWERS = {
    "return": (
        "You can return unworn items within 30 days of delivery for a full refund. "
        "Refunds reach your card 5 to 7 business days after we receive the return."
    ),
}


def standin_reply(body: dict[str, Any]) -> str:
    """What the stand-in model answers, from the request's messages."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return _order_answer(json.loads(last["content"]))
    system = str(messages[0].get("content", "")) if messages else ""
    question = str(last.get("content", "")).lower()
    table = DOC_ANSWERS if "ARTICLES:" in system else REPLIES
    for cue, reply in table.items():
        if cue in question:
            return reply
    return "I'm sorry, I don't know."


def _order_answer(order: dict[str, Any]) -> str:
    if "error" in order:
        return "I'm sorry, I couldn't find that order. Could you check the number?"
    if order["status"] == "shipped":
        return (
            f"Good news: your {order['item']} (order {order['order_id']}) has shipped with "
            f"{order['carrier']}, tracking number {order['tracking']}. It should arrive by "
            f"{order['eta']}."
        )
    return (
        f"Your {order['item']} (order {order['order_id']}) is still being prepared; "
        f"we expect to deliver it by {order['eta']}. I'm sorry it's taking a little longer."
    )


# -- routing api.openai.com to the stand-in, below ghostrun --------------------------------


def route_openai_to(standin: Any) -> None:
    """Send every api.openai.com request to the stand-in (this process only)."""
    sync_send = httpx2.HTTPTransport.handle_request
    async_send = httpx2.AsyncHTTPTransport.handle_async_request

    def redirected(request: httpx2.Request) -> httpx2.Request:
        if request.url.host != "api.openai.com":
            return request
        url = request.url.copy_with(scheme="http", host=standin.host, port=standin.port)
        return httpx2.Request(
            request.method,
            url,
            headers=request.headers,
            content=request.content,
            extensions=request.extensions,
        )

    def handle_request(self: httpx2.HTTPTransport, request: httpx2.Request) -> Any:
        return sync_send(self, redirected(request))

    async def handle_async_request(self: httpx2.AsyncHTTPTransport, request: httpx2.Request) -> Any:
        return await async_send(self, redirected(request))

    httpx2.HTTPTransport.handle_request = handle_request  # type: ignore[method-assign]
    httpx2.AsyncHTTPTransport.handle_async_request = handle_async_request  # type: ignore[method-assign]


# -- recording -------------------------------------------------------------------------------


def main() -> int:
    os.chdir(ROOT)
    os.environ.update(
        OPENAI_API_KEY=FAKE_KEY,
        GHOSTRUN_MODE="record",
        # Never ask a judge here: no verdict is cached unless a real judge produced it.
        GHOSTRUN_ON_JUDGE_UNAVAILABLE="skip",
        OLLAMA_HOST="http://127.0.0.1:9",
    )
    os.environ.pop("CI", None)
    for stale in CASSETTES.glob("*.json"):
        stale.unlink()
    shutil.rmtree(CASSETTES / "runs", ignore_errors=True)

    import pytest

    with ProviderSimulator() as standin:
        standin.reply = standin_reply
        route_openai_to(standin)
        failures = pytest.main(["examples/pytest", "-q"]) != 0
        suite = unittest.defaultTestLoader.discover("examples/unittest")
        failures |= not unittest.TextTestRunner(verbosity=1).run(suite).wasSuccessful()
        from examples import prompt_check

        failures |= prompt_check.main() != 0
        served = standin.served
    shutil.rmtree(CASSETTES / "runs", ignore_errors=True)
    return _report(served, failures)


def _report(served: int, failures: bool) -> int:
    files = sorted(CASSETTES.glob("*.json"))
    leaked = [f.name for f in files if FAKE_KEY in f.read_text(encoding="utf-8")]
    print(f"\nstand-in served {served} requests; {len(files)} cassettes in {CASSETTES}")
    if leaked:
        print(f"ERROR: the fake key is in {leaked}")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
