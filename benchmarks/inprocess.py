"""W1 in one process: floor and ghostrun replay in alternating blocks, paired ratios.

    python benchmarks/inprocess.py                 # openai 3.x on httpx2
    python benchmarks/inprocess.py --lane httpx    # openai 2.x on httpx (run.py installs it)
    python benchmarks/inprocess.py --anatomy       # also: what each step of a replay costs

A second view of W1's hot path, finer than ``run.py`` can be on a noisy shared
machine. ``run.py`` times each contender in processes of its own, as issue 8
asks; but this machine's speed drifts by a third from one few-second window to
the next, so fresh-process medians scatter by about ±10 % between full runs.
Here the contenders run in one process, in blocks of calls taken in turn
(floor, ghostrun, floor, ghostrun ...), each block with prompts and cassettes
of its own; the ratio of each block to the floor block of the same round
shares the machine's state, and their median is stable to a percent or two.
The SDK, the client and the responses are those of ``run.py``.

``--anatomy`` adds contenders that do only the first steps of a replay, with
ghostrun's own functions, inside a ghostrun session, and then hand the SDK the
floor's prebuilt response: interception alone; + the match key; + reading the
cassette file; + parsing and decoding it (the whole replay, without the
session's bookkeeping). Each row's excess over the row above is that step's
cost, side effects on the SDK's own work (caches, allocator) included.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import workloads as wl  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--lane", default="httpx2", choices=["httpx2", "httpx"])
    parser.add_argument("--blocks", type=int, default=30, help="rounds of blocks (30)")
    parser.add_argument("--calls", type=int, default=200, help="calls per block (200)")
    parser.add_argument("--anatomy", action="store_true", help="time each step of a replay")
    args = parser.parse_args()
    if args.lane == "httpx":
        from run import OPENAI2_DIR, ensure_openai2

        if ensure_openai2() is None:
            raise SystemExit("no openai 2.x for the httpx lane")
        sys.path.insert(0, str(OPENAI2_DIR))

    import openai
    from simulator import ProviderSimulator

    import ghostrun

    lib = importlib.import_module(args.lane)
    names = ["floor", *(STEPS if args.anatomy else ()), "ghostrun replay"]
    prompts = [wl.w1_prompt(i) for i in range(args.blocks * args.calls * (len(names) - 1))]
    cassettes = tempfile.mkdtemp(prefix="ghostrun-inprocess-")
    with ProviderSimulator() as sim:
        base_url = sim.base_url + "/v1"
        live = openai.OpenAI(base_url=base_url, api_key=wl.API_KEY, max_retries=0)
        with ghostrun.session(mode="record", cassette_dir=cassettes, hosts=wl.LOOPBACK):
            _chat(live, prompts[:1])  # the floor's response: a recorded one, as in run.py
            floor_response = _read_response(cassettes)
            _chat(live, prompts[1:])

    headers, body = floor_response

    def prebuilt(request: Any) -> Any:
        return lib.Response(200, headers=headers, stream=lib.ByteStream(body))

    def unreachable(request: Any) -> Any:
        raise AssertionError(f"{request.url} reached the mock transport: not intercepted")

    def client(handler: Any) -> Any:
        http = lib.Client(transport=lib.MockTransport(handler))
        return openai.OpenAI(base_url=base_url, api_key=wl.API_KEY, max_retries=0, http_client=http)

    floor, replaying = client(prebuilt), client(unreachable)
    steps = _steps(lib, prebuilt) if args.anatomy else {}

    def run_block(name: str, batch: list[str]) -> float:
        """CPU seconds per call for one block of ``name``."""
        if name == "floor":
            t0 = time.process_time()
            _chat(floor, batch)
            return (time.process_time() - t0) / len(batch)
        step = steps[name]() if name in steps else contextlib.nullcontext()
        with step, ghostrun.session(mode="replay", cassette_dir=cassettes, hosts=wl.LOOPBACK):
            t0 = time.process_time()
            wrong = _chat(replaying, batch)
            seconds = time.process_time() - t0
        if wrong and name == "ghostrun replay":
            raise SystemExit(f"ghostrun replayed {wrong} wrong answers")
        return seconds / len(batch)

    warm = prompts[: min(20, args.calls)]
    for name in names:
        run_block(name, warm)

    cpu: dict[str, list[float]] = {name: [] for name in names}
    batches = iter(range(0, len(prompts), args.calls))
    for _ in range(args.blocks):
        for name in names:
            start = 0 if name == "floor" else next(batches)  # the floor needs no cassette
            cpu[name].append(run_block(name, prompts[start : start + args.calls]))

    print(f"openai {openai.__version__} on {args.lane}, {args.blocks} rounds of {args.calls} calls")
    floor_cpu = cpu["floor"]
    for name in names:
        ratios = [g / f for g, f in zip(cpu[name], floor_cpu, strict=True)]
        extra = statistics.median(g - f for g, f in zip(cpu[name], floor_cpu, strict=True))
        quartiles = statistics.quantiles(ratios, n=4)
        print(
            f"  {name:32s} {statistics.median(cpu[name]) * 1e6:6.0f} µs CPU per call  "
            f"{statistics.median(ratios):.3f}x floor ({quartiles[0]:.3f} - {quartiles[2]:.3f})  "
            f"{extra * 1e6:+5.0f} µs per call"
        )


STEPS = (
    "interception only",
    "+ match key",
    "+ read the cassette file",
    "+ parse and decode it",
)


def _steps(lib: Any, prebuilt: Callable[[Any], Any]) -> dict[str, Callable[[], Any]]:
    """For each step, a context in which ghostrun's transport does only the work up to it."""
    import ghostrun._core._files as files
    import ghostrun._intercept._engine as engine
    import ghostrun._intercept._httpx as transports
    import ghostrun._store._cassette as cassette

    transport = transports.Transport

    def key(self: Any, request: Any) -> str:
        describe = transports._describe(request)
        return engine.Exchange(self.deck, *describe, request.read()).info.key

    def path(self: Any, request: Any) -> str:
        return self.deck._prefix + key(self, request) + ".json"

    def decoded(self: Any, request: Any) -> Any:
        (recording,) = (cassette.read_run(path(self, request), self.deck.name) or ("", []))[1]
        return lib.Response(
            recording.status, headers=recording.headers, stream=lib.ByteStream(recording.body)
        )

    handlers: dict[str, Callable[[Any, Any], Any]] = {
        "interception only": lambda self, request: prebuilt(request),
        "+ match key": lambda self, request: (key(self, request), prebuilt(request))[1],
        "+ read the cassette file": lambda self, request: (
            files.read_bytes(path(self, request)),
            prebuilt(request),
        )[1],
        "+ parse and decode it": decoded,
    }

    def using(handler: Callable[[Any, Any], Any]) -> Callable[[], Any]:
        @contextlib.contextmanager
        def patched() -> Any:
            original = transport.handle_request
            transport.handle_request = handler
            try:
                yield
            finally:
                transport.handle_request = original

        return patched

    return {name: using(handler) for name, handler in handlers.items()}


def _chat(client: Any, prompts: list[str]) -> int:
    wrong = 0
    for prompt in prompts:
        reply = client.chat.completions.create(
            model=wl.MODEL, messages=[{"role": "user", "content": prompt}]
        )
        wrong += reply.choices[0].message.content != wl.expected_reply(prompt)
    return wrong


def _read_response(cassettes: str) -> tuple[list[tuple[str, str]], bytes]:
    from ghostrun._store._cassette import Cassette

    (name,) = os.listdir(cassettes)
    cassette = Cassette.load(os.path.join(cassettes, name))
    assert cassette is not None
    recording = cassette.response(0)
    return recording.headers, recording.body


if __name__ == "__main__":
    main()
