"""Suite-wide defaults: ``ghostrun.configure(...)`` and the environment."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ._modes import Mode, parse_mode, running_on_ci
from ._public import public
from ._telemetry import UrlList

__all__ = ["block_network_default", "configure", "resolve_mode", "settings", "suite_mode"]

DEFAULT_CASSETTE_DIR = ".ghostrun_cache"
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

    def resolve_cassette_dir(self, explicit: str | os.PathLike[str] | None = None) -> Path:
        if explicit is not None:
            return _path(explicit)
        if self.cassette_dir is not None:
            return self.cassette_dir
        return Path(os.environ.get("GHOSTRUN_CASSETTE_DIR") or DEFAULT_CASSETTE_DIR)

    def extra_hosts(self) -> tuple[str, ...]:
        env = os.environ.get("GHOSTRUN_HOSTS", "")
        return self.hosts + tuple(h.strip() for h in env.split(",") if h.strip())


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
        if len(_paths) < 256:
            _paths[given] = found
    return found


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def block_network_default() -> bool:
    """``block_network`` for a session that does not say (pytest's flag sets the variable)."""
    value = os.environ.get("GHOSTRUN_BLOCK_NETWORK", "").strip().lower()
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
) -> None:
    """Set suite-wide defaults; pass ``None`` to return one to its default.

    A mode set here is a mode written in code: a session's own ``mode=`` beats
    it, and ``GHOSTRUN_MODE`` (or a pytest flag) beats both. ``ignore_urls``
    extends the telemetry URLs that are never recorded (see ``_telemetry``).
    ``min_judge_kappa`` is the agreement with your labels (``ghostrun calibrate``)
    below which a judged failure warns that the judge, not the app, may be wrong.
    """
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


def _kappa(value: object) -> float:
    """A kappa threshold: a number from -1 to 1."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not -1 <= value <= 1:
        raise ValueError(f"min_judge_kappa must be a number from -1 to 1, got {value!r}")
    return float(value)


def suite_mode() -> Mode | None:
    """The suite-wide switch, which beats any mode written in code.

    A pytest flag, typed on the command line for this run, beats the environment.
    """
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
    return Mode.REPLAY if running_on_ci() else Mode.AUTO
