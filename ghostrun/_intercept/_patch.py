"""Reference-counted patching of the HTTP libraries' hooks, and the registry of roads.

The first holder installs every road's hooks, the last one to release
restores the exact original functions. A holder is an open session, or a
runner's `lease` (DESIGN §2): the pytest plugin holds one from the first test
that uses ghostrun to the end of the run, the unittest mixin one per test
class, so a session per test finds the roads installed and installs nothing.
Under a lease alone, a call outside any session passes through at the cost of
one lookup (``_engine.route`` finds no session). A road is a module of this package
listed in `ROADS`; its ``adapters()`` returns one `Adapter` per library it
covers, each with two steps: ``check`` (is the library importable? raise
`UnsupportedLibrary` if it is but lacks its hook) and ``install`` (returns
the function that restores the original);
and it names the module it waits for (``waits_for``: its library's top-level
package, which every import of the library imports first; several adapters may
wait for one, as aiohttp's HTTP and WebSocket roads do). Adding a road is one
entry in `ROADS` and a module with ``adapters()``.

Road modules are imported here, when the first session opens, never by
``import ghostrun``; each imports its HTTP library only in ``check``. Opening a
session imports no HTTP library either. An adapter whose library is already
imported is checked and installed then, as one batch (every check before any
install). One whose library is not imported yet waits for it (`LateImports`):
its adapters are checked and installed the moment the library is imported
while the roads are installed, before that import returns.

One road's missing hook never breaks another road: an adapter whose ``check``
raises `UnsupportedLibrary` is left alone, unhooked, listed in `unhooked`,
and every other road installs as usual. While any road is unhooked the guard
is held installed in every mode (the functions `on_unhooked` was given): the
first call on that road toward a provider or session host, one whose stack
holds the road's `Footprint`, raises `UnsupportedLibrary` before any byte is
sent, never a silent unrecorded pass-through; a road the guard cannot see (a
subprocess: MCP over stdio) installs its adapter's ``refuse`` instead, which
raises it. `survey` says, road by road,
what ``ghostrun doctor`` prints. A library whose import
began while the roads were installed, and is still running when they are
installed again, is that import's to patch as it ends (`LateImports.ready`):
the installer neither waits for it under the roads' lock (the import needs that
lock to end) nor patches it half-built. The last release restores both kinds
and stops waiting.

Three small pieces serve every installer of hooks in this package (the roads
and the guard): `Refcount`, installed while anyone holds it, `replace`, which
sets attributes and returns the function that puts back what was there, and
`LateImports`, which hooks a module the moment it is imported. Every road's
``check`` finds its library with `library`.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from .._core._exceptions import UnsupportedLibrary
from .._recording import _deck

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

__all__ = [
    "ROADS",
    "Adapter",
    "Change",
    "Footprint",
    "LateImports",
    "Refcount",
    "Restore",
    "acquire",
    "capturing",
    "footprint",
    "forget_plan",
    "held",
    "in_place",
    "is_unhooked",
    "lease",
    "library",
    "on_unhooked",
    "reapply",
    "release",
    "replace",
    "restore_all",
    "survey",
    "unhooked",
    "when_restored",
]

ROADS: tuple[str, ...] = (
    "_httpx",  # httpx and httpx2
    "_aiohttp",
    "_urllib3",  # requests, botocore/boto3
    "_websockets",  # websockets' sync and asyncio clients (WebSocket conversations)
    "_aiohttp_ws",  # aiohttp's ws_connect (WebSocket conversations)
    "_lm15",  # dspy's vendored HTTP client, its default engine from 3.4
    "_grpc",  # grpcio's sync channels and grpc.aio (xai-sdk, Vertex AI, Google clients)
    "_mcp_stdio",  # mcp's stdio client: MCP servers an agent launches (pydantic-ai, openai-agents)
)
"""The road modules of ``ghostrun._intercept``, in installation order."""

Restore = Callable[[], None]
"""What an install returns: the function that puts the originals back."""


class Adapter(Protocol):
    waits_for: str
    """The module whose import the adapter waits for if it is not imported yet."""

    def check(self) -> bool:
        """True if the library is installed and patchable; raise if it is installed but not."""

    def install(self) -> Restore:
        """Install the hook; return the function that restores the original."""


@dataclass(frozen=True)
class Footprint:
    """Which running code is a road's: a stack with frames of its ``packages``.

    ``functions``, if given, must be among those frames' function names;
    ``unless`` names functions that make the stack another road's (aiohttp's
    WebSocket road opens through its HTTP road's ``_request``).
    """

    packages: tuple[str, ...]
    functions: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()

    def owns(self, stack: Sequence[tuple[str, str]]) -> bool:
        """True if ``stack`` (module, function) pairs, innermost first, run this road."""
        names = [name for module, name in stack if _within(module, self.packages)]
        if not names or any(name in self.unless for name in names):
            return False
        return not self.functions or any(name in self.functions for name in names)


def _within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


@dataclass(frozen=True)
class RoadState:
    """One road as ``ghostrun doctor`` shows it."""

    road: str
    version: str | None
    """The installed distribution's version; None if it is not installed."""
    hooked: bool
    why: str
    """Why it is not hooked: not installed, or the `UnsupportedLibrary` message."""


# -- the pieces every installer shares ------------------------------------------------


class Refcount:
    """Installed while held: the first `acquire` installs, the last `release` restores.

    Both run under ``lock``, which the owner may also take for its own work (the
    guard patches a module under it when the module is imported late). An
    install that raises leaves the count where it was.
    """

    def __init__(
        self, install: Callable[[], None], restore: Restore, lock: AbstractContextManager[Any]
    ) -> None:
        self._install, self._restore, self._lock = install, restore, lock
        self.count = 0

    def acquire(self) -> None:
        with self._lock:
            if self.count == 0:
                self._install()
            self.count += 1

    def release(self) -> None:
        with self._lock:
            self.count -= 1
            if self.count == 0:
                self._restore()


def library(name: str) -> ModuleType | None:
    """An adapter's library, imported; None if it is not installed (its ``check`` says False).

    Asked of ``find_spec`` rather than read from an ``ImportError``, so that a
    library which is installed but fails to import fails loudly instead of
    being stood aside, its requests unintercepted.
    """
    import importlib.util  # only here: ``import ghostrun`` imports this module, not importlib.util

    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def replace(*changes: tuple[Any, str, Any]) -> Restore:
    """Set each ``(owner, name, value)``; return the function that puts back what was there.

    What was there is the owner's own attribute; one it only inherited is
    deleted again, so the owner goes back to inheriting it.
    """
    saved = [(owner, name, owner.__dict__.get(name, _ABSENT)) for owner, name, _ in changes]
    for owner, name, value in changes:
        setattr(owner, name, value)
    into = _captures.get(threading.get_ident())
    if into is not None:
        into.extend((o, n, v, was) for (o, n, v), (_, _, was) in zip(changes, saved, strict=True))

    def restore() -> None:
        for owner, name, original in saved:
            if original is _ABSENT:
                delattr(owner, name)
            else:
                setattr(owner, name, original)

    return restore


Change = tuple[Any, str, Any, Any]
"""What `replace` set: ``(owner, name, value, what was there)``."""

_captures: dict[int, list[Change]] = {}  # per thread: where `replace` reports its changes


@contextmanager
def capturing() -> Iterator[list[Change]]:
    """The changes `replace` makes in this thread inside, to be made again by `reapply`.

    An installer keeps what its checks passed and its installs set, and the next
    session sets the same again while `in_place` says nothing changed since:
    checking the libraries and building the wrappers cost more than the rest of an
    empty session, and a session per test installs and restores every time.
    """
    changes: list[Change] = []
    thread = threading.get_ident()
    outer = _captures.get(thread)
    _captures[thread] = changes
    try:
        yield changes
    finally:
        if outer is None:
            del _captures[thread]
        else:
            _captures[thread] = outer


def in_place(changes: Sequence[Change]) -> bool:
    """Whether every attribute the changes replaced still holds what they replaced."""
    return all(o.__dict__.get(n, _ABSENT) is was for o, n, _, was in changes)


def reapply(changes: Sequence[Change]) -> Restore:
    """Make the captured changes again (`in_place` said they still apply); undo with the result."""
    return replace(*((o, n, v) for o, n, v, _ in changes))


def restore_all(restorers: list[Restore]) -> None:
    """Run and drop the restorers, the last installed first."""
    while restorers:
        restorers.pop()()


_ABSENT: Any = object()


class LateImports:
    """Calls ``loaded(name, module)`` the moment a watched module is first imported.

    A meta path finder, first on ``sys.meta_path`` while any name is watched:
    for a watched name it wraps the loader found by the finders behind it, so
    ``loaded`` runs right after the module's own code, before the import
    returns. ``loaded`` runs under ``lock`` (an ``RLock``: the installer that
    watches takes it too); once it returns the name is no longer watched, so a
    ``loaded`` that raises makes that import fail, and every retry of it.

    An import whose loader is wrapped belongs to that import until it ends,
    even if watching stops meanwhile: the installer asks `ready` before it
    patches a module it finds imported, and watches again one still being
    imported here, which its import then reports. So the installer never waits
    under ``lock`` for an import that needs ``lock`` to end (a deadlock), nor
    patches a module half-built. Several instances may watch one name: each
    wraps the loader found by the finders behind it, another instance's
    included, and each is told in turn. Not an ``importlib.abc`` subclass:
    importing that would cost ``import ghostrun`` 5 ms.
    """

    def __init__(
        self, loaded: Callable[[str, ModuleType], None], lock: AbstractContextManager[Any]
    ) -> None:
        self._loaded, self._lock = loaded, lock
        self.pending: set[str] = set()
        self.loading: set[str] = set()  # wrapped here, their import not ended yet

    def watch(self, names: Iterable[str]) -> None:
        """Watch ``names`` (modules not `ready`) until they are imported or `stop`."""
        with self._lock:
            self.pending.update(names)
            if self.pending and self not in sys.meta_path:
                sys.meta_path.insert(0, self)

    def stop(self) -> None:
        with self._lock:
            self.pending.clear()
            if self in sys.meta_path:
                sys.meta_path.remove(self)

    def ready(self, name: str) -> ModuleType | None:
        """The module ``name`` if it is imported and no import of it wrapped here is running.

        Called under ``lock``; a module this returns None for is to be watched.
        """
        return None if name in self.loading else sys.modules.get(name)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in self.pending:  # every import asks: the quick answer first
            return None
        spec = self._spec_behind(fullname, path, target)
        if spec is None:
            return None
        with self._lock:
            if fullname not in self.pending:
                return spec  # stopped meanwhile: the spec as the finders behind found it
            self.loading.add(fullname)
        # A loader by duck type: the importlib.abc base class costs 5 ms to import.
        spec.loader = _CallAfterLoading(spec.loader, self, fullname)  # type: ignore[assignment]
        return spec

    def _spec_behind(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None
    ) -> ModuleSpec | None:
        """The first spec with a loader that the finders after this one find."""
        finders = list(sys.meta_path)
        behind = finders[finders.index(self) + 1 :] if self in finders else finders
        for finder in behind:
            find = getattr(finder, "find_spec", None)
            spec: ModuleSpec | None = None if find is None else find(fullname, path, target)
            if spec is not None and spec.loader is not None:
                return spec
        return None

    def imported(self, name: str, module: ModuleType | None) -> None:
        """The import of ``name`` wrapped here has ended (``module`` None: it raised).

        A module still watched is reported to ``loaded``.
        """
        with self._lock:
            self.loading.discard(name)
            if module is None or name not in self.pending:
                return  # failed, or stopped (the last release) while it was importing
            self._loaded(name, module)
            self.pending.discard(name)
            if not self.pending:
                self.stop()


class _CallAfterLoading:
    """Runs the module's own loader, puts that loader back, then tells the watcher."""

    def __init__(self, loader: Any, watcher: LateImports, name: str) -> None:
        self.loader, self.watcher, self.name = loader, watcher, name
        self.original: Any = loader.original if isinstance(loader, _CallAfterLoading) else loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        created: ModuleType | None = self.loader.create_module(spec)
        return created

    def exec_module(self, module: ModuleType) -> None:
        try:
            self.loader.exec_module(module)
        except BaseException:
            self.watcher.imported(self.name, None)
            raise
        module.__loader__ = self.original
        if module.__spec__ is not None:
            module.__spec__.loader = self.original
        self.watcher.imported(self.name, module)


# -- the roads ------------------------------------------------------------------------

_lock = threading.RLock()
_restorers: list[Restore] = []
_waiting: dict[str, list[Adapter]] = {}  # module not imported yet: the adapters waiting for it


def _install_all() -> None:
    """Install the adapters of the libraries imported; watch the others' first.

    Watched before the checks run, so that a library whose import starts
    meanwhile is patched as it ends, not missed; a check that raises stops it.
    What the checks passed and the installs set is kept (`_Plan`): the next
    session to install finds the same libraries with the same hooks and sets
    the same attributes again, without checking or building anything.
    """
    global _plan
    plan = _plan
    if plan is not None and plan.holds():
        _waiting.update((name, list(adapters)) for name, adapters in plan.waiting.items())
        _late.watch(plan.waiting)
        _restorers.append(reapply(plan.changes))
        return
    _plan = None
    waiting: dict[str, list[Adapter]] = {}
    made = _adapters
    for adapter in made():
        waiting.setdefault(adapter.waits_for, []).append(adapter)
    imported = [name for name in waiting if _late.ready(name) is not None]
    now = [adapter for name in imported for adapter in waiting.pop(name)]
    _waiting.update(waiting)
    _late.watch(waiting)
    try:
        with capturing() as changes:
            _restorers.extend(_install(now))
    except BaseException:
        _late.stop()
        _waiting.clear()
        raise
    if unhooked:  # a road left unhooked holds the guard: the full install says so each time
        return
    modules = tuple((name, sys.modules[name]) for name in imported)
    waits = {name: tuple(adapters) for name, adapters in waiting.items()}
    _plan = _Plan(made, modules, waits, tuple(changes))


class _Plan:
    """What the last full install checked and set, to set again while it still holds.

    Every session's first block installs the roads, and the checks and the
    wrappers cost more than the rest of an empty session. The plan holds while
    the same adapters find the same library modules imported (none imported or
    replaced since), the same ones not imported yet, and every attribute the
    install replaced still the original it replaced: a library patched, reloaded
    or imported since is checked again, by the full install.
    """

    def __init__(
        self,
        made: Callable[[], list[Adapter]],
        imported: tuple[tuple[str, ModuleType], ...],
        waiting: dict[str, tuple[Adapter, ...]],
        changes: tuple[Change, ...],
    ) -> None:
        self.made, self.imported, self.waiting, self.changes = made, imported, waiting, changes

    def holds(self) -> bool:
        if _adapters is not self.made:
            return False
        for name, module in self.imported:
            if _late.ready(name) is not module:
                return False
        for name in self.waiting:
            if _late.ready(name) is not None:
                return False
        return in_place(self.changes)


_plan: _Plan | None = None


def forget_plan() -> None:
    """Check every road afresh at the next install (a test that replaced an adapter's check)."""
    global _plan
    _plan = None


def _install(adapters: list[Adapter]) -> list[Restore]:
    """Check them all, then install the ready ones; on an error none stays installed.

    One that lacks its hook is left unhooked (`_leave_unhooked`); one that
    offers ``refuse(error)`` (a road the socket guard cannot see, such as a
    subprocess) installs that instead: its calls raise the error.
    """
    ready: list[Adapter] = []
    refusing: list[tuple[Any, UnsupportedLibrary]] = []
    for adapter in adapters:
        try:
            if adapter.check():
                ready.append(adapter)
        except UnsupportedLibrary as error:
            _leave_unhooked(adapter, error)
            if hasattr(adapter, "refuse"):
                refusing.append((adapter, error))
    installed: list[Restore] = []
    try:
        for adapter in ready:
            installed.append(adapter.install())
        for adapter, why in refusing:
            installed.append(adapter.refuse(why))
    except BaseException:
        restore_all(installed)
        raise
    return installed


def _imported_late(name: str, module: ModuleType) -> None:
    """A library the roads wait for was just imported: its adapters check and install now."""
    _restorers.extend(_install(_waiting[name]))
    del _waiting[name]


def _restore_all() -> None:
    _late.stop()
    _waiting.clear()
    restore_all(_restorers)
    if unhooked:
        unhooked.clear()
        for _acquire, release_guard in _guards:
            release_guard()
    for restored in _when_restored:
        restored()


unhooked: list[tuple[Adapter, UnsupportedLibrary]] = []
"""The roads left unhooked while the roads are installed, each with why (the guard reads it)."""
_guards: list[tuple[Callable[[], None], Callable[[], None]]] = []


_when_restored: list[Callable[[], None]] = []


def when_restored(hook: Callable[[], None]) -> None:
    """Call ``hook`` each time the roads are restored (the guard restores hooks it parked
    while they were held, `_guard._let_go`)."""
    _when_restored.append(hook)


def held() -> bool:
    """Whether anyone holds the roads now (a session, a runner's lease)."""
    return _roads.count > 0


def on_unhooked(acquire_guard: Callable[[], None], release_guard: Callable[[], None]) -> None:
    """Hold the guard (``acquire_guard``) while any road is unhooked (``ghostrun/__init__``)."""
    _guards.append((acquire_guard, release_guard))


def _leave_unhooked(adapter: Adapter, error: UnsupportedLibrary) -> None:
    if not unhooked:
        for acquire_guard, _release in _guards:
            acquire_guard()
    unhooked.append((adapter, error))


def is_unhooked(road: str) -> bool:
    """Is ``road`` (an adapter's ``road`` name) left unhooked now?"""
    return any(getattr(adapter, "road", None) == road for adapter, _error in unhooked)


def footprint(adapter: Adapter) -> Footprint:
    """The adapter's `Footprint`; by default, frames of the package it waits for."""
    found: Footprint = getattr(adapter, "footprint", None) or Footprint((adapter.waits_for,))
    return found


def survey() -> list[RoadState]:
    """Every road's state in this process, checked afresh (nothing is installed)."""
    from importlib import metadata  # only here: the doctor asks, never a session

    states = []
    for adapter in _adapters():
        road = str(getattr(adapter, "road", adapter.waits_for))
        distribution = str(getattr(adapter, "distribution", adapter.waits_for))
        try:
            version: str | None = metadata.version(distribution)
        except metadata.PackageNotFoundError:
            version = None
        try:
            hooked, why = adapter.check(), "not installed"
        except UnsupportedLibrary as error:
            hooked, why = False, str(error)
        states.append(RoadState(road, version, hooked, "" if hooked else why))
    return states


_late = LateImports(_imported_late, _lock)
_roads = Refcount(_install_all, _restore_all, _lock)


# Install every road's hooks (the first caller does), until the last `release`, which
# restores the exact original functions. The count's own methods: a session per test calls
# them, and a function around each was a call more.
acquire = _roads.acquire
release = _roads.release


def lease() -> Restore:
    """A runner's hold on the roads: installed from now until the release it returns.

    The release is idempotent; the last holder to let go restores the exact
    originals. The guard is not part of it: it acts as without the lease. The
    layers are wired first (`_deck.wire`), as a session's entry does.
    """
    _deck.wire()
    acquire()
    held = [True]

    def release_lease() -> None:
        with _lock:
            if not held:
                return
            held.clear()
        release()

    return release_lease


def _adapters() -> list[Adapter]:
    adapters: list[Adapter] = []
    for road in ROADS:
        adapters += importlib.import_module(f"{__package__}.{road}").adapters()
    return adapters
