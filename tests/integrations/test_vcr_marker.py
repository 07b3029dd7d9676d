"""A pytest-recording suite, pytest-recording uninstalled: its marker, fixture and flag work.

The suite is written as pytest-recording's docs tell a user (``@pytest.mark.vcr``, the
``vcr`` fixture, ``request.config.getoption("--block-network")``) and run by pytest in a
subprocess against the loopback provider: recorded once, then replayed with the provider
stopped.
"""

from __future__ import annotations

import importlib.util

import pytest
from simulator import ProviderSimulator

pytest_plugins = ["pytester"]

TESTS = """
import os

import httpx
import pytest


def ask(prompt):
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": prompt}]}
    return httpx.post(os.environ["SIM_URL"] + "/v1/chat/completions", json=body).json()


@pytest.mark.vcr
def test_marked(vcr):
    reply = ask("where is my refund?")
    assert reply["choices"][0]["message"]["content"]
    assert vcr.play_count == (1 if os.environ["EXPECTED"] == "replay" else 0)
    assert vcr.write_protected is (os.environ["EXPECTED"] == "replay")


@pytest.mark.vcr(record_mode="none")
def test_record_mode_none_is_replay(vcr):
    if os.environ["EXPECTED"] == "record":
        pytest.skip("recorded by test_marked's session in the first run")
    assert vcr.write_protected
    ask("where is my refund?")


def test_reads_pytest_recordings_flag(request):
    assert request.config.getoption("--block-network") is (os.environ["EXPECTED"] == "replay")
"""


NOT_THEIRS = ("-p", "no:cassetter")  # cassetter, installed here, answers the vcr marker too


@pytest.mark.skipif(
    importlib.util.find_spec("pytest_recording") is not None,
    reason="pytest-recording is not a test dependency: with it, marker and flag are its own",
)
def test_a_pytest_recording_suite_runs_on_ghostrun(
    pytester: pytest.Pytester,
    pytester_env: None,
    provider: ProviderSimulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_app=TESTS)

    monkeypatch.setenv("EXPECTED", "record")
    recorded = pytester.runpytest_subprocess(
        *NOT_THEIRS, "--strict-markers", "--ghostrun-mode", "auto"
    )
    recorded.assert_outcomes(passed=2, skipped=1)
    assert provider.served == 1
    provider.stop()

    monkeypatch.setenv("EXPECTED", "replay")
    replayed = pytester.runpytest_subprocess(
        *NOT_THEIRS, "--strict-markers", "--block-network", "--ghostrun-replay"
    )
    replayed.assert_outcomes(passed=3)


def test_an_unknown_record_mode_names_vcrpys(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(
        "import pytest\n\n@pytest.mark.vcr(record_mode='sometimes')\ndef test_a(): pass\n"
    )
    result = pytester.runpytest_subprocess(*NOT_THEIRS)
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*record_mode='sometimes'*vcrpy's record modes are once, none*"])


def test_with_cassetter_loaded_the_vcr_marker_stays_its_own(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(
        "import pytest\n\n@pytest.mark.vcr(record_mode='sometimes')\ndef test_a(): pass\n"
    )
    result = pytester.runpytest_subprocess("-p", "cassetter")
    assert "vcrpy's record modes are" not in str(result.stderr) + str(result.stdout)
