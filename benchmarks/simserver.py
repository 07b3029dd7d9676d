"""The loopback provider simulator in a process of its own (W4's upstream).

Prints its base URL, serves until its standard input closes, then stops. In
its own process it does not compete with the measured client for the GIL.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from simulator import ProviderSimulator  # noqa: E402


def main() -> None:
    with ProviderSimulator() as sim:
        print(sim.base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
