"""An exchange read from another tool's cassette, decoded to what went over the wire.

Readers fill these in; the import command keys, masks and writes them as if
ghostrun had recorded them. Bodies are bytes as the client sent them and as
the provider's content-encoding is undone (gzip, deflate, br when a brotli
module is installed), headers are ``(lower-case name, value)`` pairs.
"""

from __future__ import annotations

import importlib
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._store._limits import LIMITS
from ._bounded import OverLimit, bounded_loader, inflate, limit_message_for

__all__ = ["Exchange", "SourceFile", "UnreadableSource", "decoded", "header_pairs", "load_yaml"]


class UnreadableSource(Exception):
    """A file that is not a cassette this reader knows, or cannot be read: the message says why."""


@dataclass
class Exchange:
    method: str
    uri: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int
    response_headers: list[tuple[str, str]]
    response_body: bytes
    recorded_on: str = ""  # the day it was recorded, when the source kept one ("" if not)


@dataclass
class SourceFile:
    """One source cassette: its exchanges in order, and what was left out and why."""

    path: Path
    tool: str  # "vcrpy" or "cassetter"
    exchanges: list[Exchange] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def header_pairs(headers: Any) -> list[tuple[str, str]]:
    """``{name: [values]}`` or ``{name: value}`` as lower-case pairs, in order."""
    if not isinstance(headers, dict):
        return []
    pairs = []
    for name, values in headers.items():
        for value in values if isinstance(values, list) else [values]:
            pairs.append((str(name).lower(), str(value)))
    return pairs


def decoded(body: bytes, headers: list[tuple[str, str]]) -> bytes:
    """``body`` with its ``content-encoding`` undone (listed last applied first)."""
    encodings = [v for k, v in headers if k == "content-encoding"]
    for coding in reversed(",".join(encodings).split(",")):
        body = _undo(coding.strip().lower(), body)
    return body


def _undo(coding: str, body: bytes) -> bytes:
    """One encoding undone, within replay's limit for a body (`_bounded`)."""
    if coding in ("", "identity") or not body:
        return body
    limit = LIMITS["body_bytes"].value
    try:
        if coding in ("gzip", "x-gzip"):
            return inflate(body, "gzip", limit)
        if coding == "deflate":
            try:
                return inflate(body, "deflate", limit)
            except zlib.error:  # deflate sent without its zlib header, as some servers do
                return inflate(body, "raw", limit)
        if coding == "br":
            return _unbrotli(body, limit)
    except OverLimit as exc:
        raise UnreadableSource(f"its {coding} body {exc}") from None
    except (OSError, zlib.error, EOFError) as exc:
        if _looks_decoded(body):  # the source decoded it and kept the header
            return body
        raise UnreadableSource(f"its {coding} body does not decompress ({exc})") from None
    raise UnreadableSource(f"its body is {coding}-encoded, which ghostrun cannot decode")


def _looks_decoded(body: bytes) -> bool:
    return body[:1] in (b"{", b"[") or body[:5] in (b"data:", b"event")


def _unbrotli(body: bytes, limit: int) -> bytes:
    """A brotli body, its output capped at ``limit`` + 1 where the module can cap it."""
    decompressor = _brotli().Decompressor()
    try:
        out: bytes = decompressor.process(body, output_buffer_limit=limit + 1)
    except TypeError:  # an older brotli: no cap, the whole body at once
        out = decompressor.process(body)
    if len(out) > limit:
        raise OverLimit(f"inflates past {limit:,} bytes: {limit_message_for(limit)}")
    return out


def _brotli() -> Any:
    for module in ("brotli", "brotlicffi"):
        try:
            return importlib.import_module(module)
        except ImportError:
            continue
    raise UnreadableSource("its body is br-encoded: install brotli to decode it")


def load_yaml(text: str, path: Path) -> Any:
    """A YAML document, read safely (``!!binary`` as bytes, Python 2 string tags as str)."""
    try:
        yaml = importlib.import_module("yaml")
    except ImportError:
        raise UnreadableSource(
            "reading YAML needs PyYAML: pip install 'ghostrun[import]'"
        ) from None

    class _Loader(yaml.SafeLoader):  # type: ignore[misc,name-defined]
        # A bare 2020-10-01 (a header's value, cassetter writes it unquoted) stays text.
        yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in rules if not tag.endswith(":timestamp")]
            for first, rules in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }

    def _as_str(loader: Any, node: Any) -> str:
        return str(loader.construct_scalar(node))

    for tag in ("python/unicode", "python/str"):
        _Loader.add_constructor(f"tag:yaml.org,2002:{tag}", _as_str)
    try:
        return yaml.load(text, Loader=bounded_loader(yaml, _Loader))
    except OverLimit as exc:
        raise UnreadableSource(str(exc)) from None
    except yaml.YAMLError as exc:
        raise UnreadableSource(f"not valid YAML ({str(exc).splitlines()[0]})") from None
