"""What a replay miss tells the user: what was asked, and what changed.

Runs only on a miss, so it may read the cassette directory; the hit path never does.
The directory is shown absolute (and said to be missing when it is), and the
fields the session ignores are left out of the diff, as they are out of the key.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from .._core._normalize import BUILTINS, Normalizer, normalizer
from .._store._keys import remove_field
from .._store._render import render_body

if TYPE_CHECKING:
    from ._deck import Deck, RequestInfo

__all__ = ["describe_miss"]

_MAX_DIFF_LINES = 60
_MAX_CANDIDATES = 2000


def describe_miss(info: RequestInfo, deck: Deck, ignore: Sequence[tuple[str, ...]]) -> str:
    directory = Path(deck.cassette_dir).absolute()
    lines = [
        f"ghostrun: no recording for {info.method} {info.url}",
        f"  mode:         {deck.mode.value}" + (f" (session {deck.name})" if deck.name else ""),
        f"  cassette dir: {directory}",
        f"  expected:     {info.key}.json",
    ]
    if not directory.is_dir():
        lines.append(
            "  The cassette directory does not exist. Check cassette_dir= (in pytest a "
            "relative one is relative to the rootdir; elsewhere to the current directory)."
        )
    body = _without(deck.stored_request(info).get("body"), ignore)
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
    return "\n".join(lines)


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


def _diff(recorded: Any, live: Any, name: str) -> list[str]:
    diff = list(
        difflib.unified_diff(
            render_body(recorded),
            render_body(live),
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
