"""pytest-recording's marker, fixture and flag, for a suite moved over without it.

A suite that used pytest-recording marks its tests ``@pytest.mark.vcr``, asks for
the ``vcr`` fixture (``vcr.play_count``) and reads ``--block-network``. Once
pytest-recording is uninstalled, each would be an unknown marker, a missing
fixture or an unknown option. The pytest plugin registers this module only when
pytest-recording is not installed (with it, all three stay its own):

- ``@pytest.mark.vcr`` runs the test in a ghostrun session, as
  ``@pytest.mark.ghostrun`` does; its ``record_mode=`` becomes the session's
  mode (vcrpy's names, `VCR_ALIASES`; ``once`` is ``auto``). Its positional
  cassette names mean nothing here: ghostrun keeps one file per request.
- the ``vcr`` fixture is a `Cassette` view of the test's session.
- ``--block-network`` is ``--ghostrun-block-network`` (the plugin adds it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from .._core._modes import VCR_ALIASES, Mode

if TYPE_CHECKING:
    from .._recording._session import Session

__all__ = ["MARKER_HELP", "Cassette", "pytest_collection_modifyitems", "vcr"]

MARKER_HELP = (
    "vcr(record_mode=...): pytest-recording's marker, run by ghostrun as its own "
    "ghostrun marker (pytest-recording is not installed)"
)


def mode_of(record_mode: str) -> Mode:
    """A vcrpy record mode as the ghostrun mode that does the same (``once``: ``auto``,
    which records what is missing, as ``once`` does for a missing cassette file)."""
    if record_mode == "once":
        return Mode.AUTO
    if record_mode in VCR_ALIASES:
        return VCR_ALIASES[record_mode]
    raise pytest.UsageError(
        f"@pytest.mark.vcr(record_mode={record_mode!r}): vcrpy's record modes are once, "
        f"{', '.join(VCR_ALIASES)}"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test marked ``vcr`` (and not ``ghostrun`` too) gets the ghostrun marker."""
    for item in items:
        marker = item.get_closest_marker("vcr")
        if marker is None or item.get_closest_marker("ghostrun") is not None:
            continue
        record_mode = marker.kwargs.get("record_mode")
        kwargs = {"mode": mode_of(record_mode)} if record_mode else {}
        item.add_marker(pytest.mark.ghostrun(**kwargs))


class Cassette:
    """What a pytest-recording test reads from its ``vcr`` fixture, from the ghostrun session.

    ``play_count``: responses replayed so far; ``all_played``: nothing recorded and
    nothing missed; ``write_protected``: the session never records (replay).
    """

    def __init__(self, session: Session) -> None:
        self._session = session

    @property
    def play_count(self) -> int:
        return self._session.replayed

    @property
    def all_played(self) -> bool:
        return not self._session.recorded and not self._session.misses

    @property
    def write_protected(self) -> bool:
        return self._session.mode is Mode.REPLAY

    @property
    def session(self) -> Session:
        """The ghostrun session itself, for everything else."""
        return self._session

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"the vcr fixture under ghostrun has play_count, all_played, write_protected and "
            f"session, not {name!r}: use the ghostrun_session fixture (docs/coming-from-vcrpy.md)"
        )


@pytest.fixture
def vcr(ghostrun_session: Session) -> Cassette:
    """pytest-recording's fixture: the test's ghostrun session, seen as its cassette."""
    return Cassette(ghostrun_session)
