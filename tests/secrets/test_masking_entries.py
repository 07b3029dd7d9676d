"""Masking an entry: exact values in any encoding, secret shapes, signed URLs."""

from __future__ import annotations

import json
import secrets as random_secrets
from pathlib import Path
from typing import Any

import httpx
import pytest
from carriers import HOSTS
from leaks import assert_not_on_disk, encoded_forms, only_cassette, stored, token
from simulator import ProviderSimulator

import ghostrun
from ghostrun._secrets._mask import MASK
from ghostrun._secrets._mask_entry import redact_entry

pytestmark = pytest.mark.usefixtures("forget_new_secrets", "no_keys_from_the_environment")


def _masked(text: Any, *secrets: str) -> Any:
    entry = {"request": {"body": {"text": "-"}}, "response": {"body": {"json": text}}}
    return redact_entry(entry, frozenset(secrets))["response"]["body"]["json"]


MASKED = [
    pytest.param({"k": "x secret-one y"}, ["secret-one"], {"k": f"x {MASK} y"}, id="plain"),
    pytest.param({"secret-one": 1}, ["secret-one"], {MASK: 1}, id="as a JSON key"),
    pytest.param("a%2fb%2Bc-0123", ["a/b+c-0123"], MASK, id="percent, either hex case"),
    pytest.param(
        '{\\"k\\": \\"q\\\\\\"uote-0123\\"}',
        ['q"uote-0123'],
        '{\\"k\\": \\"' + MASK + '\\"}',
        id="JSON escaped twice",
    ),
    pytest.param("abcdefgh12345678", ["abcdefgh12", "gh12345678"], MASK, id="overlapping"),
    pytest.param("S3cret-pw &amp; more", ["S3cret-pw & more"], MASK, id="html"),
    pytest.param(["ok", 7, None, True], ["secret-one"], ["ok", 7, None, True], id="untouched"),
]


@pytest.mark.parametrize(("value", "secrets", "expected"), MASKED)
def test_exact_values_are_masked_in_any_encoding(
    value: Any, secrets: list[str], expected: Any
) -> None:
    assert _masked(value, *secrets) == expected


def test_redact_entry_does_not_mutate_its_input() -> None:
    entry = {"request": {"body": {"json": {"api_key": "k-0123456"}}}, "response": {}}
    before = json.dumps(entry)
    redact_entry(entry, frozenset({"k-0123456"}))
    assert json.dumps(entry) == before


@pytest.mark.parametrize(
    ("secret", "text"),
    [
        ('quote"and\\slash/', 'before quote"and\\slash/ after'),
        ("tab\tinside-secret", "x tab\tinside-secret y"),
        ("plain-secret-value", "line one\nplain-secret-value\nline three"),
        ("plain-secret-value", "plain%2Dsecret%2dvalue"),
        ("plain-secret-value", "plain\\u002dsecret\\U002Dvalue"),
        ("with space-0123", "say with+space-0123 twice"),
        ("amp&secret-0123", "x amp&amp;secret-0123 y"),
        ("slash/secret-0123", "x slash\\/secret-0123 y"),
        ("quote'secret-0123", "x quote&#39;secret-0123 y"),
    ],
)
def test_the_fast_check_never_lets_a_secret_through(secret: str, text: str) -> None:
    """redact_entry searches the entry's JSON text first; escapes must not hide a secret."""
    entry = {"request": {"body": {"text": text}}, "response": {"body": {"json": {"t": [text]}}}}
    masked = json.dumps(redact_entry(entry, frozenset({secret})))
    for form in encoded_forms(secret):
        assert form not in json.loads(masked)["request"]["body"]["text"]
    assert MASK in masked


def test_a_secret_shape_after_an_escaped_newline_is_masked() -> None:
    prompt = "my key is:\nsk-proj-" + "a" * 24 + "\nplease keep it"
    entry = {"request": {"body": {"json": {"messages": [{"content": prompt}]}}}, "response": {}}
    masked = redact_entry(entry, frozenset())
    assert "sk-proj-" not in json.dumps(masked)
    assert masked["request"]["body"]["json"]["messages"][0]["content"].startswith("my key is:\n")


def test_secret_shapes_in_the_prompt_are_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    shapes = [
        "sk-proj-" + "A1b2C3d4" * 4,
        "sk-ant-api03-" + "x9" * 20,
        "gsk_" + "Q1w2E3r4T5" * 4,
        "AIzaSy" + "D" * 33,
        "AKIA" + "IOSFODNN7EXAMPLE",
        "ghp_" + "z9Y8x7W6v5" * 4,
        "eyJ" + "hbGciOiJIUzI1NiJ9." + "eyJ" + "zdWIiOiIxMjMifQ.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
    ]
    prompt = "Why does this fail? " + " ".join(shapes) + " Bearer abcdef0123456789"
    with (
        ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS),
        httpx.Client() as client,
    ):
        client.post(
            provider.url("/v1/chat/completions"),
            json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
        )

    stored_prompt = only_cassette(cassette_dir)["request"]["body"]["json"]["messages"][0]["content"]
    assert (
        stored_prompt == "Why does this fail? " + " ".join([MASK] * len(shapes)) + f" Bearer {MASK}"
    )
    # A shape the prompt carried is a credential the request carried: the echo goes too.
    reply = only_cassette(cassette_dir)["responses"][0]["body"]["json"]["choices"][0]["message"]
    assert reply["content"] == "Echo: " + stored_prompt
    assert_not_on_disk(cassette_dir, [*shapes, "abcdef0123456789"])


def test_a_key_spelled_over_the_parts_of_one_answer_is_masked() -> None:
    """google-genai's ``.text`` joins an answer's text parts: a key over two is found."""
    key = token("AIzaSy", 17)
    parts = [{"text": f"your key is {key[:10]}"}, {"text": f"{key[10:]}, keep it"}]
    answer = {"candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0}]}
    entry = {"request": {}, "response": {"status": 200, "body": {"json": answer}}}

    masked = redact_entry(entry, frozenset({key}))["response"]["body"]["json"]

    said = "".join(p["text"] for p in masked["candidates"][0]["content"]["parts"])
    assert said == f"your key is {MASK}, keep it"


def _sign_redirects(provider: ProviderSimulator) -> tuple[str, str]:
    """The simulator's redirect goes to a URL it signs: the signature and key it puts there."""
    signature, key = random_secrets.token_hex(32), token("AIzaSy", 17)
    provider.signed_params = {
        "X-Amz-Date": "20250101T000000Z",
        "X-Amz-Signature": signature,
        "key": key,
    }
    return signature, key


def test_a_redirect_to_a_signed_url_is_stored_without_its_signature(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    signature, key = _sign_redirects(provider)
    with (
        ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS) as session,
        httpx.Client(follow_redirects=True) as client,
    ):
        live = client.get(provider.url("/hostile/redirect"))
    assert live.status_code == 200 and live.history[0].status_code == 302
    assert session.recorded == 2
    assert_not_on_disk(cassette_dir, [signature, key], pieces=True)
    (redirect,) = [c for c in stored(cassette_dir) if c["responses"][0]["status"] == 302]
    body = redirect["responses"][0]["body"]["text"]
    assert f"X-Amz-Signature={MASK}" in body and "X-Amz-Date=20250101T000000Z" in body


def test_a_signed_redirect_replays_as_it_ran_live_with_its_signature_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    signature, key = _sign_redirects(provider)

    def follow(mode: str) -> httpx.Response:
        with (
            ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS),
            httpx.Client(follow_redirects=True) as client,
        ):
            return client.get(provider.url("/hostile/redirect"))

    live = follow("record")
    provider.stop()
    replayed = follow("replay")

    assert (
        [r.status_code for r in replayed.history] == [302] == [r.status_code for r in live.history]
    )
    assert replayed.status_code == live.status_code == 200
    assert (
        replayed.json()
        == live.json()
        == {"downloaded": True, "params": ["X-Amz-Date", "X-Amz-Signature", "key"]}
    )
    location = replayed.history[0].headers["location"]
    assert f"X-Amz-Signature={MASK}" in location and f"key={MASK}" in location
    assert "X-Amz-Date=20250101T000000Z" in location
    assert_not_on_disk(cassette_dir, [signature, key], pieces=True)


def test_credentials_in_a_kept_location_are_masked() -> None:
    location = "https://cdn.example.com/f?X-Amz-Signature=abc123def456&sig=s1g2&code=oauth-9&x=1"
    entry = {
        "request": {"body": {"text": ""}},
        "response": {"status": 302, "headers": {"location": location}, "body": {"text": ""}},
    }
    stored_location = redact_entry(entry, frozenset())["response"]["headers"]["location"]
    assert stored_location == (
        f"https://cdn.example.com/f?X-Amz-Signature={MASK}&sig={MASK}&code={MASK}&x=1"
    )
