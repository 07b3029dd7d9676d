"""``normalize=``: a date or a uuid in the prompt no longer makes every run a miss.

Two apps a new user writes: one tells the model today's date, one tags each
prompt with a fresh uuid. The test controls both (the day and the uuid are
arguments). With the normaliser the recording replays on another day or with
another uuid, and any other change to the same message still misses; without
it, the miss says which option fixes it.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import date
from pathlib import Path

import openai
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core._normalize import normalizer

MONDAY, TUESDAY = date(2026, 12, 2), date(2026, 12, 3)
ID_1, ID_2 = uuid.UUID(int=1), uuid.UUID(int=2**100 + 7)


def dated_app(provider: ProviderSimulator, today: date, tone: str = "Be helpful.") -> str:
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key="sk-test", max_retries=0)
    messages = [
        {"role": "system", "content": f"Today is {today.isoformat()}. {tone}"},
        {"role": "user", "content": "When does my refund arrive?"},
    ]
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
    return reply.choices[0].message.content or ""


def uuid_app(provider: ProviderSimulator, request_id: uuid.UUID, text: str = "Hello") -> str:
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key="sk-test", max_retries=0)
    messages = [{"role": "user", "content": f"[request {request_id}] {text}"}]
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)  # type: ignore[arg-type]
    return reply.choices[0].message.content or ""


def _session(cassette_dir: Path, **kwargs: object) -> ghostrun.Session:
    return ghostrun.session(cassette_dir=cassette_dir, hosts=["127.0.0.1"], **kwargs)  # type: ignore[arg-type]


def test_a_dated_prompt_replays_the_next_day_with_normalize_date(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with _session(cassette_dir, mode="auto", normalize=["date"]):
        monday = dated_app(provider, MONDAY)
    provider.stop()
    with _session(cassette_dir, mode="replay", normalize=["date"]) as s:
        assert dated_app(provider, TUESDAY) == monday
    assert s.replayed == 1
    (path,) = cassette_dir.glob("*.json")
    stored = json.loads(path.read_text())
    assert stored["request"]["body"]["json"]["messages"][0]["content"].startswith(
        "Today is 2026-12-02."  # stored as sent: never normalised
    )


def test_any_other_change_to_the_dated_message_still_misses(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with _session(cassette_dir, mode="auto", normalize=["date"]):
        dated_app(provider, MONDAY)
    provider.stop()
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with _session(cassette_dir, mode="replay", normalize=["date"]):
            dated_app(provider, TUESDAY, tone="Be rude.")
    message = str(caught.value)
    assert "-" in message and "Be helpful." in message and "Be rude." in message
    assert "Today is <date>. Be rude." in message  # the diff shows what the key compares
    assert "re-recording cannot help" not in message  # a real change: record it


def test_without_normalize_the_miss_names_the_exact_option(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with _session(cassette_dir, mode="auto"):
        dated_app(provider, MONDAY)
    provider.stop()
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with _session(cassette_dir, mode="replay"):
            dated_app(provider, TUESDAY)
    message = str(caught.value)
    assert 'Pass normalize=["date"]' in message
    assert "re-recording cannot help" in message
    assert "run once with GHOSTRUN_MODE=record" not in message
    assert "Today is 2026-12-02." in message and "Today is 2026-12-03." in message  # the diff


def test_a_uuid_prompt_replays_with_another_uuid_and_misses_on_other_changes(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with _session(cassette_dir, mode="auto", normalize=["uuid"]):
        first = uuid_app(provider, ID_1)
    provider.stop()
    with _session(cassette_dir, mode="replay", normalize=["uuid"]):
        assert uuid_app(provider, ID_2) == first
    with pytest.raises(ghostrun.CacheMiss):
        with _session(cassette_dir, mode="replay", normalize=["uuid"]):
            uuid_app(provider, ID_2, text="Goodbye")
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with _session(cassette_dir, mode="replay"):
            uuid_app(provider, ID_2)
    assert 'Pass normalize=["uuid"]' in str(caught.value)


def test_a_miss_that_is_a_real_change_suggests_recording_and_the_key_options(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    with _session(cassette_dir, mode="auto"):
        dated_app(provider, MONDAY)
    provider.stop()
    with pytest.raises(ghostrun.CacheMiss) as caught:
        with _session(cassette_dir, mode="replay"):
            dated_app(provider, MONDAY, tone="Be rude.")
    message = str(caught.value)
    assert "run once with GHOSTRUN_MODE=record" in message
    assert "ignore_fields=[...]" in message and 'normalize=["uuid", "date", ...]' in message
    assert "re-recording cannot help" not in message


def test_user_regexes_and_configure(provider: ProviderSimulator, cassette_dir: Path) -> None:
    ghostrun.configure(normalize=[re.compile(r"request [0-9a-f-]+")])
    try:
        with _session(cassette_dir, mode="auto"):
            first = uuid_app(provider, ID_1)
        provider.stop()
        with _session(cassette_dir, mode="replay"):
            assert uuid_app(provider, ID_2) == first
        with _session(cassette_dir, mode="replay", normalize=[r"request [0-9a-f-]+"]):
            assert uuid_app(provider, ID_2) == first
    finally:
        ghostrun.configure(normalize=None)


@pytest.mark.parametrize(
    ("names", "before", "after"),
    [
        (["uuid"], "id 123e4567-e89b-12d3-a456-426614174000 ok", "id <uuid> ok"),
        (["iso_datetime"], "at 2026-12-02T10:11:12.5Z.", "at <iso_datetime>."),
        (
            ["date", "iso_datetime"],
            "2026-12-02T10:11:12+01:00 or 2026-12-03",
            "<iso_datetime> or <date>",
        ),
        (
            ["unix_ts"],
            "ts=1796233928 and 1796233928123 not 42",
            "ts=<unix_ts> and <unix_ts> not 42",
        ),
        (["hex_id"], "trace 4bf92f3577b34da6a3ce929d0e0e4736", "trace <hex_id>"),
        # minted as "call_" + uuid4().hex: "_" is a word character, not a boundary
        (["hex_id"], "call_4bf92f3577b34da6a3ce929d0e0e4736", "call_<hex_id>"),
        (["hex_id"], "id-4bf92f3577b34da6a3ce929d0e0e4736.", "id-<hex_id>."),
        (["hex_id"], "4bf92f3577b34da6a3ce929d0e0e4736Z", "4bf92f3577b34da6a3ce929d0e0e4736Z"),
        (["prefixed_id"], "toolu_01A09q90qw90lq917835lq9 ran", "<prefixed_id> ran"),
        (["prefixed_id"], "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "<prefixed_id>"),
        (["prefixed_id"], "call_Xb3kQ9mZ7pLw2Rt5Yv8N", "<prefixed_id>"),
        (["prefixed_id"], '{"id": "resp_68af0c5b1b2c8190a1e2f3"}', '{"id": "<prefixed_id>"}'),
        # words are not ids: no digit, or too short after the prefix
        (["prefixed_id"], "the_quick_brown_foxjumpsoverthelazydog", None),
        (["prefixed_id"], "max_tokens fc_ab12 call_short1", None),
        (["date"], "version 2", "version 2"),
    ],
)
def test_builtin_shapes(names: list[str], before: str, after: str | None) -> None:
    shapes = normalizer(names)
    assert shapes is not None and shapes.text(before) == (before if after is None else after)


@pytest.mark.parametrize("bad", ["dates", "(unclosed", 42])
def test_a_normalize_entry_that_means_nothing_fails_where_it_was_written(bad: object) -> None:
    with pytest.raises(ValueError, match="normalize"):
        ghostrun.session(normalize=[bad])
    with pytest.raises(ValueError, match="normalize"):
        ghostrun.configure(normalize=[bad])  # type: ignore[list-item]
