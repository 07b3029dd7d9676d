"""``ghostrun import`` holds a foreign file to replay's limits (`_tools._importers._bounded`).

Each hostile file is written in the test the way PyYAML, vcrpy or gzip write it, and
imported through the command line as a user runs it (``python -m ghostrun import``):
the exit status, a message that names the file and the entry, no traceback, and no
file written for what was refused (the good entries beside it still are).
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest
from helpers import run_python
from vcr.serializers import yamlserializer

from ghostrun._store._limits import LIMITS
from ghostrun._tools._importers._bounded import YAML_DEPTH
from ghostrun._tools._importers._source import UnreadableSource, load_yaml

URI = "https://api.openai.com/v1/chat/completions"


def _interaction(body: bytes | str, *, coding: str | None = None, prompt: str = "hi") -> dict:
    headers = {"Content-Type": ["application/json"]}
    if coding:
        headers["Content-Encoding"] = [coding]
    return {
        "request": {
            "method": "POST",
            "uri": URI,
            "body": json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}]}),
            "headers": {"Content-Type": ["application/json"]},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": headers,
            "body": {"string": body},
        },
    }


GOOD = json.dumps({"id": "x", "choices": [{"message": {"role": "assistant", "content": "ok"}}]})


def _import(source: Path, out: Path) -> tuple[int, str, str]:
    done = run_python("-m", "ghostrun", "import", str(source), "--cassette-dir", str(out))
    return done.returncode, done.stdout, done.stderr


def _written(out: Path) -> list[str]:
    return sorted(p.name for p in out.rglob("*") if p.is_file()) if out.exists() else []


def test_a_gzip_bomb_body_is_skipped_and_the_other_exchanges_are_imported(
    tmp_path: Path,
) -> None:
    """A vcrpy file of some 50 KB whose body claims gzip and inflates past the body limit."""
    bomb = gzip.compress(b"\0" * (LIMITS["body_bytes"].value + 1024 * 1024), compresslevel=9)
    source = tmp_path / "bomb.yaml"
    document = {
        "interactions": [_interaction(GOOD), _interaction(bomb, coding="gzip", prompt="boom")],
        "version": 1,
    }
    source.write_text(yamlserializer.serialize(document))  # vcrpy's own writer
    assert source.stat().st_size < 200_000 and "!!binary" in source.read_text()

    code, out, err = _import(source, tmp_path / "out")

    assert code == 0, out + err
    assert "Traceback" not in err and "MemoryError" not in out + err
    assert "bomb.yaml" in out
    assert "skipped interaction 2: its gzip body inflates past 50,331,648 bytes" in out, out
    assert "imported 1 exchange" in out
    cassettes = list((tmp_path / "out").glob("*.json"))
    assert len(cassettes) == 1 and b"\0" not in cassettes[0].read_bytes()


def test_a_json_gz_that_inflates_past_the_file_limit_is_refused_whole(tmp_path: Path) -> None:
    filler = b"a" * (LIMITS["file_bytes"].value + 1)
    text = b'{"interactions": [], "version": 1, "filler": "' + filler + b'"}'
    source = tmp_path / "huge.json.gz"
    source.write_bytes(gzip.compress(text, compresslevel=9))
    assert source.stat().st_size < 2_000_000

    code, out, err = _import(source, tmp_path / "out")

    assert code == 1, out + err
    assert "Traceback" not in err and "MemoryError" not in out + err
    assert "huge.json.gz" in out
    assert "skipped: a gzip file that inflates past 67,108,864 bytes" in out, out
    assert _written(tmp_path / "out") == []


def _billion_laughs() -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 10)}]")
    lines.append("interactions:")
    lines.append(f"- request: {{method: POST, uri: '{URI}', body: null, headers: *i}}")
    lines.append("  response: {status: {code: 200}, headers: {}, body: {string: ok}}")
    lines.append("version: 1")
    return "\n".join(lines) + "\n"


def test_a_billion_laughs_file_is_refused_at_once(tmp_path: Path) -> None:
    source = tmp_path / "laughs.yaml"
    source.write_text(_billion_laughs())

    code, out, err = _import(source, tmp_path / "out")

    assert code == 1, out + err
    assert "Traceback" not in err
    assert "laughs.yaml" in out and "its YAML aliases expand it past 67,108,864 characters" in out
    assert _written(tmp_path / "out") == []


def test_a_billion_laughs_costs_what_reading_it_costs() -> None:
    """CPU time, not wall time: a loaded machine does not change it much. Unbounded, it
    ran for more than 40 s; here it is refused after composing a few hundred nodes."""
    started = time.process_time()
    with pytest.raises(UnreadableSource, match="aliases expand"):
        load_yaml(_billion_laughs(), Path("laughs.yaml"))
    assert time.process_time() - started < 1.0


def test_a_recursive_alias_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "loop.yaml"
    source.write_text(
        f"interactions:\n- &x {{request: {{method: GET, uri: '{URI}', headers: [*x]}}}}\n"
    )
    code, out, err = _import(source, tmp_path / "out")
    assert code == 1 and "Traceback" not in err
    assert "loop.yaml" in out and "a YAML alias *x inside itself" in out, out


@pytest.mark.parametrize("style", ["flow", "block"])
def test_yaml_nested_5000_deep_is_refused_without_a_traceback(tmp_path: Path, style: str) -> None:
    depth = 5000
    if style == "flow":
        nested = "[" * depth + "]" * depth
    else:
        nested = "\n" + "".join("  " * (i + 2) + "- \n" for i in range(depth)).rstrip() + " x"
    source = tmp_path / "deep.yaml"
    source.write_text(f"interactions:\n- request: {nested}\nversion: 1\n")

    code, out, err = _import(source, tmp_path / "out")

    assert code == 1, out + err
    assert "Traceback" not in err and "RecursionError" not in out + err
    assert "deep.yaml" in out and f"its YAML nests deeper than {YAML_DEPTH} levels" in out, out
    assert _written(tmp_path / "out") == []


def test_a_body_nested_past_the_json_limit_is_skipped(tmp_path: Path) -> None:
    """Replay refuses a cassette nested past ``json_depth``: import never writes one."""
    deep = "[" * 150 + "]" * 150
    source = tmp_path / "nested.json"
    document = {"interactions": [_interaction(GOOD), _interaction(deep, prompt="deep")]}
    source.write_text(json.dumps({**document, "version": 1}))

    code, out, err = _import(source, tmp_path / "out")

    assert code == 0, out + err
    assert "skipped exchange 2 (POST /v1/chat/completions): its response body:" in out, out
    assert "limit of 100 for the nesting depth of JSON" in out
    assert len(list((tmp_path / "out").glob("*.json"))) == 1


def test_a_cassetter_toml_nested_too_deep_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "deep.toml"
    source.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    code, out, err = _import(source, tmp_path / "out")
    assert code == 1 and "Traceback" not in err, out + err
    assert "deep.toml" in out and "nests deeper than Python's parser follows" in out, out


def test_python_object_tags_stay_refused(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = tmp_path / "evil.yaml"
    source.write_text(
        f"interactions: !!python/object/apply:os.system ['touch {marker}']\nversion: 1\n"
    )
    code, out, err = _import(source, tmp_path / "out")
    assert code == 1 and "Traceback" not in err
    assert "evil.yaml" in out and "not valid YAML" in out
    assert not marker.exists()


def test_the_report_quotes_a_planted_value_by_the_terminal_rule(tmp_path: Path) -> None:
    """What a skip reason quotes from the file reaches the terminal escaped (8-bit CSI and
    the right-to-left override included), by the one rule of `_safe_text`."""
    planted = "x\x1b]52;c;aGk=\x07\x9b2J\u202egz"
    source = tmp_path / "odd.json"
    document = {"interactions": [_interaction(GOOD, coding=planted)], "version": 1}
    source.write_text(json.dumps(document))
    code, out, err = _import(source, tmp_path / "out")
    assert code == 1 and "Traceback" not in err
    assert "skipped interaction 1: its body is x" in out, out
    assert not any(char in out for char in ("\x1b", "\x07", "\x9b", "\u202e")), repr(out)
    assert "\\x9b2j\\u202egz" in out  # the header value, lower-cased as read
