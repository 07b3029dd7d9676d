"""The loopback provider simulator in a process of its own (W4's upstream).

Prints its base URL, then answers each ``cpu`` line on its standard input
with the CPU seconds it has used (all threads), so the runner can add the
simulator's share of a W4 repetition; stops when its standard input closes.
In its own process it does not compete with the measured client for the GIL.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from simulator import ProviderSimulator


def main() -> None:
    with ProviderSimulator() as sim:
        print(sim.base_url, flush=True)
        for line in sys.stdin:
            if line.strip() == "cpu":
                print(time.process_time(), flush=True)


if __name__ == "__main__":
    main()
