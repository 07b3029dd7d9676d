"""Rebase: a request with no recording, answered by the recorded step at its place (DESIGN §2).

In ``rebase`` mode, a request whose key has no recording (an SDK upgrade added a
field, an import's bodies drifted) is compared with the request recorded for the
same step: the step at its place in the test's trajectory (its session, its
position among the model calls), or, for a test with no trajectory, the closest
recording to the same endpoint, as the miss diff finds it. When the two differ
only outside the conversation (``_conversation``), the recorded response answers
it and is written under the new key, its recording day kept (so ``max_age``
still means something); the trajectory notes the step (``rebased_from``, the
fields that changed). Anything else stays a `CacheMiss`, which names the
conversation fields that differ.

Runs only then, so it may read the trajectory and the recorded cassette; the
deck writes the new one (`Deck.plan`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard, cast

import orjson

from .._core._exceptions import CacheMiss, CassetteError
from .._secrets._scrub import scrub_text
from .._store._cassette import Cassette, Recording, read_run
from .._store._formats import AnyStep, ChangedField, StepRecord
from .._store._keys import without_fields
from .._store._trajectory import load_trajectory, trajectory_path
from ._conversation import MISSING, Comparison, FieldChange, compare
from ._miss import replay_miss
from ._request import RequestInfo
from ._steps import endpoint as endpoint_of
from ._steps import response_documents, settled, tokens_used
from ._trajectory import test_identity

if TYPE_CHECKING:
    from ._deck import Deck

__all__ = ["Rebased", "Refused", "attempt", "changed_fields", "rebase_miss"]

_SHOWN_VALUE = 80  # characters of a changed value the trajectory keeps
_MAX_CANDIDATES = 2000  # cassettes looked at for a closest recording (as the miss diff does)


@dataclass(frozen=True)
class Rebased:
    """The recorded step answers the request: replay ``recording``, write it under the new key."""

    old_key: str
    old_index: int  # its place in the old key's run
    recording: Recording
    comparison: Comparison
    moves_cursor: bool  # no trajectory: the session steps through the old key's run itself


@dataclass(frozen=True)
class Refused:
    """Why the request cannot be rebased: the lines the miss adds."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class _Recorded:
    key: str
    where: str  # how the miss names it: "step 2 of 3 of TEST" or "the closest recording"
    request: dict[str, Any]
    recording: Recording
    index: int
    moves_cursor: bool = False


def attempt(info: RequestInfo, deck: Deck, past_end: bool) -> Rebased | Refused:
    """Compare ``info`` with the recorded step at its place; ``past_end``: its key has a
    recording, used up, so only a trajectory step can say what comes next."""
    try:
        found = _recorded_step(info, deck, past_end)
    except (CassetteError, OSError, KeyError) as exc:
        return Refused((f"  rebase: the recorded step could not be read ({exc}).",))
    if isinstance(found, Refused):
        return found
    comparison = _compared(found, info, deck)
    if comparison.same_question:
        return Rebased(found.key, found.index, found.recording, comparison, found.moves_cursor)
    return Refused(
        (
            f"  rebase: not rebased: this request differs from {found.where} "
            f"({found.key}.json, {comparison.format}) in the conversation: "
            f"{', '.join(comparison.conversation)}.",
            "  The conversation (what the model is told, the model, the answer's format) "
            "changed, so the recorded answer no longer answers it: re-record this test "
            "(GHOSTRUN_MODE=record), or, if that field is not the conversation for your "
            "app, see docs/evolving-a-suite.md.",
        )
    )


def _compared(found: _Recorded, info: RequestInfo, deck: Deck) -> Comparison:
    """The recorded request and this one, as the key sees them (`_conversation.compare`)."""
    settings = deck.settings
    ignore, shapes = settings.ignore, settings.normalizer
    recorded_body = _comparable(found.request.get("body"), ignore, shapes)
    body = _comparable(deck.stored_request(info).get("body"), ignore, shapes)
    tokens = tokens_used(response_documents(found.recording))
    return compare(
        (str(found.request.get("method")), str(found.request.get("url")), recorded_body),
        (info.method, info.url, body),
        settings.conversation,
        None if tokens is None else tokens["out"],
    )


def rebase_miss(info: RequestInfo, deck: Deck, refused: Refused) -> CacheMiss:
    """The replay miss, with why rebase could not answer it."""
    message = str(replay_miss(info, deck)) + "\n" + "\n".join(refused.lines)
    return CacheMiss(scrub_text(message, edits=deck.hook_edits))


def _recorded_step(info: RequestInfo, deck: Deck, past_end: bool) -> _Recorded | Refused:
    """The step of the test's trajectory at this request's place, else the closest recording."""
    directory = Path(deck.cassette_dir)
    test = test_identity(deck)
    trajectory = load_trajectory(trajectory_path(directory, test))
    steps = [
        s
        for s in (trajectory["steps"] if trajectory else [])
        if s["session"] == deck.session_index and _is_model_step(s)
    ]
    if steps:
        position = len([s for s in settled(deck.steps) if not s.tool])  # model calls only
        if position >= len(steps):
            return Refused(
                (f"  rebase: its trajectory recorded {len(steps)} steps only: nothing to compare.",)
            )
        step = steps[position]
        where = f"step {position + 1} of {len(steps)} of {test}"
        return _step_at(directory, deck.name, step, where)
    if past_end:  # the same request again: the recording this session rebased it from goes on
        earlier = next(
            (s.rebased[0] for s in reversed(deck.steps) if s.key == info.key and s.rebased), None
        )
        if earlier is None:
            return Refused(("  rebase: no trajectory says which recorded step comes next.",))
        return _at_cursor(directory / f"{earlier}.json", deck, past_end)
    return _closest(info, deck)


def _closest(info: RequestInfo, deck: Deck) -> _Recorded | Refused:
    """Without a trajectory: of the recordings to the same endpoint, one that asks the same
    question, the test's own first, then the one that differs least; else the nearest miss.

    Unlike the miss diff's closest (by likeness of the bodies), this never takes another
    question's recording because it looks alike (a sibling test, a step already rebased).
    """
    settings = deck.settings
    body = _comparable(deck.stored_request(info).get("body"), settings.ignore, settings.normalizer)
    best: tuple[tuple[bool, bool, int, int], Path, Cassette, Comparison] | None = None
    for path, cassette in _same_endpoint(Path(deck.cassette_dir), info):
        request = cast(dict[str, Any], cassette.request)
        recorded = _comparable(request.get("body"), settings.ignore, settings.normalizer)
        found = compare(
            (str(request.get("method")), str(request.get("url")), recorded),
            (info.method, info.url, body),
            settings.conversation,
        )
        own = any(r.get("session") == deck.name for r in cassette.raw_responses)
        rank = (found.same_question, own, -len(found.conversation), -len(found.changed))
        if best is None or rank > best[0]:
            best = (rank, path, cassette, found)
    if best is None:
        return Refused(("  rebase: no recording to the same endpoint to compare with.",))
    return _at_cursor(best[1], deck, past_end=False)


def _at_cursor(path: Path, deck: Deck, past_end: bool) -> _Recorded | Refused:
    """The response of a recording at the session's cursor in its run (no trajectory says
    which): a request made again goes on through the run, and stops at its end."""
    cassette = Cassette.load(path)
    replies, index = deck.store.read(path.stem)
    if cassette is None or not replies:
        return Refused((f"  rebase: the closest recording {path.name} holds no response.",))
    if past_end and index >= len(replies):
        return Refused((f"  rebase: every response of {path.name} was used.",))
    at = min(index, len(replies) - 1)
    request = cast(dict[str, Any], cassette.request)
    return _Recorded(path.stem, "the closest recording", request, replies[at], at, True)


def _same_endpoint(directory: Path, info: RequestInfo) -> Iterator[tuple[Path, Cassette]]:
    """The cassettes of requests with this method to this endpoint (query aside)."""
    endpoint = endpoint_of(info.url)
    needle = endpoint.encode()
    try:
        paths = sorted(directory.glob("*.json"))[:_MAX_CANDIDATES]
    except OSError:
        return
    for path in paths:
        try:
            if needle not in path.read_bytes():
                continue
            cassette = Cassette.load(path)
        except (OSError, CassetteError, KeyError):
            continue  # not an HTTP cassette, or damaged: its own replay says what is wrong
        if cassette is None or cassette.request.get("method") != info.method:
            continue
        if endpoint_of(str(cassette.request.get("url"))) == endpoint:
            yield path, cassette


def _is_model_step(step: AnyStep) -> TypeGuard[StepRecord]:
    """Steps of other kinds (tool calls, answers) are not model calls to compare with."""
    return step.get("kind", "model") == "model"


def _step_at(
    directory: Path, name: str | None, step: StepRecord, where: str
) -> _Recorded | Refused:
    path = directory / f"{step['key']}.json"
    cassette = Cassette.load(path)
    found = read_run(str(path), name)
    if cassette is None or found is None or not found[1]:
        return Refused((f"  rebase: {where} names {path.name}, which is missing.",))
    replies = found[1]
    index = min(step["response"], len(replies) - 1)
    request = cast(dict[str, Any], cassette.request)
    return _Recorded(step["key"], where, request, replies[index], index)


def _comparable(body: Any, ignore: Any, shapes: Any) -> Any:
    """A stored body as the key compares it: its JSON without the ignored fields, the
    normalized shapes replaced; None for a body that is not JSON."""
    if not (isinstance(body, dict) and "json" in body):
        return None
    value = without_fields(body["json"], ignore)
    return value if shapes is None else shapes.value(value)


def changed_fields(changes: tuple[FieldChange, ...]) -> list[ChangedField]:
    """What the trajectory keeps of each changed field: its path, and both values in short."""
    out: list[ChangedField] = []
    for change in changes:
        field: ChangedField = {"path": change.path}
        if change.before is not MISSING:
            field["before"] = _short(change.before)
        if change.after is not MISSING:
            field["after"] = _short(change.after)
        out.append(field)
    return out


def _short(value: Any) -> Any:
    """A scalar as it is; text and structures as compact JSON text, cut to a line."""
    if value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if len(text) <= _SHOWN_VALUE else text[: _SHOWN_VALUE - 1] + "…"
