"""The project's own settings: the ``[tool.ghostrun]`` table of its ``pyproject.toml``.

One table, read by sessions, the pytest plugin and every CLI command alike, so a
project says once where its cassettes live. It is found by walking up from the
working directory (so ``ghostrun check`` works from any subdirectory); relative
paths in it resolve against the directory of the file that holds it, never the
working directory. Where no ``[tool.ghostrun]`` table exists, a pytest setting
``ghostrun_cassette_dir`` (``pytest.ini``, or ``[tool.pytest.ini_options]``) names
the cassette directory for the CLI too, so ``ghostrun review`` finds what the
suite wrote.

It is the weakest layer above the built-in defaults: a session argument, the
environment and pytest's flags and ini options all beat it (DESIGN §2).

A table's keys are checked when it is read: an unknown key (a typo) is an error
that names the file and the keys there are, and a value of the wrong kind one that
names the key. Every session default that is data can be written here (``normalize``,
``ignore_fields``, ``on_unplayed``, ``max_age``, ``on_stale``...); ``redact`` is code,
so it is not. ``_config.setting_source`` says where a setting in force came from.
Reading is cached per working directory; a found file is re-read only when it changes.
"""

from __future__ import annotations

import configparser
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._age import parse_max_age
from ._normalize import normalizer

__all__ = ["KEYS", "Project", "ProjectConfigError", "current", "forget"]

KEYS: dict[str, str] = {
    "mode": "the default mode: auto, record or replay (GHOSTRUN_MODE and code beat it)",
    "conversation_fields": "JSON paths that count as the conversation for rebase, a list",
    "cassette_dir": "where cassettes live, relative to this pyproject.toml",
    "hosts": "extra provider hosts, a list of strings",
    "tool_hosts": "hosts that serve tools, not models (recorded as tool steps), a list of strings",
    "block_network": "true: in replay, refuse every non-loopback connection",
    "judge": "the judge, as the CLI's --judge: 'ollama:MODEL', 'openai:MODEL', 'pkg.module:name'",
    "judge_url": "the judge's URL (Ollama's host, or an OpenAI-compatible API root)",
    "on_judge_unavailable": "'error' (default) or 'skip'",
    "min_judge_kappa": "a number from -1 to 1 (see ghostrun calibrate)",
    "ignore_urls": "telemetry URLs never recorded, a list of strings",
    "ignore_fields": "JSON paths left out of the match key and the miss diff, a list of "
    "strings ('metadata.trace_id', 'messages[*].name'), added to each session's",
    "normalize": "value shapes left out of the key: 'uuid', 'iso_datetime', 'date', "
    "'unix_ts', 'hex_id' or regexes, a list of strings",
    "on_unplayed": "'fail' (default), 'warn' or 'ignore': a replayed test that used fewer "
    "steps than its trajectory",
    "max_age": "recordings older than this are stale: '90d', '12w', '6m', or a number of days",
    "on_stale": "'warn' (default) or 'fail': what replaying a stale recording does",
}
"""The keys ``[tool.ghostrun]`` accepts, each with what it means (for the error)."""


class ProjectConfigError(ValueError):
    """A ``[tool.ghostrun]`` table that cannot be read: names the file and the fix."""


@dataclass(frozen=True)
class Project:
    """What the project's files say: the table, and the directory its paths are relative to."""

    source: Path | None = None
    root: Path | None = None
    table: Mapping[str, Any] = field(default_factory=dict)

    def get(self, key: str) -> Any:
        return self.table.get(key)

    def path(self, key: str) -> Path | None:
        """A path setting, made absolute against the file that holds it."""
        value = self.table.get(key)
        if value is None or self.root is None:
            return None
        given = Path(value).expanduser()
        return given if given.is_absolute() else self.root / given


_NONE = Project()
# cwd -> (the file found as a string, or None; its mtime_ns when read; the `_round` it was
# last checked in; what it said)
_cache: dict[str, tuple[str | None, int, int, Project]] = {}
_round = 0


def current() -> Project:
    """The project of the working directory: cached, its file looked at again (one stat)
    at the first read after `recheck`, and read again if it changed."""
    cwd = os.getcwd()
    hit = _cache.get(cwd)
    if hit is not None:
        source, stamp, checked, project = hit
        if source is None or checked == _round:
            return project
        if _stamp(source) == stamp:
            _cache[cwd] = (source, stamp, _round, project)
            return project
    found = _find(Path(cwd))
    project = _NONE if found is None else _read(found)
    source = None if found is None else str(found)
    _cache[cwd] = (source, _stamp(source) if source else 0, _round, project)
    return project


def recheck() -> None:
    """The next read looks at the file again. A session calls it as it opens: however many
    settings it resolves from the file, that is one stat per session, not one per setting."""
    global _round
    _round += 1


def forget() -> None:
    """Read the project's files afresh on next use (``configure()`` and tests call it)."""
    _cache.clear()


def _stamp(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


_CANDIDATES = ("pyproject.toml", "pytest.ini")


def _find(start: Path) -> Path | None:
    """The nearest file, walking up, that holds ghostrun's settings; stops at a git root."""
    for directory in (start, *start.parents):
        for name in _CANDIDATES:
            candidate = directory / name
            if candidate.is_file() and _mentions_ghostrun(candidate):
                return candidate
        if (directory / ".git").exists():
            return None
    return None


def _mentions_ghostrun(path: Path) -> bool:
    try:
        return b"ghostrun" in path.read_bytes()
    except OSError:
        return False


def _read(path: Path) -> Project:
    if path.name == "pytest.ini":
        return _from_pytest_ini(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProjectConfigError(f"cannot read {path}: {exc}") from exc
    tool = document.get("tool", {})
    table = tool.get("ghostrun")
    if table is None:  # the CLI still finds the suite's cassettes through pytest's option
        ini = tool.get("pytest", {}).get("ini_options", {})
        found = ini.get("ghostrun_cassette_dir")
        table = {"cassette_dir": found} if isinstance(found, str) else {}
    if not isinstance(table, dict):
        raise ProjectConfigError(f"{path}: [tool.ghostrun] must be a table")
    return Project(path, path.parent, _checked(path, table))


def _from_pytest_ini(path: Path) -> Project:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, configparser.Error, UnicodeDecodeError) as exc:
        raise ProjectConfigError(f"cannot read {path}: {exc}") from exc
    found = parser.get("pytest", "ghostrun_cassette_dir", fallback=None)
    return Project(path, path.parent, {"cassette_dir": found.strip()} if found else {})


def _checked(path: Path, table: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        known = "\n".join(f"  {key}: {meaning}" for key, meaning in KEYS.items())
        raise ProjectConfigError(
            f"{path}: [tool.ghostrun] has no setting {', '.join(map(repr, unknown))}; "
            f"the settings are:\n{known}"
        )
    for key, value in table.items():
        check = _TYPES.get(key)
        if check is not None and not check(value):
            raise ProjectConfigError(f"{path}: [tool.ghostrun] {key}: {KEYS[key]}, got {value!r}")
    return dict(table)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


_TYPES: dict[str, Callable[[object], bool]] = {
    "mode": lambda v: isinstance(v, str),
    "cassette_dir": lambda v: isinstance(v, str),
    "hosts": _strings,
    "tool_hosts": _strings,
    "conversation_fields": _strings,
    "ignore_urls": _strings,
    "block_network": lambda v: isinstance(v, bool),
    "judge": lambda v: isinstance(v, str),
    "judge_url": lambda v: isinstance(v, str),
    "on_judge_unavailable": lambda v: v in ("error", "skip"),
    "min_judge_kappa": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "ignore_fields": _strings,
    "normalize": lambda v: _strings(v) and _valid(normalizer, v),
    "on_unplayed": lambda v: v in ("fail", "warn", "ignore"),
    "max_age": lambda v: (
        isinstance(v, str | int) and not isinstance(v, bool) and _valid(parse_max_age, v)
    ),
    "on_stale": lambda v: v in ("warn", "fail"),
}


def _valid(parse: Callable[[Any], object], value: object) -> bool:
    """Whether the session's own parser of a setting accepts ``value``."""
    try:
        parse(value)
    except ValueError:
        return False
    return True
