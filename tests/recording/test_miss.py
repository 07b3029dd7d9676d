"""A replay miss: fast through every SDK, explicit about what changed, never swallowed."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import sdk_calls
from agents_under_test import PLAN, ToolResults, default_results, tool_loop
from simulator import ProviderSimulator

import ghostrun
from ghostrun._recording import _trajectory

LOOPBACK = ("127.0.0.1",)
PROMPT = "Where is my refund?\nOrder A123 was returned on Monday.\nPlease help."
CHANGED = "Where is my refund?\nOrder A123 was returned on Tuesday.\nPlease help."

# Each SDK with its default retry settings: anthropic and groq retry any
# Exception from the transport with backoff, so a miss must not be one.
SDKS: dict[str, Callable[[str, str], Any]] = {
    "openai": sdk_calls.openai_chat,
    "anthropic": sdk_calls.anthropic_chat,
    "groq": sdk_calls.groq_chat,
    "ollama": sdk_calls.ollama_chat,
}


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_a_one_word_change_misses_at_once_and_shows_the_changed_line(
    provider: ProviderSimulator, cassette_dir: Path, sdk: str
) -> None:
    call = SDKS[sdk]
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
        call(provider.base_url, PROMPT)
    provider.stop()

    started = time.perf_counter()
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay") as s:
            call(provider.base_url, CHANGED)
    elapsed = time.perf_counter() - started

    assert elapsed < 2.0, f"the miss took {elapsed:.2f}s to reach the test"
    message = str(caught.value)
    assert "POST http://127.0.0.1" in message
    assert str(cassette_dir) in message
    assert "GHOSTRUN_MODE=record" in message
    removed = [line for line in message.splitlines() if line.strip().startswith("-")]
    added = [line for line in message.splitlines() if line.strip().startswith("+")]
    assert any("returned on Monday." in line for line in removed), message
    assert any("returned on Tuesday." in line for line in added), message
    assert s.misses == [caught.value]


def test_a_miss_is_not_an_exception_so_catch_alls_cannot_hide_it() -> None:
    assert not issubclass(ghostrun.CacheMiss, Exception)
    assert issubclass(ghostrun.CacheMiss, BaseException)


def test_a_swallowed_miss_is_raised_when_the_session_exits(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    def app_with_fallback(prompt: str) -> str:
        try:
            return sdk_calls.openai_chat(provider.base_url, prompt) or ""
        except BaseException:  # an app's catch-all around its LLM call
            return "Sorry, something went wrong."

    with pytest.raises(ghostrun.CacheMiss, match="no recording for POST"):
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
            assert app_with_fallback("hi") == "Sorry, something went wrong."


def test_miss_without_any_recording_to_that_endpoint(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with pytest.raises(ghostrun.CacheMiss, match="No recorded request to POST"):
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
            sdk_calls.openai_chat(provider.base_url, "never recorded")
    assert provider.served == 0


def test_ci_default_is_replay_and_a_miss_says_so(
    monkeypatch: pytest.MonkeyPatch, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(ghostrun.CacheMiss, match=r"mode:\s+replay"):
        with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK):
            sdk_calls.openai_chat(provider.base_url, "on CI")
    assert provider.served == 0


@pytest.mark.anyio
async def test_async_miss_reaches_the_test(provider: ProviderSimulator, cassette_dir: Path) -> None:
    started = time.perf_counter()
    with pytest.raises(ghostrun.CacheMiss):
        async with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, mode="replay"):
            await sdk_calls.anthropic_async(provider.base_url, "nothing recorded")
    assert time.perf_counter() - started < 1.0


@pytest.fixture
def new_process() -> Iterator[Callable[[], None]]:
    """Start the count of each test's sessions afresh, as the next run's process would."""
    saved = _trajectory.swap(_trajectory.Tracker())
    yield lambda: _trajectory.swap(_trajectory.Tracker())
    _trajectory.swap(saved)


# -- ignore_fields speaks the diff's notation -------------------------------------------


def _chat_with(base_url: str, prompt: str, name: str, trace_id: str) -> str | None:
    reply = sdk_calls.openai_client(base_url).chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": prompt, "name": name}],
        extra_body={"metadata": {"trace_id": trace_id}},
    )
    return reply.choices[0].message.content


@pytest.mark.parametrize("name_path", ["messages[0].name", "messages[*].name", "messages.0.name"])
def test_ignore_fields_in_the_diffs_notation_ignores_them(
    provider: ProviderSimulator, cassette_dir: Path, name_path: str
) -> None:
    ignore = [name_path, "metadata.trace_id"]
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, ignore_fields=ignore):
        _chat_with(provider.base_url, PROMPT, "alice", "t-1")
    provider.stop()
    with ghostrun.session(
        cassette_dir=cassette_dir, hosts=LOOPBACK, ignore_fields=ignore, mode="replay"
    ) as replay:
        _chat_with(provider.base_url, PROMPT, "bob", "t-2")
    assert (replay.replayed, replay.misses) == (1, [])


def test_ignored_fields_are_left_out_of_the_miss_diff(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    ignore = ["metadata.trace_id"]
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, ignore_fields=ignore):
        _chat_with(provider.base_url, PROMPT, "alice", "t-1")
    provider.stop()
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(
            cassette_dir=cassette_dir, hosts=LOOPBACK, ignore_fields=ignore, mode="replay"
        ):
            _chat_with(provider.base_url, CHANGED, "alice", "t-2")
    message = str(caught.value)
    assert "returned on Tuesday." in message
    assert "trace_id" not in message, message


@pytest.mark.parametrize("bad", ["messages[0", "messages[x].name", "metadata..trace_id", ""])
def test_an_ignore_path_that_can_never_match_fails_at_session_creation(
    cassette_dir: Path, bad: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(f"invalid ignore_fields path {bad!r}")):
        ghostrun.session(cassette_dir=cassette_dir, ignore_fields=["metadata.trace_id", bad])


def test_a_miss_shows_the_absolute_directory_and_says_when_it_does_not_exist(
    provider: ProviderSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(cassette_dir="tests/cassettes", hosts=LOOPBACK, mode="replay"):
            sdk_calls.openai_chat(provider.base_url, "hi")
    message = str(caught.value)
    assert f"cassette dir: {tmp_path / 'tests' / 'cassettes'}\n" in message
    assert "The cassette directory does not exist." in message
    assert not (tmp_path / "tests").exists()


# -- messages that say what is true -----------------------------------------------------


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def _repository(path: Path) -> Path:
    path.mkdir()
    _git("init", "-q", cwd=path)
    _git("config", "user.email", "dev@example.com", cwd=path)
    _git("config", "user.name", "dev", cwd=path)
    return path


def test_a_changed_prompt_in_a_git_repository_gives_no_git_advice(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    repo = _repository(tmp_path / "repo")
    cassettes = repo / "cassettes"
    with ghostrun.session(cassette_dir=cassettes, hosts=LOOPBACK, name="t::prompt"):
        sdk_calls.openai_chat(provider.base_url, PROMPT)
    _git("add", ".", cwd=repo)
    _git("commit", "-q", "-m", "recorded", cwd=repo)
    provider.stop()

    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(
            cassette_dir=cassettes, hosts=LOOPBACK, name="t::prompt", mode="replay"
        ):
            sdk_calls.openai_chat(provider.base_url, CHANGED)
    message = str(caught.value)
    assert "git add" not in message and "git does not track" not in message, message
    assert "returned on Tuesday." in message  # the real cause: the request changed
    assert "GHOSTRUN_MODE=record" in message


def test_a_recorded_but_uncommitted_cassette_is_named_with_what_names_it(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    repo = _repository(tmp_path / "repo")
    cassettes = repo / "cassettes"
    with ghostrun.session(cassette_dir=cassettes, hosts=LOOPBACK, name="t::forgot"):
        sdk_calls.openai_chat(provider.base_url, PROMPT)
    (cassette,) = cassettes.glob("*.json")
    _git("add", "cassettes/trajectories", cwd=repo)  # the cassette itself is forgotten
    _git("commit", "-q", "-m", "recorded", cwd=repo)
    clone = tmp_path / "clone"  # another machine: what was committed, no more
    _git("clone", "-q", str(repo), str(clone), cwd=tmp_path)
    provider.stop()

    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(
            cassette_dir=clone / "cassettes", hosts=LOOPBACK, name="t::forgot", mode="replay"
        ):
            sdk_calls.openai_chat(provider.base_url, PROMPT)
    message = str(caught.value)
    assert f"git add {clone / 'cassettes' / cassette.name}" in message, message
    assert "(trajectories/t--forgot-" in message  # what says it was recorded


def test_a_missing_tracked_cassette_is_restored_with_git_checkout(
    provider: ProviderSimulator, tmp_path: Path
) -> None:
    repo = _repository(tmp_path / "repo")
    cassettes = repo / "cassettes"
    with ghostrun.session(cassette_dir=cassettes, hosts=LOOPBACK, name="t::deleted"):
        sdk_calls.openai_chat(provider.base_url, PROMPT)
    _git("add", ".", cwd=repo)
    _git("commit", "-q", "-m", "recorded", cwd=repo)
    (cassette,) = cassettes.glob("*.json")
    cassette.unlink()
    provider.stop()

    with pytest.raises(ghostrun.CacheMiss, match=f"git checkout -- {re.escape(str(cassette))}"):
        with ghostrun.session(
            cassette_dir=cassettes, hosts=LOOPBACK, name="t::deleted", mode="replay"
        ):
            sdk_calls.openai_chat(provider.base_url, PROMPT)


def _after_the_diff(message: str) -> list[str]:
    """The lines that follow the step diff's last line."""
    lines = message.splitlines()
    last = max(i for i, line in enumerate(lines) if line.startswith("    "))
    return lines[last + 1 :]


def _agent(base_url: str, results: ToolResults, mode: str, d: Path) -> None:
    with ghostrun.session(mode=mode, cassette_dir=d, hosts=LOOPBACK, name="t::agent"):
        tool_loop(base_url, results=results)


def test_a_miss_inside_an_agent_test_advises_after_the_step_diff(
    provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    provider.tool_plan = list(PLAN)

    def fresh_ids(name: str, arguments: dict[str, Any]) -> str:
        return f"{default_results(name, arguments)} (request {uuid.uuid4()})"

    _agent(provider.base_url, fresh_ids, "record", cassette_dir)
    provider.stop()
    new_process()
    with pytest.raises(ghostrun.CacheMiss) as caught:
        _agent(provider.base_url, fresh_ids, "replay", cassette_dir)
    message = str(caught.value)
    assert "step 2 of 3 of t::agent" in message, message
    advice = "\n".join(_after_the_diff(message))
    assert 'Pass normalize=["uuid"]' in advice, message


def test_a_changed_tool_result_in_an_agent_test_says_how_to_re_record(
    provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    provider.tool_plan = list(PLAN)
    _agent(provider.base_url, default_results, "record", cassette_dir)
    provider.stop()
    new_process()

    def changed(name: str, arguments: dict[str, Any]) -> str:
        return default_results(name, arguments).replace("Monday", "Tuesday")

    with pytest.raises(ghostrun.CacheMiss) as caught:
        _agent(provider.base_url, changed, "replay", cassette_dir)
    message = str(caught.value)
    assert "step 2 of 3 of t::agent" in message, message
    assert "GHOSTRUN_MODE=record" in "\n".join(_after_the_diff(message)), message


def test_the_closest_recording_is_never_a_step_this_session_already_replayed(
    provider: ProviderSimulator, cassette_dir: Path, new_process: Callable[[], None]
) -> None:
    provider.tool_plan = list(PLAN)

    def document(name: str, arguments: dict[str, Any], word: str) -> str:
        return "\n".join(f"{name} {word} line {i}" for i in range(100))  # long, all new

    _agent(provider.base_url, lambda n, a: document(n, a, "shipped"), "record", cassette_dir)
    shutil.rmtree(cassette_dir / "trajectories")  # as imported cassettes are: no trajectory
    provider.stop()
    new_process()
    with pytest.raises(ghostrun.CacheMiss) as caught:
        _agent(provider.base_url, lambda n, a: document(n, a, "delayed"), "replay", cassette_dir)
    message = str(caught.value)
    by_length = {  # step 1 sent 2 messages, step 2 (the one that changed) 4, step 3 6
        len(orjson.loads(p.read_bytes())["request"]["body"]["json"]["messages"]): p.name
        for p in cassette_dir.glob("*.json")
    }
    assert f"Closest recorded request to the same endpoint: {by_length[4]}" in message, message


def _chat_with_trace(base_url: str, trace_id: str) -> None:
    _chat_with(base_url, PROMPT, "alice", trace_id)


@pytest.mark.parametrize("trajectory", [True, False], ids=["step", "closest"])
def test_a_key_computed_under_other_settings_is_said_instead_of_blaming_the_url(
    provider: ProviderSimulator, cassette_dir: Path, trajectory: bool
) -> None:
    with ghostrun.session(cassette_dir=cassette_dir, hosts=LOOPBACK, name="t::settings"):
        _chat_with_trace(provider.base_url, "t-1")  # recorded without ignore_fields
    if not trajectory:
        shutil.rmtree(cassette_dir / "trajectories")
    provider.stop()
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with ghostrun.session(
            cassette_dir=cassette_dir,
            hosts=LOOPBACK,
            name="t::settings",
            mode="replay",
            ignore_fields=["metadata.trace_id"],
        ):
            _chat_with_trace(provider.base_url, "t-1")
    message = str(caught.value)
    assert "the URL or method differs" not in message, message
    assert 'ignore_fields=["metadata.trace_id"]' in message, message
    assert "computed under other normalize/ignore_fields settings" in message, message
