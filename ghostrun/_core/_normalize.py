"""Values that change on every run, replaced inside strings for the key and the miss diff.

An app that writes ``"Today is 2026-12-02"`` or a fresh uuid into its prompt
sends a different request every day or every run; ``ignore_fields`` could
only drop the whole message. ``normalize=`` names the shapes of such values
instead (built-ins below, or the user's regexes): inside every string of a
JSON body (or a text body) and of the URL's path and query, each match is
replaced by a placeholder (``<date>``) for the key and for the miss diff only.
What is stored and replayed is never touched, and any other change to the same
string still changes the key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["BUILTINS", "Normalizer", "normalizer"]

BUILTINS: dict[str, re.Pattern[str]] = {
    "uuid": re.compile(
        r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
    ),
    "iso_datetime": re.compile(
        r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"
    ),
    "date": re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),
    "unix_ts": re.compile(r"\b1\d{9}(?:\d{3}|\.\d+)?\b"),
    # Hex digits not inside a longer run of them: after "_" or "-" too (``call_`` + a uuid4's
    # hex is how ids are minted), where a word boundary would not be.
    "hex_id": re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{16,}(?![0-9A-Za-z])"),
    # Ids as providers and frameworks write them: a short lowercase prefix, "_" or "-", then
    # 16 or more letters and digits with at least one digit (``toolu_01A09q90qw90lq917835lq9``,
    # ``chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT``, ``call_Xb3…``, ``resp_68…``, ``msg_01…``).
    "prefixed_id": re.compile(
        r"(?<![0-9A-Za-z_-])(?:[a-z][a-z0-9]{1,11}[_-])+(?=[A-Za-z]*[0-9])[A-Za-z0-9]{16,}"
        r"(?![0-9A-Za-z])"
    ),
}
"""The named shapes, applied in this order (a datetime before the date inside it)."""
_NAME = re.compile(r"[a-z_]+")


class Normalizer:
    """Replaces the matches of its patterns inside strings; one per session."""

    __slots__ = ("names", "patterns")

    def __init__(self, patterns: list[tuple[str, re.Pattern[str]]]) -> None:
        self.patterns = patterns
        self.names = tuple(name for name, _ in patterns)

    def text(self, text: str) -> str:
        for name, pattern in self.patterns:
            text = pattern.sub(f"<{name}>", text)
        return text

    def url(self, url: str) -> str:
        """A canonical URL with its path and query normalised (scheme and host as they are)."""
        start = url.find("/", url.find("://") + 3)
        return url if start < 0 else url[:start] + self.text(url[start:])

    def value(self, value: Any) -> Any:
        """A parsed JSON value with every string (keys too) normalised (a copy)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value


def normalizer(
    spec: Iterable[str | re.Pattern[str]] | str | re.Pattern[str] | None,
) -> Normalizer | None:
    """The `Normalizer` of a ``normalize=`` argument, or None when it names nothing.

    Each item is a built-in's name (`BUILTINS`), a compiled pattern, or a string
    holding a regex; an unknown name that is not a valid regex is a ValueError.
    """
    if spec is None:
        return None
    items = [spec] if isinstance(spec, str | re.Pattern) else list(spec)
    found: list[tuple[str, re.Pattern[str]]] = []
    for item in items:
        if isinstance(item, re.Pattern):
            found.append(("normalized", item))
        elif isinstance(item, str) and item in BUILTINS:
            found.append((item, BUILTINS[item]))
        elif isinstance(item, str) and _NAME.fullmatch(item):
            raise ValueError(
                f"unknown normalize name {item!r}: the built-ins are {', '.join(BUILTINS)} "
                "(a regex that is a plain word: pass re.compile(...))"
            )
        elif isinstance(item, str):
            try:
                found.append(("normalized", re.compile(item)))
            except re.error as exc:
                raise ValueError(
                    f"invalid normalize entry {item!r}: neither a built-in "
                    f"({', '.join(BUILTINS)}) nor a regex ({exc})"
                ) from None
        else:
            raise ValueError(f"normalize takes names, regex strings or patterns, got {item!r}")
    order = list(BUILTINS)
    found.sort(key=lambda pair: order.index(pair[0]) if pair[0] in BUILTINS else len(order))
    return Normalizer(found) if found else None
