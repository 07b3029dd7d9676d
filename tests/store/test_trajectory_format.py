"""The trajectory file's three step kinds (DESIGN §3): model, tool and answer steps.

A step without ``kind`` is a model call, so files written before tool steps
stay valid; each kind's fields are checked, and an unknown kind is refused with
a `CassetteError` naming the file and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import ghostrun
from ghostrun._store._trajectory import load_trajectory, played

MODEL: dict[str, Any] = {
    "session": 0,
    "method": "POST",
    "endpoint": "https://api.openai.com/v1/chat/completions",
    "key": "a" * 32,
    "response": 0,
    "prompt": "Where is my parcel?",
    "model": "gpt-4o-mini",
    "tool_calls": [{"name": "track", "arguments": {"order_id": "A123"}}],
    "tokens": {"in": 52, "out": 9},
}
TOOL: dict[str, Any] = {
    "kind": "tool",
    "session": 0,
    "transport": "http",
    "server": "tracking.example.com",
    "tool": "GET /tracking/A123",
    "arguments": {"fields": "status"},
    "result": '{"status": "in transit", …',
    "key": "b" * 32,
    "response": 0,
}
ANSWER: dict[str, Any] = {"kind": "answer", "session": 0, "text": "It is in transit."}


def write(tmp_path: Path, *steps: dict[str, Any]) -> Path:
    path = tmp_path / "trajectories" / "t.json"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(orjson.dumps({"version": 1, "test": "t", "steps": list(steps)}))
    return path


def test_a_file_of_the_three_kinds_reads_and_replay_plays_model_and_tool_steps(
    tmp_path: Path,
) -> None:
    steps = [MODEL, TOOL, {**MODEL, "kind": "model", "tool_calls": []}, ANSWER]
    found = load_trajectory(write(tmp_path, *steps))
    assert found is not None and found["steps"] == steps
    assert played(found["steps"]) == steps[:3]


@pytest.mark.parametrize(
    ("step", "field"),
    [
        ({**MODEL, "kind": "robot"}, "steps[0].kind"),
        ({**MODEL, "kind": None}, "steps[0].kind"),
        ({**TOOL, "transport": "carrier-pigeon"}, "steps[0].transport"),
        ({k: v for k, v in TOOL.items() if k != "server"}, "steps[0]"),
        ({k: v for k, v in TOOL.items() if k != "arguments"}, "steps[0]"),
        ({**TOOL, "result": 3}, "steps[0].result"),
        ({**TOOL, "response": -1}, "steps[0].response"),
        ({**ANSWER, "text": None}, "steps[0].text"),
        ({"kind": "answer", "session": 0}, "steps[0]"),
        ({**ANSWER, "session": "first"}, "steps[0].session"),
        ({**MODEL, "kind": "model", "prompt": None}, "steps[0].prompt"),
    ],
)
def test_a_step_of_a_bad_or_unknown_kind_is_a_cassette_error_naming_the_file_and_field(
    tmp_path: Path, step: dict[str, Any], field: str
) -> None:
    path = write(tmp_path, step)
    with pytest.raises(ghostrun.CassetteError) as caught:
        load_trajectory(path)
    message = str(caught.value)
    assert str(path) in message and field in message, message
