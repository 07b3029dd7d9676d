"""Build hook: ship ``ghostrun_replay_guard.pth`` at the root of site-packages.

Python runs the file's one line at every start-up. When ``GHOSTRUN_MODE`` is
``replay`` it imports ghostrun, which installs the replay guard for the whole
process (DESIGN §1, "The guard"), so child processes that never import ghostrun
themselves (multiprocessing ``spawn``, ``subprocess`` running ``python``) are
guarded too; otherwise it costs one environment look-up. hatchling's
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
