"""Credential names are read as words, not prefixes (DESIGN §4): ``author_email`` is content.

A response field masked as a credential changes what replays: on a corpus of recorded
cassettes, 40 rows replayed a different body than the provider sent because
``author_email`` started with ``auth``. The rule is one function
(`_credentials.is_credential_name`) that every road calls; a property over names
spelled every way a JSON field, a query parameter or a header is spelled holds it to
the words, and real SDK calls show the replay and the cassette.
"""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from leaks import assert_not_on_disk, token
from simulator import ProviderSimulator, RawReply

import ghostrun
from ghostrun._secrets._credentials import (
    CREDENTIAL_ENDINGS,
    CREDENTIAL_STARTS,
    HARMLESS_FIELDS,
    HARMLESS_NAMES,
    RESPONSE_HARMLESS,
    is_credential_field,
    is_credential_header,
    is_credential_param,
    is_minted_field,
)

pytestmark = pytest.mark.usefixtures("forget_new_secrets", "no_keys_from_the_environment")

CONTENT = ["author_email", "author_name", "authority", "authored_at", "authorship", "authors"]
CREDENTIALS = [
    "auth",
    "authorization",
    "auth_token",
    "x-auth-key",
    "api_key",
    "client_secret",
    "password",
    "apiKey",
    "X-API-KEY",
    "apikey",
    "access_token",
    "authToken",
    "secret_key_2",
]


@pytest.mark.parametrize("name", CONTENT)
def test_words_that_start_like_auth_are_content_on_every_road(name: str) -> None:
    assert not is_credential_field(name)
    assert not is_credential_param(name)
    assert not is_credential_header(name)
    assert not is_minted_field(name)


@pytest.mark.parametrize("name", CREDENTIALS)
def test_credential_words_are_credentials_on_every_road(name: str) -> None:
    assert is_credential_field(name)
    assert is_credential_param(name)
    assert is_credential_header(name)


CONTENT_WORDS = [
    "author",
    "authored",
    "authority",
    "authorship",
    "authors",
    "email",
    "name",
    "at",
    "max",
    "tokens",
    "count",
    "model",
    "monkey",
    "keys",
    "tokenizer",
    "user",
    "id",
    "page",
    "x",
    "api",
    "openai",
]
WORDS = st.lists(
    st.sampled_from([*CONTENT_WORDS, *CREDENTIAL_ENDINGS, *CREDENTIAL_STARTS]),
    min_size=1,
    max_size=4,
)


def _spell(words: list[str], style: str, digits: str) -> str:
    """``words`` as a field, parameter or header is written."""
    if style == "camel":
        name = words[0] + "".join(w.capitalize() for w in words[1:])
    elif style == "pascal":
        name = "".join(w.capitalize() for w in words)
    else:
        separator = {"snake": "_", "kebab": "-", "dots": ".", "upper": "_"}[style]
        name = separator.join(words)
        name = name.upper() if style == "upper" else name
    return name + digits


@settings(max_examples=500, deadline=None)
@given(
    words=WORDS,
    style=st.sampled_from(["snake", "kebab", "dots", "upper", "camel", "pascal"]),
    digits=st.sampled_from(["", "2", "_1"]),
)
def test_property_a_name_is_a_credential_by_its_last_or_first_word_only(
    words: list[str], style: str, digits: str
) -> None:
    """Last word key/secret/token/password/credential(s)/signature, or first word
    auth/authorization, however the name is spelled; never because a word only starts
    like one (``author``, ``authority``) or ends like one (``monkey``, ``tokens``)."""
    name = _spell(words, style, digits)
    by_words = words[-1] in CREDENTIAL_ENDINGS or words[0] in CREDENTIAL_STARTS
    squashed = "".join(words)
    harmless = squashed in HARMLESS_NAMES
    assert is_credential_param(name) is (by_words and not harmless), name
    field = by_words and not harmless and squashed not in HARMLESS_FIELDS
    assert is_credential_field(name) is field, name
    if not any(w in CREDENTIAL_ENDINGS or w in CREDENTIAL_STARTS for w in words):
        assert not is_credential_header(name), name
    if field and squashed not in RESPONSE_HARMLESS:
        assert is_minted_field(name), name


COMMIT = {
    "sha": "9fceb02d0ae598e95dc970b74767f19372d61af8",
    "author_email": "jane.doe.1987@example.com",
    "author_name": "Jane Doe-Smith 2nd",
    "authored_at": "2024-05-01T10:20:30Z",
    "authority": "Registry Authority Z9",
    "authorship": "Primary Author #1",
}


def test_a_response_with_author_fields_replays_as_the_provider_sent_it(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """Through the real openai SDK: recorded, then replayed, byte for byte the same."""
    provider.raw_replies["commit"] = RawReply(
        200, [("content-type", "application/json")], json.dumps(COMMIT).encode()
    )
    client = openai.OpenAI(base_url=provider.url("/raw"), api_key=token("sk-proj-"))
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=["127.0.0.1"]):
        live = client.get("/commit", cast_to=object)
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=["127.0.0.1"]) as s:
        again = client.get("/commit", cast_to=object)
    assert s.replayed == 1
    assert live == again == COMMIT


def test_a_key_sent_in_one_request_and_echoed_in_another_answer_is_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """A rotated key: the first request carries the old key, the second the new one, and the
    provider's second answer quotes the old key. Neither reaches the cassettes."""
    old, new = token("sk-proj-"), token("sk-proj-")
    answers = iter(["key rotated", f"your previous key was {old}, now retired"])
    provider.reply = lambda body: next(answers)
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=["127.0.0.1"]):
        for key in (old, new):
            client = openai.OpenAI(base_url=provider.url("/v1"), api_key=key, max_retries=0)
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": f"rotate {key[-4:]}"}]
            )
    assert old in (reply.choices[0].message.content or "")  # the provider did echo it
    assert_not_on_disk(cassette_dir, [old, new])
