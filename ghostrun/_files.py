"""Atomic, readable JSON files: the one way ghostrun writes to disk.

A file is written to a temporary sibling and ``os.replace``d, so parallel
workers and threads never leave or read half a file.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from pathlib import Path
from typing import Any

import orjson

from ._exceptions import CassetteError

__all__ = ["dump_json", "read_json", "write_atomic"]

_READ_SIZE = 1 << 16
_serial = itertools.count()
_PRETTY = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_APPEND_NEWLINE


def dump_json(value: Any) -> bytes:
    """Pretty JSON with sorted keys, so diffs in review are small and stable."""
    return orjson.dumps(value, option=_PRETTY)


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` so no reader ever sees a partial file.

    The temporary name is unique per process, thread and write, so parallel
    workers never share one; the file gets the usual permissions (umask),
    like any file the user writes, since cassettes are meant to be committed.
    Plain ``os`` calls on ``str`` paths: record mode writes a file per request.
    """
    path = os.fspath(path)
    head, name = os.path.split(path)
    tmp = os.path.join(head, f".{name}.{os.getpid()}.{threading.get_ident()}.{next(_serial)}.tmp")
    try:
        fd = _create(tmp, head)
    except OSError as exc:
        raise CassetteError(
            f"cannot write {path}: {exc.strerror or exc}. "
            "Make the directory writable or point GHOSTRUN_CASSETTE_DIR elsewhere."
        ) from exc
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise CassetteError(f"cannot write {path}: {exc.strerror or exc}") from exc
        raise


def _create(tmp: str, directory: str) -> int:
    """Open a new file exclusively; make its directory only when it is missing."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        return os.open(tmp, flags, 0o666)
    except FileNotFoundError:
        Path(directory or ".").mkdir(parents=True, exist_ok=True)
        return os.open(tmp, flags, 0o666)


def read_json(path: str | os.PathLike[str]) -> Any | None:
    """The parsed file, ``None`` if it does not exist, or a CassetteError naming it."""
    try:
        data = _read_bytes(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise CassetteError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CassetteError(
            f"corrupt file {path}: not valid JSON ({exc}). "
            "Delete it and re-record with GHOSTRUN_MODE=record."
        ) from exc


def _read_bytes(path: str | os.PathLike[str]) -> bytes:
    """``Path.read_bytes`` without the file object: replay reads a file per request."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = [os.read(fd, _READ_SIZE)]
        while len(chunks[-1]) == _READ_SIZE:  # a shorter read is the end of the file
            chunks.append(os.read(fd, _READ_SIZE))
        return b"".join(chunks)
    finally:
        os.close(fd)
