"""Fixtures the interception tests share: a tripwire on the network's way out, and a Python
that has ghostrun installed as a wheel installs it (its start-up hook included)."""

from __future__ import annotations

import errno
import ipaddress
import shutil
import socket
import subprocess
import sysconfig
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT

GUARD_PTH = ROOT / "ghostrun_replay_guard.pth"


@pytest.fixture
def tripwire(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Refuse, and note, every look-up of a name and connect to an address off loopback."""
    attempts: list[str] = []
    lookup, connect = socket.getaddrinfo, socket.socket.connect

    def loopback(host: Any) -> bool:
        text = host.decode() if isinstance(host, bytes) else str(host)
        if text in ("localhost", ""):
            return True
        try:
            return ipaddress.ip_address(text.strip("[]")).is_loopback
        except ValueError:
            return False

    def guarded_lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not loopback(host):
            attempts.append(f"look up {host}")
            raise socket.gaierror(socket.EAI_NONAME, "refused by the test's tripwire")
        return lookup(host, *args, **kwargs)

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and not loopback(address[0]):
            attempts.append(f"connect to {address[0]}")
            raise ConnectionRefusedError(errno.ECONNREFUSED, "refused by the test's tripwire")
        return connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", guarded_lookup)
    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    return attempts


@pytest.fixture(scope="module")
def installed_python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh environment with ghostrun installed as a wheel installs it: this checkout and
    its dependencies on the path, and the start-up hook the wheel ships beside them."""
    where = tmp_path_factory.mktemp("venv")
    venv.create(where, with_pip=False, symlinks=True)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    paths = [str(ROOT), sysconfig.get_paths()["purelib"]]  # the checkout, then its deps
    Path(purelib, "_editable_impl_ghostrun.pth").write_text("\n".join(paths) + "\n")
    shutil.copy(GUARD_PTH, purelib)
    yield str(python)
