"""Reading a foreign cassette within the limits replay holds a cassette to (`_store._limits`).

``ghostrun import`` reads files nobody at the project wrote: a vcrpy file from a pull
request, a cassette found on the internet. Replay refuses a cassette past its limits; the
import must not build one, nor run out of memory, time or stack on the way. So:

- a file past ``LIMITS["file_bytes"]``, as stored or as it inflates (``.json.gz``,
  ``.yaml.gz``), is refused whole;
- a body whose ``content-encoding`` inflates past ``LIMITS["body_bytes"]`` is refused
  (its exchange is skipped): inflating stops one byte past the limit, so a gzip bomb
  costs the limit, never what it claims;
- a body whose JSON nests deeper than ``LIMITS["json_depth"]`` is refused (its exchange
  is skipped): replay would refuse the cassette;
- YAML is composed with two more limits, checked as each node is read, before anything
  is built: nesting deeper than `YAML_DEPTH`, and aliases that expand the document past
  ``LIMITS["file_bytes"]`` characters (the "billion laughs") or refer to themselves.
  The expansion is counted on the composed nodes, each node's size once, so a file of
  a few kilobytes is refused in the time it takes to read it.

Each refusal is an `OverLimit` whose message says which limit; the readers turn it into
their `_source.UnreadableSource`, and the import's report names the file and the entry.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import orjson

from ..._store._limits import LIMITS, json_depth, limit_message

__all__ = ["YAML_DEPTH", "OverLimit", "body_problem", "bounded_loader", "inflate", "read_file"]

YAML_DEPTH = LIMITS["json_depth"].value + 20
"""How deep a YAML document may nest: a body's JSON limit, plus the cassette format's own
levels (interactions, request, body, headers...)."""


class OverLimit(ValueError):
    """A file, a body or a YAML document past one of replay's limits: the message says which."""


def read_file(path: Path) -> bytes:
    """A file's bytes, inflated if it is gzipped, within ``LIMITS["file_bytes"]``.

    Raises ``OSError`` when it cannot be read, ``zlib.error`` when its gzip is broken.
    """
    limit = LIMITS["file_bytes"].value
    size = path.stat().st_size
    if size > limit:
        raise OverLimit(limit_message("file_bytes", size))
    raw = path.read_bytes()
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return inflate(raw, "gzip", limit)
    except OverLimit as exc:
        raise OverLimit(f"a gzip file that {exc}") from None


def inflate(data: bytes, coding: str, limit: int) -> bytes:
    """``data`` decompressed, stopping one byte past ``limit``: ``gzip`` (every member, as
    `gzip.decompress` reads them), ``deflate`` (zlib), or ``raw`` deflate (no zlib header,
    as some servers send it). Data that does not decompress raises ``zlib.error``.
    """
    gzipped = coding in ("gzip", "x-gzip")
    wbits = {"deflate": zlib.MAX_WBITS, "raw": -zlib.MAX_WBITS}.get(coding, 16 + zlib.MAX_WBITS)
    out = bytearray()
    rest = data
    while rest:
        stream = zlib.decompressobj(wbits)
        pending = rest
        while not stream.eof:
            room = limit + 1 - len(out)
            out += stream.decompress(pending, room) if pending else stream.flush(room)
            if len(out) > limit:
                raise OverLimit(f"inflates past {limit:,} bytes: {limit_message_for(limit)}")
            if not pending and not stream.eof:
                raise zlib.error("the compressed data ends early")
            pending = stream.unconsumed_tail
        rest = stream.unused_data.lstrip(b"\x00") if gzipped else b""
    return bytes(out)


def limit_message_for(limit: int) -> str:
    """The limit's own message for ``limit`` bytes: the body's or the file's."""
    name = "body_bytes" if limit == LIMITS["body_bytes"].value else "file_bytes"
    return limit_message(name, f"more than {limit:,}")


def body_problem(body: bytes) -> str | None:
    """Why a decoded body cannot be stored in a cassette that replays, or None."""
    if len(body) > LIMITS["body_bytes"].value:
        return limit_message("body_bytes", len(body))
    if body[:1] not in (b"{", b"["):
        stripped = body.lstrip()[:1]
        if stripped not in (b"{", b"["):
            return None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        if "recursion" in str(exc).lower():
            return limit_message("json_depth", "more than 1,024")
        return None  # not JSON: stored as text, as a recording would
    depth = json_depth(value, LIMITS["json_depth"].value)
    if depth > LIMITS["json_depth"].value:
        return limit_message("json_depth", f"more than {depth - 1}")
    return None


def bounded_loader(yaml: Any, base: type) -> type:
    """A PyYAML loader class, derived from ``base``, that composes within the YAML limits."""

    class Bounded(base):  # type: ignore[misc]
        def __init__(self, stream: Any) -> None:
            super().__init__(stream)
            self._depth = 0
            self._open: set[str] = set()  # anchors of the nodes being composed
            self._sizes: dict[int, int] = {}
            self._expanded = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                self._count_alias(event)
                return super().compose_node(parent, index)
            if self._depth >= YAML_DEPTH:
                raise OverLimit(
                    f"its YAML nests deeper than {YAML_DEPTH} levels (line "
                    f"{event.start_mark.line + 1}); ghostrun's limit for a body is "
                    f"{LIMITS['json_depth'].value} (docs/security-cassettes.md)"
                )
            anchor = getattr(event, "anchor", None)
            self._depth += 1
            if anchor:
                self._open.add(anchor)
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
                self._open.discard(anchor or "")

        def _count_alias(self, event: Any) -> None:
            line = event.start_mark.line + 1
            if event.anchor in self._open:
                raise OverLimit(f"a YAML alias *{event.anchor} inside itself (line {line})")
            node = self.anchors.get(event.anchor)
            if node is None:
                return  # PyYAML reports the unknown anchor
            self._expanded += _expanded_size(node, self._sizes)
            limit = LIMITS["file_bytes"].value
            if self._expanded > limit:
                raise OverLimit(
                    f"its YAML aliases expand it past {limit:,} characters (at *{event.anchor}, "
                    f"line {line}): {limit_message('file_bytes', f'more than {limit:,}')}"
                )

    return Bounded


def _expanded_size(root: Any, sizes: dict[int, int]) -> int:
    """Characters a node stands for once its aliases are expanded; each node counted once
    (``sizes`` remembers them), without recursion."""
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if children_done:
            own = len(node.value) if isinstance(node.value, str) else 0
            sizes[id(node)] = 1 + own + sum(sizes[id(child)] for child in children)
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes[id(root)]


def _children(node: Any) -> list[Any]:
    value = node.value
    if not isinstance(value, list):
        return []
    found: list[Any] = []
    for item in value:
        if isinstance(item, tuple):  # a mapping's (key, value) pair
            found.extend(item)
        else:
            found.append(item)
    return found
