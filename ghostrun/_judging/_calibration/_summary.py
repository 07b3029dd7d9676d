"""The figures the assertions read: ``<cassette_dir>/calibration/judges.json``.

Each ``ghostrun calibrate`` run keeps its figures per judge and vote count
(`save`); with ``configure(min_judge_kappa=...)`` or ``GHOSTRUN_MIN_JUDGE_KAPPA``,
a judged failure says when its judge agreed with the labels less than that
(`failure_note`). The file is versioned and read by the store's one loader
(`_store._validate`, kind ``"calibration summary"``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..._core._config import settings
from ..._core._exceptions import CassetteError
from ..._core._files import dump_json, write_atomic
from ..._core._words import plural
from ..._store import _validate
from .._verdicts import current_cassette_dir
from ._experiment import Report
from ._statistics import figures

__all__ = ["SUMMARY_VERSION", "THRESHOLD_ENV", "failure_note", "save", "summary_path"]

SUMMARY_VERSION = _validate.FORMAT_VERSIONS["calibration summary"]
THRESHOLD_ENV = "GHOSTRUN_MIN_JUDGE_KAPPA"


def summary_path(cassette_dir: Path) -> Path:
    return Path(cassette_dir) / "calibration" / "judges.json"


def save(report: Report, cassette_dir: Path) -> Path:
    """Keep this run's figures for the judge's failure messages; return the file written."""
    path = summary_path(cassette_dir)
    judges = _load(path)
    entry = judges.setdefault(report.judge, {})
    for result in report.results:
        entry[str(result.votes)] = {
            "labels": report.labels,
            "cases": report.cases,
            "repeats": report.repeats,
            **figures(result),
        }
    write_atomic(path, dump_json({"version": SUMMARY_VERSION, "judges": judges}))
    return path


def _load(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """Each judge's figures by vote count; a CassetteError names a damaged file."""
    document = _validate.load(path, "calibration summary")
    judges: dict[str, dict[str, dict[str, Any]]] = {} if document is None else document["judges"]
    return judges


def failure_note(identity: str, votes: int) -> str | None:
    """A line for a judged failure when its judge falls short of the user's kappa bar.

    None when no bar is set, or when the judge's recorded calibration meets it.
    """
    threshold = _threshold()
    if threshold is None:
        return None
    path = summary_path(current_cassette_dir())
    try:
        record = _load(path).get(identity, {}).get(str(votes))
    except CassetteError as exc:
        return f"judge calibration: {exc}"
    if record is None:
        return (
            f"judge calibration: {identity} at {plural(votes, 'vote')} has no calibration in "
            f"{path}, and your bar is kappa {threshold:g}. Measure it: ghostrun calibrate LABELS"
        )
    kappa = record.get("kappa")
    if isinstance(kappa, int | float) and kappa >= threshold:
        return None
    shown = f"{kappa:.2f}" if isinstance(kappa, int | float) else "undefined"
    return (
        f"judge calibration: {identity} at {plural(votes, 'vote')} agreed with your labels at "
        f"kappa {shown} ({record.get('cases')} cases of {record.get('labels')}), below your bar "
        f"of {threshold:g}: this failure may be the judge's mistake, not a regression."
    )


def _threshold() -> float | None:
    """``GHOSTRUN_MIN_JUDGE_KAPPA`` (the per-run switch) beats ``configure(min_judge_kappa=)``."""
    env = os.environ.get(THRESHOLD_ENV, "").strip()
    if not env:
        return settings.resolve_min_judge_kappa()
    try:
        return float(env)
    except ValueError:
        raise ValueError(
            f"invalid {THRESHOLD_ENV}={env!r}: expected a number from -1 to 1"
        ) from None
