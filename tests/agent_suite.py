"""A small user project with an agent suite, for the commands that run pytest on it:
``ghostrun fork``, ``review --branch`` and ``compare``.

Its one test runs a tool loop through the real openai SDK against the loopback
simulator (``SIM_URL``): the model (``simulator.tool_plan``) calls
``lookup_order``, then ``issue_refund``, then answers in text: three steps.
The answer is judged (``contains_intent``) by a callable judge that passes a
text mentioning a refund, and checked deterministically (``contains``). A
second, plain test asks one question. The simulator's ``model_replies`` make
models answer differently.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from helpers import ROOT
from simulator import ProviderSimulator

SUITE = '''
import os

import openai
import pytest

import ghostrun


def refund_judge(text, criterion):
    """Passes a text that speaks of a refund: deterministic, and counted in JUDGED."""
    with open(os.environ["JUDGED"], "a") as log:
        log.write(text + "\\n")
    return "refund" in text.lower(), "mentions a refund" if "refund" in text.lower() else "no"


ghostrun.configure(judge=refund_judge)
URL = os.environ["SIM_URL"]
client = openai.OpenAI(base_url=URL + "/v1", api_key="sk-" + "agentfake" * 4, max_retries=0)
TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
    for name in ("lookup_order", "issue_refund")
]


@pytest.mark.ghostrun(hosts=[URL])
def test_refund_agent():
    messages = [{"role": "user", "content": "Please refund order A123"}]
    while True:
        reply = client.chat.completions.create(model="gpt-big", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "done"})
    ghostrun.expect(message.content).contains("A123")
    ghostrun.expect(message.content).contains_intent("the refund is under way")


@pytest.mark.ghostrun(hosts=[URL])
def test_greeting():
    reply = client.chat.completions.create(
        model="gpt-big", messages=[{"role": "user", "content": "Say hello to A123"}]
    )
    ghostrun.expect(reply.choices[0].message.content).contains("A123")
'''

AGENT_TEST = "test_agent.py::test_refund_agent"
GOOD = "Your refund for A123 is on its way."
OTHER_GOOD = "Refund for A123 issued today."
BAD = "Order A123 is noted."


def make_project(root: Path) -> Path:
    """The project, with ``cassettes/`` as its cassette directory."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[tool.ghostrun]\ncassette_dir = "cassettes"\n')
    (root / "test_agent.py").write_text(SUITE)
    return root


def project_env(provider: ProviderSimulator, root: Path) -> dict[str, str]:
    """What the project's pytest reads: the simulator's URL and the judge's log file."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", "CI")}
    env.update(SIM_URL=provider.base_url, JUDGED=str(root / "judged.log"))
    return env


def record(provider: ProviderSimulator, root: Path) -> None:
    """Record the suite as a user does, with ``gpt-big`` answering well."""
    provider.tool_plan = ["lookup_order", "issue_refund"]
    provider.model_replies = {"gpt-big": GOOD}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=root,
        env=project_env(provider, root),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def digests(directory: Path) -> dict[str, str]:
    """Every file of the recording (branches left out) by path: its sha256."""
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and "branches" not in path.relative_to(directory).parts
    }


def chat_models(provider: ProviderSimulator) -> list[str]:
    """The model of each chat request the simulator served, in order."""
    return [
        r.json["model"]
        for r in provider.requests
        if r.path.endswith("/chat/completions") and isinstance(r.json, dict)
    ]


EVOLVING = ROOT / "docs" / "evolving-a-suite.md"


def docs_block(first: str) -> list[str]:
    """The lines of the text block of docs/evolving-a-suite.md that starts with ``first``."""
    page = EVOLVING.read_text(encoding="utf-8")
    for block in page.split("```text\n")[1:]:
        if block.startswith(first):
            return block.split("```", 1)[0].splitlines()
    raise AssertionError(f"no text block starting {first!r} in {EVOLVING}")
