"""In replay, a provider call where no test runs (a module's probe at import) is an
``Exception`` the probe can catch, so one probe does not stop the whole run; inside a
test it stays a ``CacheMiss`` that no ``except Exception`` can swallow.
"""

from __future__ import annotations

import pytest
from simulator import ProviderSimulator

pytest_plugins = ["pytester"]

PROBING_MODULE = """
import os

import httpx
import pytest

try:  # as suites do: skip the module when the provider cannot be reached
    httpx.get(os.environ["SIM_URL"] + "/v1/models", timeout=2)
    REACHABLE, REFUSAL = True, None
except Exception as exc:
    REACHABLE, REFUSAL = False, exc


def test_the_probe_was_refused_as_an_exception():
    import ghostrun

    assert isinstance(REFUSAL, ghostrun.ReplayRefused)
    assert "make this call inside a session" in str(REFUSAL)


@pytest.mark.skipif(not REACHABLE, reason="provider unreachable")
def test_live_only():
    pass
"""

OTHER_MODULE = """
import os

import httpx
import pytest


def test_inside_a_test_a_refusal_cannot_be_swallowed():
    try:
        httpx.get(os.environ["SIM_URL"] + "/v1/models", timeout=2)
    except Exception:
        pass  # an app's fallback: must not turn the test green


def test_others_still_run():
    pass
"""


def test_a_module_that_probes_at_import_does_not_stop_the_run(
    pytester: pytest.Pytester,
    pytester_env: None,
    provider: ProviderSimulator,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # This test's own, and its run's: the run below is a new one, started by no replay run.
    for name in ("PYTEST_CURRENT_TEST", "GHOSTRUN_REPLAY_PARENT", "GHOSTRUN_REPLAY_HOSTS"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_probe=PROBING_MODULE, test_other=OTHER_MODULE)

    result = pytester.runpytest_subprocess("--ghostrun-replay", "-p", "no:randomly")

    result.assert_outcomes(passed=2, skipped=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*test_inside_a_test_a_refusal_cannot_be_swallowed*", "*CacheMiss*"]
    )
    assert provider.served == 0
