"""ghostrun's benchmarks: replay against the no-I/O floor and its peers, in one run.

    python benchmarks/run.py            # the full run (a few minutes on 2 cores)
    python benchmarks/run.py --quick    # fewer calls and repetitions: a sanity run

Every measurement runs in a fresh process (``contenders.py``); the contenders
of a workload take turns, repetition after repetition (A B C A B C ...), so a
noisy machine slows them alike. The table shows medians with min-max over the
repetitions and ratios measured in this run; ``benchmarks/results/latest.json``
keeps every number. See README.md beside this file.

Two lanes, because the peers cannot all see the same HTTP library:
``httpx2`` is openai 3.x (the current SDK; vcrpy patches httpx2 too), and
``httpx`` is openai 2.x on httpx, the only road respx can mock. The httpx
lane's openai is installed once with pip into a folder of its own (``--openai2``),
put in front of the venv's packages for that lane's processes only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workloads as wl  # noqa: E402

RESULTS = HERE / "results" / "latest.json"
OPENAI2_DIR = Path(tempfile.gettempdir()) / "ghostrun-bench-openai2"
OPENAI2_REQUIREMENT = "openai>=2,<3"

DESCRIPTIONS = {
    "w1": "{n:,} non-streaming chat completions, each a distinct prompt and cassette, replayed",
    "w2": "{n:,} streaming chat completions of {chunks} chunks each, every chunk consumed, replayed",
    "w3": "cold start: {n:,} cassettes on disk; process start to first replayed response; peak RSS",
    "w4": "record mode: W1's {n:,} calls to the loopback simulator, recorded vs without ghostrun",
    "w5": "{n:,} judge-backed assertions replayed from cached verdicts",
}
LANES = {"httpx2": "openai {v} on httpx2", "httpx": "openai {v} on httpx"}
LABELS = {
    "floor": "floor (MockTransport)",
    "ghostrun": "ghostrun replay",
    "ghostrun-few": "ghostrun, 10 cassettes",
    "ghostrun-record": "ghostrun record",
    "plain": "without ghostrun",
    "vcrpy-body": "vcrpy, match body",
    "vcrpy-default": "vcrpy, default match",
    "respx": "respx, one route",
    "verdict": "ghostrun cached verdict",
    "contains": "expect().contains()",
}
TARGETS = {  # (workload, contender) -> (text, check on the row and its baseline)
    ("w1", "ghostrun"): ("<= 1.05x floor", lambda r, b: r.ratio(b) <= 1.05),
    ("w2", "ghostrun"): ("<= 1.10x floor", lambda r, b: r.ratio(b) <= 1.10),
    ("w3", "ghostrun"): ("<= floor+30 ms, +10 MB", lambda r, b: r.delta(b) <= 0.030
                         and r.median("rss_mb") - b.median("rss_mb") <= 10),
    ("w3", "ghostrun-few"): ("same as 10,000", lambda r, b: r.delta(b) <= 0.030
                             and r.median("rss_mb") - b.median("rss_mb") <= 10),
    ("w4", "ghostrun-record"): ("<= 1.25x without", lambda r, b: r.ratio(b) <= 1.25),
    ("w5", "verdict"): ("<= 2 ms each", lambda r, b: r.median() <= 0.002),
}


@dataclass
class Row:
    """One contender of one workload in one lane, and its repetitions."""

    workload: str
    lane: str
    contender: str
    spec: dict[str, Any]
    note: str = ""
    runs: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def values(self, metric: str = "per_call") -> list[float]:
        return [run[metric] for run in self.runs]

    def median(self, metric: str = "per_call") -> float:
        return statistics.median(self.values(metric))

    def ratio(self, base: Row) -> float:
        return self.median() / base.median()

    def delta(self, base: Row) -> float:
        return self.median() - base.median()


# -- running -----------------------------------------------------------------------


def child_env(lane: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOSTRUN_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # cold starts read cached bytecode, as users' do
    env.pop("CI", None)
    if lane == "httpx":
        env["PYTHONPATH"] = str(OPENAI2_DIR)
    else:
        env.pop("PYTHONPATH", None)
    return env


def run_child(script: str, spec: dict[str, Any], lane: str) -> dict[str, Any]:
    """Run one process; its last stdout line is its JSON result."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(HERE / script), json.dumps(spec)],
        env=child_env(lane),
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-15:]
        raise RuntimeError(f"{script} {spec.get('contender', '')} failed:\n  " + "\n  ".join(tail))
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result["spawned"] = started
    return result


def ensure_openai2() -> str | None:
    """openai 2.x for the httpx lane, installed once beside the venv; None if impossible."""
    if not (OPENAI2_DIR / "openai").is_dir():
        print(f"installing {OPENAI2_REQUIREMENT} into {OPENAI2_DIR} (once) ...", flush=True)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
             "--target", str(OPENAI2_DIR), OPENAI2_REQUIREMENT],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            print(proc.stderr.strip()[-2000:], file=sys.stderr)
            return None
    env = child_env("httpx")
    proc = subprocess.run(
        [sys.executable, "-c", "import openai, httpx; print(openai.__version__)"],
        env=env, capture_output=True, text=True,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def measure(row: Row) -> None:
    try:
        result = run_child("contenders.py", row.spec, row.lane)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        row.errors.append(str(exc))
        print(f"\n  ! {row.workload} {row.lane} {row.contender}: {exc}", file=sys.stderr)
        return
    if row.workload == "w3":
        result["per_call"] = result["t_first"] - result["spawned"]
        result["rss_mb"] = result["rss_kb"] / 1024
    else:
        result["per_call"] = result["seconds"] / result["calls"]
    row.runs.append(result)


def interleave(rows: list[Row], reps: int, label: str) -> None:
    """A B C A B C ...: each repetition runs every contender once, in turn."""
    for rep in range(reps):
        print(f"\r  {label}: repetition {rep + 1}/{reps}", end="", flush=True)
        for row in rows:
            measure(row)
    print(flush=True)


# -- the plan --------------------------------------------------------------------------


def build_rows(args: argparse.Namespace, sizes: dict[str, int], lanes: dict[str, Any]) -> list[Row]:
    rows: list[Row] = []

    def add(workload: str, lane: str, contender: str, note: str = "", **spec: Any) -> None:
        info = lanes[lane]
        base = {"workload": workload, "lane": lane, "contender": contender,
                "n": sizes.get(workload, 0), "base_url": info["base_url"]}
        rows.append(Row(workload, lane, contender, {**base, **spec}, note))

    for lane, info in lanes.items():
        data = Path(info["data"])
        for w in ("w1", "w2"):
            if w not in args.only:
                continue
            files = {"payload": str(data / w / "payload.json"),
                     "cassettes": str(data / w / "ghostrun"),
                     "vcr_cassette": str(data / w / "vcrpy.json")}
            add(w, lane, "floor", **files)
            add(w, lane, "ghostrun", **files)
            if lane == "httpx2" and not args.no_peers:
                sample = wl.VCRPY_BODY_SAMPLE if w == "w1" else 1
                note = f"every {sample}th call (O(cassette) scan per call)" if sample > 1 else ""
                add(w, lane, "vcrpy-body", note, sample=sample, **files)
                if w == "w1":
                    add(w, lane, "vcrpy-default", **files)
            if lane == "httpx" and not args.no_peers:
                add(w, lane, "respx", **files)
    if "w3" in args.only and "httpx2" in lanes:
        data = Path(lanes["httpx2"]["data"])
        payload = str(data / "w1" / "payload.json")
        add("w3", "httpx2", "floor", payload=payload)
        add("w3", "httpx2", "ghostrun",
            cassettes=str(data / "w3" / "ghostrun-many"))
        add("w3", "httpx2", "ghostrun-few", cassettes=str(data / "w3" / "ghostrun-few"))
        if not args.no_peers:
            add("w3", "httpx2", "vcrpy-body", vcr_cassette=str(data / "w3" / "vcrpy-many.json"))
    if "w4" in args.only and "httpx2" in lanes:
        add("w4", "httpx2", "plain")
        add("w4", "httpx2", "ghostrun-record", mode="record")
    if "w5" in args.only and "httpx2" in lanes:
        cassettes = str(Path(lanes["httpx2"]["data"]) / "w5")
        add("w5", "httpx2", "contains", cassettes=cassettes)
        add("w5", "httpx2", "verdict", cassettes=cassettes)
    for row in rows:  # the child knows two ghostrun flavours by their directories only
        if row.contender in ("ghostrun-few", "ghostrun-record"):
            row.spec["contender"] = "ghostrun"
    return rows


# -- reporting --------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "cpus": os.cpu_count(),
        "cpu": _cpu_model(),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def baseline(rows: list[Row], row: Row) -> Row | None:
    want = {"w4": "plain", "w5": "contains"}.get(row.workload, "floor")
    for other in rows:
        if other.workload == row.workload and other.lane == row.lane and other.contender == want:
            return other if other.runs else None
    return None


def fmt_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms" if seconds < 0.1 else f"{seconds * 1e3:.0f} ms"
    return f"{seconds * 1e6:.0f} µs"


def render(rows: list[Row], meta: dict[str, Any]) -> str:
    out = [
        f"ghostrun benchmarks  {meta['date']}  ·  {meta['machine']['cpus']} CPUs "
        f"({meta['machine']['cpu']}), Python {meta['machine']['python']}, "
        f"{meta['machine']['platform']}",
        f"command: {meta['command']}",
        f"{meta['reps']} repetitions per contender, interleaved; median (min-max); "
        "ratios are of medians from this run",
    ]
    for workload in ("w1", "w2", "w3", "w4", "w5"):
        mine = [r for r in rows if r.workload == workload]
        if not mine:
            continue
        out.append("")
        out.append(f"{workload.upper()}  {meta['descriptions'][workload]}")
        cold = workload == "w3"
        head = ("lane", "contender", "to 1st reply" if cold else "per call", "min-max",
                "vs floor" if cold else "ratio", "peak RSS" if cold else "answers", "target")
        table = [head]
        for row in mine:
            table.append(_cells(rows, row, meta))
        widths = [max(len(r[i]) for r in table) for i in range(len(head))]
        for i, cells in enumerate(table):
            out.append("  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
            if i == 0:
                out.append("  " + "  ".join("-" * w for w in widths))
        notes = [f"{LABELS[r.contender]}: {r.note}" for r in mine if r.note]
        notes += [f"{LABELS[r.contender]}: FAILED ({len(r.errors)}x): {r.errors[0].splitlines()[-1]}"
                  for r in mine if r.errors]
        out += [f"  * {n}" for n in notes]
    out.append("")
    out.append(f"JSON: {meta['json']}")
    return "\n".join(out)


def _cells(rows: list[Row], row: Row, meta: dict[str, Any]) -> tuple[str, ...]:
    lane = meta["lanes"][row.lane]["label"]
    label = LABELS[row.contender] + (" *" if row.note else "")
    if not row.runs:
        return (lane, label, "failed", "", "", "", "")
    values = row.values()
    base = baseline(rows, row)
    spread = f"{fmt_time(min(values))}-{fmt_time(max(values))}"
    target, verdict = TARGETS.get((row.workload, row.contender), ("", None))
    met = ""
    if target and base is not None:
        met = "  met" if verdict(row, base) else "  MISSED"
    if row.workload == "w3":
        rss = row.median("rss_mb")
        if base is None or base is row:
            versus, memory = "", f"{rss:.0f} MB"
        else:
            versus = f"{row.delta(base) * 1e3:+.0f} ms"
            memory = f"{rss:.0f} MB ({rss - base.median('rss_mb'):+.1f})"
        return (lane, label, fmt_time(row.median()), spread, versus, memory, target + met)
    ratio = "" if base is None else f"{row.ratio(base):.2f}x"
    wrong = row.runs[-1].get("wrong")
    answers = "" if row.contender in ("floor", "respx", "contains", "verdict", "plain") else (
        f"{row.runs[-1]['calls'] - wrong}/{row.runs[-1]['calls']} right")
    return (lane, label, fmt_time(row.median()), spread, ratio, answers, target + met)


def to_json(rows: list[Row], meta: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {**meta, "rows": []}
    for row in rows:
        base = baseline(rows, row)
        entry: dict[str, Any] = {
            "workload": row.workload, "lane": row.lane, "contender": row.contender,
            "label": LABELS[row.contender], "note": row.note, "errors": row.errors,
            "spec": {k: v for k, v in row.spec.items() if k not in ("base_url",)},
            "runs": row.runs,
        }
        if row.runs:
            metric = "seconds_to_first_reply" if row.workload == "w3" else "seconds_per_call"
            entry[metric] = {"median": row.median(), "min": min(row.values()),
                             "max": max(row.values())}
            if base is not None:
                entry["ratio_to_baseline"] = row.ratio(base)
                entry["baseline"] = base.contender
            if row.workload == "w3":
                entry["peak_rss_mb"] = {"median": row.median("rss_mb"),
                                        "min": min(row.values("rss_mb")),
                                        "max": max(row.values("rss_mb"))}
            target, verdict = TARGETS.get((row.workload, row.contender), ("", None))
            if target and base is not None:
                entry["target"] = target
                entry["target_met"] = bool(verdict(row, base))
        out["rows"].append(entry)
    return out


# -- main --------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and repetitions")
    parser.add_argument("--reps", type=int, help="repetitions per contender (default 5; quick 3)")
    parser.add_argument("--only", default="w1,w2,w3,w4,w5", help="workloads, e.g. w1,w3")
    parser.add_argument("--lanes", default="httpx2,httpx", help="httpx2 (openai 3.x), httpx (2.x)")
    parser.add_argument("--no-peers", action="store_true", help="floor and ghostrun only")
    parser.add_argument("--json", type=Path, default=RESULTS, help=f"default {RESULTS}")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args(argv)
    args.only = [w.strip().lower() for w in args.only.split(",") if w.strip()]
    args.reps = args.reps or (3 if args.quick else 5)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = wl.SIZES["quick" if args.quick else "full"]
    data = Path(tempfile.mkdtemp(prefix="ghostrun-bench-"))
    began = time.monotonic()
    lanes: dict[str, Any] = {}
    try:
        for lane in [x.strip() for x in args.lanes.split(",") if x.strip()]:
            if lane == "httpx" and ensure_openai2() is None:
                print("  ! no openai 2.x for the httpx lane: skipping it", file=sys.stderr)
                continue
            print(f"preparing lane {lane} (recording against the simulator) ...", flush=True)
            spec = {"data": str(data / lane), "sizes": sizes, "vcrpy": lane == "httpx2"
                    and not args.no_peers, "w3": lane == "httpx2" and "w3" in args.only,
                    "w5": lane == "httpx2" and "w5" in args.only}
            info = run_child("prepare.py", spec, lane)
            info["data"] = spec["data"]
            info["label"] = LANES[lane].format(v=info["openai"])
            lanes[lane] = info
        rows = build_rows(args, sizes, lanes)
        for workload in ("w1", "w2", "w3", "w4", "w5"):
            mine = [r for r in rows if r.workload == workload]
            if not mine:
                continue
            if workload == "w4":
                with simulator() as url:
                    for row in mine:
                        row.spec["base_url"] = url + "/v1"
                        row.spec["cassettes"] = str(data / "w4" / "ghostrun")
                    interleave_w4(mine, args.reps, data)
            else:
                interleave(mine, args.reps, workload.upper())
        meta = {
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "command": " ".join(["python", "benchmarks/run.py", *(argv or sys.argv[1:])]),
            "machine": machine(),
            "reps": args.reps,
            "sizes": sizes,
            "lanes": {k: {"label": v["label"], "openai": v["openai"]} for k, v in lanes.items()},
            "descriptions": describe(sizes, lanes),
            "json": str(args.json),
            "elapsed_s": round(time.monotonic() - began, 1),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(to_json(rows, meta), indent=2) + "\n")
        print()
        print(render(rows, meta))
        return 1 if any(r.errors for r in rows) else 0
    finally:
        if args.keep:
            print(f"data kept in {data}")
        else:
            shutil.rmtree(data, ignore_errors=True)


def describe(sizes: dict[str, int], lanes: dict[str, Any]) -> dict[str, str]:
    chunks = "?"
    for info in lanes.values():
        if "w2" in info and "chunks_per_stream" in info["w2"]:
            chunks = str(info["w2"]["chunks_per_stream"]["median"])
    return {w: text.format(n=sizes[w], chunks=chunks) for w, text in DESCRIPTIONS.items()}


def interleave_w4(rows: list[Row], reps: int, data: Path) -> None:
    """W4 records into a fresh directory each time, removed afterwards."""
    for rep in range(reps):
        print(f"\r  W4: repetition {rep + 1}/{reps}", end="", flush=True)
        for row in rows:
            target = data / "w4" / f"{row.contender}-{rep}"
            row.spec["cassettes"] = str(target)
            measure(row)
            shutil.rmtree(target, ignore_errors=True)
            shutil.rmtree(f"{target}-warm", ignore_errors=True)
    print(flush=True)


class simulator:  # noqa: N801 - used as a context manager, like a function
    """The loopback simulator in its own process, for as long as the block runs."""

    def __enter__(self) -> str:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "simserver.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env("httpx2"),
        )
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().strip()

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
