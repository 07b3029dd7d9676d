"""Cached verdicts written out as cases for a person to label (``calibrate --from-verdicts``).

Each keeps the judge's answer beside an empty ``expected``; the same text and
criterion graded twice (at other vote counts) is one case. A JSON file that is
not a verdict is passed over: there is nothing in it to label.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..._core._files import read_json

__all__ = ["cached_verdicts", "export_verdicts"]


def cached_verdicts(directory: Path) -> list[tuple[str, dict[str, Any]]]:
    """The verdict files of ``directory`` (a cassette dir or its ``judge/``) that hold their
    text and criterion, by file name, in name order."""
    folder = Path(directory)
    if (folder / "judge").is_dir():
        folder = folder / "judge"
    if not folder.is_dir():
        raise ValueError(f"no verdict directory at {directory}")
    found = []
    for path in sorted(folder.glob("*.json")):
        record = read_json(path)
        if isinstance(record, dict) and {"text", "criterion", "verdict"} <= record.keys():
            found.append((path.name, record))  # else not a verdict file: nothing in it to use
    return found


def export_verdicts(directory: Path) -> list[dict[str, Any]]:
    """The cached verdicts of ``directory`` (a cassette dir or its ``judge/``), unlabelled."""
    rows, seen = [], set()
    for name, record in cached_verdicts(directory):
        pair = (record["text"], record["criterion"])
        if pair in seen:
            continue
        seen.add(pair)
        rows.append(
            {
                "text": record["text"],
                "criterion": record["criterion"],
                "expected": None,
                "judge_said": record["verdict"],
                "judge_reason": record.get("reason", ""),
                "judge": record.get("judge", ""),
                "source": name,
            }
        )
    return rows
