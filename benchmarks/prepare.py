"""Build a lane's data once, before anything is timed: ``python prepare.py SPEC_JSON``.

Records the cassettes of W1 and W2 through the real SDK against the loopback
provider simulator (``tests/simulator.py``): ghostrun's, and vcrpy's where
vcrpy runs. Saves the prebuilt responses the mocks hand back (the recorded
ones, so every contender returns the same bytes in the same chunks), lays out
W3's cassette directories and seeds W5's verdict cache. Prints one JSON line
describing what it built.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import workloads as wl

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from simulator import ProviderSimulator  # noqa: E402

import ghostrun  # noqa: E402
from ghostrun._store._cassette import Cassette  # noqa: E402


def main() -> None:
    spec = json.loads(sys.argv[1])
    data = Path(spec["data"])
    data.mkdir(parents=True, exist_ok=True)
    import openai

    with ProviderSimulator() as sim:
        base_url = sim.base_url + "/v1"
        client = openai.OpenAI(base_url=base_url, api_key=wl.API_KEY, max_retries=0)
        info: dict[str, Any] = {"base_url": base_url, "openai": openai.__version__}
        sizes = spec["sizes"]
        info["w1"] = record(client, data / "w1", sizes["w1"], wl.w1_prompt, spec["vcrpy"], False)
        if spec["w2"]:
            info["w2"] = record(client, data / "w2", sizes["w2"], wl.w2_prompt, spec["vcrpy"], True)
    if spec["w3"]:
        info["w3"] = _cold_start_dirs(data, sizes["w3"], info["w1"]["first_key"], spec["vcrpy"])
    if spec["w5"]:
        info["w5"] = _seed_verdicts(data / "w5", sizes["w5"])
    print(json.dumps(info))


def record(
    client: Any, where: Path, n: int, prompt: Any, with_vcrpy: bool, stream: bool
) -> dict[str, Any]:
    """Record ``n`` calls with ghostrun (and vcrpy); the first one's response is the floor's."""
    prompts = [prompt(i) for i in range(n)]
    cassettes = where / "ghostrun"
    # The recording is a test of its own: the timed blocks each replay a slice of it, as
    # other tests would, not a re-run of the recording that stops early (UnplayedSteps).
    recording_session = {"cassette_dir": cassettes, "hosts": wl.LOOPBACK, "name": "prepare"}
    with ghostrun.session(mode="record", **recording_session):
        _call(client, prompts[0], stream)
    (first_path,) = cassettes.glob("*.json")  # the first call's cassette, alone so far
    with ghostrun.session(mode="record", **recording_session):
        for p in prompts[1:]:
            _call(client, p, stream)
    first = Cassette.load(first_path)
    assert first is not None
    recording = first.response(0)
    payload = {
        "status": recording.status,
        "headers": recording.headers,
        "body": recording.body.decode("latin-1"),
        "chunks": None
        if recording.chunks is None
        else [c.decode("latin-1") for c in recording.chunks],
    }
    (where / "payload.json").write_text(json.dumps(payload))
    paths = list(cassettes.glob("*.json"))
    info: dict[str, Any] = {"cassettes": len(paths), "first_key": first_path.stem}
    if stream:
        counts = sorted(len(Cassette.load(p).response(0).chunks) for p in paths)  # type: ignore[union-attr, arg-type]
        info["chunks_per_stream"] = {
            "min": counts[0],
            "median": counts[len(counts) // 2],
            "max": counts[-1],
        }
    if with_vcrpy:
        import vcr

        # Matching on method alone while recording keeps vcrpy's scan O(1); the
        # cassette holds the same interactions whatever the recording matched on.
        recorder = vcr.VCR(serializer="json", record_mode="all", match_on=("method",))
        with recorder.use_cassette(str(where / "vcrpy.json")):
            for p in prompts:
                _call(client, p, stream)
    return info


def _call(client: Any, prompt: str, stream: bool) -> None:
    messages = [{"role": "user", "content": prompt}]
    if stream:
        text = "".join(
            (c.choices[0].delta.content or "") if c.choices else ""
            for c in client.chat.completions.create(model=wl.MODEL, messages=messages, stream=True)
        )
    else:
        reply = client.chat.completions.create(model=wl.MODEL, messages=messages)
        text = reply.choices[0].message.content
    if text != wl.expected_reply(prompt):
        raise SystemExit(f"the simulator answered {text!r} to {prompt!r}")


def _cold_start_dirs(data: Path, count: int, first_key: str, with_vcrpy: bool) -> dict[str, Any]:
    """W3: the first W1 cassette among ``count`` on disk (and among 10, for comparison).

    The W1 recordings are used as they are; the rest are copies of one with
    another prompt, under the key that prompt would have (ghostrun never lists
    the directory, so only the replayed file's content matters).
    """
    source = data / "w1" / "ghostrun"
    recorded = sorted(source.glob("*.json"))
    first = json.loads((source / f"{first_key}.json").read_text())
    info = {}
    for label, n in (("many", count), ("few", 10)):
        target = data / "w3" / f"ghostrun-{label}"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(source / f"{first_key}.json", target)
        for path in [p for p in recorded if p.stem != first_key][: n - 1]:
            shutil.copy(path, target)
        filler = json.dumps(first, indent=2, sort_keys=True)
        for j in range(n - len(list(target.iterdir()))):
            key = hashlib.sha256(f"filler {j}".encode()).hexdigest()[:32]
            text = filler.replace(wl.w1_prompt(0), f"Filler {j}: a request nobody replays")
            (target / f"{key}.json").write_text(text.replace(first["key"], key))
        info[label] = sum(1 for _ in target.iterdir())
    if with_vcrpy:
        cassette = json.loads((data / "w1" / "vcrpy.json").read_text())
        interactions = cassette["interactions"]
        template = json.dumps(interactions[-1])
        last_prompt = wl.w1_prompt(len(interactions) - 1)
        for j in range(count - len(interactions)):
            interactions.append(json.loads(template.replace(last_prompt, f"Filler {j}: nobody")))
        (data / "w3" / "vcrpy-many.json").write_text(json.dumps(cassette, indent=2))
        info["vcrpy"] = len(interactions)
    return info


def _seed_verdicts(where: Path, n: int) -> dict[str, Any]:
    """W5: grade each text once in auto mode, so replay finds every verdict cached."""
    expect: Any = wl.expect_function()
    with ghostrun.session(mode="auto", cassette_dir=where):
        for i in range(n):
            expect(wl.w5_text(i), judge=wl.bench_judge).satisfies(wl.W5_CRITERION)
    return {"verdicts": sum(1 for _ in (where / "judge").glob("*.json"))}


if __name__ == "__main__":
    main()
