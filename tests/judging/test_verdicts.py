"""The verdict cache: modes, voting, skips, and judge traffic kept out of cassettes."""

from __future__ import annotations

import contextlib
import json
import threading
import unittest
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from simulator import closed_port_url

import ghostrun
from ghostrun._core._config import settings
from ghostrun._core._exceptions import CacheMiss, JudgeUnavailable
from ghostrun._judging._judges import PROMPT_TEMPLATE_VERSION, OllamaJudge, RawVerdict
from ghostrun._judging._verdicts import (
    VOTE_TEMPERATURE,
    Verdict,
    agrade,
    draw_plan,
    grade,
    tally,
    verdict_key,
)


def verdict_json(word: str, reason: str) -> str:
    return json.dumps({"verdict": word, "reason": reason})


# --- the pure core -------------------------------------------------------------------


def test_verdict_key_changes_with_every_input() -> None:
    base = ("ollama:m", 1, "text", "criterion")
    key = verdict_key(*base)
    assert len(key) == 32
    assert int(key, 16) >= 0
    assert verdict_key(*base) == key
    for changed in [
        ("ollama:n", 1, "text", "criterion"),
        ("openai-compatible:m", 1, "text", "criterion"),
        ("ollama:m", 3, "text", "criterion"),
        ("ollama:m", 1, "text!", "criterion"),
        ("ollama:m", 1, "text", "criterion!"),
        ("ollama:m", 1, "textcriterion", ""),
    ]:
        assert verdict_key(*changed) != key, changed


def test_draw_plan() -> None:
    single = draw_plan(1)
    assert [(d.seed, d.temperature) for d in single] == [(None, 0.0)]
    plan = draw_plan(3)
    assert [d.seed for d in plan] == [1, 2, 3]
    assert {d.temperature for d in plan} == {VOTE_TEMPERATURE}
    with pytest.raises(ValueError, match="positive integer"):
        draw_plan(0)


P, F = RawVerdict(True, "p"), RawVerdict(False, "f")


@pytest.mark.parametrize(
    ("draws", "passed", "flip_rate"),
    [
        ([P], True, 0.0),
        ([F], False, 0.0),
        ([P, P, F], True, 1 / 3),
        ([F, P, F], False, 1 / 3),
        ([P, F], False, 0.5),  # a tie fails
        ([P, P, F, F], False, 0.5),
        ([P, P, P, F, F], True, 0.4),
        ([P] * 5, True, 0.0),
    ],
)
def test_tally(draws: list[RawVerdict], passed: bool, flip_rate: float) -> None:
    verdict = tally(draws, "j")
    assert (verdict.passed, verdict.votes, verdict.judge) == (passed, len(draws), "j")
    assert verdict.flip_rate == pytest.approx(flip_rate)
    assert verdict.reason.endswith("p" if passed else "f")


def test_tally_says_a_tie_fails() -> None:
    assert tally([P, F], "j").reason.startswith("tie (1 PASS, 1 FAIL) counts as FAIL")


# --- grading against the simulator ---------------------------------------------------------


@pytest.fixture(autouse=True)
def _judge_settings(monkeypatch: pytest.MonkeyPatch, cassette_dir: Path) -> None:
    """Verdicts land in the test's directory; configure() changes are undone."""
    monkeypatch.setenv("GHOSTRUN_CASSETTE_DIR", str(cassette_dir))
    monkeypatch.delenv("GHOSTRUN_ON_JUDGE_UNAVAILABLE", raising=False)
    monkeypatch.delenv("GHOSTRUN_JUDGE_MODEL", raising=False)
    monkeypatch.setattr(settings, "judge", None)
    monkeypatch.setattr(settings, "on_judge_unavailable", None)
    monkeypatch.setattr(settings, "mode", None)


@pytest.fixture
def judge(provider: Any) -> OllamaJudge:
    provider.judge_reply = lambda body: verdict_json("PASS", "it apologises")
    return OllamaJudge(host=provider.base_url, timeout=5)


def verdict_files(cassette_dir: Path) -> list[Path]:
    return sorted((cassette_dir / "judge").glob("*.json"))


def test_grade_stores_a_readable_verdict(cassette_dir: Path, judge: OllamaJudge) -> None:
    verdict = grade("Sorry for the delay.", "apologises", judge)
    assert verdict == Verdict(True, "it apologises", "ollama:llama3.2:3b")
    [path] = verdict_files(cassette_dir)
    key = verdict_key("ollama:llama3.2:3b", 1, "Sorry for the delay.", "apologises")
    assert path.name == f"{key}.json"
    text = path.read_text()
    assert text.startswith('{\n  "criterion"')  # pretty, sorted keys
    assert json.loads(text) == {
        "version": 1,
        "key": key,
        "judge": "ollama:llama3.2:3b",
        "prompt_template_version": PROMPT_TEMPLATE_VERSION,
        "criterion": "apologises",
        "text": "Sorry for the delay.",
        "verdict": "PASS",
        "reason": "it apologises",
        "votes": 1,
        "flip_rate": 0.0,
        "draws": [{"seed": None, "temperature": 0.0, "verdict": "PASS", "reason": "it apologises"}],
    }


def test_fail_verdict_is_a_verdict_not_an_error(provider: Any, judge: OllamaJudge) -> None:
    provider.judge_reply = lambda body: "FAIL: it argues"
    verdict = grade("No.", "apologises", judge)
    assert (verdict.passed, verdict.reason) == (False, "it argues")


def test_second_grade_is_cached(provider: Any, judge: OllamaJudge) -> None:
    first = grade("Sorry!", "apologises", judge)
    served = provider.served
    second = grade("Sorry!", "apologises", judge)
    assert provider.served == served
    assert (second.passed, second.reason, second.cached, first.cached) == (
        True,
        "it apologises",
        True,
        False,
    )


def test_cached_verdict_replays_with_the_judge_gone(
    provider: Any, judge: OllamaJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    grade("Sorry!", "apologises", judge)
    provider.stop()
    assert grade("Sorry!", "apologises", judge).cached  # auto: a hit never calls out
    monkeypatch.setenv("GHOSTRUN_MODE", "replay")
    assert grade("Sorry!", "apologises", judge).passed


def test_replay_miss_names_criterion_judge_file_and_fix(
    cassette_dir: Path, provider: Any, judge: OllamaJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GHOSTRUN_MODE", "replay")
    with pytest.raises(CacheMiss) as info:
        grade("Sorry!", "apologises", judge)
    message = str(info.value)
    key = verdict_key("ollama:llama3.2:3b", 1, "Sorry!", "apologises")
    assert "'apologises'" in message
    assert "ollama:llama3.2:3b" in message
    assert str(cassette_dir / "judge" / f"{key}.json") in message
    assert "GHOSTRUN_MODE=record" in message
    assert "`ollama serve`" in message
    assert provider.served == 0
    assert verdict_files(cassette_dir) == []


def test_record_mode_regrades(
    provider: Any, judge: OllamaJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    grade("Sorry!", "apologises", judge)
    provider.judge_reply = lambda body: verdict_json("FAIL", "changed its mind")
    monkeypatch.setenv("GHOSTRUN_MODE", "record")
    verdict = grade("Sorry!", "apologises", judge)
    assert (verdict.passed, verdict.cached, provider.served) == (False, False, 2)
    monkeypatch.setenv("GHOSTRUN_MODE", "replay")
    assert grade("Sorry!", "apologises", judge).reason == "changed its mind"


def test_changing_model_or_votes_regrades(
    cassette_dir: Path, provider: Any, judge: OllamaJudge
) -> None:
    provider.models.add("qwen2.5:7b")
    grade("Sorry!", "apologises", judge)
    other = OllamaJudge("qwen2.5:7b", host=provider.base_url)
    assert grade("Sorry!", "apologises", other).judge == "ollama:qwen2.5:7b"
    assert provider.last_request.json["model"] == "qwen2.5:7b"
    voted = OllamaJudge(host=provider.base_url, votes=3)
    assert grade("Sorry!", "apologises", voted).votes == 3
    assert provider.served == 1 + 1 + 3
    assert len(verdict_files(cassette_dir)) == 3


def by_seed(passing: set[int]) -> Callable[[dict[str, Any]], str]:
    def reply(body: dict[str, Any]) -> str:
        seed = body["options"]["seed"]
        return verdict_json("PASS" if seed in passing else "FAIL", f"seed {seed}")

    return reply


def test_votes_majority_and_flip_rate(cassette_dir: Path, provider: Any) -> None:
    provider.judge_reply = by_seed({1, 2, 4})
    judge = OllamaJudge(host=provider.base_url, votes=5)
    verdict = grade("Sorry!", "apologises", judge)
    assert (verdict.passed, verdict.votes, verdict.flip_rate) == (True, 5, pytest.approx(0.4))
    assert verdict.reason == "seed 1"
    options = sorted(
        (r.json["options"]["seed"], r.json["options"]["temperature"]) for r in provider.requests
    )
    assert options == [(seed, VOTE_TEMPERATURE) for seed in range(1, 6)]
    [path] = verdict_files(cassette_dir)
    record = json.loads(path.read_text())
    assert (record["verdict"], record["votes"], record["flip_rate"]) == ("PASS", 5, 0.4)
    assert [(d["seed"], d["verdict"]) for d in record["draws"]] == [
        (1, "PASS"),
        (2, "PASS"),
        (3, "FAIL"),
        (4, "PASS"),
        (5, "FAIL"),
    ]
    cached = grade("Sorry!", "apologises", judge)
    assert (cached.passed, cached.flip_rate, cached.votes, cached.cached) == (True, 0.4, 5, True)


def test_votes_tie_fails(provider: Any) -> None:
    provider.judge_reply = by_seed({2})
    verdict = grade("Sorry!", "apologises", OllamaJudge(host=provider.base_url, votes=2))
    assert (verdict.passed, verdict.flip_rate) == (False, 0.5)
    assert "tie" in verdict.reason


def all_at_once(n: int, reply: Callable[[dict[str, Any]], str]) -> Callable[[dict[str, Any]], str]:
    """A judge reply that only comes once ``n`` draws are in flight together.

    Draws made one after another would break the barrier: counted, not timed.
    """
    barrier = threading.Barrier(n, timeout=5)

    def answer(body: dict[str, Any]) -> str:
        barrier.wait()
        return reply(body)

    return answer


def test_votes_run_concurrently(provider: Any) -> None:
    provider.judge_reply = all_at_once(4, by_seed({1, 2, 3, 4}))
    verdict = grade("Sorry!", "apologises", OllamaJudge(host=provider.base_url, votes=4))
    assert verdict.passed and verdict.votes == 4


def test_one_failing_vote_makes_the_grade_unavailable(provider: Any) -> None:
    provider.judge_reply = lambda body: "maybe" if body["options"]["seed"] == 2 else "PASS"
    with pytest.raises(JudgeUnavailable, match="maybe"):
        grade("Sorry!", "apologises", OllamaJudge(host=provider.base_url, votes=3))


@pytest.mark.anyio
async def test_agrade(anyio_backend: str, provider: Any, judge: OllamaJudge) -> None:
    verdict = await agrade("Sorry!", "apologises", judge)
    assert (verdict.passed, verdict.cached) == (True, False)
    assert (await agrade("Sorry!", "apologises", judge)).cached
    assert provider.served == 1
    assert grade("Sorry!", "apologises", judge).cached  # sync and async share the cache


@pytest.mark.anyio
async def test_agrade_votes(anyio_backend: str, provider: Any) -> None:
    provider.judge_reply = all_at_once(3, by_seed({3}))
    judge = OllamaJudge(host=provider.base_url, votes=3)
    verdict = await agrade("Sorry!", "apologises", judge)
    assert (verdict.passed, verdict.flip_rate, verdict.reason) == (
        False,
        pytest.approx(1 / 3),
        "seed 1",
    )


@pytest.mark.anyio
async def test_agrade_unavailable(anyio_backend: str) -> None:
    judge = OllamaJudge(host=closed_port_url(), votes=2)
    with pytest.raises(JudgeUnavailable, match="ollama serve"):
        await agrade("Sorry!", "apologises", judge)


@pytest.mark.anyio
async def test_agrade_replay_miss(anyio_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GHOSTRUN_MODE", "replay")
    with pytest.raises(CacheMiss, match="apologises"):
        await agrade("Sorry!", "apologises", OllamaJudge(host=closed_port_url()))


# --- which judge --------------------------------------------------------------------------


def test_callable_judge_is_cached_like_any_other(cassette_dir: Path) -> None:
    calls: list[str] = []

    def contains_sorry(text: str, criterion: str) -> tuple[bool, str]:
        calls.append(text)
        return "sorry" in text.lower(), "looked for 'sorry'"

    assert grade("Sorry!", "apologises", contains_sorry).passed
    assert not grade("No.", "apologises", contains_sorry).passed
    assert grade("Sorry!", "apologises", contains_sorry).cached
    assert calls == ["Sorry!", "No."]
    record = json.loads(verdict_files(cassette_dir)[0].read_text())
    assert record["judge"].startswith("callable:")
    assert record["judge"].endswith("contains_sorry")


def test_configured_judge_is_the_default(provider: Any) -> None:
    provider.judge_reply = lambda body: "PASS"
    ghostrun.configure(judge=OllamaJudge(host=provider.base_url))
    assert grade("Sorry!", "apologises").judge == "ollama:llama3.2:3b"
    ghostrun.configure(judge=lambda text, criterion: False)
    assert grade("Sorry!", "apologises").judge.startswith("callable:")


def test_default_judge_is_ollama_from_the_environment(
    provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider.models.add("phi4:14b")
    provider.judge_reply = lambda body: "PASS"
    monkeypatch.setenv("OLLAMA_HOST", provider.base_url)
    monkeypatch.setenv("GHOSTRUN_JUDGE_MODEL", "phi4:14b")
    assert grade("Sorry!", "apologises").judge == "ollama:phi4:14b"
    assert provider.last_request.json["model"] == "phi4:14b"


def test_argument_types() -> None:
    with pytest.raises(TypeError, match="strings"):
        grade(None, "apologises", lambda text, criterion: True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a judge"):
        grade("t", "c", 42)


# --- corrupt files ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"{not json", "not valid JSON"),
        (b"[]", "expected an object, got list"),
        (b'{"version": 99, "verdict": "PASS"}', "has format version 99"),
        (b'{"version": 1, "verdict": "MAYBE", "reason": "", "judge": "j"}', "'MAYBE'"),
        (
            b'{"version": 1, "verdict": "PASS", "reason": 3, "judge": "j"}',
            "reason: expected a string, got int 3",
        ),
    ],
)
def test_corrupt_verdict_file_is_named(cassette_dir: Path, content: bytes, message: str) -> None:
    def judge(text: str, criterion: str) -> bool:
        return True

    grade("t", "c", judge)
    [path] = verdict_files(cassette_dir)
    path.write_bytes(content)
    with pytest.raises(ghostrun.DamagedCassette, match=message) as info:
        grade("t", "c", judge)
    assert str(path) in str(info.value)


# --- GHOSTRUN_ON_JUDGE_UNAVAILABLE=skip ----------------------------------------------------


def test_unavailable_is_an_error_by_default() -> None:
    with pytest.raises(JudgeUnavailable, match="ollama serve"):
        grade("Sorry!", "apologises", OllamaJudge(host=closed_port_url()))


def test_skip_setting_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GHOSTRUN_ON_JUDGE_UNAVAILABLE", "skip")
    with pytest.raises(unittest.SkipTest) as info:
        grade("Sorry!", "apologises", OllamaJudge("qwen2.5:7b", host=closed_port_url()))
    message = str(info.value)
    assert "&&" not in message  # `ollama serve` runs until stopped: nothing after it would run
    assert message.count("ollama serve") == 1, message  # said once
    assert "`ollama serve`" in message and "`ollama pull qwen2.5:7b`" in message
    assert "GHOSTRUN_ON_JUDGE_UNAVAILABLE=skip" in message
    assert isinstance(info.value.__cause__, JudgeUnavailable)


def test_a_replay_skip_says_the_two_commands_apart_and_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("GHOSTRUN_ON_JUDGE_UNAVAILABLE", "skip")
    with ghostrun.session(mode="replay", cassette_dir=tmp_path):
        with pytest.raises(unittest.SkipTest) as info:
            grade("Sorry!", "apologises", OllamaJudge("qwen2.5:7b"))
    message = str(info.value)
    assert (
        "start the judge with `ollama serve` (it keeps running: use another terminal, or the "
        "desktop app), then run `ollama pull qwen2.5:7b`." in message
    )
    assert "&&" not in message and message.count("ollama serve") == 1
    assert str(tmp_path / "judge") in message  # where the verdict will be stored, absolute


def test_skip_setting_from_configure(provider: Any) -> None:
    ghostrun.configure(on_judge_unavailable="skip")
    with pytest.raises(unittest.SkipTest, match="ollama pull nope"):
        grade("Sorry!", "apologises", OllamaJudge("nope", host=provider.base_url))


def test_environment_beats_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    ghostrun.configure(on_judge_unavailable="skip")
    monkeypatch.setenv("GHOSTRUN_ON_JUDGE_UNAVAILABLE", "error")
    with pytest.raises(JudgeUnavailable):
        grade("Sorry!", "apologises", OllamaJudge(host=closed_port_url()))
    monkeypatch.setenv("GHOSTRUN_ON_JUDGE_UNAVAILABLE", "sometimes")
    with pytest.raises(ValueError, match="GHOSTRUN_ON_JUDGE_UNAVAILABLE"):
        grade("Sorry!", "apologises", OllamaJudge(host=closed_port_url()))


def test_skip_setting_never_hides_a_cached_verdict(
    provider: Any, judge: OllamaJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    grade("Sorry!", "apologises", judge)
    provider.stop()
    monkeypatch.setenv("GHOSTRUN_ON_JUDGE_UNAVAILABLE", "skip")
    assert grade("Sorry!", "apologises", judge).passed


def test_skip_setting_turns_a_replay_verdict_miss_into_a_skip(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GHOSTRUN_MODE", "replay")
    judge = OllamaJudge(host=closed_port_url())
    with pytest.raises(CacheMiss):
        grade("Sorry!", "apologises", judge)
    monkeypatch.setenv("GHOSTRUN_ON_JUDGE_UNAVAILABLE", "skip")
    with pytest.raises(unittest.SkipTest, match=r"ollama pull llama3\.2:3b.*GHOSTRUN_MODE=auto"):
        grade("Sorry!", "apologises", judge)


@pytest.mark.anyio
async def test_skip_setting_async(anyio_backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GHOSTRUN_ON_JUDGE_UNAVAILABLE", "skip")
    with pytest.raises(unittest.SkipTest, match="ollama serve"):
        await agrade("Sorry!", "apologises", OllamaJudge(host=closed_port_url()))


# --- sessions ------------------------------------------------------------------------------


def test_session_governs_mode_and_directory(tmp_path: Path, provider: Any) -> None:
    provider.judge_reply = lambda body: "PASS"
    judge = OllamaJudge(host=provider.base_url)
    session_dir = tmp_path / "session"
    with ghostrun.session(cassette_dir=session_dir):
        grade("Sorry!", "apologises", judge)
    assert len(verdict_files(session_dir)) == 1
    with (
        pytest.raises(CacheMiss),
        ghostrun.session(mode="replay", cassette_dir=tmp_path / "empty") as s,
    ):
        grade("Sorry!", "apologises", judge)
    assert len(s.misses) == 1


def test_a_swallowed_verdict_miss_is_raised_when_the_session_exits(
    tmp_path: Path, provider: Any
) -> None:
    """A verdict miss is booked like a request miss: the code under test cannot hide it."""
    judge = OllamaJudge(host=provider.base_url)
    with pytest.raises(CacheMiss, match="no cached verdict"):
        with ghostrun.session(mode="replay", cassette_dir=tmp_path) as s:
            with contextlib.suppress(CacheMiss):
                grade("Sorry!", "apologises", judge)
    assert len(s.misses) == 1


def app_call(provider: Any) -> None:
    """What the app under test does: a chat completion to a provider on 127.0.0.1."""
    body = {"model": "gpt-sim", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client() as client:
        client.post(provider.url("/v1/chat/completions"), json=body).raise_for_status()


@pytest.mark.parametrize("votes", [1, 3])
def test_judge_traffic_is_never_recorded(cassette_dir: Path, provider: Any, votes: int) -> None:
    provider.judge_reply = lambda body: "PASS"
    judge = OllamaJudge(host=provider.base_url, votes=votes)
    with ghostrun.session(hosts=("127.0.0.1",), cassette_dir=cassette_dir) as s:
        app_call(provider)
        assert grade("Sorry!", "apologises", judge).passed
        judge.judge("direct", "call")  # a judge used on its own stays out too
    assert s.recorded == 1
    cassettes = [p for p in cassette_dir.glob("*.json")]
    assert len(cassettes) == 1
    assert "/v1/chat/completions" in cassettes[0].read_text()
    assert len(verdict_files(cassette_dir)) == 1
    assert sum(r.path == "/api/chat" for r in provider.requests) == votes + 1


@pytest.mark.anyio
async def test_judge_traffic_is_never_recorded_async(
    anyio_backend: str, cassette_dir: Path, provider: Any
) -> None:
    provider.judge_reply = lambda body: "PASS"
    judge = OllamaJudge(host=provider.base_url, votes=2)
    async with ghostrun.session(hosts=("127.0.0.1",), cassette_dir=cassette_dir) as s:
        app_call(provider)
        assert (await agrade("Sorry!", "apologises", judge)).passed
    assert s.recorded == 1
    assert len(list(cassette_dir.glob("*.json"))) == 1
    assert len(verdict_files(cassette_dir)) == 1


# --- speed ------------------------------------------------------------------------------------


def test_cached_lookup_reads_one_file_and_calls_nobody(
    provider: Any, judge: OllamaJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hit path is one file read: counted, not timed (benchmarks/ times it)."""
    import ghostrun._judging._verdicts as verdicts

    grade("Sorry for the delay. " * 50, "apologises", judge)
    provider.stop()
    reads: list[Path] = []
    real_load = verdicts._validate.load
    monkeypatch.setattr(
        verdicts._validate, "load", lambda path, kind: reads.append(path) or real_load(path, kind)
    )
    for _ in range(3):
        assert grade("Sorry for the delay. " * 50, "apologises", judge).cached
    assert len(reads) == 3 and len(set(reads)) == 1
