"""The judge's error rates, and a pass rate corrected for them: pure functions (Rogan-Gladen).

A judge that passes 90 % of the labelled PASS cases and fails 80 % of the
labelled FAIL ones misreports any pass rate it measures. With PASS as the
positive class here (the rate being corrected is a pass rate):

- TPR, the true-positive rate: of the cases labelled PASS, the share the judge passed;
- TNR, the true-negative rate: of the cases labelled FAIL, the share the judge failed;
- the corrected pass rate of verdicts that passed at the observed rate ``p``::

      (p + TNR - 1) / (TPR + TNR - 1), clipped to [0, 1]

  (Rogan and Gladen, 1978), undefined when ``TPR + TNR <= 1``: such a judge is
  no better than a coin, and its verdicts say nothing about the true rate.

Its 95 % interval is a percentile bootstrap: the labelled cases and the
observed verdicts are each resampled with replacement `ROUNDS` times from a
fixed seed, so the same inputs always give the same interval; rounds where a
class is missing from the resampled labels, or where the judge is no better
than chance, are left out, and with fewer than half the rounds left there is
no interval.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["ROUNDS", "SEED", "Correction", "correct", "rates", "rogan_gladen"]

ROUNDS = 2000
SEED = 45  # any fixed seed: the interval is a function of the data alone


@dataclass(frozen=True)
class Correction:
    """The judge's rates on the labels, and the pass rate it observed, corrected."""

    tpr: float | None  # None: no case labelled PASS
    tnr: float | None  # None: no case labelled FAIL
    observed: float | None  # the pass rate of the verdicts corrected (None: none)
    observed_n: int
    corrected: float | None  # None: undefined (see the module docstring)
    interval: tuple[float, float] | None


def rates(pairs: Sequence[tuple[bool, bool]]) -> tuple[float | None, float | None]:
    """(TPR, TNR) of ``(judged passed, labelled passed)`` pairs, PASS the positive class."""
    labelled_pass = [judged for judged, expected in pairs if expected]
    labelled_fail = [judged for judged, expected in pairs if not expected]
    tpr = sum(labelled_pass) / len(labelled_pass) if labelled_pass else None
    tnr = sum(not j for j in labelled_fail) / len(labelled_fail) if labelled_fail else None
    return tpr, tnr


def rogan_gladen(observed: float, tpr: float | None, tnr: float | None) -> float | None:
    """The true pass rate behind ``observed``, for a judge of these rates; None if undefined."""
    if tpr is None or tnr is None or tpr + tnr - 1 <= 0:
        return None
    return min(1.0, max(0.0, (observed + tnr - 1) / (tpr + tnr - 1)))


def correct(
    pairs: Sequence[tuple[bool, bool]],
    observed: Sequence[bool],
    *,
    rounds: int = ROUNDS,
    seed: int = SEED,
) -> Correction:
    """The rates of ``pairs``, and the pass rate of ``observed`` verdicts corrected by them."""
    tpr, tnr = rates(pairs)
    if not observed:
        return Correction(tpr, tnr, None, 0, None, None)
    rate = sum(observed) / len(observed)
    return Correction(
        tpr,
        tnr,
        rate,
        len(observed),
        rogan_gladen(rate, tpr, tnr),
        _bootstrap(list(pairs), list(observed), rounds, seed),
    )


def _bootstrap(
    pairs: list[tuple[bool, bool]], observed: list[bool], rounds: int, seed: int
) -> tuple[float, float] | None:
    draw = random.Random(seed)
    found = []
    for _ in range(rounds):
        sample = draw.choices(pairs, k=len(pairs))
        seen = draw.choices(observed, k=len(observed))
        value = rogan_gladen(sum(seen) / len(seen), *rates(sample))
        if value is not None:
            found.append(value)
    if len(found) * 2 < rounds:
        return None
    found.sort()
    return found[int(0.025 * len(found))], found[min(len(found) - 1, int(0.975 * len(found)))]
