"""How a judge's gradings compare with the labels: pure functions over plain values.

Accuracy, FAIL precision and recall, and Cohen's kappa of ``(judged, expected)``
pairs; per vote count, the flip rate (minority draws within a grading) and how
many cases changed verdict between repeats. FAIL is the positive class.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .._verdicts import Verdict
from ._cases import Case

__all__ = ["Agreement", "Grading", "VoteResult", "agreement", "figures", "vote_result"]


@dataclass(frozen=True)
class Grading:
    """The judge's verdict on one case, at one vote count, in one repeat."""

    case: Case
    repeat: int
    verdict: Verdict

    @property
    def right(self) -> bool:
        return self.verdict.passed == self.case.expected


@dataclass(frozen=True)
class Agreement:
    """How a judge's verdicts compare with the labels (None where a figure is undefined)."""

    n: int
    accuracy: float
    fail_precision: float | None
    fail_recall: float | None
    kappa: float | None


def agreement(pairs: Iterable[tuple[bool, bool]]) -> Agreement:
    """Accuracy, FAIL precision and recall, and Cohen's kappa of ``(judged, expected)`` pairs.

    Both are ``passed`` booleans. Kappa is undefined (None) when chance alone
    would agree every time: both sides gave a single answer throughout.
    """
    pairs = list(pairs)
    n = len(pairs)
    if not n:
        raise ValueError("agreement needs at least one graded case")
    agree = sum(judged == expected for judged, expected in pairs)
    caught = sum(not judged and not expected for judged, expected in pairs)
    judged_fail = sum(not judged for judged, _ in pairs)
    labelled_fail = sum(not expected for _, expected in pairs)
    chance = (judged_fail * labelled_fail + (n - judged_fail) * (n - labelled_fail)) / n**2
    observed = agree / n
    return Agreement(
        n=n,
        accuracy=observed,
        fail_precision=caught / judged_fail if judged_fail else None,
        fail_recall=caught / labelled_fail if labelled_fail else None,
        kappa=(observed - chance) / (1 - chance) if chance < 1 else None,
    )


@dataclass(frozen=True)
class VoteResult:
    """The figures at one vote count, over every case and repeat."""

    votes: int
    agreement: Agreement
    flip_rate: float  # mean share of minority draws within a grading (0 with one vote)
    unstable: float | None  # share of cases whose verdict changed between repeats
    gradings: tuple[Grading, ...]

    @property
    def wrong(self) -> list[Grading]:
        return [g for g in self.gradings if not g.right]


def vote_result(votes: int, gradings: Sequence[Grading], repeats: int) -> VoteResult:
    """The figures of one vote count's gradings (``unstable`` only with repeats)."""
    by_case: dict[int, set[bool]] = {}
    for g in gradings:
        by_case.setdefault(g.case.line, set()).add(g.verdict.passed)
    unstable = sum(len(v) > 1 for v in by_case.values()) / len(by_case) if repeats > 1 else None
    return VoteResult(
        votes=votes,
        agreement=agreement((g.verdict.passed, g.case.expected) for g in gradings),
        flip_rate=sum(g.verdict.flip_rate for g in gradings) / len(gradings),
        unstable=unstable,
        gradings=tuple(gradings),
    )


def figures(result: VoteResult) -> dict[str, Any]:
    """A vote count's figures as JSON values: kept in the summary, shown by ``--format json``."""
    a = result.agreement
    return {
        "accuracy": a.accuracy,
        "kappa": a.kappa,
        "fail_precision": a.fail_precision,
        "fail_recall": a.fail_recall,
        "flip_rate": result.flip_rate,
        "unstable": result.unstable,
    }
