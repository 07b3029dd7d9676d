"""``ghostrun report``: one self-contained HTML page of a run, or of a diff between runs.

The page loads nothing (a Content-Security-Policy forbids every fetch; inline
CSS, no script), so it opens from disk or as a CI artifact anywhere. Per test:
its outcome; its requests in order as a trajectory (what each prompt added to
the conversation, the tool calls with their arguments, the answer); its
assertions with the judge's verdict and reason; the tokens it used, in total
and per step, from its trajectory (and their cost, given a price table: `_tokens`).
Given a base run, the tests
whose verdicts went from PASS to FAIL come first, then failures, then the rest.
Everything shown comes from files ghostrun already redacted.
"""

from __future__ import annotations

import html
from typing import Any

import orjson

from .._secrets._scrub import scrub_text
from .._store._formats import RunLogFile
from ._review._answers import answer_lines
from ._review._verdicts import verdict_changes
from ._tokens import Prices, usage

__all__ = ["render_report", "request_messages"]

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#222}
h1{font-size:1.5rem;margin:0 0 .25rem} h2{font-size:1.05rem;margin:0 0 .5rem}
header p{color:#555;margin:.25rem 0 1.5rem}
article{border:1px solid #ddd;border-radius:6px;padding:1rem;margin:0 0 1rem}
article.regressed{border-color:#c0392b;box-shadow:0 0 0 2px #f5c6c0}
.badge{display:inline-block;border-radius:4px;padding:0 .4rem;font-size:.8rem;color:#fff;
margin:0 .4rem;background:#777}
.passed{background:#2e7d32}.failed,.error{background:#c0392b}.skipped{background:#b7950b}
.PASS{color:#2e7d32;font-weight:600}.FAIL{color:#c0392b;font-weight:600}
ol.trajectory{padding-left:1.5rem} ol.trajectory>li{margin:0 0 .75rem}
.endpoint{font-family:ui-monospace,monospace;font-size:.85rem;color:#444}
.msg{margin:.2rem 0;white-space:pre-wrap} .role{font-weight:600;margin-right:.4rem}
pre{background:#f6f8fa;padding:.5rem;border-radius:4px;white-space:pre-wrap;margin:.25rem 0}
table{border-collapse:collapse;width:100%;margin-top:.5rem}
td,th{border-top:1px solid #eee;padding:.3rem .4rem;text-align:left;vertical-align:top}
.regression-list li{color:#c0392b}
"""
_ORDER = {"failed": 1, "error": 1, "skipped": 3, "xfailed": 3, "passed": 4}


def render_report(
    run: RunLogFile,
    cassettes: dict[str, dict[str, Any]],
    base: RunLogFile | None = None,
    trajectories: dict[str, dict[str, Any]] | None = None,
    prices: Prices | None = None,
) -> str:
    """The HTML page of ``run`` (a run log), its requests read from ``cassettes`` by key,
    the tokens each test used from its ``trajectories`` (by test name)."""
    found = run.get("tests")
    tests: dict[str, Any] = found if isinstance(found, dict) else {}
    base_tests = base["tests"] if base is not None else {}
    regressed = {
        name
        for name, test in tests.items()
        if any(v.regressed for v in verdict_changes(base_tests.get(name) or {}, test))
    }
    order = sorted(
        tests, key=lambda n: (n not in regressed, _ORDER.get(tests[n].get("outcome"), 2), n)
    )
    title = f"ghostrun report: {run.get('name', '?')}"
    if base is not None:
        title += f" against {base.get('name', '?')}"
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<header><h1>{_e(title)}</h1><p>{_e(_counts(run, tests))}</p></header>",
    ]
    if regressed:
        items = "".join(
            f'<li><a href="#t{order.index(n)}">{_e(n)}</a></li>' for n in sorted(regressed)
        )
        parts.append(
            f'<section><h2>Regressions</h2><ul class="regression-list">{items}</ul></section>'
        )
    parts.append("<main>")
    for index, name in enumerate(order):
        steps = ((trajectories or {}).get(name) or {}).get("steps") or []
        priced = (steps, prices)
        parts.append(_test(index, name, tests[name], cassettes, name in regressed, priced))
    parts.append("</main></body></html>")
    return "\n".join(parts) + "\n"


def _counts(run: RunLogFile, tests: dict[str, Any]) -> str:
    outcomes: dict[str, int] = {}
    for test in tests.values():
        outcome = test.get("outcome") or "unknown"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    shown = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
    return f"finished {run.get('finished', '?')}: {len(tests)} tests ({shown or 'none'})"


def _test(
    index: int,
    name: str,
    test: dict[str, Any],
    cassettes: dict[str, dict[str, Any]],
    regressed: bool,
    priced: tuple[list[dict[str, Any]], Prices | None] = ([], None),
) -> str:
    outcome = str(test.get("outcome") or "unknown")
    badge = f'<span class="badge {_e(outcome)}">{_e(outcome)}</span>'
    extra = '<span class="badge failed">regressed</span>' if regressed else ""
    css = "test regressed" if regressed else "test"
    parts = [f'<article class="{css}" id="t{index}"><h2>{badge}{_e(name)}{extra}</h2>']
    recorded, prices = priced
    total = usage(recorded, prices)
    if total is not None:
        parts.append(f'<p class="tokens">{_e(_tokens_text(total))}</p>')
    steps = [_step(entry, cassettes) for entry in test.get("cassettes") or ()]
    for step, in_trajectory in zip(steps, recorded, strict=False):
        if in_trajectory.get("key") == step["key"]:
            step["usage"] = usage([in_trajectory], prices)
    if steps:
        parts.append('<ol class="trajectory">' + "".join(_steps(steps)) + "</ol>")
    assertions = [a for a in test.get("assertions") or () if isinstance(a, dict)]
    if assertions:
        rows = "".join(_assertion_row(a) for a in assertions)
        head = "<tr><th>check</th><th>criterion</th><th>verdict</th><th>judge: reason</th></tr>"
        parts.append(f"<table>{head}{rows}</table>")
    parts.append("</article>")
    return "".join(parts)


def _step(entry: Any, cassettes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    key = str(entry.get("key")) if isinstance(entry, dict) else "?"
    how = str(entry.get("how", "")) if isinstance(entry, dict) else ""
    cassette = cassettes.get(key)
    if cassette is None:
        return {"key": key, "how": how, "missing": True}
    request = cassette.get("request") or {}
    body = request.get("body") or {}
    responses = cassette.get("responses") or []
    return {
        "key": key,
        "how": how,
        "endpoint": f"{request.get('method', '?')} {request.get('url', '?')}",
        "messages": request_messages(body.get("json") if isinstance(body, dict) else None),
        "answer": answer_lines(responses[-1]) if responses else [],
    }


def _steps(steps: list[dict[str, Any]]) -> list[str]:
    """Each request as it read: only what it added to the conversation before it."""
    out, seen = [], 0
    for step in steps:
        if step.get("missing"):
            out.append(f'<li><div class="endpoint">{_e(step["key"])}.json (not on disk)</div></li>')
            continue
        messages = step["messages"]
        new = messages[seen:] if len(messages) > seen else messages
        seen = len(messages)
        shown = "".join(
            f'<p class="msg"><span class="role">{_e(role)}</span>{_e(text)}</p>'
            for role, text in new
        )
        answer = "\n".join(step["answer"]) or "(no text)"
        used = step.get("usage")
        tokens = f", {_tokens_text(used)}" if used is not None else ""
        out.append(
            f'<li><div class="endpoint">{_e(step["endpoint"])} '
            f"<small>({_e(step['how'] + tokens)})</small></div>{shown}"
            f'<div><span class="role">answer</span><pre>{_e(answer)}</pre></div></li>'
        )
    return out


def _tokens_text(found: Any) -> str:
    cost = f", ${found.cost:.4f}" if found.cost is not None else ""
    return f"tokens: {found.tokens_in} in, {found.tokens_out} out{cost}"


def _assertion_row(item: dict[str, Any]) -> str:
    verdict = str(item.get("verdict", "?"))
    judge = item.get("judge")
    reason = f"{judge}: {item.get('reason', '')}" if judge else str(item.get("reason", ""))
    return (
        f"<tr><td>{_e(str(item.get('kind', '?')))}</td><td>{_e(str(item.get('criterion', '')))}"
        f'</td><td class="{_e(verdict)}">{_e(verdict)}</td><td>{_e(reason)}</td></tr>'
    )


def request_messages(body: Any) -> list[tuple[str, str]]:
    """A request's conversation as (role, text) pairs, whichever provider's shape it has."""
    if not isinstance(body, dict):
        return []
    found: list[tuple[str, str]] = []
    for name in ("system", "instructions", "systemInstruction", "system_instruction"):
        if body.get(name):
            found.append(("system", _content(body[name])))
    conversation = body.get("messages") or body.get("contents") or body.get("input") or []
    if isinstance(conversation, str):
        return [*found, ("user", conversation)]
    for item in conversation if isinstance(conversation, list) else ():
        found.append(_message(item))
    return found


def _message(item: Any) -> tuple[str, str]:
    if not isinstance(item, dict):
        return ("?", _content(item))
    role = str(item.get("role") or item.get("type") or "?")
    parts = item.get("content", item.get("parts", item.get("output")))
    text = _content(parts)
    calls = item.get("tool_calls")
    if isinstance(calls, list):
        text += "".join(
            f"\ntool call: {_call(c.get('function', c))}" for c in calls if isinstance(c, dict)
        )
    if item.get("type") == "function_call":
        text = f"tool call: {item.get('name')}({item.get('arguments', '')})"
    return role, text.strip()


def _content(value: Any) -> str:
    """Text of a message's content: a string, or parts of any provider's kind."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        value = value.get("parts", [value])
    if not isinstance(value, list):
        return "" if value is None else scrub_text(orjson.dumps(value).decode())
    pieces = []
    for part in value:
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, dict):
            pieces.append(_part(part))
    return scrub_text("\n".join(p for p in pieces if p))


def _part(part: dict[str, Any]) -> str:
    if isinstance(part.get("text"), str):
        return str(part["text"])
    kind = part.get("type")
    if kind == "tool_use" or "functionCall" in part:
        return f"tool call: {_call(part.get('functionCall', part))}"
    if kind == "tool_result" or "functionResponse" in part:
        return f"tool result: {_content(part.get('content', part.get('functionResponse')))}"
    return f"({kind or 'part'})"


def _call(call: Any) -> str:
    if not isinstance(call, dict):
        return str(call)
    arguments = call.get("arguments", call.get("input", call.get("args", {})))
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments).decode()
    return f"{call.get('name', '?')}({arguments})"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
