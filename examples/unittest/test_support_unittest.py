"""The support app's tests in unittest style.

    python -m unittest discover -s examples/unittest -v           # from the repository root
    GHOSTRUN_MODE=replay python -m unittest discover -s examples/unittest -v   # CI
    GHOSTRUN_MODE=record OPENAI_API_KEY=sk-... python -m unittest discover -s examples/unittest

``ghostrun.TestCaseMixin`` (listed first) runs every test inside a ghostrun
session that replays ``examples/cassettes/``; ``self.ghostrun_session`` is
that session. Its ``assert...`` methods grade meaning with the judge.
"""

from __future__ import annotations

import logging
import os
import unittest
from pathlib import Path

import ghostrun
from examples.support_app import (
    answer_from_docs,
    answer_order_question,
    areply_to_customer,
    reply_to_customer,
    stream_reply,
)

CASSETTES = Path(__file__).resolve().parent.parent / "cassettes"

# IsolatedAsyncioTestCase runs its loop in asyncio's debug mode, which logs every step
# that takes over 0.1 s (the SDK building its first client): noise in a test's output.
logging.getLogger("asyncio").setLevel(logging.ERROR)

BROKEN_POLE = "My Trailblazer 2 tent arrived with a broken pole. We leave on Friday!"
HELP_CENTRE = [
    "Returns: unworn items can be returned within 30 days of delivery for a full refund.",
    "Refunds reach your card 5 to 7 business days after we receive the return.",
    "Shipping: we ship to the United States and Canada only.",
]


def setUpModule() -> None:
    # Replayed requests need no key, but the OpenAI SDK refuses to start without one.
    os.environ.setdefault("OPENAI_API_KEY", "placeholder-key-replay-needs-none")
    # No judge running? Semantic checks skip with the commands that enable grading.
    ghostrun.configure(on_judge_unavailable="skip")


class SupportReplyTests(ghostrun.TestCaseMixin, unittest.TestCase):
    ghostrun_session_kwargs = {"cassette_dir": CASSETTES}

    # -- deterministic checks: no judge needed -----------------------------------------------

    def test_reply_offers_a_replacement(self) -> None:
        reply = reply_to_customer(BROKEN_POLE)
        self.assertIn("replacement", reply)
        self.assertLess(len(reply), 600)

    def test_reply_costs_one_model_call(self) -> None:
        reply_to_customer(BROKEN_POLE)
        session = self.ghostrun_session
        self.assertEqual(session.replayed + session.recorded, 1)

    def test_streamed_reply_arrives_in_pieces(self) -> None:
        pieces = list(stream_reply("Is the Summit 40L backpack waterproof?"))
        self.assertGreater(len(pieces), 1)
        self.assertIn("water-resistant", "".join(pieces))

    # -- tool calls ------------------------------------------------------------------------

    def test_agent_looks_the_order_up(self) -> None:
        answer = answer_order_question("Where is my order A1234?")
        self.assertToolCalled(answer.messages, "lookup_order", times=1)
        self.assertToolCalledWith(answer.messages, "lookup_order", order_id="A1234")
        self.assertIn("1Z999AA10123456784", answer.text)

    def test_agent_answers_for_an_order_not_yet_shipped(self) -> None:
        answer = answer_order_question("Has order B7781 shipped yet?")
        self.assertToolCalledWith(answer.messages, "lookup_order", order_id="B7781")
        self.assertIn("2026-03-18", answer.text)

    # -- semantic checks: graded by the judge, skipped when none is running ------------------

    def test_reply_apologises(self) -> None:
        reply = reply_to_customer(BROKEN_POLE)
        self.assertContainsIntent(reply, "an apology for the broken pole")
        self.assertToneIs(reply, "empathetic")

    def test_reply_does_not_upsell(self) -> None:
        reply = reply_to_customer("Can I get a refund for boots I haven't worn?")
        self.assertNotContainsIntent(reply, "selling the customer another product")

    def test_answer_is_grounded_in_the_help_centre(self) -> None:
        answer = answer_from_docs("How long do I have to return something?", HELP_CENTRE)
        self.assertIn("30 days", answer)
        self.assertGroundedIn(answer, HELP_CENTRE)


class AsyncSupportReplyTests(ghostrun.TestCaseMixin, unittest.IsolatedAsyncioTestCase):
    ghostrun_session_kwargs = {"cassette_dir": CASSETTES}

    async def test_async_reply_offers_a_replacement(self) -> None:
        reply = await areply_to_customer(BROKEN_POLE)
        self.assertIn("replacement", reply)

    async def test_async_reply_apologises(self) -> None:
        reply = await areply_to_customer(BROKEN_POLE)
        await ghostrun.expect(reply).acontains_intent("an apology for the broken pole")


if __name__ == "__main__":
    unittest.main()
