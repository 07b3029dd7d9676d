"""``ghostrun doctor``: each road's library, its installed version, hooked or why not.

A road whose library lacks the hook ghostrun wraps is left unhooked, and its
calls to a provider are refused (`UnsupportedLibrary`); this command says so
before a test does. The command (`_commands._doctor`) asks `_patch.survey`, which checks every
road afresh and installs nothing. docs/roads.md lists the roads and the versions tested.
"""

from __future__ import annotations

from .._intercept._patch import RoadState

__all__ = ["render"]


def render(states: list[RoadState]) -> str:
    """One line per road; a road that is not hooked says why on the next lines."""
    width = max(len(state.road) for state in states)
    lines = []
    for state in states:
        version = state.version or "not installed"
        status = "hooked" if state.hooked else ("-" if state.version is None else "NOT HOOKED")
        lines.append(f"{state.road:<{width}}  {version:<14} {status}")
        if state.version is not None and not state.hooked:
            lines.append(f"{'':<{width}}  {state.why}")
    broken = [s.road for s in states if s.version is not None and not s.hooked]
    if broken:
        lines.append(
            f"{', '.join(broken)}: calls to a provider through "
            f"{'it' if len(broken) == 1 else 'them'} raise ghostrun.UnsupportedLibrary; "
            "the other roads record and replay. See docs/roads.md."
        )
    else:
        lines.append("Every installed road is hooked.")
    return "\n".join(lines)
