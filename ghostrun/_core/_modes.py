"""Modes and their names. Which one is in force is `_config.resolve_mode`'s to say (it
reads the settings); its precedence, strongest first: the suite-wide switch (pytest's
``--ghostrun-record``/``--ghostrun-replay``, then ``GHOSTRUN_MODE``), the mode written in
code (``session(mode=...)``, then ``configure(mode=...)``), the CI default
(``replay`` when ``CI`` is set), and finally ``auto``.

vcrpy's record-mode names are accepted wherever a mode is (``mode=``,
``GHOSTRUN_MODE``, ``--ghostrun-mode``) where their meaning is ghostrun's:
``none`` is ``replay``, ``all`` is ``record``, ``new_episodes`` is ``auto``.
``once`` (record a cassette only while its file does not exist) has no
equivalent, since ghostrun keeps one file per request: it is an error that
says which mode to pick instead.
"""

from __future__ import annotations

import enum
import os

from ._public import public

__all__ = ["VCR_ALIASES", "Mode", "parse_mode", "running_on_ci"]


@public
class Mode(enum.StrEnum):
    """What a session does with each provider request."""

    AUTO = "auto"
    """Replay what is recorded; send and record what is not."""

    RECORD = "record"
    """Always send for real and (re-)record."""

    REPLAY = "replay"
    """Never touch the network: replay, or raise ``CacheMiss``."""

    REBASE = "rebase"
    """Never touch the network: replay; a request with no recording is compared with the
    recorded step at its place (``_recording._rebase``), and if the two differ only
    outside the conversation (``_recording._conversation``), the recorded answer is
    replayed and written under the new request's key; else ``CacheMiss``. For after an
    SDK upgrade or an import; chosen for one run, never by the project's table."""

    @property
    def offline(self) -> bool:
        """Whether the mode never touches the network (``replay``, ``rebase``): the guard
        holds, and what is not recorded is refused instead of sent."""
        return self is Mode.REPLAY or self is Mode.REBASE

    def __str__(self) -> str:
        return self.value


_BY_VALUE: dict[object, Mode] = {mode.value: mode for mode in Mode}
VCR_ALIASES = {"none": Mode.REPLAY, "all": Mode.RECORD, "new_episodes": Mode.AUTO}
"""vcrpy's record modes that mean what a ghostrun mode means."""

_VCR_ONCE = (
    "vcrpy's 'once' (record a cassette file only while it does not exist) has no ghostrun "
    "equivalent, because ghostrun keeps one file per request: use 'auto' to record only the "
    "requests that have no cassette yet, or 'replay' to never record"
)


def parse_mode(value: Mode | str, source: str = "mode") -> Mode:
    """Turn a user's string into a `Mode`, or a ValueError that lists the valid ones."""
    if isinstance(value, Mode):
        return value
    found = _BY_VALUE.get(value)  # a session per test names its mode: the quick answer first
    if found is not None:
        return found
    name = str(value).strip().lower()
    try:
        return Mode(name)
    except ValueError:
        pass
    alias = VCR_ALIASES.get(name.replace("-", "_"))
    if alias is not None:
        return alias
    if name == "once":
        raise ValueError(f"invalid {source} {value!r}: {_VCR_ONCE}") from None
    valid = ", ".join(repr(m.value) for m in Mode)
    aliases = ", ".join(f"{k!r} ({v.value})" for k, v in VCR_ALIASES.items())
    raise ValueError(
        f"invalid {source} {value!r}: expected one of {valid} (vcrpy's {aliases} work too)"
    ) from None


def running_on_ci() -> bool:
    """True when ``CI`` is set to anything but empty, ``0`` or ``false``."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false")
