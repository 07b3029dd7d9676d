"""W1 in one process: floor and ghostrun replay in alternating blocks, paired ratios.

    python benchmarks/inprocess.py                 # openai 3.x on httpx2
    python benchmarks/inprocess.py --lane httpx    # openai 2.x on httpx (run.py installs it)

A second view of W1's hot path, finer than ``run.py`` can be on a noisy shared
machine. ``run.py`` times each contender in processes of its own, as issue 8
asks; but this machine's speed drifts by a third from one few-second window to
the next, so fresh-process medians scatter by about ±10 % between full runs.
Here the floor and ghostrun run in one process, in blocks of a few hundred
calls taken in turn (floor, ghostrun, floor, ghostrun ...), each block with
prompts and cassettes of its own; the ratio of each block to the floor block
just before it shares the machine's state, and their median is stable to a
percent or two. The SDK, the client and the responses are those of ``run.py``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import workloads as wl  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--lane", default="httpx2", choices=["httpx2", "httpx"])
    parser.add_argument("--blocks", type=int, default=30, help="pairs of blocks (30)")
    parser.add_argument("--calls", type=int, default=200, help="calls per block (200)")
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
    prompts = [wl.w1_prompt(i) for i in range(args.blocks * args.calls)]
    cassettes = tempfile.mkdtemp(prefix="ghostrun-inprocess-")
    with ProviderSimulator() as sim:
        base_url = sim.base_url + "/v1"
        live = openai.OpenAI(base_url=base_url, api_key=wl.API_KEY, max_retries=0)
        with ghostrun.session(mode="record", cassette_dir=cassettes, hosts=wl.LOOPBACK):
            _chat(live, prompts[:1])  # the floor's response: a recorded one, as in run.py
            floor_response = _read_response(cassettes)
            _chat(live, prompts[1:])

    headers, body = floor_response

    def floor_handler(request: Any) -> Any:
        return lib.Response(200, headers=headers, stream=lib.ByteStream(body))

    def unreachable(request: Any) -> Any:
        raise AssertionError(f"{request.url} reached the mock transport: not intercepted")

    def client(handler: Any) -> Any:
        http = lib.Client(transport=lib.MockTransport(handler))
        return openai.OpenAI(base_url=base_url, api_key=wl.API_KEY, max_retries=0, http_client=http)

    floor, replaying = client(floor_handler), client(unreachable)
    _chat(floor, prompts[:20])
    with ghostrun.session(mode="replay", cassette_dir=cassettes, hosts=wl.LOOPBACK):
        _chat(replaying, prompts[:20])

    ratios, floor_cpu, ghostrun_cpu = [], [], []
    for block in range(args.blocks):
        batch = prompts[block * args.calls : (block + 1) * args.calls]
        t0 = time.process_time()
        _chat(floor, batch)
        t1 = time.process_time()
        with ghostrun.session(mode="replay", cassette_dir=cassettes, hosts=wl.LOOPBACK):
            t2 = time.process_time()
            wrong = _chat(replaying, batch)
            t3 = time.process_time()
        if wrong:
            raise SystemExit(f"ghostrun replayed {wrong} wrong answers")
        floor_cpu.append((t1 - t0) / len(batch))
        ghostrun_cpu.append((t3 - t2) / len(batch))
        ratios.append(ghostrun_cpu[-1] / floor_cpu[-1])

    extra = statistics.median(g - f for g, f in zip(ghostrun_cpu, floor_cpu, strict=True))
    print(f"openai {openai.__version__} on {args.lane}, {args.blocks} pairs of {args.calls} calls")
    for label, cpu in (("floor:          ", floor_cpu), ("ghostrun replay:", ghostrun_cpu)):
        print(f"  {label} {statistics.median(cpu) * 1e6:6.0f} µs CPU per call (median)")
    quartiles = statistics.quantiles(ratios, n=4)
    print(
        f"  paired ratio:    {statistics.median(ratios):.3f}x floor "
        f"(quartiles {quartiles[0]:.3f} - {quartiles[2]:.3f}), {extra * 1e6:+.0f} µs per call"
    )


def _chat(client: Any, prompts: list[str]) -> int:
    wrong = 0
    for prompt in prompts:
        reply = client.chat.completions.create(
            model=wl.MODEL, messages=[{"role": "user", "content": prompt}]
        )
        wrong += reply.choices[0].message.content != wl.expected_reply(prompt)
    return wrong


def _read_response(cassettes: str) -> tuple[list[tuple[str, str]], bytes]:
    from ghostrun._cassette import Cassette

    (name,) = os.listdir(cassettes)
    cassette = Cassette.load(os.path.join(cassettes, name))
    assert cassette is not None
    recording = cassette.response(0)
    return recording.headers, recording.body


if __name__ == "__main__":
    main()
