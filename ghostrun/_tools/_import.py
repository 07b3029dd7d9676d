"""``ghostrun import PATH...``: vcrpy and cassetter cassettes in, as if recorded here.

Each exchange read from a source file (`_importers`) goes through the same
deck a recording session uses (`_recording._deck`): its key is computed the
way a live request's is, so the SDKs replay it; it is masked by the same rules
(credential headers, URI parameters, body fields and what the provider
echoed); its body is stored readably (JSON as JSON, a stream as its events);
and repeated identical requests keep their order. On top of what a live
recording masks, secret shapes found anywhere in a source exchange (a key the
source's own scrubbing left in an echoed body) are masked too: a foreign file
is not trusted to be clean.

A source that kept the test's name (pytest-recording's
``cassettes/<module>/<test>.yaml``) gives its exchanges that test's run in
each cassette and lists them under the test in the run log (`attach`).
An existing cassette is never replaced without ``force``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from .._core._config import settings
from .._core._exceptions import CassetteError
from .._core._files import dump_json, write_atomic
from .._core._hosts import PROVIDER_HOSTS, HostMatcher
from .._core._modes import Mode
from .._core._safe_text import terminal
from .._core._words import plural
from .._recording import _runlog
from .._recording._deck import Arguments, Deck, RequestInfo
from .._secrets._collect import entry_secrets, request_body
from .._secrets._credentials import SECRET_SHAPES, is_credential_header, is_credential_param
from .._store._cassette import Recording
from ._importers._bounded import body_problem
from ._importers._cassetter import looks_like_cassetter, read_cassetter, read_toml
from ._importers._source import Exchange, SourceFile, UnreadableSource
from ._importers._vcrpy import looks_like_vcrpy, read_document, read_vcrpy

__all__ = [
    "PYTEST_RECORDING_LAYOUT",
    "SUFFIXES",
    "ImportReport",
    "Keying",
    "attach",
    "import_paths",
    "layout_pattern",
    "refusal",
    "render",
    "test_from_path",
]

SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".yaml.gz", ".yml.gz", ".json.gz")
PYTEST_RECORDING_LAYOUT = "{dir}/cassettes/{module}/{test}"
"""pytest-recording's default: ``tests/cassettes/test_app/test_refund.yaml`` is the test
``tests/test_app.py::test_refund``. A suite whose ``vcr_cassette_dir`` fixture puts them
elsewhere passes its own (``--test-from-path '{dir}/_vcr/{module}/{test}'``)."""
_FRAMING = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection"})
_PLANTED = "x-api-key"  # the header a secret found by its shape is handed to the masker as


@dataclass
class FileReport:
    """What became of one source file."""

    path: Path
    tool: str = ""
    test: str | None = None
    imported: int = 0
    keys: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    masked: set[str] = field(default_factory=set)
    error: str | None = None  # the whole file was skipped


@dataclass
class ImportReport:
    cassette_dir: Path
    dry_run: bool
    files: list[FileReport] = field(default_factory=list)
    unlisted_hosts: set[str] = field(default_factory=set)

    @property
    def imported(self) -> int:
        return sum(f.imported for f in self.files)

    @property
    def cassettes(self) -> int:
        return len({k for f in self.files for k in f.keys})


@dataclass(frozen=True)
class Keying:
    """What the imported keys are computed with: the settings that will read them.

    A key computed without the suite's ``normalize=`` or ``ignore_fields=`` never
    matches in a session that sets them, so the import takes the same settings
    (by default the project's: ``configure()``, the environment, ``[tool.ghostrun]``).
    """

    normalize: tuple[str, ...] | None = None  # None: the configured shapes
    ignore_fields: tuple[str, ...] = ()


def import_paths(
    paths: Iterable[Path],
    cassette_dir: Path,
    *,
    dry_run: bool = False,
    force: bool = False,
    keying: Keying = Keying(),
    layout: str = PYTEST_RECORDING_LAYOUT,
) -> ImportReport:
    """Import every cassette file found at ``paths`` into ``cassette_dir``.

    ``layout``: where a source file's path names its test (`test_from_path`).
    """
    report = ImportReport(cassette_dir, dry_run)
    existing = {p.stem for p in cassette_dir.glob("*.json")} if cassette_dir.is_dir() else set()
    decks: dict[str, Deck] = {}
    matcher = HostMatcher(PROVIDER_HOSTS + settings.extra_hosts())
    for path in _files(paths, cassette_dir):
        found = FileReport(path)
        report.files.append(found)
        try:
            source = _read(path)
        except UnreadableSource as exc:
            found.error = str(exc)
            continue
        found.tool, found.test = source.tool, test_from_path(path, layout)
        found.skipped += source.skipped
        # Each source file is its own run in a cassette, as each test is when recording.
        label = found.test or f"imported from {_shown(path)}"
        deck = decks.get(label) or decks.setdefault(label, _deck(cassette_dir, label, keying))
        for number, exchange in enumerate(source.exchanges, 1):
            why = _import_one(deck, exchange, found, existing, force=force, dry_run=dry_run)
            if why:
                found.skipped.append(
                    f"exchange {number} ({exchange.method} {_path(exchange)}): {why}"
                )
            elif not matcher(*_host(exchange.uri)):
                report.unlisted_hosts.add(_netloc(exchange.uri))
    if not dry_run:
        tests = {f.test for f in report.files if f.test is not None}
        for label, deck in decks.items():
            if label in tests and deck.trail:
                attach(cassette_dir, label, deck)
    return report


def _read(path: Path) -> SourceFile:
    if path.suffix == ".toml":
        document = read_toml(path)
        if not looks_like_cassetter(document):
            raise UnreadableSource("not a cassetter cassette")
        return read_cassetter(path, document)
    document = read_document(path)
    if looks_like_cassetter(document):
        return read_cassetter(path, document)
    if looks_like_vcrpy(document):
        return read_vcrpy(path, document)
    raise UnreadableSource("not a vcrpy or cassetter cassette")


def _files(paths: Iterable[Path], cassette_dir: Path) -> Iterator[Path]:
    """The files at ``paths``; in a directory, those named like cassettes, minus ghostrun's own
    (the cassette directory may be inside the one searched)."""
    own = cassette_dir.resolve()
    for path in paths:
        if path.is_dir():
            yield from sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and p.name.endswith(SUFFIXES) and own not in p.resolve().parents
            )
        else:
            yield path


_LAYOUT_PARTS = {
    "{dir}/": r"(?:(?P<dir>.*)/)?",
    "{module}": r"(?P<module>[^/]+)",
    "{test}": r"(?P<test>[^/]+)",
}


def layout_pattern(layout: str) -> re.Pattern[str]:
    """The regex of a ``--test-from-path`` layout; a ValueError says what it must hold."""
    if "{module}" not in layout or "{test}" not in layout:
        raise ValueError(
            f"--test-from-path {layout!r} must name {{module}} and {{test}} "
            f"(pytest-recording's layout is {PYTEST_RECORDING_LAYOUT!r})"
        )
    pieces = re.split(r"(\{dir\}/|\{module\}|\{test\})", layout.strip("/"))
    return re.compile("".join(_LAYOUT_PARTS.get(p) or re.escape(p) for p in pieces))


def test_from_path(path: Path, layout: str = PYTEST_RECORDING_LAYOUT) -> str | None:
    """The pytest node id of the test a cassette file belongs to, by ``layout``:
    ``{dir}/{module}.py::{test}`` (a class's test ``Class.test`` is ``Class::test``),
    relative to the current directory (where pytest runs from); None if it does not fit."""
    shown = _shown(path)
    stem = shown.removesuffix(".gz").rsplit(".", 1)[0]
    match = layout_pattern(layout).fullmatch(stem)
    if match is None:
        return None
    folder = match.group("dir") if "dir" in match.groupdict() else None
    module = f"{folder}/{match['module']}.py" if folder else f"{match['module']}.py"
    plain, bracket, params = match["test"].partition("[")
    return f"{module}::{plain.replace('.', '::')}{bracket}{params}"


def refusal(paths: Iterable[Path], cassette_dir: Path) -> str | None:
    """Why importing ``paths`` into ``cassette_dir`` would go wrong, or None.

    Sources inside the cassette directory (or the directory itself) are skipped as
    ghostrun's own, so such an import would import nothing: say so, with the fix.
    """
    own = cassette_dir.resolve()
    for path in paths:
        resolved = path.resolve()
        if resolved == own or own in resolved.parents:
            return (
                f"ghostrun import: {_shown(path)} is inside the cassette directory "
                f"({cassette_dir.absolute()}), so its files would be taken for ghostrun's own "
                "and nothing imported. Import into another directory: pass --cassette-dir "
                "(e.g. --cassette-dir .ghostrun_cache) and set cassette_dir in "
                "[tool.ghostrun] to it, or move the source files out first."
            )
    return None


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _deck(cassette_dir: Path, test: str, keying: Keying) -> Deck:
    """A recording deck writing as the test ``test`` would (its own run in each cassette),
    its keys computed with ``keying``'s settings."""
    arguments = Arguments(
        Mode.RECORD, cassette_dir, test, (), keying.ignore_fields, None, (), None
    )._replace(normalize=keying.normalize)
    deck = Deck(arguments)
    deck.cassette_dir  # noqa: B018 (reading a setting resolves them all, as a session's entry)
    deck.mode, deck.name = Mode.RECORD, test  # the environment's mode does not apply here
    return deck


def _import_one(
    deck: Deck,
    exchange: Exchange,
    found: FileReport,
    existing: set[str],
    *,
    force: bool,
    dry_run: bool,
) -> str | None:
    """Write one exchange; why it was skipped, or None."""
    for which, body in (("request", exchange.request_body), ("response", exchange.response_body)):
        problem = body_problem(body)  # replay would refuse the cassette: never written
        if problem is not None:
            return f"its {which} body: {problem}"
    info = _describe(deck, exchange)
    if info.key in existing and not force:
        return f"cassette {info.key}.json exists (pass --force to replace it)"
    found.masked |= _masked(exchange)
    found.imported += 1
    found.keys.append(info.key)
    if not dry_run:
        try:
            deck.commit(info, _recording(exchange))
        except CassetteError as exc:
            found.imported -= 1
            return str(exc)
    return None


def _describe(deck: Deck, exchange: Exchange) -> RequestInfo:
    parts = urlsplit(exchange.uri)
    host, port = _host(exchange.uri)
    headers = [*exchange.request_headers, *((_PLANTED, s) for s in _shaped_secrets(exchange))]
    return deck.describe(
        exchange.method,
        (parts.scheme, host, port, parts.path, parts.query),
        headers,
        exchange.request_body,
    )


def _recording(exchange: Exchange) -> Recording:
    headers = [(k, v) for k, v in exchange.response_headers if k not in _FRAMING]
    ctype = next((v for k, v in headers if k == "content-type"), "").lower()
    body, chunks = exchange.response_body, None
    if "text/event-stream" in ctype:
        chunks = _events(body, b"\n\n") or None
    elif "ndjson" in ctype or "jsonl" in ctype:
        chunks = _events(body, b"\n") or None
    return Recording(
        exchange.status,
        headers,
        b"" if chunks is not None else body,
        chunks,
        recorded_on=_valid_day(exchange.recorded_on),
    )


def _events(body: bytes, separator: bytes) -> list[bytes]:
    """A stream's bytes cut after each event (SSE: a blank line; NDJSON: a line end)."""
    body = body.replace(b"\r\n", b"\n") if separator == b"\n\n" and b"\r\n\r\n" in body else body
    pieces = body.split(separator)
    events = [piece + separator for piece in pieces[:-1]]
    if pieces[-1]:
        events.append(pieces[-1])
    return events


def _valid_day(day: str) -> str:
    """The source's day if it is one, else "" (written without a day: its age is unknown)."""
    try:
        return date.fromisoformat(day).isoformat() if day else ""
    except ValueError:
        return ""


def _shaped_secrets(exchange: Exchange) -> set[str]:
    """Secret-shaped values anywhere in the exchange (URI, headers, both bodies)."""
    texts = [exchange.uri, *(v for _, v in exchange.request_headers)]
    texts += [b.decode("utf-8", "replace") for b in (exchange.request_body, exchange.response_body)]
    return {m.group(0) for text in texts for m in SECRET_SHAPES.finditer(text)}


def _masked(exchange: Exchange) -> set[str]:
    """What the masker will find, said for the report (never the values)."""
    kinds = {f"{name} header" for name, _ in exchange.request_headers if is_credential_header(name)}
    query = parse_qsl(urlsplit(exchange.uri).query, keep_blank_values=True)
    kinds |= {f"{name}= in the URL" for name, _ in query if is_credential_param(name)}
    ctype = next((v for k, v in exchange.request_headers if k == "content-type"), "")
    stored = {"url": exchange.uri, "body": request_body(exchange.request_body, ctype)}
    if entry_secrets(stored) or _shaped_secrets(exchange):
        kinds.add("secret-shaped values")
    return kinds


def _host(uri: str) -> tuple[str, int | None]:
    parts = urlsplit(uri)
    return (parts.hostname or ""), parts.port


def _netloc(uri: str) -> str:
    return urlsplit(uri).netloc


def _path(exchange: Exchange) -> str:
    return urlsplit(exchange.uri).path or "/"


# -- attaching exchanges to their test ---------------------------------------------------


def attach(cassette_dir: Path, test: str, deck: Deck) -> None:
    """List a test's imported exchanges under it, as a recording run of it would.

    Today that is the run log's ``runs/_last.json``: the test's entry gets the
    keys it recorded, in order, and they count as used (``ghostrun check``).
    An unreadable run log is left alone.
    """
    log = _runlog.RunLog()
    log.session(deck, _runlog.Where(test, test, cassette_dir))
    ours = next(iter(log.documents().values()))
    ours["cassettes_used"] = sorted({key for key, _ in deck.trail})
    path = _runlog.runs_dir(cassette_dir) / f"{_runlog.LAST}.json"
    try:
        document = _runlog.load_run(path) if path.is_file() else ours
    except CassetteError:
        return
    if document is not ours:
        document["tests"].update(ours["tests"])
        document["cassettes_used"] = sorted({*document["cassettes_used"], *ours["cassettes_used"]})
    write_atomic(path, dump_json(document), root=cassette_dir)


# -- the report ----------------------------------------------------------------------------


def render(report: ImportReport) -> str:
    """The report for a terminal: per file what was imported, skipped (why) and masked."""
    verb = "would import" if report.dry_run else "imported"
    lines = [f"ghostrun import -> {report.cassette_dir.absolute()}"]
    for found in report.files:
        lines.append(f"  {_safe(str(found.path))}")
        if found.error is not None:
            lines.append(f"    skipped: {_safe(found.error)}")
            continue
        test = f", test {_safe(found.test)}" if found.test else ""
        cassettes = plural(len(set(found.keys)), "cassette")
        lines.append(
            f"    {found.tool}{test}: {verb} {plural(found.imported, 'exchange')} into {cassettes}"
        )
        lines += [f"    skipped {_safe(why)}" for why in found.skipped]
        if found.masked:
            lines.append(f"    masked: {', '.join(sorted(found.masked))}")
    for host in sorted(report.unlisted_hosts):
        lines.append(
            f"  note: {_safe(host)} is not a provider host: list it (hosts=[...] or "
            "GHOSTRUN_HOSTS) for its cassettes to replay"
        )
    unread = sum(f.error is not None for f in report.files)
    lines.append(
        f"{verb.capitalize()} {plural(report.imported, 'exchange')} into "
        f"{plural(report.cassettes, 'cassette')} from "
        f"{plural(len(report.files) - unread, 'file')}"
        + (f"; {plural(unread, 'file')} skipped" if unread else "")
        + (" (dry run: nothing written)" if report.dry_run else "")
    )
    return "\n".join(lines)


def _safe(text: str) -> str:
    """A file's name or content for the terminal, by the one rule (`_safe_text.terminal`)."""
    return terminal(text).replace("\n", "\\n").replace("\t", "\\t")  # one line each
