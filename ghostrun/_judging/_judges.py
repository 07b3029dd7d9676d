"""The judges that grade semantic assertions, behind one small protocol.

A judge answers one question: does ``text`` meet ``criterion``? Three ship:
`OllamaJudge` (the default, through the official ``ollama`` client),
`OpenAICompatibleJudge` (vLLM, llama.cpp's server, LM Studio, OpenAI itself,
through plain httpx) and `CallableJudge` (any Python function). Prompt
building and reply parsing are pure functions, so the network shells stay thin.

Judge HTTP calls run inside the session's ``bypass_interception()``: a
judge's verdicts are cached by ``_verdicts``, never recorded as cassettes,
even when the user adds the judge's host to a session's ``hosts``.

``ollama`` and ``httpx`` are imported only when a judge first calls out, so
``import ghostrun`` stays light and never imports ``ollama``.

A judge's HTTP client is cheap to build but for its TLS context (loading the
CA bundle takes tens of milliseconds): one context is built per process and
shared by every client, and an async judge builds it in a worker thread, so
grading never stalls the event loop.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import orjson

from .._core._exceptions import GhostrunError, JudgeUnavailable
from .._core._public import public
from .._recording import _session
from . import _named

if TYPE_CHECKING:
    import ssl

    import httpx

__all__ = [
    "DEFAULT_OLLAMA_HOST",
    "DEFAULT_OLLAMA_MODEL",
    "PROMPT_TEMPLATE_VERSION",
    "SYSTEM_PROMPT",
    "VERDICT_SCHEMA",
    "CallableJudge",
    "Judge",
    "OllamaJudge",
    "OpenAICompatibleJudge",
    "RawVerdict",
    "as_judge",
    "build_messages",
    "judge_from_spec",
    "parse_verdict",
]

PROMPT_TEMPLATE_VERSION = 1
"""Bump when the prompts below change: it is part of every verdict's cache key."""

DEFAULT_OLLAMA_MODEL = "llama3.2:3b"
DEFAULT_OLLAMA_HOST = "http://localhost:11434"

SYSTEM_PROMPT = (
    "You are a strict test grader. You are given a CRITERION and a TEXT. "
    "Decide whether the TEXT meets the CRITERION. "
    "Answer PASS or FAIL on the first line, then one short sentence giving the reason. "
    "Never equivocate: if the TEXT does not clearly meet the CRITERION, answer FAIL. "
    'When asked for JSON, reply {"verdict": "PASS" or "FAIL", "reason": "..."}.'
)

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["PASS", "FAIL"]},
        "reason": {"type": "string"},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}


@public
@dataclass(frozen=True)
class RawVerdict:
    """One draw from a judge, before voting and caching."""

    passed: bool
    reason: str


@public
@runtime_checkable
class Judge(Protocol):
    """What the verdict cache needs from a judge.

    ``identity`` names the backend, the model and anything else that changes
    the answers (never a host or a timeout): it keys the verdict cache, so two
    judges that may disagree must not share one.
    """

    @property
    def identity(self) -> str: ...

    @property
    def votes(self) -> int: ...

    def judge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict: ...

    async def ajudge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict: ...


# --- the pure core: prompts and reply parsing --------------------------------------


def build_messages(text: str, criterion: str) -> list[dict[str, str]]:
    """The chat messages sent to an LLM judge (system prompt, then criterion and text)."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"CRITERION: {criterion}\n\nTEXT: {text}"},
    ]


_FENCE = re.compile(r"^```[a-zA-Z]*\s*(.*?)\s*```$", re.DOTALL)
_FIRST_TOKEN = re.compile(
    r"""^[\s*_#`>"'\[(]*            # markdown and quoting around the verdict
        (?:verdict\s*[:=-]\s*[*_`"']*)?  # an optional "Verdict:" label
        (?P<word>PASS(?:ED)?|FAIL(?:ED)?)
        (?![A-Za-z0-9])""",
    re.IGNORECASE | re.VERBOSE,
)
_REASON_LEAD = re.compile(r"""^[\s*_`"'\])}:.,;!\-\u2013\u2014]+""")


def parse_verdict(reply: str, judge: str = "judge") -> RawVerdict:
    """Read a judge's reply: structured JSON first, else a leading PASS/FAIL token.

    A reply that is neither is an error naming the reply, never a silent FAIL:
    a broken judge must not look like a failing text.
    """
    stripped = reply.strip()
    if not stripped:
        raise JudgeUnavailable(
            f"the judge {judge} returned an empty reply. Check that the model "
            "answers at all (for Ollama: `ollama run MODEL 'say PASS'`)."
        )
    structured = _parse_json_verdict(stripped)
    if structured is not None:
        return structured
    token = _parse_first_token(stripped)
    if token is not None:
        return token
    raise JudgeUnavailable(
        f"the judge {judge} replied with neither a JSON verdict nor PASS/FAIL first: "
        f"{_preview(reply)}. Use a model that follows instructions, or another judge."
    )


def _parse_json_verdict(reply: str) -> RawVerdict | None:
    fenced = _FENCE.match(reply)
    body = fenced.group(1) if fenced else reply
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    verdict = value.get("verdict")
    if not isinstance(verdict, str) or verdict.strip().upper() not in ("PASS", "FAIL"):
        return None
    reason = value.get("reason", "")
    return RawVerdict(verdict.strip().upper() == "PASS", str(reason).strip())


def _parse_first_token(reply: str) -> RawVerdict | None:
    match = _FIRST_TOKEN.match(reply)
    if match is None:
        return None
    passed = match.group("word").upper().startswith("PASS")
    reason = _REASON_LEAD.sub("", reply[match.end() :]).strip()
    return RawVerdict(passed, reason)


def _preview(value: str, limit: int = 300) -> str:
    shown = value if len(value) <= limit else value[:limit] + "…"
    return repr(shown)


# --- shared plumbing ------------------------------------------------------------------


def no_recording() -> contextlib.AbstractContextManager[Any]:
    """The session's guard that keeps judge traffic out of the cassettes."""
    return _session.bypass_interception()


def _positive_int(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _positive_float(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return float(value)


_tls: list[ssl.SSLContext] = []  # at most one: the context every judge client shares
_tls_lock = threading.Lock()


def tls_context() -> ssl.SSLContext:
    """The TLS context of every judge client, built on first use (httpx's defaults)."""
    with _tls_lock:
        if not _tls:
            import httpx

            _tls.append(httpx.create_ssl_context())
        return _tls[0]


async def atls_context() -> ssl.SSLContext:
    """`tls_context` for async code: the first build runs off the event loop."""
    if _tls:
        return _tls[0]
    import anyio.to_thread

    return await anyio.to_thread.run_sync(tls_context)


async def _aimport_ollama() -> Any:
    """`_import_ollama` off the event loop the first time (importing it builds a client)."""
    if "ollama" in sys.modules:
        return _import_ollama()
    import anyio.to_thread

    return await anyio.to_thread.run_sync(_import_ollama)


# --- Ollama ----------------------------------------------------------------------------


@public
class OllamaJudge:
    """Grades with a local Ollama model through the official ``ollama`` client.

    ``model`` defaults to ``GHOSTRUN_JUDGE_MODEL``, then ``llama3.2:3b``;
    ``host`` to ``OLLAMA_HOST``, then ``http://localhost:11434`` (read at use).
    """

    def __init__(
        self,
        model: str | None = None,
        host: str | None = None,
        *,
        votes: int = 1,
        timeout: float = 60.0,
    ) -> None:
        self.model = model or os.environ.get("GHOSTRUN_JUDGE_MODEL") or DEFAULT_OLLAMA_MODEL
        self._host = host
        self.votes = _positive_int("votes", votes)
        self.timeout = _positive_float("timeout", timeout)
        # The ollama client sends OLLAMA_API_KEY to any host; a host named in the project's
        # table that is not Ollama's own gets none (`_named`, `judge_from_spec`).
        self.sends_environment_key = True

    def __repr__(self) -> str:
        return f"OllamaJudge(model={self.model!r}, host={self.host!r}, votes={self.votes})"

    @property
    def identity(self) -> str:
        return f"ollama:{self.model}"

    @property
    def host(self) -> str:
        return self._host or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_HOST

    @property
    def setup_commands(self) -> tuple[str, ...]:
        """The shell commands that make this judge available."""
        return ("ollama serve", f"ollama pull {self.model}")

    def chat_request(
        self, text: str, criterion: str, seed: int | None, temperature: float
    ) -> dict[str, Any]:
        """The keyword arguments of ``ollama.Client.chat`` for one draw."""
        options: dict[str, Any] = {"temperature": temperature}
        if seed is not None:
            options["seed"] = seed
        return {
            "model": self.model,
            "messages": build_messages(text, criterion),
            "format": VERDICT_SCHEMA,
            "options": options,
            "stream": False,
        }

    def judge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict:
        ollama = _import_ollama()
        request = self.chat_request(text, criterion, seed, temperature)
        with (
            no_recording(),
            self._translate_errors(),
            ollama.Client(
                host=self.host, timeout=self.timeout, verify=tls_context(), **self._no_key(False)
            ) as client,
        ):
            response = client.chat(**request)
        return parse_verdict(response.message.content or "", self.identity)

    async def ajudge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict:
        ollama = await _aimport_ollama()
        request = self.chat_request(text, criterion, seed, temperature)
        verify = await atls_context()
        with no_recording(), self._translate_errors():
            client = ollama.AsyncClient(
                host=self.host, timeout=self.timeout, verify=verify, **self._no_key(True)
            )
            async with client:
                response = await client.chat(**request)
        return parse_verdict(response.message.content or "", self.identity)

    def _no_key(self, asynchronous: bool) -> dict[str, Any]:
        """httpx options that take the environment's key off every request, when it may not go."""
        if self.sends_environment_key:
            return {}
        hook = _named.drop_authorization_async if asynchronous else _named.drop_authorization
        return {"event_hooks": {"request": [hook]}}

    @contextlib.contextmanager
    def _translate_errors(self) -> Iterator[None]:
        """Turn the client's errors into JudgeUnavailable carrying the fix."""
        import httpx
        import ollama

        try:
            yield
        except ollama.ResponseError as exc:
            raise self._response_error(exc) from exc
        except httpx.TimeoutException as exc:
            raise JudgeUnavailable(
                f"the Ollama judge at {self.host} did not answer within {self.timeout:g} s "
                f"(model {self.model}; the first call also loads the model). Raise the "
                f"timeout: OllamaJudge(timeout=...), or use a smaller model."
            ) from exc
        except (ConnectionError, httpx.ConnectError) as exc:
            raise JudgeUnavailable(
                f"cannot reach the Ollama judge at {self.host}. Start it with "
                f"`ollama serve` (then `ollama pull {self.model}`), or point OLLAMA_HOST "
                "(or OllamaJudge(host=...)) at a running server."
            ) from exc
        except httpx.TransportError as exc:
            raise JudgeUnavailable(
                f"the connection to the Ollama judge at {self.host} failed: {exc!r}. "
                "Check that `ollama serve` is running and healthy."
            ) from exc

    def _response_error(self, exc: Any) -> JudgeUnavailable:
        if exc.status_code == 404:
            return JudgeUnavailable(
                f"the Ollama server at {self.host} does not have the judge model "
                f"{self.model!r} ({exc.error}). Pull it with `ollama pull {self.model}`, "
                "or choose another: OllamaJudge(model=...) or GHOSTRUN_JUDGE_MODEL."
            )
        return JudgeUnavailable(
            f"the Ollama judge at {self.host} answered with an error "
            f"(status {exc.status_code}): {exc.error}. Check `ollama serve`'s log."
        )


def _import_ollama() -> Any:
    try:
        import ollama
    except ImportError as exc:  # pragma: no cover - ollama is a dependency
        raise JudgeUnavailable(
            "the Ollama judge needs the `ollama` package: pip install ollama"
        ) from exc
    return ollama


# --- OpenAI-compatible servers --------------------------------------------------------


@public
class OpenAICompatibleJudge:
    """Grades through any ``/chat/completions`` endpoint (vLLM, llama.cpp, LM Studio, OpenAI).

    ``base_url`` is the API root, usually ending in ``/v1``. The host is left
    out of the identity: the same model behind another URL gives the same answers.
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        api_key: str | None = None,
        *,
        votes: int = 1,
        timeout: float = 60.0,
    ) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.votes = _positive_int("votes", votes)
        self.timeout = _positive_float("timeout", timeout)

    def __repr__(self) -> str:
        return (
            f"OpenAICompatibleJudge(model={self.model!r}, base_url={self.base_url!r}, "
            f"votes={self.votes})"
        )

    @property
    def identity(self) -> str:
        return f"openai-compatible:{self.model}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def request_body(
        self, text: str, criterion: str, seed: int | None, temperature: float
    ) -> dict[str, Any]:
        """The JSON body of one draw, asking for a schema-shaped verdict."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": build_messages(text, criterion),
            "temperature": temperature,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "strict": True, "schema": VERDICT_SCHEMA},
            },
        }
        if seed is not None:
            body["seed"] = seed
        return body

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def judge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict:
        import httpx

        body = self.request_body(text, criterion, seed, temperature)
        with (
            no_recording(),
            self._translate_errors(),
            httpx.Client(timeout=self.timeout, verify=tls_context()) as client,
        ):
            response = client.post(self.url, json=body, headers=self.headers())
            response.raise_for_status()
        return parse_verdict(self._content(response), self.identity)

    async def ajudge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict:
        import httpx

        body = self.request_body(text, criterion, seed, temperature)
        verify = await atls_context()
        with no_recording(), self._translate_errors():
            async with httpx.AsyncClient(timeout=self.timeout, verify=verify) as client:
                response = await client.post(self.url, json=body, headers=self.headers())
                response.raise_for_status()
        return parse_verdict(self._content(response), self.identity)

    def _content(self, response: httpx.Response) -> str:
        try:
            content = response.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise JudgeUnavailable(
                f"the judge {self.identity} at {self.url} sent no chat completion: "
                f"{_preview(response.text)}. Check base_url (it usually ends in /v1)."
            ) from exc
        return content if isinstance(content, str) else ""

    @contextlib.contextmanager
    def _translate_errors(self) -> Iterator[None]:
        """Turn httpx's errors into JudgeUnavailable carrying the fix."""
        import httpx

        try:
            yield
        except httpx.HTTPStatusError as exc:
            raise self._status_error(exc.response) from exc
        except httpx.TimeoutException as exc:
            raise JudgeUnavailable(
                f"the judge {self.identity} at {self.url} did not answer within "
                f"{self.timeout:g} s. Raise the timeout: OpenAICompatibleJudge(timeout=...)."
            ) from exc
        except httpx.ConnectError as exc:
            raise JudgeUnavailable(
                f"cannot reach the judge {self.identity} at {self.url}. Start the server "
                "(vLLM, llama.cpp, LM Studio…) or fix base_url."
            ) from exc
        except httpx.TransportError as exc:
            raise JudgeUnavailable(
                f"the connection to the judge at {self.url} failed: {exc!r}"
            ) from exc

    def _status_error(self, response: httpx.Response) -> JudgeUnavailable:
        status = response.status_code
        if status in (401, 403):
            fix = "Pass a valid key: OpenAICompatibleJudge(api_key=...)."
        elif status == 404:
            fix = f"Check base_url (it usually ends in /v1) and that {self.model!r} is served."
        else:
            fix = "Check the server's log."
        return JudgeUnavailable(
            f"the judge {self.identity} at {self.url} answered {status}: "
            f"{_preview(response.text)}. {fix}"
        )


# --- any Python function -------------------------------------------------------------

JudgeFunction = Callable[[str, str], Any]


@public
class CallableJudge:
    """Wraps ``fn(text, criterion) -> bool | (bool, reason)`` (or an async one) as a judge.

    The identity is the function's qualified name, so renaming the function
    re-grades; lambdas add their line so two lambdas in one module never share
    verdicts. Pass ``name=`` to pin it.
    """

    votes = 1

    def __init__(self, fn: JudgeFunction, *, name: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"a judge must be callable, got {fn!r}")
        self.fn = fn
        self.name = name or _qualified_name(fn)

    def __repr__(self) -> str:
        return f"CallableJudge({self.name})"

    @property
    def identity(self) -> str:
        return f"callable:{self.name}"

    def judge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict:
        result = self.fn(text, criterion)
        if isinstance(result, Awaitable):
            _close_awaitable(result)
            raise GhostrunError(
                f"the judge {self.name} is async: use it from async code (agrade / an "
                "async test), or pass a plain function"
            )
        return self._raw(result)

    async def ajudge(
        self, text: str, criterion: str, seed: int | None = None, temperature: float = 0.0
    ) -> RawVerdict:
        result = self.fn(text, criterion)
        if isinstance(result, Awaitable):
            result = await result
        return self._raw(result)

    def _raw(self, result: Any) -> RawVerdict:
        if isinstance(result, RawVerdict):
            return result
        if isinstance(result, bool):
            return RawVerdict(result, f"{self.name} returned {result}")
        if (
            isinstance(result, tuple)
            and len(result) == 2
            and isinstance(result[0], bool)
            and isinstance(result[1], str)
        ):
            return RawVerdict(result[0], result[1])
        raise TypeError(
            f"the judge {self.name} returned {result!r}: expected a bool or a (bool, reason) tuple"
        )


def _qualified_name(fn: Any) -> str:
    module = getattr(fn, "__module__", None) or "?"
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    name = f"{module}.{qualname}"
    code = getattr(fn, "__code__", None)
    if "<lambda>" in qualname and code is not None:
        name += f":{code.co_firstlineno}"
    return name


def _close_awaitable(value: object) -> None:
    close = getattr(value, "close", None)
    if callable(close):
        close()


def as_judge(judge: Any) -> Judge:
    """A `Judge` as given, or a plain callable wrapped in `CallableJudge`."""
    if isinstance(judge, Judge):
        return judge
    if callable(judge):
        return CallableJudge(judge)
    raise TypeError(
        f"not a judge: {judge!r}. Pass OllamaJudge(...), OpenAICompatibleJudge(...) "
        "or a function (text, criterion) -> bool | (bool, reason)."
    )


def judge_from_spec(
    spec: str | None,
    url: str | None = None,
    *,
    from_table: bool = False,
    data_dirs: Iterable[Path] = (),
) -> Judge:
    """A judge named on a command line, or in ``[tool.ghostrun]`` (``from_table``).

    ``ollama`` or ``ollama:MODEL`` (host from ``url``, else ``OLLAMA_HOST``);
    ``openai:MODEL`` with ``url`` (an OpenAI-compatible API root, its key from
    ``GHOSTRUN_JUDGE_API_KEY``, then ``OPENAI_API_KEY``: for a URL from the table, only
    when it is OpenAI's own, `_named`); or ``package.module:name`` naming a judge object
    or a function ``(text, criterion) -> bool``, never imported from ``data_dirs``.
    """
    backend, _, rest = (spec or "ollama").partition(":")
    if backend == "ollama":
        judge = OllamaJudge(rest or None, host=url)
        judge.sends_environment_key = not (from_table and url and not _named.is_ollama_cloud(url))
        return judge
    if backend in ("openai", "openai-compatible"):
        if not rest or not url:
            raise ValueError(
                "an OpenAI-compatible judge needs a model and a URL: "
                "--judge openai:MODEL --judge-url http://host:port/v1"
            )
        return OpenAICompatibleJudge(
            rest, url, api_key=_named.environment_key(url, from_table=from_table)
        )
    if not rest:
        raise ValueError(
            f"unknown judge {spec!r}: expected ollama[:MODEL], openai:MODEL, "
            "or package.module:name of a judge or a function"
        )
    try:
        found = getattr(_named.import_named(backend, data_dirs), rest)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"cannot load the judge {spec!r}: {exc}") from exc
    return as_judge(found)
