"""Sessions: what users open, and which one governs a request.

The innermost open session of the current thread *and* async task governs
(a ContextVar holds each context's stack; asyncio and trio give every task its
own copy). A thread with no session of its own (a worker pool) falls back to
the global stack: the most recently opened session still open.

A `Session` is the user's handle: its arguments, read back as resolved, and
its results (``replayed``, ``recorded``, ``passed_through``, ``misses``).
What it does with a request is its `Deck`'s (``_deck``): the engine, the guard
and the run log find the governing one with `current_deck`.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from .._core import _project
from .._core._age import parse_max_age
from .._core._config import check_on_stale, check_on_unplayed, resolve_on_unplayed
from .._core._exceptions import CacheMiss
from .._core._modes import Mode, parse_mode
from .._core._normalize import normalizer
from .._core._public import public
from .._core._telemetry import UrlList
from ._deck import Deck
from ._settings import Arguments, Redactor, check, checked

__all__ = [
    "Session",
    "bypass_interception",
    "current_deck",
    "current_session",
    "passing_through",
    "session",
]

F = TypeVar("F", bound=Callable[..., Any])

_context_stack: ContextVar[tuple[Session, ...]] = ContextVar("ghostrun_sessions", default=())
_bypass: ContextVar[bool] = ContextVar("ghostrun_bypass", default=False)
_global_stack: list[Session] = []
_global_lock = threading.Lock()


def current_session() -> Session | None:
    """The session that governs a request made here and now, if any."""
    for candidate in reversed(_context_stack.get()):
        if candidate._deck.depth:
            return candidate
    stack = _global_stack
    return stack[-1] if stack else None


def current_deck() -> Deck | None:
    """The governing session's deck: `current_session` without the call, for the hot path."""
    for candidate in reversed(_context_stack.get()):
        deck = candidate._deck
        if deck.depth:
            return deck
    stack = _global_stack
    return stack[-1]._deck if stack else None


def passing_through() -> bool:
    """True inside `bypass_interception`: requests made here are not intercepted."""
    return _bypass.get()


@contextlib.contextmanager
def bypass_interception() -> Iterator[None]:
    """Requests made inside go straight to the network (the judge's own traffic)."""
    token = _bypass.set(True)
    try:
        yield
    finally:
        _bypass.reset(token)


@public
class Session:
    """Record and replay the provider requests made inside it.

    Use it as ``with``, ``async with`` or a decorator. After (or during) the
    block it reports ``replayed``, ``recorded``, ``passed_through`` and
    ``misses``; ``mode``, ``cassette_dir``, ``name`` and the other arguments
    read back as they were resolved when it was last entered.
    """

    def __init__(
        self,
        *,
        mode: Mode | str | None = None,
        cassette_dir: str | os.PathLike[str] | None = None,
        name: str | None = None,
        hosts: Iterable[str] = (),
        ignore_fields: Iterable[str] = (),
        redact: Redactor | None = None,
        ignore_urls: Iterable[str] = (),
        block_network: bool | None = None,
        on_unplayed: str | None = None,
        max_age: str | int | None = None,
        on_stale: str | None = None,
        normalize: Any = None,
        tool_hosts: Iterable[str] = (),
        conversation_fields: Iterable[str] | None = None,
    ) -> None:
        # In the fields' order (positional: half the cost of 14 keywords, paid every test).
        arguments = Arguments(
            mode,
            cassette_dir,
            name,
            hosts if type(hosts) is tuple else _strings(hosts)[0],
            ignore_fields if type(ignore_fields) is tuple else _strings(ignore_fields)[0],
            redact,
            ignore_urls if type(ignore_urls) is tuple else _strings(ignore_urls)[0],
            block_network,
            on_unplayed,
            max_age,
            on_stale,
            normalize,
            tool_hosts if type(tool_hosts) is tuple else _strings(tool_hosts)[0],
            None if conversation_fields is None else _strings(conversation_fields)[0],
        )
        # Arguments whose settings are kept were checked (a suite's every test after its
        # first); others fail here, where they were written.
        known = checked(arguments)
        if not known:
            _check(arguments)
        self._deck = Deck(arguments, checked=known)

    # -- what users read -----------------------------------------------------

    @property
    def replayed(self) -> int:
        """Requests (and WebSocket conversations) answered from a cassette."""
        return self._deck.replayed

    @property
    def recorded(self) -> int:
        """Responses (and conversations) sent for real and written."""
        return self._deck.recorded

    @property
    def rebased(self) -> int:
        """Rebase mode: requests the recorded step answered, written under their new key
        (counted in ``replayed`` too)."""
        return self._deck.counts.rebased

    @property
    def passed_through(self) -> int:
        """Requests that went out untouched: their host is not a provider host."""
        return self._deck.passed_through

    @property
    def misses(self) -> list[CacheMiss]:
        """Every `CacheMiss` raised in the session, in order."""
        return self._deck.misses

    @property
    def mode(self) -> Mode:
        return self._deck.mode

    @property
    def cassette_dir(self) -> Path:
        return self._deck.cassette_dir

    @property
    def name(self) -> str | None:
        """The label its run log uses: ``name=``, else the running test's id."""
        return self._deck.name

    @property
    def block_network(self) -> bool:
        return self._deck.block_network

    @property
    def hosts(self) -> tuple[str, ...]:
        return self._deck.arguments.hosts

    @property
    def tool_hosts(self) -> tuple[str, ...]:
        """Hosts this session was told serve tools (``tool_hosts=``): their calls are tool steps."""
        return self._deck.arguments.tool_hosts

    @property
    def ignore_fields(self) -> tuple[str, ...]:
        return self._deck.arguments.ignore_fields

    @property
    def ignore_urls(self) -> tuple[str, ...]:
        return self._deck.arguments.ignore_urls

    @property
    def redact(self) -> Redactor | None:
        return self._deck.arguments.redact

    @property
    def on_unplayed(self) -> str:
        """What a replay that left recorded steps unplayed does: fail, warn or ignore."""
        return resolve_on_unplayed(self._deck.arguments.on_unplayed)

    def __repr__(self) -> str:
        return (
            f"<ghostrun.Session {self.name + ' ' if self.name else ''}mode={self.mode.value} "
            f"replayed={self.replayed} recorded={self.recorded} misses={len(self.misses)}>"
        )

    # -- entering and leaving ------------------------------------------------

    def __enter__(self) -> Session:
        _project.recheck()  # a changed [tool.ghostrun] counts from the next session on
        self._deck.enter()
        _context_stack.set((*_context_stack.get(), self))
        with _global_lock:
            _global_stack.append(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack = _context_stack.get()
        if stack and stack[-1] is self:  # the innermost: most often
            _context_stack.set(stack[:-1])
        else:
            _context_stack.set(_without_last(stack, self))
        with _global_lock:
            if _global_stack and _global_stack[-1] is self:  # the innermost: most often
                _global_stack.pop()
            else:
                _global_stack.reverse()
                _global_stack.remove(self)
                _global_stack.reverse()
        self._deck.exit(exc)

    async def __aenter__(self) -> Session:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    def __call__(self, fn: F) -> F:
        """Decorate a function: each call runs in a fresh session with these arguments."""
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                async with self._fresh():
                    return await fn(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self._fresh():
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def _fresh(self) -> Session:
        return Session(**self._deck.arguments._asdict())


session = Session
"""``ghostrun.session(...)``: the spelling the docs use for `Session`."""


def _strings(*arguments: Iterable[str]) -> list[tuple[str, ...]]:
    """Arguments that each take several strings, or one, as tuples."""
    return [
        items if type(items) is tuple else (items,) if isinstance(items, str) else tuple(items)
        for items in arguments
    ]


def _check(arguments: Arguments) -> None:
    """A session's arguments checked where it is written: each fails with its own error."""
    if arguments.mode is not None:
        parse_mode(arguments.mode)
    if arguments.ignore_urls:
        UrlList(arguments.ignore_urls)  # an entry that names no path fails
    if arguments.on_unplayed is not None:
        check_on_unplayed(arguments.on_unplayed)
    if arguments.max_age is not None:
        parse_max_age(arguments.max_age)
    if arguments.on_stale is not None:
        check_on_stale(arguments.on_stale)
    if arguments.normalize is not None:
        normalizer(arguments.normalize)
    check(arguments)


def _without_last(stack: tuple[Session, ...], item: Session) -> tuple[Session, ...]:
    for i in range(len(stack) - 1, -1, -1):
        if stack[i] is item:
            return stack[:i] + stack[i + 1 :]
    return stack
