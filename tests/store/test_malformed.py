"""Malformed files (issue 16): each shape is a CassetteError naming the file and the field.

In replay, and in every CLI command that reads the file (``show``, ``check``,
``prune`` for cassettes and verdicts; ``check``, ``prune``, ``diff`` for run
logs): never a raw traceback, never silently accepted, never overwritten.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from simulator import ProviderSimulator

import ghostrun
from ghostrun._judging._verdicts import grade
from ghostrun._tools import _cli

LOOPBACK = ("127.0.0.1",)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
Shape = Callable[[Any], Any]


def setting(path: str, value: Any) -> Shape:
    """A copy of the document with the field at ``path`` (dots, [n]) set, or removed."""

    def mutate(document: Any) -> Any:
        document = copy.deepcopy(document)
        *parents, last = path.replace("[", ".").replace("]", "").split(".")
        node = document
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        if value is _REMOVE:
            del node[last]
        else:
            node[int(last) if last.isdigit() else last] = value
        return document

    return mutate


_REMOVE: Any = object()


def whole(value: Any) -> Shape:
    return lambda document: value


# (id, how to break a good cassette, what the message must say)
CASSETTE_SHAPES: list[tuple[str, Shape, str]] = [
    ("null", whole(None), "expected an object, got null"),
    ("list", whole([]), "expected an object, got list"),
    ("string", whole("cassette"), "expected an object, got str"),
    ("no-version", setting("version", _REMOVE), 'no "version"'),
    ("version-true", setting("version", True), "version: expected an integer, got bool true"),
    ("version-str", setting("version", "1"), "version: expected an integer, got str '1'"),
    ("version-float", setting("version", 1.5), "version: expected an integer, got float 1.5"),
    ("version-99", setting("version", 99), "has format version 99"),
    ("no-key", setting("key", _REMOVE), "key: missing"),
    ("key-mismatch", setting("key", "0" * 32), "is not the file's name"),
    ("key-int", setting("key", 5), "key: expected a string, got int 5"),
    ("no-request", setting("request", _REMOVE), "request: missing"),
    ("request-list", setting("request", []), "request: expected an object, got list"),
    ("no-method", setting("request.method", _REMOVE), "request.method: missing"),
    ("url-int", setting("request.url", 7), "request.url: expected a string, got int 7"),
    ("req-headers-list", setting("request.headers", []), "request.headers: expected an object"),
    ("req-header-int", setting("request.headers", {"a": 1}), "request.headers.a: expected a str"),
    ("no-responses", setting("responses", _REMOVE), "responses: missing"),
    ("responses-object", setting("responses", {}), "responses: expected a list, got object"),
    ("responses-empty", setting("responses", []), "responses: expected a non-empty list"),
    ("response-int", setting("responses", [42]), "responses[0]: expected an object, got int 42"),
    ("no-status", setting("responses[0].status", _REMOVE), "responses[0].status: missing"),
    ("status-str", setting("responses[0].status", "200"), "status: expected an integer, got str"),
    ("status-99999", setting("responses[0].status", 99999), "in 100..599, got 99999"),
    ("status-99", setting("responses[0].status", 99), "in 100..599, got 99"),
    ("status-true", setting("responses[0].status", True), "status: expected an integer, got bool"),
    ("header-int", setting("responses[0].headers", {"x": 1}), "responses[0].headers.x: expected"),
    (
        "header-int-list",
        setting("responses[0].headers", {"x": [1, 2]}),
        "responses[0].headers.x: expected a list of strings",
    ),
    (
        "sse-string",
        setting("responses[0].body", {"sse": "data: x\n\n"}),
        "responses[0].body.sse: expected a list of strings, got str",
    ),
    ("sse-ints", setting("responses[0].body", {"sse": [1, 2]}), "body.sse: expected a list of str"),
    ("two-kinds", setting("responses[0].body", {"json": 1, "text": "x"}), "exactly one encoding"),
    ("no-kind", setting("responses[0].body", {}), "exactly one encoding key, got none"),
    ("unknown-kind", setting("responses[0].body", {"gzip": "x"}), "body.gzip: unknown body enc"),
    ("bad-base64", setting("responses[0].body", {"base64": "not base64!"}), "not valid base64"),
    ("text-int", setting("responses[0].body", {"text": 5}), "body.text: expected a string, got"),
    ("body-string", setting("responses[0].body", "hello"), "responses[0].body: expected an obj"),
    (
        "chunks-b64",
        setting("responses[0].body", {"chunks_base64": ["!!"]}),
        "body.chunks_base64[0]: not valid base64",
    ),
    ("error-string", setting("responses[0].stream_error", "broke"), "stream_error: expected an"),
    (
        "error-type-int",
        setting("responses[0].stream_error", {"type": 1, "message": "m"}),
        "stream_error.type: expected a string",
    ),
    ("session-int", setting("responses[0].session", 5), "responses[0].session: expected a str"),
    ("request-body-two", setting("request.body", {"a": 1, "b": 2}), "request.body: expected ex"),
]


def broken(good: Path, directory: Path, shape: Shape) -> Path:
    directory.mkdir()
    path = directory / good.name
    path.write_bytes(orjson.dumps(shape(orjson.loads(good.read_bytes()))))
    return path


def last_run(directory: Path, **fields: Any) -> None:
    run = {"version": 1, "tests": {}, "cassettes_used": [], "verdicts_used": [], **fields}
    (directory / "runs").mkdir(exist_ok=True)
    (directory / "runs" / "_last.json").write_text(json.dumps(run))


def cli_error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run the CLI in-process; it must fail as a usage error (2) with a message, not a trace."""
    assert _cli.main(list(args)) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    ("shape", "message"), [s[1:] for s in CASSETTE_SHAPES], ids=[s[0] for s in CASSETTE_SHAPES]
)
def test_a_malformed_cassette_is_named_in_replay_and_by_every_command(
    simulator: ProviderSimulator,
    good: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    shape: Shape,
    message: str,
) -> None:
    path = broken(good, tmp_path / "cassettes", shape)
    before = path.read_bytes()
    for mode in ("replay", "auto"):
        with pytest.raises(ghostrun.DamagedCassette) as info:
            with ghostrun.session(mode=mode, cassette_dir=path.parent, hosts=LOOPBACK):
                httpx.post(simulator.url("/v1/chat/completions"), json=BODY)
        assert str(path) in str(info.value) and message in str(info.value), mode

    last_run(path.parent)
    directory = ("--cassette-dir", str(path.parent))
    newer = message == "has format version 99"  # show shows it raw, with a warning
    for command in (["check"], ["prune", "--yes"], ["show", str(path)], ["show", path.stem[:8]]):
        if newer and command[0] == "show":
            assert _cli.main([*command, *directory]) == 0
            err = capsys.readouterr().err
            message = "has cassette format version 99, but this ghostrun reads version 2"
        else:
            err = cli_error(capsys, *command, *directory)
        assert str(path) in err and message in err, (command, err)
    assert path.read_bytes() == before  # never overwritten, never treated as absent


def test_record_mode_never_overwrites_a_malformed_cassette(
    simulator: ProviderSimulator, good: Path, tmp_path: Path
) -> None:
    path = broken(good, tmp_path / "cassettes", whole(None))
    with pytest.raises(ghostrun.CassetteError, match="expected an object, got null"):
        with ghostrun.session(mode="record", cassette_dir=path.parent, hosts=LOOPBACK):
            httpx.post(simulator.url("/v1/chat/completions"), json=BODY)
    assert path.read_bytes() == b"null"


# -- run logs --------------------------------------------------------------------------------

TEST = {"outcome": "passed", "outputs": ["a"], "assertions": []}
ASSERTION = {"kind": "contains", "criterion": "c", "verdict": "PASS", "reason": "", "judge": None}
RUN_SHAPES: list[tuple[str, dict[str, Any], str]] = [
    ("cassettes-used-str", {"cassettes_used": "abc"}, "cassettes_used: expected a list of str"),
    ("verdicts-used-int", {"verdicts_used": 3}, "verdicts_used: expected a list of strings"),
    ("tests-list", {"tests": []}, "tests: expected an object, got list"),
    ("test-str", {"tests": {"t": "passed"}}, 'tests["t"]: expected an object, got str'),
    ("outcome", {"tests": {"t": {**TEST, "outcome": "won"}}}, 'tests["t"].outcome: expected one'),
    ("no-outputs", {"tests": {"t": {"assertions": []}}}, 'tests["t"].outputs: missing'),
    (
        "output-index",
        {"tests": {"t": {**TEST, "assertions": [{**ASSERTION, "output": 3}]}}},
        'tests["t"].assertions[0].output: expected an integer in 0..0, got 3',
    ),
    ("misses-str", {"misses": "none"}, "misses: expected a list, got str"),
    ("version-str", {"version": "1"}, "version: expected an integer"),
    ("counts", {"tests": {"t": {**TEST, "requests": {"replayed": -1}}}}, "requests.replayed"),
]


@pytest.mark.parametrize(
    ("fields", "message"), [s[1:] for s in RUN_SHAPES], ids=[s[0] for s in RUN_SHAPES]
)
def test_a_malformed_run_log_is_named_by_check_prune_and_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fields: dict[str, Any], message: str
) -> None:
    cassette = tmp_path / f"{'c' * 32}.json"
    cassette.write_text("{}")  # if a bad log were believed, this is what prune would delete
    last_run(tmp_path, **fields)
    path = tmp_path / "runs" / "_last.json"
    good_run = {"version": 1, "tests": {}}
    (tmp_path / "runs" / "base.json").write_text(json.dumps(good_run))
    directory = ("--cassette-dir", str(tmp_path))
    for command in (["check"], ["prune", "--yes"], ["diff", "base"], ["diff", "base", "_last"]):
        err = cli_error(capsys, *command, *directory)
        assert str(path) in err and message in err, (command, err)
    assert cassette.exists()


# -- verdicts --------------------------------------------------------------------------------

VERDICT_SHAPES: list[tuple[str, Shape, str]] = [
    ("null", whole(None), "expected an object, got null"),
    ("verdict", setting("verdict", "MAYBE"), "verdict: expected one of PASS, FAIL"),
    ("votes", setting("votes", 0), "votes: expected an integer in >= 1, got 0"),
    ("flip-rate", setting("flip_rate", 7), "flip_rate: expected a number in 0.0..1.0"),
    ("key", setting("key", "f" * 32), "is not the file's name"),
    ("draws", setting("draws", [{"verdict": 1}]), "draws[0].verdict: expected one of"),
]


@pytest.mark.parametrize(
    ("shape", "message"), [s[1:] for s in VERDICT_SHAPES], ids=[s[0] for s in VERDICT_SHAPES]
)
def test_a_malformed_verdict_is_named_when_grading_and_by_every_command(
    cassette_dir: Path, capsys: pytest.CaptureFixture[str], shape: Shape, message: str
) -> None:
    def judge(text: str, criterion: str) -> bool:
        return True

    with ghostrun.session(mode="auto", cassette_dir=cassette_dir):
        grade("t", "c", judge)
    (path,) = (cassette_dir / "judge").glob("*.json")
    path.write_bytes(orjson.dumps(shape(orjson.loads(path.read_bytes()))))
    with pytest.raises(ghostrun.DamagedCassette) as info:
        with ghostrun.session(mode="auto", cassette_dir=cassette_dir):
            grade("t", "c", judge)
    assert str(path) in str(info.value) and message in str(info.value)
    last_run(cassette_dir)
    directory = ("--cassette-dir", str(cassette_dir))
    for command in (["show", str(path)], ["check"], ["prune", "--yes"]):
        err = cli_error(capsys, *command, *directory)
        assert str(path) in err and message in err, (command, err)
    assert path.exists()


def test_show_warns_on_a_newer_format_and_shows_the_raw_json(
    good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = broken(good, tmp_path / "cassettes", setting("version", 3))
    assert _cli.main(["show", str(path)]) == 0
    captured = capsys.readouterr()
    assert f"{path} has cassette format version 3, but this ghostrun reads version 2" in (
        captured.err
    )
    assert '"version": 3' in captured.out
