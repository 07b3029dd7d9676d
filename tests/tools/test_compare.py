"""``ghostrun compare``: the agent suite (`agent_suite`) on a candidate model.

The suite is recorded with ``gpt-big``; a candidate the simulator makes answer
without the word the judged assertion looks for fails that one test in every
run, and ``compare`` exits 1 naming it; a candidate that answers as well exits
0. The pass rates, Wilson intervals, tokens and costs of the report are worked
out here from the requests the simulator served.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from agent_suite import (
    AGENT_TEST,
    BAD,
    OTHER_GOOD,
    chat_models,
    docs_block,
    make_project,
    record,
)
from simulator import ProviderSimulator

from ghostrun._core import _safe_text as safe
from ghostrun._tools._candidate import Comparison, PerTest, Rate
from ghostrun._tools._cli import main
from ghostrun._tools._commands._compare import render

GREETING = "test_agent.py::test_greeting"
PRICES = {"gpt-big": {"in": 10, "out": 30}, "gpt-small": {"in": 1, "out": 4}}


@pytest.fixture
def project(tmp_path: Path, provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_project(tmp_path / "project")
    record(provider, root)
    monkeypatch.chdir(root)
    monkeypatch.setenv("SIM_URL", provider.base_url)
    monkeypatch.setenv("JUDGED", str(root / "judged.log"))
    (root / "prices.json").write_text(json.dumps(PRICES))
    return root


def wilson(passes: int, runs: int) -> tuple[float, float]:
    z = 1.96
    p = passes / runs
    centre = (p + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z / (1 + z * z / runs) * math.sqrt(p * (1 - p) / runs + z * z / (4 * runs**2))
    return centre - half, centre + half


def usage_served(bodies: list[dict[str, Any]]) -> dict[str, float]:
    """Tokens of one test's requests as served: a message's words (1 at least) in; out, the
    tool call's arguments the next request carried back, or the answer's words."""
    tokens_in = tokens_out = 0
    for at, body in enumerate(bodies):
        texts = [
            m["content"] if isinstance(m.get("content"), str) else "" for m in body["messages"]
        ]
        tokens_in += sum(max(1, len(t.split())) for t in texts)
        if at + 1 < len(bodies):
            call = bodies[at + 1]["messages"][-2]["tool_calls"][0]["function"]["arguments"]
            tokens_out += len(call.split())
        else:
            tokens_out += len(BAD.split())  # the candidate's answer
    price = PRICES["gpt-small"]
    cost = (tokens_in * price["in"] + tokens_out * price["out"]) / 1e6
    return {"in": tokens_in, "out": tokens_out, "cost_usd": cost}


def test_a_candidate_that_fails_one_criterion_every_run_is_worse(
    project: Path, provider: ProviderSimulator, capsys: pytest.CaptureFixture[str]
) -> None:
    provider.reset()
    provider.model_replies = {"gpt-small": BAD}

    status = main(["compare", "--model", "gpt-small", "--repeat", "3", "--format", "json",
                   "--prices", "prices.json"])  # fmt: skip

    assert status == 1
    found = json.loads(capsys.readouterr().out)
    assert chat_models(provider) == ["gpt-small"] * 12  # 3 runs of 4 steps, the replay none
    agent, greeting = found["tests"][AGENT_TEST], found["tests"][GREETING]
    assert (agent["worse"], greeting["worse"], found["worse"]) == (True, False, True)
    assert agent["outcomes"] == {"recording": "passed", "candidate": ["failed"] * 3}
    assert (agent["changed"], greeting["changed"]) == (True, False)
    assert agent["candidate"]["ci95"] == pytest.approx(list(wilson(0, 3)), abs=1e-3)
    assert greeting["candidate"]["ci95"] == pytest.approx(list(wilson(3, 3)), abs=1e-3)
    overall = found["overall"]
    assert (overall["candidate"]["passes"], overall["candidate"]["runs"]) == (3, 6)
    assert overall["candidate"]["ci95"] == pytest.approx(list(wilson(3, 6)), abs=1e-3)
    assert overall["recording"]["rate"] == 1.0 and found["suite_worse"]

    served = [r.json for r in provider.requests if r.path.endswith("/chat/completions")]
    runs = [served[i : i + 4] for i in (0, 4, 8)]
    for name, has_tools in ((AGENT_TEST, True), (GREETING, False)):
        each = [usage_served([b for b in r if bool(b.get("tools")) is has_tools]) for r in runs]
        mean = {key: sum(u[key] for u in each) / 3 for key in ("in", "out", "cost_usd")}
        shown = found["tests"][name]["tokens"]["candidate_per_run"]
        assert shown == {**mean, "cost_usd": pytest.approx(mean["cost_usd"])}
    total = found["tokens"]["candidate_per_run"]
    assert total["in"] == sum(
        t["tokens"]["candidate_per_run"]["in"] for t in found["tests"].values()
    )
    recorded = found["tests"][AGENT_TEST]["tokens"]["recording"]
    assert recorded["cost_usd"] == pytest.approx((recorded["in"] * 10 + recorded["out"] * 30) / 1e6)


def test_an_equivalent_candidate_passes_and_a_worse_one_is_named(
    project: Path, provider: ProviderSimulator, capsys: pytest.CaptureFixture[str]
) -> None:
    provider.model_replies = {"gpt-alt": OTHER_GOOD, "gpt-small": BAD}

    assert main(["compare", "--model", "gpt-big=gpt-alt", "--repeat", "2"]) == 0
    text = capsys.readouterr().out
    assert "OK: the candidate is not worse beyond the 95% interval" in text
    assert "candidate 4/4 (100.0%, 95% CI 51.0% to 100.0%)" in text
    assert "changed outcome: 0" in text

    worse = ["compare", "--model", "gpt-small", "--repeat", "2", "--prices", "prices.json"]
    assert main(worse) == 1
    text = capsys.readouterr().out
    assert f"WORSE: the suite, {AGENT_TEST}" in text
    assert f"  {AGENT_TEST}: passed -> failed in 2 of 2 runs" in text
    assert text.splitlines() == docs_block("ghostrun compare: gpt-small")


def test_the_markdown_is_safe_for_a_pull_request_comment() -> None:
    hostile = "test_x[`a|b` <img src=x> [link](https://e.vil)]"
    rate = Rate(1, 1)
    test = PerTest(hostile, rate, Rate(0, 2), ("passed", ("failed", "failed")), (None, None), True)
    found = Comparison("m<b>", 2, 0.0, (test,), rate, Rate(0, 2), (None, None), True)
    markdown = render(found, "markdown")
    assert safe.cell(hostile, as_code=True) in markdown  # the table's cell: code, "|" escaped
    assert f"- {safe.code(hostile)}: passed -&gt; failed in 2 of 2 runs" in markdown
    assert "**WORSE: the suite, test\\_x" not in markdown  # inline() escapes no underscore
    assert "**WORSE: the suite, test_x\\[\\`a|b\\` &lt;img" in markdown
    rest = markdown.replace(safe.cell(hostile, as_code=True), "").replace(safe.code(hostile), "")
    rest = rest.replace(safe.code("m<b>"), "")
    assert "<" not in rest and not re.search(r"(?<!\\)\]\(", rest)  # no tag, no link
    row = next(line for line in markdown.splitlines() if line.startswith("| ``test_x"))
    assert row.replace(safe.cell(hostile, as_code=True), "").count("|") == 6
    assert "<img" not in render(found, "html") and "&lt;img" in render(found, "html")
