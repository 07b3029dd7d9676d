"""What DESIGN leaves of a replayed request, beside what ghostrun does: paired blocks, CPU.

    python benchmarks/request_floor.py                          # openai stream, 10 calls a test
    python benchmarks/request_floor.py --lane anthropic --chat --rounds 200

Three contenders answer the same SDK calls (``pertest.py``'s prompts and SDK calls) in
one process, a block of one test's calls each, in turns whose order rotates:

- **floor**: the SDK over ``MockTransport`` handing back the recorded response, prebuilt
  (``pertest.py``'s floor);
- **lower bound**: a ``MockTransport`` handler doing, in plain Python, only what DESIGN
  §3 requires of a replayed request: the key (the body parsed, written canonically,
  hashed), the cassette read (open, read, close), parsed, its types checked, the body
  or the stream's chunks encoded, the response built. No session, no trajectory, no
  run log, no secrets held: what no replayer of a committed file can skip;
- **ghostrun**: a replay session per test, under a runner's lease, as ``pertest.py``.

It prints the CPU each adds to the floor per request: the median and quartiles of the
per-round differences (a round's blocks share the machine's state). ghostrun's excess
over the lower bound is its own machinery; the lower bound's excess over the floor is
what a row's target must leave room for (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import pertest  # noqa: E402
import workloads as wl  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--lane", default="openai", choices=["openai", "anthropic"])
    parser.add_argument("--chat", action="store_true", help="whole answers, not streams")
    parser.add_argument("--calls", type=int, default=10, help="calls per test (10)")
    parser.add_argument("--rounds", type=int, default=100, help="rounds of blocks (100)")
    args = parser.parse_args()
    row = pertest.Row("floor", args.lane, not args.chat, args.calls)
    added = measure(row, args.rounds)
    what = f"{args.lane} {'chat' if args.chat else 'stream'}, {args.calls} calls a test"
    print(f"{what}, {args.rounds} rounds, load {os.getloadavg()[0]:.2f}: CPU added per request")
    for name, values in added.items():
        values.sort()
        q1, q2, q3 = (values[int(q * (len(values) - 1))] for q in (0.25, 0.5, 0.75))
        print(f"  {name:12} +{q2:5.0f} µs  [{q1:.0f}, {q3:.0f}]")
    sys.stdout.flush()
    os._exit(0)  # skip the run log's exit-time write: nobody's cost


def measure(row: pertest.Row, rounds: int) -> dict[str, list[float]]:
    """Per round, each contender's CPU per request minus the floor's, in µs."""
    import httpx2
    from simulator import ProviderSimulator

    import ghostrun
    from ghostrun._intercept import _patch
    from ghostrun._store._cassette import Cassette
    from ghostrun._wire._bodies import json_body_bytes

    data = Path(tempfile.mkdtemp(prefix="ghostrun-request-floor-"))
    prompts = [pertest.prompt(row, 0, call) for call in range(row.calls)]
    with ProviderSimulator() as sim:
        client = pertest.sdk_client(row.lane, sim.base_url)
        with ghostrun.session(mode="record", cassette_dir=data, hosts=wl.LOOPBACK, name="t"):
            for text in prompts:
                pertest.call(client, row, text)
    files = {_prompt_of(path): path for path in data.glob("*.json")}
    stream = _stream_class(httpx2)
    prebuilt = {}
    for text, path in files.items():
        recorded = Cassette.load(path)
        assert recorded is not None
        answer = recorded.response(0)
        prebuilt[text] = (answer.status, answer.headers, answer.body, answer.chunks)

    def floor(request: Any) -> Any:
        status, headers, body, chunks = prebuilt[_prompt_of_request(request)]
        if chunks is None:
            return httpx2.Response(status, headers=headers, content=body)
        return httpx2.Response(status, headers=headers, stream=stream(chunks))

    def lower_bound(request: Any) -> Any:
        body = request.read()
        url = request.url
        canonical = orjson.dumps(orjson.loads(body), option=orjson.OPT_SORT_KEYS)
        address = f"{url.scheme}://{url.host}:{url.port}{url.path}".encode()
        hashlib.sha256(b"\n".join((b"POST", address, canonical))).hexdigest()
        fd = os.open(files[_prompt_of_request(request)], os.O_RDONLY)
        try:
            document = orjson.loads(os.read(fd, 1 << 16))
        finally:
            os.close(fd)
        answer = _checked(document)["responses"][0]
        status, headers, stored = answer["status"], list(answer["headers"].items()), answer["body"]
        if "sse" not in stored:
            return httpx2.Response(status, headers=headers, content=json_body_bytes(stored))
        chunks = list(map(str.encode, stored["sse"]))
        return httpx2.Response(status, headers=headers, stream=stream(chunks))

    def mocked(handler: Callable[[Any], Any]) -> Any:
        transport = httpx2.MockTransport(handler)
        return pertest.sdk_client(row.lane, sim.base_url, httpx2.Client(transport=transport))

    def test(sdk: Any, opener: Callable[[], Any]) -> None:
        with opener():
            for text in prompts:
                assert pertest.call(sdk, row, text), text

    def replay() -> Any:
        return ghostrun.session(mode="replay", cassette_dir=data, hosts=wl.LOOPBACK, name="t")

    blocks = {
        "floor": lambda: test(mocked(floor), _nothing),
        "lower bound": lambda: test(mocked(lower_bound), _nothing),
        "ghostrun": lambda: test(client, replay),
    }
    release = _patch.lease()
    try:
        for run in blocks.values():  # warm-up
            run()
        cpu: dict[str, list[float]] = {name: [] for name in blocks}
        order = list(blocks)
        for _ in range(rounds):
            order = order[1:] + order[:1]
            for name in order:
                start = time.process_time()
                blocks[name]()
                cpu[name].append((time.process_time() - start) / row.calls)
    finally:
        release()
    return {
        name: [(a - b) * 1e6 for a, b in zip(cpu[name], cpu["floor"], strict=True)]
        for name in ("lower bound", "ghostrun")
    }


def _nothing() -> Any:
    return contextlib.nullcontext()


def _prompt_of(path: Path) -> str:
    return _prompt_of_body(orjson.loads(path.read_bytes())["request"]["body"]["json"])


def _prompt_of_request(request: Any) -> str:
    return _prompt_of_body(orjson.loads(request.content))


def _prompt_of_body(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def _checked(document: Any) -> Any:
    """The types replay relies on: a check of the everyday shape, no field named."""
    answer = document["responses"][0]
    body = answer["body"]
    chunks = body.get("sse", ())
    if (
        type(document["key"]) is not str
        or type(answer["status"]) is not int
        or not set(map(type, answer["headers"].values())) <= {str}
        or not set(map(type, chunks)) <= {str}
    ):
        raise ValueError("not a cassette of the everyday shape")
    return document


def _stream_class(httpx2: Any) -> Any:
    """A stream handing the client its chunks as recorded, one by one."""

    class Chunks(httpx2.SyncByteStream):  # type: ignore[misc]
        def __init__(self, chunks: list[bytes]) -> None:
            self.chunks = chunks

        def __iter__(self) -> Any:
            return iter(self.chunks)

    return Chunks


if __name__ == "__main__":
    main()
