"""The ghostrun pytest plugin, loaded through the ``pytest11`` entry point.

``import ghostrun`` never imports this module. What it adds:

- ``--ghostrun-record`` / ``--ghostrun-replay``: the suite-wide mode. It beats
  every mode written in code and ``GHOSTRUN_MODE`` too (a flag typed on the
  command line is the most explicit choice), and is exported as
  ``GHOSTRUN_MODE`` for the subprocesses the tests start.
- ``--ghostrun-rebase``: the suite-wide mode ``rebase`` (``_core._modes``): replay,
  and re-key what an SDK upgrade changed outside the conversation; never the network.
- ``--ghostrun-mode MODE``: the same switch by name (``auto``, ``record``,
  ``replay``, ``rebase``, or vcrpy's ``none``, ``new_episodes``, ``all``; see `_modes`).
- ``--ghostrun-block-network``: in replay, refuse every non-loopback connection
  (``block_network`` for every session that does not say otherwise; exported as
  ``GHOSTRUN_BLOCK_NETWORK=1``).
- the guard (``ghostrun._intercept._guard``) for the whole run when the suite-wide mode is
  ``replay`` (flag or ``GHOSTRUN_MODE``): a provider connection that no session
  governs is refused too.
- ``--ghostrun-cassette-dir DIR`` (or the ini option ``ghostrun_cassette_dir``):
  the default cassette directory (``configure(cassette_dir=...)``; a session's
  own ``cassette_dir=`` still wins).
- Relative cassette paths given to the plugin (the marker's ``cassette_dir=``,
  the fixture's default directory, ``--ghostrun-cassette-dir``, the ini option)
  resolve against pytest's rootdir, so a suite replays the same from any
  working directory. A session a test opens itself resolves its path like any
  Python code does, against the current directory.
- ``--ghostrun-snapshot NAME``: also save the run log as ``runs/NAME.json``.
- ``--ghostrun-max-age AGE`` (ini ``ghostrun_max_age``, ``ghostrun_on_stale``) and the
  ini option ``ghostrun_normalize`` (one shape or regex a line): the defaults of the
  sessions' ``max_age``, ``on_stale`` and ``normalize`` (``GHOSTRUN_MAX_AGE`` beats
  the flag). Replayed recordings older than ``max_age`` make one
  `StaleCassetteWarning` at the end of the run, listing every such cassette.
- ``@pytest.mark.ghostrun(**session_kwargs)``: the test, its fixtures included,
  runs inside a session named by its node id. Markers on the module, the class
  and the function merge, the closest winning. Sync and async tests alike
  (pytest-asyncio, anyio): the session is opened around the test in the main
  thread, and an async task with no session of its own falls back to it.
- the ``ghostrun_session`` fixture: the test's session (the marker's, or else
  a fresh one with default arguments, open for the test's duration).
- the run log: each test's outcome, written at session finish to
  ``<cassette_dir>/runs/_last.json``; under pytest-xdist every worker hands its
  part to the controller, which writes one complete run.

- a failure caused by a `CacheMiss` is reported as the miss's message and the
  line of the test that made the request, not a traceback through the SDK
  (``--tb=long`` or ``--fulltrace`` shows the whole traceback).

It is inert for tests that use none of this, and costs them nothing (DESIGN §2): at
start-up it adds its options and its marker, and imports no more of ghostrun than the
modes. The rest is imported, and the run's settings applied, when the first test uses
ghostrun (its marker or fixture, or the first session any test opens: `_wiring`), or at
once when something asks for ghostrun before a test does: one of its flags or ini
options, a ``GHOSTRUN_*`` variable, CI (the suite replays, so the guard holds from the
start), or a ``[tool.ghostrun]`` table. From the first test that uses its marker or fixture to
the end of the run, the plugin holds the roads (`_patch.lease`), so a session per test
no longer installs and restores them each time.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import textwrap
import warnings
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._core._distribution import foreign_install
from ._core._modes import VCR_ALIASES, Mode, parse_mode, running_on_ci
from ._integrations import _vcr
from ._recording import _wiring

if TYPE_CHECKING:
    from ._core._config import check_on_unplayed, configure, settings
    from ._core._exceptions import CacheMiss, StaleCassetteWarning
    from ._intercept import _guard, _patch
    from ._recording import _runlog, _stale, _trajectory
    from ._recording._session import Session

__all__ = ["ghostrun_session"]

_SESSION = pytest.StashKey["Session"]()
_EXCEPTION = pytest.StashKey[BaseException]()
_CLOSING = pytest.StashKey[BaseException]()  # what the session said as it closed (`_close`)
_WORKER_OUTPUT = "ghostrun_runlog"
_RUN_LOG = "ghostrun._recording._runlog"  # imported: a test used ghostrun, session or not
_STALE_OUTPUT = "ghostrun_stale"
_EXPORTED = ("GHOSTRUN_MODE", "GHOSTRUN_BLOCK_NETWORK")
_INI_OPTIONS = (
    "ghostrun_cassette_dir",
    "ghostrun_max_age",
    "ghostrun_normalize",
    "ghostrun_on_stale",
    "ghostrun_on_unplayed",
)
_MARKER_HELP = (
    "ghostrun(**session_kwargs): run the test inside a ghostrun session named by its node id; "
    "the keyword arguments are ghostrun.session()'s (mode, cassette_dir, hosts, ignore_fields, "
    "redact, block_network)."
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ghostrun", "ghostrun: record and replay LLM provider calls")
    if _without_pytest_recording():
        group.addoption(  # pytest-recording's flag, for a suite moved over (`_vcr`)
            "--block-network",
            action="store_true",
            default=False,
            dest="block_network",
            help="pytest-recording's flag, for suites moved over: --ghostrun-block-network.",
        )
    group.addoption(
        "--ghostrun-record",
        action="store_true",
        default=False,
        help="send every provider request for real and re-record it (beats GHOSTRUN_MODE "
        "and modes written in code).",
    )
    group.addoption(
        "--ghostrun-replay",
        action="store_true",
        default=False,
        help="never touch the network: replay cassettes, a missing one fails the test "
        "(beats GHOSTRUN_MODE and modes written in code).",
    )
    group.addoption(
        "--ghostrun-rebase",
        action="store_true",
        default=False,
        help="never touch the network: replay cassettes; a request whose only changes are "
        "outside the conversation (an SDK upgrade's new field) replays the recorded step and "
        "is written under its new key, anything else fails as in replay (beats GHOSTRUN_MODE "
        "and modes written in code).",
    )
    group.addoption(
        "--ghostrun-mode",
        metavar="MODE",
        default=None,
        help="the suite-wide mode by name: auto, record, replay or rebase (vcrpy's none, "
        "new_episodes and all work too); beats GHOSTRUN_MODE and modes written in code.",
    )
    group.addoption(
        "--ghostrun-block-network",
        action="store_true",
        default=False,
        help="in replay mode, refuse every connection that is not to loopback (127.0.0.0/8, "
        "::1, localhost), as GHOSTRUN_BLOCK_NETWORK=1 does.",
    )
    group.addoption(
        "--ghostrun-cassette-dir",
        metavar="DIR",
        default=None,
        help="default cassette directory, relative to the rootdir (default: the ini option "
        "ghostrun_cassette_dir, GHOSTRUN_CASSETTE_DIR, then .ghostrun_cache).",
    )
    group.addoption(
        "--ghostrun-max-age",
        metavar="AGE",
        default=None,
        help="recordings older than AGE (90d, 12w, 6m) are stale: re-recorded in auto, "
        "warned about in replay (default: the ini ghostrun_max_age; GHOSTRUN_MAX_AGE and a "
        "session's max_age= beat it).",
    )
    parser.addini("ghostrun_max_age", "ghostrun's max_age (e.g. 90d)", default=None)
    parser.addini("ghostrun_on_stale", "replaying a stale recording: warn or fail", default=None)
    parser.addini(
        "ghostrun_normalize",
        "value shapes left out of ghostrun's keys: uuid, iso_datetime, date, unix_ts, "
        "hex_id, or a regex (one a line)",
        type="linelist",
        default=[],
    )
    parser.addini(
        "ghostrun_cassette_dir",
        "ghostrun's default cassette directory, relative to the rootdir "
        "(--ghostrun-cassette-dir beats it).",
        default=None,
    )
    parser.addini(
        "ghostrun_on_unplayed",
        "what a replayed test that used fewer steps than its recorded trajectory does: fail "
        "(the default), warn or ignore (GHOSTRUN_ON_UNPLAYED and a session's on_unplayed= "
        "beat it).",
        default=None,
    )
    group.addoption(
        "--ghostrun-snapshot",
        metavar="NAME",
        default=None,
        help="also save this run's log as <cassette_dir>/runs/NAME.json, for `ghostrun diff` "
        "(default: GHOSTRUN_SNAPSHOT).",
    )


def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    """A vcrpy user's ``--record-mode`` gets ghostrun's flag, not "unrecognized arguments".

    Only when no other plugin defines ``--record-mode``: with pytest-recording
    or cassetter installed, the flag is theirs, and ghostrun stays out of it.
    """
    typed = [a for a in args if a == "--record-mode" or a.startswith("--record-mode=")]
    if typed and not _defined_by_a_plugin(parser, "--record-mode"):
        mapping = ", ".join(f"{k} -> {v.value}" for k, v in VCR_ALIASES.items())
        raise pytest.UsageError(
            f"{typed[0]} is pytest-recording's flag; ghostrun's is --ghostrun-mode=MODE "
            f"(auto, record, replay or rebase; vcrpy's {mapping} work too, and 'once' has no "
            "equivalent: use auto)"
        )


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The other project named ``ghostrun``, when it shares this environment (`_distribution`)."""
    warning = foreign_install()
    return [f"ghostrun: WARNING: {warning}"] if warning else []


def _defined_by_a_plugin(parser: pytest.Parser, flag: str) -> bool:
    """Has a plugin loaded so far (every installed one by now) added ``flag``?"""
    groups = [getattr(parser, "_anonymous", None), *getattr(parser, "_groups", [])]
    return any(
        flag in option.names() for group in groups if group is not None for option in group.options
    )


def _without_pytest_recording() -> bool:
    """pytest-recording is not installed: its ``--block-network`` flag is ghostrun's."""
    return importlib.util.find_spec("pytest_recording") is None


_VCR_MARKER_PLUGINS = ("recording", "cassetter")
"""Plugins that answer ``@pytest.mark.vcr`` and the ``vcr`` fixture themselves."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)
    if not any(config.pluginmanager.hasplugin(name) for name in _VCR_MARKER_PLUGINS):
        config.addinivalue_line("markers", _vcr.MARKER_HELP)
        config.pluginmanager.register(_vcr, "ghostrun-vcr")
    run = _Ghostrun(config)
    config.pluginmanager.register(run, "ghostrun-run")
    if config.pluginmanager.hasplugin("xdist") and not run.worker:
        config.pluginmanager.register(_XdistController(run), "ghostrun-xdist")
    run.asked = _asked_for(config)
    if run.asked:
        run.start()
    else:
        _wiring.before_first_session(run.start)  # a test that opens a session itself


def _load() -> None:
    """Import what the plugin uses of ghostrun, once: when the run starts (`_Ghostrun.start`)."""
    global check_on_unplayed, configure, settings, CacheMiss, StaleCassetteWarning
    global _guard, _patch, _runlog, _stale, _trajectory, Session
    from ._core._config import check_on_unplayed, configure, settings
    from ._core._exceptions import CacheMiss, StaleCassetteWarning
    from ._intercept import _guard, _patch
    from ._recording import _runlog, _stale, _trajectory
    from ._recording._session import Session


def _asked_for(config: pytest.Config) -> bool:
    """Whether ghostrun is asked for before any test uses it: then the run starts at once.

    One of its flags, a ``GHOSTRUN_*`` variable, CI (where the suite replays by
    default), or a project file with a ``[tool.ghostrun]`` table (it may set the
    mode): what could make the suite replay, whose guard holds from the first
    test on. A looser test than the settings' own, never a stricter one. Or one of
    its ini options, so a wrong value is a usage error at start-up, as before.
    """
    options = vars(config.option)
    if any(value for name, value in options.items() if name.startswith("ghostrun_")):
        return True
    if options.get("block_network"):  # pytest-recording's flag, ghostrun's when it is absent
        return True
    if any(config.getini(name) for name in _INI_OPTIONS):
        return True
    if running_on_ci() or any(name.startswith("GHOSTRUN_") for name in os.environ):
        return True
    return _project_table() is not None


def _project_table() -> Path | None:
    """The first ``pyproject.toml`` from the working directory up, if it names the table."""
    for directory in (Path.cwd(), *Path.cwd().parents):
        path = directory / "pyproject.toml"
        if path.is_file():
            try:
                return path if b"tool.ghostrun" in path.read_bytes() else None
            except OSError:
                return None
    return None


class _Ghostrun:
    """The run's state: the suite-wide settings it changed, and the run log it writes."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.worker = hasattr(config, "workerinput")
        self.started = self.ended = False
        # Asked for at start-up (`_asked_for`); else it starts later, in some test's
        # environment, which says nothing of the run: its suite never replays.
        self.asked = False
        self.written: list[Path] = []
        self.outcomes: dict[str, str] = {}
        self.errors: list[Exception] = []
        self._release_lease: Callable[[], None] | None = None

    def start(self, adopt: bool = False) -> None:
        """Import ghostrun and apply the run's settings: at the first test that uses it.

        ``adopt``: a test already reported into the process's run log (an assertion made
        outside any session): this run's log is that one, not a fresh one."""
        if self.started or self.ended:
            return  # ended: a session after this run (pytester's in-process runs) is not ours
        _load()
        config = self.config
        mode = _suite_mode(config)
        snapshot = config.getoption("ghostrun_snapshot")
        try:
            self.snapshot = (
                _runlog.check_snapshot_name(snapshot)
                if snapshot
                else _runlog.snapshot_from_env()
                if self.asked
                else None
            )
        except ValueError as exc:
            raise pytest.UsageError(f"--ghostrun-snapshot: {exc}") from None
        self._restore_settings = (settings.suite_mode, settings.plugin_cassette_dir)
        self._restore_env = {name: os.environ.get(name) for name in _EXPORTED}
        # The plugin writes the run itself (at session finish), so not at exit.
        self._run_log = contextlib.ExitStack()
        log = _runlog.PROCESS.log if adopt else None
        self._run_log.enter_context(_runlog.PROCESS.collecting(log, autoflush=False))
        if mode is not None:
            settings.suite_mode = mode
            os.environ["GHOSTRUN_MODE"] = mode.value  # for the subprocesses tests start
        if config.getoption("ghostrun_block_network") or config.getoption("block_network", False):
            os.environ["GHOSTRUN_BLOCK_NETWORK"] = "1"  # read by every session, and subprocesses
        try:
            # GHOSTRUN_MODE=replay, a flag, CI, the table: each makes the run start at once.
            self.guarded = self.asked and _guard.suite_replays()
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
        if self.guarded:
            _guard.replay_run_started()  # its children are guarded too
        cassette_dir = config.getoption("ghostrun_cassette_dir") or config.getini(
            "ghostrun_cassette_dir"
        )
        if cassette_dir:  # beaten by GHOSTRUN_CASSETTE_DIR, as DESIGN §2 orders them
            settings.plugin_cassette_dir = rooted(config, cassette_dir)
        self._restore_on_unplayed = settings.on_unplayed
        on_unplayed = config.getini("ghostrun_on_unplayed")
        if on_unplayed and settings.on_unplayed is None:  # configure() in code beats the ini
            try:
                settings.on_unplayed = check_on_unplayed(on_unplayed, "ghostrun_on_unplayed")
            except ValueError as exc:
                raise pytest.UsageError(str(exc)) from None
        self._restore_staleness = _staleness_from(config)
        for nodeid, outcome in self.outcomes.items():  # tests that ran before it started
            _runlog.test_outcome(nodeid, outcome)
        self.started = True  # not before: a usage error above leaves nothing to undo

    def lease(self) -> None:
        """Hold the roads from the first test that uses the marker or fixture to the end."""
        self.start()
        if self._release_lease is None:
            self._release_lease = _patch.lease()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.ended = True
        if self._release_lease is not None:
            self._release_lease()  # the exact originals are back
        if not self.started:
            return
        settings.suite_mode, settings.plugin_cassette_dir = self._restore_settings
        settings.on_unplayed = self._restore_on_unplayed
        *before, deferred = self._restore_staleness
        settings.max_age, settings.on_stale, settings.normalize = before
        _stale.defer(deferred)
        for name, value in self._restore_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if self.guarded:
            _guard.replay_run_ended()
        self._run_log.close()

    # -- the marker's session, open from the first fixture to the last teardown --------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        if self.started:  # run again (a re-run plugin), a test's sessions are a new run
            _trajectory.test_started()
        markers = list(item.iter_markers("ghostrun"))
        if markers:
            self.lease()
            kwargs = _session_kwargs(item, markers)
            kwargs["cassette_dir"] = _default_dir(item.config, kwargs.get("cassette_dir"))
            session = Session(**kwargs)
            session.__enter__()
            item.stash[_SESSION] = session
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if not self.started:
            return report
        if call.excinfo is not None and report.failed and _short_tracebacks(item.config):
            miss = _miss_in(call.excinfo.value)
            if miss is not None:
                # Any object with toterminal() will do; pytest types the attribute narrowly.
                report.longrepr = _miss_report(item, call.excinfo, miss)  # type: ignore[assignment]
        closing = item.stash.get(_CLOSING, None)
        told = call.excinfo is not None and call.excinfo.value is closing
        if told and closing is not None and report.failed and _short_tracebacks(item.config):
            report.longrepr = _closing_report(item, closing)  # type: ignore[assignment]
        if call.excinfo is not None and call.when in ("setup", "call"):
            item.stash[_EXCEPTION] = call.excinfo.value
            longrepr = report.longrepr
            if report.skipped and isinstance(longrepr, tuple) and _points_into_pytest(longrepr):
                # A semantic check's unittest.SkipTest, which pytest re-raises from its
                # own unittest support: point at the test instead.
                path, lineno = item.reportinfo()[:2]
                report.longrepr = (str(path), (lineno or 0) + 1, longrepr[2])
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        try:
            return (yield)
        finally:
            session = item.stash.get(_SESSION, None)
            if session is not None:
                del item.stash[_SESSION]
                _close(session, item)
            if self.started:
                _trajectory.test_ended()

    # -- outcomes and the run log ------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        outcome = _outcome(report)
        if outcome is None:
            return
        if report.when == "teardown" and self.outcomes.get(report.nodeid) not in (None, "passed"):
            return  # a failed test that also failed to clean up stays "failed"
        self.outcomes[report.nodeid] = outcome
        if not self.started and _RUN_LOG in sys.modules:
            self.start(adopt=True)  # the test used ghostrun without a session: log the run
        if self.started:
            _runlog.test_outcome(report.nodeid, outcome, _failure(report))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.started:
            return  # a run that never used ghostrun writes nothing
        if self.worker:
            workeroutput: dict[str, Any] = self.config.workeroutput  # type: ignore[attr-defined]
            workeroutput[_WORKER_OUTPUT] = _runlog.PROCESS.log.export()
            workeroutput[_STALE_OUTPUT] = _stale.take()
            _runlog.PROCESS.log.clear()
            return
        stale = _stale.take()
        if stale:  # one warning for the whole run
            warnings.warn(_stale.message(stale, None), StaleCassetteWarning, stacklevel=1)
        _runlog.run_limited_by(_limits(session))
        written, errors = _runlog.write_run(self.snapshot)
        self.written.extend(written)
        self.errors.extend(errors)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for error in self.errors:
            terminalreporter.write_line(f"ghostrun: could not write the run log: {error}")
        started = self.started and not self.worker  # a run that never used ghostrun says nothing
        skipped = _runlog.PROCESS.log.skip_line() if started else None
        if skipped:  # the run's semantic coverage, said where the run ends
            terminalreporter.write_line(skipped)
        if not self.written or self.worker:
            return
        dirs = sorted({str(path.parent.parent) for path in self.written})
        where = ", ".join(dirs[:3]) + (f" and {len(dirs) - 3} more" if len(dirs) > 3 else "")
        snapshot = f" and runs/{self.snapshot}.json" if self.snapshot else ""
        terminalreporter.write_line(f"ghostrun: run log runs/_last.json{snapshot} in {where}")


class _XdistController:
    """On the xdist controller: gather each worker's part of the run log."""

    def __init__(self, run: _Ghostrun) -> None:
        self.run = run

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", {})
        if not (output.get(_WORKER_OUTPUT) or output.get(_STALE_OUTPUT)):
            return  # a worker whose tests never used ghostrun
        self.run.start()
        exported = output.get(_WORKER_OUTPUT)
        if exported:
            _runlog.PROCESS.log.merge(exported)
        _stale.add(output.get(_STALE_OUTPUT) or {})


@pytest.fixture
def ghostrun_session(request: pytest.FixtureRequest) -> Iterator[Session]:
    """The test's ghostrun session: the marker's, or a fresh one open for the test."""
    run = request.config.pluginmanager.get_plugin("ghostrun-run")
    if isinstance(run, _Ghostrun):
        run.lease()
    marked = request.node.stash.get(_SESSION, None)
    if marked is not None:
        yield marked
        return
    session = Session(name=request.node.nodeid, cassette_dir=_default_dir(request.config))
    session.__enter__()
    try:
        yield session
    finally:
        _close(session, request.node)


def _staleness_from(config: pytest.Config) -> tuple[Any, Any, Any, bool]:
    """Set the staleness and normalize defaults from the flag and ini; what they were."""
    before = (settings.max_age, settings.on_stale, settings.normalize)
    max_age = config.getoption("ghostrun_max_age") or config.getini("ghostrun_max_age")
    on_stale = config.getini("ghostrun_on_stale")
    shapes = config.getini("ghostrun_normalize")
    try:
        configure(
            **({"max_age": max_age} if max_age else {}),
            **({"on_stale": on_stale} if on_stale else {}),
            **({"normalize": shapes} if shapes else {}),
        )
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    return (*before, _stale.defer(True))


def rooted(config: pytest.Config, path: str | os.PathLike[str]) -> Path:
    """A cassette path given to the plugin, relative to the rootdir when not absolute."""
    given = Path(path).expanduser()
    return given if given.is_absolute() else config.rootpath / given


def _default_dir(config: pytest.Config, explicit: Any = None) -> Path:
    """A plugin session's directory: the usual choice, rooted at the rootdir."""
    return rooted(config, settings.resolve_cassette_dir(explicit))


def _suite_mode(config: pytest.Config) -> Mode | None:
    """The mode the flags ask for; flags that disagree are a usage error."""
    chosen: dict[str, Mode] = {}
    if config.getoption("ghostrun_record"):
        chosen["--ghostrun-record"] = Mode.RECORD
    if config.getoption("ghostrun_replay"):
        chosen["--ghostrun-replay"] = Mode.REPLAY
    if config.getoption("ghostrun_rebase"):
        chosen["--ghostrun-rebase"] = Mode.REBASE
    named = config.getoption("ghostrun_mode")
    if named:
        try:
            chosen["--ghostrun-mode"] = parse_mode(named, "--ghostrun-mode")
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    if len(set(chosen.values())) > 1:
        raise pytest.UsageError(
            f"{' and '.join(chosen)} are mutually exclusive: "
            "pass one of them (or neither, for the default mode)"
        )
    return next(iter(chosen.values()), None)


def _short_tracebacks(config: pytest.Config) -> bool:
    return config.getoption("tbstyle", "auto") not in ("long", "native") and not (
        config.getoption("fulltrace", False)
    )


def _miss_in(exc: BaseException) -> CacheMiss | None:
    if isinstance(exc, CacheMiss):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        group = exc.subgroup(CacheMiss)
        while group is not None and isinstance(group, BaseExceptionGroup):
            group = group.exceptions[0]  # type: ignore[assignment]
        return group
    return None


def _miss_report(
    item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException], miss: CacheMiss
) -> _MissReport:
    """The miss's message under the test's own line that made the request."""
    where = [e for e in excinfo.traceback if e.path == item.path]
    entry = where[-1] if where else None
    path = _shown(Path(entry.path) if entry else item.path)
    lineno = entry.lineno + 1 if entry else 0
    lines = []
    if entry is not None:
        lines.append(f"{path}:{lineno}: in {entry.name}")
        statement = textwrap.dedent(str(entry.statement).strip("\n")).splitlines()
        lines.extend(f"    {line}" for line in statement)
    headline = f"ghostrun.{type(miss).__name__}: {miss}"
    lines.append(headline)
    return _MissReport("\n".join(lines), _Crash(str(path), lineno, headline.splitlines()[0]))


class _Crash:
    """What pytest's one-line summary and junitxml read from a failure."""

    def __init__(self, path: str, lineno: int, message: str) -> None:
        self.path, self.lineno, self.message = path, lineno, message


class _MissReport:
    """A failure report that is the miss's message (``str`` of it under pytest-xdist)."""

    def __init__(self, text: str, crash: _Crash) -> None:
        self.text, self.reprcrash = text, crash

    def __str__(self) -> str:
        return self.text

    def toterminal(self, tw: Any) -> None:
        for line in self.text.splitlines():
            tw.line(line)


def _shown(path: Path) -> Path:
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


def _close(session: Session, item: pytest.Item) -> None:
    """Leave ``session`` with the test's exception, so a miss it raised is not raised twice.

    What ghostrun raises here (unplayed steps, a swallowed miss) is kept for the report
    (`_closing_report`): its message is the test's failure, not ghostrun's frames.
    """
    __tracebackhide__ = True
    exc = item.stash.get(_EXCEPTION, None)
    try:
        session.__exit__(type(exc) if exc is not None else None, exc, None)
    except BaseException as error:
        if type(error).__module__.split(".")[0] == "ghostrun":
            item.stash[_CLOSING] = error
        raise


def _closing_report(item: pytest.Item, error: BaseException) -> _MissReport:
    """What the session said as it closed, first, at the test's own line: no frames."""
    path, lineno = item.reportinfo()[:2]
    shown, line = _shown(Path(path)), (lineno or 0) + 1
    headline = f"ghostrun.{type(error).__name__}: {error}"
    text = f"{headline}\n(raised when the ghostrun session of {item.nodeid} closed)"
    return _MissReport(text, _Crash(str(shown), line, headline.splitlines()[0]))


def _session_kwargs(item: pytest.Item, markers: list[pytest.Mark]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"name": item.nodeid}
    for marker in reversed(markers):  # farthest first, so the closest wins
        if marker.args:
            raise TypeError(
                f"@pytest.mark.ghostrun takes keyword arguments only (those of "
                f"ghostrun.session()), got positional {marker.args!r}"
            )
        kwargs.update(marker.kwargs)
    return kwargs


def _outcome(report: pytest.TestReport) -> str | None:
    if report.skipped and hasattr(report, "wasxfail"):
        return "xfailed"  # not a skip: the test ran (or was meant to) and failed as expected
    if report.when == "call":
        return str(report.outcome)
    if report.failed:
        return "error"  # a fixture failed (setup) or cleaned up badly (teardown)
    if report.skipped and report.when == "setup":
        return "skipped"
    return None


def _failure(report: pytest.TestReport) -> str | None:
    """A failed test's message as pytest's summary line reads it (``ghostrun review``)."""
    if not report.failed:
        return None
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None)
    return str(message) if message else None


def _limits(session: pytest.Session) -> list[str]:
    """How this run was narrowed, for the run log: a partial run leaves cassettes unused."""
    config, option = session.config, session.config.option
    limits = [f"-k {option.keyword!r}"] if getattr(option, "keyword", "") else []
    limits += [f"-m {option.markexpr!r}"] if getattr(option, "markexpr", "") else []
    limits += ["--lf"] if getattr(option, "lf", False) else []
    limits += [f"--deselect {d}" for d in getattr(option, "deselect", None) or []]
    if config.args_source is pytest.Config.ArgsSource.ARGS and not _whole_suite(config):
        limits.append(f"test paths: {' '.join(config.args)}")
    if session.shouldfail or session.shouldstop:
        limits.append("the run stopped early (-x, --maxfail or an interrupt)")
    return limits


def _whole_suite(config: pytest.Config) -> bool:
    """Whether the paths given are the rootdir or the configured ``testpaths``."""
    root = config.rootpath
    whole = {root, *(root / p for p in config.getini("testpaths") or [])}
    return all(Path(arg).resolve() in {p.resolve() for p in whole} for arg in config.args)


def _points_into_pytest(longrepr: tuple[str, int, str]) -> bool:
    """True for a skip located inside pytest itself (its unittest support)."""
    return "_pytest" in Path(str(longrepr[0])).parts
