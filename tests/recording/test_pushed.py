"""A server's push stream (MCP over SSE) replayed at the pace of the requests it answers."""

from __future__ import annotations

import anyio
import pytest

from ghostrun._recording._pushed import Ledger, answers_by_chunk, is_push_stream, paced

ENDPOINT = b"event: endpoint\r\ndata: /messages/?session_id=1\r\n\r\n"
ANSWER_1 = b'event: message\r\ndata: {"jsonrpc":"2.0","id":1,"result":{}}\r\n\r\n'
URL = "http://127.0.0.1:8000/sse"


def test_an_answer_belongs_to_the_chunk_that_ends_its_event() -> None:
    """Chunks are network reads: an event (even a CRLF) may be cut between two."""
    chunks = [
        ENDPOINT,
        b'event: message\r\ndata: {"jsonrpc":"2.0","id":"a","res',
        b'ult":{}}\r',
        b"\n\r\n",
        b'data: {"jsonrpc":"2.0","method":"notifications/message"}\n\n',
        b'data: {"jsonrpc":"2.0","id":3,"error":{"code":1}}\n\ndata: {"jsonrpc":"2.0","id":4,',
        b'"method":"sampling/createMessage"}\n\n',
    ]
    assert answers_by_chunk(chunks) == [(), (), (), ('id:"a"',), (), ("id:3",), ()]
    assert is_push_stream("GET", chunks)
    assert not is_push_stream("POST", chunks)  # a POST's own answer stream ends by itself
    assert not is_push_stream("GET", [b"data: {}\n\n"])  # an LLM stream


@pytest.mark.anyio
async def test_each_answer_waits_for_its_request_sent_after_the_stream_opened() -> None:
    ledger = Ledger()
    ledger.replayed("POST", URL, b'{"jsonrpc":"2.0","id":1,"method":"ping"}')  # an earlier one
    handed: list[bytes] = []
    ended: list[bool] = []
    stream = paced([ENDPOINT, ANSWER_1], ledger, URL, len(ledger.sent))

    async def read() -> None:
        async for chunk in stream:
            handed.append(chunk)
        ended.append(True)

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read)
        await anyio.wait_all_tasks_blocked()
        assert handed == [ENDPOINT]  # id 1 was sent before the stream opened: not its answer
        ledger.replayed(
            "POST",
            URL.replace("/sse", "/messages/"),
            b'[{"jsonrpc":"2.0","id":1,"method":"initialize"}]',
        )
        await anyio.wait_all_tasks_blocked()
        assert handed == [ENDPOINT, ANSWER_1]
        ledger.replayed("GET", URL, b"")  # nothing a stream waits for
        await anyio.wait_all_tasks_blocked()
        assert not ended  # open past its last chunk: the client has not left
        ledger.replayed("DELETE", URL + "?session_id=1", b"")  # the MCP session ends
    assert ended == [True]  # and the stream with it


@pytest.mark.anyio
async def test_a_push_stream_not_mcps_sse_ends_after_its_last_chunk() -> None:
    """Its server may have ended it (the recording does not say): held open, a client that
    reads it to its end would wait for ever."""
    ledger = Ledger()
    listener = [b'data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n\n']
    with anyio.fail_after(5):
        assert [c async for c in paced(listener, ledger, URL, 0)] == listener
