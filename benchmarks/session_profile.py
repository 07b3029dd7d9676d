"""What one test costs ghostrun, counted and profiled: an empty session, and a 1-call replay.

    python benchmarks/session_profile.py                 # counts, and cProfile's top rows
    python benchmarks/session_profile.py --sessions 2000 --top 25

The per-test table of ``run.py`` times a test as a whole (open the session,
make the calls, close it); this shows where an empty session's time goes
(open + close, nothing inside) and a session replaying one openai chat call,
through the real SDK, with ``MockTransport`` behind it that raises if ever
reached. Besides cProfile's rows (deterministic profiling inflates small
calls: read its shares, not its times) it counts per session the work that
should not repeat between sessions: ``inspect.signature`` calls (aiohttp's
hook check), host patterns parsed (``_hosts._pattern``), files opened and
``fsync`` calls, and the Python function calls per session (cProfile's count:
deterministic, unlike times on a shared machine). CPU time per session without
the profiler is printed too.
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import io
import os
import pstats
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import workloads as wl  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=1000, help="sessions per variant (1000)")
    parser.add_argument("--top", type=int, default=15, help="cProfile rows to show (15)")
    args = parser.parse_args()
    import httpx2
    import openai
    from simulator import ProviderSimulator

    import ghostrun
    from ghostrun._core import _hosts
    from ghostrun._intercept import _patch

    with tempfile.TemporaryDirectory(prefix="ghostrun-session-profile-") as data:
        cassettes = os.path.join(data, "cassettes")
        with ProviderSimulator() as sim:
            base_url = sim.base_url + "/v1"
            live = openai.OpenAI(base_url=base_url, api_key=wl.API_KEY, max_retries=0)
            with ghostrun.session(
                mode="record", cassette_dir=cassettes, hosts=wl.LOOPBACK, name="one-call"
            ):
                _chat(live)

        def unreachable(request: Any) -> Any:
            raise AssertionError("not intercepted")

        client = openai.OpenAI(
            base_url=base_url,
            api_key=wl.API_KEY,
            max_retries=0,
            http_client=httpx2.Client(transport=httpx2.MockTransport(unreachable)),
        )

        # Each session is a test, its name reused from round to round as a re-run suite
        # does (a re-run is never the test's next session: nothing is written).
        def empty() -> None:
            with ghostrun.session(
                mode="replay", cassette_dir=cassettes, hosts=wl.LOOPBACK, name="empty"
            ):
                pass

        def one_call() -> None:
            with ghostrun.session(
                mode="replay", cassette_dir=cassettes, hosts=wl.LOOPBACK, name="one-call"
            ):
                _chat(client)

        variants: list[tuple[str, Callable[[], None], bool]] = [
            ("empty session", empty, False),
            ("empty session, under a runner's lease", empty, True),
            ("1-call replay", one_call, False),
            ("1-call replay, under a runner's lease", one_call, True),
        ]
        for label, variant, leased in variants:
            # The lease the pytest plugin (and the unittest mixin, per class) holds.
            release = _patch.lease() if leased else None
            for _ in range(20):  # warm
                variant()
            counts = _counted(variant, args.sessions, _hosts)
            c0 = time.process_time()
            for _ in range(args.sessions):
                variant()
            cpu = (time.process_time() - c0) / args.sessions
            print(f"{label}: {cpu * 1e6:.0f} µs CPU per session (no profiler), per session:")
            print("  " + ", ".join(f"{name} {n / args.sessions:g}" for name, n in counts.items()))
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(args.sessions):
                variant()
            profile.disable()
            out = io.StringIO()
            stats = pstats.Stats(profile, stream=out)
            calls = stats.total_calls / args.sessions  # type: ignore[attr-defined]
            print(f"  Python function calls per session (deterministic): {calls:.0f}")
            stats.sort_stats("tottime").print_stats(args.top)
            print("\n".join("  " + line for line in out.getvalue().splitlines()[4:] if line))
            print()
            if release is not None:
                release()


def _chat(client: Any) -> None:
    prompt = wl.w1_prompt(0)
    reply = client.chat.completions.create(
        model=wl.MODEL, messages=[{"role": "user", "content": prompt}]
    )
    assert reply.choices[0].message.content == wl.expected_reply(prompt)


def _counted(variant: Callable[[], None], sessions: int, hosts: Any) -> Counter[str]:
    """Run the sessions with the counted functions wrapped; how often each was called."""
    counts: Counter[str] = Counter()
    targets = [
        (inspect, "signature", "inspect.signature"),
        (hosts, "_pattern", "host patterns parsed"),
        (os, "open", "os.open"),
        (os, "fsync", "os.fsync"),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in targets]

    def counting(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[label] += 1
            return fn(*args, **kwargs)

        return wrapper

    for (owner, name, label), (_, _, fn) in zip(targets, originals, strict=True):
        setattr(owner, name, counting(fn, label))
    try:
        for _ in range(sessions):
            variant()
    finally:
        for owner, name, fn in originals:
            setattr(owner, name, fn)
    return Counter({label: counts[label] for _, _, label in targets})


if __name__ == "__main__":
    main()
