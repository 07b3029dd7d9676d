"""Two judges compared on the suite's own criteria: ``ghostrun calibrate --against JUDGE``.

Every cached verdict of the cassette directory (``judge/``: the text, the
criterion as sent, and the first judge's verdict) is graded again by the
second judge, through `_verdicts.grade` under ``calibration/judge/`` (the
tests' own verdicts are never touched; a second run sends nothing; ``replay``
works offline). The agreement is Cohen's kappa over the pairs of verdicts
(`_statistics.agreement`, the second judge in the place of the "judged" side,
the first in the place of the label), with every case where they disagree, so
switching judges is a decision with a number.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._core._modes import Mode
from .._verdicts import Verdict, grade
from ._export import cached_verdicts
from ._statistics import Agreement, agreement

__all__ = ["Comparison", "Disagreement", "compare_judges"]


@dataclass(frozen=True)
class Disagreement:
    text: str
    criterion: str
    first: str  # the first judge's identity
    first_passed: bool
    second_passed: bool
    reason: str  # the second judge's


@dataclass(frozen=True)
class Comparison:
    first: tuple[str, ...]  # the identities of the judges whose verdicts were cached
    second: str
    agreement: Agreement  # accuracy is the share of criteria both judged alike
    disagreements: tuple[Disagreement, ...]


def compare_judges(
    cassette_dir: Path, second: Any, *, first: str | None = None, mode: Mode | None = None
) -> Comparison:
    """Grade the cached verdicts of ``cassette_dir`` (``first``'s only, if named) with
    ``second``; a ValueError when there are none."""
    identity = str(second.identity)
    records = [
        record
        for _, record in cached_verdicts(cassette_dir)
        if record.get("judge") != identity and (first is None or record.get("judge") == first)
    ]
    if not records:
        which = f"by {first} " if first else ""
        raise ValueError(
            f"no cached verdicts {which}in {Path(cassette_dir) / 'judge'} to compare {identity} "
            "with: run the tests (they cache each verdict) first"
        )
    directory = Path(cassette_dir) / "calibration"
    pairs, disagreements = [], []
    for record in records:
        verdict: Verdict = grade(
            record["text"], record["criterion"], second, mode=mode, cassette_dir=directory
        )
        was = record["verdict"] == "PASS"
        pairs.append((verdict.passed, was))
        if verdict.passed != was:
            disagreements.append(
                Disagreement(
                    record["text"],
                    record["criterion"],
                    str(record.get("judge", "?")),
                    was,
                    verdict.passed,
                    verdict.reason,
                )
            )
    judges = tuple(sorted({str(r.get("judge", "?")) for r in records}))
    return Comparison(judges, identity, agreement(pairs), tuple(disagreements))
