"""Finding exact secrets in any encoding, in a text, and masking them.

A secret is matched plain, URL-encoded (``%2F``, ``+``), JSON-escaped once or
more (``\\"``, ``\\u0041``), HTML-escaped, and base64-encoded (at any of the
three alignments inside a longer base64 text). Where two matches overlap,
both go under one mask. A stream, whose secret may be cut over chunks and
events, is `_streams`' to mask.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, AnyStr

__all__ = [
    "MASK",
    "Edit",
    "Patterns",
    "base64_forms",
    "candidates",
    "edited",
    "mask_text",
    "patterns",
    "spans",
]

MASK = "[REDACTED]"
_MIN_FORM = 8  # no form of a secret worth masking is shorter

_ESCAPE_MARKS = frozenset("%\\&+")
_JSON_ESCAPE = re.compile(r"\\+([uU][0-9a-fA-F]{4}|[\"/\\])")
_PERCENT = re.compile(r"(?:%[0-9a-fA-F]{2})+")
# A backslash of a secret is 1, 2, 4, 8 or 16 of them once JSON-encoded 0-4 times; the
# longest such run is taken, never an odd remainder that starts the next escape.
_BACKSLASH_RUNS = r"\\(?:\\(?:\\{2}(?:\\{4}(?:\\{8})?)?)?)?"
Patterns = tuple[re.Pattern[str], ...]
Edit = tuple[int, int, Any]  # start, end, replacement


# -- the patterns ----------------------------------------------------------------


def patterns(secrets: frozenset[str]) -> Patterns:
    """One pattern per secret: each matches it in any encoding, base64 included.

    Each secret's pattern is compiled once (`_pattern`): building one costs far more
    than a search, and the same few secrets are masked in every entry and run log.
    """
    return tuple(_pattern(secret) for secret in sorted(secrets))


@functools.lru_cache(maxsize=2048)  # a process remembers at most 1024 secrets
def _pattern(secret: str) -> re.Pattern[str]:
    encoded = sorted(base64_forms(secret), key=lambda s: (-len(s), s))
    plain = "".join(_char_forms(c) for c in secret)
    return re.compile("|".join([plain, *("".join(map(_base64_char, f)) for f in encoded)]))


def _base64_char(char: str) -> str:
    """A base64 character as text may spell it: letters and digits plain, the rest escaped."""
    return re.escape(char) if char.isalnum() else _char_forms(char)


def candidates(text: str, secrets: Iterable[str]) -> frozenset[str]:
    """The secrets that may be in ``text``: a fast filter before the patterns' search.

    A secret shows in the text as itself, as a base64 form, or with characters
    escaped; undoing every escape `_char_forms` knows (repeatedly: JSON inside
    JSON) leaves it plain. A secret whose own characters could read as an escape
    (``%``, ``\\``, ``&``, ``+``) is always a candidate.
    """
    views = [text]
    if any(mark in text for mark in _ESCAPE_MARKS):
        decoded = _unescaped(text)
        views += [decoded, decoded.replace("+", " ")]
    return frozenset(
        secret
        for secret in secrets
        if not _ESCAPE_MARKS.isdisjoint(secret)
        or any(secret in view for view in views)
        or any(form in text or form.replace("/", "\\/") in text for form in base64_forms(secret))
    )


def _unescaped(text: str) -> str:
    for _ in range(4):  # JSON inside JSON inside JSON...
        before = text
        text = _JSON_ESCAPE.sub(_json_char, html.unescape(text))
        text = _PERCENT.sub(_percent_chars, text)
        if text == before:
            break
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # pairs joined


def _json_char(match: re.Match[str]) -> str:
    escape = match.group(1)
    if escape[0] in "uU":
        return chr(int(escape[1:], 16))
    return escape


def _percent_chars(match: re.Match[str]) -> str:
    return bytes.fromhex(match.group(0).replace("%", "")).decode("utf-8", "replace")


@functools.lru_cache(maxsize=4096)
def base64_forms(secret: str) -> tuple[str, ...]:
    """The base64 text of a secret, standard and URL-safe, at the three alignments.

    Inside a longer base64 text (``user:secret`` encoded) only the characters
    that depend on the secret's bytes alone are fixed: those are the forms.
    """
    data = secret.encode("utf-8")
    forms: set[str] = set()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + data).decode("ascii")
        start = (pad * 8 + 5) // 6  # the characters holding a pad byte's bits
        end = (pad + len(data)) * 8 // 6  # the last character may hold the next byte's bits
        core = encoded[start:end]
        if pad == 0:
            forms.add(encoded)
        forms.add(core)
    forms |= {f.replace("+", "-").replace("/", "_") for f in forms}
    return tuple(sorted(f for f in forms if len(f) >= _MIN_FORM and f != secret))


def _char_forms(char: str) -> str:
    """A regex matching one character of a secret, plain or escaped in any common way."""
    forms = [re.escape(char)]
    percent = "".join(f"%{byte:02x}" for byte in char.encode("utf-8"))
    forms.append(f"(?i:{re.escape(percent)})")
    unicode_escape = json.dumps(char)[1:-1]  # \u00e9, or a surrogate pair
    if not unicode_escape.startswith("\\u") and ord(char) < 0x10000:
        unicode_escape = f"\\u{ord(char):04x}"
    # An escape inside JSON text inside a JSON string has its backslash doubled (or more).
    forms.append("(?i:" + re.escape(unicode_escape).replace(r"\\u", r"\\+u") + ")")
    if html.escape(char) != char:
        forms.extend(re.escape(e) for e in (html.escape(char), f"&#{ord(char)};"))
    if char == " ":
        forms.append(r"\+")
    elif char == '"':
        forms[0] = r'\\*"'  # JSON-escaped once or more (a JSON string inside JSON)
    elif char == "\\":
        forms[0] = _BACKSLASH_RUNS
    elif char == "/":
        forms[0] = r"\\*/"
    return "(?:" + "|".join(forms) + ")"


@functools.lru_cache(maxsize=256)
def _byte_patterns(compiled: Patterns) -> tuple[re.Pattern[bytes], ...]:
    return tuple(re.compile(p.pattern.encode("utf-8")) for p in compiled)


# -- a text ------------------------------------------------------------------------


def spans(text: AnyStr, compiled: Patterns) -> list[tuple[int, int]]:
    """Where any pattern matches, overlapping matches merged, in order."""
    if isinstance(text, bytes):
        found = sorted(m.span() for p in _byte_patterns(compiled) for m in p.finditer(text))
    else:
        found = sorted(m.span() for p in compiled for m in p.finditer(text))
    merged: list[tuple[int, int]] = []
    for start, end in found:
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def mask_text(text: AnyStr, compiled: Patterns) -> AnyStr:
    """Mask every match of every pattern; overlapping matches merge into one mask."""
    if len(text) < _MIN_FORM or not compiled:
        return text
    found = spans(text, compiled)
    if not found:
        return text
    mask: Any = MASK.encode() if isinstance(text, bytes) else MASK
    return edited(text, [(start, end, mask) for start, end in found])


def edited(text: AnyStr, edits: Sequence[Edit]) -> AnyStr:
    """``text`` with each ``(start, end, replacement)`` applied (in order, not overlapping)."""
    pieces, position = [], 0
    for start, end, replacement in edits:
        pieces.append(text[position:start])
        pieces.append(replacement)
        position = end
    pieces.append(text[position:])
    return text[:0].join(pieces)
