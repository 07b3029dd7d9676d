"""Run every example offline from the committed cassettes, then print a summary.

    .venv/bin/python examples/run_all.py

Runs the pytest suite, the unittest suite and the prompt-check script, each
in its own process, from the repository root. Every model call is answered
from ``examples/cassettes/``: no key, no network, no cost.

The mode is ``replay`` unless you set ``GHOSTRUN_MODE``: nothing is ever sent.
Semantic checks read cached verdicts only; where none is cached they are
skipped (``GHOSTRUN_ON_JUDGE_UNAVAILABLE=skip``), and the skip message says how
to enable grading. With a judge running (``ollama serve``), run with
``GHOSTRUN_MODE=auto`` once to grade them; their verdicts are then cached under
``examples/cassettes/judge/``. The script also checks that no new cassette was
written: a new one would mean a request went to the network.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASSETTES = ROOT / "examples" / "cassettes"

STEPS = [
    ("pytest", [sys.executable, "-m", "pytest", "examples/pytest", "-q", "-rs"]),
    ("unittest", [sys.executable, "-m", "unittest", "discover", "-s", "examples/unittest", "-v"]),
    ("script", [sys.executable, "-m", "examples.prompt_check"]),
]

# The closing lines of each runner, which the summary repeats.
_CLOSING = re.compile(r"^=* ?\d+ (passed|failed|skipped|errors?)\b|^(OK|FAILED)\b|^prompt_check: ")
_RAN = re.compile(r"^Ran \d+ tests?")
# "3 skipped" (pytest, the script) or "skipped=4" (unittest), never "0 skipped".
_SKIPS = re.compile(r"(?<!\d)[1-9]\d* skipped|skipped=[1-9]")


@dataclass
class Outcome:
    name: str
    returncode: int
    closing: str
    skipped: bool


def main() -> int:
    env = dict(os.environ)
    env.setdefault("GHOSTRUN_MODE", "replay")
    # One run log for the three processes, so `ghostrun check` sees every test.
    env.setdefault("GHOSTRUN_RUN_ID", uuid.uuid4().hex)
    before = _cassettes()
    print(f"ghostrun examples: mode {env['GHOSTRUN_MODE']}, cassettes in {_rel(CASSETTES)}\n")
    outcomes = [_run(name, command, env) for name, command in STEPS]
    new = sorted(_cassettes() - before)
    return _summary(outcomes, new)


def _run(name: str, command: list[str], env: dict[str, str]) -> Outcome:
    shown = " ".join(["python", *command[1:]])
    print(f"==> {name}: {shown}", flush=True)
    done = subprocess.run(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    print(done.stdout, flush=True)
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    closing = next((line for line in reversed(lines) if _CLOSING.match(line)), "(no summary)")
    ran = next((line for line in reversed(lines) if _RAN.match(line)), None)
    closing = closing.strip("= ")
    if ran:  # unittest: "Ran 10 tests in 1.2s" then "OK (skipped=4)"
        closing = f"{ran}: {closing}"
    return Outcome(name, done.returncode, closing, skipped(closing))


def skipped(closing: str) -> bool:
    """Whether a runner's closing line reports at least one skip."""
    return _SKIPS.search(closing) is not None


def _summary(outcomes: list[Outcome], new: list[str]) -> int:
    print("=" * 72)
    print("Summary")
    for outcome in outcomes:
        status = "ok" if outcome.returncode == 0 else "FAILED"
        print(f"  {outcome.name:<9} {status:<7} {outcome.closing}")
    if new:
        print(
            f"\n{len(new)} new cassette(s) written: a request had no cassette and was sent "
            f"for real. Review them: {', '.join(new)}"
        )
    if any(o.skipped for o in outcomes):
        print(
            "\nSemantic checks were skipped: no verdict is cached for them, and replay mode\n"
            "never calls the judge. To grade them: start the judge with `ollama serve` (it\n"
            "keeps running), run `ollama pull llama3.2:3b`, then run this once with\n"
            "GHOSTRUN_MODE=auto (the verdicts are cached under examples/cassettes/judge/)."
        )
    failed = [o.name for o in outcomes if o.returncode != 0]
    print(f"\n{'FAILED: ' + ', '.join(failed) if failed else 'All examples passed.'}")
    return 1 if failed or new else 0


def _cassettes() -> set[str]:
    return {p.name for p in CASSETTES.glob("*.json")}


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
