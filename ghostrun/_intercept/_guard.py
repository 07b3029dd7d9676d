"""The guard: in replay, nothing reaches a provider host but through ghostrun (DESIGN §1).

In ``replay`` every exchange with a provider is answered from a cassette by
one of the adapters, which never open a connection. So any DNS lookup of, or
connect to, a provider host (`PROVIDER_HOSTS`) or one of the governing
session's ``hosts`` is traffic no adapter made: a library ghostrun does not
intercept (stdlib ``http.client``/``urllib``, a framework's own socket client,
``websockets``). The guard refuses it with `CacheMiss` before any byte is
sent (a lookup is refused before the resolver is asked), naming the host and
the first caller outside ghostrun and the networking modules. The miss is
booked on the governing session like any other (``misses``, raised again at
exit if swallowed). With ``block_network`` it also refuses every host that is
not loopback (127.0.0.0/8, ``::1``, ``localhost``).

Who decides is the governing session of the calling context (DESIGN §2):
only one in ``replay`` is guarded; traffic inside `bypass_interception` (the
judge) always passes. With no session, the suite-wide mode decides
(``GHOSTRUN_MODE=replay``, ``--ghostrun-replay``), with ``GHOSTRUN_HOSTS`` and
``GHOSTRUN_BLOCK_NETWORK``.

The hooks, the narrowest points every Python client goes through:
``socket.getaddrinfo``, ``gethostbyname``, ``gethostbyname_ex`` (every name
lookup: ``create_connection``, ``http.client``, urllib3, trio's resolver
thread), ``socket.socket.connect`` and ``connect_ex`` (every connect, an
IP-literal address included, and asyncio's selector loops, whose
``sock_connect`` calls ``connect``), ``sendto`` and ``sendmsg`` given an
address (TCP Fast Open connects in them: ``MSG_FASTOPEN``; UDP sends
there), and asyncio's ``BaseEventLoop.getaddrinfo``
(checked in the calling task's context and resolved in the executor under a
copy of it, so the worker thread decides as the task's session would), and
grpc's channel constructors (``grpc.insecure_channel``/``secure_channel`` and
their ``grpc.aio`` twins), since grpc's C core resolves and connects past
Python's socket module: a channel to a guarded target is refused when it is
made, unless a road answers its calls (the grpc road, `serve_channels`), and
so is each call of grpc's multi-callables (sync and aio) to such a target: a
stub built before the grpc road was installed calls past it. Not seen: other
code that networks in C (uvloop, c-ares).

In every mode, while a road is left unhooked (its library lacks the hook:
`_patch.unhooked`), a lookup of or connect to a provider or session host from
code running on that road (its `_patch.Footprint` in the stack) raises
`UnsupportedLibrary` before any byte is sent, naming the library, its
version, the missing hook and the supported versions.

Installed reference-counted (`acquire`/`release`): by every open session in
``replay``, by the roads while one of them is unhooked (`_patch.on_unhooked`),
by the pytest plugin for the whole run when the suite-wide mode is ``replay``,
and by ``import ghostrun`` when the suite-wide mode is ``replay`` or a replay
run started this process (`install_for_suite`). Each of these but an unhooked
road is a replay run, whose children are replay runs (`replay_run_started`,
`_core._children`). A hooked module not imported yet is patched the moment
it is imported (`_patch.LateImports`, which the roads use too), so
``import ghostrun`` never imports ``socket`` or ``asyncio`` itself. The last
release restores the exact original functions, or, while the roads are held
(a runner's lease, DESIGN §2), parks the hooks: they stay set, each asking the
count first and calling the original while no one holds the guard, so it acts
as if not installed and a replay session per test installs nothing; the roads'
last release restores them.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import os
import sys
import threading
from collections.abc import Callable
from types import FrameType, ModuleType
from typing import Any

from .._core import _children
from .._core._config import (
    block_network_default,
    mode_source,
    resolve_mode,
    settings,
    suite_mode,
)
from .._core._exceptions import CacheMiss, ReplayRefused, UnsupportedLibrary
from .._core._hosts import PROVIDER_HOSTS, HostMatcher, host_name
from .._recording._deck import Deck
from .._recording._session import _bypass, current_deck
from . import _live
from . import _patch as _roads
from ._patch import Change, LateImports, Refcount, Restore, replace

__all__ = [
    "acquire",
    "check",
    "check_target",
    "grpc_addresses",
    "install_for_suite",
    "installed",
    "is_loopback",
    "release",
    "replay_run_ended",
    "replay_run_started",
    "serve_channels",
    "session_entered",
    "session_exited",
]

_SOCKET, _ASYNCIO, _GRPC = "socket", "asyncio.base_events", "grpc"
_HOOKED = (_SOCKET, _ASYNCIO, _GRPC)
# Frames of these modules are plumbing: the call site named is the first frame outside them.
_PLUMBING = (
    "ghostrun",
    "socket",
    "ssl",
    "selectors",
    "asyncio",
    "concurrent",
    "threading",
    "http",
    "urllib",
    "trio",
    "anyio",
    "sniffio",
    "grpc",
)
_SERVICES = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# grpc's multi-callables, whose calls are checked too: a stub built before the grpc road
# was installed calls through them, past the road (private classes, found by name).
_GRPC_CALLABLES = {
    "grpc._channel": (
        "_UnaryUnaryMultiCallable",
        "_SingleThreadedUnaryStreamMultiCallable",
        "_UnaryStreamMultiCallable",
        "_StreamUnaryMultiCallable",
        "_StreamStreamMultiCallable",
    ),
    "grpc.aio._channel": (
        "UnaryUnaryMultiCallable",
        "UnaryStreamMultiCallable",
        "StreamUnaryMultiCallable",
        "StreamStreamMultiCallable",
    ),
}
_STUB_CALL = (
    "make a gRPC call (from a stub built before any session opened, which ghostrun cannot "
    "see: build the client inside the session) to"
)

_lock = threading.RLock()
_wrappers: dict[tuple[Any, str], tuple[Any, Any]] = {}  # (owner, attr): (original, hook)
_replaced: dict[Any, Any] = {}  # each hook built: what its owner held (`_ABSENT`: inherited)
_providers = HostMatcher(PROVIDER_HOSTS)
_suite_matchers: dict[tuple[str, ...], HostMatcher] = {}
_loopback: dict[str, bool] = {}
# Roads that answer a channel's calls themselves (the grpc road): a channel they serve is
# let through, as it never connects in replay. Each says whether it serves (host, port).
_channel_servers: tuple[Callable[[str, int], bool], ...] = ()


# -- installing and restoring --------------------------------------------------------


def acquire() -> None:
    """Install the hooks (the first caller does), for as long as `release` is not called."""
    _installed.acquire()


def release() -> None:
    """The last release restores the exact original functions."""
    _installed.release()


def installed() -> bool:
    return _installed.count > 0


def session_entered(deck: Deck) -> None:
    """A session opens (interception's one `Deck` subscriber, a straight path: a session per
    test pays it): it holds the roads while it is open (`_patch`), and in replay (or rebase)
    the guard, the children it starts replay runs (`replay_run_started`)."""
    _roads.acquire()
    settings = deck.settings
    if settings.mode.offline:
        _installed.acquire()
        _children.started(deck.arguments.hosts, settings.block_network)


def session_exited(deck: Deck) -> None:
    settings = deck.settings
    if settings.mode.offline:
        _children.ended(deck.arguments.hosts, settings.block_network)
        _installed.release()
    _roads.release()


def replay_run_started(hosts: tuple[str, ...] = ()) -> None:
    """A replay run (a session, the pytest run, the process) holds the guard, and marks the
    children it starts as replay runs refusing ``hosts`` too (`_core._children`)."""
    acquire()
    _children.started(tuple(hosts))


def replay_run_ended(hosts: tuple[str, ...] = ()) -> None:
    _children.ended(tuple(hosts))
    release()


def install_for_suite() -> None:
    """``import ghostrun`` under a suite-wide ``replay`` or ``rebase`` (``GHOSTRUN_MODE`` in
    any of its spellings, or a replay run that started this process): guard the process."""
    try:
        mode = suite_mode()
        replays = mode is not None and mode.offline
    except ValueError:  # an invalid GHOSTRUN_MODE: the first session says so
        replays = False
    if replays:
        replay_run_started()


def suite_replays() -> bool:
    """Outside any session, the mode a session with no ``mode=`` would get is replay.

    So on CI (``CI`` set, no ``GHOSTRUN_MODE``) the pytest plugin guards the whole run, and
    provider traffic outside every session is refused as in a replaying session, not sent
    live with no word (DESIGN §2).
    """
    forced = suite_mode()
    return (forced is not None and forced.offline) or resolve_mode(None).offline


def _install() -> None:
    """Patch the hooked modules imported; watch the others first (`_patch._install_all`).

    What it set is kept, and set again by the next install while the same modules
    are imported and every attribute it replaced still holds what it replaced
    (`_patch.in_place`): a session per test installs the guard every time.
    """
    global _plan
    modules = {name: _late.ready(name) for name in _HOOKED}
    _late.watch(name for name, module in modules.items() if module is None)
    found = tuple(modules.values())
    plan = _plan
    if plan is not None and _same(plan[0], found) and _unchanged(plan[1]):
        for owner, attr, wrapper, _was in plan[1]:
            _set(owner, attr, wrapper)
        return
    _plan = None
    try:
        for name, module in modules.items():
            if module is not None:
                _patch(name, module)
    except BaseException:
        _restore()
        raise
    _plan = found, tuple(_in_force)


_plan: tuple[tuple[ModuleType | None, ...], tuple[Change, ...]] | None = None
_in_force: list[Change] = []  # what the hooks set now, in order: (owner, attr, hook, was)


def _same(kept: tuple[ModuleType | None, ...], found: tuple[ModuleType | None, ...]) -> bool:
    return all(a is b for a, b in zip(kept, found, strict=True))


def _unchanged(changes: tuple[Change, ...]) -> bool:
    """Whether every attribute the changes replaced still holds what they replaced."""
    return all(o.__dict__.get(a, _ABSENT) is was for o, a, _hook, was in changes)


def _set(owner: Any, attr: str, hook: Any) -> None:
    _in_force.append((owner, attr, hook, owner.__dict__.get(attr, _ABSENT)))
    setattr(owner, attr, hook)


def _restore() -> None:
    """Put back what each hook replaced, the last set first, where the hook still is: an
    attribute another hand replaced since is theirs (their undo puts the hook back, and
    the next install finds it as its own, `_replace`)."""
    _late.stop()
    while _in_force:
        owner, attr, hook, was = _in_force.pop()
        if owner.__dict__.get(attr, _ABSENT) is not hook:
            continue
        if was is _ABSENT:
            delattr(owner, attr)
        else:
            setattr(owner, attr, was)


def _patch(name: str, module: ModuleType) -> None:
    """Hook one module: at install if it is imported, else when it is (`_late` calls this)."""
    if name == _SOCKET:
        for attr in ("getaddrinfo", "gethostbyname", "gethostbyname_ex"):
            _replace(module, attr, _guard_lookup)
        for attr in ("connect", "connect_ex"):
            _replace(module.socket, attr, _guard_connect)
        _replace(module.socket, "sendto", _guard_sendto)  # MSG_FASTOPEN connects in sendto
        if hasattr(module.socket, "sendmsg"):
            _replace(module.socket, "sendmsg", _guard_sendmsg)
    elif name == _ASYNCIO:
        _replace(module.BaseEventLoop, "getaddrinfo", _guard_loop_lookup)
    else:
        for owner in filter(None, (module, getattr(module, "aio", None))):
            for attr in ("insecure_channel", "secure_channel"):
                _replace(owner, attr, _guard_channel)
        for owner in _grpc_callables():
            for attr in ("__call__", "with_call", "future"):
                if attr in vars(owner):
                    _replace(owner, attr, _guard_call)


def _replace(owner: Any, attr: str, wrap: Callable[[Any], Any]) -> None:
    """Set the hook ``wrap`` makes of ``owner.attr``. One built before is set again (a
    session per test reinstalls); one found there already, put back by another hand's
    undo after the guard was restored around it, is taken as set, with what it replaced."""
    current = getattr(owner, attr)  # connect is inherited from _socket.socket
    if current in _replaced:
        _in_force.append((owner, attr, current, _replaced[current]))
        return
    made = _wrappers.get((owner, attr))
    if made is None or made[0] is not current:  # built once: a session per test reinstalls
        made = _wrappers[(owner, attr)] = (current, wrap(current))
        _replaced[made[1]] = owner.__dict__.get(attr, _ABSENT)
    _set(owner, attr, made[1])


def _hold() -> None:
    """The first holder: hooks parked under the roads (`_let_go`) serve as they are, if
    every one is still in place; else they are restored and installed afresh."""
    global _parked
    if _parked:
        _parked = False
        for owner, attr, hook, _was in _in_force:
            if owner.__dict__.get(attr, _ABSENT) is not hook:
                _restore()
                break
        else:
            return
    _install()


def _let_go() -> None:
    """The last holder let go: the hooks are parked while the roads are held (a runner's
    lease), inert (each hook asks `_installed` first), so a replay session per test
    installs nothing; restored when the roads are (`_roads_restored`), else now."""
    global _parked
    if _roads.held():
        _parked = True
    else:
        _restore()


def _roads_restored() -> None:
    """The roads' last holder let go: hooks parked for them are restored too."""
    global _parked
    with _lock:
        if _parked:
            _parked = False
            _restore()


_ABSENT: Any = object()
_parked = False  # installed, held by no one: the roads are held (`_let_go`)
_late = LateImports(_patch, _lock)  # hooked modules not imported yet are patched when they are
_installed = Refcount(_hold, _let_go, _lock)
_roads.when_restored(_roads_restored)


# -- the hooks -----------------------------------------------------------------------


def _guard_lookup(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _installed.count:  # parked (`_let_go`): as if not installed
            return original(host, *args, **kwargs)
        if host:
            check(host, args[0] if args else kwargs.get("port"), "look up")
        found = original(host, *args, **kwargs)
        if host:
            _live.resolved(host, found)  # a named host's addresses are not named again
        return found

    return lookup


def _guard_connect(original: Callable[..., Any]) -> Callable[..., Any]:
    socket = sys.modules[_SOCKET]
    inet = frozenset({socket.AF_INET, socket.AF_INET6})

    @functools.wraps(original)
    def connect(self: Any, address: Any) -> Any:
        if not _installed.count:  # parked (`_let_go`): as if not installed
            return original(self, address)
        if isinstance(address, tuple) and len(address) in (2, 4) and self.family in inet:
            check(address[0], address[1], "connect to")
        return original(self, address)

    return connect


def _guard_sendto(original: Callable[..., Any]) -> Callable[..., Any]:
    """``sendto(data[, flags], address)``: with ``MSG_FASTOPEN`` a TCP socket connects here."""
    inet = _inet()

    @functools.wraps(original)
    def sendto(self: Any, data: Any, *args: Any) -> Any:
        if _installed.count and args and self.family in inet:
            _check_address(args[-1], "send to")
        return original(self, data, *args)

    return sendto


def _guard_sendmsg(original: Callable[..., Any]) -> Callable[..., Any]:
    """``sendmsg(buffers, ancdata, flags, address)``: an address connects as ``sendto`` does."""
    inet = _inet()

    @functools.wraps(original)
    def sendmsg(self: Any, buffers: Any, *args: Any) -> Any:
        if _installed.count and len(args) >= 3 and self.family in inet:
            _check_address(args[2], "send to")
        return original(self, buffers, *args)

    return sendmsg


def _inet() -> frozenset[int]:
    socket = sys.modules[_SOCKET]
    return frozenset({socket.AF_INET, socket.AF_INET6})


def _check_address(address: Any, action: str) -> None:
    if isinstance(address, tuple) and len(address) in (2, 4):
        check(address[0], address[1], action)


def _guard_loop_lookup(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def getaddrinfo(
        self: Any, host: Any, port: Any, *, family: int = 0, type: int = 0, proto: int = 0,
        flags: int = 0,
    ) -> Any:  # fmt: skip
        if not _installed.count:  # parked (`_let_go`): as if not installed
            return await original(
                self, host, port, family=family, type=type, proto=proto, flags=flags
            )
        if host:
            check(host, port, "look up")
        socket = sys.modules[_SOCKET]
        resolve = getattr(self, "_getaddrinfo_debug", None) if self.get_debug() else None
        context = contextvars.copy_context()  # the executor's thread decides as this task would
        return await self.run_in_executor(
            None, context.run, resolve or socket.getaddrinfo, host, port, family, type, proto, flags
        )

    return getaddrinfo


def _guard_channel(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def channel(target: Any, *args: Any, **kwargs: Any) -> Any:
        if _installed.count:
            check_target(_text(target), "open a gRPC channel to", served=True)
        return original(target, *args, **kwargs)

    return channel


def _grpc_callables() -> list[Any]:
    """grpc's multi-callable classes, sync and aio, that this grpc has (private: by name)."""
    found = []
    for name, classes in _GRPC_CALLABLES.items():
        try:
            module = importlib.import_module(name)  # grpc is imported: its own modules
        except ImportError:
            continue
        found += [getattr(module, cls, None) for cls in classes]
    return [cls for cls in found if isinstance(cls, type)]


def _guard_call(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        target = _callable_target(self) if _installed.count else None
        if target is not None:
            check_target(target, _STUB_CALL, served=False)
        return original(self, *args, **kwargs)

    return call


def _callable_target(callable_: Any) -> str | None:
    """The target a grpc multi-callable calls (sync: its ``_target``; aio: its C channel's
    ``target``), or None if this grpc does not say."""
    target = getattr(callable_, "_target", None)
    if target is None:
        target = getattr(getattr(callable_, "_channel", None), "target", None)
    if target is None or callable(target):
        return None
    return _text(target)


def serve_channels(serves: Callable[[str, int], bool]) -> Restore:
    """A road answers the calls of the gRPC channels ``serves`` accepts: let them be made.

    Returns the function that stops it (the road's restore calls it).
    """
    # Set with `replace`, so a session that re-makes the roads' changes (`_patch.reapply`)
    # serves the channels again too.
    return replace((sys.modules[__name__], "_channel_servers", (*_channel_servers, serves)))


def grpc_addresses(target: str) -> tuple[tuple[str, int], ...]:
    """Every (host, port) a grpc target reaches (`_grpctarget`); none if it cannot be read."""
    try:
        addresses: tuple[tuple[str, int], ...] = _targets().read_target(target).addresses
    except _targets().UnreadableTarget:
        return ()
    return addresses


def check_target(text: str, action: str, *, served: bool) -> None:
    """Raise `CacheMiss` if the guard refuses ``action`` on the gRPC target ``text``.

    Judged by every address gRPC would dial (`_grpctarget.read_target`), a name
    also by the addresses it resolves to; a target that cannot be read for
    certain is refused (fail closed). ``served``: a channel whose calls a road
    answers (it never connects) is let through.
    """
    if _bypass.get():
        return
    deck = current_deck()
    judge = _judge(deck)
    if judge is None:
        return
    try:
        target = _targets().read_target(text)
    except _targets().UnreadableTarget as error:
        raise _refuse(deck, _unreadable_miss(deck, text, str(error), action)) from error
    if served and any(serves(*a) for a in target.addresses for serves in _channel_servers):
        return
    reaching = f"{action} target {text!r}, which reaches"
    for host, port in target.addresses:
        check(host, port, reaching)
        try:
            found = _resolved(host, judge[0])
        except OSError as error:
            why = f"{host!r} does not resolve here ({error}); gRPC may resolve it later"
            raise _refuse(deck, _unreadable_miss(deck, text, why, action)) from error
        for address in found:
            check(address, port, f"{action} target {text!r}, whose {host} resolves to")


def _resolved(host: str, matcher: HostMatcher) -> list[str]:
    """The addresses the name ``host`` resolves to, where a listed host is an address.

    gRPC resolves a name in C (c-ares: ``/etc/hosts``, DNS, and every
    ``*.localhost`` as loopback), where the socket hooks never see it: a name in
    ``/etc/hosts`` reaches a listed ``127.0.0.1`` under another name. Raises
    `OSError` if the name does not resolve here (the caller refuses it).
    """
    if _is_ip(host) or not any(_is_ip(name) for name, _port in matcher.patterns):
        return []
    if host_name(host).endswith(".localhost"):
        return ["127.0.0.1", "::1"]
    socket = sys.modules.get(_SOCKET) or importlib.import_module(_SOCKET)
    return sorted(
        {str(info[4][0]) for info in socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)}
    )


def _is_ip(name: str) -> bool:
    """An IP address, or ``localhost`` (`host_name`'s one name for loopback)."""
    return name == "localhost" or bool(_targets().is_ip(name))


def _targets() -> ModuleType:
    """`_grpctarget`, loaded with the first gRPC target read: ``import ghostrun`` (which
    loads this module) never pays for it, as a road's module is loaded when it installs."""
    return importlib.import_module(f"{__package__}._grpctarget")


# -- the decision --------------------------------------------------------------------


def check(host: Any, port: Any, action: str) -> None:
    """Raise `CacheMiss` if the guard refuses ``action`` on ``host``; cheap when it allows."""
    if _bypass.get():
        return
    deck = current_deck()
    if deck is not None and _roads.unhooked:
        _refuse_unhooked(deck, host, port, action)
    judge = _judge(deck)
    if judge is None:
        return
    matcher, block = judge
    name, number = _text(host), _port(port)
    if matcher(name, number) or (deck is not None and deck.hops.caused(name)):
        raise _refuse(deck, _provider_miss(deck, name, number, action))
    if not is_loopback(name):
        if block:
            raise _refuse(deck, _blocked_miss(deck, name, number, action))
        if _live.first_time(name):  # the caller is looked for once per host per run
            _live.went_live(name, number, _caller(), _governed(deck))


def _judge(deck: Deck | None) -> tuple[HostMatcher, bool] | None:
    """The hosts refused and whether ``block_network`` holds; None when nothing is guarded."""
    if deck is not None:
        return (deck.matcher, deck.block_network) if deck.mode.offline else None
    if suite_replays():
        return _suite_matcher(), block_network_default()
    return None


def _refuse_unhooked(deck: Deck, host: Any, port: Any, action: str) -> None:
    """Raise `UnsupportedLibrary` if code on an unhooked road reaches for a guarded host."""
    name, number = _text(host), _port(port)
    if not deck.matcher(name, number):
        return
    stack = _stack()
    for adapter, error in list(_roads.unhooked):
        if _roads.footprint(adapter).owns(stack):
            road = getattr(adapter, "road", adapter.waits_for)
            raise UnsupportedLibrary(
                "\n".join(
                    [
                        f"ghostrun: {_caller()} tried to {action} {_address(name, number)} "
                        f"through {road}, a road ghostrun could not hook, {_governed(deck)}; "
                        "refused before any byte was sent, so nothing goes unrecorded.",
                        f"  {error}",
                        "  `ghostrun doctor` shows every road's state; docs/roads.md lists "
                        "the supported versions.",
                    ]
                )
            ) from error


def _unreadable_miss(deck: Deck | None, target: str, why: str, action: str) -> str:
    return "\n".join(
        [
            f"ghostrun: replay mode never touches the network, and {_caller()} tried to "
            f"{action} target {target!r}, which ghostrun cannot read for certain as gRPC "
            f"does ({why}), {_governed(deck)}.",
            "  gRPC connects below Python's socket module, so its target is all the guard can "
            "judge, and a target it cannot judge is refused before any byte is sent.",
            "  To fix it: write the target as host:port, dns:///host:port or "
            "ipv4:address:port (docs/grpc.md, which targets are read).",
        ]
    )


def _stack() -> list[tuple[str, str]]:
    """(module, function) of each frame calling the guard, innermost first (`_callers`)."""
    return [(_module(f), f.f_code.co_name) for f in _callers(sys._getframe(3))]


def _module(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def _callers(frame: FrameType | None) -> list[FrameType]:
    """The frames from ``frame`` out, innermost first, across asyncio's task boundaries.

    A library that connects inside a task of its own (``asyncio.ensure_future``
    around ``open_connection``, as dspy's lm15 and ``asyncio.wait_for`` do)
    leaves its own frames out of that task's stack, which ends at the event
    loop, then whoever ran the loop (a test harness). So where the task's
    frames end, the frames of the task awaiting it come next, and so on out;
    the loop's own frames last.
    """
    mine: list[FrameType] = []
    while frame is not None and not _is_loop(frame):
        mine.append(frame)
        frame = frame.f_back
    rest: list[FrameType] = []
    while frame is not None:
        rest.append(frame)
        frame = frame.f_back
    return mine + (_awaiting_frames() if rest else []) + rest


def _is_loop(frame: FrameType) -> bool:
    """A frame of the event loop running a task's step: the task's stack ends below it."""
    return _module(frame) == "asyncio.events" and frame.f_code.co_name == "_run"


def _awaiting_frames() -> list[FrameType]:
    """The frames of the tasks awaiting the current one, innermost first."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return []
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return []
    frames: list[FrameType] = []
    seen: set[int] = set()
    while task is not None and id(task) not in seen and len(seen) < 16:
        seen.add(id(task))
        task = _awaiter(asyncio, task, depth=3)
        if task is not None:
            frames += _coroutine_frames(task.get_coro())
    return frames


def _awaiter(asyncio: ModuleType, future: Any, depth: int) -> Any:
    """The task woken when ``future`` is done: directly, or through the futures its done
    callbacks complete (``asyncio.wait``, ``wait_for``)."""
    for entry in getattr(future, "_callbacks", None) or ():
        callback = entry[0] if isinstance(entry, tuple) else entry
        owner = getattr(callback, "__self__", None)
        if isinstance(owner, asyncio.Task):
            return owner
        if depth:
            for inner in _futures_in(asyncio, callback):
                found = _awaiter(asyncio, inner, depth - 1)
                if found is not None:
                    return found
    return None


def _futures_in(asyncio: ModuleType, callback: Any) -> list[Any]:
    """The futures a done callback holds: a partial's arguments, a closure's cells."""
    held = list(getattr(callback, "args", ()))
    for cell in getattr(getattr(callback, "func", callback), "__closure__", None) or ():
        with contextlib.suppress(ValueError):  # an empty cell
            held.append(cell.cell_contents)
    return [thing for thing in held if asyncio.isfuture(thing)]


def _coroutine_frames(coroutine: Any) -> list[FrameType]:
    """A suspended coroutine's frames, innermost first (down its ``cr_await`` chain)."""
    frames: list[FrameType] = []
    while coroutine is not None:
        frame = getattr(coroutine, "cr_frame", None) or getattr(coroutine, "gi_frame", None)
        if frame is not None:
            frames.append(frame)
        coroutine = getattr(coroutine, "cr_await", None) or getattr(coroutine, "gi_yieldfrom", None)
    return frames[::-1]


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ``::1`` and ``localhost``: what ``block_network`` lets through."""
    found = _loopback.get(host)
    if found is None:
        import ipaddress  # lazily: only block_network asks, once per host

        name = host_name(host)
        try:
            found = name == "localhost" or ipaddress.ip_address(name).is_loopback
        except ValueError:
            found = name.endswith(".localhost")
        _loopback[host] = found
    return found


def _suite_matcher() -> HostMatcher:
    extra = settings.extra_hosts() + settings.tool_hosts()
    matcher = _suite_matchers.get(extra)
    if matcher is None:
        matcher = _suite_matchers[extra] = HostMatcher(PROVIDER_HOSTS + extra)
    return matcher


def _text(host: Any) -> str:
    if isinstance(host, bytes | bytearray):
        return bytes(host).decode("ascii", "replace")
    return str(host)


def _port(port: Any) -> int | None:
    if isinstance(port, bytes | bytearray):
        port = bytes(port).decode("ascii", "replace")
    if isinstance(port, int):
        return port
    if isinstance(port, str):
        return int(port) if port.isdigit() else _SERVICES.get(port.lower())
    return None


# -- the refusal ---------------------------------------------------------------------


def _refuse(deck: Deck | None, message: str) -> CacheMiss | ReplayRefused:
    if deck is None and _outside_any_test():
        return ReplayRefused(message)
    miss = CacheMiss(message)
    if deck is not None:
        deck.book(miss)
    return miss


def _outside_any_test() -> bool:
    """No pytest test is running (pytest sets PYTEST_CURRENT_TEST from setup to teardown),
    no unittest test is on this thread's stack, and no replay run started this process (a
    child's swallowed refusal could turn its parent's test green): a module's import, a
    conftest."""
    if "PYTEST_CURRENT_TEST" in os.environ or _children.parent_replays():
        return False
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_globals.get("__name__") == "unittest.case":
            return False
        frame = frame.f_back
    return True


def _provider_miss(deck: Deck | None, host: str, port: int | None, action: str) -> str:
    where = _address(host, port)
    why = (
        "a provider host (ghostrun.PROVIDER_HOSTS)"
        if _providers(host, port)
        else "listed in hosts= (the session's, configure()'s or GHOSTRUN_HOSTS)"
    )
    return "\n".join(
        [
            f"ghostrun: replay mode never touches the network, and {_caller()} tried to "
            f"{action} {where}, {why}, {_governed(deck)}.",
            *_provider_fix(deck),
        ]
    )


def _provider_fix(deck: Deck | None) -> list[str]:
    """What to do: outside any session, open one; inside one, the call went around the roads."""
    if deck is None:
        return [
            "  It was refused before any byte was sent. To fix it: make this call inside a "
            "session (the ghostrun marker, the ghostrun_session fixture, TestCaseMixin or "
            "`with ghostrun.session()`), which replays it from its cassette. Outside any test "
            "(a module's probe at import) it is a ghostrun.ReplayRefused, which the probe's "
            "`except Exception` can catch.",
        ]
    return [
        "  Only requests sent through a road ghostrun intercepts are replayed (docs/roads.md "
        "lists them); this one went around them, so it was refused before any byte was sent.",
        "  To fix it: send this call through an intercepted client (httpx, httpx2, aiohttp, "
        "...), or keep this test out of replay (GHOSTRUN_MODE=auto records it live).",
    ]


def _blocked_miss(deck: Deck | None, host: str, port: int | None, action: str) -> str:
    source = (
        "this session's block_network=True"
        if deck is not None and deck.arguments.block_network
        else "GHOSTRUN_BLOCK_NETWORK=1 or --ghostrun-block-network"
    )
    listed = _address(host, None if port in (80, 443) else port)
    return "\n".join(
        [
            f"ghostrun: block_network is on ({source}), so in replay mode only loopback "
            f"(127.0.0.0/8, ::1, localhost) may be reached, and {_caller()} tried to {action} "
            f"{_address(host, port)}, {_governed(deck)}.",
            "  It is neither a provider host nor a tool host, so nothing of it was recorded. "
            "If it serves your agent's tools, declare it and record once: "
            f'ghostrun.session(tool_hosts=["{listed}"]) (or the marker\'s tool_hosts=, '
            "GHOSTRUN_TOOL_HOSTS, [tool.ghostrun] tool_hosts): its calls then replay as tool "
            f'steps. If it serves a model: hosts=["{listed}"].',
        ]
    )


def _governed(deck: Deck | None) -> str:
    if deck is None:
        if suite_mode() is None:
            return (
                f"outside any session, where the mode is replay ({mode_source()}); "
                "a test that calls a provider needs a session (the ghostrun marker, the "
                "ghostrun_session fixture, TestCaseMixin or `with ghostrun.session()`)"
            )
        return f"outside any session, with the suite-wide mode replay ({mode_source()})"
    return f"in session {deck.name or '(unnamed)'}"


def _address(host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None else f"{shown}:{port}"


def _caller() -> str:
    """The first frame outside ghostrun and the networking modules: who made this call.

    Across asyncio's task boundaries (`_callers`): a library that connects in a
    task of its own is named, not the code that ran the event loop.
    """
    for frame in _callers(sys._getframe(2)):
        module = _module(frame)
        if not _is_plumbing(module):
            code = frame.f_code
            library = module.partition(".")[0] or "?"
            return f"{library} ({code.co_filename}:{frame.f_lineno}, in {code.co_name})"
    return "code in a worker thread"


def _is_plumbing(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in _PLUMBING)
