"""W1 in one process: the floor, ghostrun replay and respx in turns of blocks, paired ratios.

    python benchmarks/inprocess.py                 # openai 3.x on httpx2
    python benchmarks/inprocess.py --lane httpx    # openai 2.x on httpx, with respx
    python benchmarks/inprocess.py --anatomy       # also: what each step of a replay costs

W1's headline: ``run.py`` runs this once per lane (a child process each: the
lanes need different openai versions) and prints its table first. Fresh
processes cannot show a 5 % difference on this shared machine, whose speed
drifts by a third from one few-second window to the next: their W1 ratios
scatter from 0.8x to 1.6x between runs. Here the contenders run in one
process, in blocks of calls taken in turn, the order rotating every round
(floor, ghostrun, respx; ghostrun, respx, floor; ...), each ghostrun block
replaying prompts and cassettes of its own. A block and the other blocks of
its round share the machine's state, so the median over the rounds of their
ratio is stable to a percent or two. The contenders themselves (clients,
responses, sessions, respx's route) are built by ``contenders.py``, from data
recorded by ``prepare.py``: the same as in ``run.py``'s fresh processes.

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
import json
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workloads as wl  # noqa: E402
from run import OPENAI2_DIR, ensure_openai2, render_inprocess  # noqa: E402

STEPS = (
    "interception only",
    "+ match key",
    "+ read the cassette file",
    "+ parse and decode it",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--lane", default="httpx2", choices=["httpx2", "httpx"])
    parser.add_argument("--blocks", type=int, default=30, help="rounds of blocks (30)")
    parser.add_argument("--calls", type=int, default=200, help="calls per block (200)")
    parser.add_argument("--anatomy", action="store_true", help="time each step of a replay")
    parser.add_argument("--no-peers", action="store_true", help="no respx (httpx lane)")
    parser.add_argument("--json", action="store_true", help="print the results as one JSON line")
    args = parser.parse_args()
    if args.lane == "httpx" and str(OPENAI2_DIR) not in sys.path:  # run.py's children have it
        if ensure_openai2() is None:
            raise SystemExit("no openai 2.x for the httpx lane")
        sys.path.insert(0, str(OPENAI2_DIR))
    result = measure(args.lane, args.blocks, args.calls, args.anatomy, peers=not args.no_peers)
    print(json.dumps(result) if args.json else "\n".join(render_inprocess(result)))


def measure(lane: str, blocks: int, calls: int, anatomy: bool, peers: bool) -> dict[str, Any]:
    """Every contender's CPU seconds per call, block by block, with the round each ran in."""
    import openai
    from contenders import chat, contender, one_pass, prebuilt
    from prepare import record
    from simulator import ProviderSimulator

    lib = importlib.import_module(lane)
    replayers = [*(STEPS if anatomy else ()), "ghostrun"]
    names = ["floor", *replayers, *(["respx"] if peers and lane == "httpx" else [])]
    with tempfile.TemporaryDirectory(prefix="ghostrun-inprocess-") as data:
        with ProviderSimulator() as sim:
            base_url = sim.base_url + "/v1"
            live = openai.OpenAI(base_url=base_url, api_key=wl.API_KEY, max_retries=0)
            record(live, Path(data), blocks * calls * len(replayers), wl.w1_prompt, False, False)
        spec = {"workload": "w1", "base_url": base_url, "payload": f"{data}/payload.json"}
        spec["cassettes"] = f"{data}/ghostrun"
        made = {n: contender({**spec, "contender": n}, openai, lib) for n in ("floor", "ghostrun")}
        if "respx" in names:
            made["respx"] = contender({**spec, "contender": "respx"}, openai, lib)
        if anatomy:
            replaying, session = made["ghostrun"]
            steps = _steps(lib, prebuilt(lib, spec["payload"]), session)
            made.update((name, (replaying, step)) for name, step in steps.items())
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
        prompts = [wl.w1_prompt(i) for i in range(blocks * calls * len(replayers))]
        for name in names:  # warm-up
            client, opener = made[name]
            one_pass(opener, lambda batch, c=client: chat(c, batch), prompts[: min(20, calls)])
        for r in range(blocks):
            start = r * len(replayers) * calls
            own = {
                n: prompts[start + j * calls : start + (j + 1) * calls]
                for j, n in enumerate(replayers)
            }
            for name in names[r % len(names) :] + names[: r % len(names)]:
                client, opener = made[name]
                batch = own.get(name, own["ghostrun"])  # the floor and respx need no cassettes
                one = one_pass(opener, lambda b, c=client: chat(c, b), batch)
                cpu, wall = one["cpu_seconds"] / len(batch), one["seconds"] / len(batch)
                run = {"rep": r, "cpu": cpu, "wall": wall, "calls": len(batch)}
                runs[name].append({**run, "wrong": one["wrong"]})
    label = f"openai {openai.__version__} on {lane}"
    return {"lane": lane, "label": label, "blocks": blocks, "calls": calls, "runs": runs}


def _steps(lib: Any, prebuilt: Callable[[Any], Any], session: Any) -> dict[str, Any]:
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
        return self.deck.store.path(key(self, request))

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
        def patched() -> Iterator[None]:
            original = transport.handle_request
            transport.handle_request = handler
            try:
                with session():
                    yield
            finally:
                transport.handle_request = original

        return patched

    return {name: using(handler) for name, handler in handlers.items()}


if __name__ == "__main__":
    main()
