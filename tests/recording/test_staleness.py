"""Staleness: every response carries its recording day, and ``max_age`` acts on it per mode.

The clock is the test's: ``ghostrun._core._age._clock`` is swapped for a day the
test moves, so "91 days later" takes no waiting and no patched ``datetime``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import openai
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core import _age, _config
from ghostrun._recording import _stale
from ghostrun._store import _validate
from ghostrun._tools._cli import main

pytest_plugins = ["pytester"]

DAY = date(2026, 3, 1)
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Where is my refund?"}]}


class Clock:
    def __init__(self) -> None:
        self.today = DAY

    def __call__(self) -> date:
        return self.today

    def advance(self, days: int) -> None:
        self.today += timedelta(days=days)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clock]:
    fake = Clock()
    monkeypatch.setattr(_age, "_clock", fake)
    monkeypatch.setattr(_stale, "_deferred", False)  # outside pytest's own plugin run
    monkeypatch.setattr(_config.settings, "max_age", None)
    monkeypatch.setattr(_config.settings, "on_stale", None)
    monkeypatch.delenv("GHOSTRUN_MAX_AGE", raising=False)
    yield fake


def _ask(provider: ProviderSimulator, text: str = "Where is my refund?") -> str:
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key="sk-test", max_retries=0)
    messages = [{"role": "user", "content": text}]
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
    return reply.choices[0].message.content or ""


def _session(cassette_dir: Path, **kwargs: Any) -> ghostrun.Session:
    return ghostrun.session(cassette_dir=cassette_dir, hosts=["127.0.0.1"], **kwargs)


def _days(cassette_dir: Path) -> dict[str, list[str | None]]:
    return {
        p.name: [r.get("recorded_on") for r in json.loads(p.read_text())["responses"]]
        for p in sorted(cassette_dir.glob("*.json"))
    }


def test_each_recorded_response_carries_its_day_and_files_without_one_still_replay(
    provider: ProviderSimulator, cassette_dir: Path, clock: Clock
) -> None:
    with _session(cassette_dir, mode="auto"):
        first = _ask(provider)
    assert list(_days(cassette_dir).values()) == [["2026-03-01"]]

    (path,) = cassette_dir.glob("*.json")
    document = json.loads(path.read_text())
    del document["responses"][0]["recorded_on"]  # as written before days were kept
    path.write_text(json.dumps(document))
    provider.stop()
    with _session(cassette_dir, mode="replay", max_age="1d") as s:
        assert _ask(provider) == first
    assert s.replayed == 1


def test_auto_re_records_an_exchange_older_than_max_age_and_replays_a_fresh_one(
    provider: ProviderSimulator, cassette_dir: Path, clock: Clock
) -> None:
    with _session(cassette_dir, mode="auto"):
        first = _ask(provider)
    clock.advance(90)
    with _session(cassette_dir, mode="auto", max_age="90d") as fresh:
        assert _ask(provider) == first
    assert (fresh.replayed, fresh.recorded, provider.served) == (1, 0, 1)

    clock.advance(1)
    with _session(cassette_dir, mode="auto", max_age="90d") as stale:
        _ask(provider)
    assert (stale.replayed, stale.recorded, provider.served) == (0, 1, 2)
    assert list(_days(cassette_dir).values()) == [["2026-05-31"]]  # replaced, not added

    with _session(cassette_dir, mode="auto") as unlimited:  # no max_age: never stale
        clock.advance(1000)
        _ask(provider)
    assert unlimited.replayed == 1 and provider.served == 2


def test_replay_replays_stale_exchanges_and_warns_once_listing_their_cassettes(
    provider: ProviderSimulator, cassette_dir: Path, clock: Clock
) -> None:
    with _session(cassette_dir, mode="auto"):
        _ask(provider, "one")
        _ask(provider, "two")
    clock.advance(10)
    with _session(cassette_dir, mode="auto"):
        _ask(provider, "three")
    provider.stop()
    clock.advance(85)  # 95 days after the first two, 85 after the third

    with pytest.warns(ghostrun.StaleCassetteWarning) as caught:
        with _session(cassette_dir, mode="replay", max_age="90d") as s:
            for text in ("one", "two", "three", "one"):
                _ask(provider, text)
    assert s.replayed == 4
    (warning,) = caught.list
    names = sorted(name for name, days in _days(cassette_dir).items() if days == ["2026-03-01"])
    message = str(warning.message)
    assert len(names) == 2 and all(name in message for name in names)
    assert message.count(".json") == 2 and "(recorded 2026-03-01)" in message
    assert "older than max_age (90 days)" in message


def test_replay_fails_at_the_end_with_on_stale_fail(
    provider: ProviderSimulator, cassette_dir: Path, clock: Clock
) -> None:
    with _session(cassette_dir, mode="auto"):
        first = _ask(provider)
    provider.stop()
    clock.advance(91)
    with pytest.raises(ghostrun.StaleCassette, match=r"replayed 1 cassette recorded older"):
        with _session(cassette_dir, mode="replay", max_age="90d", on_stale="fail"):
            assert _ask(provider) == first
    with warnings.catch_warnings():
        warnings.simplefilter("error", ghostrun.StaleCassetteWarning)
        with _session(cassette_dir, mode="replay", max_age="91d", on_stale="fail"):
            _ask(provider)  # 91 days old is not older than 91 days


def test_max_age_from_configure_and_the_environment(
    provider: ProviderSimulator,
    cassette_dir: Path,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with _session(cassette_dir, mode="auto"):
        _ask(provider)
    provider.stop()
    clock.advance(15)
    ghostrun.configure(max_age="2w", on_stale="fail")
    try:
        with pytest.raises(ghostrun.StaleCassette):
            with _session(cassette_dir, mode="replay"):
                _ask(provider)
        monkeypatch.setenv("GHOSTRUN_MAX_AGE", "3w")  # beats configure()
        with _session(cassette_dir, mode="replay"):
            _ask(provider)
    finally:
        ghostrun.configure(max_age=None, on_stale=None)


@pytest.mark.parametrize(
    ("text", "days"), [("90d", 90), ("12w", 84), ("6m", 180), ("1y", 365), ("30", 30)]
)
def test_max_age_spellings(text: str, days: int) -> None:
    assert _age.parse_max_age(text) == days


@pytest.mark.parametrize("bad", ["soon", "90 days", "-1d", "1.5w"])
def test_a_max_age_that_means_nothing_fails_where_it_was_written(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid max_age"):
        ghostrun.session(max_age=bad)
    with pytest.raises(ValueError, match="invalid on_stale"):
        ghostrun.session(on_stale="explode")


def test_check_older_than_lists_exactly_the_stale_cassettes(
    provider: ProviderSimulator,
    cassette_dir: Path,
    clock: Clock,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _session(cassette_dir, mode="auto"):
        _ask(provider, "old")
    old = set(_days(cassette_dir))
    clock.advance(60)
    with _session(cassette_dir, mode="auto"):
        _ask(provider, "recent")
        _ask(provider, "undated")
    undated = next(p for p in cassette_dir.glob("*.json") if "undated" in p.read_text())
    document = json.loads(undated.read_text())
    del document["responses"][0]["recorded_on"]
    undated.write_text(json.dumps(document))
    clock.advance(40)  # "old" is 100 days old, "recent" 40

    code = main(["check", "--older-than", "90d", "--cassette-dir", str(cassette_dir)])
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("  ")}
    assert code == 1 and listed == old
    assert "(recorded 2026-03-01)" in out and "1 cassette without a recording day" in out

    code = main(["check", "--older-than", "15w", "--cassette-dir", str(cassette_dir)])
    assert code == 0 and "OK: no cassette is older than 15w" in capsys.readouterr().out


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_pytest_warns_once_at_the_end_of_the_run(
    pytester: pytest.Pytester,
    provider: ProviderSimulator,
    cassette_dir: Path,
    clock: Clock,
    workers: list[str],
) -> None:
    """Two tests replay stale cassettes: the run ends with one warning naming both
    (under pytest-xdist too, each test on its own worker)."""
    with _session(cassette_dir, mode="auto"):
        _ask(provider, "first")
        _ask(provider, "second")
    for path in cassette_dir.glob("*.json"):  # recorded a year ago
        path.write_text(path.read_text().replace('"2026-03-01"', '"2025-03-01"'))
    provider.stop()
    pytester.makeini(f"[pytest]\nghostrun_max_age = 90d\nghostrun_cassette_dir = {cassette_dir}\n")
    pytester.makepyfile(
        f"""
        import openai, pytest

        def ask(text):
            client = openai.OpenAI(base_url="{provider.url("/v1")}", api_key="k", max_retries=0)
            messages = [{{"role": "user", "content": text}}]
            return client.chat.completions.create(model="gpt-4o-mini", messages=messages)

        @pytest.mark.ghostrun(hosts=["127.0.0.1"])
        def test_first():
            ask("first")

        @pytest.mark.ghostrun(hosts=["127.0.0.1"])
        def test_second():
            ask("second")
        """
    )
    result = pytester.runpytest_subprocess("--ghostrun-replay", "-p", "no:cassetter", *workers)
    result.assert_outcomes(passed=2, warnings=1)
    out = result.stdout.str()
    assert out.count("StaleCassetteWarning: ghostrun: replayed 2 cassettes recorded older") == 1
    assert all(p.name in out for p in cassette_dir.glob("*.json"))


def test_a_recording_day_that_is_not_a_day_is_a_cassette_error(
    provider: ProviderSimulator, cassette_dir: Path, clock: Clock
) -> None:
    with _session(cassette_dir, mode="auto"):
        _ask(provider)
    (path,) = cassette_dir.glob("*.json")
    path.write_text(path.read_text().replace('"2026-03-01"', '"yesterday"'))
    with pytest.raises(ghostrun.CassetteError, match=r"responses\[0\]\.recorded_on"):
        _validate.load(path, "cassette")
