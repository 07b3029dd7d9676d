"""``show``, ``review`` and ``report`` read the tool calls of a streamed step (DESIGN §7).

A streamed reply that calls a tool carries no text: its call comes in pieces
(OpenAI chat's ``tool_calls`` deltas, Anthropic's ``input_json_delta``). The
commands join them and show the call with its arguments, where they showed an
empty answer before.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._recording import _runlog, _trajectory
from ghostrun._tools import _cli

TOOL = {"name": "lookup_order", "description": "Look an order up", "parameters": {}}
CALLS = {
    "openai": (
        "/v1/chat/completions",
        {"model": "m", "stream": True, "tools": [{"type": "function", "function": TOOL}]},
    ),
    "anthropic": (
        "/v1/messages",
        {
            "model": "m",
            "stream": True,
            "max_tokens": 9,
            "tools": [{"name": TOOL["name"], "input_schema": {"type": "object"}}],
        },
    ),
}


def record(provider: ProviderSimulator, cassette_dir: Path, wire: str, order: str) -> str:
    provider.tool_call, provider.tool_args = True, {"order_id": order}
    path, body = CALLS[wire]
    body = {**body, "messages": [{"role": "user", "content": "Where is my order?"}]}
    saved = _trajectory.swap(_trajectory.Tracker())
    try:
        with _runlog.PROCESS.collecting(_runlog.RunLog()):
            with ghostrun.session(
                mode="record", cassette_dir=cassette_dir, hosts=[provider.base_url], name="t"
            ) as session:
                httpx.post(provider.url(path), json=body).read()
            _runlog.write_run()
    finally:
        _trajectory.swap(saved)
    (key,) = session._deck.used_keys
    return key


@pytest.mark.parametrize("wire", sorted(CALLS))
def test_show_review_and_report_show_a_streamed_tool_call(
    provider: ProviderSimulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    wire: str,
) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    key = record(provider, before, wire, "A123")
    record(provider, after, wire, "B9")
    capsys.readouterr()

    assert _cli.main(["show", key, "--cassette-dir", str(before)]) == 0
    shown = capsys.readouterr().out
    assert 'tool calls:\n    lookup_order({"order_id": "A123"})' in shown, shown

    assert _cli.main(["review", str(before), str(after)]) == 0
    reviewed = capsys.readouterr().out
    assert '-tool call: lookup_order({"order_id": "A123"})' in reviewed, reviewed
    assert '+tool call: lookup_order({"order_id": "B9"})' in reviewed, reviewed

    page = tmp_path / "report.html"
    assert _cli.main(["report", "--cassette-dir", str(after), "-o", str(page)]) == 0
    html = page.read_text()
    assert "tool call: lookup_order({&quot;order_id&quot;: &quot;B9&quot;})" in html, html
    assert "(no text)" not in html
