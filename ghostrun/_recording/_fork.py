"""A fork plan: a run whose first steps replay and whose later ones go live, changed (DESIGN §7).

``ghostrun fork TEST --at N`` and ``ghostrun compare`` run pytest in a
subprocess with a plan in the environment (`ENV`, a JSON object this module
writes and reads). In that process every session

- records into the plan's branch directory (``<cassette_dir>/branches/<NAME>/``),
  whatever directory its code names, so the recording is never written to;
- replays its model steps before ``at`` (numbered from 1 over the test's
  sessions, in the order they are made) from the cassettes the fork command
  copied there, never sending one (a step that no longer matches is a `CacheMiss`);
- sends step ``at`` and every later one for real, with the overrides applied
  to the request body first: ``model`` (every request's ``"model"``, or only
  the ones a mapping ``old=new`` names) and ``sets`` (paths in the miss diff's
  notation, ``temperature`` or ``messages[0].content``, each given a JSON value).

The plan is data the user's own command wrote for one run; a cassette or the
``[tool.ghostrun]`` table can never set it. It is I/O-free but for reading the
environment: the deck asks `ForkPlan.next_step` what to do with each request.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._core._exceptions import GhostrunError
from .._core._modes import Mode
from .._store._keys import split_field_paths

__all__ = ["ENV", "ForkError", "ForkPlan", "StepPlan", "current_plan", "parse_set"]

ENV = "GHOSTRUN_FORK"
"""The environment variable that carries a fork plan to the pytest process it governs."""


class ForkError(GhostrunError):
    """A fork plan that cannot be applied: a bad override, or a body it cannot change."""


@dataclass(frozen=True)
class StepPlan:
    """What to do with one request: replay it as recorded, or send ``body`` for real."""

    mode: Mode  # REPLAY (before ``at``) or RECORD (from ``at`` on)
    body: bytes  # the body to send and key: the overrides applied from ``at`` on


@dataclass
class ForkPlan:
    """Where a forked run records, from which step it goes live, and what it changes."""

    branch: Path
    at: int = 1
    model: str | None = None  # every request's model becomes this
    models: Mapping[str, str] = field(default_factory=dict)  # or only these: old -> new
    sets: Sequence[tuple[str, Any]] = ()  # (path in the miss diff's notation, JSON value)
    _steps: int = field(default=0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.at, bool) or not isinstance(self.at, int) or self.at < 1:
            raise ForkError(f"a fork starts at a step numbered from 1, got --at {self.at!r}")
        split_field_paths([path for path, _ in self.sets])  # a path that can never match

    def to_env(self) -> str:
        """The plan as the JSON text `ENV` carries."""
        return json.dumps(
            {
                "branch": str(self.branch),
                "at": self.at,
                "model": self.model,
                "models": dict(self.models),
                "sets": [[path, value] for path, value in self.sets],
            }
        )

    @classmethod
    def from_env(cls, text: str) -> ForkPlan:
        try:
            found = json.loads(text)
            return cls(
                branch=Path(found["branch"]),
                at=int(found.get("at", 1)),
                model=found.get("model"),
                models=dict(found.get("models") or {}),
                sets=[(str(path), value) for path, value in found.get("sets") or ()],
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ForkError(f"{ENV} does not hold a fork plan ({exc}): {text[:200]!r}") from exc

    def next_step(self, body: bytes) -> StepPlan:
        """The next model step of the run: replayed before ``at``, else sent, overridden."""
        with self._lock:
            self._steps += 1
            number = self._steps
        if number < self.at:
            return StepPlan(Mode.REPLAY, body)
        return StepPlan(Mode.RECORD, self.rewrite(body))

    def rewrite(self, body: bytes) -> bytes:
        """``body`` with the overrides applied; unchanged when there are none."""
        if self.model is None and not self.models and not self.sets:
            return body
        try:
            value = json.loads(body)
        except ValueError as exc:
            raise ForkError(
                "a fork can only change a JSON request body; this one is not JSON "
                f"({body[:60]!r}...): fork without --model/--set, or at a later step"
            ) from exc
        if not isinstance(value, dict):
            raise ForkError("a fork changes a JSON object body; this request sent another value")
        self._model(value)
        for path, new in self.sets:
            _set(value, split_field_paths([path])[0], new, path)
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()

    def _model(self, value: dict[str, Any]) -> None:
        if self.model is None and not self.models:
            return
        if "model" not in value:
            raise ForkError(
                '--model replaces a request body\'s "model", and this request has none (the '
                "provider takes the model in its URL): fork it with --set instead"
            )
        if self.model is not None:
            value["model"] = self.model
        elif value["model"] in self.models:
            value["model"] = self.models[value["model"]]


def _set(value: Any, path: tuple[str, ...], new: Any, shown: str) -> None:
    """Put ``new`` at ``path`` (its last field may be new; the ones above it must exist)."""
    *parents, last = path
    holder = value
    for segment in parents:
        holder = _child(holder, segment, shown)
    if isinstance(holder, list):
        holder[_index(holder, last, shown)] = new
    elif isinstance(holder, dict):
        holder[last] = new
    else:
        raise ForkError(f"--set {shown}: {last!r} is inside a {type(holder).__name__}")


def _child(holder: Any, segment: str, shown: str) -> Any:
    if isinstance(holder, list):
        return holder[_index(holder, segment, shown)]
    if isinstance(holder, dict) and segment in holder:
        return holder[segment]
    raise ForkError(f"--set {shown}: the request body has no {segment!r} there")


def _index(holder: list[Any], segment: str, shown: str) -> int:
    if not segment.lstrip("-").isdigit() or not -len(holder) <= int(segment) < len(holder):
        raise ForkError(f"--set {shown}: {segment!r} is not an index of a list of {len(holder)}")
    return int(segment)


def parse_set(text: str) -> tuple[str, Any]:
    """``PATH=VALUE`` from the command line: the value read as JSON, else as a string."""
    path, equals, raw = text.partition("=")
    if not equals or not path.strip():
        raise ForkError(f"--set takes PATH=VALUE (temperature=0.2), got {text!r}")
    try:
        value = json.loads(raw)
    except ValueError:
        value = raw
    split_field_paths([path.strip()])
    return path.strip(), value


_cached: tuple[str, ForkPlan] | None = None


def current_plan() -> ForkPlan | None:
    """The plan `ENV` holds in this process, or None; one object per value (its step count)."""
    global _cached
    text = os.environ.get(ENV)
    if not text:
        return None
    if _cached is None or _cached[0] != text:
        _cached = (text, ForkPlan.from_env(text))
    return _cached[1]
