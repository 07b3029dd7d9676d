"""Masking the secrets of a stream, which its chunks and events may cut in pieces.

A stream is searched as the provider and the SDK see it: as the joined text
of each JSON string field across its events (a key a model repeats over two
delta events, ``"content": "sk-pr"`` then ``"content": "oj-…"``), and over the
items of a list (logprobs' tokens, and their ``bytes``), read before any mask
is written, and as the joined text of its chunks (a secret cut in two by TCP).
The chunks are stored back in their boundaries: a boundary that fell inside a
masked secret moves to the end of the mask, and the caller is told which moved.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import itertools
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, AnyStr, NamedTuple

import orjson

from ._mask import MASK, Edit, Patterns, edited, spans

__all__ = ["mask_chunks", "mask_events"]

# A JSON string, or a list of naturals (unrolled: one step per run of plain characters);
# with the colon after it when it is an object's key (group 1), which is no value.
_TOKEN = re.compile(r'(?:"[^"\\]*(?:\\.[^"\\]*)*"|\[[0-9\s,]*\])(\s*:)?', re.DOTALL)
_SCALARS = frozenset({int, float, bool, type(None)})
_LEAF = _SCALARS | {str}  # a value with no fields of its own
_LINE = re.compile(r"([^\r\n]*)(?:\r\n|\r|\n|$)")
_SSE_DATA = re.compile(r"[\r\n]data:")
_SSE_FIELDS = ("event:", "id:", "retry:", ":")  # lines of an SSE event beside its data
Segments = list[tuple[int, int]]  # (offset in a document, offset in the stream) of each line


def mask_chunks(chunks: list[AnyStr], compiled: Patterns) -> tuple[list[AnyStr], list[int]]:
    """Mask a stream's chunks as one text, and across their events' fields (bytes too).

    Returns the chunks, in their boundaries where the mask allows, and the
    indices of the chunks whose start moved (to the end of a mask).
    """
    if not chunks or not compiled:
        return chunks, []
    # The events are read first, as the provider sent them: a mask written before
    # could break an event's JSON and hide the secret it shares with the next event.
    # Each edit here leaves its event valid JSON.
    masked: list[AnyStr]
    if isinstance(chunks[0], str):
        joined = "".join(chunks)
        masked, moved = _splitedited(chunks, joined, _across_events(joined, compiled))
    else:
        data = b"".join(chunks)  # a stream that is not all UTF-8: its events, byte by byte
        masked, moved = _splitedited(chunks, data, _byte_edits(data, compiled))
    joined = masked[0][:0].join(masked)
    mask: Any = MASK.encode() if isinstance(joined, bytes) else MASK
    edits: list[Edit] = [(start, end, mask) for start, end in spans(joined, compiled)]
    masked, more = _splitedited(masked, joined, edits)
    return masked, sorted(set(moved) | set(more))


def _byte_edits(data: bytes, compiled: Patterns) -> list[Edit]:
    """`_across_events` of a stream that is not all UTF-8 (a stray Latin-1 byte in one
    event), its edits at byte offsets: each byte that is no UTF-8 is read as a character
    of its own (``surrogateescape``) and written back as it was."""
    text = data.decode("utf-8", "surrogateescape")
    edits = _across_events(text, compiled)
    out: list[Edit] = []
    position = offset = 0
    for start, end, replacement in edits:
        offset += len(text[position:start].encode("utf-8", "surrogateescape"))
        length = len(text[start:end].encode("utf-8", "surrogateescape"))
        try:
            written = replacement.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:  # a lone surrogate the event spelled as an escape
            written = json.dumps(json.loads(replacement)).encode("ascii")
        out.append((offset, offset + length, written))
        position, offset = end, offset + length
    return out


def mask_events(values: list[Any], compiled: Patterns) -> list[Any]:
    """The JSON values of one stream's events (WebSocket frames, AWS event-stream
    payloads; or one body's value), each secret that only their joined fields spell
    masked (`_across_events`).

    Each value is read as one SSE event's data, as `mask_chunks` reads a stream;
    a secret whole inside one value is left to the caller's mask of that value.
    """
    if not values or not compiled or (len(values) == 1 and _nothing_joins(values[0])):
        return values
    lines = [f"data: {_dumps(value)}\n" for value in values]
    joined = "".join(lines)
    edits = _across_events(joined, compiled)
    if not edits:
        return values
    masked, _moved = _splitedited(lines, joined, edits)  # edits stay inside one token
    return [
        value if line == before else json.loads(line[6:])
        for value, line, before in zip(values, masked, lines, strict=True)
    ]


def _nothing_joins(value: Any) -> bool:
    """Whether `_across_events` of ``value`` alone surely edits nothing: no two of its fields
    join and no list of numbers spells bytes, so no group is searched. A JSON answer (a
    chat completion, a message) is nearly always so, and is then not serialised, scanned
    and parsed again for nothing.

    Conservative: a list of two or more items holding strings or containers (its items'
    fields join), a list of integers (bytes, however long), a key that is not a ``str``
    or a value of any other type says False, and the full reading decides.
    """
    kind = type(value)
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not (type(item) in _LEAF or _nothing_joins(item)):
                return False
        return True
    if kind is list:
        kinds = set(map(type, value))
        if kinds <= _SCALARS:
            return not kinds or not kinds <= {int}  # integers only: a logprob's bytes
        return len(value) == 1 and _nothing_joins(value[0])
    return kind in _LEAF


def _dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:  # a lone surrogate, which orjson refuses
        return json.dumps(value, ensure_ascii=False)


def _splitedited(
    chunks: list[AnyStr], joined: AnyStr, edits: Sequence[Edit]
) -> tuple[list[AnyStr], list[int]]:
    """Apply edits to the joined text and cut it again where each chunk ended."""
    if not edits:
        return chunks, []
    text = edited(joined, edits)
    cuts: list[int] = []
    moved: list[int] = []
    offset = shift = 0
    pending = iter(edits)
    edit = next(pending, None)
    for index, chunk in enumerate(chunks[:-1], start=1):
        offset += len(chunk)
        while edit is not None and edit[1] <= offset:
            shift += len(edit[2]) - (edit[1] - edit[0])
            edit = next(pending, None)
        if edit is not None and edit[0] < offset < edit[1]:
            cuts.append(edit[0] + shift + len(edit[2]))  # inside a mask: after it
            moved.append(index)
        else:
            cuts.append(offset + shift)
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)], moved


def _across_events(joined: str, compiled: Patterns) -> list[Edit]:
    """Edits masking secrets that only the joined fields of several values show: of one
    field over a stream's events, or of a list's items (logprobs' tokens, Gemini's parts).

    A field's values are joined three ways: at their exact place (list positions kept),
    at any position of every list, and at any position but the innermost list's (the
    first ``top_logprobs`` of each token): each way a model may spell a secret.
    """
    pieces: list[_Piece] = []
    groups: dict[tuple[Any, ...], list[int]] = {}
    for payload, segments in _documents(joined):
        fields = _string_fields(payload) if not isinstance(payload, _Text) else _text_field(payload)
        for path, span, value, kind in fields:
            for group in _joins(path):
                groups.setdefault(group, []).append(len(pieces))
            pieces.append(_Piece(value, kind, payload, segments, span))
    masked: dict[int, list[tuple[int, int, bool]]] = {}
    searched: set[tuple[int, ...]] = set()  # two joins may group the same pieces: one search
    for ids in groups.values():
        if len(ids) > 1 or pieces[ids[0]].kind == "bytes":
            same = tuple(ids)
            if same in searched:
                continue
            searched.add(same)
            for index, cut in _group_masks([pieces[i] for i in ids], compiled):
                masked.setdefault(ids[index], []).append(cut)
    edits = [_piece_edit(pieces[i], cuts) for i, cuts in masked.items()]
    return sorted(edit for edit in edits if edit is not None)


class _Piece(NamedTuple):
    """One field's value in a stream, and where its token is: found (`placed`) only for the
    few pieces a mask edits."""

    value: str
    kind: str  # "json" (a string), "bytes" (a logprob's list of them, read as UTF-8), "text"
    payload: str  # the document it is in
    segments: Segments  # where the document's lines are in the stream
    span: tuple[int, int]  # its token's, in the document

    def placed(self) -> tuple[int, int, str]:
        """Its token's span in the stream, and the token as the document spells it.

        A string never spans two lines; a pretty list of bytes may: its edit then
        takes the data lines between into one.
        """
        start, end = self.span
        segments = self.segments
        at, to = _in_joined(segments, start), _in_joined(segments, end - 1) + 1
        return at, to, self.payload[start:end]


@functools.lru_cache(maxsize=1024)  # a stream's events repeat a few paths
def _joins(path: tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    """The groups a field at ``path`` joins (see `_across_events`)."""
    positions = [i for i, step in enumerate(path) if type(step) is int]
    if not positions:
        return (path,)
    anywhere = tuple(step for step in path if type(step) is not int)
    inner = tuple(s for i, s in enumerate(path) if type(s) is not int or i == positions[-1])
    return tuple({path: None, ("*", *anywhere): None, ("*", *inner): None})


def _in_joined(segments: Segments, offset: int) -> int:
    """Where an offset in a document is in the stream."""
    start, at = segments[bisect.bisect_right(segments, offset, key=lambda s: s[0]) - 1]
    return at + offset - start


def _documents(joined: str) -> Iterable[tuple[str, Segments]]:
    """Each JSON document of a stream, and where its lines are in the stream.

    A document is an SSE event's data (its ``data:`` lines joined by newlines, as an SDK
    reads them: JSON may be spread over several), an NDJSON line, or the whole text when
    it is one JSON array (Gemini's stream without ``alt=sse``). Lines end as SSE lets
    them: CRLF, LF or a lone CR.
    """
    stripped = joined.lstrip()
    if stripped.startswith("[") and not _SSE_DATA.search(joined):
        yield stripped, [(0, len(joined) - len(stripped))]
        return
    data: list[tuple[int, str]] = []  # the current SSE event's data lines: (offset, text)
    for match in _LINE.finditer(joined):
        start, line = match.start(), match.group(1)
        if line.startswith("data:"):
            value, at = line[5:], start + 5
            if value.startswith(" "):
                value, at = value[1:], at + 1
            data.append((at, value))
        elif not line or not line.startswith(_SSE_FIELDS):
            yield from _event_documents(data)
            data = []
            body = line.strip()
            if body[:1] in ("{", "["):  # an NDJSON line
                yield body, [(0, start + len(line) - len(line.lstrip()))]
        if match.end() == len(joined):
            break
    yield from _event_documents(data)


def _event_documents(data: list[tuple[int, str]]) -> Iterable[tuple[str, Segments]]:
    """One SSE event's data as a document; each line alone if together they are no JSON
    (a line that is no JSON is a text of its own, `_Text`)."""
    payload = "\n".join(text for _at, text in data)
    if len(data) > 1 and _parses(payload):
        segments, offset = [], 0
        for at, text in data:
            segments.append((offset, at))
            offset += len(text) + 1
        yield payload, segments
        return
    for at, text in data:
        body = text.strip()
        if body[:1] in ("{", "["):
            yield body, [(0, at + len(text) - len(text.lstrip()))]
        elif text:  # a text streamed as is: its pieces join like a field's
            yield _Text(text), [(0, at)]


def _parses(payload: str) -> bool:
    try:
        orjson.loads(payload)
    except orjson.JSONDecodeError:
        try:
            json.loads(payload)
        except ValueError:
            return False
    return True


class _Text(str):
    """An SSE event's data that is no JSON: a text streamed as is (a piece of an answer)."""


def _text_field(payload: _Text) -> list[tuple[tuple[Any, ...], tuple[int, int], str, str]]:
    return [((_Text,), (0, len(payload)), str(payload), "text")]


def _string_fields(payload: str) -> list[tuple[tuple[Any, ...], tuple[int, int], str, str]]:
    """(path, span of its token in ``payload``, text, bytes?) of each JSON string value and
    each list of byte values (a logprob's ``bytes`` spell its token), in order.

    A path carries the ``index`` fields of the objects on the way (``choices[].index``,
    Anthropic's block ``index``), so parallel choices or blocks are never joined.
    """
    tokens = [m.span() for m in _TOKEN.finditer(payload) if m.lastindex is None]
    leaves: list[tuple[tuple[Any, ...], str | None, bool]] = []
    with contextlib.suppress(orjson.JSONDecodeError):  # not JSON, or orjson refuses it
        _leaves(orjson.loads(payload), (), leaves, top=True)
    if len(tokens) != len(leaves):
        # A duplicate key (orjson keeps one of its values) or a lone surrogate escape
        # (orjson refuses it; the SDKs' json does not): read again, every member kept.
        leaves = []
        try:
            _leaves(json.loads(payload, object_pairs_hook=_Members), (), leaves, top=True)
        except ValueError:
            return []
        if len(tokens) != len(leaves):
            return []
    return [
        (path, span, text, "bytes" if is_bytes else "json")
        for (path, text, is_bytes), span in zip(leaves, tokens, strict=True)
        if text is not None
    ]


class _Members(list[tuple[str, Any]]):
    """An object's members in order, a duplicate key's too (the second reading)."""


def _leaves(
    value: Any,
    path: tuple[Any, ...],
    out: list[tuple[tuple[Any, ...], str | None, bool]],
    *,
    top: bool = False,
) -> None:
    # A string is taken where it is met and a number skipped, not called for: a stream's
    # redaction reads every field of every event.
    if isinstance(value, dict | _Members):
        members = value.items() if isinstance(value, dict) else value
        marks = [(k, v) for k, v in members if k.endswith("index") and type(v) is int]
        base = (*path, *marks)
        for key, item in members:
            if isinstance(item, str):
                out.append(((*base, key), item, False))
            elif isinstance(item, dict | list):
                _leaves(item, (*base, key), out)
    elif isinstance(value, list):
        kinds = set(map(type, value))  # at C speed: an embedding has thousands of numbers
        if kinds <= _SCALARS:
            if not top and kinds <= {int} and all(item >= 0 for item in value):
                # A token of _TOKEN, like a string: bytes when each is one (else not read).
                data = bytes(value) if all(item < 256 for item in value) else None
                text = None if data is None else data.decode("utf-8", "surrogateescape")
                out.append((path, text, True))
            return
        for index, item in enumerate(value):  # a top array's elements are its events
            if isinstance(item, str):
                out.append((path if top else (*path, index), item, False))
            elif isinstance(item, dict | list):
                _leaves(item, path if top else (*path, index), out)
    elif isinstance(value, str):
        out.append((path, value, False))


def _group_masks(
    pieces: list[_Piece], compiled: Patterns
) -> list[tuple[int, tuple[int, int, bool]]]:
    """Where each secret of one group's joined text lies in its pieces: (piece, (start,
    end, whether the mask is written there)); the first piece a secret touches holds its
    mask, the others are emptied where it runs. A secret whole in one string is left to
    the mask of the text (it sees strings, never lists of bytes)."""
    text = "".join(piece.value for piece in pieces)
    found = [s for s in spans(text, compiled) if not _within_one(s, pieces)]
    cuts: list[tuple[int, tuple[int, int, bool]]] = []
    offset = 0
    for index, piece in enumerate(pieces):
        lo, hi = offset, offset + len(piece.value)
        offset = hi
        for a, b in found:
            if a < hi and b > lo:
                cuts.append((index, (max(a, lo) - lo, min(b, hi) - lo, a >= lo)))
    return cuts


def _piece_edit(piece: _Piece, cuts: list[tuple[int, int, bool]]) -> Edit | None:
    """The edit writing ``piece`` with its cuts masked, or None if its token is not what
    was read (never write a token whose value was not what was read)."""
    merged: list[list[Any]] = []
    for start, end, masks in sorted(cuts):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            merged[-1][2] = merged[-1][2] or masks
        else:
            merged.append([start, end, masks])
    value, new, position = piece.value, [], 0
    for start, end, masks in merged:
        new.append(value[position:start])
        if masks:
            new.append(MASK)
        position = end
    new.append(value[position:])
    start, end, token = piece.placed()
    if piece.kind == "text":
        return start, end, "".join(new)
    read = json.loads(token)
    if piece.kind == "bytes":
        if read != list(value.encode("utf-8", "surrogateescape")):
            return None
        data = list("".join(new).encode("utf-8", "surrogateescape"))
        return start, end, json.dumps(data)
    if read != value:
        return None
    return start, end, _encoded("".join(new), ascii_only=token.isascii())


def _within_one(span: tuple[int, int], pieces: list[_Piece]) -> bool:
    offset = 0
    for piece in pieces:
        end = offset + len(piece.value)
        if offset <= span[0] and span[1] <= end:
            return piece.kind != "bytes"
        offset = end
    return False


def _encoded(value: str, *, ascii_only: bool) -> str:
    return json.dumps(value, ensure_ascii=ascii_only)
