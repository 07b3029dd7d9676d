"""`_patch.LateImports` under threads: a module half-imported when its installer comes back.

Thread A imports a watched module while the installer is on; every holder
releases and another thread acquires again before A's import returns. The
half-imported module belongs to A's import (its loader is already wrapped):
the installer must neither wait for it under its lock (A needs that lock to
finish, a deadlock) nor patch it half-built; A patches it as its import ends.
And a module whose import starts while the installer is at work is watched
already, so that import is hooked, not missed.
Those cases run in a fresh interpreter with a timeout, so a deadlock fails
the test instead of hanging the suite, and the interleaving is pinned with
events inside the fake module's own code. Then, in this process: two watchers
of one module, and a watched import that raised.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ghostrun._intercept import _patch
from tests.fresh import run_fresh

# The fake library: its code stops halfway until the test lets it go on.
FAKE_MODULE = """
import late_gate
late_gate.entered.set()
late_gate.proceed.wait(20)
{after}
"""

# Thread A imports the fake library while the installer holds it; the installer is
# released and acquired again (thread B) while A's import is halfway; then A goes on.
SCENARIO = """
import importlib, json, sys, threading, time, types
gate = types.ModuleType("late_gate")
gate.entered, gate.proceed, gate.checking = threading.Event(), threading.Event(), threading.Event()
sys.modules["late_gate"] = gate
{setup}
acquire()  # the first holder: the fake library is not imported, so it is watched
a = threading.Thread(target=importlib.import_module, args=({module!r},), daemon=True)
a.start()
assert gate.entered.wait(20)  # A is inside the library's code, its loader wrapped
release()  # every holder has gone
errors = []
def reacquire():
    try:
        acquire()
    except BaseException as error:
        errors.append(repr(error))
b = threading.Thread(target=reacquire, daemon=True)
b.start()
deadline = time.monotonic() + 20
while b.is_alive() and not gate.checking.is_set() and time.monotonic() < deadline:
    time.sleep(0.01)
gate.proceed.set()
a.join(10)
b.join(10)
stuck = [name for name, t in (("importer", a), ("installer", b)) if t.is_alive()]
lib = sys.modules.get({module!r})
result = {{"stuck": stuck, "errors": errors, "patched": {patched}}}
if not stuck:
    release()
    result["restored"] = {restored}
print(json.dumps(result), flush=True)
"""

ROADS_SETUP = """
from ghostrun._intercept import _patch
acquire, release = _patch.acquire, _patch.release

class FakeRoad:
    waits_for = "fake_lib"

    def check(self):
        if "fake_lib" in sys.modules:
            gate.checking.set()  # the installer reaches for the library: it waits if half-built
        self.module = importlib.import_module("fake_lib")
        return True

    def install(self):
        return _patch.replace((self.module, "hook", "patched"))

_patch._adapters = lambda: [FakeRoad()]
"""

GUARD_SETUP = """
from ghostrun._intercept import _guard
acquire, release = _guard.acquire, _guard.release
"""


def run(tmp_path: Path, module: str, after: str, setup: str, patched: str) -> Any:
    """Run the scenario on ``module`` (its code ends with ``after``) in a fresh interpreter.

    ``patched`` is the expression, of the module ``lib``, that says it is patched;
    the result is the scenario's JSON.
    """
    package = tmp_path / module
    package.mkdir()
    (package / "__init__.py").write_text(FAKE_MODULE.format(after=after))
    code = SCENARIO.format(module=module, setup=setup, patched=patched, restored=f"not ({patched})")
    return run_fresh(code, path=[str(tmp_path)], timeout=90)


def test_a_road_library_half_imported_when_the_roads_reinstall_neither_deadlocks_nor_escapes(
    tmp_path: Path,
) -> None:
    """The reinstall leaves the half-imported library to its import, which patches it."""
    result = run(tmp_path, "fake_lib", 'hook = "original"', ROADS_SETUP, 'lib.hook == "patched"')
    assert result == {"stuck": [], "errors": [], "patched": True, "restored": True}


def test_a_guarded_module_half_imported_when_the_guard_reinstalls_is_hooked_once_complete(
    tmp_path: Path,
) -> None:
    """grpc (here a stand-in package) defines its channels after the point the import stops."""
    channels = "def insecure_channel(target): pass\ndef secure_channel(target, creds): pass\n"
    hooked = "getattr(lib.insecure_channel, '__wrapped__', None) is not None"
    result = run(tmp_path, "grpc", channels, GUARD_SETUP, hooked)
    assert result == {"stuck": [], "errors": [], "patched": True, "restored": True}


# The roads install (thread B, held inside the check of a library already imported)
# while thread A starts importing a library they wait for.
DURING_INSTALL = """
import importlib, json, sys, threading, types
gate = types.ModuleType("late_gate")
gate.entered, gate.proceed, gate.checking = threading.Event(), threading.Event(), threading.Event()
sys.modules["late_gate"] = gate
sys.modules["ready_lib"] = ready = types.ModuleType("ready_lib")
from ghostrun._intercept import _patch

class Ready:
    waits_for = "ready_lib"

    def check(self):
        gate.checking.set()
        return gate.proceed.wait(20)

    def install(self):
        return _patch.replace((ready, "hook", "patched"))

class Late(Ready):
    waits_for = "fake_lib"

    def check(self):
        self.module = importlib.import_module("fake_lib")
        return True

    def install(self):
        return _patch.replace((self.module, "hook", "patched"))

_patch._adapters = lambda: [Ready(), Late()]
b = threading.Thread(target=_patch.acquire, daemon=True)
b.start()
assert gate.checking.wait(20)
a = threading.Thread(target=importlib.import_module, args=("fake_lib",), daemon=True)
a.start()
gate.entered.wait(1)  # at once if the import is not hooked; hooked, it waits for the roads
gate.proceed.set()
a.join(10)
b.join(10)
stuck = [name for name, t in (("importer", a), ("installer", b)) if t.is_alive()]
print(json.dumps({"stuck": stuck, "patched": sys.modules["fake_lib"].hook == "patched"}))
"""


def test_a_road_library_whose_import_starts_while_the_roads_install_is_patched(
    tmp_path: Path,
) -> None:
    """It is watched before the checks run, so its import is hooked, never missed."""
    package = tmp_path / "fake_lib"
    package.mkdir()
    (package / "__init__.py").write_text(FAKE_MODULE.format(after='hook = "original"'))
    result = run_fresh(DURING_INSTALL, path=[str(tmp_path)], timeout=90)
    assert result == {"stuck": [], "patched": True}


# -- in this process: modules no one else imports ------------------------------------


@pytest.fixture
def fresh_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module name importable from ``tmp_path``, its code written by the test; forgotten after."""
    name = f"ghostrun_late_{tmp_path.name}"
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # the test rewrites the source
    yield name
    sys.modules.pop(name, None)


def test_two_watchers_of_one_module_are_both_told_and_the_loader_is_put_back(
    tmp_path: Path, fresh_module: str
) -> None:
    (tmp_path / f"{fresh_module}.py").write_text("value = 1\n")
    told: list[tuple[str, str, int]] = []

    def watcher(who: str) -> _patch.LateImports:
        def loaded(name: str, module: ModuleType) -> None:
            told.append((who, name, module.value))

        return _patch.LateImports(loaded, threading.RLock())

    first, second = watcher("first"), watcher("second")
    first.watch([fresh_module])
    second.watch([fresh_module])  # now first on sys.meta_path, in front of `first`
    try:
        module = importlib.import_module(fresh_module)
    finally:
        first.stop()
        second.stop()
    assert told == [("first", fresh_module, 1), ("second", fresh_module, 1)]
    assert isinstance(module.__loader__, importlib.machinery.SourceFileLoader)
    assert module.__spec__ is not None and module.__spec__.loader is module.__loader__


def test_a_watched_import_that_raised_leaves_the_module_ready_once_imported_unwatched(
    tmp_path: Path, fresh_module: str
) -> None:
    """A failed import ends the watcher's claim on the module: it is not mid-import anymore."""
    source = tmp_path / f"{fresh_module}.py"
    source.write_text("raise RuntimeError('half-built')\n")
    told: list[str] = []
    late = _patch.LateImports(lambda name, module: told.append(name), threading.RLock())
    late.watch([fresh_module])
    try:
        with pytest.raises(RuntimeError, match="half-built"):
            importlib.import_module(fresh_module)
    finally:
        late.stop()
    source.write_text("value = 2\n")
    importlib.invalidate_caches()
    module = importlib.import_module(fresh_module)
    assert late.ready(fresh_module) is module
    assert told == []
