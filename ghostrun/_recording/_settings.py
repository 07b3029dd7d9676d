"""A session's settings: its arguments as written, and as resolved when it is entered.

`Arguments` are kept once, checked where the session is written (`check`);
`resolve` reads them afresh against the configuration and the environment
(which may have changed since) each time the session is entered anew: the
mode, the cassette directory, the hosts and the rest, as one `Settings`.

A session per test resolves the same arguments against the same inputs test
after test, and resolving reads a dozen variables and the project's table each
time: so what `resolve` made is kept, keyed on everything it reads (the
arguments, the variables `READS`, what ``configure()`` and the pytest plugin set,
the project's table as `_project.current` has it now), and made again as soon
as any of these differs. The test's name is read apart (it changes every test).
"""

from __future__ import annotations

import operator
import os
import sys
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, NamedTuple

from .._core import _environ, _project
from .._core._age import MAX_AGE_ENV, max_age_days
from .._core._children import parent_blocks
from .._core._config import (
    block_network_default,
    check_on_stale,
    conversation_fields,
    resolve_mode,
    settings,
)
from .._core._hosts import PROVIDER_HOSTS, HostMatcher, shared_matcher
from .._core._modes import Mode
from .._core._normalize import Normalizer, normalizer
from .._core._telemetry import TELEMETRY_URLS, UrlList, shared_url_list
from .._store._keys import split_field_paths
from ._fork import ENV as FORK_ENV
from ._fork import ForkPlan, current_plan

__all__ = [
    "CONFIGURED",
    "READS",
    "Arguments",
    "Redactor",
    "Settings",
    "check",
    "conversation_paths",
    "current_test_id",
    "resolve",
    "script_name",
]

Redactor = Callable[[dict[str, Any]], dict[str, Any] | None]
"""A session's ``redact=`` hook: edits a cassette entry before it is written, and returns
it (or None, having edited it in place). Exported as ``ghostrun.Redactor``."""


class Arguments(NamedTuple):
    """A session's arguments, checked, kept once: each entry anew resolves them afresh."""

    mode: Mode | str | None
    cassette_dir: str | os.PathLike[str] | None
    name: str | None
    hosts: tuple[str, ...]
    ignore_fields: tuple[str, ...]
    redact: Redactor | None
    ignore_urls: tuple[str, ...]
    block_network: bool | None
    on_unplayed: str | None = None
    max_age: str | int | None = None  # staleness (`_core._age`, docs/staleness.md)
    on_stale: str | None = None  # "warn" (default) or "fail"
    normalize: Any = None  # value shapes left out of the key (`_core._normalize`)
    tool_hosts: tuple[str, ...] = ()  # hosts that serve tools: recorded, but tool steps
    conversation_fields: tuple[str, ...] | None = None  # rebase: the user's own (`_conversation`)


class Settings(NamedTuple):
    """A session's arguments resolved: what it does until it is entered anew."""

    mode: Mode
    cassette_dir: Path
    prefix: str  # the directory with its separator: + key + ".json" is a cassette's path
    name: str | None  # the label its run log and its runs use
    block_network: bool
    ignore: tuple[tuple[str, ...], ...]  # the ``ignore_fields`` paths, split
    max_age: int | None  # in days
    on_stale: str
    normalizer: Normalizer | None
    matcher: HostMatcher  # the provider hosts, the session's own and the tool hosts
    tools: HostMatcher  # the tool hosts alone: their exchanges are tool steps (`_steps`)
    telemetry: UrlList  # answered locally, never recorded
    fork: ForkPlan | None = None  # ``ghostrun fork``/``compare``'s plan (`_fork`): a branch
    conversation: tuple[tuple[str, ...], ...] = ()  # rebase: the user's conversation paths


def check(arguments: Arguments) -> None:
    """Fail where the session is written: a bad setting in the environment, or a path
    of ``ignore_fields`` that can never match. Resolving waits for the first entry.

    Settings resolved from the same inputs passed these checks already (`checked`)."""
    if checked(arguments):
        return
    resolve_mode(arguments.mode)
    if arguments.block_network is None:
        block_network_default()
    split_field_paths(arguments.ignore_fields)
    conversation_paths(arguments.conversation_fields)


def checked(arguments: Arguments) -> bool:
    """Whether settings resolved from ``arguments`` under the inputs of now are kept (`_Kept`):
    then these arguments passed every check, `check`'s and the session's own, already."""
    return _lookup(arguments)[1] is not None


def conversation_paths(explicit: tuple[str, ...] | None) -> tuple[tuple[str, ...], ...]:
    """The user's ``conversation_fields`` in force, split; a bad path names the setting."""
    fields = conversation_fields(explicit)
    try:
        return split_field_paths(fields)
    except ValueError as exc:
        raise ValueError(f"conversation_fields: {exc}".replace("ignore_fields ", "")) from None


def resolve(arguments: Arguments) -> Settings:
    """Read mode, directory and hosts afresh: the environment may have changed.

    What the same inputs gave before is given again (`_Kept`), under this test's name.
    """
    name = arguments.name or current_test_id()
    key, kept = _lookup(arguments)
    if kept is None:
        found = _resolve(arguments, name)
        if key is _UNKEPT:
            return found
        kept = _Kept(_project.current(), found)
        if len(_resolved) >= _KEEP:
            _resolved.clear()
        try:
            _resolved[key] = kept
        except TypeError:  # an argument that is no dict key (a list as normalize=)
            return found
    return kept.named(name)


READS = (
    "GHOSTRUN_MODE",
    "CI",
    "GHOSTRUN_CASSETTE_DIR",
    "GHOSTRUN_HOSTS",
    "GHOSTRUN_TOOL_HOSTS",
    "GHOSTRUN_BLOCK_NETWORK",
    MAX_AGE_ENV,
    "GHOSTRUN_CONVERSATION_FIELDS",
    FORK_ENV,
)
"""The environment variables `resolve` reads (besides ``PYTEST_CURRENT_TEST``, the name):
its results are kept per their values (tests/recording/test_session_cost.py holds to it)."""

CONFIGURED = (
    "mode",
    "suite_mode",
    "cassette_dir",
    "plugin_cassette_dir",
    "hosts",
    "ignore_urls",
    "max_age",
    "on_stale",
    "normalize",
    "conversation_fields",
)
"""What ``configure()`` and the pytest plugin set that `resolve` reads, likewise."""
_configured = operator.attrgetter(*CONFIGURED)
_KEEP = 64  # settings kept: a suite's few session shapes, however many tests
_NAMES = 4096  # names kept per shape: a suite's tests, as its re-runs name them again


class _Kept:
    """Settings resolved from one set of inputs, with the project's table they were read
    from, and under each test's name they were asked for since."""

    __slots__ = ("names", "project", "settings")

    def __init__(self, project: _project.Project, settings: Settings) -> None:
        self.project, self.settings = project, settings
        self.names: dict[str | None, Settings] = {settings.name: settings}

    def named(self, name: str | None) -> Settings:
        found = self.names.get(name)
        if found is None:
            if len(self.names) >= _NAMES:
                self.names.clear()
            found = self.names[name] = self.settings._replace(name=name)
        return found


_resolved: dict[Hashable, _Kept] = {}
_UNKEPT: Hashable = object()  # a key that cannot be kept


def _lookup(arguments: Arguments) -> tuple[Hashable, _Kept | None]:
    """What resolving ``arguments`` depends on but the project's table and the name (`_UNKEPT`
    when it cannot be kept: a forked run's plan counts its steps), and what it gave, if the
    project's table is the one read then."""
    environment = _environ.stored(READS)
    if environment[-1]:
        return _UNKEPT, None
    key = (arguments[:2], arguments[3:], environment, _configured(settings))
    try:
        found = _resolved.get(key)
    except TypeError:  # an argument that is no dict key (a list as normalize=)
        return _UNKEPT, None
    if found is None or found.project is not _project.current():
        return key, None
    return key, found


def _resolve(arguments: Arguments, name: str | None) -> Settings:
    mode = resolve_mode(arguments.mode)
    cassette_dir = settings.resolve_cassette_dir(arguments.cassette_dir)
    explicit = arguments.block_network
    block_network = block_network_default() if explicit is None else bool(explicit)
    block_network = block_network or parent_blocks()  # a blocking parent's child: fail closed
    shapes = settings.resolve_normalize() if arguments.normalize is None else arguments.normalize
    ignored = settings.resolve_ignore_urls() + arguments.ignore_urls
    fork = current_plan()
    if fork is not None:  # a forked run: into its branch, each request as the plan says
        mode, cassette_dir = Mode.AUTO, fork.branch
    tool_hosts = arguments.tool_hosts + settings.tool_hosts()
    return Settings(
        mode=mode,
        cassette_dir=cassette_dir,
        prefix=os.path.join(cassette_dir, ""),
        name=name,
        block_network=block_network,
        ignore=split_field_paths(arguments.ignore_fields + settings.resolve_ignore_fields()),
        max_age=max_age_days(arguments.max_age, settings.resolve_max_age()),
        on_stale=check_on_stale(arguments.on_stale or settings.resolve_on_stale()),
        normalizer=normalizer(shapes),
        matcher=shared_matcher(
            PROVIDER_HOSTS + settings.extra_hosts() + arguments.hosts + tool_hosts
        ),
        tools=shared_matcher(tool_hosts),
        telemetry=shared_url_list(TELEMETRY_URLS + ignored),
        fork=fork,
        conversation=conversation_paths(arguments.conversation_fields),
    )


def script_name() -> str:
    """The running script's file name: the test of a session no name or test id names
    (its trajectory's, its run log entry's). Kept while ``sys.argv[0]`` stays the same."""
    global _script
    first = sys.argv[0] if sys.argv else ""
    if _script[0] is not first:
        _script = (first, os.path.basename(first) if first else "__main__")
    return _script[1]


_script = ("", "__main__")  # sys.argv[0], and its file name


def current_test_id() -> str | None:
    """The running pytest test's id, from the variable pytest sets for it."""
    current = _environ.get("PYTEST_CURRENT_TEST")
    return current.rsplit(" (", 1)[0] if current else None
