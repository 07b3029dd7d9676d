"""Untrusted text made safe for where ghostrun shows it: one rule per destination.

What ghostrun prints comes partly from cassettes, models and judges: answers,
prompts, verdict reasons, test names. Any of them may be hostile (a cassette
from a stranger's pull request, a model asked to misbehave), so every command
quotes them through this module, never by hand (DESIGN §7, "Text for humans is
safe where it goes"):

- a terminal (`terminal`): control characters (ESC and so every ANSI or OSC
  sequence, such as OSC 52, which writes the clipboard, and OSC 8, which makes
  hyperlinks; every other C0 and C1 character but newline and tab; DEL; the
  bidirectional overrides that reorder what a reader sees) become visible
  escapes (``\\x1b``, ``\\u202e``);
- Markdown: a code block (`code_block`) is fenced with more backticks than
  the longest run inside it, so no line can close it; inline text (`inline`)
  has ``&``, ``<`` and ``>`` escaped (no HTML, no autolink ``<https://…>``)
  and ``[``, ``]``, ``\\`` and backticks backslash-escaped (no link, no image,
  no code span of its own), and is one line, and an ``@`` that starts a mention
  (``@user``, ``@org/team``) is followed by a zero-width space (``&#8203;``), so a
  bot's comment pings nobody (GitHub ignores mentions inside code, where untrusted
  text stays as it is); a table cell (`cell`) has ``|`` escaped too; inline code
  (`code`) is fenced the way code blocks are.

A bare URL stays as text: GitHub may make it a link, never an embedded image.
The HTML report escapes its own way (``_report``), under a CSP.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["cell", "code", "code_block", "fence", "inline", "terminal"]

# C0 controls but tab and newline, DEL, C1 controls, and the bidi overrides and isolates.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_BACKTICKS = re.compile(r"`+")
_MENTION = re.compile(r"@(?=[A-Za-z0-9])")  # GitHub's logins and teams start so
_MARKDOWN_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "\\\\", "[": "\\[", "]": "\\]", "`": "\\`"}
)


def terminal(text: str) -> str:
    """``text`` with every control character shown as a visible escape (idempotent)."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def fence(lines: Sequence[str]) -> str:
    """A code fence longer than any run of backticks in ``lines`` (three at least)."""
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    return "`" * max(3, longest + 1)


def code_block(lines: Sequence[str], info: str = "") -> list[str]:
    """``lines`` as a fenced Markdown code block no line of them can close."""
    shown = [terminal(line) for line in lines]
    mark = fence(shown)
    return [mark + info, *shown, mark]


def inline(text: str) -> str:
    """Untrusted text as literal Markdown on one line: no HTML, link, image, code span or
    mention."""
    escaped = terminal(" ".join(text.split())).translate(_MARKDOWN_ESCAPES)
    return _MENTION.sub("@&#8203;", escaped)


def cell(text: str, *, as_code: bool = False) -> str:
    """Untrusted text as a Markdown table cell (`inline`, or `code`): no ``|`` ends it."""
    return (code(text) if as_code else inline(text)).replace("|", "\\|")


def code(text: str) -> str:
    """Untrusted text as Markdown inline code, on one line, delimited past its backticks."""
    flat = terminal(" ".join(text.split()))
    longest = max((len(run) for run in _BACKTICKS.findall(flat)), default=0)
    mark = "`" * (longest + 1)
    padded = f" {flat} " if flat.startswith("`") or flat.endswith("`") else flat
    return f"{mark}{padded}{mark}"
