"""Suite-wide defaults: ``ghostrun.configure(...)``, the environment, and the project's table.

Each setting resolves, strongest first: what code set (a session argument, then
``configure()``), the environment, what the pytest plugin set from its flags and
ini options, the project's ``[tool.ghostrun]`` (`_project`), the default. The mode
has its own order (`resolve_mode`): the suite-wide switch beats the code.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from . import _project
from ._age import parse_max_age
from ._children import parent_blocks, parent_hosts, parent_replays, parent_text
from ._modes import Mode, parse_mode, running_on_ci
from ._normalize import normalizer
from ._public import public
from ._telemetry import UrlList

__all__ = [
    "ON_UNPLAYED",
    "block_network_default",
    "check_on_stale",
    "check_on_unplayed",
    "configure",
    "conversation_fields",
    "mode_source",
    "resolve_mode",
    "resolve_on_unplayed",
    "setting_source",
    "settings",
    "suite_mode",
]

DEFAULT_CASSETTE_DIR = ".ghostrun_cache"
ON_UNPLAYED = ("fail", "warn", "ignore")
"""What a replayed test that left recorded steps unplayed does (``on_unplayed``)."""
_UNSET: Any = object()


@dataclass
class Settings:
    """Defaults set in code. The environment is read at use, so tests may change it."""

    mode: Mode | None = None
    suite_mode: Mode | None = None  # set by the pytest plugin's flags
    cassette_dir: Path | None = None
    hosts: tuple[str, ...] = ()
    ignore_urls: tuple[str, ...] = ()
    judge: Any = None
    on_judge_unavailable: Literal["error", "skip"] | None = None
    min_judge_kappa: float | None = None  # below it, a judged failure says so (_calibrate)
    plugin_cassette_dir: Path | None = None  # pytest's flag or ini: beaten by the environment
    on_unplayed: str | None = None  # configure(), or pytest's ini ghostrun_on_unplayed
    max_age: str | int | None = None  # staleness (`_age`); GHOSTRUN_MAX_AGE beats it
    on_stale: Literal["warn", "fail"] | None = None  # what replaying a stale recording does
    normalize: tuple[Any, ...] = ()  # value shapes left out of the key (`_store._normalize`)
    conversation_fields: tuple[str, ...] | None = None  # rebase: the user's conversation paths

    def resolve_cassette_dir(self, explicit: str | os.PathLike[str] | None = None) -> Path:
        if explicit is not None:
            return _path(explicit)
        if self.cassette_dir is not None:
            return self.cassette_dir
        env = os.environ.get("GHOSTRUN_CASSETTE_DIR")
        if env:
            return _path(env)
        if self.plugin_cassette_dir is not None:
            return self.plugin_cassette_dir
        return _project.current().path("cassette_dir") or Path(DEFAULT_CASSETTE_DIR)

    def extra_hosts(self) -> tuple[str, ...]:
        env = os.environ.get("GHOSTRUN_HOSTS", "")
        project = tuple(_project.current().get("hosts") or ())
        listed = tuple(h.strip() for h in env.split(",") if h.strip())
        return self.hosts + listed + project + parent_hosts()  # a replay parent's too

    def tool_hosts(self) -> tuple[str, ...]:
        """Hosts that serve tools, not models: ``GHOSTRUN_TOOL_HOSTS``, then the project's."""
        env = os.environ.get("GHOSTRUN_TOOL_HOSTS", "")
        project = tuple(_project.current().get("tool_hosts") or ())
        return tuple(h.strip() for h in env.split(",") if h.strip()) + project

    def judge_spec(self) -> tuple[str | None, str | None]:
        """The project's judge, as the CLI names one: (``--judge``, ``--judge-url``)."""
        project = _project.current()
        return project.get("judge"), project.get("judge_url")

    def resolve_on_judge_unavailable(self) -> str:
        if self.on_judge_unavailable is not None:
            return self.on_judge_unavailable
        return str(_project.current().get("on_judge_unavailable") or "error")

    def resolve_min_judge_kappa(self) -> float | None:
        if self.min_judge_kappa is not None:
            return self.min_judge_kappa
        value = _project.current().get("min_judge_kappa")
        return None if value is None else _kappa(value)

    def resolve_ignore_urls(self) -> tuple[str, ...]:
        return self.ignore_urls + tuple(_project.current().get("ignore_urls") or ())

    # The session defaults: code (``configure()``, pytest's ini) beats the table.

    def resolve_normalize(self) -> tuple[Any, ...]:
        return self.normalize or tuple(_project.current().get("normalize") or ())

    def resolve_ignore_fields(self) -> tuple[str, ...]:
        """The table's ``ignore_fields``: added to each session's own (as ``hosts`` are)."""
        return tuple(_project.current().get("ignore_fields") or ())

    def resolve_max_age(self) -> str | int | None:
        """The configured ``max_age`` (``GHOSTRUN_MAX_AGE`` and a session's beat it)."""
        return self.max_age if self.max_age is not None else _project.current().get("max_age")

    def resolve_on_stale(self) -> Literal["warn", "fail"]:
        return self.on_stale or _project.current().get("on_stale") or "warn"


settings = Settings()

_paths: dict[str | os.PathLike[str], Path] = {}


def _path(given: str | os.PathLike[str]) -> Path:
    """``Path(given)``, kept: a session per test names the same directory each time."""
    try:
        found = _paths.get(given)
    except TypeError:  # an unhashable path-like object
        return Path(given)
    if found is None:
        found = Path(given)
        if len(_paths) >= 256:  # a run of many directories (a temporary one a test)
            _paths.clear()
        _paths[given] = found
    return found


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def block_network_default() -> bool:
    """``block_network`` for a session that does not say (pytest's flag sets the variable);
    on in a child of a replay run that had it on (`_children.parent_blocks`)."""
    if parent_blocks():
        return True
    value = os.environ.get("GHOSTRUN_BLOCK_NETWORK", "").strip().lower()
    if not value:
        return bool(_project.current().get("block_network"))
    if value in _TRUE or value in _FALSE:
        return value in _TRUE
    raise ValueError(
        f"invalid GHOSTRUN_BLOCK_NETWORK {value!r}: expected 1 (refuse every non-loopback "
        "connection in replay mode) or 0"
    )


@public
def configure(
    *,
    mode: Mode | str | None = _UNSET,
    cassette_dir: str | os.PathLike[str] | None = _UNSET,
    hosts: Iterable[str] | None = _UNSET,
    ignore_urls: Iterable[str] | None = _UNSET,
    judge: Any = _UNSET,
    on_judge_unavailable: Literal["error", "skip"] | None = _UNSET,
    min_judge_kappa: float | None = _UNSET,
    on_unplayed: str | None = _UNSET,
    max_age: str | int | None = _UNSET,
    on_stale: Literal["warn", "fail"] | None = _UNSET,
    normalize: Iterable[Any] | str | None = _UNSET,
    conversation_fields: Iterable[str] | str | None = _UNSET,
) -> None:
    """Set suite-wide defaults; pass ``None`` to return one to its default.

    A mode set here is a mode written in code: a session's own ``mode=`` beats
    it, and ``GHOSTRUN_MODE`` (or a pytest flag) beats both. ``ignore_urls``
    extends the telemetry URLs that are never recorded (see ``_telemetry``).
    ``min_judge_kappa`` is the agreement with your labels (``ghostrun calibrate``)
    below which a judged failure warns that the judge, not the app, may be wrong.
    ``on_unplayed`` (``"fail"``, ``"warn"``, ``"ignore"``) is what a replayed test
    that used fewer steps than its trajectory does (``GHOSTRUN_ON_UNPLAYED`` beats it).
    ``max_age``, ``on_stale`` and ``normalize`` are the session arguments' defaults
    (docs/staleness.md, docs/normalize.md). ``conversation_fields`` (JSON paths in the
    miss diff's notation) count as the conversation for ``rebase``, beside the built-in
    ones of each provider format (docs/evolving-a-suite.md).
    """
    _project.forget()  # a configure() call also re-reads the project's table
    if mode is not _UNSET:
        settings.mode = None if mode is None else parse_mode(mode)
    if cassette_dir is not _UNSET:
        settings.cassette_dir = None if cassette_dir is None else Path(cassette_dir)
    if hosts is not _UNSET:
        settings.hosts = tuple(hosts or ())
    if ignore_urls is not _UNSET:
        urls = (ignore_urls,) if isinstance(ignore_urls, str) else tuple(ignore_urls or ())
        UrlList(urls)  # an entry that names no path fails here, where it was written
        settings.ignore_urls = urls
    if judge is not _UNSET:
        settings.judge = judge
    if on_judge_unavailable is not _UNSET:
        if on_judge_unavailable not in (None, "error", "skip"):
            raise ValueError(
                f"invalid on_judge_unavailable {on_judge_unavailable!r}: expected 'error' or 'skip'"
            )
        settings.on_judge_unavailable = on_judge_unavailable
    if min_judge_kappa is not _UNSET:
        settings.min_judge_kappa = None if min_judge_kappa is None else _kappa(min_judge_kappa)
    if on_unplayed is not _UNSET:
        settings.on_unplayed = None if on_unplayed is None else check_on_unplayed(on_unplayed)
    if max_age is not _UNSET:
        settings.max_age = None if max_age is None else _checked_age(max_age)
    if on_stale is not _UNSET:
        settings.on_stale = None if on_stale is None else check_on_stale(on_stale)
    if normalize is not _UNSET:
        shapes = () if normalize is None else _listed(normalize)
        normalizer(shapes)  # a bad entry fails here, where it was written, and is not kept
        settings.normalize = shapes
    if conversation_fields is not _UNSET:
        settings.conversation_fields = (
            None if conversation_fields is None else _fields(conversation_fields, "configure")
        )


def check_on_unplayed(value: object, where: str = "on_unplayed") -> str:
    """A valid ``on_unplayed`` value, or a ValueError naming the choices."""
    if value not in ON_UNPLAYED or not isinstance(value, str):
        raise ValueError(f"invalid {where} {value!r}: expected 'fail', 'warn' or 'ignore'")
    return value


def resolve_on_unplayed(explicit: str | None = None) -> str:
    """``on_unplayed`` in force: the session's, else GHOSTRUN_ON_UNPLAYED, else the suite's."""
    if explicit is not None:
        return explicit
    env = os.environ.get("GHOSTRUN_ON_UNPLAYED", "").strip().lower()
    if env:
        return check_on_unplayed(env, "GHOSTRUN_ON_UNPLAYED")
    return settings.on_unplayed or _project.current().get("on_unplayed") or "fail"


_ENVIRONMENT = {
    "on_judge_unavailable": "GHOSTRUN_ON_JUDGE_UNAVAILABLE",
    "on_unplayed": "GHOSTRUN_ON_UNPLAYED",
    "max_age": "GHOSTRUN_MAX_AGE",
    "block_network": "GHOSTRUN_BLOCK_NETWORK",
    "cassette_dir": "GHOSTRUN_CASSETTE_DIR",
    "mode": "GHOSTRUN_MODE",
}


def setting_source(name: str, value: object) -> str:
    """Where the suite-wide ``name`` (in force as ``value``) was set, as a message shows it:
    ``GHOSTRUN_ON_UNPLAYED=warn``, ``on_unplayed = "warn" in [tool.ghostrun] (path)``, or
    ``configure(on_unplayed="warn")`` (which pytest's ini options set too)."""
    env = _ENVIRONMENT.get(name)
    if env and os.environ.get(env, "").strip():
        return f"{env}={os.environ[env].strip()}"
    if getattr(settings, name, None) not in (None, ()):
        return f"configure({name}={value!r})"
    project = _project.current()
    if project.get(name) is not None:
        shown = f'"{value}"' if isinstance(value, str) else repr(value)
        return f"{name} = {shown} in [tool.ghostrun] ({project.source})"
    return f"{name}={value!r}"


def _checked_age(value: str | int) -> str | int:
    parse_max_age(value)  # an invalid age fails here, where it was written
    return value


def check_on_stale(value: str) -> Literal["warn", "fail"]:
    if value not in ("warn", "fail"):
        raise ValueError(f"invalid on_stale {value!r}: expected 'warn' or 'fail'")
    return value  # type: ignore[return-value]


def _listed(value: Any) -> tuple[Any, ...]:
    return (value,) if isinstance(value, str | re.Pattern) else tuple(value)


def conversation_fields(explicit: Iterable[str] | None = None) -> tuple[str, ...]:
    """The paths the user adds to the conversation (``rebase``): the session's, else
    ``configure()``'s, else ``GHOSTRUN_CONVERSATION_FIELDS`` (comma-separated), else the
    project's ``conversation_fields``; each checked where it was written (`_fields`)."""
    if explicit is not None:
        return tuple(explicit)
    if settings.conversation_fields is not None:
        return settings.conversation_fields
    env = os.environ.get("GHOSTRUN_CONVERSATION_FIELDS", "").strip()
    if env:
        return _fields(env.split(","), "GHOSTRUN_CONVERSATION_FIELDS")
    project = _project.current()
    where = f"conversation_fields in {project.source}"
    return _fields(project.get("conversation_fields") or (), where)


def _fields(value: Any, where: str) -> tuple[str, ...]:
    """A list of JSON paths (one string is one path). The notation is checked where a
    session resolves them (``_recording._settings``): this layer does not parse paths."""
    fields = (value,) if isinstance(value, str) else value
    if not all(isinstance(f, str) for f in fields):
        raise ValueError(f"{where}: expected JSON paths as strings, got {value!r}")
    return tuple(f.strip() for f in fields if f.strip())


def _kappa(value: object) -> float:
    """A kappa threshold: a number from -1 to 1."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not -1 <= value <= 1:
        raise ValueError(f"min_judge_kappa must be a number from -1 to 1, got {value!r}")
    return float(value)


def suite_mode() -> Mode | None:
    """The suite-wide switch, which beats any mode written in code.

    A pytest flag, typed on the command line for this run, beats the environment. A
    process started by a replay run is one, whatever it says itself (`_children`).
    """
    if parent_replays():
        return Mode.REPLAY
    if settings.suite_mode is not None:
        return settings.suite_mode
    env = os.environ.get("GHOSTRUN_MODE", "").strip()
    return parse_mode(env, "GHOSTRUN_MODE") if env else None


def resolve_mode(code_mode: Mode | str | None = None) -> Mode:
    """The mode in force for a session whose code asked for ``code_mode``."""
    forced = suite_mode()
    if forced is not None:
        return forced
    if code_mode is not None:
        return parse_mode(code_mode)
    if settings.mode is not None:
        return settings.mode
    table = _table_mode()
    if table is not None:
        return table
    return Mode.REPLAY if running_on_ci() else Mode.AUTO


def _table_mode() -> Mode | None:
    """The mode ``[tool.ghostrun]`` asks for, where it may apply.

    The table is project data a pull request can change, not code a reviewer reads as
    code (DESIGN §2): on CI, where the default is replay, it may ask for replay but never
    for a mode that sends, so editing it can never turn a CI run live. Such a mode is
    ignored with a warning that names the switch that does record on CI.
    """
    project = _project.current()
    value = project.get("mode")
    if value is None:
        return None
    mode = parse_mode(value, f"mode in {project.source}")
    if mode is Mode.REBASE:  # it writes cassettes: chosen for one run, never by the table
        raise ValueError(
            f"mode in {project.source}: 'rebase' is chosen for one run, never by the project's "
            "table (it would rewrite cassettes on every run): run once with "
            "GHOSTRUN_MODE=rebase or pytest --ghostrun-rebase"
        )
    if mode is Mode.REPLAY or not running_on_ci():
        return mode
    _warn_ignored_on_ci(str(project.source), str(value), mode)
    return None


_warned: set[tuple[str, str]] = set()


def _warn_ignored_on_ci(source: str, written: str, mode: Mode) -> None:
    """Once per file and mode a process: every session resolves its mode again."""
    if (source, written) in _warned:
        return
    _warned.add((source, written))
    warnings.warn(
        f"[tool.ghostrun] mode = {written!r} in {source} is ignored on CI "
        f"(CI={os.environ.get('CI', '')!r}): the table is project data a pull request can "
        "change, so on CI the default stays replay and nothing is sent. To record on CI, "
        f"set the suite-wide switch in the job: GHOSTRUN_MODE={mode.value}.",
        UserWarning,
        stacklevel=2,
    )


def mode_source(code_mode: Mode | str | None = None) -> str:
    """Who chose the mode `resolve_mode` gives, in words a miss message can show."""
    if parent_replays():
        return (
            f"chosen by the replay run that started this process ({parent_text()}): "
            "a child of a replay run is a replay run"
        )
    if settings.suite_mode is not None:
        return (
            "chosen by pytest's --ghostrun-record/--ghostrun-replay/--ghostrun-rebase/"
            "--ghostrun-mode"
        )
    if os.environ.get("GHOSTRUN_MODE", "").strip():
        return "chosen by GHOSTRUN_MODE"
    if code_mode is not None:
        return "chosen by the session's mode="
    if settings.mode is not None:
        return "chosen by ghostrun.configure(mode=)"
    project = _project.current()
    if project.get("mode") is not None and (
        not running_on_ci() or parse_mode(project.get("mode")) is Mode.REPLAY
    ):
        return f"chosen by [tool.ghostrun] in {project.source}"
    if running_on_ci():
        return (
            f"chosen by CI={os.environ.get('CI', '')!r}: on CI the default is replay, so CI "
            "never records by accident (a mode in [tool.ghostrun] cannot change that); set "
            "GHOSTRUN_MODE to choose another"
        )
    return "the default"
