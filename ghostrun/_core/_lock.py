"""The per-cassette lock: one writer at a time per cassette, across processes.

Adding a response to a cassette is a read-modify-write: read the file, add
the entry, replace the file. Two writers doing it at once (two ``pytest -n``
workers, two scripts, two threads) would each replace the file with their own
view, and one response would be lost. `cassette_lock` serialises them with an
advisory lock on a sibling file, ``.<key>.json.ghostrun-lock``; the writer
re-reads the cassette once it holds the lock. Creating a cassette takes no lock:
the new file is linked to its name only if the name is free
(`ghostrun._core._files.create_atomic`), and a writer that finds it taken comes here.

POSIX: ``fcntl.flock`` (every ``open`` takes its own lock, so threads of one
process exclude each other too; the kernel drops the lock when a process
dies). The lock file is removed by its holder before it lets go, and a
waiter that wakes up holding a lock on a removed file tries again, so the
directory keeps no lock files. Windows: ``msvcrt.locking`` on the first byte
of the lock file, which stays in place (Windows cannot remove a file another
process holds open); ``ghostrun prune`` removes lock files nobody holds.

A lock file that is a symbolic link (a committed one) is never followed:
it is a `CassetteError` naming it, and nothing is created where it points.

Readers never lock: files are replaced atomically (`ghostrun._core._files`), so a
replay reads the old cassette or the new, never half of one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator

from ._exceptions import CassetteError
from ._files import LOCK_SUFFIX, linked

__all__ = ["cassette_lock", "is_held", "lock_path", "try_remove_stale_lock"]


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # a committed symlink is never opened through


def lock_path(path: str) -> str:
    """The lock file guarding the file at ``path``."""
    head, name = os.path.split(path)
    return os.path.join(head, f".{name}{LOCK_SUFFIX}")


@contextlib.contextmanager
def cassette_lock(path: str) -> Iterator[None]:
    """Hold the lock of the file at ``path`` (its directory must exist)."""
    where = lock_path(path)
    if os.path.islink(where):  # also where O_NOFOLLOW is missing (Windows)
        raise CassetteError(linked(where, "lock " + path))
    try:
        fd = _acquire(where)
    except OSError as exc:
        if exc.errno == errno.ELOOP or os.path.islink(where):
            raise CassetteError(linked(where, "lock " + path)) from exc
        raise
    try:
        yield
    finally:
        _release(fd, where)


def is_held(where: str) -> bool:
    """Whether a writer holds the lock file ``where`` now (it is left as it is).

    The probe tries the platform's lock without waiting (`_probe`); ``_HELD`` is
    what it raises when a writer has the lock.
    """
    try:
        fd = os.open(where, _PROBE_MODE | _NOFOLLOW)
    except OSError:
        return False
    try:
        _probe(fd)
    except _HELD:
        return True
    finally:
        os.close(fd)  # closing drops a lock this probe took
    return False


if sys.platform == "win32":
    import msvcrt

    def _acquire(where: str) -> int:
        fd = os.open(where, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o666)
        while True:
            try:
                msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # retries for 10 s, then raises
                return fd
            except OSError:
                continue

    def _release(fd: int, where: str) -> None:
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        finally:
            os.close(fd)

    _PROBE_MODE, _HELD = os.O_RDWR, OSError

    def _probe(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def try_remove_stale_lock(where: str) -> bool:
        """Remove a lock file nobody holds; False if someone does."""
        try:
            os.unlink(where)
        except PermissionError:
            return False
        except FileNotFoundError:
            pass
        return True

else:
    import fcntl

    def _acquire(where: str, blocking: bool = True) -> int:
        flags = fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB
        while True:
            fd = os.open(where, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o666)
            try:
                fcntl.flock(fd, flags)
                if _still_named(fd, where):
                    return fd
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)  # the holder removed this file before letting go: take the new one

    def _still_named(fd: int, where: str) -> bool:
        try:
            named = os.lstat(where)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (named.st_dev, named.st_ino) == (mine.st_dev, mine.st_ino)

    def _release(fd: int, where: str) -> None:
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(where)  # while still holding it: see _acquire
        finally:
            os.close(fd)

    _PROBE_MODE, _HELD = os.O_RDONLY, BlockingIOError

    def _probe(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)

    def try_remove_stale_lock(where: str) -> bool:
        """Remove a lock file nobody holds (its writer was killed); False if someone does."""
        try:
            fd = _acquire(where, blocking=False)
        except BlockingIOError:
            return False
        except FileNotFoundError:
            return True
        _release(fd, where)
        return True
