"""Code run in a fresh interpreter: for what this process's import state cannot show.

This process's import state is the whole suite's (every library is long
imported), so a test of what gets imported when runs its code in a new one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from typing import Any


def run_fresh(code: str, *, path: Sequence[str] = (), timeout: float = 120) -> Any:
    """Run ``code`` outside any suite-wide mode, ``path`` first on sys.path; its last line's JSON.

    A run that outlasts ``timeout`` fails the test (``TimeoutExpired``) instead of hanging it.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GHOSTRUN_", "PYTEST_"))}
    if path:
        env["PYTHONPATH"] = os.pathsep.join([*path, *sys.path])
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])
