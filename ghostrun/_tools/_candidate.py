"""A candidate model against the recording: ``ghostrun compare``'s figures and its verdict.

The recording ran once (replayed: its outcomes cannot vary), the candidate ``K``
times, each run in a branch (``compare-<candidate>-<k>``). Per test and over the
suite: the pass rate of each with its 95 % Wilson score interval, the tests whose
outcome changed, the tokens and cost of each (the candidate's averaged per run).

The verdict, exactly: a test, or the suite, is *worse* when the upper end of the
candidate's 95 % Wilson interval is below the recording's pass rate minus the
threshold (default 0)::

    worse  <=>  wilson_high(candidate passes, candidate runs) < recording rate - threshold

``compare`` exits 1 when the suite or any test is worse, else 0. With ``K`` runs a
test the recording passed is worse as soon as the candidate failed it once
(the upper bound of k/K is below 1 for any k < K), unless the threshold allows
it: ``--threshold 0.1`` tolerates one failure in 3 runs (2/3: upper bound 0.94).
A test that passed, failed or errored counts; a skipped one does not, and a
test the candidate's run did not report counts as failed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._store._trajectory import load_trajectory, trajectory_path
from . import _tokens
from ._branches import model_steps

__all__ = ["Z95", "Comparison", "PerTest", "Rate", "compare_runs", "wilson"]

Z95 = 1.959963984540054
_COUNTED = ("passed", "failed", "error")


def wilson(passes: int, runs: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``passes`` in ``runs`` (``(0, 1)`` for no runs)."""
    if runs == 0:
        return 0.0, 1.0
    p = passes / runs
    scale = 1 + z * z / runs
    centre = (p + z * z / (2 * runs)) / scale
    half = z * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / scale
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Rate:
    """``passes`` of ``runs``, and its 95 % Wilson interval."""

    passes: int
    runs: int

    @property
    def rate(self) -> float | None:
        return self.passes / self.runs if self.runs else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.passes, self.runs)

    def as_json(self) -> dict[str, Any]:
        low, high = self.interval
        return {"passes": self.passes, "runs": self.runs, "rate": self.rate, "ci95": [low, high]}


@dataclass(frozen=True)
class PerTest:
    name: str
    recording: Rate
    candidate: Rate
    outcomes: tuple[str | None, tuple[str | None, ...]]  # the recording's, each run's
    usage: tuple[_tokens.Usage | None, _tokens.Usage | None]  # candidate: mean per run
    worse: bool

    @property
    def changed(self) -> bool:
        return any(outcome != self.outcomes[0] for outcome in self.outcomes[1])


@dataclass(frozen=True)
class Comparison:
    candidate: str
    repeat: int
    threshold: float
    tests: tuple[PerTest, ...]
    recording: Rate
    overall: Rate
    usage: tuple[_tokens.Usage | None, _tokens.Usage | None]
    suite_worse: bool

    @property
    def worse(self) -> bool:
        return self.suite_worse or any(t.worse for t in self.tests)


def _is_worse(candidate: Rate, recording: Rate, threshold: float) -> bool:
    if recording.rate is None:
        return False
    return candidate.interval[1] < recording.rate - threshold


def compare_runs(
    candidate: str,
    recording: Path,
    recorded: Mapping[str, Any],
    branches: Sequence[tuple[Path, Mapping[str, Any]]],
    threshold: float = 0.0,
    prices: _tokens.Prices | None = None,
) -> Comparison:
    """The figures of ``recorded`` (the recording's run log, its cassette dir ``recording``)
    against each branch's run log (``branches``: its directory and run log)."""
    tests = [
        _test(name, outcome, recording, branches, threshold, prices)
        for name, outcome in sorted(_outcomes(recorded).items())
        if outcome in _COUNTED
    ]
    before = Rate(sum(t.recording.passes for t in tests), sum(t.recording.runs for t in tests))
    after = Rate(sum(t.candidate.passes for t in tests), sum(t.candidate.runs for t in tests))
    return Comparison(
        candidate,
        len(branches),
        threshold,
        tuple(tests),
        before,
        after,
        (_sum(t.usage[0] for t in tests), _sum(t.usage[1] for t in tests)),
        _is_worse(after, before, threshold),
    )


def _test(
    name: str,
    outcome: str,
    recording: Path,
    branches: Sequence[tuple[Path, Mapping[str, Any]]],
    threshold: float,
    prices: _tokens.Prices | None,
) -> PerTest:
    runs = tuple(_outcomes(run).get(name) for _, run in branches)
    before = Rate(int(outcome == "passed"), 1)
    after = Rate(sum(o == "passed" for o in runs), len(runs))
    usages = [_usage(directory, name, prices) for directory, _ in branches]
    return PerTest(
        name,
        before,
        after,
        (outcome, runs),
        (_usage(recording, name, prices), _mean(usages)),
        _is_worse(after, before, threshold),
    )


def _outcomes(run: Mapping[str, Any]) -> dict[str, str | None]:
    tests = run.get("tests")
    if not isinstance(tests, dict):
        return {}
    return {name: t.get("outcome") for name, t in tests.items() if isinstance(t, dict)}


def _usage(directory: Path, name: str, prices: _tokens.Prices | None) -> _tokens.Usage | None:
    trajectory = load_trajectory(trajectory_path(directory, name))
    return _tokens.usage(model_steps(dict(trajectory or {})), prices)


def _mean(found: Sequence[_tokens.Usage | None]) -> _tokens.Usage | None:
    known = [u for u in found if u is not None]
    if not known:
        return None
    costs = [u.cost for u in known]
    cost = None if None in costs else sum(c for c in costs if c is not None) / len(known)
    return _tokens.Usage(
        round(sum(u.tokens_in for u in known) / len(known)),
        round(sum(u.tokens_out for u in known) / len(known)),
        cost,
    )


def _sum(found: Any) -> _tokens.Usage | None:
    known = [u for u in found if u is not None]
    if not known:
        return None
    costs = [u.cost for u in known]
    cost = None if None in costs else sum(c for c in costs if c is not None)
    return _tokens.Usage(sum(u.tokens_in for u in known), sum(u.tokens_out for u in known), cost)
