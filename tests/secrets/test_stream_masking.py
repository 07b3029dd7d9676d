"""A secret spelled across a stream's chunks or events is masked, and the stream replays."""

from __future__ import annotations

import base64
import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from carriers import ANY_SECRET, FRACTIONS, GEMINI_BODY, HOSTS, MESSAGES, Cuts, echo
from hypothesis import given, settings
from hypothesis import strategies as st
from leaks import assert_not_on_disk, assert_not_written, only_cassette, stored, token
from simulator import ProviderSimulator, RawReply

import ghostrun
from ghostrun._secrets._mask import MASK, patterns
from ghostrun._secrets._mask_entry import redact_entry
from ghostrun._secrets._streams import mask_chunks
from ghostrun._store._wscassette import Conversation
from ghostrun._store._wsredact import redact_conversation

pytestmark = pytest.mark.usefixtures("forget_new_secrets", "no_keys_from_the_environment")


def test_streamed_echo_is_masked_in_every_chunk(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("sk-proj-")
    provider.echo_auth = True
    provider.reply = echo([key])
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        client = openai.OpenAI(base_url=provider.url("/v1"), api_key=key, max_retries=0)
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    assert key in text
    assert_not_on_disk(cassette_dir, [key])
    chunks = only_cassette(cassette_dir)["responses"][0]["body"]["sse"]
    assert sum(MASK in chunk for chunk in chunks) == 2  # the bare key, and "Bearer <key>"


def test_a_key_split_after_an_event_whose_echo_ends_in_a_backslash_is_masked() -> None:
    """The events are read as the provider sent them. Masking first the echo ending in a
    backslash (JSON inside JSON) took the next escape too: its event stopped parsing,
    and the key split between it and the next event was written in two pieces."""
    key, other = token("sk-proj-"), "Ժ}YÄ%⬄ĳἎ9¦Ì\\"
    events = [
        {
            "choices": [{"index": 0, "delta": {"content": key[:12]}}],
            "echo": json.dumps({"s": other}),
        },
        {"choices": [{"index": 0, "delta": {"content": key[12:]}}]},
    ]
    chunks = [f"data: {json.dumps(event)}\n\n" for event in events]

    masked, _ = mask_chunks(chunks, patterns(frozenset({key, other})))

    assert key[:12] not in "".join(masked) and key[12:] not in "".join(masked)
    first, second = (json.loads(chunk.removeprefix("data: ")) for chunk in masked)
    assert json.loads(first["echo"]) == {"s": MASK}  # the escape after the mask is whole
    content = first["choices"][0]["delta"]["content"] + second["choices"][0]["delta"]["content"]
    assert content == MASK  # the first piece holds the mask, the next is emptied


def _cut_inside(secret: str) -> Callable[[list[bytes]], list[bytes]]:
    """Re-cut a stream so that a chunk boundary falls in the middle of ``secret``."""

    def rechunk(events: list[bytes]) -> list[bytes]:
        out = []
        for event in events:
            at = event.find(secret.encode())
            if at < 0:
                out.append(event)
            else:
                middle = at + len(secret) // 2
                out += [event[:middle], event[middle:]]
        return out

    return rechunk


def _halves(secret: str) -> Callable[[str], list[str]]:
    """Delta pieces that put each half of ``secret`` in an event of its own."""

    def pieces(text: str) -> list[str]:
        before, _, after = text.partition(secret)
        half = len(secret) // 2
        return [p for p in (before, secret[:half], secret[half:], after) if p]

    return pieces


def _stream_openai(provider: ProviderSimulator, key: str) -> str:
    client = openai.OpenAI(base_url=provider.url("/v1"), api_key=key, max_retries=0)
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def _stream_anthropic(provider: ProviderSimulator, key: str) -> str:
    client = anthropic.Anthropic(base_url=provider.base_url, api_key=key, max_retries=0)
    with client.messages.stream(model="claude-opus-4-7", max_tokens=64, messages=MESSAGES) as s:
        return "".join(s.text_stream)


async def _stream_aiohttp(provider: ProviderSimulator, key: str) -> str:
    import aiohttp

    body = {"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            provider.url("/v1/chat/completions"),
            json=body,
            headers={"authorization": f"Bearer {key}"},
        ) as response,
    ):
        raw = (await response.read()).decode()
    return "".join(
        (json.loads(line[6:])["choices"] or [{}])[0].get("delta", {}).get("content") or ""
        for line in raw.splitlines()
        if line.startswith("data: {")
    )


STREAMERS = {
    "openai": _stream_openai,
    "anthropic": _stream_anthropic,
    "aiohttp": lambda provider, key: __import__("asyncio").run(_stream_aiohttp(provider, key)),
}


@pytest.mark.parametrize("how", ["cut inside an event", "two delta events"])
@pytest.mark.parametrize("sdk", sorted(STREAMERS))
def test_a_secret_split_across_a_stream_is_masked(
    sdk: str, how: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("sk-proj-")
    provider.reply = f"your key is {key}, keep it safe"
    if how == "two delta events":
        provider.delta_pieces = _halves(key)
    else:
        provider.rechunk = _cut_inside(key)
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        live = STREAMERS[sdk](provider, key)
    assert key in live
    assert_not_on_disk(cassette_dir, [key], pieces=True)

    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS) as session:
        replayed = STREAMERS[sdk](provider, token("sk-proj-"))
    assert session.replayed == 1
    assert replayed == live.replace(key, MASK)


def _chat_chunk(content: str) -> dict[str, Any]:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": None}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [choice]}


def _sse_spelled(value: dict[str, Any], form: str) -> bytes:
    """One chat chunk as an SSE event, written in one of the ways SSE and JSON allow."""
    text = json.dumps(value)
    if form == "lone CR line ends":
        return f"data: {text}\r\r".encode()
    if form == "CRLF line ends":
        return f"data: {text}\r\n\r\n".encode()
    if form == "JSON over several data lines":
        lines = json.dumps(value, indent=1).split("\n")
        return ("".join(f"data: {line}\n" for line in lines) + "\n").encode()
    if form == "a duplicate key":
        return f'data: {{"id": "first", {text[1:]}\n\n'.encode()
    if form == "a lone surrogate escape":
        return f'data: {{"system_fingerprint": "fp\\ud83d", {text[1:]}\n\n'.encode()
    raise AssertionError(form)


@pytest.mark.parametrize(
    "form",
    [
        "CRLF line ends",
        "lone CR line ends",
        "JSON over several data lines",
        "a duplicate key",
        "a lone surrogate escape",
    ],
)
def test_a_key_split_across_events_is_masked_however_the_stream_is_spelled(
    form: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """The openai SDK reads each of these streams (SSE lines may end in a lone CR, an
    event's data may span lines; its json keeps a duplicate key's last value and takes a
    lone surrogate): each event is read as the SDK reads it, so a key the model spells
    over two of them is found, and the masked stream replays."""
    key = token("sk-proj-")
    text = f"your key is {key}, keep it"
    half = text.index(key) + len(key) // 2
    events = [_sse_spelled(_chat_chunk(piece), form) for piece in (text[:half], text[half:])]
    events.append(b"data: [DONE]" + (b"\r\r" if "CR" in form else b"\n\n"))
    provider.raw_replies["spelled"] = RawReply(
        200, [("content-type", "text/event-stream")], chunks=events
    )

    _record_then_replay_masked(provider, cassette_dir, "/raw/spelled", key, text)


def _record_then_replay_masked(
    provider: ProviderSimulator, cassette_dir: Path, route: str, key: str, text: str
) -> None:
    """A chat stream of ``route`` spells ``text`` live; none of ``key`` is written; the
    simulator stopped, it replays with the key masked."""

    def chat(mode: str) -> str:
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS):
            client = openai.OpenAI(base_url=provider.url(route), api_key=key)
            stream = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

    assert chat("record") == text
    assert_not_on_disk(cassette_dir, [key], pieces=True)
    provider.stop()
    assert chat("replay") == text.replace(key, MASK)


def _gemini_array(road: str, url: str, key: str) -> str:
    """Gemini's stream without ``alt=sse``: one JSON array of chunks; the text they spell."""
    import asyncio

    import aiohttp
    import requests

    headers = {"x-goog-api-key": key}
    if road == "httpx":
        raw = httpx.post(url, json=GEMINI_BODY, headers=headers).content
    elif road == "requests":
        raw = requests.post(url, json=GEMINI_BODY, headers=headers, timeout=10).content
    else:

        async def post() -> bytes:
            async with (
                aiohttp.ClientSession() as http,
                http.post(url, json=GEMINI_BODY, headers=headers) as response,
            ):
                return await response.read()

        raw = asyncio.run(post())
    return "".join(
        part["text"]
        for chunk in json.loads(raw)
        for part in chunk["candidates"][0]["content"]["parts"]
    )


@pytest.mark.parametrize("spelled", ["compact", "as Gemini pretty-prints it"])
@pytest.mark.parametrize("road", ["httpx", "requests", "aiohttp"])
def test_a_key_split_across_the_chunks_of_a_json_array_stream_is_masked(
    road: str, spelled: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """Gemini's streamGenerateContent without alt=sse answers application/json: a body
    read whole, not a stream, whose array elements are the stream's chunks."""
    key = token("AIzaSy", 17)
    text = f"your key is {key}, keep it"
    provider.reply = text
    provider.delta_pieces = _halves(key)
    path = "/v1beta/models/gemini-2.0-flash:streamGenerateContent"
    if spelled != "compact":  # pretty chunks, each separated by ",\r\n"
        pieces = _halves(key)(text)
        chunks = [
            json.dumps(
                {"candidates": [{"content": {"parts": [{"text": p}]}, "index": 0}]}, indent=2
            )
            for p in pieces
        ]
        body = ("[" + "\n,\r\n".join(chunks) + "]").encode()
        provider.raw_replies["gemini"] = RawReply(200, [("content-type", "application/json")], body)
        path = "/raw/gemini" + path

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        assert _gemini_array(road, provider.url(path), key) == text
    assert_not_on_disk(cassette_dir, [key], pieces=True)
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=HOSTS) as session:
        assert _gemini_array(road, provider.url(path), token("AIzaSy", 17)) == text.replace(
            key, MASK
        )
    assert session.replayed == 1


def test_a_key_split_across_sse_events_served_as_plain_text_is_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """The openai SDK reads a stream as SSE whatever its content type; a proxy may send
    one as text/plain, which is recorded as a body read whole."""
    key = token("sk-proj-")
    text = f"your key is {key}, keep it"
    events = [f"data: {json.dumps(_chat_chunk(p))}\n\n".encode() for p in _halves(key)(text)]
    provider.raw_replies["plain"] = RawReply(
        200, [("content-type", "text/plain")], chunks=[*events, b"data: [DONE]\n\n"]
    )

    _record_then_replay_masked(provider, cassette_dir, "/raw/plain", key, text)


def test_a_key_split_across_the_events_of_a_plain_text_sse_stream_is_masked(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """Some servers stream an answer as SSE whose data is the text itself, not JSON
    (``event: output`` then ``data: <piece>``, as Replicate's streams do)."""
    key = token("sk-proj-")
    text = f"your key is {key}, keep it"
    events = [f"event: output\ndata: {piece}\n\n".encode() for piece in _halves(key)(text)]
    provider.raw_replies["text"] = RawReply(
        200, [("content-type", "text/event-stream")], chunks=[*events, b"event: done\ndata: {}\n\n"]
    )

    def said(mode: str) -> str:
        with (
            ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS),
            httpx.Client() as client,
            client.stream("GET", provider.url("/raw/text"), headers={"api-key": key}) as reply,
        ):
            lines = list(reply.iter_lines())
        outputs = [i + 1 for i, line in enumerate(lines) if line == "event: output"]
        return "".join(lines[i].removeprefix("data: ") for i in outputs)

    assert said("record") == text
    assert_not_on_disk(cassette_dir, [key], pieces=True)
    provider.stop()
    assert said("replay") == text.replace(key, MASK)


@pytest.mark.parametrize("where", ["in a comment line", "inside the first event"])
def test_a_key_split_across_the_events_of_a_stream_that_is_not_all_utf8_is_masked(
    where: str, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """One stray Latin-1 byte makes a stream binary (stored as base64); httpx still reads
    its lines (decoding with replacement), and its events are searched all the same."""
    key = token("sk-proj-")
    text = f"your key is {key}, keep it"
    events = [f"data: {json.dumps(_chat_chunk(p))}\n\n".encode() for p in _halves(key)(text)]
    if where == "in a comment line":
        events.insert(0, b": caf\xe9\n\n")
    else:
        events[1] = events[1].replace(b'"object"', b'"note": "caf\xe9", "object"')
    provider.raw_replies["latin"] = RawReply(
        200, [("content-type", "text/event-stream")], chunks=[*events, b"data: [DONE]\n\n"]
    )

    def chat(mode: str) -> tuple[str, bytes]:
        url = provider.url("/raw/latin/chat/completions")
        with (
            ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS),
            httpx.Client() as client,
            client.stream("POST", url, json={"stream": True}, headers={"api-key": key}) as reply,
        ):
            lines = list(reply.iter_lines())
            deltas = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
            said = "".join(d["choices"][0]["delta"]["content"] for d in deltas)
            return said, "\n".join(lines).encode()

    live, _ = chat("record")
    assert live == text
    assert "chunks_base64" in stored(cassette_dir)[0]["responses"][0]["body"]
    assert_not_on_disk(cassette_dir, [key], pieces=True)
    provider.stop()
    replayed, raw = chat("replay")
    assert replayed == text.replace(key, MASK)
    assert "caf\N{REPLACEMENT CHARACTER}".encode() in raw  # the stray byte replays as it came


def _logprobs_spell(value: Any) -> tuple[str, str]:
    """What the logprobs in a stored or replayed value spell: their tokens, their bytes."""
    tokens: list[str] = []
    data: list[int] = []

    def walk(item: Any) -> None:
        if isinstance(item, dict):
            if isinstance(item.get("token"), str) and isinstance(item.get("bytes"), list):
                tokens.append(item["token"])
                data.extend(item["bytes"])
            for inner in item.values():
                walk(inner)
        elif isinstance(item, list):
            for inner in item:
                walk(inner)
        elif isinstance(item, str) and "data: {" in item:
            for line in item.splitlines():
                if line.startswith("data: {"):
                    walk(json.loads(line[6:]))

    walk(value)
    return "".join(tokens), bytes(data).decode("utf-8", "replace")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_key_spelled_by_logprobs_tokens_and_their_bytes_is_masked(
    stream: bool, provider: ProviderSimulator, cassette_dir: Path
) -> None:
    """With logprobs on, an answer spells its text once more over a list of tokens, and
    again as each token's UTF-8 bytes (lists of numbers): no piece holds a whole key, and
    in a whole answer no two pieces are two events; both are searched, and replay."""
    key = token("sk-proj-")
    text = f"your key is {key}, keep it"
    provider.reply = text
    messages: Any = [{"role": "user", "content": f"repeat my key {key}"}]

    def ask(mode: str) -> tuple[str, tuple[str, str]]:
        with ghostrun.session(mode=mode, cassette_dir=cassette_dir, hosts=HOSTS):
            client = openai.OpenAI(base_url=provider.url("/v1"), api_key=token("sk-proj-"))
            if not stream:
                reply = client.chat.completions.create(model="m", messages=messages, logprobs=True)
                return reply.choices[0].message.content or "", _logprobs_spell(reply.to_dict())
            chunks = [
                c.to_dict()
                for c in client.chat.completions.create(
                    model="m", messages=messages, logprobs=True, stream=True
                )
            ]
            said = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
            return said, _logprobs_spell(chunks)

    assert ask("record") == (text, (text, text))
    assert_not_on_disk(cassette_dir, [key], pieces=True)
    assert key[4:16] not in "".join(_logprobs_spell(stored(cassette_dir)))
    provider.stop()
    masked = text.replace(key, MASK)
    assert ask("replay") == (masked, (masked, masked))


def test_chunk_boundaries_are_kept_and_a_moved_one_is_said(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    key = token("sk-proj-")
    provider.reply = f"your key is {key}, keep it safe"
    provider.rechunk = _cut_inside(key)
    provider.stream_delay = 0.01  # each cut piece arrives as a chunk of its own
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        _stream_openai(provider, key)
    (response,) = only_cassette(cassette_dir)["responses"]
    chunks = response["body"]["sse"]
    (moved,) = response["masked_across_chunks"]
    assert chunks[moved - 1].endswith(MASK)  # the mask whole in the chunk it began in
    assert chunks[moved].startswith(",")  # the next chunk starts right after the secret
    assert all(chunk.endswith("\n\n") for i, chunk in enumerate(chunks) if i != moved - 1)


@settings(max_examples=150, deadline=None)
@given(secret=ANY_SECRET, cuts=FRACTIONS, binary=st.booleans())
def test_property_a_secret_spelled_over_websocket_frames_is_masked(
    secret: str, cuts: list[float], binary: bool
) -> None:
    def written(secret: str) -> str:
        conversation = Conversation("wss://api.example.test/v1/realtime")
        conversation.client(json.dumps({"type": "session.update", "api_key": secret}))
        for piece in Cuts([], cuts).pieces(f"you said {secret}, noted"):
            delta = {"type": "response.output_text.delta", "content_index": 0, "delta": piece}
            frame = json.dumps(delta)
            conversation.server(frame.encode() if binary else frame)
        return json.dumps(redact_conversation(conversation, [], []).to_json())

    assert_not_written(secret, written)


@settings(max_examples=150, deadline=None)
@given(secret=ANY_SECRET, cuts=FRACTIONS, carried=st.booleans(), padded=st.booleans())
def test_property_a_secret_spelled_over_event_stream_events_is_masked(
    secret: str, cuts: list[float], carried: bool, padded: bool
) -> None:
    def written(secret: str) -> str:
        chunks = []
        for piece in Cuts([], cuts).pieces(f"you said {secret}, noted"):
            event: Any = {"contentBlockIndex": 0, "delta": {"text": piece}}
            if carried:  # InvokeModelWithResponseStream: the event as base64 bytes
                event = {"bytes": base64.b64encode(json.dumps(event).encode()).decode()}
            if padded:  # real Bedrock pads every payload
                event["p"] = "abcdefghijklmnopqrstuvwxyz"[: 1 + len(piece) % 26]
            chunks.append([{"headers": [":event-type: chunk"], "json": event}])
        entry = {
            "request": {"method": "POST", "url": "https://bedrock.example.test/invoke"},
            "response": {"status": 200, "headers": {}, "body": {"eventstream": chunks}},
        }
        text = json.dumps(redact_entry(entry, frozenset({secret})))
        carried_events = re.findall(r'"bytes": "([^"]+)"', text)
        return text + "".join(base64.b64decode(b).decode() for b in carried_events)

    assert_not_written(secret, written)


SPELLINGS = st.fixed_dictionaries(
    {
        "indent": st.sampled_from([None, 1]),  # an event's JSON over several data lines
        "ensure_ascii": st.booleans(),
        "compact": st.booleans(),
        "line_end": st.sampled_from(["\n", "\r\n", "\r"]),
        "space": st.booleans(),  # "data: " or "data:"
        "event_line": st.booleans(),
        "logprobs": st.booleans(),  # the tokens again, and their bytes
    }
)


def _spelled_event(value: Any, how: dict[str, Any]) -> str:
    text = json.dumps(
        value,
        indent=how["indent"],
        ensure_ascii=how["ensure_ascii"],
        separators=(",", ":") if how["compact"] else None,
    )
    end, prefix = how["line_end"], "data: " if how["space"] else "data:"
    head = f"event: delta{end}" if how["event_line"] else ""
    return head + "".join(f"{prefix}{line}{end}" for line in text.split("\n")) + end


def _read_events(stream: str) -> list[Any]:
    events = []
    for block in stream.replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line[:5] == "data:"]
        if data:
            events.append(json.loads("\n".join(data)))
    return events


@settings(max_examples=60, deadline=None)
@given(secret=ANY_SECRET, deltas=FRACTIONS, chunks=FRACTIONS, how=SPELLINGS)
def test_property_a_secret_spelled_over_sse_events_is_masked_however_they_are_written(
    secret: str, deltas: list[float], chunks: list[float], how: dict[str, Any]
) -> None:
    """Any spelling SSE and JSON allow, cut anywhere into chunks: no piece of the secret
    is written, every event still parses, and the deltas (and the logprobs' tokens and
    bytes) spell the text with the secret masked."""
    said = "you said {}, noted"

    def masked(secret: str) -> str:
        events = []
        for piece in Cuts([], deltas).pieces(said.format(secret)):
            choice: dict[str, Any] = {"index": 0, "delta": {"content": piece}}
            if how["logprobs"]:
                tokens = [piece[i : i + 3] for i in range(0, len(piece), 3)]
                content = [
                    {"token": t, "bytes": list(t.encode()), "top_logprobs": []} for t in tokens
                ]
                choice["logprobs"] = {"content": content}
            events.append(_spelled_event({"id": "c1", "choices": [choice]}, how))
        stream = "".join(events)
        at = sorted({0, *(int(f * len(stream)) for f in chunks), len(stream)})
        cut = [stream[a:b] for a, b in itertools.pairwise(at) if b > a]
        return "".join(mask_chunks(cut, patterns(frozenset({secret})))[0])

    assert_not_written(secret, masked)
    choices = [event["choices"][0] for event in _read_events(masked(secret))]
    assert "".join(c["delta"]["content"] for c in choices) == said.format(MASK)
    if how["logprobs"]:
        logprobs = [lp for c in choices for lp in c["logprobs"]["content"]]
        assert "".join(lp["token"] for lp in logprobs) == said.format(MASK)
        assert bytes(b for lp in logprobs for b in lp["bytes"]).decode() == said.format(MASK)


def test_masking_a_stream_places_only_the_tokens_it_edits_and_searches_each_group_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Recording a stream reads every field of every event (a secret may be spelled over
    several); finding where each field's token is in the stream, and searching two joins
    that hold the same fields, was most of a recorded stream's cost. Counted: the fields
    placed in the stream and the groups searched, for 30 chat chunks with a key spelled
    over two of them."""
    import ghostrun._secrets._streams as streams

    key = token("sk-proj-")
    words = ["w"] * 28 + [key[:10], key[10:]]
    events = [_chat_chunk(word) for word in words]
    joined = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
    placed, searched = [], []
    real_place, real_search = streams._in_joined, streams._group_masks

    def place(segments: Any, offset: int) -> int:
        placed.append(offset)
        return real_place(segments, offset)

    def search(pieces: list[Any], compiled: Any) -> Any:
        searched.append(tuple(piece.value for piece in pieces))
        return real_search(pieces, compiled)

    monkeypatch.setattr(streams, "_in_joined", place)
    monkeypatch.setattr(streams, "_group_masks", search)
    (masked,), moved = mask_chunks([joined], patterns(frozenset({key})))
    assert key[:10] not in masked and key[10:] not in masked and MASK in masked
    assert moved == []
    assert len(placed) == 2 * 2  # the two pieces of the key: where each token starts and ends
    assert len(searched) == len(set(searched))  # no group of the same fields searched twice


def test_a_recorded_json_answer_is_not_read_again_as_events_when_none_of_its_fields_join(
    provider: ProviderSimulator, cassette_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole answer is searched across its fields only where two of them join (a list's
    items, logprobs' bytes): a chat completion has none, and serialising, scanning and
    parsing it again for that was a fifth of a recorded test's redaction. Counted: the
    readings of a body as events, for a chat completion and for one with logprobs."""
    import ghostrun._secrets._streams as streams

    read: list[str] = []
    real = streams._across_events

    def across(joined: str, compiled: Any) -> Any:
        read.append(joined)
        return real(joined, compiled)

    monkeypatch.setattr(streams, "_across_events", across)
    key = token("sk-proj-")
    provider.reply = f"your key is {key}, keep it"
    messages: Any = [{"role": "user", "content": f"repeat my key {key}"}]
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=HOSTS):
        client = openai.OpenAI(base_url=provider.url("/v1"), api_key=token("sk-proj-"))
        client.chat.completions.create(model="m", messages=messages)
        assert read == []
        client.chat.completions.create(model="m", messages=messages, logprobs=True)
        assert len(read) == 1  # its tokens and their bytes join: read, as before
    assert_not_on_disk(cassette_dir, [key], pieces=True)


def _json_values(secret: str, pieces: list[str]) -> st.SearchStrategy[Any]:
    """JSON values whose strings are often pieces of a secret, in lists of any length; some
    spell it over a list's items, their tokens or their bytes, as logprobs do."""
    spelled = st.sampled_from(
        [
            pieces,
            [{"token": piece} for piece in pieces],
            [{"bytes": list(piece.encode())} for piece in pieces],
            [list(piece.encode()) for piece in pieces],
            list(secret.encode()),
        ]
    )
    leaves = (
        st.sampled_from(pieces)
        | st.text(max_size=4)
        | st.integers(min_value=-1, max_value=300)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.booleans()
        | st.none()
        | spelled
    )
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(["content", "token", "index", "bytes", "a"]), inner)
        ),
        max_leaves=8,
    )


@settings(max_examples=300, deadline=None)
@given(secret=ANY_SECRET, cuts=FRACTIONS, data=st.data())
def test_property_a_value_said_to_join_nothing_has_nothing_masked_across_its_fields(
    secret: str, cuts: list[float], data: st.DataObject
) -> None:
    """The fast answer of `mask_events` for one value is the full reading's: whenever it
    skips the reading, the reading finds nothing to mask (so the same value comes back)."""
    from ghostrun._secrets import _streams as streams

    at = sorted({0, *(int(f * len(secret)) for f in cuts), len(secret)})
    pieces = [secret[a:b] for a, b in itertools.pairwise(at) if b > a]
    value = data.draw(_json_values(secret, pieces))
    compiled = patterns(frozenset({secret}))
    if streams._nothing_joins(value):
        assert streams._across_events(f"data: {streams._dumps(value)}\n", compiled) == []
        assert streams.mask_events([value], compiled) == [value]
