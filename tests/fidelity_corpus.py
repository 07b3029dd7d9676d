"""Real-shaped provider responses, byte for byte, for the fidelity tests (issue 22).

Each entry is what a provider's server writes: its serialisation (pretty,
compact, Python's, JavaScript's numbers), its headers in its order and
spelling, and, for streams, chunk boundaries where TCP put them in real
traffic (inside an event, inside a UTF-8 character). ``stored`` is how the
cassette must keep the body: the encoding key and its modifier, if any.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from simulator import RawReply

# Headers a cassette must drop (DESIGN §4): cookies, account and project ids, and the
# hop-by-hop headers that describe a connection replay never makes (DESIGN §3).
DROPPED = frozenset(
    {
        "set-cookie",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "connection",
    }
)

OPENAI_HEADERS = [
    ("date", "Tue, 01 Dec 2026 21:00:00 GMT"),
    ("content-type", "application/json"),
    ("connection", "keep-alive"),
    ("access-control-expose-headers", "X-Request-ID"),
    ("openai-organization", "user-abc123def456"),
    ("openai-processing-ms", "412"),
    ("openai-project", "proj_abc123def456"),
    ("openai-version", "2020-10-01"),
    ("x-envoy-upstream-service-time", "415"),
    ("x-ratelimit-limit-requests", "10000"),
    ("x-ratelimit-limit-tokens", "30000000"),
    ("x-ratelimit-remaining-requests", "9999"),
    ("x-ratelimit-remaining-tokens", "29999980"),
    ("x-ratelimit-reset-requests", "6ms"),
    ("x-ratelimit-reset-tokens", "0s"),
    ("x-request-id", "req_0123456789abcdef0123456789abcdef"),
    ("strict-transport-security", "max-age=31536000; includeSubDomains; preload"),
    ("cf-cache-status", "DYNAMIC"),
    ("set-cookie", "__cf_bm=abc.def-1764622800; path=/; HttpOnly; Secure; SameSite=None"),
    ("x-content-type-options", "nosniff"),
    ("set-cookie", "_cfuvid=ghi.jkl-1764622800000; path=/; HttpOnly; Secure; SameSite=None"),
    ("server", "cloudflare"),
    ("cf-ray", "8f0123456789abcd-SJC"),
    ("alt-svc", 'h3=":443"; ma=86400'),
]
ANTHROPIC_HEADERS = [
    ("date", "Tue, 01 Dec 2026 21:00:00 GMT"),
    ("content-type", "application/json"),
    ("anthropic-ratelimit-requests-limit", "4000"),
    ("anthropic-ratelimit-requests-remaining", "3999"),
    ("anthropic-ratelimit-requests-reset", "2026-12-01T21:00:01Z"),
    ("anthropic-ratelimit-input-tokens-limit", "400000"),
    ("request-id", "req_011CVabcdefghijklmnopqrs"),
    ("strict-transport-security", "max-age=31536000; includeSubDomains; preload"),
    ("anthropic-organization-id", "1c9d2e3f-aaaa-bbbb-cccc-0123456789ab"),
    ("via", "1.1 google"),
    ("cf-cache-status", "DYNAMIC"),
    ("x-robots-tag", "none"),
    ("server", "cloudflare"),
    ("cf-ray", "8f0123456789abce-LHR"),
]
GEMINI_HEADERS = [  # Google's spelling; vary sent three times
    ("Content-Type", "application/json; charset=UTF-8"),
    ("Vary", "Origin"),
    ("Vary", "X-Origin"),
    ("Vary", "Referer"),
    ("Date", "Tue, 01 Dec 2026 21:00:00 GMT"),
    ("Server", "scaffolding on HTTPServer2"),
    ("X-XSS-Protection", "0"),
    ("X-Frame-Options", "SAMEORIGIN"),
    ("X-Content-Type-Options", "nosniff"),
    ("Server-Timing", "gfet4t7; dur=532"),
    ("Alt-Svc", 'h3=":443"; ma=2592000,h3-29=":443"; ma=2592000'),
]


def _with_type(headers: list[tuple[str, str]], content_type: str) -> list[tuple[str, str]]:
    return [(n, content_type if n.lower() == "content-type" else v) for n, v in headers]


SSE_HEADERS = _with_type(OPENAI_HEADERS, "text/event-stream; charset=utf-8")
NDJSON_HEADERS = [
    ("Content-Type", "application/x-ndjson"),
    ("Date", "Tue, 01 Dec 2026 21:00:00 GMT"),
]

OPENAI_COMPLETION = {
    "id": "chatcmpl-Ab12Cd34",
    "object": "chat.completion",
    "created": 1764622800,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Grüße! Your refund of 12,50 € is on its way 👋",
                "refusal": None,
                "annotations": [],
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 19,
        "completion_tokens": 14,
        "total_tokens": 33,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    },
    "service_tier": "default",
    "system_fingerprint": "fp_0123456789",
}
GEMINI_REPLY = {
    "candidates": [
        {
            "content": {"parts": [{"text": "Bonjour, ça va ? ☀️\n"}], "role": "model"},
            "finishReason": "STOP",
            "avgLogprobs": -6.1e-05,
        }
    ],
    "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": 8, "totalTokenCount": 12},
    "modelVersion": "gemini-2.5-flash",
    "responseId": "abcDEF123",
}


def _sse(*events: str) -> bytes:
    return "".join(events).encode("utf-8")


def _split(data: bytes, *cuts: int) -> list[bytes]:
    """``data`` cut at these byte offsets (negative ones from the end)."""
    points = sorted(c % len(data) for c in cuts)
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def _inside(data: bytes, character: str, into: int = 1) -> int:
    """The offset ``into`` bytes into the first ``character`` of ``data``."""
    return data.index(character.encode("utf-8")) + into


OPENAI_STREAM = _sse(
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,'
    '"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n',
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,'
    '"delta":{"content":"Grüße "},"finish_reason":null}]}\n\n',
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,'
    '"delta":{"content":"aus Köln 😀"},"finish_reason":null}]}\n\n',
    'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,'
    '"delta":{},"finish_reason":"stop"}]}\n\n',
    "data: [DONE]\n\n",
)
ANTHROPIC_STREAM = _sse(
    "event: message_start\r\n"
    'data: {"type":"message_start","message":{"id":"msg_01","role":"assistant","content":[]}}'
    "\r\n\r\n",
    "event: content_block_delta\r\n"
    'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta",'
    '"text":"日本語の返事"}}\r\n\r\n',
    'event: message_stop\r\ndata: {"type":"message_stop"}\r\n\r\n',
)
OLLAMA_STREAM = (
    '{"model":"llama3.2","created_at":"2026-12-01T21:00:00.1Z","message":{"role":"assistant",'
    '"content":"Ça"},"done":false}\n'
    '{"model":"llama3.2","created_at":"2026-12-01T21:00:00.2Z","message":{"role":"assistant",'
    '"content":" marche €"},"done":false}\n'
    '{"model":"llama3.2","created_at":"2026-12-01T21:00:00.3Z","message":{"role":"assistant",'
    '"content":""},"done":true,"eval_count":2}\n'
).encode()
EMOJI_STREAM = "data: 🎉\n\n".encode()


@dataclass(frozen=True)
class Entry:
    reply: RawReply
    stored: tuple[str, ...]  # the body's keys in the cassette, sorted
    format: str | None = None  # the JSON format, if the body is stored as JSON


def _json_reply(headers: list[tuple[str, str]], body: bytes, status: int = 200) -> RawReply:
    return RawReply(status, headers, body)


CORPUS: dict[str, Entry] = {
    # OpenAI's pretty body: 2-space indent, keys in its order, raw UTF-8, a newline.
    "openai-pretty": Entry(
        _json_reply(
            OPENAI_HEADERS,
            json.dumps(OPENAI_COMPLETION, indent=2, ensure_ascii=False).encode() + b"\n",
        ),
        ("format", "json"),
        "indent2+newline",
    ),
    # Gemini's pretty countTokens.
    "gemini-count-tokens": Entry(
        _json_reply(
            GEMINI_HEADERS,
            b'{\n  "totalTokens": 31,\n  "totalBillableCharacters": 96,\n'
            b'  "promptTokensDetails": [\n    {\n      "modality": "TEXT",\n'
            b'      "tokenCount": 31\n    }\n  ]\n}\n',
        ),
        ("format", "json"),
        "indent2+newline",
    ),
    # Pretty, with an exponent float as Python spells it (orjson writes 0.000061).
    "gemini-pretty-exponent": Entry(
        _json_reply(
            GEMINI_HEADERS,
            json.dumps(GEMINI_REPLY, indent=2, ensure_ascii=False).encode() + b"\n",
        ),
        ("format", "json"),
        "python-indent2-utf8+newline",
    ),
    # Python's json.dumps defaults: ", " and ": ", non-ASCII as \uXXXX (a surrogate pair too).
    "python-escaped": Entry(
        _json_reply(
            _with_type(OPENAI_HEADERS, "application/json; charset=utf-8"),
            json.dumps({"text": "café 😀", "score": 0.5, "tags": ["a", "b"]}).encode(),
        ),
        ("format", "json"),
        "python",
    ),
    # Anthropic's compact body, keys unsorted.
    "anthropic-compact": Entry(
        _json_reply(
            ANTHROPIC_HEADERS,
            '{"id":"msg_01XYZ","type":"message","role":"assistant","model":"claude-sonnet-4-5",'
            '"content":[{"type":"text","text":"Voilà — done."}],"stop_reason":"end_turn",'
            '"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":6}}'.encode(),
        ),
        ("json",),
    ),
    # JavaScript's number spellings, which orjson shares.
    "js-numbers": Entry(
        _json_reply(OPENAI_HEADERS, b'{"logprob":-0.000061,"big":1e+21,"small":1e-7,"t":1.5}'),
        ("json",),
    ),
    # Python's, compact (Starlette's JSONResponse): 1.0 stays 1.0, 6.1e-05 stays.
    "python-numbers": Entry(
        _json_reply(OPENAI_HEADERS, b'{"temperature":1.0,"top_p":1,"score":6.1e-05}'),
        ("format", "json"),
        "python-compact-utf8",
    ),
    # An integer of 2**64 and more: orjson reads it as a float, so text it is.
    "big-integers": Entry(
        _json_reply(OPENAI_HEADERS, b'{"id":18446744073709551616,"seed":12345678901234567890123}'),
        ("text",),
    ),
    # A float no format spells this way.
    "odd-float": Entry(_json_reply(OPENAI_HEADERS, b'{"p":1.50,"q":1E5}'), ("text",)),
    # An escaped slash (PHP's habit), mixed escapes, a duplicate key: text.
    "escaped-slash": Entry(
        _json_reply(OPENAI_HEADERS, b'{"url":"https:\\/\\/example.com\\/a"}'), ("text",)
    ),
    "mixed-escapes": Entry(
        _json_reply(OPENAI_HEADERS, '{"a":"caf\\u00e9","b":"é"}'.encode()), ("text",)
    ),
    "duplicate-key": Entry(_json_reply(OPENAI_HEADERS, b'{"a":1,"a":2}'), ("text",)),
    # A pretty error body.
    "openai-error": Entry(
        _json_reply(
            OPENAI_HEADERS,
            b'{\n  "error": {\n    "message": "Invalid \'messages\': empty.",\n'
            b'    "type": "invalid_request_error",\n    "param": "messages",\n'
            b'    "code": null\n  }\n}',
            status=400,
        ),
        ("format", "json"),
        "indent2",
    ),
    # SSE split mid-event and inside characters (2 of ü's bytes, 1 and 3 of 😀's).
    "openai-sse-split": Entry(
        RawReply(
            200,
            SSE_HEADERS,
            chunks=_split(
                OPENAI_STREAM,
                100,
                _inside(OPENAI_STREAM, "ü"),
                _inside(OPENAI_STREAM, "ß") + 1,
                _inside(OPENAI_STREAM, "😀", 1),
                _inside(OPENAI_STREAM, "😀", 3),
                -20,
            ),
        ),
        ("carry", "sse"),
    ),
    # Anthropic's named events with CRLF, split mid-event and inside a 3-byte character.
    "anthropic-sse-split": Entry(
        RawReply(
            200,
            _with_type(ANTHROPIC_HEADERS, "text/event-stream; charset=utf-8"),
            chunks=_split(ANTHROPIC_STREAM, 40, _inside(ANTHROPIC_STREAM, "語", 2)),
        ),
        ("carry", "sse"),
    ),
    # SSE split only between events: no carry needed.
    "sse-whole-characters": Entry(
        RawReply(200, SSE_HEADERS, chunks=_split(OPENAI_STREAM, 50, 150)),
        ("sse",),
    ),
    # Ollama's NDJSON, split inside Ç and €.
    "ollama-ndjson": Entry(
        RawReply(
            200,
            NDJSON_HEADERS,
            chunks=_split(
                OLLAMA_STREAM, _inside(OLLAMA_STREAM, "Ç"), _inside(OLLAMA_STREAM, "€", 2)
            ),
        ),
        ("carry", "ndjson"),
    ),
    # One 4-byte character over four chunks.
    "emoji-in-four": Entry(
        RawReply(200, SSE_HEADERS, chunks=_split(EMOJI_STREAM, 7, 8, 9)),
        ("carry", "sse"),
    ),
    # A stream that is not UTF-8 at all.
    "binary-stream": Entry(
        RawReply(200, SSE_HEADERS, chunks=[b"data: \xff\xfe\n\n", b"data: \x80\n\n"]),
        ("chunks_base64",),
    ),
}


# -- the second corpus (issue 29): what the provider answered, however it answered ----------

AZURE_HEADERS = [
    ("Content-Type", "application/json"),
    ("apim-request-id", "0f1e2d3c-aaaa-bbbb-cccc-0123456789ab"),
    ("Strict-Transport-Security", "max-age=31536000; includeSubDomains; preload"),
    ("x-content-type-options", "nosniff"),
    ("Date", "Tue, 01 Dec 2026 21:00:00 GMT"),
]
COHERE_STREAM = [
    b'{"is_finished":false,"event_type":"stream-start","generation_id":"g-1"}\n',
    b'{"is_finished":false,"event_type":"text-generation","text":"Gr\xc3\xbc\xc3\x9fe"}\n',
    b'{"is_finished":false,"event_type":"text-generation","text":" aus K\xc3\xb6ln"}\n',
    b'{"is_finished":true,"event_type":"stream-end","finish_reason":"COMPLETE"}\n',
]
GZIP_BODY = json.dumps(OPENAI_COMPLETION, ensure_ascii=False).encode()


def _gzip(data: bytes) -> bytes:
    import gzip

    return gzip.compress(data, mtime=0)


SECOND_CORPUS: dict[str, RawReply] = {
    # Azure's authentication failure, with its own reason phrase.
    "azure-permission-denied": RawReply(
        401,
        AZURE_HEADERS,
        b'{"error":{"code":"PermissionDenied","message":"Principal does not have access."}}',
        reason="PermissionDenied",
    ),
    # An image host's 403: no auth failure at all, but what happened.
    "forbidden-user-agent": RawReply(
        403, [("content-type", "text/plain; charset=utf-8")], b"Please set a user-agent."
    ),
    # A status line with no reason phrase (HTTP/1.1 allows it; some gateways do it).
    "empty-reason": RawReply(200, AZURE_HEADERS, b'{"ok":true}', reason=""),
    "teapot-own-reason": RawReply(418, [("content-type", "text/plain")], b"short", reason="Tea"),
    "final-server-error": RawReply(500, AZURE_HEADERS, b'{"error":{"message":"boom"}}'),
    "trace-no-content": RawReply(204, [("Date", "Tue, 01 Dec 2026 21:00:00 GMT")]),
    # Streams of every type, one event an HTTP chunk.
    "cohere-stream-json": RawReply(
        200, [("content-type", "application/stream+json")], chunks=COHERE_STREAM
    ),
    "ollama-x-ndjson": RawReply(
        200, NDJSON_HEADERS, chunks=[line + b"\n" for line in OLLAMA_STREAM.split(b"\n")[:-1]]
    ),
    "jsonl": RawReply(200, [("content-type", "application/jsonl")], chunks=COHERE_STREAM),
    # Each event one HTTP chunk, written in two TCP pieces: aiohttp reads it twice.
    "sse-split-writes": RawReply(
        200,
        SSE_HEADERS,
        chunks=[event + b"\n\n" for event in OPENAI_STREAM.split(b"\n\n")[:-1]],
        split_pause=0.03,
    ),
    # A gzip body, handed on decoded.
    "gzip-json": RawReply(
        200, [*OPENAI_HEADERS[:2], ("content-encoding", "gzip")], _gzip(GZIP_BODY)
    ),
    # Browser policy, kept by family: its "credentials" is a boolean.
    "cors-credentials": RawReply(
        200,
        [
            ("content-type", "application/json"),
            ("access-control-allow-origin", "https://app.example"),
            ("access-control-allow-credentials", "true"),
        ],
        b"{}",
    ),
}
"""Replies whose status, reason phrase, body bytes and chunks replay must give back."""
