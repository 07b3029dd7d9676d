"""The package's public surface: users import ``ghostrun``, never its private modules."""

from __future__ import annotations

import ghostrun

EXPECTED = {
    "PROVIDER_HOSTS",
    "AuthFailureWarning",
    "CacheMiss",
    "CallableJudge",
    "CassetteError",
    "DamagedCassette",
    "Expectation",
    "ExpectationFailed",
    "GhostrunError",
    "Judge",
    "JudgeUnavailable",
    "Mode",
    "OllamaJudge",
    "OpenAICompatibleJudge",
    "RawVerdict",
    "Redactor",
    "ReplayRefused",
    "Session",
    "StaleCassette",
    "StaleCassetteWarning",
    "TestCaseMixin",
    "ToolCall",
    "ToolCallExpectation",
    "TrajectoryExpectation",
    "UnlistedHostWarning",
    "UnplayedSteps",
    "UnplayedStepsWarning",
    "UnsupportedHttpx",
    "UnsupportedLibrary",
    "Verdict",
    "__version__",
    "configure",
    "expect",
    "expect_tool_calls",
    "expect_trajectory",
    "session",
}


def test_exported_names() -> None:
    assert set(ghostrun.__all__) == EXPECTED
    for name in ghostrun.__all__:
        assert getattr(ghostrun, name) is not None


def test_public_names_report_ghostrun_as_their_module() -> None:
    """Tracebacks and reprs say ``ghostrun.CacheMiss``, the name users import."""
    for name in ghostrun.__all__:
        value = getattr(ghostrun, name)
        if isinstance(value, type) or (callable(value) and hasattr(value, "__code__")):
            assert value.__module__ == "ghostrun", name
    assert repr(ghostrun.Mode) == "<enum 'Mode'>"
    assert str(ghostrun.CacheMiss) == "<class 'ghostrun.CacheMiss'>"


def test_a_session_shows_what_users_read_and_nothing_of_the_engine() -> None:
    """Its arguments as resolved and its results; deciding and writing are the engine's."""
    shown = {name for name in dir(ghostrun.Session) if not name.startswith("_")}
    assert shown == {
        "block_network",
        "cassette_dir",
        "hosts",
        "ignore_fields",
        "ignore_urls",
        "tool_hosts",
        "misses",
        "mode",
        "name",
        "on_unplayed",
        "passed_through",
        "rebased",
        "recorded",
        "redact",
        "replayed",
    }


def test_the_package_is_typed() -> None:
    """A ``py.typed`` marker ships with the package, so type checkers read its hints."""
    from importlib.resources import files

    assert files("ghostrun").joinpath("py.typed").is_file()


def test_error_tree() -> None:
    for error in (ghostrun.CassetteError, ghostrun.UnsupportedHttpx, ghostrun.JudgeUnavailable):
        assert issubclass(error, ghostrun.GhostrunError)
    assert issubclass(ghostrun.GhostrunError, Exception)
    assert not issubclass(ghostrun.CacheMiss, Exception)
    assert ghostrun.UnsupportedHttpx is ghostrun.UnsupportedLibrary  # old except clauses work
    assert issubclass(ghostrun.DamagedCassette, ghostrun.CacheMiss)
    assert issubclass(ghostrun.ExpectationFailed, AssertionError)


def test_provider_hosts_cover_the_major_providers() -> None:
    from ghostrun._core._hosts import HostMatcher

    matcher = HostMatcher(ghostrun.PROVIDER_HOSTS)
    for host in (
        "api.openai.com",
        "myres.openai.azure.com",
        "api.anthropic.com",
        "generativelanguage.googleapis.com",
        "us-central1-aiplatform.googleapis.com",
        "bedrock-runtime.us-east-1.amazonaws.com",
        "api.mistral.ai",
        "api.groq.com",
        "openrouter.ai",
    ):
        assert matcher(host), host
    for host in ("example.com", "openai.com.evil.test", "s3.amazonaws.com", "127.0.0.1"):
        assert not matcher(host), host


def test_hosts_accept_urls_and_ports() -> None:
    from ghostrun._core._hosts import HostMatcher

    matcher = HostMatcher(["http://127.0.0.1:8080/v1", "  Example.org "])
    assert matcher("127.0.0.1", 8080) and not matcher("127.0.0.1", 8081)
    assert matcher("example.org") and matcher("api.example.org")


def test_dir_shows_the_public_names_only() -> None:
    shown = dir(ghostrun)
    assert shown == sorted(ghostrun.__all__)
    assert "Any" not in shown and "importlib" not in shown
