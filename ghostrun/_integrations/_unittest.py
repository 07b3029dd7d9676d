"""``TestCaseMixin``: a ghostrun session around every unittest test.

Put it first in the bases, for ``unittest.TestCase`` and
``unittest.IsolatedAsyncioTestCase`` alike::

    class ReplyTests(ghostrun.TestCaseMixin, unittest.TestCase):
        ghostrun_session_kwargs = {"hosts": ["llm.internal"]}

        def test_apology(self):
            reply = client.chat.completions.create(...)
            self.assertContainsIntent(reply, "apology")

As vcrpy's ``VCRMixin`` does, ``setUp`` opens the session (named by the test's
pytest node id, ``tests/test_x.py::ReplyTests::test_apology``, under pytest and
``python -m unittest`` alike: `_identity`) and ``addCleanup`` closes it, so
``setUp``, ``tearDown`` and the test share it. A ``CacheMiss`` the test
swallowed is raised when the session closes, which unittest reports as an error
of that test; a test that already failed (a miss or any other error) is reported
once, as its own failure: not told about unplayed steps as well. In
an async test the session is visible to the test's task: ``setUp``,
``asyncSetUp``, the test and the cleanups run in one context.

The test class holds the roads from its first test to its last
(``setUpClass`` takes a lease, a class cleanup gives it back: DESIGN §2), so its
tests' sessions install nothing. Each run of a test is a run of its trajectory
(`_trajectory.test_started`): the sessions it opens one after another are its
sessions 0, 1, ...; running it again starts from 0 again.

The ``assert…`` methods are ``ghostrun.expect``, ``ghostrun.expect_tool_calls``
and ``ghostrun.expect_trajectory`` (on the test's session) in unittest's
spelling, with ``msg=``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import unittest
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from .._assertions._expect import ExpectationFailed, expect, expect_tool_calls
from .._assertions._trajectory import expect_trajectory
from .._core._exceptions import GhostrunError
from .._core._public import public
from .._intercept import _patch
from .._recording import _runlog, _trajectory
from .._recording._deck import carries_miss
from .._recording._session import Session
from ._identity import node_id

__all__ = ["TestCaseMixin"]

# unittest leaves frames of modules that set this out of a failure's traceback,
# as it does its own: the traceback starts in the test, not in our wrapper.
__unittest = True

if TYPE_CHECKING:
    _Base = unittest.TestCase
else:
    _Base = object

# The methods unittest calls by name around a test; a miss escaping one is noted.
_PARTS = ("setUp", "asyncSetUp", "tearDown", "asyncTearDown")
# TestResult's lists, whose growth during a run tells the test's outcome.
_RESULT_LISTS = ("errors", "failures", "unexpectedSuccesses", "skipped", "expectedFailures")


@public
class TestCaseMixin(_Base):
    """Runs each test in a ghostrun session; adds semantic ``assert…`` methods.

    ``ghostrun_session_kwargs`` holds the session's arguments (those of
    ``ghostrun.session()``); override :meth:`ghostrun_session_options` to
    compute them per test. ``self.ghostrun_session`` is the test's session.
    """

    ghostrun_session_kwargs: ClassVar[dict[str, Any]] = {}

    _ghostrun_current: Session | None = None
    _ghostrun_escaped: BaseException | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        mro = cls.__mro__
        if unittest.TestCase in mro and mro.index(unittest.TestCase) < mro.index(TestCaseMixin):
            raise TypeError(
                f"{cls.__qualname__}: list ghostrun.TestCaseMixin before unittest.TestCase "
                f"in the base classes (class {cls.__name__}(ghostrun.TestCaseMixin, "
                "unittest.TestCase)); otherwise its setUp never runs and requests are not "
                "recorded or replayed"
            )

    @classmethod
    def setUpClass(cls) -> None:
        """Hold the roads for the class's tests (a lease), given back by a class cleanup."""
        super().setUpClass()
        cls.addClassCleanup(_patch.lease())

    # -- the session -----------------------------------------------------------------------

    def ghostrun_session_options(self) -> dict[str, Any]:
        """The session's arguments for this test; ``name`` defaults to `ghostrun_test_id`."""
        return dict(self.ghostrun_session_kwargs)

    def ghostrun_test_id(self) -> str:
        """The test's name in cassettes, trajectories and run logs: its pytest node id,
        ``tests/test_x.py::Class::test_y``, the same under pytest and ``python -m unittest``."""
        return node_id(type(self), self._testMethodName)

    @property
    def ghostrun_session(self) -> Session:
        """The session the current test runs in."""
        return self._ghostrun_require()

    def _ghostrun_require(self) -> Session:
        if self._ghostrun_current is None:
            raise GhostrunError(
                f"{type(self).__name__} has no ghostrun session: TestCaseMixin opens it in "
                "setUp, so a setUp override must call super().setUp()"
            )
        return self._ghostrun_current

    def setUp(self) -> None:
        options = dict(self.ghostrun_session_options())
        options.setdefault("name", self.ghostrun_test_id())
        session = Session(**options)
        session.__enter__()
        self._ghostrun_current = session
        self.addCleanup(self._ghostrun_close, session)
        super().setUp()

    def _ghostrun_close(self, session: Session) -> None:
        """Leave the session as the test left it: a test that already failed is not told
        about unplayed steps as well, and a miss already reported is not raised again.

        What the session raises here is ghostrun's message, not a failure of its code:
        its traceback is cut, so unittest shows the message alone (the frames above are
        unittest's and this module's, which ``__unittest`` leaves out).
        """
        escaped = self._ghostrun_escaped
        try:
            session.__exit__(type(escaped) if escaped is not None else None, escaped, None)
        except BaseException as exc:
            if _told_by_ghostrun(exc):
                raise exc.with_traceback(None)  # noqa: B904  # the same error, its frames cut
            raise

    def run(self, result: unittest.TestResult | None = None) -> unittest.TestResult | None:
        """Run the test, noting misses that escape its parts, then report its outcome."""
        before = _counts(result) if result is not None else (0,) * len(_RESULT_LISTS)
        self._ghostrun_current = self._ghostrun_escaped = None
        restore = self._ghostrun_watch()
        _trajectory.test_started()
        try:
            result = super().run(result)
        finally:
            _trajectory.test_ended()
            restore()
        after = _counts(result)
        if before is not None and after is not None:
            session = self._ghostrun_current
            name = session.name if session is not None and session.name else self.ghostrun_test_id()
            _runlog.test_outcome(name, _outcome(before, after), _failure(result, before))
        return result

    def _ghostrun_watch(self) -> Callable[[], None]:
        """Wrap the test method and the setUp/tearDown hooks; returns the undo."""
        saved: dict[str, Any] = {}
        test_name = getattr(self, "_testMethodName", None)
        for name in (test_name, *_PARTS):
            method = getattr(self, name, None) if name else None
            if name is None or not callable(method):
                continue
            saved[name] = self.__dict__.get(name, _MISSING)
            setattr(self, name, self._ghostrun_wrap(method, is_test=name == test_name))

        def restore() -> None:
            for name, previous in saved.items():
                if previous is _MISSING:
                    self.__dict__.pop(name, None)
                else:
                    setattr(self, name, previous)

        return restore

    def _ghostrun_wrap(self, method: Callable[..., Any], *, is_test: bool) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(method):

            @functools.wraps(method)
            async def async_part(*args: Any, **kwargs: Any) -> Any:
                with self._ghostrun_noting(is_test):
                    return await method(*args, **kwargs)

            return async_part

        @functools.wraps(method)
        def part(*args: Any, **kwargs: Any) -> Any:
            with self._ghostrun_noting(is_test):
                return method(*args, **kwargs)

        return part

    @contextlib.contextmanager
    def _ghostrun_noting(self, is_test: bool) -> Iterator[None]:
        if is_test:
            self._ghostrun_require()  # a setUp that skipped super().setUp() fails here
        try:
            yield
        except BaseException as exc:
            if self._ghostrun_escaped is None or carries_miss(exc):  # the first, or the miss
                self._ghostrun_escaped = exc
            if isinstance(exc, ExpectationFailed):
                _end_traceback_in_the_test(exc)
            raise

    # -- assertions: expect() in unittest's spelling --------------------------------------

    def assertContainsIntent(
        self, value: object, intent: str, msg: Any = None, *, judge: Any = None
    ) -> None:
        """The reply expresses ``intent``, as the judge sees it."""
        self._ghostrun_assert(msg, lambda: expect(value, judge=judge).contains_intent(intent))

    def assertNotContainsIntent(
        self, value: object, intent: str, msg: Any = None, *, judge: Any = None
    ) -> None:
        """The reply nowhere expresses ``intent``."""
        self._ghostrun_assert(
            msg, lambda: expect(value, judge=judge).does_not_contain_intent(intent)
        )

    def assertToneIs(self, value: object, tone: str, msg: Any = None, *, judge: Any = None) -> None:
        """The reply's overall tone is ``tone``."""
        self._ghostrun_assert(msg, lambda: expect(value, judge=judge).tone_is(tone))

    def assertGroundedIn(
        self, value: object, context: str | Sequence[str], msg: Any = None, *, judge: Any = None
    ) -> None:
        """Every claim in the reply is supported by ``context``."""
        self._ghostrun_assert(msg, lambda: expect(value, judge=judge).is_grounded_in(context))

    def assertSatisfies(
        self, value: object, criterion: str, msg: Any = None, *, judge: Any = None
    ) -> None:
        """The reply meets a criterion written in plain words."""
        self._ghostrun_assert(msg, lambda: expect(value, judge=judge).satisfies(criterion))

    def assertValidJson(
        self, value: object, schema: dict[str, Any] | bool | None = None, msg: Any = None
    ) -> None:
        """The reply is strict JSON, valid against ``schema`` when one is given."""
        self._ghostrun_assert(msg, lambda: expect(value).is_valid_json(schema))

    def assertToolCalled(
        self, value: object, name: str, msg: Any = None, *, times: int | None = None
    ) -> None:
        """The model called ``name`` (exactly ``times`` times, when given)."""
        calls = expect_tool_calls(value)
        if times is None:
            self._ghostrun_assert(msg, lambda: calls.called(name))
        else:
            self._ghostrun_assert(msg, lambda: calls.call_count(name, times))

    def assertToolCalledWith(
        self, value: object, name: str, arguments: Mapping[str, Any] | None = None, /, **subset: Any
    ) -> None:
        """Some call to ``name`` has these arguments (a subset match).

        Every keyword is an argument to match, so this method takes no ``msg``.
        """
        self._ghostrun_assert(
            None, lambda: expect_tool_calls(value).called_with(name, arguments, **subset)
        )

    def assertToolNotCalled(self, value: object, name: str, msg: Any = None) -> None:
        """The model made no call to ``name``."""
        self._ghostrun_assert(msg, lambda: expect_tool_calls(value).did_not_call(name))

    # -- the test's whole run: expect_trajectory() on its session ------------------------

    def assertToolOrder(self, names: Sequence[str], msg: Any = None) -> None:
        """The test's session called these tools in this order (others may come between)."""
        self._ghostrun_assert(msg, lambda: self._ghostrun_trajectory().tool_order(names))

    def assertNeverCalled(self, name: str, msg: Any = None) -> None:
        """No model call of the test's session called ``name``."""
        self._ghostrun_assert(msg, lambda: self._ghostrun_trajectory().never_called(name))

    def assertAtMostSteps(self, n: int, msg: Any = None) -> None:
        """The test's session made at most ``n`` model calls."""
        self._ghostrun_assert(msg, lambda: self._ghostrun_trajectory().at_most_steps(n))

    def assertEndsWithText(self, msg: Any = None) -> None:
        """The last model call of the test's session answered in text, calling no tool."""
        self._ghostrun_assert(msg, lambda: self._ghostrun_trajectory().ends_with_text())

    def _ghostrun_trajectory(self) -> Any:
        return expect_trajectory(self._ghostrun_require())

    def _ghostrun_assert(self, msg: Any, check: Callable[[], object]) -> None:
        """Run ``check``; add ``msg`` to its failure as unittest does, as ``failureException``."""
        try:
            check()
        except ExpectationFailed as exc:
            message = str(exc)
            if msg is not None:
                message = f"{message}\n{'note:':<10}{msg}" if self.longMessage else str(msg)
            if msg is None and isinstance(exc, self.failureException):
                raise
            if issubclass(ExpectationFailed, self.failureException):
                raise _with_message(exc, message) from None
            raise self.failureException(message) from exc


_MISSING = object()


def _told_by_ghostrun(exc: BaseException) -> bool:
    """An error ghostrun raises to tell the user something (its message is the story)."""
    return type(exc).__module__.split(".")[0] == "ghostrun"


def _end_traceback_in_the_test(exc: BaseException) -> None:
    """Cut a failed expectation's traceback after the test's own last frame.

    unittest leaves out the trailing frames of modules that set ``__unittest`` only
    when the failure is exactly ``failureException``; an `ExpectationFailed` keeps its
    type (and its fields), so the frames of ghostrun's assertions are cut here.
    """
    last_own = None
    tb = exc.__traceback__
    while tb is not None:
        if "__unittest" not in tb.tb_frame.f_globals:
            last_own = tb
        tb = tb.tb_next
    if last_own is not None:
        last_own.tb_next = None


def _with_message(exc: ExpectationFailed, message: str) -> ExpectationFailed:
    return ExpectationFailed(
        message,
        kind=exc.kind,
        criterion=exc.criterion,
        text=exc.text,
        reason=exc.reason,
        judge=exc.judge,
        verdict=exc.verdict,
    )


def _counts(result: object) -> tuple[int, ...] | None:
    """The lengths of a TestResult's lists; ``None`` for a result without them (pytest's)."""
    try:
        return tuple(len(getattr(result, name)) for name in _RESULT_LISTS)
    except (AttributeError, TypeError):
        return None


def _failure(result: object, before: tuple[int, ...]) -> str | None:
    """The message of the error or failure this test added to ``result``: its exception's
    lines, after the traceback's frames (``ghostrun review`` shows it with the outcome)."""
    added = [
        entry
        for name, count in zip(("errors", "failures"), before, strict=False)
        for entry in getattr(result, name, [])[count:]
    ]
    if not added:
        return None
    lines = str(added[0][1]).rstrip().splitlines()
    frames = [i for i, line in enumerate(lines) if line.startswith('  File "')]
    start = frames[-1] + 1 if frames else 0
    while start < len(lines) and lines[start].startswith("    "):  # the frame's source
        start += 1
    return "\n".join(lines[start:]) or None


def _outcome(before: tuple[int, ...], after: tuple[int, ...]) -> str:
    """What the run log calls the outcome, from what the run added to the result."""
    errors, failures, unexpected, skipped, expected = (
        a - b for a, b in zip(after, before, strict=True)
    )
    if errors:
        return "error"
    if failures or unexpected:
        return "failed"
    if expected:
        return "xfailed"
    if skipped:
        return "skipped"
    return "passed"
