"""The pytest plugin from a newcomer's side: paths against the rootdir, modes by name, short misses.

pytest runs generated projects in subprocesses against the simulator, from the
rootdir and from a subdirectory, as a user would (``cd tests && pytest ...``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from simulator import ProviderSimulator

pytest_plugins = ["pytester"]

INI = """
[pytest]
"""

APP = """
import os

import httpx
import pytest

import ghostrun

SIM = os.environ["SIM_URL"]


def ask(prompt):
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    return httpx.post(SIM + "/v1/chat/completions", json=body).json()


@pytest.mark.ghostrun(cassette_dir="tests/cassettes")
def test_marker_dir():
    ghostrun.expect(ask(os.environ.get("PROMPT", "marker"))).contains("marker")


def test_fixture_default_dir(ghostrun_session):
    ask("fixture")
    assert ghostrun_session.cassette_dir.is_absolute()
    assert ghostrun_session.replayed + ghostrun_session.recorded == 1
"""

MISSING_DIR = """
import os

import httpx
import pytest


@pytest.mark.ghostrun(cassette_dir="nowhere/cassettes")
def test_nothing_recorded():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    httpx.post(os.environ["SIM_URL"] + "/v1/chat/completions", json=body)
"""

UNUSED = ("-p", "no:anyio", "-p", "no:asyncio", "-p", "no:hypothesispytest", "-p", "no:xdist")


@pytest.fixture
def project(pytester: pytest.Pytester, pytester_env: None) -> pytest.Pytester:
    pytester.makeini(INI)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_app.py").write_text(APP)
    return pytester


def _from(directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(directory)


def test_relative_paths_resolve_against_the_rootdir_from_a_subdirectory(
    project: pytest.Pytester, provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project.path
    project.runpytest_subprocess("--ghostrun-record", *UNUSED).assert_outcomes(passed=2)
    served = provider.served
    assert served == 2
    assert len(list((root / "tests" / "cassettes").glob("*.json"))) == 1
    assert len(list((root / ".ghostrun_cache").glob("*.json"))) == 1

    _from(root / "tests", monkeypatch)
    replay = project.runpytest_subprocess("test_app.py", "--ghostrun-replay", *UNUSED)
    replay.assert_outcomes(passed=2)
    assert provider.served == served
    assert not (root / "tests" / "tests").exists()
    assert not (root / "tests" / ".ghostrun_cache").exists()
    dirs = sorted(str(root / d) for d in (".ghostrun_cache", "tests/cassettes"))
    replay.stdout.fnmatch_lines([f"ghostrun: run log runs/_last.json in {', '.join(dirs)}"])

    # A miss from the subdirectory names the absolute directory, and is short.
    monkeypatch.setenv("PROMPT", "marker, changed")
    miss = project.runpytest_subprocess("test_app.py", "--ghostrun-replay", *UNUSED)
    miss.assert_outcomes(passed=1, failed=1)
    miss.stdout.fnmatch_lines([f"*cassette dir: {root / 'tests' / 'cassettes'}"])
    assert provider.served == served


def test_cassette_dir_flag_and_ini_option_resolve_against_the_rootdir(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project.path
    (root / "tests" / "test_app.py").write_text(
        APP.replace(
            '@pytest.mark.ghostrun(cassette_dir="tests/cassettes")', "@pytest.mark.ghostrun()"
        )
    )
    _from(root / "tests", monkeypatch)
    project.runpytest_subprocess(
        "test_app.py", "--ghostrun-record", "--ghostrun-cassette-dir", "from-flag", *UNUSED
    ).assert_outcomes(passed=2)
    assert len(list((root / "from-flag").glob("*.json"))) == 2

    project.makeini(INI + "ghostrun_cassette_dir = from-ini\n")
    project.runpytest_subprocess("test_app.py", "--ghostrun-record", *UNUSED).assert_outcomes(
        passed=2
    )
    assert len(list((root / "from-ini").glob("*.json"))) == 2
    assert not (root / "tests" / "from-flag").exists()
    assert not (root / "tests" / "from-ini").exists()


def test_replay_never_creates_a_missing_cassette_dir_and_says_it_is_missing(
    project: pytest.Pytester, provider: ProviderSimulator
) -> None:
    project.makepyfile(test_missing=MISSING_DIR)
    result = project.runpytest_subprocess("test_missing.py", "--ghostrun-replay", *UNUSED)
    result.assert_outcomes(failed=1)
    missing = project.path / "nowhere" / "cassettes"
    result.stdout.fnmatch_lines(
        [f"*cassette dir: {missing}", "*The cassette directory does not exist.*"]
    )
    assert not (project.path / "nowhere").exists()  # neither cassettes nor runs/
    assert provider.served == 0


def test_a_miss_is_reported_as_its_message_not_a_traceback_through_the_sdk(
    project: pytest.Pytester, provider: ProviderSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(
        test_sdk="""
        import os

        import openai
        import pytest


        @pytest.mark.ghostrun(cassette_dir="tests/cassettes")
        def test_with_the_sdk():
            client = openai.OpenAI(base_url=os.environ["SIM_URL"] + "/v1", api_key="sk-test")
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": os.environ["PROMPT"]}]
            )
        """
    )
    monkeypatch.setenv("PROMPT", "first wording")
    project.runpytest_subprocess("test_sdk.py", "--ghostrun-record", *UNUSED).assert_outcomes(
        passed=1
    )
    monkeypatch.setenv("PROMPT", "second wording")
    result = project.runpytest_subprocess("test_sdk.py", "--ghostrun-replay", *UNUSED)
    result.assert_outcomes(failed=1)
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "test_with_the_sdk ___" in line)
    end = next(
        i for i, line in enumerate(lines) if "short test summary" in line or "warnings" in line
    )
    report = lines[start:end]
    assert len(report) < 30, "\n".join(report)
    text = "\n".join(report)
    assert "test_sdk.py:10: in test_with_the_sdk" in text
    assert "ghostrun.CacheMiss: ghostrun: no recording for POST" in text
    assert '-messages[0].content: "first wording"' in text
    assert '+messages[0].content: "second wording"' in text
    assert "site-packages" not in text and "_base_client" not in text

    full = project.runpytest_subprocess("test_sdk.py", "--ghostrun-replay", "--tb=long", *UNUSED)
    assert "_base_client" in full.stdout.str()  # the whole traceback, when asked for


# -- modes by name, and vcrpy's names ----------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ("--ghostrun-mode=replay", "replay"),
        ("--ghostrun-mode=auto", "auto"),
        ("--ghostrun-mode=record", "record"),
        ("--ghostrun-mode=none", "replay"),
        ("--ghostrun-mode=new_episodes", "auto"),
        ("--ghostrun-mode=all", "record"),
    ],
)
def test_ghostrun_mode_flag_sets_the_suite_wide_mode(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, flag: str, expected: str
) -> None:
    monkeypatch.setenv("GHOSTRUN_MODE", "record" if expected != "record" else "replay")
    pytester.makeini(INI)
    pytester.makepyfile(
        f"""
        import os
        import pytest

        @pytest.mark.ghostrun(mode="auto")
        def test_mode(ghostrun_session):
            assert ghostrun_session.mode.value == "{expected}"
            assert os.environ["GHOSTRUN_MODE"] == "{expected}"
        """
    )
    pytester.runpytest(flag, *UNUSED).assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ghostrun-mode=once"], "*vcrpy's 'once'*has no ghostrun equivalent*use 'auto'*"),
        (["--ghostrun-mode=sometimes"], "*invalid --ghostrun-mode 'sometimes': expected one of*"),
        (
            ["--ghostrun-mode=record", "--ghostrun-replay"],
            "*--ghostrun-replay and --ghostrun-mode are mutually exclusive*",
        ),
        (
            ["-p", "no:cassetter", "--record-mode=none"],  # no other plugin defines the flag
            "*--record-mode=none is pytest-recording's flag; ghostrun's is --ghostrun-mode=MODE*"
            "none -> replay*",
        ),
    ],
)
def test_mode_mistakes_are_usage_errors_that_say_what_to_type(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    pytester.makeini(INI)
    pytester.makepyfile("def test_a(): pass")
    result = pytester.runpytest_subprocess(*args, *UNUSED)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_record_mode_is_cassetters_own_flag_when_cassetter_is_installed(
    pytester: pytest.Pytester,
) -> None:
    """ghostrun never claims another plugin's option: cassetter reads --record-mode."""
    pytester.makeini(INI)
    pytester.makepyfile(
        """
        def test_a(request, ghostrun_session):
            assert request.config.pluginmanager.hasplugin("cassetter")
            assert str(request.config.getoption("--record-mode")).endswith("none")
            assert ghostrun_session.mode.value == "auto"  # ghostrun's own mode is untouched
        """
    )
    result = pytester.runpytest_subprocess("--record-mode=none", *UNUSED)
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("vcr", "mode"), [("none", "replay"), ("new_episodes", "auto"), ("all", "record")]
)
def test_vcrpy_record_modes_are_aliases_in_code_and_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, vcr: str, mode: str
) -> None:
    import ghostrun

    assert ghostrun.session(mode=vcr, cassette_dir=tmp_path).mode.value == mode
    monkeypatch.setenv("GHOSTRUN_MODE", vcr.upper())
    assert ghostrun.session(cassette_dir=tmp_path).mode.value == mode
    assert os.environ["GHOSTRUN_MODE"] == vcr.upper()


def test_vcrpy_once_says_there_is_no_equivalent(tmp_path: Path) -> None:
    import ghostrun

    with pytest.raises(ValueError, match=r"vcrpy's 'once'.*no ghostrun equivalent.*'auto'"):
        ghostrun.session(mode="once", cassette_dir=tmp_path)
