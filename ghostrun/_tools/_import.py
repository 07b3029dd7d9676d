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

import contextlib
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

__all__ = ["SUFFIXES", "ImportReport", "attach", "import_paths", "render"]

SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".yaml.gz", ".yml.gz", ".json.gz")
_NEVER_STORED = frozenset({401, 403, 407})  # as when recording: a replayed "bad key" misleads
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


def import_paths(
    paths: Iterable[Path], cassette_dir: Path, *, dry_run: bool = False, force: bool = False
) -> ImportReport:
    """Import every cassette file found at ``paths`` into ``cassette_dir``."""
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
        found.tool, found.test = source.tool, pytest_recording_test(path)
        found.skipped += source.skipped
        # Each source file is its own run in a cassette, as each test is when recording.
        label = found.test or f"imported from {_shown(path)}"
        deck = decks.get(label) or decks.setdefault(label, _deck(cassette_dir, label))
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


def pytest_recording_test(path: Path) -> str | None:
    """The test a pytest-recording cassette belongs to: ``<dir>/cassettes/<module>/<test>.yaml``
    is ``<dir>/<module>.py::<test>`` (a class's test ``Class.test`` is ``Class::test``),
    the pytest node id when pytest runs from the current directory."""
    if path.parent.parent.name != "cassettes":
        return None
    module = path.parent.parent.parent / f"{path.parent.name}.py"
    with contextlib.suppress(ValueError):
        module = module.resolve().relative_to(Path.cwd().resolve())
    name = path.name.removesuffix(".gz").rsplit(".", 1)[0]
    plain, bracket, params = name.partition("[")
    return f"{module.as_posix()}::{plain.replace('.', '::')}{bracket}{params}"


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _deck(cassette_dir: Path, test: str) -> Deck:
    """A recording deck writing as the test ``test`` would (its own run in each cassette)."""
    deck = Deck(Arguments(Mode.RECORD, cassette_dir, test, (), (), None, (), None))
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
    if exchange.status in _NEVER_STORED:
        return f"an authentication failure ({exchange.status}) is never stored"
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
