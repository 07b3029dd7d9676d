"""Judges with numbers: TPR, TNR, the judge-corrected pass rate, and two judges' kappa.

Two callable judges with known mistakes grade a labels file and the suite's
own criteria (cached verdicts, as the tests leave them); every figure the
command prints is worked out here independently, from the cases alone.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from agent_suite import docs_block

from ghostrun._core._modes import Mode
from ghostrun._judging._calibration._correction import correct, rates, rogan_gladen
from ghostrun._judging._verdicts import grade
from ghostrun._tools._cli import main

LABELLED = {f"good {i}": True for i in range(6)} | {f"bad {i}": False for i in range(4)}
FIRST_WRONG = {"good 5", "bad 3"}  # the first judge errs on these labelled cases
SUITE = [f"suite {i}" for i in range(10)]
FIRST_PASSES = {f"suite {i}" for i in (0, 1, 2, 3, 4, 5, 6)}
SECOND_PASSES = {f"suite {i}" for i in (0, 1, 2, 3, 6, 7, 8)}


def first_judge(text: str, criterion: str) -> tuple[bool, str]:
    if text in LABELLED:
        return LABELLED[text] != (text in FIRST_WRONG), "first"
    return text in FIRST_PASSES, "first"


def second_judge(text: str, criterion: str) -> tuple[bool, str]:
    return text in SECOND_PASSES, f"second on {text}"


def labels_file(tmp_path: Path) -> Path:
    path = tmp_path / "labels.jsonl"
    rows = [
        {"text": text, "criterion": "is helpful", "expected": "PASS" if passed else "FAIL"}
        for text, passed in LABELLED.items()
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def suite_verdicts(cassettes: Path) -> None:
    """The suite's own judged criteria, cached by the first judge as a test run leaves them."""
    for text in SUITE:
        grade(text, "answers the question", first_judge, mode=Mode.AUTO, cassette_dir=cassettes)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["calibrate", *args])
    out, _ = capsys.readouterr()
    return code, out


def test_rates_and_the_corrected_rate_by_hand() -> None:
    pairs = [(True, True)] * 5 + [(False, True)] + [(False, False)] * 3 + [(True, False)]
    assert rates(pairs) == (5 / 6, 3 / 4)
    assert rogan_gladen(0.6, 5 / 6, 3 / 4) == pytest.approx((0.6 + 0.75 - 1) / (5 / 6 + 0.75 - 1))
    assert rogan_gladen(0.1, 5 / 6, 3 / 4) == 0.0  # clipped
    assert rogan_gladen(0.99, 0.9, 0.99) == 1.0
    assert rogan_gladen(0.5, 0.5, 0.5) is None  # a coin: nothing to correct with
    assert rates([(True, True)]) == (1.0, None)


def test_the_bootstrap_interval_is_seeded_and_resamples_both_samples() -> None:
    pairs = [(True, True)] * 5 + [(False, True)] + [(False, False)] * 3 + [(True, False)]
    observed = [True] * 6 + [False] * 4
    found = correct(pairs, observed, rounds=500, seed=7)
    assert found == correct(pairs, observed, rounds=500, seed=7)
    assert found.interval is not None
    low, high = found.interval
    assert 0.0 <= low <= found.corrected <= high <= 1.0  # type: ignore[operator]

    draw, values = random.Random(7), []  # the same percentile bootstrap, written out here
    for _ in range(500):
        sample, seen = draw.choices(pairs, k=10), draw.choices(observed, k=10)
        tp = [j for j, e in sample if e]
        tn = [not j for j, e in sample if not e]
        if tp and tn and sum(tp) / len(tp) + sum(tn) / len(tn) > 1:
            tpr, tnr = sum(tp) / len(tp), sum(tn) / len(tn)
            values.append(min(1.0, max(0.0, (sum(seen) / 10 + tnr - 1) / (tpr + tnr - 1))))
    values.sort()
    assert found.interval == (values[int(0.025 * len(values))], values[int(0.975 * len(values))])


def test_calibrate_reports_tpr_tnr_and_the_suites_corrected_pass_rate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassettes = tmp_path / "c"
    suite_verdicts(cassettes)
    labels = labels_file(tmp_path)
    args = [str(labels), "--cassette-dir", str(cassettes), "--mode", "auto", "--no-save"]
    judge = ["--judge", f"{__name__}:first_judge"]

    code, out = cli(capsys, *args, *judge, "--format", "json")
    assert code == 0
    (result,) = json.loads(out)["results"]
    passed = [t for t in LABELLED if LABELLED[t]]
    failed = [t for t in LABELLED if not LABELLED[t]]
    tpr = sum(first_judge(t, "")[0] for t in passed) / len(passed)
    tnr = sum(not first_judge(t, "")[0] for t in failed) / len(failed)
    observed = len(FIRST_PASSES) / len(SUITE)
    assert (result["tpr"], result["tnr"]) == (pytest.approx(5 / 6), pytest.approx(3 / 4))
    assert (result["tpr"], result["tnr"]) == (pytest.approx(tpr), pytest.approx(tnr))
    rate = result["pass_rate"]
    assert (rate["observed"], rate["n"], rate["of"]) == (observed, 10, "suite verdicts")
    assert rate["corrected"] == pytest.approx((observed + tnr - 1) / (tpr + tnr - 1))
    low, high = rate["interval_95"]
    assert low <= rate["corrected"] <= high

    code, again = cli(capsys, *args, *judge, "--format", "json")
    assert json.loads(again)["results"][0]["pass_rate"] == rate  # seeded: the same interval
    code, table = cli(capsys, *args, *judge)
    assert "TPR 83.3%, TNR 75.0% (PASS the positive class)" in table
    assert f"pass rate of 10 suite verdicts 70.0%, corrected {rate['corrected']:.1%}" in table
    assert table.splitlines() == docs_block("ghostrun calibrate: callable:")


def test_against_a_second_judge_reports_kappa_and_each_disagreement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cassettes = tmp_path / "c"
    suite_verdicts(cassettes)
    before = sorted(p.name for p in (cassettes / "judge").iterdir())
    args = ["--cassette-dir", str(cassettes), "--mode", "auto", "--against"]

    code, out = cli(capsys, *args, f"{__name__}:second_judge", "--format", "json")
    assert code == 0
    found = json.loads(out)
    pairs = [(t in SECOND_PASSES, t in FIRST_PASSES) for t in SUITE]
    agree = sum(a == b for a, b in pairs) / len(pairs)
    p_second = sum(a for a, _ in pairs) / len(pairs)
    p_first = sum(b for _, b in pairs) / len(pairs)
    chance = p_second * p_first + (1 - p_second) * (1 - p_first)
    assert (found["criteria"], found["agreement"]) == (10, pytest.approx(agree))
    assert found["kappa"] == pytest.approx((agree - chance) / (1 - chance))
    differ = sorted(t for t in SUITE if (t in FIRST_PASSES) != (t in SECOND_PASSES))
    assert sorted(d["text"] for d in found["disagreements"]) == differ
    assert {(d["first_verdict"], d["second_verdict"]) for d in found["disagreements"]} == {
        ("PASS", "FAIL"),
        ("FAIL", "PASS"),
    }
    assert sorted(p.name for p in (cassettes / "judge").iterdir()) == before  # tests' own

    code, _ = cli(capsys, *args, f"{__name__}:second_judge", "--min-kappa", "0.5")
    assert code == 1  # kappa 0.05 is below the bar
    code, text = cli(capsys, *args, f"{__name__}:second_judge")
    assert "on 10 cached criteria: agree on 60.0%, kappa 0.05; 4 disagreements" in text
    assert text.splitlines() == docs_block("ghostrun calibrate --against:")
