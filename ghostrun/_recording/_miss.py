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
from collections.abc import Sequence, Set
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
from .._store._formats import ToolStep
from .._store._keys import remove_field
from .._store._render import render_body
from .._store._trajectory import TRAJECTORIES, StepRecord, load_trajectory, trajectory_path
from ._request import RequestInfo
from ._steps import request_messages, settled
from ._trajectory import played, test_identity

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
    lines.extend(_uncommitted(directory, info.key))
    if not directory.is_dir():
        lines.append(
            "  The cassette directory does not exist. Check cassette_dir= (in pytest a "
            "relative one is relative to the rootdir; elsewhere to the current directory)."
        )
    body = _without(deck.stored_request(info).get("body"), ignore)
    step = _step_lines(directory, deck, info, body, ignore)
    if step is not None:  # an agent's step: its diff, then the advice any miss gives
        step_lines, recorded = step
        lines.extend(step_lines)
        lines.extend(_advice(None if recorded is None else _shapes(recorded, body, deck)))
        return terminal("\n".join(lines))
    consumed = deck.used_keys - {info.key}  # the steps this session already replayed
    parts = urlsplit(info.url)
    any_port = deck.matcher.keys_without_port(parts.hostname or "", parts.port)
    closest = _closest(directory, info, body, ignore, consumed, any_port)
    lines.extend(_advice(None if closest is None else _shapes(closest[1], body, deck)))
    if closest is None:
        lines.append(
            f"  No recorded request to {info.method} {_endpoint(info.url)} in this directory"
            + (" but those this session already replayed." if consumed else ".")
        )
    else:
        other_path, other, other_url = closest
        lines.append(f"  Closest recorded request to the same endpoint: {other_path.name}")
        normalize = deck.normalizer
        if normalize is not None:  # the diff shows what the key compares
            other, body = _shaped(other, normalize), _shaped(body, normalize)
        diff = _diff(other, body, other_path.name)
        lines.extend(diff or _identical(other_url, info, deck))
    return terminal("\n".join(lines))  # the closest recording comes from a file: no escapes


def _shapes(recorded: Any, live: Any, deck: Deck) -> list[str] | None:
    """The built-in shapes that alone tell ``recorded`` from ``live`` (all the session has too)."""
    shapes = _only_shapes(recorded, live)
    if shapes and deck.normalizer is not None:  # name the whole option: what it has, and more
        shapes = [n for n in BUILTINS if n in shapes or n in deck.normalizer.names]
    return shapes


def _identical(recorded_url: str, info: RequestInfo, deck: Deck) -> list[str]:
    """Why two requests to one endpoint whose bodies read the same have different keys."""
    if urlsplit(recorded_url).query != urlsplit(info.url).query:
        return [
            "    (bodies are identical: the query differs)",
            f"    recorded:     {recorded_url}",
            f"    this request: {info.url}",
        ]
    return [
        "    (the bodies read the same under this session's settings, "
        f"{_settings_text(deck)}, but the recording's key was computed under other "
        "normalize/ignore_fields settings: it was recorded, or imported, with settings "
        "this session does not have. Use the settings it was recorded with, or re-record "
        "it with these (GHOSTRUN_MODE=record).)"
    ]


def _settings_text(deck: Deck) -> str:
    names = deck.normalizer.names if deck.normalizer is not None else ()
    normalize = "[" + ", ".join(f'"{n}"' for n in names) + "]"
    ignored = "[" + ", ".join(f'"{_dotted(p)}"' for p in deck.ignore) + "]"
    return f"normalize={normalize} ignore_fields={ignored}"


def _dotted(path: tuple[str, ...]) -> str:
    return "".join(
        f"[{part}]" if part.isdigit() or part == "*" else ("." if i else "") + part
        for i, part in enumerate(path)
    )


def _uncommitted(directory: Path, key: str) -> list[str]:
    """What git says of the expected file, said only when this key was recorded.

    A key no trajectory or run log names was never recorded here: the request changed,
    and the diff below says how; advice to commit a file that never existed misleads.
    """
    path = directory / f"{key}.json"
    if path.exists() or not directory.is_dir():
        return []
    named = _named_by(directory, key)
    if named is None:
        return []
    where = f"{named.parent.name}/{named.name}"
    tracked = _git_tracks(path)
    if tracked is None:
        return [f"  {where} names this cassette, but the file is missing from {directory}."]
    if tracked:
        return [
            "  git tracks this cassette but it is missing from the working tree: "
            f"git checkout -- {path}"
        ]
    return [
        f"  It was recorded ({where} names it), but git does not track the file: if it "
        f"was recorded on another machine, it was never committed. Commit it: git add {path}"
    ]


def _named_by(directory: Path, key: str) -> Path | None:
    """The trajectory, or run log, in ``directory`` that says ``key`` was recorded or replayed.

    A run log also lists the keys its run missed: those say nothing of a recording.
    """
    needle = f'"{key}"'.encode()
    for path in _json_files(directory / TRAJECTORIES):
        if needle in _read(path):
            return path
    for path in _json_files(directory / "runs"):
        raw = _read(path)
        if needle in raw and _used(raw, key):
            return path
    return None


def _json_files(folder: Path) -> list[Path]:
    try:
        return sorted(folder.glob("*.json"))[:_MAX_CANDIDATES]
    except OSError:
        return []


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _used(raw: bytes, key: str) -> bool:
    """Whether a run log's tests replayed or recorded ``key`` (a damaged log says no)."""
    try:
        tests = orjson.loads(raw)["tests"]
        return any(
            used.get("key") == key and used.get("how") in ("recorded", "replayed")
            for test in tests.values()
            for used in test.get("cassettes", ())
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return False


def _git_tracks(path: Path) -> bool | None:
    """Whether git tracks ``path``; None outside a repository or without git."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "--error-unmatch", "--", path.name],
            cwd=path.parent,
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode == 0:
        return True
    return None if b"not a git repository" in done.stderr else False


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


def _endpoint(url: str, any_port: bool = False) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit(":", 1)[0] if any_port and parts.port else parts.netloc
    return f"{parts.scheme}://{netloc}{parts.path}"


def _closest(
    directory: Path,
    info: RequestInfo,
    body: Any,
    ignore: Sequence[tuple[str, ...]],
    consumed: Set[str],
    any_port: bool = False,
) -> tuple[Path, Any, str] | None:
    """The recorded request to the same endpoint most like this one: (file, body, URL).

    The steps this session already replayed (``consumed``) are left out: in an agent
    loop the step just played is always close, and never the one that changed.
    """
    endpoint = _endpoint(info.url, any_port)  # a local provider's: on whatever port
    needle = urlsplit(info.url).path.encode() if any_port else endpoint.encode()
    mine = render_body(body)
    best: tuple[float, Path, Any, str] | None = None
    try:
        paths = sorted(directory.glob("*.json"))[:_MAX_CANDIDATES]
    except OSError:
        return None
    for path in paths:
        if path.stem in consumed:
            continue
        try:
            raw = path.read_bytes()
            if needle not in raw:
                continue
            request = orjson.loads(raw)["request"]
        except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
            continue
        if not isinstance(request, dict):
            continue  # not a cassette: the replay of that file names what is wrong
        url = str(request.get("url"))
        if request.get("method") != info.method or _endpoint(url, any_port) != endpoint:
            continue
        theirs = _without(request.get("body") or {}, ignore)
        ratio = difflib.SequenceMatcher(None, render_body(theirs), mine).ratio()
        if best is None or ratio > best[0]:
            best = (ratio, path, theirs, url)
    return None if best is None else best[1:]


def _diff(recorded: Any, live: Any, name: str, hide: tuple[str, int] | None = None) -> list[str]:
    """The unified diff of two bodies, indented; empty when they read the same."""
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
    return ["    " + line for line in diff]


# -- a step of a trajectory -------------------------------------------------------------------


def _step_lines(
    directory: Path, deck: Deck, info: RequestInfo, body: Any, ignore: Sequence[tuple[str, ...]]
) -> tuple[list[str], Any | None] | None:
    """The miss told as a step of its test's trajectory, and the step's recorded body.

    None when it is no step of a recorded trajectory.
    """
    test = test_identity(deck)
    try:
        found = load_trajectory(trajectory_path(directory, test))
    except CassetteError:
        return None  # the replay's own check says what is wrong with the file
    if found is None:
        return None
    steps = played([s for s in found["steps"] if s["session"] == deck.session_index])
    position = len(settled(deck.steps))
    if position >= len(steps):
        if not steps:
            return None
        lines = [
            f"  step {position + 1} of {test}: its trajectory recorded {len(steps)} steps only"
        ]
        return lines, None
    recorded = _recorded_request(directory, steps[position], ignore)
    if recorded is None:
        return None
    recorded_body, recorded_url = recorded
    number, total = position + 1, len(steps)
    lines = [
        f"  step {number} of {total} of {test}: the request differs from the recorded "
        f"step {number} ({steps[position]['key']}.json)"
    ]
    earlier = _recorded_request(directory, steps[position - 1], ignore) if position else None
    kept = _shared_history(None if earlier is None else earlier[0], recorded_body, body)
    if kept:
        lines.append(f"  The history up to step {position} is unchanged; what step {number} added:")
        diff = _diff(recorded_body, body, f"step {number}, new messages", hide=kept)
    else:
        diff = _diff(recorded_body, body, f"step {number}")
    lines.extend(diff or _identical(recorded_url, info, deck))
    return lines, recorded_body


def _recorded_request(
    directory: Path, step: StepRecord | ToolStep, ignore: Sequence[tuple[str, ...]]
) -> tuple[Any, str] | None:
    """A step's recorded body (minus the ignored fields) and URL."""
    try:
        request = orjson.loads((directory / f"{step['key']}.json").read_bytes())["request"]
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError):
        return None
    if not isinstance(request, dict):
        return None
    return _without(request.get("body") or {}, ignore), str(request.get("url"))


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
