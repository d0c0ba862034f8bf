"""Rows are printed as their blocks are decided, and nothing decided is lost
on Ctrl-C (issue 43: streamed rows, the default time limit, item 6).

The decision is wrapped in process (``skipsearch.scan.decide_block``) to
see what stdout holds when each block starts, and to raise
``KeyboardInterrupt`` at a chosen block as Ctrl-C does.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from skipsearch import cli
from skipsearch.options import SearchOptions

from tests.test_cli_output_whole import many_layers

scan_module = importlib.import_module("skipsearch.scan")

LAYERS = 5
NAMES = [f"bert.encoder.layer.{i}" for i in range(LAYERS)]
FORMATS = ["table", "--json", "--jsonl", "--csv", "--markdown"]


@pytest.fixture
def ckpt(tmp_path: Path) -> Path:
    return many_layers(tmp_path / "tiny-bert", LAYERS)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["scan", *argv, "--no-progress"])
    out, err = capsys.readouterr()
    return code, out, err


def _flags(fmt: str) -> list:
    return [] if fmt == "table" else [fmt]


def _decisions(monkeypatch, *, interrupt_at=None, seen=None, options=None):
    """Wrap the decision: record the rows on stdout when each block starts
    (``seen``) and its options, and press Ctrl-C at block ``interrupt_at``."""
    decide = scan_module.decide_block
    calls = []

    def wrapped(job):
        calls.append(job)
        if seen is not None:
            seen.append(sys.stdout.getvalue())
        if options is not None:
            options.append(job.options)
        if interrupt_at is not None and len(calls) == interrupt_at + 1:
            raise KeyboardInterrupt
        return decide(job)

    monkeypatch.setattr(scan_module, "decide_block", wrapped)


# -- streamed rows ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["table", "--csv", "--jsonl"])
def test_each_row_is_printed_before_the_next_block_is_decided(ckpt, monkeypatch, capsys, fmt):
    seen: list = []
    _decisions(monkeypatch, seen=seen)
    code, out, _ = _run(capsys, str(ckpt), *_flags(fmt))
    assert code == 0
    # When block k starts, the rows of blocks 0 .. k-1 are out already.
    assert [sum(name in text for name in NAMES) for text in seen] == list(range(LAYERS))
    assert all(name in out for name in NAMES)


@pytest.mark.parametrize("fmt", FORMATS)
def test_ctrl_c_keeps_the_blocks_decided(ckpt, monkeypatch, capsys, fmt):
    _decisions(monkeypatch, interrupt_at=2)
    code, out, err = _run(capsys, str(ckpt), *_flags(fmt))
    assert code == cli.EXIT_INTERRUPTED
    assert err.strip().splitlines() == ["skipsearch: interrupted"]
    stopped = f"interrupted (Ctrl-C) after 2 of {LAYERS} FFN blocks"
    if fmt == "--json":
        doc = json.loads(out)  # one valid document
        assert doc["complete"] is False and doc["stopped"] == stopped
        assert [b["block"] for b in doc["blocks"]] == NAMES[:2]
        assert doc["summary"] == {"absorbable": 0, "not_absorbable": 2, "undecided": 0}
        _validate(doc)
    elif fmt == "--jsonl":
        *rows, summary = [json.loads(line) for line in out.splitlines()]
        assert [r["block"] for r in rows] == NAMES[:2]
        assert summary["complete"] is False and summary["stopped"] == stopped
        assert "blocks" not in summary and summary["summary"]["not_absorbable"] == 2
    elif fmt == "--csv":
        assert [r["block"] for r in csv.DictReader(io.StringIO(out))] == NAMES[:2]
    elif fmt == "--markdown":
        rows = [line.split(" | ")[1] for line in out.splitlines() if line.startswith("| tiny")]
        assert rows == NAMES[:2]
        assert out.splitlines()[-1] == (
            f"- incomplete: the scan was {stopped}; the blocks not listed were not decided"
        )
    else:
        rows = [line.split()[0] for line in out.splitlines() if line.startswith("bert.")]
        assert rows == NAMES[:2]
        assert out.splitlines()[-1] == (
            f"incomplete: the scan was {stopped}: 2 of 2 FFN blocks not absorbable "
            f"({_seconds(out)} s); the blocks not shown were not decided"
        )


def _seconds(out: str) -> str:
    return out.splitlines()[-1].split("(")[-1].split(" s)")[0]


def _validate(doc: dict) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.Draft202012Validator(scan_module.report_schema()).validate(doc)


def test_a_whole_scan_is_complete(ckpt, capsys):
    code, out, _ = _run(capsys, str(ckpt), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["complete"] is True and doc["stopped"] is None
    assert doc["schema_version"] == scan_module.SCHEMA_VERSION == 4
    _validate(doc)


def test_nothing_decided_prints_nothing(ckpt, monkeypatch, capsys):
    _decisions(monkeypatch, interrupt_at=0)
    code, out, _ = _run(capsys, str(ckpt), "--json")
    assert code == cli.EXIT_INTERRUPTED and out == ""


def _tied(directory: Path) -> Path:
    """Three generic blocks, the third with the first's weights (tied)."""
    many_layers(directory, 3)
    from safetensors.numpy import load_file

    tensors = load_file(str(directory / "model.safetensors"))
    for name in ("intermediate.dense.weight", "output.dense.weight"):
        tensors[f"bert.encoder.layer.2.{name}"] = tensors[f"bert.encoder.layer.0.{name}"]
    save_file(tensors, str(directory / "model.safetensors"))
    return directory


def test_tied_blocks_stream_as_rows_of_their_own(tmp_path, capsys):
    path = _tied(tmp_path / "tied")
    code, out, _ = _run(capsys, str(path))
    assert code == 0
    rows = [line.split("  ")[0] for line in out.splitlines() if line.startswith("bert.")]
    assert rows == [
        "bert.encoder.layer.0",
        "bert.encoder.layer.1",
        "bert.encoder.layer.2 (= bert.encoder.layer.0)",
    ]
    assert "2 of 2 FFN blocks not absorbable" in out and "1 tied block(s)" in out
    code, out, _ = _run(capsys, str(path), "--jsonl")
    *rows, summary = [json.loads(line) for line in out.splitlines()]
    assert [(r["block"], r["shared_with"]) for r in rows] == [
        ("bert.encoder.layer.0", []),
        ("bert.encoder.layer.1", []),
        ("bert.encoder.layer.2", ["bert.encoder.layer.0"]),
    ]
    assert rows[2]["verdict"] == rows[0]["verdict"] and rows[2]["layer"] == 2
    # The --json document keeps one record per distinct block.
    code, out, _ = _run(capsys, str(path), "--json")
    blocks = json.loads(out)["blocks"]
    assert [(b["block"], b["shared_with"]) for b in blocks] == [
        ("bert.encoder.layer.0", ["bert.encoder.layer.2"]),
        ("bert.encoder.layer.1", []),
    ]


def test_rows_keep_block_order_with_an_executor(tmp_path):
    path = _tied(tmp_path / "tied")
    located = [scan_module._locate(path)]
    given: list = []
    with ThreadPoolExecutor(3) as pool:
        reports = scan_module._decide_located(
            located,
            SearchOptions(),
            executor=pool,
            max_pending=3,
            progress=False,
            on_row=lambda row, twin: given.append(
                (row.block, None if twin is None else twin.block)
            ),
        )
    assert given == [
        ("bert.encoder.layer.0", None),
        ("bert.encoder.layer.1", None),
        ("bert.encoder.layer.2", "bert.encoder.layer.0"),
    ]
    assert reports[0].shared_with == ("bert.encoder.layer.2",)  # the API is unchanged


# -- the default time limit ------------------------------------------------------------------


def test_default_time_limit_is_passed_and_shown(ckpt, monkeypatch, capsys):
    options: list = []
    _decisions(monkeypatch, options=options)
    code, out, _ = _run(capsys, str(ckpt))
    assert code == 0
    assert {o.time_limit for o in options} == {cli.DEFAULT_TIME_LIMIT} == {600.0}
    assert out.splitlines()[0] == (
        "time limit: 600 s per block, the default of skipsearch scan (--time-limit S to change "
        "it, --time-limit none to lift it)"
    )
    options.clear()
    code, out, _ = _run(capsys, str(ckpt), "--time-limit", "none")
    assert code == 0 and {o.time_limit for o in options} == {None}
    assert out.splitlines()[0] == "time limit: none (--time-limit none)"
    options.clear()
    code, out, _ = _run(capsys, str(ckpt), "--time-limit", "2.5", "--markdown")
    assert code == 0 and {o.time_limit for o in options} == {2.5}
    assert "- time limit: 2.5 s per block (--time-limit)" in out.splitlines()


def test_bad_time_limit_is_a_usage_error(ckpt, capsys):
    code, out, err = _run(capsys, str(ckpt), "--time-limit", "soon")
    assert code == cli.EXIT_USAGE and out == ""
    assert "--time-limit" in err and "'none'" in err


def test_degenerate_block_stops_at_the_default_limit(tmp_path, monkeypatch, capsys):
    # Small-integer weights with m far above d^2: an exponential search that
    # ran until interrupted. Under the default limit (made short here) the
    # block is undecided (time_limit), and its reason names the limit.
    rng = np.random.default_rng(1)
    d, m = 4, 120
    tensors = {
        "bert.encoder.layer.0.intermediate.dense.weight": rng.integers(-3, 4, (m, d)),
        "bert.encoder.layer.0.output.dense.weight": rng.integers(-3, 4, (d, m)),
    }
    path = tmp_path / "degenerate"
    path.mkdir()
    save_file(
        {k: v.astype(np.float32) for k, v in tensors.items()}, str(path / "model.safetensors")
    )
    config = {
        "model_type": "bert",
        "hidden_act": "relu",
        "hidden_size": d,
        "intermediate_size": m,
        "num_hidden_layers": 1,
    }
    (path / "config.json").write_text(json.dumps(config))
    monkeypatch.setattr(cli, "DEFAULT_TIME_LIMIT", 0.3)
    code, out, _ = _run(capsys, str(path), "--json")
    assert code == 0
    (block,) = json.loads(out)["blocks"]
    assert block["verdict"] == "undecided" and block["status"] == "time_limit"
    assert block["reason"].endswith(
        "(time limit: 0.3 s per block, the default of skipsearch scan (--time-limit S to change "
        "it, --time-limit none to lift it))"
    )
    code, out, _ = _run(capsys, str(path))
    assert "undecided (time_limit)" in out
    assert any(
        line.startswith("[1] Undecided") and "0.3 s per block" in line for line in out.splitlines()
    )


# -- progress without a stderr (item 6) ------------------------------------------------------


def test_progress_without_stderr_is_off(ckpt, monkeypatch):
    # pythonw and some services run with sys.stderr None: tqdm raised
    # AttributeError before any block was decided.
    monkeypatch.setattr(sys, "stderr", None)
    reports = scan_module.scan(ckpt, progress=True)
    assert [r.block for r in reports] == NAMES
    assert {r.verdict for r in reports} == {"not_absorbable"}


# -- Ctrl-C while a row is written (breaker F6) ----------------------------------------------


@pytest.fixture
def default_sigint():
    """Python's own SIGINT handler for the test (an earlier import of
    fpylll leaves cysignals' in place), and the one before it after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _ctrl_c_inside_row(monkeypatch, tmp_path, *, row: str, presses: int, split: bool):
    """stdout a real file, and ``presses`` SIGINTs sent while the row that
    names ``row`` is written (``split``: after the first half of its bytes
    went out, as a blocked write that the kernel cut short). Returns what
    reached the file."""
    out_path = tmp_path / "out"
    stdout = open(out_path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    monkeypatch.setattr(sys, "stdout", stdout)
    real_write = os.write
    sent = []

    def write(fd, data):
        if fd != stdout.fileno() or sent or row.encode() not in bytes(data):
            return real_write(fd, data)
        sent.append(True)
        half = real_write(fd, bytes(data[: len(data) // 2])) if split else 0
        for _ in range(presses):
            signal.raise_signal(signal.SIGINT)
        return half if split else real_write(fd, data)

    monkeypatch.setattr(cli.os, "write", write)
    return out_path, stdout


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("presses", [1, 2])
@pytest.mark.parametrize("fmt", ["table", "--jsonl", "--csv"])
def test_ctrl_c_while_a_row_is_written_keeps_it_whole(
    ckpt, monkeypatch, tmp_path, capsys, default_sigint, fmt, presses, split
):
    # The row being written when Ctrl-C came was lost (or cut in half)
    # while the last line counted it: 32 rows, "after 33 of 400".
    out_path, stdout = _ctrl_c_inside_row(
        monkeypatch, tmp_path, row=NAMES[2], presses=presses, split=split
    )
    code = cli.main(["scan", str(ckpt), "--no-progress", *_flags(fmt)])
    stdout.close()
    out = out_path.read_text(encoding="utf-8")
    assert code == cli.EXIT_INTERRUPTED
    assert capsys.readouterr().err.splitlines() == ["skipsearch: interrupted"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    stopped = f"interrupted (Ctrl-C) after 3 of {LAYERS} FFN blocks"
    if fmt == "--jsonl":
        *rows, summary = [json.loads(line) for line in out.splitlines()]
        assert [r["block"] for r in rows] == NAMES[:3]
        assert summary["stopped"] == stopped
        assert sum(summary["summary"].values()) == 3
    elif fmt == "--csv":
        assert [r["block"] for r in csv.DictReader(io.StringIO(out))] == NAMES[:3]
    else:
        rows = [line.split()[0] for line in out.splitlines() if line.startswith("bert.")]
        assert rows == NAMES[:3]
        assert f"the scan was {stopped}: 3 of 3 FFN blocks" in out.splitlines()[-1]


def test_ctrl_c_three_times_cuts_the_row_and_says_so(
    ckpt, monkeypatch, tmp_path, capsys, default_sigint
):
    # For an output that takes nothing more, a third press stops at once:
    # the row stays cut, no line is glued to it, and stderr says so.
    out_path, stdout = _ctrl_c_inside_row(
        monkeypatch, tmp_path, row=NAMES[2], presses=3, split=True
    )
    code = cli.main(["scan", str(ckpt), "--no-progress", "--jsonl"])
    stdout.close()
    lines = out_path.read_text(encoding="utf-8").split("\n")
    assert code == cli.EXIT_INTERRUPTED
    assert capsys.readouterr().err.splitlines() == [
        "skipsearch: interrupted twice: the report ends inside its last line"
    ]
    assert [json.loads(line)["block"] for line in lines[:2]] == NAMES[:2]
    assert len(lines) == 3 and NAMES[2] in lines[2]  # the half row, and nothing after it
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_at_start_up_is_one_line_and_130(ckpt, monkeypatch, capsys, default_sigint):
    # Ctrl-C before the scan began (building the parser, reading the
    # arguments) escaped main() as a traceback, exit status -2.
    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_parser", interrupted)
    code, out, err = _run(capsys, str(ckpt))
    assert code == cli.EXIT_INTERRUPTED and out == ""
    assert err.splitlines() == ["skipsearch: interrupted"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_ctrl_c_while_python_m_imports_the_command_line(monkeypatch, capsys):
    # python -m skipsearch: Ctrl-C while skipsearch.cli is imported was a
    # traceback and status -2.
    class Importing:
        def __getattr__(self, name):
            raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "skipsearch.cli", Importing())
    entry = importlib.import_module("skipsearch.__main__")
    assert entry._run() == cli.EXIT_INTERRUPTED
    assert capsys.readouterr().err.splitlines() == ["skipsearch: interrupted"]
