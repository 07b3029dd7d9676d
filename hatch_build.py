"""Build hook: ship ``ghostrun_replay_guard.pth`` at the root of site-packages.

Python runs the file's one line at every start-up. When a replay run started
this process (``GHOSTRUN_REPLAY_PARENT``, which every replay run exports while
it lasts: ``ghostrun._core._children``) or ``GHOSTRUN_MODE`` reads as replay
(``replay``, vcrpy's ``none``), it imports ghostrun, which installs the replay
guard for the whole process (DESIGN §1, "The guard"), so child processes that
never import ghostrun themselves (multiprocessing ``spawn``, ``subprocess``
running ``python``, a tool server) are guarded too; otherwise it costs two
environment look-ups (0.3 µs more than the one it cost before; a start-up of
``python -c pass`` is about 30 ms). hatchling's
``force-include`` setting alone skips editable installs, so the hook adds the
file to both kinds of wheel.
"""

from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

GUARD = "ghostrun_replay_guard.pth"


class ReplayGuardHook(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        key = "force_include_editable" if version == "editable" else "force_include"
        build_data.setdefault(key, {})[GUARD] = GUARD
