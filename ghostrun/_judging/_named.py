"""A judge named by a string: which key its URL may receive, and where its code may come from.

A judge is named by a string on the command line (``--judge``, ``--judge-url``) or in the
project's ``[tool.ghostrun]`` table (``judge``, ``judge_url``). The table is project data
that a pull request can change and that reviewers do not read as code (DESIGN §2), so two
rules hold, in every mode:

- **Keys go where they were meant to.** A judge URL written in the table receives a key
  from the environment (``GHOSTRUN_JUDGE_API_KEY``, then ``OPENAI_API_KEY``) only when it
  is OpenAI's own API, ``https://api.openai.com``: a key a CI job holds is never sent to a
  host a pull request wrote. Likewise ``OLLAMA_API_KEY`` (which the ollama client adds
  to every request) reaches an Ollama judge from the table only at ``https://ollama.com``.
  A URL typed on the command line gets the key as before; a judge built in code
  (``OpenAICompatibleJudge(model, url, api_key=...)``) gets the key it is given.
- **No code from the cassette directory.** A ``package.module:name`` judge whose import
  would run a file inside the cassette directory is refused before anything is imported:
  that directory holds data (cassettes, verdicts) that a pull request drops in, never
  code. Where an import would look is found by asking the import system's finders, which
  execute nothing.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterable
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "OLLAMA_CLOUD_HOST",
    "OPENAI_API_HOST",
    "check_not_data",
    "drop_authorization",
    "drop_authorization_async",
    "environment_key",
    "import_named",
    "is_ollama_cloud",
]

OPENAI_API_HOST = "api.openai.com"
"""The one host a key from the environment is sent to when the table names the URL."""
OLLAMA_CLOUD_HOST = "ollama.com"
"""Likewise for ``OLLAMA_API_KEY`` and an Ollama judge."""


def environment_key(url: str, *, from_table: bool) -> str | None:
    """The key an OpenAI-compatible judge at ``url`` sends, from the environment.

    From the table, only OpenAI's own API over https gets one (see the module's rules).
    """
    if from_table and not _is_openai(url):
        return None
    return os.environ.get("GHOSTRUN_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")


def _is_openai(url: str) -> bool:
    return _is_https_host(url, OPENAI_API_HOST)


def is_ollama_cloud(url: str) -> bool:
    """Ollama's own service, the one host ``OLLAMA_API_KEY`` (which the ollama client sends
    to any host) is meant for."""
    return _is_https_host(url, OLLAMA_CLOUD_HOST)


def _is_https_host(url: str, expected: str) -> bool:
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").rstrip(".").lower()
        return parts.scheme == "https" and host == expected and parts.port in (None, 443)
    except ValueError:
        return False


def drop_authorization(request: Any) -> None:
    """An httpx request hook: the request leaves without an ``authorization`` header."""
    request.headers.pop("authorization", None)


async def drop_authorization_async(request: Any) -> None:
    drop_authorization(request)


def import_named(module: str, data_dirs: Iterable[Path]) -> object:
    """``importlib.import_module(module)``, refused if it would run code in a data directory."""
    check_not_data(module, data_dirs)
    return importlib.import_module(module)


def check_not_data(module: str, data_dirs: Iterable[Path]) -> None:
    """A ValueError naming the file when importing ``module`` would run or search a data
    directory; found without importing anything."""
    refused = [_resolved(d) for d in data_dirs]
    for place in _import_places(module):
        for directory in refused:
            if place == directory or place.is_relative_to(directory):
                raise ValueError(
                    f"refused to import the judge module {module!r} from {place}: it is inside "
                    f"the cassette directory {directory}, which holds recorded data that a pull "
                    "request can change, never code. Name a module of the project's code, "
                    "outside the cassette directory."
                )


def _import_places(module: str) -> list[Path]:
    """The files and package directories an import of ``module`` would use, step by step."""
    places: list[Path] = []
    search: list[str] | None = None
    parts = module.split(".")
    for depth in range(1, len(parts) + 1):
        spec = _find(".".join(parts[:depth]), search)
        if spec is None:
            break  # the import itself fails, or a finder of installed code answers it
        if spec.origin and spec.has_location:
            places.append(_resolved(Path(spec.origin)))
        search = list(spec.submodule_search_locations or ())
        places.extend(_resolved(Path(location)) for location in search)
    return places


def _find(name: str, search: list[str] | None) -> ModuleSpec | None:
    """The spec the import system would use, as `importlib._bootstrap._find_spec` finds it."""
    loaded = sys.modules.get(name)
    if loaded is not None:
        return getattr(loaded, "__spec__", None)
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:
            continue
        spec: ModuleSpec | None = find_spec(name, search, None)
        if spec is not None:
            return spec
    return None


def _resolved(path: Path) -> Path:
    try:
        return path.absolute().resolve()
    except (OSError, RuntimeError):
        return path.absolute()
