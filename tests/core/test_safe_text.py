"""Text for humans is safe where it goes (issue 28): Markdown that renders inert, terminals
that get no control sequence, from a model's answer and a judge's reason.

The end-to-end tests record two runs through the openai SDK against the loopback
provider, whose answer and whose judge's reason are hostile, then render
``review`` and ``diff`` as Markdown with a CommonMark parser (raw HTML allowed,
as GitHub allows its safe subset) and as text, and ``show`` a cassette. Each
fails on a ghostrun that quotes untrusted text by hand.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from html import unescape
from pathlib import Path

import openai
import pytest
from markdown_it import MarkdownIt
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core import _safe_text as safe
from ghostrun._recording import _runlog
from ghostrun._tools import _cli

LOOPBACK = ("127.0.0.1",)
TRAP = "http://127.0.0.1:9"  # a refusing port: nothing may ever fetch it
ESCAPES = "\x1b]52;c;aGFjaw==\x07 \x1b]8;;" + TRAP + "/\x07link\x1b]8;;\x07 \x1b[31mred\x9b2J"
ANSWER = (
    "Sure:\n```\nclosed the fence\n```\n"
    f'<img src="{TRAP}/pixel.png"> ![x]({TRAP}/i.png) [click]({TRAP}/c) <{TRAP}/auto>\n'
    f"<script>alert(1)</script> &amp; {ESCAPES}"
)
REASON = f"FAIL <img src=x onerror=alert(1)> | extra | ![i]({TRAP}/r.png) [l]({TRAP}/) {ESCAPES}"


# -- each rule, as a table ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain\ttext\n", "plain\ttext\n"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("\x1b]52;c;aGk=\x07", "\\x1b]52;c;aGk=\\x07"),
        ("a\rb\x00c\x7fd\x9be", "a\\x0db\\x00c\\x7fd\\x9be"),
        ("evil\u202etxt.exe", "evil\\u202etxt.exe"),
        ("\\x1b stays as it is", "\\x1b stays as it is"),
    ],
)
def test_terminal_shows_control_characters_as_escapes(text: str, shown: str) -> None:
    assert safe.terminal(text) == shown
    assert safe.terminal(shown) == shown  # idempotent: quoting twice changes nothing


@pytest.mark.parametrize(
    ("lines", "fence"),
    [([], "```"), (["a ``` b"], "````"), (["`````"], "``````"), (["no ticks"], "```")],
)
def test_a_fence_is_longer_than_any_backtick_run(lines: list[str], fence: str) -> None:
    assert safe.fence(lines) == fence
    assert safe.code_block(lines, "diff") == [fence + "diff", *lines, fence]


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("<img src=x>", "&lt;img src=x&gt;"),
        ("a & b", "a &amp; b"),
        ("![x](http://h/i.png)", "!\\[x\\](http://h/i.png)"),
        ("[a](b) and\nmore", "\\[a\\](b) and more"),
        ("<http://h/auto>", "&lt;http://h/auto&gt;"),
        ("`code` \\", "\\`code\\` \\\\"),
        ("http://bare.example/x", "http://bare.example/x"),
    ],
)
def test_inline_markdown_is_literal(text: str, shown: str) -> None:
    assert safe.inline(text) == shown


def test_a_cell_escapes_its_pipes_and_code_outruns_its_backticks() -> None:
    assert safe.cell("a | b") == "a \\| b"
    assert safe.cell("x|y", as_code=True) == "`x\\|y`"
    assert safe.code("has `ticks`") == "``has `ticks```" or safe.code("has `ticks`") == (
        "`` has `ticks` ``"
    )
    assert safe.code("plain") == "`plain`"


# -- through the commands ------------------------------------------------------------------------


def _render(markdown: str) -> str:
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


def _assert_inert(html: str) -> None:
    """Nothing that fetches, runs or links: the trap URL appears only as text."""
    for tag in ("<img", "<script", "<a ", "<iframe"):
        assert tag not in html, (tag, html)
    assert "\x1b" not in html and "\x9b" not in html


def _record(directory: Path, provider: ProviderSimulator, answer: str, reason: str) -> None:
    provider.reply = answer

    def judge(text: str, criterion: str) -> tuple[bool, str]:
        return reason.startswith("PASS"), reason

    with ghostrun.session(
        mode="record", cassette_dir=directory, hosts=LOOPBACK, name="test_app.py::test_reply"
    ):
        client = openai.OpenAI(base_url=provider.url("/v1"), api_key="sk-" + "proj-safe0123456789")
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": f"say it {len(answer)}"}]
        )
        text = reply.choices[0].message.content or ""
        with contextlib.suppress(AssertionError):  # the "after" verdict fails, as intended
            ghostrun.expect(text, judge=judge).contains_intent("is polite")
    _runlog.write_run()  # the run log the commands read, as a test run's end writes it


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """Two runs of one test: a plain answer and verdict, then hostile ones."""
    root = tmp_path_factory.mktemp("runs")
    with ProviderSimulator() as provider:
        _record(root / "before", provider, "A plain answer.", "PASS it is polite")
        _record(root / "after", provider, ANSWER, REASON)
    yield root / "before", root / "after"


def _cli_out(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert _cli.main(list(args)) in (0, 1)  # 1: a regression, as here
    return capsys.readouterr().out


def test_review_markdown_renders_inert(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = runs
    markdown = _cli_out(capsys, "review", str(before), str(after), "--format", "markdown")
    assert "closed the fence" in markdown and "onerror" in markdown  # it is all there
    html = _render(markdown)
    _assert_inert(html)
    # The answer stays inside its code block: its own fence closed nothing.
    blocks = [part.split("</pre>", 1)[0] for part in html.split("<pre>")[1:]]
    block = next(b for b in blocks if "closed the fence" in b)  # the answer's (tokens first)
    assert "closed the fence" in block and "&lt;script&gt;" in block and "[click]" in block


def test_diff_markdown_renders_inert_and_the_reason_stays_in_its_cell(
    runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = (path / "runs" / "_last.json" for path in runs)
    where = ("--cassette-dir", str(runs[1]))
    markdown = _cli_out(capsys, "diff", str(before), str(after), "--format", "markdown", *where)
    html = _render(markdown)
    _assert_inert(html)
    row = next(row for row in html.split("<tr>") if "onerror" in row)
    assert row.count("<td>") == 6 and "| extra |" in row  # the pipes did not add cells


@pytest.mark.parametrize("command", ["review", "diff", "show"])
def test_text_output_sends_no_control_sequence_to_the_terminal(
    command: str, runs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = runs
    if command == "review":
        out = _cli_out(capsys, "review", str(before), str(after))
    elif command == "diff":
        runs_of = [str(p / "runs" / "_last.json") for p in runs]
        out = _cli_out(capsys, "diff", *runs_of, "--cassette-dir", str(after))
    else:
        (cassette,) = after.glob("*.json")
        out = _cli_out(capsys, "show", str(cassette), "--cassette-dir", str(after))
    assert "\\x1b]52;c;aGFjaw==\\x07" in out, out  # shown, as an escape
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out


def test_the_renderers_themselves_are_safe_without_the_cli(runs: tuple[Path, Path]) -> None:
    from ghostrun._tools._review._compare import review
    from ghostrun._tools._review._render import render
    from ghostrun._tools._review._states import state_from_dir

    found = review(state_from_dir(runs[0]), state_from_dir(runs[1]))
    for fmt in ("text", "markdown"):
        assert "\x1b" not in render(found, fmt)


# -- mentions (issue 41) -------------------------------------------------------------------------

MENTIONS = "thanks @octocat, cc @github/security-team and @Org_1"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("ping @octocat", "ping @&#8203;octocat"),
        ("@github/security-team", "@&#8203;github/security-team"),
        ("mail a@b.example", "mail a@&#8203;b.example"),
        ("a lone @ sign", "a lone @ sign"),
    ],
)
def test_inline_markdown_mentions_nobody(text: str, shown: str) -> None:
    assert safe.inline(text) == shown
    assert safe.code(text) == f"`{text}`"  # inside code, GitHub pings nobody: kept as it is


def _mentions_outside_code(html: str) -> list[str]:
    """``@name`` in the rendered text outside ``<code>``, as GitHub's mention filter reads it."""
    outside = re.sub(r"(?s)<code>.*?</code>|<pre>.*?</pre>", "", html)
    return re.findall(r"@[A-Za-z0-9][A-Za-z0-9/_-]*", unescape(outside))


def test_review_markdown_pings_nobody(
    tmp_path: Path, provider: ProviderSimulator, capsys: pytest.CaptureFixture[str]
) -> None:
    """A judge's reason, a test id and an answer that mention people, through the real
    openai SDK and ``ghostrun review --format markdown``, rendered by a CommonMark parser."""
    before, after = tmp_path / "before", tmp_path / "after"
    for directory, answer, reason in (
        (before, "A plain answer.", "PASS it is polite"),
        (after, f"Answer: {MENTIONS}", f"FAIL ask {MENTIONS}"),
    ):
        provider.reply = answer
        with ghostrun.session(
            mode="record",
            cassette_dir=directory,
            hosts=LOOPBACK,
            name="test_app.py::test_reply[@octocat]",
        ):
            client = openai.OpenAI(base_url=provider.url("/v1"), api_key="sk-" + "proj-ping0123")
            reply = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": f"say it {len(answer)}"}]
            )
            text = reply.choices[0].message.content or ""
            with contextlib.suppress(AssertionError):
                verdict = (reason.startswith("PASS"), reason)
                judged = ghostrun.expect(text, judge=lambda t, c, said=verdict: said)
                judged.contains_intent("is polite")
        _runlog.write_run()

    markdown = _cli_out(capsys, "review", str(before), str(after), "--format", "markdown")
    assert "octocat" in markdown and "security-team" in markdown  # all of it is shown
    html = _render(markdown)
    assert _mentions_outside_code(html) == [], html
    _assert_inert(html)  # and last round's rules still hold
