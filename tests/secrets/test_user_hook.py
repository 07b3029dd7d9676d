"""The session's ``redact=`` hook: what it edits, in cassettes and in the run log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import openai
import pytest
from carriers import HOSTS, openai_chat, run_log_text
from leaks import assert_not_on_disk, only_cassette, token
from simulator import ProviderSimulator

import ghostrun

pytestmark = pytest.mark.usefixtures("forget_new_secrets", "no_keys_from_the_environment")


def test_redact_hook_scrubs_pii_and_replay_still_hits(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    seen: list[dict[str, Any]] = []
    ssn = "123-45-6789"
    key = token("sk-proj-")

    def scrub(entry: dict[str, Any]) -> dict[str, Any]:
        seen.append(json.loads(json.dumps(entry)))
        body = entry["request"]["body"]["json"]
        del body["user"]
        body["messages"][0]["content"] = body["messages"][0]["content"].replace(ssn, "<ssn>")
        message = entry["response"]["body"]["json"]["choices"][0]["message"]
        message["content"] = message["content"].replace(ssn, "<ssn>")
        return entry

    def ask(api_key: str) -> str:
        client = openai.OpenAI(base_url=provider.url("/v1"), api_key=api_key, max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": f"My SSN is {ssn}."}],
            user="jane.doe@example.com",
        )
        return reply.choices[0].message.content or ""

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS, redact=scrub):
        assert ssn in ask(key)

    assert len(seen) == 1
    assert key not in json.dumps(seen[0])  # the hook sees the entry already masked
    assert_not_on_disk(cassette_dir, [ssn, "jane.doe@example.com", key])
    stored_body = only_cassette(cassette_dir)["request"]["body"]["json"]
    assert "user" not in stored_body
    assert stored_body["messages"][0]["content"] == "My SSN is <ssn>."

    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS) as session:
        assert ask(token("sk-proj-")) == "Echo: My SSN is <ssn>."
    assert session.replayed == 1


def test_redact_hook_may_edit_in_place(provider: ProviderSimulator, cassette_dir: Path) -> None:
    def scrub(entry: dict[str, Any]) -> None:
        entry["request"]["body"]["json"]["messages"][0]["content"] = "<removed>"

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS, redact=scrub):
        openai_chat(provider, token("sk-proj-"))

    stored_body = only_cassette(cassette_dir)["request"]["body"]["json"]
    assert stored_body["messages"][0]["content"] == "<removed>"


def test_redact_hook_cannot_reintroduce_a_secret(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("sk-proj-")

    def careless(entry: dict[str, Any]) -> dict[str, Any]:
        entry["request"]["headers"]["authorization"] = f"Bearer {key}"
        entry["response"]["headers"]["x-debug"] = quote(key, safe="")
        return entry

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS, redact=careless):
        openai_chat(provider, key)

    assert_not_on_disk(cassette_dir, [key])


def test_the_redact_hook_applies_to_the_run_log(
    run_log: Any, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    ssn = "123-45-6789"

    def scrub(entry: dict[str, Any]) -> dict[str, Any]:
        text = json.dumps(entry).replace(ssn, "<ssn>")
        return dict(json.loads(text))

    def ask(mode: str, prompt: str) -> str:
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS, redact=scrub):
            client = openai.OpenAI(base_url=provider.url("/v1"), api_key=token("sk-proj-"))
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
            )
            text = reply.choices[0].message.content or ""
            ghostrun.expect(text).contains("SSN")
            return text

    assert ssn in ask("record", f"My SSN is {ssn}.")
    with pytest.raises(ghostrun.CacheMiss):
        ask("replay", f"My SSN is still {ssn}.")
    text = run_log_text(run_log)
    assert "Echo: My SSN is <ssn>." in text  # the output, as the cassette holds it
    assert "still <ssn>" in text  # the miss diff, hooked too
    assert ssn not in text
