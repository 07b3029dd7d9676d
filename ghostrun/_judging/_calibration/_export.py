"""Cached verdicts written out as cases for a person to label (``calibrate --from-verdicts``).

Each keeps the judge's answer beside an empty ``expected``; the same text and
criterion graded twice (at other vote counts) is one case. A JSON file that is
not a verdict is passed over: there is nothing in it to label.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..._core._files import read_json

__all__ = ["export_verdicts"]


def export_verdicts(directory: Path) -> list[dict[str, Any]]:
    """The cached verdicts of ``directory`` (a cassette dir or its ``judge/``), unlabelled."""
    folder = Path(directory)
    if (folder / "judge").is_dir():
        folder = folder / "judge"
    if not folder.is_dir():
        raise ValueError(f"no verdict directory at {directory}")
    rows, seen = [], set()
    for path in sorted(folder.glob("*.json")):
        record = read_json(path)
        if not isinstance(record, dict) or not {"text", "criterion", "verdict"} <= record.keys():
            continue  # not a verdict file: nothing to label
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
                "source": path.name,
            }
        )
    return rows
