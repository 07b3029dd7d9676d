"""Atomic, durable, readable JSON files: the one way ghostrun writes to disk.

A file is written to a temporary sibling, flushed to disk (``fsync``) and
``os.replace``d over its name, so parallel workers, threads, killed processes
and power losses never leave or read half a file: a reader sees the old
content or the new, never an empty or a truncated one. When a write creates a
file (or a directory) the directory itself is synced too, so the new name
survives a power loss: at once outside a session, and once per directory when
the session closes inside one (`defer_dir_syncs`, DESIGN §3: a crash before
then may lose the newest names, never leave half a file). A record session
writes a new cassette per request, and syncing its directory each time cost
about a tenth of the recording. A write over an existing name needs no
directory sync. `create_atomic` makes a file that must not exist yet:
the synced temporary file is hard-linked to the name, which fails if another
writer made it first, so creators need no lock (`ghostrun._core._lock`).

Where the system can (Linux: ``O_TMPFILE``), the file is first written with no
name at all, synced, and only then linked to a name: a new file's name
directly, a replacement's temporary name just before the ``os.replace``. No
name is made and removed for a new cassette, a killed process leaves no
temporary file behind, and the ``fsync`` of a file that never had a name does
not also write its directory (ext4 without a journal syncs the directory of a
newly named file with it): about a third of a new file's system time and a
fifth of its wall time on this project's machine.

Temporary files are named ``.<name>.ghostrun-tmp-<pid>-<thread>-<n>``: a
killed process may leave one behind, and `is_temp` / `temp_owner` let
``ghostrun check`` list it and ``ghostrun prune`` remove it once its process
is gone. The first time ghostrun creates a cassette directory it writes a
``.gitignore`` there (unless one exists) so that git never commits these
temporary files, the lock files of `ghostrun._core._lock`, or ``runs/_last.json``.

Directories are created only by writes: reading never creates anything, so a
``replay`` session never makes a missing cassette directory.

A cassette directory arrives in pull requests, so a symbolic link inside it
is never followed for a write (DESIGN §3): a write given its cassette
directory (``root``) refuses a path through a linked folder below it (a
committed ``runs -> elsewhere``), and a file's own name is replaced, never
written through (``os.replace`` and ``link`` act on the link itself). The
cassette directory itself may be a link: that one is the user's choice.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import itertools
import os
import threading
from typing import Any

import orjson

from ._exceptions import CassetteError

__all__ = [
    "GITIGNORE",
    "LOCK_SUFFIX",
    "TEMP_MARK",
    "create_atomic",
    "defer_dir_syncs",
    "dump_json",
    "ensure_dir",
    "is_lock",
    "is_temp",
    "parse_json",
    "read_bytes",
    "read_json",
    "refuse_links",
    "sync_deferred_dirs",
    "temp_owner",
    "write_atomic",
]

TEMP_MARK = ".ghostrun-tmp-"
LOCK_SUFFIX = ".ghostrun-lock"
GITIGNORE = (
    "# Written by ghostrun when it created this directory. Commit the cassettes\n"
    "# (*.json) and judge/; never ghostrun's temporary and lock files, nor the\n"
    "# log of the last run and its report (snapshots under runs/ are yours to commit).\n"
    f".*{TEMP_MARK}*\n"
    f".*{LOCK_SUFFIX}\n"
    "runs/_last.json\n"
    "runs/report.html\n"
)
_READ_SIZE = 1 << 16
_serial = itertools.count()
# link() errors saying a file system has no hard links (FAT, some network shares);
# EINVAL is what Windows reports for a volume without them.
_NO_LINK_ERRORS = frozenset(
    {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EINVAL}
)
_no_links: set[str] = set()  # directories where link() said so: `create_atomic` gives way
# A file with no name (Linux): its directory's file system may not make one (EOPNOTSUPP),
# nor a kernel before 3.11 (EISDIR: it reads the flag as O_DIRECTORY), nor where /proc
# (which names the file for link()) is not mounted. Then files are named from the start.
_UNNAMED = getattr(os, "O_TMPFILE", 0)
_NO_UNNAMED_ERRORS = frozenset({errno.EOPNOTSUPP, errno.ENOTSUP, errno.EISDIR, errno.EINVAL})
_no_unnamed: set[str] = set()  # directories where O_TMPFILE said so
_PROC_FD = "/proc/self/fd/"
_PRETTY = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE


def dump_json(value: Any, *, sort_keys: bool = True) -> bytes:
    """Pretty JSON, so diffs in review are small and stable.

    Keys sorted, unless the caller put them in the order it wants: a cassette
    keeps a response body's keys in the provider's order (`_cassette`).
    """
    return orjson.dumps(value, option=(_PRETTY | orjson.OPT_SORT_KEYS) if sort_keys else _PRETTY)


def parse_json(data: str | bytes) -> Any:
    """The JSON value ``data`` holds, or None if it is not JSON: for readers that skip it."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


# -- writing ---------------------------------------------------------------------------------


def write_atomic(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    root: str | os.PathLike[str] | None = None,
    make_root: bool = True,
) -> None:
    """Write ``data`` to ``path`` so no reader, crash or power loss ever sees a partial file.

    ``root`` is the cassette directory the file belongs to (default: the
    file's own directory): when it is missing it is created (with its
    ``.gitignore``) unless ``make_root`` is false, in which case the write is
    a CassetteError. The temporary name is unique per process, thread and
    write; the file gets the usual permissions (umask), since cassettes are
    meant to be committed. Plain ``os`` calls on ``str`` paths: record mode
    writes a file per request.
    """
    path = os.fspath(path)
    if root is not None:
        refuse_links(root, path)
    tmp = _unnamed_temp(path, data, root, make_root) or _synced_temp(path, data, root, make_root)
    try:
        created = not os.path.lexists(path)
        os.replace(tmp, path)
    except BaseException as exc:
        _discard(tmp)
        if isinstance(exc, OSError):
            raise _cannot_write(path, exc) from exc
        raise
    if created:
        _new_name_in(os.path.dirname(path))


def create_atomic(path: str | os.PathLike[str], data: bytes) -> bool:
    """Write a new file at ``path`` as `write_atomic` does, only if nothing has that name yet.

    False, with nothing written, if something has it, or if the directory's file
    system has no hard links: the caller then takes the file's lock and reads what
    is there (`ghostrun._core._lock`). The synced temporary file is linked to the
    name, which fails if the name exists, so two writers creating one file at once
    never overwrite each other and need no lock. A recording writes a new cassette
    per request: the lock file it spares is an inode made and freed for each, which
    on a file system without a journal costs about as much as the write itself
    (ext4 then steps over every recently freed inode for each file it makes).
    """
    path = os.fspath(path)
    head = os.path.dirname(path)
    if head in _no_links:
        return False
    fd = _synced_unnamed(path, data, None, True)
    if fd is not None:
        try:
            linked = _link_unnamed(fd, path)
        finally:
            os.close(fd)
        if linked is not None:
            if linked:
                _new_name_in(head)
            return linked
    tmp = _synced_temp(path, data, None, True)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in _NO_LINK_ERRORS:
            raise _cannot_write(path, exc) from exc
        _no_links.add(head)
        return False
    finally:
        _discard(tmp)  # once linked, the file keeps its new name: no inode is freed
    _new_name_in(head)
    return True


def _synced_unnamed(
    path: str, data: bytes, root: str | os.PathLike[str] | None, make_root: bool
) -> int | None:
    """An open file with no name, in the directory of ``path``, holding ``data`` flushed
    to disk; None where the system makes no such file (the caller names one instead)."""
    head = os.path.dirname(path)
    if not _UNNAMED or head in _no_unnamed or head in _no_links:
        return None
    try:
        fd = _create(head or ".", head, root, make_root, _UNNAMED)
    except OSError as exc:
        if exc.errno in _NO_UNNAMED_ERRORS:
            _no_unnamed.add(head)
            return None
        raise CassetteError(
            f"cannot write {path}: {exc.strerror or exc}. "
            "Make the directory writable or point GHOSTRUN_CASSETTE_DIR elsewhere."
        ) from exc
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException as exc:
        os.close(fd)  # a file without a name: closing it is all there is to undo
        if isinstance(exc, OSError):
            raise _cannot_write(path, exc) from exc
        raise
    return fd


def _link_unnamed(fd: int, path: str) -> bool | None:
    """Give the unnamed file ``fd`` the name ``path``: True; False if the name is taken or
    the directory's file system has no hard links; None if /proc is not there to name it
    (the caller then writes a named temporary file, from now on).

    ``link()`` names an open file through its /proc entry; an absolute source makes the
    kernel ignore ``src_dir_fd``, which is only there so that Python calls ``linkat``
    (following that entry) rather than ``link``.
    """
    global _UNNAMED
    try:
        os.link(f"{_PROC_FD}{fd}", path, src_dir_fd=fd, follow_symlinks=True)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno == errno.ENOENT and not os.path.isdir(_PROC_FD):
            _UNNAMED = 0
            return None
        if exc.errno not in _NO_LINK_ERRORS:
            raise _cannot_write(path, exc) from exc
        _no_links.add(os.path.dirname(path))
        return False
    return True


def _unnamed_temp(
    path: str, data: bytes, root: str | os.PathLike[str] | None, make_root: bool
) -> str | None:
    """`_synced_unnamed`'s file, linked to a temporary name beside ``path`` for
    `write_atomic` to replace ``path`` with; None where it could not be made or named
    (a file system without links, a name left by an earlier process with this id)."""
    fd = _synced_unnamed(path, data, root, make_root)
    if fd is None:
        return None
    head, name = os.path.split(path)
    tmp = os.path.join(head, temp_name(name))
    try:
        linked = _link_unnamed(fd, tmp)
    finally:
        os.close(fd)
    return tmp if linked else None


def _synced_temp(
    path: str, data: bytes, root: str | os.PathLike[str] | None, make_root: bool
) -> str:
    """A new temporary sibling of ``path`` holding ``data``, flushed to disk: its name."""
    head, name = os.path.split(path)
    tmp = os.path.join(head, temp_name(name))
    try:
        fd = _create(tmp, head, root, make_root)
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
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException as exc:
        _discard(tmp)
        if isinstance(exc, OSError):
            raise _cannot_write(path, exc) from exc
        raise
    return tmp


def _cannot_write(path: str, exc: OSError) -> CassetteError:
    return CassetteError(f"cannot write {path}: {exc.strerror or exc}")


def _discard(tmp: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def temp_name(name: str) -> str:
    """The temporary sibling of the file ``name`` for this write (see `is_temp`)."""
    return f".{name}{TEMP_MARK}{os.getpid()}-{threading.get_ident()}-{next(_serial)}"


def is_temp(name: str) -> bool:
    """Whether a file name is one of ghostrun's temporary files."""
    return name.startswith(".") and TEMP_MARK in name


def is_lock(name: str) -> bool:
    """Whether a file name is one of ghostrun's lock files (`ghostrun._core._lock`)."""
    return name.startswith(".") and name.endswith(LOCK_SUFFIX)


def temp_owner(name: str) -> int | None:
    """The id of the process that wrote a temporary file, or None if the name has none."""
    pid = name.rpartition(TEMP_MARK)[2].split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def _create(
    tmp: str,
    directory: str,
    root: str | os.PathLike[str] | None,
    make: bool,
    flags: int = os.O_CREAT | os.O_EXCL,
) -> int:
    """Open a new file exclusively (or, ``flags`` O_TMPFILE, one without a name in the
    directory ``tmp``); make its directory only when it is missing."""
    flags |= os.O_WRONLY
    try:
        return os.open(tmp, flags, 0o666)
    except (FileNotFoundError, NotADirectoryError):  # ensure_dir says which, or makes it
        ensure_dir(directory or ".", root, make_root=make)
        return os.open(tmp, flags, 0o666)


def ensure_dir(
    directory: str | os.PathLike[str],
    root: str | os.PathLike[str] | None = None,
    *,
    make_root: bool = True,
) -> None:
    """Make ``directory`` (inside the cassette directory ``root``) if it is missing.

    A root ghostrun creates gets a ``.gitignore``. A dangling symbolic link,
    or a file where a directory should be, is a CassetteError saying so.
    """
    directory = os.fspath(directory)
    if root is not None:
        refuse_links(root, os.path.join(directory, ""))
    if os.path.isdir(directory):
        return
    top = os.fspath(root) if root is not None else directory
    if not os.path.isdir(top):
        if not make_root:
            raise CassetteError(
                f"no cassette directory at {os.path.abspath(top)}, and this write never "
                "creates one: record something first (GHOSTRUN_MODE=auto or record)"
            )
        _make_root(top)
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:
        raise CassetteError(_cannot_create(directory, exc)) from exc


def refuse_links(root: str | os.PathLike[str], path: str) -> None:
    """A CassetteError if a folder between the cassette directory ``root`` and the file
    ``path`` is a symbolic link: a write there would land wherever the link points."""
    below = os.path.relpath(os.path.dirname(path), root)
    if below == "." or below.startswith(os.pardir):
        return  # directly in the cassette directory, or a place outside it the user chose
    folder = os.fspath(root)
    for part in below.split(os.sep):
        folder = os.path.join(folder, part)
        if os.path.islink(folder):
            raise CassetteError(linked(folder, f"write {path}"))


def linked(path: str, action: str) -> str:
    """Why ghostrun will not ``action`` through the symbolic link ``path``."""
    return (
        f"cannot {action}: {path} is a symbolic link (to {os.readlink(path)}), and ghostrun "
        "never follows a link inside a cassette directory when it writes, locks or deletes, "
        "since a cassette directory may come from anyone's pull request. Remove the link."
    )


def _make_root(root: str) -> None:
    try:
        os.makedirs(root)
    except FileExistsError:
        if os.path.isdir(root):
            return  # another process made it first; it writes the .gitignore
        raise CassetteError(_cannot_create(root, None)) from None
    except OSError as exc:
        raise CassetteError(_cannot_create(root, exc)) from exc
    _new_name_in(os.path.dirname(os.path.abspath(root)))
    gitignore = os.path.join(root, ".gitignore")
    if not os.path.lexists(gitignore):
        write_atomic(gitignore, GITIGNORE.encode())


def _cannot_create(directory: str, exc: OSError | None) -> str:
    """Why a directory cannot be made, naming a dangling link or a file in the way."""
    shown = os.path.abspath(directory)
    probe = shown
    while probe and not os.path.lexists(probe):
        probe = os.path.dirname(probe) if os.path.dirname(probe) != probe else ""
    if probe and os.path.islink(probe) and not os.path.exists(probe):
        return (
            f"cannot create the cassette directory {shown}: {probe} is a symbolic link to "
            f"{os.readlink(probe)}, which does not exist. Create the link's target, or "
            "point GHOSTRUN_CASSETTE_DIR elsewhere."
        )
    if probe and not os.path.isdir(probe):
        return (
            f"cannot create the cassette directory {shown}: {probe} is a file, not a "
            "directory. Move it, or point GHOSTRUN_CASSETTE_DIR elsewhere."
        )
    reason = f": {exc.strerror or exc}" if exc is not None else ""
    return (
        f"cannot create the cassette directory {shown}{reason}. Make its parent writable "
        "or point GHOSTRUN_CASSETTE_DIR elsewhere."
    )


# -- syncing directories: at once, or once when the session closes ------------------------

_deferring = 0  # sessions open that defer the syncs of their new names' directories
_unsynced: set[str] = set()  # directories holding new names not synced yet
_deferral_lock = threading.Lock()
_atexit_armed = False


def defer_dir_syncs() -> None:
    """A session opens: new names' directories are synced when it closes, once each.

    Each call is matched by one `sync_deferred_dirs`. While any session defers,
    every new name's directory waits, whichever thread wrote it; the first session
    to close syncs all that wait (a process that ends first syncs them at exit).
    """
    global _deferring
    with _deferral_lock:
        _deferring += 1


def sync_deferred_dirs() -> None:
    """A session closes: sync every directory that got a new name since the last sync."""
    global _deferring
    with _deferral_lock:
        _deferring = max(0, _deferring - 1)
        directories = sorted(_unsynced)
        _unsynced.clear()
    for directory in directories:
        _sync_dir(directory)


def _new_name_in(directory: str) -> None:
    """A new name was made in ``directory``: sync it now, or when the session closes."""
    global _atexit_armed
    with _deferral_lock:
        if _deferring:
            _unsynced.add(directory)
            if not _atexit_armed:  # a session never closed: the process's end syncs them
                _atexit_armed = True
                atexit.register(_sync_at_exit)
            return
    _sync_dir(directory)


def _sync_at_exit() -> None:
    with _deferral_lock:
        directories = sorted(_unsynced)
        _unsynced.clear()
    for directory in directories:
        _sync_dir(directory)


def _sync_dir(directory: str) -> None:
    """Make a new name in ``directory`` survive a power loss (POSIX; a no-op elsewhere)."""
    if os.name != "posix":
        return
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some file systems cannot sync a directory
            os.fsync(fd)
    finally:
        os.close(fd)


# -- reading ---------------------------------------------------------------------------------


def read_json(path: str | os.PathLike[str]) -> Any | None:
    """The parsed file, ``None`` if it does not exist, or a CassetteError naming it.

    Raw: callers that use what they read go through `ghostrun._store._validate`.
    """
    data = read_bytes(path)
    if data is None:
        return None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CassetteError(
            f"corrupt file {path}: not valid JSON ({exc}). "
            "Delete it and re-record with GHOSTRUN_MODE=record."
        ) from exc


def read_bytes(path: str | os.PathLike[str]) -> bytes | None:
    """The file's bytes, ``None`` if it does not exist, or a CassetteError naming it.

    ``Path.read_bytes`` without the file object: replay reads a file per request, and in
    place this saves about 1 % of a replay against ``open().read()`` (4 % against
    ``Path.read_bytes``).
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise CassetteError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        chunks = [os.read(fd, _READ_SIZE)]
        while len(chunks[-1]) == _READ_SIZE:  # a shorter read is the end of the file
            chunks.append(os.read(fd, _READ_SIZE))
        return b"".join(chunks)
    except OSError as exc:
        raise CassetteError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)
