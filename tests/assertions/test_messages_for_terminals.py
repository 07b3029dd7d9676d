"""An assertion message quotes the replayed answer: its control sequences reach no terminal.

A cassette from a pull request can plant OSC 52 (writes the developer's clipboard),
OSC 8 (a disguised link), ``CSI 2J`` (clears the screen), the 8-bit CSI byte and
U+202E (right-to-left override) in an answer. Replayed through the real openai SDK, a
failing ``expect(...)``, ``expect_tool_calls(...)`` or judged check shows them as
visible escapes, by the one rule of `_core._safe_text.terminal`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._recording._trajectory import _unplayed_message

HOSTILE = (
    "\x1b]52;c;ZWNobyBvd25lZA==\x07"  # OSC 52: set the clipboard
    "\x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\"  # OSC 8: a disguised link
    "\x1b[2J"  # CSI 2J: clear the screen
    "\x9b31m"  # 8-bit CSI
    "\u202eexe.txt"  # right-to-left override
)
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def _assert_safe(message: str) -> None:
    assert not any(char in message for char in RAW), repr(message)
    assert "\\x1b]52;c;" in message and "\\u202e" in message, message


def _plant(cassette_dir: Path, replace: Callable[[str], str]) -> None:
    """Edit every string of every recorded answer, as a pull request could."""

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return replace(value) if isinstance(value, str) else value

    for path in cassette_dir.glob("*.json"):
        document = json.loads(path.read_text())
        document["responses"] = [
            {**response, "body": walk(response["body"])} for response in document["responses"]
        ]
        path.write_text(json.dumps(document))


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]


def _ask(provider: ProviderSimulator, tools: bool = False) -> Any:
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key="sk-placeholder", max_retries=0)
    return client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "Where is my order 42?"}],
        **({"tools": TOOLS} if tools else {}),
    )


def _replayed(provider: ProviderSimulator, cassette_dir: Path, tools: bool = False) -> Any:
    hosts = ["127.0.0.1"]
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=hosts):
        _ask(provider, tools)
    _plant(
        cassette_dir,
        lambda text: text.replace("Echo:", HOSTILE).replace("lookup_order", f"lookup{HOSTILE}"),
    )
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=hosts) as replay:
        reply = _ask(provider, tools)
    assert replay.replayed == 1
    return reply


def test_a_failed_contains_shows_a_planted_answer_escaped(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    text = _replayed(provider, cassette_dir).choices[0].message.content
    assert "\x1b]52;" in text  # the SDK handed the planted answer to the app
    with pytest.raises(ghostrun.ExpectationFailed) as failed:
        ghostrun.expect(text).contains("refund")
    _assert_safe(str(failed.value))
    assert failed.value.text == text  # the attribute keeps what was checked, unchanged


@pytest.mark.parametrize(
    "check",
    [
        lambda e: e.does_not_contain("Where"),
        lambda e: e.matches_regex(r"^refund$"),
        lambda e: e.is_valid_json(),
        lambda e: e.length_between(1, 5),
    ],
)
def test_every_plain_assertion_escapes_what_it_quotes(
    provider: ProviderSimulator, cassette_dir: Path, check: Callable[[Any], Any]
) -> None:
    text = _replayed(provider, cassette_dir).choices[0].message.content
    with pytest.raises(ghostrun.ExpectationFailed) as failed:
        check(ghostrun.expect(text))
    _assert_safe(str(failed.value))


def test_a_failed_tool_call_check_shows_a_planted_tool_name_escaped(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.tool_call = True
    completion = _replayed(provider, cassette_dir, tools=True)
    assert "\x1b" in completion.choices[0].message.tool_calls[0].function.name
    with pytest.raises(ghostrun.ExpectationFailed) as failed:
        ghostrun.expect_tool_calls(completion).called("lookup_order")
    _assert_safe(str(failed.value))


def test_a_judges_reason_is_shown_escaped(provider: ProviderSimulator, cassette_dir: Path) -> None:
    text = _replayed(provider, cassette_dir).choices[0].message.content
    judge = ghostrun.CallableJudge(lambda answer, criterion: (False, f"it says {answer}"))
    with ghostrun.session(mode="auto", cassette_dir=cassette_dir):
        with pytest.raises(ghostrun.ExpectationFailed) as failed:
            ghostrun.expect(text, judge=judge).satisfies("mentions a refund")
    _assert_safe(str(failed.value))


def test_unplayed_steps_show_a_planted_trajectory_escaped(tmp_path: Path) -> None:
    """The trajectory file is committed too: its prompts and tool names are quoted."""
    step = {
        "session": 0,
        "method": "POST",
        "endpoint": f"/v1/chat{HOSTILE}",
        "key": "0" * 32,
        "response": 0,
        "prompt": HOSTILE,
        "model": "m",
        "tool_calls": [{"name": f"lookup{HOSTILE}", "arguments": {}}],
        "tokens": 0,
    }
    message = _unplayed_message(f"test_x{HOSTILE}", [step, step], 1, tmp_path / "t.json")
    _assert_safe(str(ghostrun.UnplayedSteps(message)))
