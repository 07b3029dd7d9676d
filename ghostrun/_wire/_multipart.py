"""Multipart bodies, split into their parts: the key drops credential fields from them,
and the secrets rules find the values of those fields."""

from __future__ import annotations

import re

__all__ = ["multipart_parts"]

# The field name of a multipart part: ``name="..."`` (not ``filename=``) in its headers.
_PART_NAME = re.compile(rb'(?i)content-disposition:[^\r\n]*?(?<![a-z])name="?([^";\r\n]*)')


def multipart_parts(body: bytes, content_type: str) -> list[tuple[str | None, bytes, bytes]] | None:
    """``(field name, content, whole part)`` of each part; None if ``content_type`` has no boundary.

    A file upload's field has a name too; its ``filename`` is not read as one.
    """
    boundary = _boundary(content_type)
    if not boundary:
        return None
    out = []
    for part in body.split(b"--" + boundary)[1:]:
        if part.startswith(b"--"):
            break
        raw = part.strip(b"\r\n")
        head, _, content = raw.partition(b"\r\n\r\n")
        found = _PART_NAME.search(head)
        name = found.group(1).decode("utf-8", "replace") if found else None
        out.append((name, content, raw))
    return out


def _boundary(content_type: str) -> bytes:
    for param in content_type.split(";")[1:]:
        name, _, value = param.strip().partition("=")
        if name.lower() == "boundary":
            return value.strip('"').encode()
    return b""
