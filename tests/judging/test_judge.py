"""The judges: prompts and reply parsing (pure), then each judge against the simulator."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT
from simulator import closed_port_url

import ghostrun
from ghostrun._core._exceptions import GhostrunError, JudgeUnavailable
from ghostrun._judging._judges import (
    DEFAULT_OLLAMA_HOST,
    DEFAULT_OLLAMA_MODEL,
    SYSTEM_PROMPT,
    VERDICT_SCHEMA,
    CallableJudge,
    Judge,
    OllamaJudge,
    OpenAICompatibleJudge,
    RawVerdict,
    as_judge,
    build_messages,
    parse_verdict,
)

# --- the pure core -------------------------------------------------------------------

PARSE_TABLE = [
    ('{"verdict": "PASS", "reason": "it apologises"}', True, "it apologises"),
    ('{"verdict": "FAIL", "reason": "no apology"}', False, "no apology"),
    ('{"reason": "lower case", "verdict": "pass"}', True, "lower case"),
    ('  {"verdict": "FAIL"}  ', False, ""),
    ('```json\n{"verdict": "PASS", "reason": "fenced"}\n```', True, "fenced"),
    ("PASS", True, ""),
    ("FAIL because the reply argues", False, "because the reply argues"),
    ("PASS\nThe text apologises twice.", True, "The text apologises twice."),
    ("**PASS** — it says sorry", True, "it says sorry"),
    ("**FAIL**: rude", False, "rude"),
    ("## FAIL\nno empathy", False, "no empathy"),
    ("`PASS`", True, ""),
    ("Verdict: PASS - polite", True, "polite"),
    ("pass. fine", True, "fine"),
    ("FAILED: wrong order id", False, "wrong order id"),
    ('"PASS"', True, ""),
    ('{"verdict": "MAYBE"} PASS', None, None),  # JSON-looking but neither
]


@pytest.mark.parametrize(("reply", "passed", "reason"), PARSE_TABLE)
def test_parse_verdict(reply: str, passed: bool | None, reason: str | None) -> None:
    if passed is None:
        with pytest.raises(JudgeUnavailable):
            parse_verdict(reply, "ollama:m")
        return
    assert parse_verdict(reply, "ollama:m") == RawVerdict(passed, reason or "")


@pytest.mark.parametrize(
    "reply",
    [
        "I think it mostly passes",
        "PASSABLE",
        "FAILURE",
        "The answer is PASS",
        '{"verdict": "MAYBE", "reason": "unsure"}',
        "[1, 2, 3]",
        "Sure! Here is my assessment",
    ],
)
def test_parse_verdict_refuses_to_guess(reply: str) -> None:
    with pytest.raises(JudgeUnavailable, match="neither a JSON verdict nor PASS/FAIL") as info:
        parse_verdict(reply, "ollama:m")
    assert repr(reply)[1:-1][:40] in str(info.value)
    assert "ollama:m" in str(info.value)


@pytest.mark.parametrize("reply", ["", "   ", "\n\n"])
def test_parse_verdict_empty_reply(reply: str) -> None:
    with pytest.raises(JudgeUnavailable, match="empty reply"):
        parse_verdict(reply, "ollama:m")


def test_parse_verdict_names_a_long_reply_shortened() -> None:
    with pytest.raises(JudgeUnavailable) as info:
        parse_verdict("blah " * 1000)
    assert len(str(info.value)) < 600


def test_build_messages() -> None:
    messages = build_messages("Sorry about that.", "apologises")
    assert messages == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "CRITERION: apologises\n\nTEXT: Sorry about that."},
    ]
    assert "PASS or FAIL on the first line" in SYSTEM_PROMPT
    assert "strict test grader" in SYSTEM_PROMPT


def test_ollama_chat_request() -> None:
    judge = OllamaJudge("m:1b")
    single = judge.chat_request("t", "c", None, 0.0)
    assert single["model"] == "m:1b"
    assert single["format"] == VERDICT_SCHEMA
    assert single["options"] == {"temperature": 0.0}
    assert single["messages"] == build_messages("t", "c")
    assert judge.chat_request("t", "c", 3, 0.7)["options"] == {"temperature": 0.7, "seed": 3}


def test_openai_request_body() -> None:
    judge = OpenAICompatibleJudge("qwen", "http://h:8000/v1/", api_key="k")
    body = judge.request_body("t", "c", 2, 0.7)
    assert judge.url == "http://h:8000/v1/chat/completions"
    assert body["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA
    assert (body["seed"], body["temperature"], body["model"]) == (2, 0.7, "qwen")
    assert "seed" not in judge.request_body("t", "c", None, 0.0)
    assert judge.headers() == {"authorization": "Bearer k"}
    assert OpenAICompatibleJudge("qwen", "http://h").headers() == {}


# --- identity, defaults, configuration -------------------------------------------------


def test_ollama_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GHOSTRUN_JUDGE_MODEL", raising=False)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    judge = OllamaJudge()
    assert (judge.model, judge.host, judge.votes) == (DEFAULT_OLLAMA_MODEL, DEFAULT_OLLAMA_HOST, 1)
    assert judge.identity == "ollama:llama3.2:3b"
    assert judge.setup_commands == ("ollama serve", "ollama pull llama3.2:3b")


def test_ollama_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GHOSTRUN_JUDGE_MODEL", "qwen2.5:7b")
    monkeypatch.setenv("OLLAMA_HOST", "http://gpu-box:11434")
    judge = OllamaJudge()
    assert (judge.identity, judge.host) == ("ollama:qwen2.5:7b", "http://gpu-box:11434")
    explicit = OllamaJudge("phi4", host="http://other:1")
    assert (explicit.identity, explicit.host) == ("ollama:phi4", "http://other:1")


def test_identity_ignores_host_and_timeout() -> None:
    a = OllamaJudge("m", host="http://a:1", timeout=5)
    b = OllamaJudge("m", host="http://b:2", timeout=50)
    assert a.identity == b.identity
    assert OllamaJudge("m").identity != OllamaJudge("n").identity
    assert OpenAICompatibleJudge("m", "http://a/v1").identity == "openai-compatible:m"


@pytest.mark.parametrize(
    "kwargs", [{"votes": 0}, {"votes": -1}, {"votes": 1.5}, {"votes": True}, {"timeout": 0}]
)
def test_invalid_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        OllamaJudge("m", **kwargs)
    with pytest.raises(ValueError):
        OpenAICompatibleJudge("m", "http://h/v1", **kwargs)


def test_judges_satisfy_the_protocol() -> None:
    for judge in (OllamaJudge(), OpenAICompatibleJudge("m", "http://h"), CallableJudge(len)):
        assert isinstance(judge, Judge)
        assert as_judge(judge) is judge


# --- the callable judge --------------------------------------------------------------------


def says_sorry(text: str, criterion: str) -> bool:
    return "sorry" in text.lower()


def with_reason(text: str, criterion: str) -> tuple[bool, str]:
    return ("sorry" in text.lower(), f"looked for sorry ({criterion})")


def test_callable_judge_bool_and_tuple() -> None:
    judge = as_judge(says_sorry)
    assert isinstance(judge, CallableJudge)
    assert judge.identity == f"callable:{__name__}.says_sorry"
    assert judge.judge("Sorry!", "apology").passed is True
    assert judge.judge("No.", "apology").passed is False
    assert as_judge(with_reason).judge("Sorry", "apology") == RawVerdict(
        True, "looked for sorry (apology)"
    )


def test_callable_judge_identity_tells_lambdas_apart() -> None:
    yes = as_judge(lambda text, criterion: True)
    no = as_judge(lambda text, criterion: False)
    assert yes.identity != no.identity
    assert CallableJudge(says_sorry, name="sorry-v2").identity == "callable:sorry-v2"


@pytest.mark.parametrize("result", [1, "PASS", None, (True,), (1, "x"), (True, 3)])
def test_callable_judge_rejects_other_results(result: Any) -> None:
    judge = CallableJudge(lambda text, criterion: result)
    with pytest.raises(TypeError, match="expected a bool or a"):
        judge.judge("t", "c")


def test_callable_judge_async_function_needs_async_code() -> None:
    async def afn(text: str, criterion: str) -> bool:
        return True

    with pytest.raises(GhostrunError, match="is async"):
        CallableJudge(afn).judge("t", "c")


@pytest.mark.anyio
async def test_callable_judge_async(anyio_backend: str) -> None:
    async def afn(text: str, criterion: str) -> tuple[bool, str]:
        return False, "async says no"

    assert await CallableJudge(afn).ajudge("t", "c") == RawVerdict(False, "async says no")
    assert (await CallableJudge(says_sorry).ajudge("sorry", "c")).passed is True


def test_as_judge_rejects_non_judges() -> None:
    with pytest.raises(TypeError, match="not a judge"):
        as_judge("llama3")


# --- import hygiene ------------------------------------------------------------------------


def test_importing_ghostrun_never_imports_ollama() -> None:
    code = (
        "import sys\n"
        "import ghostrun, ghostrun._judging._verdicts, ghostrun._judging._judges\n"
        "ghostrun._judging._judges.OllamaJudge()\n"
        "assert 'ollama' not in sys.modules, 'ollama imported'\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


# --- against the loopback simulator ----------------------------------------------------


def verdict_json(word: str, reason: str) -> str:
    return f'{{"verdict": "{word}", "reason": "{reason}"}}'


@pytest.fixture
def ollama_judge(provider: Any) -> OllamaJudge:
    return OllamaJudge(host=provider.base_url, timeout=5)


@pytest.mark.parametrize(("word", "passed"), [("PASS", True), ("FAIL", False)])
def test_ollama_judge_verdict(
    provider: Any, ollama_judge: OllamaJudge, word: str, passed: bool
) -> None:
    provider.judge_reply = lambda body: verdict_json(word, "because")
    assert ollama_judge.judge("Sorry!", "apologises") == RawVerdict(passed, "because")
    sent = provider.last_request
    assert sent.path == "/api/chat"
    assert sent.json["model"] == "llama3.2:3b"
    assert sent.json["format"] == VERDICT_SCHEMA
    assert sent.json["options"] == {"temperature": 0.0}
    assert sent.json["messages"] == build_messages("Sorry!", "apologises")


def test_ollama_judge_sends_seed_and_temperature(provider: Any, ollama_judge: OllamaJudge) -> None:
    provider.judge_reply = lambda body: verdict_json("PASS", str(body["options"]["seed"]))
    assert ollama_judge.judge("t", "c", seed=7, temperature=0.7).reason == "7"
    assert provider.last_request.json["options"] == {"temperature": 0.7, "seed": 7}


def test_ollama_judge_fallback_parse(provider: Any, ollama_judge: OllamaJudge) -> None:
    provider.judge_reply = lambda body: "FAIL because the reply blames the customer"
    assert ollama_judge.judge("t", "c") == RawVerdict(
        False, "because the reply blames the customer"
    )
    provider.judge_reply = lambda body: "**PASS**\nIt apologises."
    assert ollama_judge.judge("t", "c") == RawVerdict(True, "It apologises.")


def test_ollama_judge_garbage_reply(provider: Any, ollama_judge: OllamaJudge) -> None:
    provider.judge_reply = lambda body: "As an AI language model, I cannot grade this."
    with pytest.raises(JudgeUnavailable, match="As an AI language model") as info:
        ollama_judge.judge("t", "c")
    assert "ollama:llama3.2:3b" in str(info.value)


def test_ollama_judge_empty_reply(provider: Any, ollama_judge: OllamaJudge) -> None:
    provider.judge_reply = lambda body: ""
    with pytest.raises(JudgeUnavailable, match="empty reply"):
        ollama_judge.judge("t", "c")


def test_ollama_judge_unreachable() -> None:
    url = closed_port_url()
    with pytest.raises(JudgeUnavailable) as info:
        OllamaJudge("qwen2.5:7b", host=url).judge("t", "c")
    message = str(info.value)
    assert url in message
    assert "`ollama serve`" in message
    assert "`ollama pull qwen2.5:7b`" in message
    assert info.value.__cause__ is not None


def test_ollama_judge_unreachable_via_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    url = closed_port_url()
    monkeypatch.setenv("OLLAMA_HOST", url)
    with pytest.raises(JudgeUnavailable, match=url):
        OllamaJudge().judge("t", "c")


def test_ollama_judge_model_not_pulled(provider: Any) -> None:
    judge = OllamaJudge("mistral-small:24b", host=provider.base_url)
    with pytest.raises(JudgeUnavailable, match=r"`ollama pull mistral-small:24b`") as info:
        judge.judge("t", "c")
    assert "not found" in str(info.value)


def test_ollama_judge_server_error(provider: Any, ollama_judge: OllamaJudge) -> None:
    provider.fail_next(500)
    with pytest.raises(JudgeUnavailable, match="status 500"):
        ollama_judge.judge("t", "c")


def test_ollama_judge_timeout(provider: Any) -> None:
    provider.delay = 2.0
    judge = OllamaJudge(host=provider.base_url, timeout=0.2)
    with pytest.raises(JudgeUnavailable, match=r"OllamaJudge\(timeout=\.\.\.\)") as info:
        judge.judge("t", "c")
    assert "0.2 s" in str(info.value)


@pytest.mark.anyio
async def test_ollama_judge_async(anyio_backend: str, provider: Any) -> None:
    provider.judge_reply = lambda body: verdict_json("FAIL", f"seed {body['options'].get('seed')}")
    judge = OllamaJudge(host=provider.base_url, timeout=5)
    assert await judge.ajudge("t", "c", seed=3, temperature=0.7) == RawVerdict(False, "seed 3")
    assert provider.last_request.json["format"] == VERDICT_SCHEMA


@pytest.mark.anyio
async def test_ollama_judge_async_failures(anyio_backend: str, provider: Any) -> None:
    with pytest.raises(JudgeUnavailable, match="ollama pull nope"):
        await OllamaJudge("nope", host=provider.base_url).ajudge("t", "c")
    with pytest.raises(JudgeUnavailable, match="ollama serve"):
        await OllamaJudge(host=closed_port_url()).ajudge("t", "c")


# --- OpenAI-compatible servers --------------------------------------------------------


@pytest.fixture
def openai_judge(provider: Any) -> OpenAICompatibleJudge:
    return OpenAICompatibleJudge("qwen2.5", provider.url("/v1"), api_key="sk-local", timeout=5)


def test_openai_compatible_judge(provider: Any, openai_judge: OpenAICompatibleJudge) -> None:
    provider.judge_reply = lambda body: verdict_json("PASS", f"seed {body.get('seed')}")
    assert openai_judge.judge("t", "c", seed=2, temperature=0.7) == RawVerdict(True, "seed 2")
    sent = provider.last_request
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-local"
    assert sent.json["response_format"]["json_schema"]["schema"] == VERDICT_SCHEMA
    assert sent.json["messages"] == build_messages("t", "c")
    provider.judge_reply = lambda body: "FAIL - off topic"
    assert openai_judge.judge("t", "c") == RawVerdict(False, "off topic")


def test_openai_compatible_judge_failures(
    provider: Any, openai_judge: OpenAICompatibleJudge
) -> None:
    with pytest.raises(JudgeUnavailable, match="ends in /v1"):
        OpenAICompatibleJudge("qwen2.5", provider.base_url).judge("t", "c")
    provider.fail_next(401)
    with pytest.raises(JudgeUnavailable, match="api_key"):
        openai_judge.judge("t", "c")
    with pytest.raises(JudgeUnavailable, match="cannot reach"):
        OpenAICompatibleJudge("m", closed_port_url() + "/v1").judge("t", "c")
    provider.delay = 2.0
    slow = OpenAICompatibleJudge("m", provider.url("/v1"), timeout=0.2)
    with pytest.raises(JudgeUnavailable, match=r"OpenAICompatibleJudge\(timeout=\.\.\.\)"):
        slow.judge("t", "c")


def test_openai_compatible_judge_garbage(
    provider: Any, openai_judge: OpenAICompatibleJudge
) -> None:
    provider.judge_reply = lambda body: "hmm, hard to say"
    with pytest.raises(JudgeUnavailable, match="hmm, hard to say"):
        openai_judge.judge("t", "c")


@pytest.mark.anyio
async def test_openai_compatible_judge_async(anyio_backend: str, provider: Any) -> None:
    provider.judge_reply = lambda body: verdict_json("FAIL", "nope")
    judge = OpenAICompatibleJudge("qwen2.5", provider.url("/v1"), timeout=5)
    assert await judge.ajudge("t", "c") == RawVerdict(False, "nope")
    assert "authorization" not in provider.last_request.headers


@pytest.mark.anyio
async def test_async_grading_never_stalls_the_event_loop(
    anyio_backend: str, provider: Any, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ticker keeps ticking while the judge's one slow step (its TLS context) is built."""
    import ssl
    import threading
    import time

    import anyio

    from ghostrun._judging import _judges

    monkeypatch.setattr(_judges, "_tls", [], raising=False)  # as in a fresh process
    provider.judge_reply = lambda body: '{"verdict": "PASS", "reason": "fine"}'
    loop_thread = threading.get_ident()
    ticks = 0
    builds: list[tuple[bool, int]] = []  # (on the loop's thread, ticks while it was built)
    original = ssl.create_default_context

    def counting_build(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        on_loop = threading.get_ident() == loop_thread
        start, deadline = ticks, time.monotonic() + 10
        while not on_loop and ticks < start + 3 and time.monotonic() < deadline:
            time.sleep(0.001)  # the loop runs the ticker meanwhile, or it is stalled
        builds.append((on_loop, ticks - start))
        return original(*args, **kwargs)

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.001)

    judge = OllamaJudge(host=provider.base_url)
    with ghostrun.session(cassette_dir=cassette_dir, mode="auto"):
        monkeypatch.setattr(ssl, "create_default_context", counting_build)
        async with anyio.create_task_group() as group:
            group.start_soon(ticker)
            for n in range(3):
                await ghostrun.expect(f"reply {n}", judge=judge).acontains_intent("a reply")
            first_builds = list(builds)
            for n in range(3, 6):
                await ghostrun.expect(f"reply {n}", judge=judge).acontains_intent("a reply")
            group.cancel_scope.cancel()
    assert provider.served == 6  # six assertions graded by the judge
    # Built off the loop, which kept ticking meanwhile (importing ollama builds one too)...
    assert first_builds, builds
    assert all(not on_loop and ticked >= 3 for on_loop, ticked in first_builds), builds
    assert builds == first_builds  # ...and never again for later assertions
