"""``expect()``: text extraction from every SDK, each check passing and failing.

SDK responses are REAL objects, built by the SDKs' own types from wire JSON
and, at the end, returned by the SDKs from the loopback simulator. The judge
is replaced at ``ghostrun._assertions._expect._grade`` / ``_agrade`` (the seam in front of
``_verdicts``), except in the tests that check the real ``_verdicts`` wiring.
"""

from __future__ import annotations

import inspect
import json
import pickle
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import groq
import ollama
import openai
import pytest
from anthropic.types import Message as AnthropicMessage
from google import genai
from google.genai import types as gtypes
from groq.types.chat import ChatCompletion as GroqChatCompletion
from helpers import ROOT
from openai.types.chat import ChatCompletion, ChatCompletionChunk, ChatCompletionMessage
from openai.types.responses import Response, ResponseCompletedEvent, ResponseTextDeltaEvent
from simulator import ProviderSimulator
from wire import anthropic_message, chat, chunk, gemini, responses

import ghostrun._assertions._expect as expect_module
from ghostrun._assertions._expect import Expectation, ExpectationFailed, expect, expect_tool_calls
from ghostrun._assertions._extract import extract_text
from ghostrun._assertions._tool_calls import ToolCallExpectation

REPLY = "Sorry about the delay! Your refund of $12.50 is on its way."


OPENAI_CHAT = chat({"role": "assistant", "content": REPLY, "refusal": None})
REFUSAL = chat({"role": "assistant", "content": None, "refusal": "I can't help with that."})
RESPONSES = responses(
    [
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": "Sorry about the delay! ", "annotations": []},
                {
                    "type": "output_text",
                    "text": REPLY[len("Sorry about the delay! ") :],
                    "annotations": [],
                },
            ],
        },
    ]
)
RESPONSES_REFUSAL = responses(
    [
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "refusal", "refusal": "I can't help with that."}],
        }
    ]
)
ANTHROPIC = anthropic_message(
    [
        {"type": "thinking", "thinking": "Apologise first.", "signature": "sig"},
        {"type": "text", "text": "Sorry about the delay! "},
        {"type": "text", "text": REPLY[len("Sorry about the delay! ") :]},
        {"type": "tool_use", "id": "toolu_1", "name": "log", "input": {}},
    ]
)
GEMINI = gemini(
    [
        {"text": "Thinking about refunds.", "thought": True},
        {"text": REPLY},
        {"functionCall": {"name": "log", "args": {}}},
    ]
)
OLLAMA_CHAT = {
    "model": "llama3.2:3b",
    "created_at": "2025-01-01T00:00:00Z",
    "message": {"role": "assistant", "content": REPLY, "thinking": "hmm"},
    "done": True,
}
OLLAMA_GENERATE = {
    "model": "llama3.2:3b",
    "created_at": "2025-01-01T00:00:00Z",
    "response": REPLY,
    "done": True,
}
PIECES = ["Sorry about the delay! ", "Your refund of $12.50 ", "is on its way."]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(REPLY, REPLY, id="str"),
        pytest.param("", "", id="empty-str"),
        # OpenAI chat
        pytest.param(ChatCompletion.model_validate(OPENAI_CHAT), REPLY, id="openai"),
        pytest.param(OPENAI_CHAT, REPLY, id="openai-dict"),
        pytest.param(
            ChatCompletion.model_validate(OPENAI_CHAT).choices[0].message, REPLY, id="openai-msg"
        ),
        pytest.param(
            ChatCompletion.model_validate(REFUSAL), "I can't help with that.", id="openai-refusal"
        ),
        pytest.param(
            chat({"role": "assistant", "content": None, "tool_calls": []}), "", id="openai-no-text"
        ),
        pytest.param(
            chat(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                }
            ),
            "ab",
            id="openai-compatible-content-parts",
        ),
        pytest.param(
            {"object": "text_completion", "choices": [{"index": 0, "text": REPLY}]},
            REPLY,
            id="legacy-completion",
        ),
        pytest.param(GroqChatCompletion.model_validate(OPENAI_CHAT), REPLY, id="groq"),
        # OpenAI Responses
        pytest.param(Response.model_validate(RESPONSES), REPLY, id="responses"),
        pytest.param(RESPONSES, REPLY, id="responses-dict"),
        pytest.param({**RESPONSES, "output_text": "as given"}, "as given", id="responses-js-dict"),
        pytest.param(
            Response.model_validate(RESPONSES_REFUSAL),
            "I can't help with that.",
            id="responses-refusal",
        ),
        # Anthropic
        pytest.param(AnthropicMessage.model_validate(ANTHROPIC), REPLY, id="anthropic"),
        pytest.param(ANTHROPIC, REPLY, id="anthropic-dict"),
        pytest.param(
            AnthropicMessage.model_validate(ANTHROPIC).content[1],
            "Sorry about the delay! ",
            id="anthropic-block",
        ),
        # Gemini
        pytest.param(gtypes.GenerateContentResponse.model_validate(GEMINI), REPLY, id="gemini"),
        pytest.param(GEMINI, REPLY, id="gemini-dict"),
        pytest.param(
            gtypes.GenerateContentResponse.model_validate(GEMINI).model_dump(),
            REPLY,
            id="gemini-model-dump",
        ),
        pytest.param(
            {"candidates": [], "promptFeedback": {"blockReason": "SAFETY"}}, "", id="gemini-blocked"
        ),
        # Ollama
        pytest.param(ollama.ChatResponse.model_validate(OLLAMA_CHAT), REPLY, id="ollama-chat"),
        pytest.param(OLLAMA_CHAT, REPLY, id="ollama-chat-dict"),
        pytest.param(
            ollama.GenerateResponse.model_validate(OLLAMA_GENERATE), REPLY, id="ollama-generate"
        ),
        pytest.param(OLLAMA_GENERATE, REPLY, id="ollama-generate-dict"),
        # streams, collected by the caller
        pytest.param(PIECES, REPLY, id="text-deltas"),
        pytest.param(
            [ChatCompletionChunk.model_validate(chunk(p)) for p in [None, *PIECES]]
            + [ChatCompletionChunk.model_validate({**chunk(None), "choices": []})],
            REPLY,
            id="openai-chunks",
        ),
        pytest.param(
            [chunk(PIECES[0]), chunk("other choice", index=1), chunk(PIECES[1] + PIECES[2])],
            REPLY,
            id="openai-chunks-n2",
        ),
        pytest.param(
            [
                ResponseTextDeltaEvent.model_validate(
                    {
                        "type": "response.output_text.delta",
                        "delta": p,
                        "item_id": "msg_1",
                        "output_index": 0,
                        "content_index": 0,
                        "sequence_number": i,
                        "logprobs": [],
                    }
                )
                for i, p in enumerate(PIECES)
            ]
            + [
                ResponseCompletedEvent.model_validate(
                    {"type": "response.completed", "sequence_number": 9, "response": RESPONSES}
                )
            ],
            REPLY,
            id="responses-events",
        ),
        pytest.param(
            [
                ollama.ChatResponse.model_validate(
                    {**OLLAMA_CHAT, "done": False, "message": {"role": "assistant", "content": p}}
                )
                for p in PIECES
            ],
            REPLY,
            id="ollama-chunks",
        ),
        pytest.param(
            [gtypes.GenerateContentResponse.model_validate(gemini([{"text": p}])) for p in PIECES],
            REPLY,
            id="gemini-chunks",
        ),
    ],
)
def test_extract_text(value: Any, text: str) -> None:
    assert extract_text(value) == text
    assert expect(value).text == text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (42, "cannot read reply text from int"),
        (b"bytes", "cannot read reply text from bytes"),
        ({"foo": 1}, "cannot read reply text from dict"),
        (object(), "cannot read reply text from object"),
        ([], "cannot read reply text from an empty list"),
        ([1], "item 0 is int"),
        (
            [ChatCompletion.model_validate(OPENAI_CHAT)],
            "item 0 is openai.types.chat.chat_completion.ChatCompletion, not a stream chunk",
        ),
        (
            ChatCompletion.model_validate({**OPENAI_CHAT, "choices": []}),
            "cannot read reply text from openai.types.chat.chat_completion.ChatCompletion: "
            "it has no choices",
        ),
    ],
)
def test_unreadable_values_are_a_type_error_naming_the_type(value: Any, message: str) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        expect(value)


# -- deterministic checks ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    [
        pytest.param(lambda e: e.contains("refund"), id="contains"),
        pytest.param(lambda e: e.contains("REFUND", case_sensitive=False), id="contains-nocase"),
        pytest.param(lambda e: e.does_not_contain("Refund"), id="does_not_contain"),
        pytest.param(lambda e: e.does_not_contain("cancel", False), id="does_not_contain-nocase"),
        pytest.param(lambda e: e.matches_regex(r"\$\d+\.\d{2}"), id="regex"),
        pytest.param(lambda e: e.matches_regex(re.compile(r"^sorry", re.I)), id="regex-compiled"),
        pytest.param(lambda e: e.matches_regex(r"^sorry", re.IGNORECASE), id="regex-flags"),
        pytest.param(lambda e: e.length_between(10, 100), id="length"),
        pytest.param(lambda e: e.length_between(len(REPLY), len(REPLY)), id="length-inclusive"),
        pytest.param(lambda e: e.length_between(None, 100), id="length-no-min"),
        pytest.param(lambda e: e.length_between(1, None), id="length-no-max"),
    ],
)
def test_deterministic_checks_pass_and_chain(check: Any) -> None:
    expectation = expect(REPLY)

    assert check(expectation) is expectation


@pytest.mark.parametrize(
    ("check", "kind", "expected", "found"),
    [
        pytest.param(
            lambda e: e.contains("cancel"),
            "contains",
            "the text contains 'cancel'",
            "'cancel' is not in the text",
            id="contains",
        ),
        pytest.param(
            lambda e: e.contains("sorry"),
            "contains",
            "the text contains 'sorry'",
            "'sorry' is not in the text",
            id="contains-is-case-sensitive",
        ),
        pytest.param(
            lambda e: e.does_not_contain("REFUND", case_sensitive=False),
            "does_not_contain",
            "the text does not contain 'REFUND' (ignoring case)",
            "found at character 28: Sorry about the delay! Your refund of $12.50 is on its way.",
            id="does_not_contain",
        ),
        pytest.param(
            lambda e: e.matches_regex(r"\d+ days"),
            "matches_regex",
            "the text matches the regex /\\d+ days/",
            "no match anywhere in the text",
            id="regex",
        ),
        pytest.param(
            lambda e: e.length_between(1, 20),
            "length_between",
            "the text has between 1 and 20 characters",
            f"it has {len(REPLY)} characters",
            id="length-too-long",
        ),
        pytest.param(
            lambda e: e.length_between(100, None),
            "length_between",
            "the text has at least 100 characters",
            f"it has {len(REPLY)} characters",
            id="length-too-short",
        ),
        pytest.param(
            lambda e: e.is_valid_json(),
            "is_valid_json",
            "the text is valid JSON",
            "not valid JSON: Expecting value: line 1 column 1 (char 0)",
            id="json",
        ),
    ],
)
def test_deterministic_checks_fail_with_a_clear_message(
    check: Any, kind: str, expected: str, found: str
) -> None:
    with pytest.raises(ExpectationFailed) as info:
        check(expect(REPLY))

    failure = info.value
    assert isinstance(failure, AssertionError)
    assert str(failure) == (
        f"expected: {expected}\nfound:    {found}\ntext ({len(REPLY)} chars):\n    {REPLY}"
    )
    assert (failure.kind, failure.text, failure.reason, failure.judge) == (kind, REPLY, found, None)
    assert failure.criterion == expected.removeprefix("the text ")


@pytest.mark.parametrize(
    ("text", "schema"),
    [
        ('{"order_id": "A123", "qty": 2}', None),
        ("  [1, 2]\n", None),
        ("null", None),
        (
            '{"order_id": "A123", "qty": 2}',
            {
                "type": "object",
                "required": ["order_id"],
                "properties": {"qty": {"type": "integer"}},
            },
        ),
    ],
)
def test_is_valid_json_passes(text: str, schema: Any) -> None:
    expect(text).is_valid_json(schema)


@pytest.mark.parametrize(
    ("text", "schema", "found"),
    [
        (
            '{"a": 1,}',
            None,
            "not valid JSON: Expecting property name enclosed in double quotes: line 1 column 9",
        ),
        ('```json\n{"a": 1}\n```', None, "(the text is wrapped in a ``` code fence)"),
        ('{"score": NaN}', None, "not valid JSON: NaN is not valid JSON"),
        (
            '{"order_id": 123, "items": [{"qty": "2"}]}',
            {
                "type": "object",
                "required": ["order_id", "status"],
                "properties": {
                    "order_id": {"type": "string"},
                    "items": {
                        "type": "array",
                        "items": {"properties": {"qty": {"type": "integer"}}},
                    },
                },
            },
            "$: missing required property 'status'\n"
            "          $.order_id: expected string, got integer 123\n"
            '          $.items[0].qty: expected integer, got string "2"',  # in schema order
        ),
        (
            '{"qty": true}',
            {"properties": {"qty": {"type": "integer"}}},
            "$.qty: expected integer, got boolean true",
        ),
    ],
)
def test_is_valid_json_fails_naming_the_problem(text: str, schema: Any, found: str) -> None:
    with pytest.raises(ExpectationFailed) as info:
        expect(text).is_valid_json(schema)

    assert found in str(info.value)
    assert info.value.kind == "is_valid_json"


def test_is_valid_json_refuses_a_schema_it_cannot_check() -> None:
    with pytest.raises(ValueError, match="unsupported JSON Schema keyword 'uniqueItems'"):
        expect("[1, 1]").is_valid_json({"type": "array", "uniqueItems": True})


@pytest.mark.parametrize(
    "call",
    [
        lambda e: e.contains(""),
        lambda e: e.length_between(10, 5),
        lambda e: e.contains_intent("  "),
        lambda e: e.tone_is(""),
        lambda e: e.satisfies(""),
        lambda e: e.is_grounded_in(""),
    ],
)
def test_misuse_is_a_value_error_not_a_failure(call: Any) -> None:
    with pytest.raises(ValueError):
        call(expect(REPLY))


def test_looking_for_a_non_string_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="expected a string to look for, got int"):
        expect(REPLY).contains(12)  # type: ignore[arg-type]


def test_long_text_is_shortened_in_the_middle_of_the_message_only() -> None:
    text = "A" * 1500 + "MIDDLE" + "Z" * 1500

    with pytest.raises(ExpectationFailed) as info:
        expect(text).contains("refund")

    message = str(info.value)
    assert (
        "text (3006 chars):\n    " + "A" * 1000 + "\n    [... 1006 characters omitted ...]\n    "
        in (message)
    )
    assert message.endswith("Z" * 1000)
    assert "MIDDLE" not in message
    assert info.value.text == text


def test_multiline_text_is_indented_and_empty_text_is_named() -> None:
    with pytest.raises(ExpectationFailed) as info:
        expect("line one\n\nline three").contains("refund")
    assert str(info.value).endswith("text (20 chars):\n    line one\n    \n    line three")

    with pytest.raises(ExpectationFailed) as info:
        expect("").contains("refund")
    assert str(info.value).endswith("text: (empty)")


# -- judge-backed checks -------------------------------------------------------------------------


@dataclass(frozen=True)
class FakeVerdict:
    """The ``_verdicts.Verdict`` interface."""

    passed: bool
    reason: str
    judge: str = "ollama:llama3.2:3b"
    votes: int = 1
    flip_rate: float = 0.0
    cached: bool = False


class FakeJudge:
    """Stands in for ``_verdicts.grade``/``agrade``; remembers what it was asked."""

    def __init__(self, verdict: FakeVerdict) -> None:
        self.verdict = verdict
        self.asked: list[tuple[str, str, Any]] = []

    def grade(self, text: str, criterion: str, judge: Any) -> FakeVerdict:
        self.asked.append((text, criterion, judge))
        return self.verdict

    async def agrade(self, text: str, criterion: str, judge: Any) -> FakeVerdict:
        return self.grade(text, criterion, judge)


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> FakeJudge:
    fake = FakeJudge(FakeVerdict(True, "It apologises."))
    monkeypatch.setattr(expect_module, "_grade", fake.grade)
    monkeypatch.setattr(expect_module, "_agrade", fake.agrade)
    return fake


CONTEXT = "Refunds are issued within 5 business days of the return arriving."
JUDGED = [
    pytest.param(
        "contains_intent",
        ("an apology",),
        "The text expresses or contains this intent: an apology",
        "the text expresses the intent: an apology",
        id="contains_intent",
    ),
    pytest.param(
        "does_not_contain_intent",
        ("blaming the customer",),
        "The text does NOT express or contain this intent anywhere: blaming the customer",
        "the text does not express the intent: blaming the customer",
        id="does_not_contain_intent",
    ),
    pytest.param(
        "tone_is",
        ("empathetic",),
        "The overall tone of the text is empathetic.",
        "the tone of the text is empathetic",
        id="tone_is",
    ),
    pytest.param(
        "satisfies",
        ("Mentions the refund amount.",),
        "Mentions the refund amount.",
        "the text satisfies: Mentions the refund amount.",
        id="satisfies",
    ),
    pytest.param(
        "is_grounded_in",
        (CONTEXT,),
        "Every claim in the text is supported by the CONTEXT below. The text states no facts, "
        "numbers or named entities that are not in the CONTEXT. Leaving things out is fine; "
        f"adding things is not.\n\nCONTEXT:\n{CONTEXT}",
        "every claim in the text is supported by the context",
        id="is_grounded_in",
    ),
]


@pytest.mark.parametrize(("method", "args", "criterion", "expected"), JUDGED)
def test_judged_checks_pass_and_ask_the_judge_the_criterion(
    judge: FakeJudge, method: str, args: tuple[str], criterion: str, expected: str
) -> None:
    expectation = expect(REPLY, judge="my-judge")

    assert getattr(expectation, method)(*args) is expectation
    assert judge.asked == [(REPLY, criterion, "my-judge")]


@pytest.mark.parametrize(("method", "args", "criterion", "expected"), JUDGED)
def test_judged_checks_fail_with_the_verdict(
    judge: FakeJudge, method: str, args: tuple[str], criterion: str, expected: str
) -> None:
    judge.verdict = FakeVerdict(False, "It never apologises.")

    with pytest.raises(ExpectationFailed) as info:
        getattr(expect(REPLY), method)(*args)

    failure = info.value
    assert str(failure).startswith(
        f"expected: {expected}\n"
        "judge:    ollama:llama3.2:3b said FAIL: It never apologises.\n"
        f"text ({len(REPLY)} chars):\n    {REPLY}"
    )
    assert (failure.kind, failure.criterion, failure.text) == (method, criterion, REPLY)
    assert (failure.reason, failure.judge) == ("It never apologises.", "ollama:llama3.2:3b")
    assert failure.verdict is judge.verdict


@pytest.mark.anyio
@pytest.mark.parametrize(("method", "args", "criterion", "expected"), JUDGED)
async def test_async_twins_use_agrade(
    judge: FakeJudge, method: str, args: tuple[str], criterion: str, expected: str
) -> None:
    expectation = expect(REPLY)
    twin = getattr(expectation, f"a{method}")

    assert await twin(*args) is expectation
    assert judge.asked == [(REPLY, criterion, None)]

    judge.verdict = FakeVerdict(False, "No.")
    with pytest.raises(ExpectationFailed, match=re.escape(f"expected: {expected}\n")):
        await twin(*args)


def test_grounded_context_may_be_documents_and_is_shown_on_failure(judge: FakeJudge) -> None:
    judge.verdict = FakeVerdict(False, "The amount $12.50 is not in the context.")

    with pytest.raises(ExpectationFailed) as info:
        expect(REPLY).is_grounded_in(["Refunds take 5 days.", "Returns are free."])

    assert judge.asked[0][1].endswith("CONTEXT:\nRefunds take 5 days.\n\nReturns are free.")
    assert str(info.value).endswith(
        "context (39 chars):\n    Refunds take 5 days.\n    \n    Returns are free."
    )


def test_votes_and_cache_are_shown(judge: FakeJudge) -> None:
    judge.verdict = FakeVerdict(
        False, "Cold.", judge="openai:gpt-4o", votes=5, flip_rate=0.4, cached=True
    )

    with pytest.raises(
        ExpectationFailed,
        match=re.escape(
            "judge:    openai:gpt-4o said FAIL (5 votes, flip rate 40%, cached): Cold."
        ),
    ):
        expect(REPLY).tone_is("warm")


def test_judge_errors_propagate_unreported(
    monkeypatch: pytest.MonkeyPatch, recorded: list[dict[str, Any]]
) -> None:
    from ghostrun._core._exceptions import JudgeUnavailable

    def unavailable(text: str, criterion: str, judge: Any) -> Any:
        raise JudgeUnavailable("ollama is not running: run `ollama serve`")

    monkeypatch.setattr(expect_module, "_grade", unavailable)

    with pytest.raises(JudgeUnavailable):
        expect(REPLY).contains_intent("an apology")
    assert recorded == []


def test_chaining_mixes_both_kinds(judge: FakeJudge) -> None:
    expect(REPLY).contains("refund").contains_intent("an apology").length_between(10, 200)

    assert len(judge.asked) == 1


# -- the real _verdicts, with a callable judge ---------------------------------------------------


@pytest.fixture
def verdict_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GHOSTRUN_CASSETTE_DIR", str(tmp_path))
    return tmp_path


def apologises(text: str, criterion: str) -> tuple[bool, str]:
    passed = "sorry" in text.lower()
    return passed, "It says sorry." if passed else "No apology."


def test_through_the_real_verdicts_module(verdict_dir: Path) -> None:
    expect(REPLY, judge=apologises).contains_intent("an apology")

    with pytest.raises(ExpectationFailed) as info:
        expect("Your order ships tomorrow.", judge=apologises).contains_intent("an apology")

    assert "judge:    callable:test_expect.apologises said FAIL: No apology." in str(info.value)
    assert info.value.verdict.passed is False
    assert list((verdict_dir / "judge").glob("*.json"))


@pytest.mark.anyio
async def test_async_through_the_real_verdicts_module(verdict_dir: Path) -> None:
    await expect(REPLY, judge=apologises).acontains_intent("an apology")

    with pytest.raises(ExpectationFailed, match=re.escape("said FAIL: No apology.")):
        await expect("No.", judge=apologises).acontains_intent("an apology")


# -- every outcome goes through _report ----------------------------------------------------------


@pytest.fixture(autouse=True)
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Outcomes sent to the run log, kept here instead (no run log files from this suite)."""
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(
        "ghostrun._recording._runlog.record_assertion", lambda **kw: seen.append(kw)
    )
    return seen


def test_every_outcome_is_reported(judge: FakeJudge, recorded: list[dict[str, Any]]) -> None:
    expect(REPLY).contains("refund")
    with pytest.raises(ExpectationFailed):
        expect(REPLY).contains("cancel")
    expect(REPLY).tone_is("warm")
    judge.verdict = FakeVerdict(False, "Cold.")
    with pytest.raises(ExpectationFailed):
        expect(REPLY).tone_is("warm")

    assert recorded == [
        {
            "kind": "contains",
            "criterion": "contains 'refund'",
            "text": REPLY,
            "passed": True,
            "reason": "found at character 28",
            "judge": None,
        },
        {
            "kind": "contains",
            "criterion": "contains 'cancel'",
            "text": REPLY,
            "passed": False,
            "reason": "'cancel' is not in the text",
            "judge": None,
        },
        {
            "kind": "tone_is",
            "criterion": "The overall tone of the text is warm.",
            "text": REPLY,
            "passed": True,
            "reason": "It apologises.",
            "judge": "ollama:llama3.2:3b",
        },
        {
            "kind": "tone_is",
            "criterion": "The overall tone of the text is warm.",
            "text": REPLY,
            "passed": False,
            "reason": "Cold.",
            "judge": "ollama:llama3.2:3b",
        },
    ]


def test_report_matches_the_run_log_signature() -> None:
    from ghostrun._recording import _runlog

    signature = inspect.signature(_runlog.record_assertion)
    signature.bind(kind="k", criterion="c", text="t", passed=True, reason="r", judge=None)


# -- the failure type ----------------------------------------------------------------------------


def test_failure_survives_pickling() -> None:
    with pytest.raises(ExpectationFailed) as info:
        expect(REPLY).contains("cancel")

    copy = pickle.loads(pickle.dumps(info.value))

    assert str(copy) == str(info.value)
    assert (copy.kind, copy.criterion, copy.text, copy.reason) == (
        "contains",
        "contains 'cancel'",
        REPLY,
        "'cancel' is not in the text",
    )


def test_uncaught_failure_prints_on_an_ascii_console(tmp_path: Path) -> None:
    """Python prints tracebacks with backslashreplace, so emoji never crash the report."""
    script = tmp_path / "check.py"
    script.write_text(
        textwrap.dedent(
            """
            from ghostrun._assertions._expect import expect
            expect("Désolé 😀 \\udcff").contains("refund")
            """
        ),
        encoding="utf-8",
    )
    env = {
        "PYTHONIOENCODING": "ascii",
        "PYTHONPATH": str(ROOT),
        "GHOSTRUN_CASSETTE_DIR": str(tmp_path / "cassettes"),  # the run log lands here
    }

    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        env=env,
        cwd=tmp_path,
        check=False,
        timeout=60,
    )
    stderr = result.stderr.decode("ascii")

    assert result.returncode == 1
    assert "UnicodeEncodeError" not in stderr
    assert "ExpectationFailed: expected: the text contains 'refund'" in stderr
    assert "D\\xe9sol\\xe9 \\U0001f600 \\udcff" in stderr


def test_public_surface() -> None:
    assert isinstance(expect(REPLY), Expectation)
    assert isinstance(expect_tool_calls([]), ToolCallExpectation)
    assert issubclass(ExpectationFailed, AssertionError)
    assert repr(expect("short")) == "expect('short')"


# -- from the real SDKs, through the loopback simulator ----------------------------------------

PROMPT = [{"role": "user", "content": "Where is my refund?"}]
ECHO = "Echo: Where is my refund?"


def _openai(provider: ProviderSimulator) -> Any:
    with openai.OpenAI(api_key="sk-test", base_url=provider.url("/v1")) as client:
        return client.chat.completions.create(model="m", messages=PROMPT)  # type: ignore[arg-type]


def _openai_stream(provider: ProviderSimulator) -> Any:
    with openai.OpenAI(api_key="sk-test", base_url=provider.url("/v1")) as client:
        stream = client.chat.completions.create(
            model="m",
            messages=PROMPT,
            stream=True,
            stream_options={"include_usage": True},  # type: ignore[arg-type]
        )
        return list(stream)


def _openai_responses(provider: ProviderSimulator) -> Any:
    with openai.OpenAI(api_key="sk-test", base_url=provider.url("/v1")) as client:
        return client.responses.create(model="m", input=PROMPT[0]["content"])


def _groq(provider: ProviderSimulator) -> Any:
    with groq.Groq(api_key="gsk_test", base_url=provider.base_url) as client:
        return client.chat.completions.create(model="m", messages=PROMPT)  # type: ignore[arg-type]


def _anthropic(provider: ProviderSimulator) -> Any:
    with anthropic.Anthropic(api_key="sk-ant-test", base_url=provider.base_url) as client:
        return client.messages.create(model="m", max_tokens=50, messages=PROMPT)  # type: ignore[arg-type]


def _anthropic_events(provider: ProviderSimulator) -> Any:
    with anthropic.Anthropic(api_key="sk-ant-test", base_url=provider.base_url) as client:
        return list(client.messages.create(model="m", max_tokens=50, messages=PROMPT, stream=True))  # type: ignore[arg-type]


def _ollama(provider: ProviderSimulator) -> Any:
    with ollama.Client(host=provider.base_url) as client:
        return client.chat(model="llama3.2", messages=PROMPT)


def _ollama_stream(provider: ProviderSimulator) -> Any:
    with ollama.Client(host=provider.base_url) as client:
        return list(client.chat("llama3.2", PROMPT, stream=True))


def _gemini_client(provider: ProviderSimulator) -> genai.Client:
    options = gtypes.HttpOptions(base_url=provider.base_url)
    return genai.Client(api_key="AIza-test", http_options=options)


def _gemini(provider: ProviderSimulator) -> Any:
    with _gemini_client(provider) as client:
        return client.models.generate_content(
            model="gemini-2.5-flash", contents=PROMPT[0]["content"]
        )


def _gemini_stream(provider: ProviderSimulator) -> Any:
    with _gemini_client(provider) as client:
        stream = client.models.generate_content_stream(
            model="gemini-2.5-flash", contents=PROMPT[0]["content"]
        )
        return list(stream)


@pytest.mark.parametrize(
    "call",
    [
        _openai,
        _openai_stream,
        _openai_responses,
        _groq,
        _anthropic,
        _anthropic_events,
        _ollama,
        _ollama_stream,
        _gemini,
        _gemini_stream,
    ],
)
def test_real_sdk_responses_from_the_simulator(provider: ProviderSimulator, call: Any) -> None:
    response = call(provider)

    expect(response).contains("refund").does_not_contain("Refund").matches_regex("^Echo: ")
    with pytest.raises(
        ExpectationFailed, match=re.escape(f"text ({len(ECHO)} chars):\n    {ECHO}")
    ):
        expect(response).contains("cancel")


def test_json_reply_from_a_real_sdk(provider: ProviderSimulator) -> None:
    provider.reply = json.dumps({"order_id": "A123", "status": "shipped"})
    response = _openai(provider)

    expect(response).is_valid_json(
        {
            "type": "object",
            "required": ["order_id"],
            "properties": {"status": {"enum": ["shipped"]}},
        }
    )
    with pytest.raises(ExpectationFailed, match=re.escape("$.status: expected one of")):
        expect(response).is_valid_json({"properties": {"status": {"enum": ["open"]}}})


def test_message_object_from_an_sdk_is_read() -> None:
    message = ChatCompletionMessage.model_validate({"role": "assistant", "content": REPLY})

    expect(message).contains("refund")
