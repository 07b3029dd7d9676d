"""W4 in one process, step by step: what each step of recording a request costs.

    python benchmarks/record_anatomy.py                       # 20 rounds of 100 calls
    python benchmarks/record_anatomy.py --blocks 30 --calls 200

W1's calls are sent through the openai SDK to the loopback simulator (in a
process of its own, as in ``run.py``, whose CPU time is added), without
ghostrun and with ghostrun recording, in blocks of calls taken in turn, the
order rotating every round, as ``inprocess.py`` does for W1. Between the two,
partial recordings run ghostrun's own code up to a step and no further: the
session with nothing written; + the cassette entry built and redacted; + the
file created (without any ``fsync``); + the file synced; then the whole write,
the directory synced for the new name. Each row's excess over the row above is
that step's cost, its side effects on the SDK's own work included (each block
is timed with its session's open and close: the directory is synced at the
close, DESIGN §3): the
steps that enter the kernel add user time too, not only system time (while a
``fsync`` blocks, another process runs, and the SDK's next call may find the
caches cold).

Each ghostrun block records into a new directory, as a first recording does,
and every directory is kept until the end: removing one frees its inodes, and
on a file system without a journal (this project's machine) ext4 steps over
every recently freed inode for each file it makes afterwards, so the blocks
after a removal would pay for it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workloads as wl  # noqa: E402
from run import Row, Simulator, _table, fmt_time, load_average  # noqa: E402

PLAIN = "without ghostrun"
STEPS = (
    "session, nothing written",
    "+ entry built and redacted",
    "+ file created, no fsync",
    "+ file synced",
)
WHOLE = "ghostrun record (+ dir synced)"  # once per session, at its close (DESIGN §3)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--blocks", type=int, default=20, help="rounds of blocks (20)")
    parser.add_argument("--calls", type=int, default=100, help="calls per block (100)")
    args = parser.parse_args()
    began = load_average()
    rows = measure(args.blocks, args.calls)
    print(f"W4 step by step, {args.blocks} rounds of {args.calls} calls (openai on httpx2)")
    print(f"load average at the start {began}, at the end {load_average()}")
    print("\n".join(render(rows)))


def measure(blocks: int, calls: int) -> list[Row]:
    """Every variant's CPU seconds per call (client + simulator), block by block."""
    import openai
    from contenders import chat

    names = [PLAIN, *STEPS, WHOLE]
    simulator = Simulator()
    root = Path(tempfile.mkdtemp(prefix="ghostrun-record-anatomy-"))
    try:
        client = openai.OpenAI(
            base_url=simulator.base_url + "/v1", api_key=wl.API_KEY, max_retries=0
        )
        contexts = _contexts(root)
        prompts = [wl.w1_prompt(i) for i in range(calls)]
        rows = {name: Row("w4", "httpx2", name, {}) for name in names}
        for r in range(-1, blocks):  # round -1 warms up, 20 calls each
            batch = prompts[:20] if r < 0 else prompts
            for name in names[r % len(names) :] + names[: r % len(names)]:
                s0, c0, t0 = simulator.cpu(), time.process_time(), time.perf_counter()
                with contexts[name]():  # timed with its session: the close syncs the directory
                    wrong = chat(client, batch)
                t1, c1, s1 = time.perf_counter(), time.process_time(), simulator.cpu()
                if r >= 0:
                    n = len(batch)
                    run = {"rep": r, "cpu": (c1 - c0 + s1 - s0) / n, "wall": (t1 - t0) / n}
                    rows[name].runs.append({**run, "calls": n, "wrong": wrong})
        return list(rows.values())
    finally:
        simulator.stop()
        shutil.rmtree(root, ignore_errors=True)


def _contexts(root: Path) -> dict[str, Callable[[], contextlib.AbstractContextManager[Any]]]:
    """For each variant, a context in which ghostrun records only up to its step."""
    import ghostrun
    import ghostrun._core._files as files
    from ghostrun._recording._deck import Deck

    commit, fsync, sync_dir = Deck.commit, os.fsync, files._sync_dir
    directories = (str(root / f"{n}") for n in range(1_000_000))

    def nothing(self: Any, info: Any, recording: Any) -> None:
        return None

    def entry_only(self: Any, info: Any, recording: Any) -> None:
        self._entry(info, recording)

    def recording(
        committing: Callable[..., None] = commit, synced: bool = True, dir_synced: bool = True
    ) -> Callable[[], contextlib.AbstractContextManager[None]]:
        @contextlib.contextmanager
        def context() -> Iterator[None]:
            Deck.commit = committing
            os.fsync = fsync if synced else (lambda fd: None)
            files._sync_dir = sync_dir if dir_synced else (lambda directory: None)
            try:
                with ghostrun.session(
                    mode="record", cassette_dir=next(directories), hosts=wl.LOOPBACK
                ):
                    yield
            finally:
                Deck.commit, os.fsync, files._sync_dir = commit, fsync, sync_dir

        return context

    return {
        PLAIN: contextlib.nullcontext,
        STEPS[0]: recording(nothing),
        STEPS[1]: recording(entry_only),
        STEPS[2]: recording(synced=False, dir_synced=False),
        STEPS[3]: recording(dir_synced=False),
        WHOLE: recording(),
    }


def render(rows: list[Row]) -> list[str]:
    plain = rows[0]
    table = [["variant", "CPU per call", "x without", "quartiles", "extra per call", "wall x"]]
    for row in rows:
        q1, q3 = row.quartiles(plain)
        table.append(
            [
                row.contender,
                fmt_time(row.median()),
                f"{row.ratio(plain):.3f}x",
                "" if row is plain else f"{q1:.3f} - {q3:.3f}",
                f"{row.delta(plain) * 1e6:+.0f} µs",
                f"{row.ratio(plain, 'wall'):.3f}x",
            ]
        )
    wrong = sum(run["wrong"] for row in rows for run in row.runs)
    return [*_table(table), f"    wrong answers: {wrong}"]


if __name__ == "__main__":
    main()
