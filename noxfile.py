"""The version matrix: every road ghostrun hooks, at the versions users install.

    nox -s tests      the default resolve of ``.[test]``, the whole suite (as .ci/run did)
    nox -s newest     every road library and SDK at the newest version the registry
                      serves today, resolved when the session runs; no openai-agents
                      (it caps websockets below 17), so websockets is its newest;
                      the roads-and-replay tests (``--all`` for the whole suite)
    nox -s agents     the small lane that keeps openai-agents: the tests marked
                      ``openai_agents``, newest versions otherwise
    nox -s oldest     every road library pinned at the lowest version pyproject.toml's
                      ``roads`` extra claims; the roads-and-replay tests
    nox -s mcp_oldest the MCP road's tests with mcp at the lowest version its ``mcp``
                      extra claims (a 1.x), everything else as it resolves

Each session prints the versions of the road libraries and SDKs it resolved
before any test runs. When ``newest`` or ``oldest`` fails, it names the
packages whose versions differ from the lane's last pass (docs/tested-with.json):
the likely culprits. A lane that passes records its versions there;
docs/tested-with.md is rendered from it then (``docs/tested_with.py``).
"""

from __future__ import annotations

import json
import re
import runpy
import sys
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import nox

nox.options.sessions = ["tests"]
nox.options.default_venv_backend = "uv|venv"  # uv resolves the lanes in seconds, not minutes

ROOT = Path(__file__).parent
RESULTS = ROOT / "docs" / "tested-with.json"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]

ROADS = [re.split(r"[<>=!~ ;\[]", spec, maxsplit=1)[0] for spec in EXTRAS["roads"]]
"""The road libraries: the ``roads`` extra, each with the lowest version supported."""
SDKS = ["openai", "anthropic", "groq", "ollama", "google-genai", "litellm", "boto3", "dspy"]
SHOWN = [*ROADS, "mcp", *SDKS, "openai-agents", "pytest"]
"""The versions each session prints and records."""

AGENTS = "openai-agents"
AGENT_MARK = "openai_agents"
"""The marker of the tests that run openai-agents (pyproject's ``markers``)."""
AGENT_MODULES = ["tests/intercept/test_telemetry.py"]
"""Test files that import openai-agents at the top: not even collected without it."""
ROAD_TESTS = [
    "tests/intercept/test_websockets.py",
    "tests/intercept/test_aiohttp.py",
    "tests/intercept/test_urllib3.py",
    "tests/intercept/test_bedrock.py",
    "tests/recording/test_replay.py",
    "tests/intercept/test_unhooked.py",
    "tests/intercept/test_late_roads.py",
    "tests/intercept/test_layered_clients.py",
    "tests/recording/test_session.py",
    "tests/intercept/test_guard.py",
    "tests/intercept/test_engine.py",
    "tests/wire/test_fidelity.py",
    "tests/intercept/test_dspy.py",
    "tests/intercept/test_grpc.py",
    "tests/intercept/test_aiohttp_chunks.py",
    "tests/wire/test_streams.py",
    "tests/intercept/test_reason.py",
    "tests/intercept/test_hostile_redirects.py",
    "tests/intercept/test_guard_escapes.py",
]
"""The roads-and-replay tests: every road recorded and replayed through the real clients."""


def _test_deps(without: tuple[str, ...] = (), *, any_sdk: bool = False) -> list[str]:
    """The ``test`` extra's requirements, minus the distributions named.

    ``any_sdk``: the SDKs at whatever version resolves (with the oldest roads).
    """
    return [
        _name(spec) if any_sdk and _name(spec) in SDKS else spec
        for spec in EXTRAS["test"]
        if _name(spec) not in without
    ]


def _name(spec: str) -> str:
    return re.split(r"[<>=!~ ;\[]", spec, maxsplit=1)[0].lower()


def _lowest(spec: str) -> str:
    """``httpx>=0.27`` pinned: ``httpx==0.27``."""
    found = re.search(r">=\s*([\w.]+)", spec)
    if found is None:
        raise ValueError(f"{spec!r} in the roads extra has no lower bound to pin")
    return f"{_name(spec)}=={found.group(1)}"


def _versions(session: nox.Session) -> dict[str, str]:
    """What the session's venv resolved, of the packages `SHOWN`."""
    code = (
        "import json, importlib.metadata as m\n"
        "found = {}\n"
        f"for name in {SHOWN!r}:\n"
        "    try: found[name] = m.version(name)\n"
        "    except m.PackageNotFoundError: pass\n"
        "print(json.dumps(found))\n"
    )
    out = session.run("python", "-c", code, silent=True)
    versions: dict[str, str] = json.loads(str(out).strip().splitlines()[-1])
    width = max(map(len, versions))
    session.log("resolved:\n" + "\n".join(f"  {n:<{width}} {v}" for n, v in versions.items()))
    return versions


def _last_pass(lane: str) -> dict[str, str]:
    if not RESULTS.exists():
        return {}
    found: dict[str, str] = json.loads(RESULTS.read_text()).get(lane, {}).get("versions", {})
    return found


def _pytest(session: nox.Session, lane: str, versions: dict[str, str], *args: str) -> None:
    """Run pytest; on a failure name what changed since the lane last passed; record a pass."""
    try:
        session.run("python", "-m", "pytest", "-q", "-p", "no:randomly", *args)
    except nox.command.CommandFailed:
        before = _last_pass(lane)
        changed = [
            f"{name} {before.get(name, '(new)')} -> {version}"
            for name, version in versions.items()
            if before.get(name) != version
        ]
        resolved = ", ".join(f"{n} {v}" for n, v in versions.items())
        session.error(
            f"{lane} failed with {resolved}. "
            + (
                "Changed since its last pass: " + "; ".join(changed) + "."
                if changed
                else "Nothing changed since its last pass: the failure is in ghostrun."
            )
        )
    _record(lane, versions)


def _record(lane: str, versions: dict[str, str]) -> None:
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results[lane] = {
        "passed": datetime.now(UTC).strftime("%Y-%m-%d"),
        "python": ".".join(map(str, sys.version_info[:2])),
        "versions": versions,
    }
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    # The page is rendered from the results at once: the two never disagree in a checkout
    # (tests/project/test_readme.py holds them to it).
    runpy.run_path(str(ROOT / "docs" / "tested_with.py"), run_name="__main__")


def _road_args(session: nox.Session, *skip: str) -> list[str]:
    """The roads-and-replay tests (``--all``: the whole suite, or the posargs), minus ``skip``.

    openai-agents' tests are always skipped here: its lane is `agents`.
    """
    args = list(session.posargs) or ROAD_TESTS
    if "--all" in args:
        args = ["tests", *(a for a in args if a != "--all")]
    skipped = (*AGENT_MODULES, *skip)
    args = [a for a in args if a not in skipped]
    for target in skipped:
        args += [f"--ignore={target}"] if "::" not in target else ["--deselect", target]
    return [*args, "-m", f"not {AGENT_MARK}"]


@nox.session
def tests(session: nox.Session) -> None:
    """The default resolve, the whole suite on 2 workers."""
    session.install("-e", ".[test]")
    versions = _versions(session)
    _pytest(session, "tests", versions, "tests", "-n", "2")


@nox.session
def newest(session: nox.Session) -> None:
    """Every road library and SDK at its newest, openai-agents left out."""
    session.install("--upgrade", "-e", ".", *_test_deps((AGENTS,)), *ROADS)
    versions = _versions(session)
    _pytest(session, "newest", versions, *_road_args(session), "-n", "2")


@nox.session
def agents(session: nox.Session) -> None:
    """openai-agents' own tests, with the newest versions it allows."""
    session.install("--upgrade", "-e", ".[test]")
    versions = _versions(session)
    _pytest(session, "agents", versions, "tests", "-m", AGENT_MARK, "-n", "2")


@nox.session
def oldest(session: nox.Session) -> None:
    """Every road library at the lowest version supported; SDKs as they resolve with them."""
    pins = [_lowest(spec) for spec in EXTRAS["roads"]]
    botocore = next(pin for pin in pins if pin.startswith("botocore=="))
    boto3 = botocore.replace("botocore", "boto3")  # boto3 x.y.z pins botocore x.y.z
    sdks = [f"{name}=={version}" for name, version in OLDEST_SDKS.items()]
    session.install("-e", ".", *_test_deps(OLDEST_LEFT_OUT, any_sdk=True), *pins, boto3, *sdks)
    versions = _versions(session)
    wrong = [pin for pin in pins if _off_pin(versions.get(_name(pin)), pin)]
    if wrong:
        session.error(f"oldest did not resolve its pins: {wrong}; resolved {versions}")
    _pytest(session, "oldest", versions, *_road_args(session, *OLDEST_SKIPS), "-n", "2")


MCP_TESTS = [
    "tests/intercept/test_mcp_stdio.py",
    "tests/intercept/test_mcp_http.py",
    "tests/store/test_mcpcassette.py",
]
"""The MCP road's tests: mcp's own client, openai-agents' ``MCPServerStdio``, over stdio and
streamable HTTP."""
PYDANTIC_AI_MARK = "pydantic_ai"
"""The marker of the tests that run pydantic-ai's MCP toolsets, which need mcp 2: left out of
the lane with mcp 1.x."""


@nox.session
def mcp_oldest(session: nox.Session) -> None:
    """The MCP road with mcp at the lowest version supported (a 1.x: openai-agents allows it,
    and its stdio client drives the server's process unlike 2.x); the rest as it resolves."""
    pin = _lowest(EXTRAS["mcp"][0])
    session.install("-e", ".", *_test_deps(("mcp", "pydantic-ai-slim")), pin)
    versions = _versions(session)
    if _off_pin(versions.get("mcp"), pin):
        session.error(f"mcp_oldest did not resolve {pin}; resolved {versions}")
    _pytest(session, "mcp-oldest", versions, *MCP_TESTS, "-m", f"not {PYDANTIC_AI_MARK}", "-n", "2")


def _off_pin(version: str | None, pin: str) -> bool:
    """True if ``version`` is not the one ``pin`` asks (``0.27`` is ``0.27.0``)."""
    want = pin.split("==")[1].split(".")
    have = (version or "").split(".")
    return have[: len(want)] != want or any(part != "0" for part in have[len(want) :])


OLDEST_LEFT_OUT = (
    AGENTS,
    "dspy",
    "litellm",
    "boto3",
    "pydantic-ai-slim",
    "mcp",
    "xai-sdk",
    "google-ai-generativelanguage",
    "cohere",
    "vcrpy",
    "cassetter",
    "mkdocs-material",
    "mkdocstrings",
    "playwright",
)
"""Not installable beside the oldest roads (pydantic-ai, mcp and xai-sdk need a newer httpx2,
dspy needs litellm), or not a road's test (the docs site, the import peers); boto3 is
pinned to the oldest botocore instead."""
OLDEST_SDKS = {
    "openai": "2.54.0",
    "anthropic": "2.16.0",
    "groq": "1.7.0",
    "ollama": "0.6.3",
    "google-genai": "3.6.1",
}
"""The SDKs as pip's resolver chose them beside the oldest roads (openai 3 needs a newer
httpx2), pinned so the lane installs without minutes of backtracking."""
OLDEST_SKIPS = (
    "tests/intercept/test_layered_clients.py",
    "tests/intercept/test_dspy.py",
    "tests/intercept/test_grpc.py",
    "tests/wire/test_streams.py::test_cohere_chat_stream_is_recorded_chunk_by_chunk_and_replayed",
    "tests/wire/test_streams.py::test_while_recording_cohere_gets_the_first_chunk_before_the_server_sends_the_last",
    "tests/intercept/test_guard.py::test_dspy_default_engine",
)
"""The tests of what `OLDEST_LEFT_OUT` leaves out."""
