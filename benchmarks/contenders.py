"""One measurement in its own fresh process: ``python contenders.py SPEC_JSON``.

The runner (``run.py``) starts this once per contender and repetition and
reads the one JSON line it prints. Only the standard library is imported at
the top, so W3 (cold start) counts exactly what each contender imports.

Every contender makes the same calls through the real ``openai`` SDK; they
differ only in what answers them:

- ``floor``: ``MockTransport`` handing back prebuilt bytes (the SDK's own cost);
- ``ghostrun``: replay (W1-W3), record (W4) or cached verdicts (W5);
- ``vcrpy-body`` / ``vcrpy-default``: vcrpy replay matching on method, URI and
  body, or on its default (method and URI: every call gets the first answer);
- ``respx``: one prebuilt route (openai 2.x on httpx only: respx mocks httpcore);
- ``plain`` (W4): the same calls sent to the simulator without ghostrun;
- ``contains`` (W5): a deterministic assertion, for reference.
"""

from __future__ import annotations

import time

_T_PROCESS = time.monotonic()

import contextlib  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import workloads as wl  # noqa: E402 - the benchmarks folder is sys.path[0]


def main() -> None:
    spec = json.loads(sys.argv[1])
    result = WORKLOADS[spec["workload"]](spec)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    os._exit(0)  # interpreter teardown is nobody's cost


# -- building contenders ----------------------------------------------------------


def _sdk(spec: dict[str, Any]) -> tuple[Any, Any]:
    """The openai SDK and the HTTP library it runs on in this lane (httpx2 or httpx)."""
    import openai

    return openai, importlib.import_module(spec["lane"])


def _client(openai: Any, base_url: str, http_client: Any = None) -> Any:
    return openai.OpenAI(
        base_url=base_url, api_key=wl.API_KEY, max_retries=0, http_client=http_client
    )


def _payload(path: str) -> tuple[int, list[tuple[str, str]], bytes, list[bytes] | None]:
    """The prebuilt response the mocks hand back (status, headers, body, chunks)."""
    data = json.loads(Path(path).read_text())
    chunks = [c.encode("latin-1") for c in data["chunks"]] if data["chunks"] is not None else None
    headers = [(k, v) for k, v in data["headers"]]
    return data["status"], headers, data["body"].encode("latin-1"), chunks


def prebuilt(lib: Any, path: str) -> Any:
    """A function building the prebuilt response, as cheaply as the library allows."""
    status, headers, body, chunks = _payload(path)

    class Chunks(lib.SyncByteStream):  # type: ignore[misc, name-defined]
        def __iter__(self) -> Any:
            yield from chunks or ()

    if chunks is None:
        return lambda request: lib.Response(status, headers=headers, stream=lib.ByteStream(body))
    return lambda request: lib.Response(status, headers=headers, stream=Chunks())


def contender(spec: dict[str, Any], openai: Any, lib: Any) -> tuple[Any, Any]:
    """(client, opener): ``opener()`` is the context the calls run in.

    Replayers get the floor's very client, its MockTransport raising if ever
    reached, so that building the client (an SSL context, a connection pool)
    costs every contender the same and only interception differs. respx mocks
    httpcore, under a real transport, so it keeps the SDK's default client;
    W4 (``plain`` and ghostrun recording) sends real requests.
    """
    name, base_url = spec["contender"], spec["base_url"]

    def mocked(handler: Any) -> Any:
        return _client(openai, base_url, lib.Client(transport=lib.MockTransport(handler)))

    if name == "floor":
        return mocked(prebuilt(lib, spec["payload"])), contextlib.nullcontext
    if name == "ghostrun":
        import ghostrun

        def opener() -> Any:
            return ghostrun.session(
                mode=spec.get("mode", "replay"), cassette_dir=spec["cassettes"], hosts=wl.LOOPBACK
            )

        client = _client(openai, base_url) if spec["workload"] == "w4" else mocked(_unreachable)
        return client, opener
    if name.startswith("vcrpy"):
        import vcr

        match_on = ("method", "uri", "body") if name == "vcrpy-body" else vcr.VCR().match_on
        recorder = vcr.VCR(serializer="json", record_mode="none", match_on=match_on)
        return mocked(_unreachable), lambda: recorder.use_cassette(spec["vcr_cassette"])
    if name == "respx":
        import respx

        router = respx.mock(assert_all_called=False)
        router.post(base_url + "/chat/completions").mock(side_effect=prebuilt(lib, spec["payload"]))
        return _client(openai, base_url), lambda: router
    if name == "plain":
        return _client(openai, base_url), contextlib.nullcontext
    raise SystemExit(f"unknown contender {name!r}")


def _unreachable(request: Any) -> Any:
    raise AssertionError(f"{request.url} reached the mock transport: it was not intercepted")


# -- the calls ---------------------------------------------------------------------


def chat(client: Any, prompts: list[str]) -> int:
    """Non-streaming completions; returns how many answers were not the prompt's own."""
    create = client.chat.completions.create
    wrong = 0
    for prompt in prompts:
        reply = create(model=wl.MODEL, messages=[{"role": "user", "content": prompt}])
        if reply.choices[0].message.content != wl.expected_reply(prompt):
            wrong += 1
    return wrong


def _stream(client: Any, prompts: list[str]) -> int:
    """Streaming completions, every chunk consumed; returns the wrong answers."""
    create = client.chat.completions.create
    wrong = 0
    for prompt in prompts:
        parts = []
        messages = [{"role": "user", "content": prompt}]
        for chunk in create(model=wl.MODEL, messages=messages, stream=True):
            if chunk.choices:
                parts.append(chunk.choices[0].delta.content or "")
        if "".join(parts) != wl.expected_reply(prompt):
            wrong += 1
    return wrong


def _timed(
    opener: Any, run: Any, prompts: list[str], warm: list[str], passes: int = 1
) -> dict[str, Any]:
    """Warm up in a context of its own, then time the calls, ``passes`` times.

    Each pass opens a fresh context (a new session); the best pass (least CPU)
    is the result, since a noisy machine only ever adds time. Opening and
    closing are timed apart from the calls.
    """
    if warm:
        with opener():
            run(warm)
    results = [one_pass(opener, run, prompts) for _ in range(max(1, passes))]
    best = min(results, key=lambda r: r["cpu_seconds"])
    return {**best, "passes": results}


def one_pass(opener: Any, run: Any, prompts: list[str]) -> dict[str, Any]:
    t0 = time.perf_counter()
    context = opener()
    context.__enter__()
    t1, c1 = time.perf_counter(), time.process_time()
    wrong = run(prompts)
    t2, c2 = time.perf_counter(), time.process_time()
    context.__exit__(None, None, None)
    t3 = time.perf_counter()
    return {
        "seconds": t2 - t1,
        "cpu_seconds": c2 - c1,
        "calls": len(prompts),
        "open_s": t1 - t0,
        "close_s": t3 - t2,
        "wrong": wrong,
    }


# -- the workloads -----------------------------------------------------------------


def w1(spec: dict[str, Any]) -> dict[str, Any]:
    """W1: non-streaming chat completions, each with a distinct prompt, replayed."""
    openai, lib = _sdk(spec)
    client, opener = contender(spec, openai, lib)
    prompts = [wl.w1_prompt(i) for i in range(spec["n"])]
    prompts = prompts[: spec.get("limit", len(prompts)) : spec.get("sample", 1)]
    return _timed(opener, lambda p: chat(client, p), prompts, prompts[:1], spec["passes"])


def w2(spec: dict[str, Any]) -> dict[str, Any]:
    """W2: streaming chat completions, every chunk consumed, replayed."""
    openai, lib = _sdk(spec)
    client, opener = contender(spec, openai, lib)
    prompts = [wl.w2_prompt(i) for i in range(spec["n"])]
    return _timed(opener, lambda p: _stream(client, p), prompts, prompts[:1], spec["passes"])


def w3(spec: dict[str, Any]) -> dict[str, Any]:
    """W3: cold start, from process start to the first replayed response, and peak RSS.

    The runner notes the monotonic clock (system-wide) just before starting this
    process; this reports the clock at the first response, the CPU time since
    the process started, and the CPU time since the SDK was imported: up to
    there every contender runs the same code, whose noise (hundreds of ms of
    interpreter start-up and imports) would otherwise drown a 30 ms target.
    """
    import resource

    openai, lib = _sdk(spec)
    cpu_sdk = time.process_time()  # what follows is all that differs between contenders
    client, opener = contender(spec, openai, lib)
    prompt = wl.w1_prompt(0)
    with opener():
        reply = client.chat.completions.create(
            model=wl.MODEL, messages=[{"role": "user", "content": prompt}]
        )
        t_first, cpu_first = time.monotonic(), time.process_time()
        usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "t_first": t_first,
        "cpu_to_first": cpu_first,
        "cpu_after_sdk": cpu_first - cpu_sdk,
        "t_process": _T_PROCESS,
        "rss_kb": usage.ru_maxrss,
        "wrong": int(reply.choices[0].message.content != wl.expected_reply(prompt)),
        "calls": 1,
    }


def w4(spec: dict[str, Any]) -> dict[str, Any]:
    """W4: W1's calls sent to the loopback simulator, with ghostrun recording or without.

    ghostrun records each pass (and the warm-up) into a directory of its own,
    so every pass writes 2,000 new files, as a first recording does.
    """
    openai, lib = _sdk(spec)
    client, opener = contender(spec, openai, lib)
    prompts = [wl.w1_prompt(i) for i in range(spec["n"])]
    if spec["contender"] == "ghostrun":
        directories = iter(
            [f"{spec['cassettes']}-warm"]
            + [f"{spec['cassettes']}-{k}" for k in range(max(1, spec["passes"]))]
        )
        record_into_next = opener

        def opener() -> Any:
            spec["cassettes"] = next(directories)
            return record_into_next()

    result = _timed(opener, lambda p: chat(client, p), prompts, prompts[:1], spec["passes"])
    result["calls_total"] = 1 + len(prompts) * max(1, spec["passes"])  # all the simulator served
    return result


def w5(spec: dict[str, Any]) -> dict[str, Any]:
    """W5: judge-backed assertions answered from cached verdicts (replay mode)."""
    import ghostrun

    expect: Any = wl.expect_function()
    texts = [wl.w5_text(i) for i in range(spec["n"])]
    if spec["contender"] == "contains":

        def run(batch: list[str]) -> int:
            for text in batch:
                expect(text).contains("Hello")
            return 0
    else:

        def run(batch: list[str]) -> int:
            for text in batch:
                expect(text, judge=wl.bench_judge).satisfies(wl.W5_CRITERION)
            return 0

    def opener() -> Any:
        return ghostrun.session(mode="replay", cassette_dir=spec["cassettes"])

    return _timed(opener, run, texts, texts[:1], spec["passes"])


WORKLOADS = {"w1": w1, "w2": w2, "w3": w3, "w4": w4, "w5": w5}

if __name__ == "__main__":
    main()
