"""The support app's tests in pytest style.

    python -m pytest examples/pytest                      # replay what is recorded
    python -m pytest examples/pytest --ghostrun-replay    # CI: never touch the network
    python -m pytest examples/pytest --ghostrun-record    # re-record (needs OPENAI_API_KEY)

The module-level marker runs every test inside a ghostrun session that
replays ``examples/cassettes/``; the ``ghostrun_session`` fixture hands a
test that session, to ask what happened.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import ghostrun
from examples.support_app import (
    answer_from_docs,
    answer_order_question,
    areply_to_customer,
    reply_to_customer,
    stream_reply,
)

CASSETTES = Path(__file__).resolve().parent.parent / "cassettes"
pytestmark = pytest.mark.ghostrun(cassette_dir=CASSETTES)

BROKEN_POLE = "My Trailblazer 2 tent arrived with a broken pole. We leave on Friday!"
HELP_CENTRE = [
    "Returns: unworn items can be returned within 30 days of delivery for a full refund.",
    "Refunds reach your card 5 to 7 business days after we receive the return.",
    "Shipping: we ship to the United States and Canada only.",
]


# -- deterministic checks: no judge needed ---------------------------------------------------


def test_reply_offers_a_replacement() -> None:
    reply = reply_to_customer(BROKEN_POLE)
    ghostrun.expect(reply).contains("replacement").length_between(50, 600)


def test_reply_costs_one_model_call(ghostrun_session: ghostrun.Session) -> None:
    reply_to_customer(BROKEN_POLE)
    assert ghostrun_session.replayed + ghostrun_session.recorded == 1


def test_streamed_reply_arrives_in_pieces() -> None:
    pieces = list(stream_reply("Is the Summit 40L backpack waterproof?"))
    assert len(pieces) > 1
    ghostrun.expect("".join(pieces)).contains("water-resistant")


# -- tool calls ------------------------------------------------------------------------------


def test_agent_looks_the_order_up() -> None:
    answer = answer_order_question("Where is my order A1234?")
    ghostrun.expect_tool_calls(answer.messages).called_once("lookup_order").called_with(
        "lookup_order", order_id="A1234"
    )
    ghostrun.expect(answer.text).contains("1Z999AA10123456784")


# -- semantic checks: graded by the judge, skipped when none is running ----------------------


def test_reply_apologises() -> None:
    reply = reply_to_customer(BROKEN_POLE)
    ghostrun.expect(reply).contains_intent("an apology for the broken pole").tone_is("empathetic")


def test_answer_is_grounded_in_the_help_centre() -> None:
    answer = answer_from_docs("How long do I have to return something?", HELP_CENTRE)
    ghostrun.expect(answer).contains("30 days").is_grounded_in(HELP_CENTRE)


@pytest.mark.asyncio
async def test_async_reply_apologises() -> None:
    reply = await areply_to_customer(BROKEN_POLE)
    ghostrun.expect(reply).contains("replacement")
    await ghostrun.expect(reply).acontains_intent("an apology for the broken pole")
