"""What a replay miss tells the user: what was asked, and what changed.

Runs only on a miss, so it may read the cassette directory; the hit path never does.
The directory is shown absolute (and said to be missing when it is), and the
fields the session ignores are left out of the diff, as they are out of the key.

Inside a test with a trajectory, the request is compared first with the step
recorded at the same position ("step 3 of 5 of test_refund"), not with the
closest request to the endpoint, which in an agent loop is often another step.
When the history before this step is unchanged (the request starts with the
messages the step before sent), only what this step added is diffed: the new
tool results and user turns.
"""

from __future__ import annotations

import copy
import difflib
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from .._core._config import mode_source
from .._core._exceptions import CacheMiss, CassetteError
from .._core._normalize import BUILTINS, Normalizer, normalizer
from .._core._safe_text import terminal
from .._secrets._memory import request_secrets
from .._secrets._scrub import scrub_text
from .._store._keys import remove_field
from .._store._render import render_body
from .._store._trajectory import StepRecord, load_trajectory, model_steps, trajectory_path
from ._request import RequestInfo
from ._steps import request_messages, settled
from ._trajectory import test_identity

if TYPE_CHECKING:
    from ._deck import Deck

__all__ = ["describe_miss", "forbidden", "replay_miss"]

_MAX_DIFF_LINES = 60
_MAX_CANDIDATES = 2000
_GIT_TIMEOUT = 0.5  # a miss must reach the test in well under 2 s (DESIGN §3)


def replay_miss(info: RequestInfo, deck: Deck) -> CacheMiss:
    """The miss for a request replay mode has no recording of, its message scrubbed."""
    request_secrets(info)  # remembered: the message, and run logs, are scrubbed of them
    message = describe_miss(info, deck, deck.ignore)
    return CacheMiss(scrub_text(message, edits=deck.hook_edits))


def forbidden(what: str, name: str | None) -> CacheMiss:
    """The miss for traffic that cannot be recorded at all, refused in replay mode."""
    return CacheMiss(
        f"ghostrun: replay mode never touches the network, and {what} cannot be "
        f"recorded or replayed (session {name or '(unnamed)'}). Run this test "
        "with GHOSTRUN_MODE=auto against the real provider, or keep it out of replay."
    )


def describe_miss(info: RequestInfo, deck: Deck, ignore: Sequence[tuple[str, ...]]) -> str:
    directory = Path(deck.cassette_dir).absolute()
    lines = [
        f"ghostrun: no recording for {info.method} {info.url}",
        f"  mode:         {deck.mode.value}" + (f" (session {deck.name})" if deck.name else ""),
        f"                {mode_source(deck.arguments.mode)}",
        f"  cassette dir: {directory}",
        f"  expected:     {info.key}.json",
    ]
    lines.extend(_uncommitted(directory / f"{info.key}.json"))
    if not directory.is_dir():
        lines.append(
            "  The cassette directory does not exist. Check cassette_dir= (in pytest a "
            "relative one is relative to the rootdir; elsewhere to the current directory)."
        )
    body = _without(deck.stored_request(info).get("body"), ignore)
    step = _step_lines(directory, deck, body, ignore)
    if step:
        lines.extend(step)
        return "\n".join(lines)
    closest = _closest(directory, info, body, ignore)
    shapes = _only_shapes(closest[1], body) if closest is not None else None
    if shapes and deck.normalizer is not None:  # name the whole option: what it has, and more
        shapes = [n for n in BUILTINS if n in shapes or n in deck.normalizer.names]
    lines.extend(_advice(shapes))
    if closest is None:
        lines.append(
            f"  No recorded request to {info.method} {_endpoint(info.url)} in this directory."
        )
    else:
        other_path, other = closest
        lines.append(f"  Closest recorded request to the same endpoint: {other_path.name}")
        normalize = deck.normalizer
        if normalize is not None:  # the diff shows what the key compares
            other, body = _shaped(other, normalize), _shaped(body, normalize)
        lines.extend(_diff(other, body, other_path.name))
    return terminal("\n".join(lines))  # the closest recording comes from a file: no escapes


def _uncommitted(path: Path) -> list[str]:
    """Whether git knows the expected file: a cassette recorded but never committed says so."""
    if path.exists() or not path.parent.is_dir():
        return []
    try:
        done = subprocess.run(
            ["git", "ls-files", "--error-unmatch", "--", path.name],
            cwd=path.parent,
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []  # no git here: nothing to say
    if done.returncode == 0:
        return [
            "  git tracks this cassette but it is missing from the working tree: "
            f"git checkout -- {path}"
        ]
    if b"not a git repository" in done.stderr:
        return []
    return [
        "  This file is not in the repository (git does not track it): if it was recorded "
        f"on another machine, it was never committed. Commit it: git add {path}"
    ]


def _advice(shapes: list[str] | None) -> list[str]:
    """How to fix the miss: re-recording only helps when the request is not new every run."""
    if shapes:
        option = "normalize=[" + ", ".join(f'"{name}"' for name in shapes) + "]"
        return [
            f"  The request differs from the closest recording only in values shaped like "
            f"{' and '.join(shapes)}, which change on every run: re-recording cannot help. "
            f"Pass {option} (a session argument, configure(), or the pytest ini "
            f"ghostrun_normalize) so that they are left out of the key."
        ]
    return [
        "  To record it, run once with GHOSTRUN_MODE=record (or pytest --ghostrun-record) "
        "with the provider reachable. If a value in the request changes on every run (an "
        "id, a date), leave it out of the key: ignore_fields=[...] for a whole field, "
        'normalize=["uuid", "date", ...] or a regex for a value inside a string.'
    ]


def _only_shapes(recorded: Any, live: Any) -> list[str] | None:
    """The built-in shapes that alone make two different bodies equal, if they do."""
    if render_body(recorded) == render_body(live):
        return None
    every = normalizer(list(BUILTINS))
    if every is None or _differ(recorded, live, every):
        return None
    needed = [
        name
        for name in BUILTINS
        if _differ(recorded, live, normalizer([n for n in BUILTINS if n != name]))
    ]
    return needed if needed and not _differ(recorded, live, normalizer(needed)) else list(BUILTINS)


def _differ(recorded: Any, live: Any, shapes: Normalizer | None) -> bool:
    if shapes is None:
        return render_body(recorded) != render_body(live)
    return render_body(_shaped(recorded, shapes)) != render_body(_shaped(live, shapes))


def _shaped(body: Any, shapes: Normalizer) -> Any:
    """A stored body with the shapes' values replaced, as the key sees them."""
    if not isinstance(body, dict):
        return body
    if "json" in body:
        return {**body, "json": shapes.value(body["json"])}
    if isinstance(body.get("text"), str):
        return {**body, "text": shapes.text(body["text"])}
    return body


def _without(body: Any, ignore: Sequence[tuple[str, ...]]) -> Any:
    """A stored body minus the ignored fields (a JSON body only; a copy)."""
    if not ignore or not (isinstance(body, dict) and "json" in body):
        return body
    value = copy.deepcopy(body["json"])
    for path in ignore:
        remove_field(value, path)
    return {**body, "json": value}


def _endpoint(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


def _closest(
    directory: Path, info: RequestInfo, body: Any, ignore: Sequence[tuple[str, ...]]
) -> tuple[Path, Any] | None:
    endpoint = _endpoint(info.url)
    needle = endpoint.encode()
    mine = render_body(body)
    best: tuple[float, Path, Any] | None = None
    try:
        paths = sorted(directory.glob("*.json"))[:_MAX_CANDIDATES]
    except OSError:
        return None
    for path in paths:
        try:
            raw = path.read_bytes()
            if needle not in raw:
                continue
            request = orjson.loads(raw)["request"]
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
            continue
        if not isinstance(request, dict):
            continue  # not a cassette: the replay of that file names what is wrong
        if request.get("method") != info.method or _endpoint(str(request.get("url"))) != endpoint:
            continue
        theirs = _without(request.get("body") or {}, ignore)
        ratio = difflib.SequenceMatcher(None, render_body(theirs), mine).ratio()
        if best is None or ratio > best[0]:
            best = (ratio, path, theirs)
    return None if best is None else (best[1], best[2])


def _diff(recorded: Any, live: Any, name: str, hide: tuple[str, int] | None = None) -> list[str]:
    diff = list(
        difflib.unified_diff(
            _hidden(render_body(recorded), hide),
            _hidden(render_body(live), hide),
            f"recorded ({name})",
            "this request",
            lineterm="",
            n=1,
        )
    )
    if len(diff) > _MAX_DIFF_LINES:
        diff = [*diff[:_MAX_DIFF_LINES], f"... ({len(diff) - _MAX_DIFF_LINES} more diff lines)"]
    return (
        ["    " + line for line in diff]
        if diff
        else ["    (bodies are identical: the URL or method differs)"]
    )


# -- a step of a trajectory -------------------------------------------------------------------


def _step_lines(
    directory: Path, deck: Deck, body: Any, ignore: Sequence[tuple[str, ...]]
) -> list[str]:
    """The miss told as a step of its test's trajectory; empty when it is none."""
    test = test_identity(deck)
    try:
        found = load_trajectory(trajectory_path(directory, test))
    except CassetteError:
        return []  # the replay's own check says what is wrong with the file
    if found is None:
        return []
    steps = [s for s in model_steps(found["steps"]) if s["session"] == deck.session_index]
    position = len(settled(deck.steps))
    if position >= len(steps):
        return (
            [f"  step {position + 1} of {test}: its trajectory recorded {len(steps)} steps only"]
            if steps
            else []
        )
    recorded = _recorded_body(directory, steps[position], ignore)
    if recorded is None:
        return []
    number, total = position + 1, len(steps)
    lines = [
        f"  step {number} of {total} of {test}: the request differs from the recorded "
        f"step {number} ({steps[position]['key']}.json)"
    ]
    earlier = _recorded_body(directory, steps[position - 1], ignore) if position else None
    kept = _shared_history(earlier, recorded, body)
    if kept:
        lines.append(f"  The history up to step {position} is unchanged; what step {number} added:")
        name = f"step {number}, new messages"
        lines.extend(_diff(recorded, body, name, hide=kept))
    else:
        lines.extend(_diff(recorded, body, f"step {number}"))
    return lines


def _recorded_body(
    directory: Path, step: StepRecord, ignore: Sequence[tuple[str, ...]]
) -> Any | None:
    try:
        request = orjson.loads((directory / f"{step['key']}.json").read_bytes())["request"]
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return None
    return _without(request.get("body") or {}, ignore) if isinstance(request, dict) else None


def _shared_history(earlier: Any, recorded: Any, live: Any) -> tuple[str, int] | None:
    """(the messages' field, how many) both requests start with: the earlier step's messages."""
    values = [b.get("json") if isinstance(b, dict) else None for b in (earlier, recorded, live)]
    before, theirs, mine = (request_messages(v) for v in values)
    if before is None or theirs is None or mine is None or not before:
        return None
    count = len(before)
    if theirs[:count] != before or mine[:count] != before:
        return None
    field = next(n for n in ("messages", "input", "contents") if values[0].get(n) is before)  # type: ignore[union-attr]  # a conversation: an object
    return field, count


def _hidden(lines: list[str], hide: tuple[str, int] | None) -> list[str]:
    """``lines`` without those of the messages both requests share (and their continuations)."""
    if hide is None:
        return lines
    field, count = hide
    shared = tuple(f"{field}[{i}]" for i in range(count))
    kept, skipping = [], False
    for line in lines:
        if not line.startswith(" "):
            skipping = line.startswith(shared)
        if not skipping:
            kept.append(line)
    return kept
