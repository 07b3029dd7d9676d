"""This package's distribution name, and the other project that shares its import name.

ghostrun is published as ``ghostrun-replay``: the name ``ghostrun`` on the package
index belongs to another project, which installs files into the same ``ghostrun``
import package. Both in one environment overwrite each other's files, so where the
other one is installed the pytest header and the CLI say so, with the fix.
"""

from __future__ import annotations

import importlib.metadata

__all__ = ["DISTRIBUTION", "foreign_install"]

DISTRIBUTION = "ghostrun-replay"
"""What ``pip install`` takes: ``import ghostrun`` and the ``ghostrun`` command are unchanged."""

SUMMARY = (
    "Deterministic, free, offline tests for LLM applications: record and replay at the HTTP "
    "layer, assert on meaning."
)
"""pyproject's description: a ``ghostrun`` distribution with another is the other project
(this project's own checkouts were installed as ``ghostrun`` before the rename)."""

_FOREIGN = "ghostrun"


def foreign_install() -> str | None:
    """A warning when the other project's ``ghostrun`` distribution is installed, else None."""
    try:
        metadata = importlib.metadata.metadata(_FOREIGN)
    except importlib.metadata.PackageNotFoundError:
        return None
    if metadata["Summary"] == SUMMARY:
        return None
    version = metadata["Version"]
    return (
        f"another project's package 'ghostrun' {version} is installed in this environment: "
        f"it writes into the same 'ghostrun' import package as {DISTRIBUTION}, so one "
        f"overwrites the other. Fix: pip uninstall -y ghostrun && pip install "
        f"--force-reinstall {DISTRIBUTION}"
    )
