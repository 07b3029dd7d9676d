"""A prompt regression check as a plain script: no test framework at all.

    python -m examples.prompt_check          # from the repository root

Edit ``SUPPORT_STYLE`` in support_app.py, run this, and see which replies
still hold up. Every reply comes from ``examples/cassettes/`` (recorded once,
replayed after), so the check is free, offline and gives the same answer
every run. Change the prompt and the request no longer matches its cassette:
in replay mode (``GHOSTRUN_MODE=replay``, or on CI) that is a ``CacheMiss``
whose message shows the diff; in the default ``auto`` mode the new reply is
recorded, with your ``OPENAI_API_KEY``.

Semantic checks need a judge; without one they are reported as skipped
(``on_judge_unavailable="skip"``) with the commands that enable grading.
"""

from __future__ import annotations

import os
import sys
import unittest
from pathlib import Path

import ghostrun
from examples.support_app import reply_to_customer

CASSETTES = Path(__file__).resolve().parent / "cassettes"

# customer message -> the checks its reply must pass: (expect() method, its arguments)
CASES: dict[str, list[tuple[str, tuple[object, ...]]]] = {
    "My Trailblazer 2 tent arrived with a broken pole. We leave on Friday!": [
        ("contains", ("replacement",)),
        ("length_between", (None, 600)),
        ("contains_intent", ("an apology for the broken pole",)),
    ],
    "Can I get a refund for boots I haven't worn?": [
        ("contains", ("30 days",)),
        ("does_not_contain", ("discount",)),
        ("tone_is", ("helpful and polite",)),
    ],
}


def main() -> int:
    # Replayed requests need no key, but the OpenAI SDK refuses to start without one.
    os.environ.setdefault("OPENAI_API_KEY", "placeholder-key-replay-needs-none")
    ghostrun.configure(on_judge_unavailable="skip")
    failed = skipped = passed = 0
    with ghostrun.session(cassette_dir=CASSETTES, name="prompt_check") as session:
        for message, checks in CASES.items():
            reply = reply_to_customer(message)
            print(f"\n> {message}\n{reply}")
            for method, args in checks:
                label = f"{method}{args!r}" if len(args) > 1 else f"{method}({args[0]!r})"
                try:
                    getattr(ghostrun.expect(reply), method)(*args)
                except unittest.SkipTest as skip:
                    skipped += 1
                    print(f"  SKIP  {label}: {skip}")
                except AssertionError as failure:
                    failed += 1
                    print(f"  FAIL  {label}\n{failure}")
                else:
                    passed += 1
                    print(f"  ok    {label}")
    print(
        f"\nprompt_check: {passed} passed, {failed} failed, {skipped} skipped "
        f"({session.replayed} replies replayed, {session.recorded} recorded, mode {session.mode})"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
