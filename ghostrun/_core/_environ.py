"""The environment read where every session reads it: one dict look-up a variable.

``os.environ.get(name)`` runs three Python functions (the mapping's ``get``, its
``__getitem__``, the name's encoding) a variable, and a session per test reads a
dozen (its settings, its test's id, what the children it may start inherit).
CPython's ``os.environ`` keeps the variables, encoded, in a dict of its own that
every change made through it updates (``os.environ[...] = ...``, ``del``,
``monkeypatch.setenv``), so reading that dict is reading ``os.environ``. Where
``os.environ`` is something else (a test's stand-in), it is read as usual.
A change (`put`, `unset`) is made as ``os.environ`` makes it: the C environment
that child processes inherit first (``putenv``, ``unsetenv``), then that dict.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

__all__ = ["get", "put", "restore", "stored", "swap"]

_encode: Callable[[str], Any] = getattr(os.environ, "encodekey", str)
_keys: dict[str, Any] = {}  # a variable's name: its key in ``os.environ``'s own dict
_all: dict[tuple[str, ...], tuple[Any, ...]] = {}  # likewise, several names at once
_values: dict[str, Any] = {}  # a value set (a pid, a host list): as ``os.environ`` stores it
_KEEP = 64


def get(name: str) -> str | None:
    """``os.environ.get(name)``."""
    environ = os.environ
    data = getattr(environ, "_data", None)
    if type(data) is not dict:
        return environ.get(name)
    value = data.get(_keys.get(name) or _key(name))
    return None if value is None else environ.decodevalue(value)


def stored(names: tuple[str, ...]) -> tuple[object, ...]:
    """The values of ``names`` as ``os.environ`` stores them (None: unset): to compare, or to
    put back (`restore`)."""
    data = getattr(os.environ, "_data", None)
    if type(data) is not dict:
        return tuple(map(os.environ.get, names))
    return tuple(map(data.get, _all.get(names) or _keys_of(names)))


def put(name: str, value: str) -> None:
    """``os.environ[name] = value``."""
    swap((name,), (value,))


def swap(names: tuple[str, ...], values: tuple[str, ...]) -> tuple[object, ...]:
    """``os.environ[name] = value`` for the first names, one value each; returns every one
    of ``names`` as `stored` had it before, for `restore`. One pass: a replay session per
    test sets the variables its children inherit, and puts them back at its close."""
    environ = os.environ
    data = getattr(environ, "_data", None)
    if type(data) is not dict:
        before = tuple(map(environ.get, names))
        for name, value in zip(names, values, strict=False):  # the first names
            environ[name] = value
        return before
    keys = _all.get(names) or _keys_of(names)
    before = tuple(map(data.get, keys))
    for key, value in zip(keys, values, strict=False):
        encoded = _values.get(value)
        if encoded is None:
            if len(_values) >= _KEEP:
                _values.clear()
            encoded = _values[value] = environ.encodevalue(value)
        os.putenv(key, encoded)
        data[key] = encoded
    return before


def restore(names: tuple[str, ...], values: tuple[object, ...]) -> None:
    """Put ``names`` back as `stored` gave their ``values``: each set again, or unset."""
    environ = os.environ
    data = getattr(environ, "_data", None)
    keys = _all.get(names) or _keys_of(names)
    for name, key, value in zip(names, keys, values, strict=True):
        if type(data) is not dict or isinstance(value, str):  # stored through a stand-in
            if value is None:
                environ.pop(name, None)
            else:
                environ[name] = str(value)
        elif value is not None:
            os.putenv(key, value)  # type: ignore[arg-type]  # as ``os.environ`` stores it
            data[key] = value
        elif key in data:
            os.unsetenv(key)
            del data[key]


def _keys_of(names: tuple[str, ...]) -> tuple[Any, ...]:
    keys = _all[names] = tuple(map(_encode, names))
    return keys


def _key(name: str) -> Any:
    key = _keys[name] = _encode(name)
    return key
