"""The record/replay decision as a pure function: plain data in, `Replay | Send | Miss | Rebase`
out.

Tables of ``(input, expected)``, as for the match key (`tests/test_keys.py`):
the mode, the responses of the key's run (None: no cassette), the session's
cursor in that run and the staleness limit with today's date. No file, no
session, no clock.
"""

from __future__ import annotations

import pytest

from ghostrun import Mode
from ghostrun._recording._decide import (
    MISS,
    REBASE,
    SEND,
    Decision,
    Miss,
    Rebase,
    Replay,
    Send,
    decide,
)
from ghostrun._store._cassette import Recording

TODAY = "2026-06-30"
FRESH = Recording(200, [], b"fresh", recorded_on="2026-06-29")
FRESH2 = Recording(200, [], b"fresh, the second", recorded_on="2026-06-29")
OLD = Recording(200, [], b"old", recorded_on="2026-01-01")  # 180 days before TODAY
UNDATED = Recording(200, [], b"undated", recorded_on="")  # imported: its age is unknown

ONE = [FRESH]
TWO = [FRESH, FRESH2]

# (mode, replies, cursor, expected) without max_age
CASES: list[tuple[Mode, list[Recording] | None, int, Decision]] = [
    # record: always sent, whatever the cassette holds
    (Mode.RECORD, None, 0, SEND),
    (Mode.RECORD, ONE, 0, SEND),
    (Mode.RECORD, TWO, 1, SEND),
    # auto: replayed while the run lasts, then sent (and recorded)
    (Mode.AUTO, None, 0, SEND),
    (Mode.AUTO, [], 0, SEND),
    (Mode.AUTO, ONE, 0, Replay(FRESH, 0)),
    (Mode.AUTO, ONE, 1, SEND),
    (Mode.AUTO, TWO, 1, Replay(FRESH2, 1)),
    (Mode.AUTO, TWO, 2, SEND),
    # replay: replayed; past the run's end the last response again; nothing: a miss
    (Mode.REPLAY, None, 0, MISS),
    (Mode.REPLAY, [], 0, MISS),
    (Mode.REPLAY, ONE, 0, Replay(FRESH, 0)),
    (Mode.REPLAY, ONE, 3, Replay(FRESH, 3)),
    (Mode.REPLAY, TWO, 1, Replay(FRESH2, 1)),
    (Mode.REPLAY, TWO, 5, Replay(FRESH2, 5)),
    # rebase: replayed while the run lasts; past its end or with nothing, the recorded step
    # at the request's place is asked first (else: replay's last, or a miss)
    (Mode.REBASE, None, 0, REBASE),
    (Mode.REBASE, [], 0, REBASE),
    (Mode.REBASE, ONE, 0, Replay(FRESH, 0)),
    (Mode.REBASE, TWO, 1, Replay(FRESH2, 1)),
    (Mode.REBASE, ONE, 1, Rebase(Replay(FRESH, 1))),
    (Mode.REBASE, TWO, 5, Rebase(Replay(FRESH2, 5))),
]


@pytest.mark.parametrize(("mode", "replies", "index", "expected"), CASES)
def test_the_decision_without_max_age(
    mode: Mode, replies: list[Recording] | None, index: int, expected: Decision
) -> None:
    assert decide(mode, replies, index) == expected
    assert decide(mode, replies, index, None, TODAY) == expected  # a date alone changes nothing


# (mode, replies, cursor, expected) with max_age=90 days on TODAY
STALE_CASES: list[tuple[Mode, list[Recording] | None, int, Decision]] = [
    # auto: a stale response is recorded anew, from its place in the run on
    (Mode.AUTO, [OLD], 0, Send(stale_from=0)),
    (Mode.AUTO, [FRESH, OLD], 1, Send(stale_from=1)),
    (Mode.AUTO, [OLD, FRESH], 1, Replay(FRESH, 1)),  # only the response at the cursor counts
    (Mode.AUTO, [OLD], 1, SEND),  # past the run's end: new, not stale
    (Mode.AUTO, [UNDATED], 0, Replay(UNDATED, 0)),  # no day: never stale
    (Mode.AUTO, ONE, 0, Replay(FRESH, 0)),
    # replay: a stale response is replayed, its day kept for the warning at exit
    (Mode.REPLAY, [OLD], 0, Replay(OLD, 0, stale_on="2026-01-01")),
    (Mode.REPLAY, [FRESH, OLD], 4, Replay(OLD, 4, stale_on="2026-01-01")),
    (Mode.REPLAY, [UNDATED], 0, Replay(UNDATED, 0)),
    (Mode.REPLAY, None, 0, MISS),
    # rebase: as replay, never re-recorded
    (Mode.REBASE, [OLD], 0, Replay(OLD, 0, stale_on="2026-01-01")),
    (Mode.REBASE, [OLD], 2, Rebase(Replay(OLD, 2, stale_on="2026-01-01"))),
    # record: never reads the run, so never stale
    (Mode.RECORD, [OLD], 0, SEND),
]


@pytest.mark.parametrize(("mode", "replies", "index", "expected"), STALE_CASES)
def test_the_decision_with_max_age(
    mode: Mode, replies: list[Recording] | None, index: int, expected: Decision
) -> None:
    assert decide(mode, replies, index, 90, TODAY) == expected


def test_the_limit_is_counted_in_whole_days_from_the_date_given() -> None:
    assert decide(Mode.AUTO, [OLD], 0, 180, TODAY) == Replay(OLD, 0)  # 180 days: not older
    assert decide(Mode.AUTO, [OLD], 0, 179, TODAY) == Send(stale_from=0)
    assert decide(Mode.AUTO, [OLD], 0, 179, "2026-01-02") == Replay(OLD, 0)


def test_the_decision_is_one_of_four_values_and_changes_nothing() -> None:
    replies = [FRESH, OLD]
    before = list(replies)
    for mode in Mode:
        for index in range(4):
            decision = decide(mode, replies, index, 90, TODAY)
            assert isinstance(decision, Replay | Send | Miss | Rebase)
    assert replies == before
    assert isinstance(MISS, Miss) and isinstance(SEND, Send) and SEND.stale_from is None
