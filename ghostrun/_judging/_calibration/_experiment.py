"""The calibration run: every case graded at every vote count, ``repeats`` times.

Each repeat draws with seeds of its own, under keys of its own (`_Variant`),
through `_verdicts.grade`, so a second run sends nothing and ``replay`` works
offline; gradings are cached under ``<cassette_dir>/calibration/judge/``. Intent
cases are also asked the opposite way (the negation check): a judge that gives
the same verdict both ways is not reading the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._core._modes import Mode
from .._judges import RawVerdict
from .._verdicts import grade
from ._cases import Case
from ._correction import Correction, correct
from ._statistics import Grading, VoteResult, vote_result

__all__ = ["Report", "calibrate"]

_REPEAT_SEEDS = 1000  # repeat r draws seeds r*1000 + 1..N: never another repeat's


class _Variant:
    """A judge at a chosen vote count; repeat r draws its own seeds, under its own keys."""

    def __init__(self, judge: Any, votes: int, repeat: int) -> None:
        self._judge, self.votes, self._repeat = judge, votes, repeat
        suffix = f" (repeat {repeat})" if repeat else ""
        self.identity = f"{judge.identity}{suffix}"
        self.setup_commands = getattr(judge, "setup_commands", ())

    def _seed(self, seed: int | None) -> int | None:
        return seed if not self._repeat else self._repeat * _REPEAT_SEEDS + (seed or 0)

    def judge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict:
        raw: RawVerdict = self._judge.judge(text, criterion, self._seed(seed), temperature)
        return raw

    async def ajudge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict:
        raw: RawVerdict = await self._judge.ajudge(text, criterion, self._seed(seed), temperature)
        return raw


@dataclass(frozen=True)
class Report:
    """A calibration run: the figures per vote count, and the negation check."""

    labels: str
    judge: str
    cases: int
    repeats: int
    results: tuple[VoteResult, ...]
    negations_checked: int = 0
    unflipped: tuple[tuple[Grading, Grading], ...] = ()  # (asked, asked the opposite way)
    # Per vote count: TPR, TNR and the corrected pass rate (`_correction`) of ``observed``,
    # the suite's cached verdicts by this judge ("suite"), else its labelled gradings.
    corrections: tuple[Correction, ...] = ()
    observed_from: str = "labelled cases"

    def more_votes(self, result: VoteResult) -> str:
        """Did this vote count agree with the labels better than the first one did?"""
        base = self.results[0]
        if result is base:
            return "baseline"
        ours, theirs = result.agreement, base.agreement
        if ours.kappa is not None and theirs.kappa is not None:
            delta = ours.kappa - theirs.kappa
        else:
            delta = ours.accuracy - theirs.accuracy
        return "helped" if delta > 1e-9 else "hurt" if delta < -1e-9 else "no change"


def calibrate(
    cases: Sequence[Case],
    judge: Any,
    *,
    cassette_dir: Path,
    votes: Sequence[int] = (1,),
    repeats: int = 1,
    mode: Mode | None = None,
    negation: bool = True,
    labels: str = "labels",
    observed: Sequence[bool] = (),
) -> Report:
    """Grade every case at every vote count, ``repeats`` times, and measure the agreement.

    ``observed``: the verdicts whose pass rate is corrected for the judge's errors (the
    suite's own, cached); without them, the judge's verdicts on the labelled cases."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    if not votes:
        raise ValueError("votes needs at least one vote count")
    directory = Path(cassette_dir) / "calibration"

    def graded(case: Case, count: int, repeat: int) -> Grading:
        variant = _Variant(judge, count, repeat)
        verdict = grade(case.text, case.criterion, variant, mode=mode, cassette_dir=directory)
        return Grading(case, repeat, verdict)

    results = tuple(
        vote_result(n, [graded(c, n, r) for c in cases for r in range(repeats)], repeats)
        for n in votes
    )
    checked: list[tuple[Grading, Grading]] = []
    if negation:
        first = {g.case.line: g for g in results[0].gradings if g.repeat == 0}
        for case in cases:
            opposite = case.negated()
            if opposite is not None:
                checked.append((first[case.line], graded(opposite, votes[0], 0)))
    unflipped = tuple(pair for pair in checked if pair[0].verdict.passed == pair[1].verdict.passed)
    corrections = tuple(
        correct(
            [(g.verdict.passed, g.case.expected) for g in r.gradings],
            observed or [g.verdict.passed for g in r.gradings],
        )
        for r in results
    )
    return Report(
        labels,
        str(judge.identity),
        len(cases),
        repeats,
        results,
        len(checked),
        unflipped,
        corrections,
        "suite verdicts" if observed else "labelled cases",
    )
