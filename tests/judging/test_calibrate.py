"""``ghostrun calibrate``: the judge measured against labels, through the real ollama client.

The loopback simulator plays the Ollama judge; its ``judge_reply`` hook decides
each verdict from the text, the criterion and the draw's seed, so every figure
below is known in advance and worked out by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT
from simulator import ProviderSimulator

import ghostrun
from ghostrun._core._modes import Mode
from ghostrun._judging._calibration._cases import load_cases
from ghostrun._judging._calibration._statistics import agreement
from ghostrun._judging._judges import OllamaJudge
from ghostrun._judging._verdicts import grade
from ghostrun._tools._cli import main

EXAMPLE_LABELS = ROOT / "examples" / "calibration" / "labels.jsonl"


def asked(body: dict[str, Any]) -> tuple[str, str, int | None]:
    """(text, criterion, seed) of one judge request, as the judge prompt carries them."""
    content = body["messages"][1]["content"]
    criterion, _, text = content.partition("\n\nTEXT: ")
    return text, criterion.removeprefix("CRITERION: "), body["options"].get("seed")


def verdict(word: str, reason: str = "because") -> str:
    return json.dumps({"verdict": word, "reason": reason})


def write_labels(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_threshold() -> Iterator[None]:
    yield
    ghostrun.configure(min_judge_kappa=None)


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["calibrate", *args])
    out, err = capsys.readouterr()
    return code, out, err


def judge_args(provider: ProviderSimulator, cassette_dir: Path, *more: str) -> list[str]:
    url = provider.base_url
    return ["--cassette-dir", str(cassette_dir), "--judge", "ollama", "--judge-url", url, *more]


# --- the figures, as pure functions ----------------------------------------------------


def test_agreement_by_hand() -> None:
    # 6 cases labelled PASS, 4 FAIL; the judge is wrong on one of each.
    pairs = [(True, True)] * 5 + [(False, True)] + [(False, False)] * 3 + [(True, False)]
    found = agreement(pairs)
    assert found.n == 10
    assert found.accuracy == pytest.approx(0.8)
    assert found.fail_precision == pytest.approx(3 / 4)
    assert found.fail_recall == pytest.approx(3 / 4)
    # p_o = 0.8, p_e = 0.4 * 0.4 + 0.6 * 0.6 = 0.52
    assert found.kappa == pytest.approx((0.8 - 0.52) / (1 - 0.52))


@pytest.mark.parametrize(
    ("pairs", "accuracy", "precision", "recall", "kappa"),
    [
        ([(True, True), (False, False)], 1.0, 1.0, 1.0, 1.0),
        ([(True, True), (True, True)], 1.0, None, None, None),  # one answer throughout
        ([(True, True)] * 3 + [(True, False)] * 2, 0.6, None, 0.0, 0.0),  # always PASS
        ([(False, True), (True, False)], 0.0, 0.0, 0.0, -1.0),  # always wrong
    ],
)
def test_agreement_edges(
    pairs: list[tuple[bool, bool]],
    accuracy: float,
    precision: float | None,
    recall: float | None,
    kappa: float | None,
) -> None:
    found = agreement(pairs)
    assert found.accuracy == pytest.approx(accuracy)
    assert found.fail_precision == (None if precision is None else pytest.approx(precision))
    assert found.fail_recall == (None if recall is None else pytest.approx(recall))
    assert found.kappa == (None if kappa is None else pytest.approx(kappa))


# --- whole runs through the CLI and the real ollama client ------------------------------


def ten_cases(tmp_path: Path) -> Path:
    rows = [{"text": f"reply {i}", "criterion": "is helpful", "expected": "PASS"} for i in range(6)]
    rows += [
        {"text": f"reply {i}", "criterion": "is helpful", "expected": "FAIL"} for i in (6, 7, 8)
    ]
    rows += [{"text": "reply 9", "criterion": "is helpful", "expected": "FAIL"}]
    return write_labels(tmp_path / "labels.jsonl", rows)


def wrong_on(texts: set[str], labels: Path) -> Callable[[dict[str, Any]], str]:
    """A judge that gives each case its label, except the cases named, where it errs."""
    expected = {}
    for line in labels.read_text().splitlines():
        row = json.loads(line)
        expected[row["text"]] = row["expected"]

    def reply(body: dict[str, Any]) -> str:
        text, _criterion, _seed = asked(body)
        word = expected[text]
        if text in texts:
            word = "FAIL" if word == "PASS" else "PASS"
        return verdict(word, f"graded {text}")

    return reply


def test_known_mistakes_give_exact_figures_and_a_rerun_sends_nothing(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = ten_cases(tmp_path)
    provider.judge_reply = wrong_on({"reply 5", "reply 9"}, labels)
    args = [
        str(labels),
        *judge_args(provider, tmp_path / "c", "--mode", "auto", "--format", "json"),
    ]

    code, out, err = run(args, capsys)
    assert (code, err) == (0, "")
    report = json.loads(out)
    (result,) = report["results"]
    assert result["votes"] == 1 and result["graded"] == 10
    assert result["accuracy"] == pytest.approx(0.8)
    assert result["fail_precision"] == pytest.approx(0.75)
    assert result["fail_recall"] == pytest.approx(0.75)
    assert result["kappa"] == pytest.approx(0.28 / 0.48)
    assert result["flip_rate"] == 0.0 and result["unstable"] is None
    assert [(w["line"], w["verdict"], w["reason"]) for w in result["wrong"]] == [
        (6, "FAIL", "graded reply 5"),
        (10, "PASS", "graded reply 9"),
    ]
    assert provider.served == 10

    code, again, _ = run(args, capsys)
    assert code == 0 and json.loads(again) == report
    assert provider.served == 10  # every grading came from the cache


def test_replay_with_a_missing_grading_is_a_miss(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = ten_cases(tmp_path)
    provider.judge_reply = wrong_on(set(), labels)
    cassettes = tmp_path / "c"
    assert run([str(labels), *judge_args(provider, cassettes, "--mode", "auto")], capsys)[0] == 0
    served = provider.served

    code, _out, _err = run(
        [str(labels), *judge_args(provider, cassettes, "--mode", "replay")], capsys
    )
    assert code == 0  # everything is cached: replay grades offline

    with labels.open("a") as f:
        f.write(json.dumps({"text": "reply 10", "criterion": "is helpful", "expected": "PASS"}))
    code, _out, err = run(
        [str(labels), *judge_args(provider, cassettes, "--mode", "replay")], capsys
    )
    assert code == 2
    assert "no cached verdict" in err and "'is helpful'" in err
    assert provider.served == served  # replay never called the judge


def test_the_suite_wide_replay_switch_beats_the_mode_flag(
    provider: ProviderSimulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    labels = ten_cases(tmp_path)
    provider.judge_reply = wrong_on(set(), labels)
    monkeypatch.setenv("GHOSTRUN_MODE", "replay")
    code, _out, err = run(
        [str(labels), *judge_args(provider, tmp_path / "c", "--mode", "auto")], capsys
    )
    assert code == 2 and "no cached verdict" in err
    assert provider.served == 0


def by_seed(answers: dict[str, dict[int | None, str]]) -> Callable[[dict[str, Any]], str]:
    """A judge whose answer for a text depends on the draw's seed (None: the single draw)."""

    def reply(body: dict[str, Any]) -> str:
        text, _criterion, seed = asked(body)
        return verdict(answers[text][seed], f"seed {seed}")

    return reply


def test_more_votes_per_vote_count(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"text": "unsure", "criterion": "apologises", "expected": "PASS"},
        {"text": "clear", "criterion": "apologises", "expected": "FAIL"},
    ]
    labels = write_labels(tmp_path / "labels.jsonl", rows)
    # "unsure": the single draw says FAIL; seeds 1, 2 say PASS and 3, 4, 5 FAIL, so
    # 3 votes give PASS (2 of 3) and 5 votes FAIL (3 of 5). "clear" is always FAIL.
    unsure = {None: "FAIL", 1: "PASS", 2: "PASS", 3: "FAIL", 4: "FAIL", 5: "FAIL"}
    clear = dict.fromkeys(unsure, "FAIL")
    provider.judge_reply = by_seed({"unsure": unsure, "clear": clear})
    args = judge_args(provider, tmp_path / "c", "--mode", "auto", "--votes", "1,3,5")

    code, out, _ = run([str(labels), *args, "--format", "json"], capsys)
    assert code == 0
    results = {r["votes"]: r for r in json.loads(out)["results"]}
    assert {n: r["accuracy"] for n, r in results.items()} == {1: 0.5, 3: 1.0, 5: 0.5}
    assert results[1]["flip_rate"] == 0.0
    assert results[3]["flip_rate"] == pytest.approx((1 / 3 + 0) / 2)
    assert results[5]["flip_rate"] == pytest.approx((2 / 5 + 0) / 2)
    assert {n: r["more_votes"] for n, r in results.items()} == {
        1: "baseline",
        3: "helped",
        5: "no change",
    }
    assert provider.served == 2 * (1 + 3 + 5)

    code, table, _ = run([str(labels), *args], capsys)
    assert code == 0
    assert re.search(r"^\s+3\s+100\.0%.*helped$", table, re.MULTILINE), table


def test_repeats_show_an_unstable_verdict(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"text": "wobbly", "criterion": "apologises", "expected": "PASS"},
        {"text": "steady", "criterion": "apologises", "expected": "PASS"},
    ]
    labels = write_labels(tmp_path / "labels.jsonl", rows)
    # The second repeat draws with seed 1000: there "wobbly" flips.
    provider.judge_reply = by_seed(
        {"wobbly": {None: "PASS", 1000: "FAIL"}, "steady": {None: "PASS", 1000: "PASS"}}
    )
    args = judge_args(provider, tmp_path / "c", "--mode", "auto", "--repeats", "2")
    code, out, _ = run([str(labels), *args, "--format", "json"], capsys)
    assert code == 0
    (result,) = json.loads(out)["results"]
    assert result["graded"] == 4
    assert result["accuracy"] == pytest.approx(3 / 4)
    assert result["unstable"] == pytest.approx(1 / 2)
    assert [(w["line"], w["repeat"]) for w in result["wrong"]] == [(1, 1)]
    assert provider.served == 4


def test_negations_that_do_not_flip_are_reported(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"text": "yes-man", "criterion": "apology", "kind": "intent", "expected": "PASS"},
        {"text": "sound", "criterion": "apology", "kind": "intent", "expected": "PASS"},
        {"text": "plain", "criterion": "is short", "expected": "PASS"},  # no opposite
    ]
    labels = write_labels(tmp_path / "labels.jsonl", rows)

    def reply(body: dict[str, Any]) -> str:
        text, criterion, _seed = asked(body)
        negated = "does NOT express" in criterion
        if text == "yes-man":
            return verdict("PASS", "agrees with anything")
        return verdict("FAIL" if negated else "PASS", "reads the question")

    provider.judge_reply = reply
    args = judge_args(provider, tmp_path / "c", "--mode", "auto", "--format", "json")
    code, out, _ = run([str(labels), *args], capsys)
    assert code == 0
    negation = json.loads(out)["negation"]
    assert negation["checked"] == 2
    assert [(n["line"], n["verdict"], n["opposite_verdict"]) for n in negation["unflipped"]] == [
        (1, "PASS", "PASS")
    ]
    assert provider.served == 3 + 2

    code, out, _ = run([str(labels), *args, "--no-negation"], capsys)
    assert json.loads(out)["negation"] == {"checked": 0, "unflipped": []}


def test_cases_are_graded_with_the_assertions_own_words_and_cache(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A case of kind ``intent`` asks what ``contains_intent`` asks, under the same key rules."""
    seen: list[str] = []

    def reply(body: dict[str, Any]) -> str:
        seen.append(asked(body)[1])
        return verdict("PASS")

    provider.judge_reply = reply
    rows = [{"text": "Sorry!", "criterion": "apology", "kind": "intent", "expected": "PASS"}]
    labels = write_labels(tmp_path / "labels.jsonl", rows)
    cassettes = tmp_path / "c"
    args = judge_args(provider, cassettes, "--mode", "auto", "--no-negation")
    assert run([str(labels), *args], capsys)[0] == 0

    judge = OllamaJudge(host=provider.base_url)
    with ghostrun.session(mode="auto", cassette_dir=cassettes / "calibration"):
        ghostrun.expect("Sorry!", judge=judge).contains_intent("apology")
    assert seen == ["The text expresses or contains this intent: apology"]  # cached: one call
    assert len(list((cassettes / "calibration" / "judge").glob("*.json"))) == 1
    assert not (cassettes / "judge").exists()  # the tests' own verdicts are left alone


# --- the calibration a judged failure reports ----------------------------------------------


def calibrated_at_kappa_0_58(provider: ProviderSimulator, tmp_path: Path, capsys: Any) -> Path:
    labels = ten_cases(tmp_path)
    provider.judge_reply = wrong_on({"reply 5", "reply 9"}, labels)
    cassettes = tmp_path / "c"
    assert run([str(labels), *judge_args(provider, cassettes, "--mode", "auto")], capsys)[0] == 0
    summary = json.loads((cassettes / "calibration" / "judges.json").read_text())
    assert summary["judges"]["ollama:llama3.2:3b"]["1"]["kappa"] == pytest.approx(0.5833, abs=1e-3)
    return cassettes


def failure_message(provider: ProviderSimulator, cassettes: Path) -> str:
    provider.judge_reply = lambda body: verdict("FAIL", "no apology in it")
    judge = OllamaJudge(host=provider.base_url)
    with ghostrun.session(mode="auto", cassette_dir=cassettes):
        with pytest.raises(AssertionError) as failed:
            ghostrun.expect("Your parcel ships Friday.", judge=judge).contains_intent("apology")
    return str(failed.value)


def test_a_failure_says_when_its_judge_is_below_the_bar(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassettes = calibrated_at_kappa_0_58(provider, tmp_path, capsys)
    ghostrun.configure(min_judge_kappa=0.6)
    message = failure_message(provider, cassettes)
    assert (
        "judge calibration: ollama:llama3.2:3b at 1 vote agreed with your labels at kappa 0.58"
        in message
    )
    assert "(10 cases of labels.jsonl), below your bar of 0.6" in message


def test_no_note_when_the_judge_meets_the_bar_or_no_bar_is_set(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassettes = calibrated_at_kappa_0_58(provider, tmp_path, capsys)
    assert "judge calibration" not in failure_message(provider, cassettes)
    ghostrun.configure(min_judge_kappa=0.5)
    assert "judge calibration" not in failure_message(provider, cassettes)


def test_an_uncalibrated_judge_under_a_bar_says_how_to_measure_it(
    provider: ProviderSimulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GHOSTRUN_MIN_JUDGE_KAPPA", "0.7")
    message = failure_message(provider, tmp_path / "c")
    assert "has no calibration in" in message and "ghostrun calibrate LABELS" in message


@pytest.mark.parametrize(
    ("summary", "problem"),
    [
        ({"version": 9, "judges": {}}, "has format version 9, but this ghostrun reads version 1"),
        (
            {"version": 1, "judges": {"j": {"1": 0.5}}},
            "judges.j.1: expected an object, got float 0.5",
        ),
    ],
)
def test_a_damaged_summary_is_named_by_the_one_loader(
    provider: ProviderSimulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    summary: dict[str, Any],
    problem: str,
) -> None:
    path = tmp_path / "c" / "calibration" / "judges.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(summary))
    monkeypatch.setenv("GHOSTRUN_MIN_JUDGE_KAPPA", "0.7")
    message = failure_message(provider, tmp_path / "c")
    assert "judge calibration: " in message and f"calibration summary {path}" in message
    assert problem in message
    assert path.read_text() == json.dumps(summary)  # never overwritten


def test_the_bar_is_checked_when_set() -> None:
    with pytest.raises(ValueError, match="min_judge_kappa must be a number from -1 to 1"):
        ghostrun.configure(min_judge_kappa=2)


# --- labels files ------------------------------------------------------------------------


def test_cached_verdicts_export_as_cases_to_label(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    provider.judge_reply = lambda body: verdict("PASS", "it apologises")
    cassettes = tmp_path / "c"
    judge = OllamaJudge(host=provider.base_url)
    for text in ("Sorry!", "So sorry.", "Sorry!"):
        grade(text, "apologises", judge, mode=Mode.AUTO, cassette_dir=cassettes)
    out_file = tmp_path / "to_label.jsonl"

    code, _, err = run(["--from-verdicts", str(cassettes), "--output", str(out_file)], capsys)
    assert code == 0 and "wrote 2 cases to label" in err
    rows = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert sorted(r["text"] for r in rows) == ["So sorry.", "Sorry!"]
    assert {(r["expected"], r["judge_said"], r["criterion"]) for r in rows} == {
        (None, "PASS", "apologises")
    }
    with pytest.raises(ValueError, match=r"line 1: not labelled yet"):
        load_cases(out_file)

    labelled = [{**r, "expected": "PASS"} for r in rows]
    cases = load_cases(write_labels(out_file, labelled))
    assert [c.criterion for c in cases] == ["apologises", "apologises"]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "line 2: not JSON"),
        ('["a list"]', "line 2: expected a JSON object, got list"),
        ('{"text": "", "criterion": "c", "expected": "PASS"}', 'line 2: "text" must be'),
        ('{"text": "t", "expected": "PASS"}', 'line 2: "criterion" must be'),
        ('{"text": "t", "criterion": "c", "expected": "maybe"}', '"expected" must be "PASS"'),
        ('{"text": "t", "criterion": "c", "kind": "vibes", "expected": "PASS"}', "unknown"),
    ],
)
def test_a_bad_labels_file_names_the_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, problem: str
) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"text": "t", "criterion": "c", "expected": "PASS"}\n' + line + "\n")
    code, out, err = run([str(labels), "--cassette-dir", str(tmp_path)], capsys)
    assert code == 2 and out == ""
    assert str(labels) in err and problem in err


def test_min_kappa_gates_the_exit_status(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = ten_cases(tmp_path)
    provider.judge_reply = wrong_on({"reply 5", "reply 9"}, labels)
    args = [str(labels), *judge_args(provider, tmp_path / "c", "--mode", "auto")]
    assert run([*args, "--min-kappa", "0.5"], capsys)[0] == 0
    assert run([*args, "--min-kappa", "0.6"], capsys)[0] == 1


def test_markdown_and_json_are_sized_for_a_pull_request_and_any_console(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        {"text": "Désolé <b>!</b>", "criterion": "apology", "kind": "intent", "expected": "PASS"},
        {"text": "Fine.", "criterion": "apology", "kind": "intent", "expected": "FAIL"},
    ]
    labels = write_labels(tmp_path / "labels.jsonl", rows)
    provider.judge_reply = lambda body: verdict("FAIL", "no <apology>")
    args = [str(labels), *judge_args(provider, tmp_path / "c", "--mode", "auto", "--no-negation")]

    code, markdown, _ = run([*args, "--format", "markdown"], capsys)
    lines = markdown.splitlines()
    assert code == 0
    assert lines[0].startswith("**Judge calibration:** ollama:llama3.2:3b agrees with labels.jsonl")
    assert lines[2].startswith("| votes | accuracy | kappa |") and lines[3].startswith("|---:")
    assert "<details><summary>Wrong at 1 vote (1 of 2)</summary>" in lines
    assert "Désolé &lt;b&gt;!&lt;/b&gt;" in markdown and "no &lt;apology&gt;" in markdown

    code, out, _ = run([*args, "--format", "json"], capsys)
    assert out.isascii() and json.loads(out)["results"][0]["wrong"][0]["text"] == rows[0]["text"]


# --- the example set shipped with the project ---------------------------------------------


def keyword_judge(text: str, criterion: str) -> bool:
    """A deliberately naive stand-in judge: words of the criterion found in the text.

    For groundedness, every number in the text must appear in the context.
    """
    if criterion.startswith("Every claim in the text is supported"):
        context = criterion.split("CONTEXT:\n", 1)[1]
        return all(n in context for n in re.findall(r"\d+(?:\.\d+)?", text))
    subject = criterion.rsplit(":", 1)[-1] if ":" in criterion else criterion
    subject = subject.removeprefix(" The overall tone of the text is").strip(" .")
    words = [w for w in re.findall(r"[a-z]+", subject.lower()) if len(w) > 3]
    found = any(w[:5] in text.lower() for w in words)
    return not found if "does NOT" in criterion else found


def test_the_example_labels_calibrate_against_the_loopback_judge(
    provider: ProviderSimulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = load_cases(EXAMPLE_LABELS)
    assert len(cases) >= 30
    kinds = {c.kind for c in cases}
    assert {"contains_intent", "does_not_contain_intent", "tone_is", "is_grounded_in"} <= kinds
    for kind in kinds:
        assert {c.expected for c in cases if c.kind == kind} == {True, False}, kind

    def reply(body: dict[str, Any]) -> str:
        text, criterion, _seed = asked(body)
        if keyword_judge(text, criterion):
            return verdict("PASS", "keywords matched")
        return verdict("FAIL", "no keyword")

    provider.judge_reply = reply
    args = judge_args(provider, tmp_path / "c", "--mode", "auto", "--format", "json")
    code, out, _ = run([str(EXAMPLE_LABELS), *args], capsys)
    assert code == 0
    (result,) = json.loads(out)["results"]
    wrong = [c.line for c in cases if keyword_judge(c.text, c.criterion) != c.expected]
    assert 0 < len(wrong) < len(cases)  # the naive judge gets some right, some wrong
    assert [w["line"] for w in result["wrong"]] == wrong
    assert result["accuracy"] == pytest.approx(1 - len(wrong) / len(cases))
    intents = sum(c.negated() is not None for c in cases)
    assert provider.served == len(cases) + intents

    # The README shows this very run's table: its lines must be the command's.
    code, table, _ = run([str(EXAMPLE_LABELS), *args[:-2], "--format", "table"], capsys)
    readme = (EXAMPLE_LABELS.parents[2] / "docs" / "judge.md").read_text(encoding="utf-8")
    shown = readme.split("```text\nghostrun calibrate:", 1)[1].split("```", 1)[0]
    shown_lines = [line for line in ("ghostrun calibrate:" + shown).splitlines() if line != "  ..."]
    assert code == 0 and provider.served == len(cases) + intents  # all cached
    assert shown_lines == table.splitlines()[: len(shown_lines)]
