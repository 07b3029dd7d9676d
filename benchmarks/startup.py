"""What ghostrun costs a process that does not use it: pytest's plugin, and ``import ghostrun``.

    python benchmarks/startup.py              # 10 paired runs of each
    python benchmarks/startup.py --pairs 20 --json

- **the plugin, unused**: a pytest run of one test that never uses ghostrun, as a
  whole process (its CPU: user + system, from ``getrusage`` of the child), with
  ghostrun's plugin and with ``-p no:ghostrun``, the two run back to back in an
  order that alternates pair by pair. The ratio is the median over the pairs of
  each pair's ratio, with the quartiles. Every other plugin installed in the
  environment loads in both runs alike; so a second, lean pair loads no plugin
  but ghostrun's (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``), where the plugin's share of
  the run is largest: ``-p ghostrun.pytest_plugin`` against ``-p`` of a plugin
  module that does nothing. Both name a plugin with ``-p``, because pytest answers
  any ``-p NAME`` with autoload off by reading every installed distribution's entry
  points (to find one called NAME): about two thirds of the lean gap against a run
  without ``-p``, pytest's cost of the flag, which an installed plugin never pays.
- **import ghostrun** against **import vcr** (vcrpy): a fresh ``python -c "import
  X"`` each, paired the same way, minus a bare ``python -c pass`` run beside them.

The machine's load average is printed beside the figures: on a shared machine
they are noisy, the pairing keeps the ratios honest.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ONE_TEST = "def test_one():\n    assert 1 + 1 == 2\n"


def child_cpu(argv: list[str], cwd: str, **env: str) -> float:
    """CPU seconds (user + system) of one child process run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True, env=_env() | env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _env() -> dict[str, str]:
    """This environment without what would make ghostrun start at once (CI, GHOSTRUN_*),
    and with byte-code caches, as on a user's machine: ``PYTHONDONTWRITEBYTECODE`` (set
    on some CI and sandboxes) would compile every module of every contender each run."""
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("CI", "PYTHONDONTWRITEBYTECODE") and not k.startswith(("GHOSTRUN_", "PYTEST_"))
    }


def paired(a: list[str], b: list[str], pairs: int, cwd: str, **env: str) -> dict[str, Any]:
    """Run ``a`` and ``b`` back to back ``pairs`` times, alternating which goes first."""
    child_cpu(a, cwd, **env), child_cpu(b, cwd, **env)  # warm the file cache, not counted
    times_a, times_b = [], []
    for i in range(pairs):
        if i % 2:
            times_b.append(child_cpu(b, cwd, **env))
            times_a.append(child_cpu(a, cwd, **env))
        else:
            times_a.append(child_cpu(a, cwd, **env))
            times_b.append(child_cpu(b, cwd, **env))
    ratios = [x / y for x, y in zip(times_a, times_b, strict=True)]
    return {"a": times_a, "b": times_b, "ratios": ratios}


def summary(values: list[float]) -> tuple[float, float, float]:
    q1, _, q3 = statistics.quantiles(values, n=4)
    return statistics.median(values), q1, q3


def measure(pairs: int) -> dict[str, Any]:
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="ghostrun-startup-") as project:
        Path(project, "test_one.py").write_text(ONE_TEST)
        Path(project, "noop_plugin.py").write_text('"""A pytest plugin that does nothing."""\n')
        pytest = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"]
        plugin = paired(pytest, [*pytest, "-p", "no:ghostrun"], pairs, project)
        lean = paired(
            [*pytest, "-p", "ghostrun.pytest_plugin"],
            [*pytest, "-p", "noop_plugin"],
            pairs,
            project,
            PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
        )
        bare = [python, "-c", "pass"]
        imports = paired(
            [python, "-c", "import ghostrun"], [python, "-c", "import vcr"], pairs, project
        )
        floor = [child_cpu(bare, project) for _ in range(pairs)]
    return {"pairs": pairs, "plugin": plugin, "lean": lean, "imports": imports, "bare": floor}


def _plugin_line(label: str, pair: dict[str, Any]) -> str:
    med, q1, q3 = summary(pair["ratios"])
    verdict = "met" if med <= 1.05 else "MISSED"
    return (
        f"  {label}: with the plugin {statistics.median(pair['a']) * 1e3:.0f} ms, without "
        f"{statistics.median(pair['b']) * 1e3:.0f} ms; ratio {med:.3f} [{q1:.3f}-{q3:.3f}]"
        f"  (target <= 1.05: {verdict})"
    )


def render(result: dict[str, Any]) -> list[str]:
    imports = result["imports"]
    bare = statistics.median(result["bare"])
    ghostrun = statistics.median(imports["a"]) - bare
    vcr = statistics.median(imports["b"]) - bare
    imed, iq1, iq3 = summary(imports["ratios"])
    return [
        f"  {result['pairs']} pairs, load average {os.getloadavg()[0]:.2f} at the end",
        "  one-test pytest run that never uses ghostrun, whole-process CPU, median of pairs:",
        _plugin_line("every installed plugin (-p no:ghostrun without)", result["plugin"]),
        _plugin_line("lean, autoload off (-p noop_plugin without)", result["lean"]),
        f"  import ghostrun {ghostrun * 1e3:.1f} ms, import vcr {vcr * 1e3:.1f} ms "
        f"(CPU past a bare interpreter's {bare * 1e3:.0f} ms); the two processes' ratio "
        f"{imed:.3f} [{iq1:.3f}-{iq3:.3f}]",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=10, help="paired runs (10)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON line")
    args = parser.parse_args()
    result = measure(args.pairs)
    print(json.dumps(result) if args.json else "\n".join(render(result)))


if __name__ == "__main__":
    main()
