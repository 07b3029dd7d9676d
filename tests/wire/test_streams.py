"""Every streaming content type the providers use is a stream (issue 29, item 2).

SSE, NDJSON (``application/x-ndjson``), JSON lines (``application/jsonl``),
Cohere's ``application/stream+json`` and AWS event-stream: chunk boundaries
are kept in the cassette and in replay, and while recording each chunk reaches
the client as it arrives, not once the whole body is in.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from simulator import ProviderSimulator, RawReply

import ghostrun
from ghostrun._wire._eventstream import encode_frame

# cohere's models read pydantic's old `__fields__`, which warns on every event
pytestmark = pytest.mark.filterwarnings("ignore:The `__fields__` attribute is deprecated")
LOOPBACK = ("127.0.0.1",)
COHERE_EVENTS = [
    {"is_finished": False, "event_type": "stream-start", "generation_id": "gen-1"},
    *(
        {"is_finished": False, "event_type": "text-generation", "text": word}
        for word in ("Your", " refund", " is", " on", " its", " way.")
    ),
    {
        "is_finished": True,
        "event_type": "stream-end",
        "finish_reason": "COMPLETE",
        "response": {
            "response_id": "resp-1",
            "text": "Your refund is on its way.",
            "generation_id": "gen-1",
            "chat_history": [],
            "finish_reason": "COMPLETE",
            "meta": {"billed_units": {"input_tokens": 5, "output_tokens": 6}},
        },
    },
]
COHERE_CHUNKS = [orjson.dumps(event) + b"\n" for event in COHERE_EVENTS]
LINES = [b'{"n":1}\n', b'{"n":2}\n', b'{"n":3}\n', b'{"done":true}\n']
FRAMES = [
    encode_frame(
        [(":event-type", "contentBlockDelta"), (":message-type", "event")],
        orjson.dumps({"contentBlockIndex": 0, "delta": {"text": word}}),
    )
    for word in ("one", "two", "three")
]
STREAMS = {  # content type: (chunks, how the cassette stores them)
    "text/event-stream": ([b"data: 1\n\n", b"data: 2\n\n", b"data: [DONE]\n\n"], "sse"),
    "application/x-ndjson": (LINES, "ndjson"),
    "application/jsonl": (LINES, "ndjson"),
    "application/stream+json": (COHERE_CHUNKS, "ndjson"),
    "application/vnd.amazon.eventstream": (FRAMES, "eventstream"),
}


def only_response(cassette_dir: Path) -> dict[str, Any]:
    (path,) = cassette_dir.glob("*.json")
    response: dict[str, Any] = orjson.loads(path.read_bytes())["responses"][0]
    return response


def cohere_chat(provider: ProviderSimulator, on_first: threading.Event | None = None) -> list[str]:
    import cohere  # here: the oldest lane of the version matrix has no cohere

    client = cohere.Client(api_key="co-" + "x" * 20, base_url=provider.url("/raw/cohere"))
    seen = []
    for event in client.chat_stream(message="Where is my refund?"):
        seen.append(f"{event.event_type}:{getattr(event, 'text', '')}")
        if on_first is not None:
            on_first.set()  # the server sends the last chunk only now
    return seen


@pytest.mark.parametrize("content_type", STREAMS)
def test_each_streamed_type_keeps_its_chunks_through_raw_httpx(
    provider: ProviderSimulator, cassette_dir: Path, content_type: str
) -> None:
    chunks, kind = STREAMS[content_type]
    provider.raw_replies["stream"] = RawReply(200, [("content-type", content_type)], chunks=chunks)
    url = provider.url("/raw/stream")

    def read() -> list[bytes]:
        with httpx.Client() as client, client.stream("POST", url, json={"stream": True}) as r:
            return list(r.iter_raw())

    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = read()
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK):
        again = read()
    assert again == live == chunks  # as many chunks as the server wrote, each whole
    body = only_response(cassette_dir)["body"]
    assert list(body) == [kind] and len(body[kind]) == len(chunks)


def test_cohere_chat_stream_is_recorded_chunk_by_chunk_and_replayed(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    provider.raw_replies["cohere"] = RawReply(
        200, [("content-type", "application/stream+json")], chunks=COHERE_CHUNKS
    )
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        live = cohere_chat(provider)
    assert live[0] == "stream-start:" and live[-1] == "stream-end:"
    assert "".join(e.split(":", 1)[1] for e in live) == "Your refund is on its way."
    stored = only_response(cassette_dir)["body"]["ndjson"]
    assert [line.encode() for line in stored] == COHERE_CHUNKS  # one line a chunk, readable
    provider.stop()
    with ghostrun.session(mode="replay", cassette_dir=cassette_dir, hosts=LOOPBACK) as rep:
        assert cohere_chat(provider) == live
    assert rep.replayed == 1


def test_while_recording_cohere_gets_the_first_chunk_before_the_server_sends_the_last(
    provider: ProviderSimulator, cassette_dir: Path
) -> None:
    gate = threading.Event()
    reply = RawReply(
        200, [("content-type", "application/stream+json")], chunks=COHERE_CHUNKS, gate=gate
    )
    provider.raw_replies["cohere"] = reply
    with ghostrun.session(mode="record", cassette_dir=cassette_dir, hosts=LOOPBACK):
        events = cohere_chat(provider, on_first=gate)
    assert not reply.gate_timed_out  # the client read an event while the server waited
    assert len(events) == len(COHERE_EVENTS)
