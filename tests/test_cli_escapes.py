"""Names and paths from a checkpoint never act on the terminal or break a
table (issue 43, items 5 and 12).

A crafted checkpoint (its directory name, its tensor names, its
``config.json``) can hold ESC sequences, BEL, CR, line breaks, the C1
controls and the bidirectional overrides; printed raw they redraw the rows
a user reads (CVE-2021-25743, CVE-2021-42574 for the kind). Every
human-readable format writes them escaped (``\\x1b``, ``\\u202e``), the
error and ``-v`` lines too, and a pipe, a backslash or a backtick in a
name keeps the Markdown table whole.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from skipsearch import cli
from skipsearch._scan.report import printable

#: What must never reach a terminal raw.
RAW = re.compile(
    "[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]"
)

#: A directory name with a colour change, a title-setting OSC ended by BEL,
#: a carriage return, a right-to-left override, a C1 CSI, a pipe after a
#: backslash, a backtick and a line break.
EVIL_DIR = "evil\x1b[31m\x1b]0;pwn\x07\rfake\u202egnp.\x9b2J\\|x`y\nz"
#: The same kind of thing inside the tensor names (the generic mapping's
#: ``*`` takes any run of characters).
EVIL_PREFIX = "net\x1b[2K\u2066.x|y\r"
GENERIC = ("--up", "*blocks.{i}.w_in.weight", "--down", "*blocks.{i}.w_out.weight")


def _checkpoint(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    path = tmp_path / EVIL_DIR
    path.mkdir()
    tensors = {}
    for i in range(2):
        tensors[f"{EVIL_PREFIX}blocks.{i}.w_in.weight"] = rng.standard_normal((6, 3))
        tensors[f"{EVIL_PREFIX}blocks.{i}.w_out.weight"] = rng.standard_normal((3, 6))
    save_file(
        {k: v.astype(np.float32) for k, v in tensors.items()}, str(path / "model.safetensors")
    )
    return path


@pytest.fixture
def evil(tmp_path: Path) -> Path:
    return _checkpoint(tmp_path)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["scan", *argv, "--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


def _no_raw_controls(text: str) -> None:
    found = RAW.findall(text)
    assert not found, [hex(ord(c)) for c in found]


def test_printable_escapes_every_kind():
    assert printable("a\x1b[2Jb\x07c\rd\ne\tf\x7fg\x85h\u202ei\u2067j\u200fk") == (
        "a\\x1b[2Jb\\x07c\\rd\\ne\\tf\\x7fg\\x85h\\u202ei\\u2067j\\u200fk"
    )
    assert printable("mod\u00e8le \u6a21\u578b C:\\path") == "mod\u00e8le \u6a21\u578b C:\\path"


def test_printable_escapes_hidden_characters_and_lone_surrogates():
    # Breaker F7: the zero-width characters hid in a name, and a path's
    # bytes that are not UTF-8 (lone surrogates) went out raw.
    text = "a\u200bb\u200cc\u200dd\u2060e\ufefff\udc9bg\udcffh\ud800i"
    assert printable(text) == "a\\u200bb\\u200cc\\u200dd\\u2060e\\ufefff\\udc9bg\\udcffh\\ud800i"
    assert printable("\U0001f600 \u00e8") == "\U0001f600 \u00e8"  # what shows stays


#: A directory name that is not UTF-8: 0x9b (the 8-bit CSI) and 0xff, then
#: a zero-width space and a byte-order mark.
RAW_DIR = b"raw\x9b31mX\xffY" + "\u200bZ\ufeff".encode()


@pytest.mark.parametrize("fmt", ["table", "--csv", "--markdown"])
def test_path_bytes_that_are_not_utf8_are_escaped(tmp_path, capsys, fmt):
    from tests.test_cli_output_whole import many_layers

    try:
        os.mkdir(os.path.join(os.fsencode(tmp_path), RAW_DIR))
    except OSError:  # a file system that takes only UTF-8 names (macOS)
        pytest.skip("the file system refuses names that are not UTF-8")
    ckpt = many_layers(tmp_path / os.fsdecode(RAW_DIR), 2)
    code, out, err = _run(capsys, str(ckpt), *(() if fmt == "table" else (fmt,)))
    assert code == 0, err
    out.encode("utf-8")  # strict: no lone surrogate, written back as a raw byte
    assert not re.findall("[\u200b-\u200d\u2060\ufeff]", out)
    shown = _unescape(out) if fmt == "--markdown" else out
    name = "raw\\udc9b31mX\\udcffY\\u200bZ\\ufeff"
    assert f"{name} " in shown or f"{name}," in shown  # the model's name
    assert f"{name}/model.safetensors" in out  # its path (in Markdown, a code span)
    if fmt == "--csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert [r["model"] for r in rows] == [name] * 2


@pytest.mark.parametrize("fmt", ["table", "--csv", "--markdown"])
def test_human_formats_escape_names_and_paths(evil, capsys, fmt):
    code, out, err = _run(
        capsys, str(evil), *GENERIC, "--activation", "relu", *(() if fmt == "table" else (fmt,))
    )
    assert code == 0, err
    _no_raw_controls(out)
    shown = _unescape(out) if fmt == "--markdown" else out  # Markdown escapes \\ and [ again
    assert "\\x1b[31m" in shown and "\\u202e" in shown and "\\x9b" in shown
    assert "\\x1b[2K\\u2066" in shown  # the tensor names, as block names
    if fmt == "--csv":
        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == 2 and all(r["model"] == printable(EVIL_DIR) for r in rows)
        assert [r["verdict"] for r in rows] == ["not_absorbable"] * 2


def test_markdown_rows_keep_their_cells(evil, capsys):
    code, out, _ = _run(capsys, str(evil), *GENERIC, "--activation", "relu", "--markdown")
    assert code == 0
    lines = out.splitlines()
    head = _cells(lines[0])
    rows = [_cells(line) for line in lines[2:4]]
    assert all(len(row) == len(head) for row in rows), rows
    # The names come back whole once the Markdown escapes are undone.
    assert [_unescape(row[0]) for row in rows] == [printable(EVIL_DIR)] * 2
    assert [_unescape(row[1]) for row in rows] == [
        printable(f"{EVIL_PREFIX}blocks.0"),
        printable(f"{EVIL_PREFIX}blocks.1"),
    ]
    # The path is a code span whose fence is longer than its backtick run.
    (item,) = [line for line in lines if line.startswith("- **")]
    assert "``" in item and "`y" in item


def _cells(line: str) -> list:
    """The cells of a GFM table row: split on pipes a backslash does not escape."""
    assert line.startswith("|") and line.endswith("|"), line
    cells, cell, k = [], "", 1
    while k < len(line) - 1:
        c = line[k]
        if c == "\\":
            cell += line[k : k + 2]
            k += 2
            continue
        if c == "|":
            cells.append(cell.strip())
            cell = ""
        else:
            cell += c
        k += 1
    cells.append(cell.strip())
    return cells


def _unescape(cell: str) -> str:
    return re.sub(r"\\(.)", r"\1", cell)


def test_markdown_pipe_backslash_and_line_break_in_a_name(tmp_path, capsys):
    # Item 5: a line break or "\|" in the model's name broke the table.
    from tests.test_scan import write_checkpoint

    path = write_checkpoint(tmp_path / "a\\|b\nc`d")
    code, out, _ = _run(capsys, str(path), "--markdown")
    assert code == 0
    lines = out.splitlines()
    head = _cells(lines[0])
    rows = [_cells(line) for line in lines[2:4]]
    assert all(len(row) == len(head) for row in rows)
    assert [_unescape(row[0]) for row in rows] == ["a\\|b\\nc`d"] * 2
    assert [row[head.index("verdict")] for row in rows] == ["not_absorbable", "absorbable"]


def test_verbose_lines_escape_names(evil, capsys):
    code, _, err = _run(capsys, str(evil), *GENERIC, "--activation", "relu", "-v")
    assert code == 0
    assert "skipsearch: info: " in err
    _no_raw_controls(err.replace("\n", ""))
    assert "\\x1b[2K" in err


def test_error_lines_escape_names(tmp_path, capsys):
    from tests.test_scan import write_checkpoint

    path = write_checkpoint(tmp_path / "m", hidden_act="gelu\x1b[2J\u202e")
    code, out, err = _run(capsys, str(path))
    assert code == cli.EXIT_USAGE and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("skipsearch: error: ")
    _no_raw_controls(err.replace("\n", ""))
    assert "gelu\\x1b[2J\\u202e" in lines[0]


def test_progress_bar_escapes_names(evil, capsys):
    from skipsearch.scan import scan

    scan(evil, layout=_layout(), activation="relu", progress=True)
    _, err = capsys.readouterr()
    assert "scan:" in err
    _no_raw_controls(err.replace("\r", "").replace("\n", ""))


def _layout():
    from skipsearch.io.layouts import Layout

    return Layout(up="*blocks.{i}.w_in.weight", down="*blocks.{i}.w_out.weight")


def test_json_stays_strict(evil, capsys):
    code, out, _ = _run(capsys, str(evil), *GENERIC, "--activation", "relu", "--json")
    assert code == 0
    _no_raw_controls(out.replace("\n", ""))
    doc = json.loads(out)
    assert doc["models"][0]["name"] == EVIL_DIR  # the exact name, escaped by JSON itself
