"""The command line's tables: one step x layer table for a checkpoint series
(the per-checkpoint tables behind -v), the footnote of a relaxation that
reaches -I in a block that is not absorbable, and each row's form and note
(markers in the table, columns in CSV and Markdown)."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest
from safetensors.numpy import save_file
from skipsearch import Layout, cli
from skipsearch.io.layouts import POST_LN
from skipsearch.scan import BlockReport, scan

from tests.test_scan import write_checkpoint

UP, DOWN = "blocks.{i}.up.weight", "blocks.{i}.down.weight"
GENERIC = ("--up", UP, "--down", DOWN, "--activation", "relu")
LAYOUT = Layout(up=UP, down=DOWN)


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def series(tmp_path):
    """Three tiny BERT checkpoints (layer 0 generic, layer 1 planted
    absorbable), named out of step order."""
    root = tmp_path / "run"
    for name, seed in {"step10": 0, "checkpoint-2": 1, "global_step5": 2}.items():
        write_checkpoint(root / name, seed=seed)
    return root


def _generic(directory, layers, d, m, seed):
    """A generic checkpoint (no config.json) of ``layers`` random ReLU blocks."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    tensors = {}
    for i in range(layers):
        tensors[UP.format(i=i)] = rng.standard_normal((m, d))
        tensors[DOWN.format(i=i)] = rng.standard_normal((d, m))
    save_file(tensors, str(directory / "model.safetensors"))
    return directory


def _table(out, first):
    """The aligned rows from the line that starts with ``first`` up to the
    first line that is not a row (one that does not start with a digit or
    with ``layer``), split on runs of two spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    rows = [lines[start]]
    for line in lines[start + 1 :]:
        if not line or not (line.lstrip()[:1].isdigit() or line.startswith("layer ")):
            break
        rows.append(line)
    return [[c.strip() for c in row.strip().split("  ") if c.strip()] for row in rows]


# -- the series table ---------------------------------------------------------------------------


def test_series_is_one_table_by_step(series, capsys):
    code, out, err = run_cli(capsys, "scan", str(series), "--no-progress")
    assert code == 0 and err == ""
    reports = scan(series, progress=False)
    assert "model: " not in out  # no per-checkpoint table without -v
    assert out.startswith("time limit: 600 s per block, the default")
    lines = out.splitlines()[1:]
    assert lines[0] == (
        f"series: {series} (3 checkpoints, step 2 to 10; bert, 2 FFN blocks each, relu -> relu, "
        "F32)"
    )
    assert lines[1].startswith("scope: FFN sub-layer with its residual, post-LN")
    assert lines[2] == "relaxation distance by step (-v: each checkpoint's table):"
    rows = _table(out, "step")
    assert rows[0] == ["step", "layer 0", "layer 1"]
    # The generic layer's distance at each step; the planted layer absorbable (A) at each.
    want = [
        [str(s), f"{reports[2 * k].relaxation_distance:.4f}", "0.0000 A"]
        for k, s in enumerate((2, 5, 10))
    ]
    assert rows[1:] == want
    assert reports[0].relaxation_distance == pytest.approx(float(want[0][1]), abs=5e-5)
    assert "A: absorbable" in lines
    assert lines[-1].startswith("6 FFN blocks: 3 absorbable, 3 not absorbable")
    assert len(lines) <= 12


def test_series_bracket_cells(series, capsys):
    code, out, err = run_cli(capsys, "scan", str(series), "--no-progress", "--bracket")
    assert code == 0 and err == ""
    assert (
        "best flip set's relative residual ([lower, upper] bracket, or the proven optimum)" in out
    )
    reports = scan(series, bracket=True, progress=False)
    rows = _table(out, "step")
    for row, pair in zip(rows[1:], zip(reports[::2], reports[1::2])):
        for got, r in zip(row[1:], pair):
            lower, upper = r.distance_bracket
            assert r.bracket_status == "optimal"  # six neurons: the optimum is proven
            suffix = " A" if r.verdict == "absorbable" else ""
            assert got == f"{upper:.4f}{suffix}"
    assert rows[1][2] == "0.0000 A"


def test_verbose_adds_the_tables_of_each_checkpoint(series, capsys):
    code, out, err = run_cli(capsys, "scan", str(series), "--no-progress", "-v")
    assert code == 0
    heads = [line for line in out.splitlines() if line.startswith("model: ")]
    assert [h.split(" (")[1].split(",")[0] for h in heads] == ["step 2", "step 5", "step 10"]
    # The series' table follows them, and the log lines go to stderr.
    assert out.index("series: ") > out.rindex("model: ")
    assert "skipsearch: info: " in err and "skipsearch: info: " not in out


def test_one_checkpoint_and_unstepped_models_keep_their_tables(series, tmp_path, capsys):
    code, out, _ = run_cli(capsys, "scan", str(series / "step10"), "--no-progress")
    assert code == 0 and "series:" not in out
    assert out.splitlines()[1].startswith("model: step10 (step 10, bert")
    zoo = tmp_path / "zoo"
    write_checkpoint(zoo / "a")
    write_checkpoint(zoo / "b", seed=1)
    code, out, _ = run_cli(capsys, "scan", str(zoo), "--no-progress")
    assert code == 0 and "series:" not in out
    assert [line.split()[1] for line in out.splitlines() if line.startswith("model: ")] == [
        "a",
        "b",
    ]


def test_many_blocks_are_rows(tmp_path, capsys):
    root = tmp_path / "wide"
    for step in (100, 200):
        _generic(root / f"checkpoint-{step}", layers=10, d=3, m=5, seed=step)
    code, out, err = run_cli(capsys, "scan", str(root), *GENERIC, "--no-progress")
    assert code == 0 and err == ""
    rows = _table(out, "block")
    assert rows[0] == ["block", "step 100", "step 200"]
    assert [row[0] for row in rows[1:]] == [f"layer {i}" for i in range(10)]
    reports = _scan(root)
    by_step = {(r.step, r.layer): r for r in reports}
    for i, row in enumerate(rows[1:]):
        assert row[1:] == [cli._distance_cell(by_step[(s, i)]) for s in (100, 200)]
        assert all(c[0].isdigit() or c.startswith("\u2265") for c in row[1:])


# -- a relaxation that reaches -I -----------------------------------------------------------------


@pytest.fixture
def wide_block(tmp_path):
    """Two ReLU blocks with d = 2, m = 8 > d^2: the relaxation reaches -I, no
    flip set does (seeds chosen so that one is decided by the exact branch
    and bound, with no certificate bound, and one by a certificate)."""
    return _generic(tmp_path / "wide-block", layers=2, d=2, m=8, seed=1)


def _scan(path, **options):
    return scan(path, layout=LAYOUT, activation="relu", progress=False, **options)


def test_zero_relaxation_without_a_bracket(wide_block, capsys):
    reports = _scan(wide_block, bracket=False)
    assert [r.verdict for r in reports] == ["not_absorbable"] * 2
    assert all(r.relaxation_distance < 5e-5 for r in reports)
    code, out, err = run_cli(
        capsys, "scan", str(wide_block), *GENERIC, "--no-progress", "--no-bracket"
    )
    assert code == 0 and err == ""
    assert [r.result.argument for r in reports] == ["branch_and_bound", "certificate"]
    bound = math.floor(reports[1].distance_bound * 1e4) / 1e4
    assert bound > 0.1 and not reports[0].distance_bound
    cells = [line.split()[7:9] for line in out.splitlines() if line.startswith("blocks.")]
    # No bound from the branch and bound: the zero, marked; the certificate's bound where it has one.
    assert cells == [["0.0000*", "-"], ["\u2265", f"{bound:.4f}*"]]
    note = next(line for line in out.splitlines() if line.startswith("*: "))
    assert "not absorbable, although the relaxation reaches -I" in note
    assert "only a lower bound for the flip sets" in note
    assert "proved that no flip set comes within the tolerance" in note
    assert "a certificate or the exact branch and bound proved" in note
    assert "without a bracket the bound of the certificate that decided" in note


def test_zero_relaxation_shows_the_bracket_lower_end(wide_block, capsys):
    reports = _scan(wide_block, bracket=True)
    code, out, err = run_cli(
        capsys, "scan", str(wide_block), *GENERIC, "--no-progress", "--bracket"
    )
    assert code == 0 and err == ""
    cells = [line.split()[7:9] for line in out.splitlines() if line.startswith("blocks.")]
    assert len(cells) == 2
    for r, cell in zip(reports, cells):
        lower = math.floor(r.distance_bracket[0] * 1e4) / 1e4
        assert lower > 0.1
        assert cell == ["\u2265", f"{lower:.4f}*"]
    note = next(line for line in out.splitlines() if line.startswith("*: "))
    assert "the bracket's lower end" in note


def test_zero_relaxation_in_the_series_and_markdown(tmp_path, capsys):
    root = tmp_path / "run"
    for step in (1, 2):
        _generic(root / f"step{step}", layers=1, d=2, m=8, seed=1)
    code, out, _ = run_cli(capsys, "scan", str(root), *GENERIC, "--no-progress", "--no-bracket")
    assert code == 0
    rows = _table(out, "step")
    assert all(row[1].endswith("*") for row in rows[1:])
    assert any(line.startswith("*: not absorbable") for line in out.splitlines())
    code, out, _ = run_cli(capsys, "scan", str(root), *GENERIC, "--no-progress", "--markdown")
    assert code == 0 and "\\*" in out and "- \\*: not absorbable" in out


# -- forms and notes -----------------------------------------------------------------------------


def _report(template, **fields):
    return BlockReport(**{**template.__dict__, **fields})


def test_notes_are_markers_listed_once(series):
    base = scan(series / "step10", progress=False)
    parallel = "x + attn(LN x) + f(LN x) (parallel attention)"
    reports = [
        _report(base[0], note="tied to the encoder's layer 0"),
        _report(base[1], note="tied to the encoder's layer 0"),
        _report(base[0], block="other.0", note="a norm inside the residual branch"),
        _report(base[1], block="other.1", form=parallel),
    ]
    lines = cli.format_table(reports).splitlines()
    assert lines[0].split()[-1] == "notes"
    assert [line.split()[-1] for line in lines[1:5]] == ["[1][2]", "[1][2]", "[1][3]", "[4]"]
    assert lines[5:-1] == [
        f"[1] form: {base[0].form}",
        "[2] tied to the encoder's layer 0",
        "[3] a norm inside the residual branch",
        f"[4] form: {parallel}",
    ]
    # The legend of the number columns closes the table (issue 47).
    assert lines[-1].startswith("legend: relaxation distance = ")
    # One form for every row: a line under the table, and no column without a note.
    lines = cli.format_table(base).splitlines()
    assert lines[0].split()[-1] == "seconds" and lines[-2] == f"form: {base[0].form}"


def test_series_notes_go_with_the_block_label(series):
    from skipsearch.scan import describe_checkpoint

    models = [describe_checkpoint(series / n) for n in ("checkpoint-2", "global_step5", "step10")]
    reports = [
        _report(r, note="routing decides which experts run") if r.layer == 1 else r
        for r in scan(series, progress=False)
    ]
    text = cli.format_series(models, reports)
    assert "step  layer 0  layer 1[1]" in text
    assert text.splitlines()[-3:] == [
        "A: absorbable",
        "form: " + POST_LN,
        "[1] routing decides which experts run",
    ]
    # An undecided block is marked ?, and a note that differs by step goes to the cells.
    reports[2] = _report(reports[2], verdict="undecided", note="only at step 5")
    rows = _table(cli.format_series(models, reports), "step")
    assert rows[0] == ["step", "layer 0", "layer 1[1]"]
    # Its note [2], and [3]: the reason it is undecided.
    assert rows[2][1] == f"{reports[2].relaxation_distance:.4f} ?[2][3]"
    assert rows[1][1] == f"{reports[0].relaxation_distance:.4f}"
    lines = cli.format_series(models, reports).splitlines()
    assert "A: absorbable; ?: undecided (the reason in the notes below)" in lines
    assert lines[-3:] == [
        "[1] routing decides which experts run",
        "[2] only at step 5",
        f"[3] undecided: {reports[2].reason}",
    ]


def test_csv_and_markdown_have_form_and_note(series, capsys):
    code, out, err = run_cli(capsys, "scan", str(series), "--no-progress", "--csv")
    assert code == 0 and err == ""
    reader = csv.DictReader(io.StringIO(out))
    # The columns of schema version 3 come last: no earlier column moves.
    assert reader.fieldnames[-12:-7] == ["kind", "stack", "expert", "form", "note"]
    assert reader.fieldnames[-7:] == [
        "hc_streams",
        "hc_res_min_singular",
        "hc_res_rank",
        "hc_dynamic",
        "hc_pre",
        "hc_post",
        "hc_res",
    ]
    assert reader.fieldnames[:4] == ["model", "step", "family", "block"]
    rows = list(reader)
    assert {(r["kind"], r["stack"], r["expert"], r["form"], r["note"]) for r in rows} == {
        ("mlp", "", "", POST_LN, "")
    }
    code, out, err = run_cli(capsys, "scan", str(series), "--no-progress", "--markdown")
    head = [c.strip() for c in out.splitlines()[0].strip("|").split("|")]
    assert head[-4:] == ["form", "note", "argument", "flip set"]
    first = [c.strip() for c in out.splitlines()[2].strip("|").split("|")]
    assert first[-4:-2] == [POST_LN, "-"]


def test_series_given_in_glob_order_is_shown_in_step_order(tmp_path, capsys):
    # A shell's glob sorts checkpoint-1000 before checkpoint-200: the header's
    # range and the table's rows still follow the steps.
    root = tmp_path / "run"
    for step in (100, 200, 1000):
        _generic(root / f"checkpoint-{step}", layers=1, d=3, m=5, seed=step)
    paths = sorted(str(p) for p in root.iterdir())
    assert [p.rsplit("-", 1)[1] for p in paths] == ["100", "1000", "200"]
    code, out, _ = run_cli(capsys, "scan", *paths, *GENERIC, "--no-progress")
    assert code == 0
    assert "3 checkpoints, step 100 to 1000;" in out.splitlines()[1]
    assert [row[0] for row in _table(out, "step")[1:]] == ["100", "200", "1000"]


def test_an_undecided_row_says_why_in_the_table(tmp_path, capsys):
    # A quick_gelu block without a flip set is undecided (the flip condition
    # is only known to be sufficient for it): the text table gives the reason.
    path = _generic(tmp_path / "m", layers=1, d=3, m=5, seed=7)
    code, out, _ = run_cli(
        capsys,
        "scan",
        str(path),
        "--up",
        UP,
        "--down",
        DOWN,
        "--activation",
        "quick_gelu",
        "--no-progress",
    )
    assert code == 0
    # The CLI keeps no certificates (so its reasons say how Y was bounded).
    [report] = scan(
        path, layout=LAYOUT, activation="quick_gelu", progress=False, keep_certificates=False
    )
    assert report.verdict == "undecided"
    assert report.reason.startswith("Undecided:")
    lines = out.splitlines()
    assert f"[1] {report.reason}" in lines
    assert next(line for line in lines if line.startswith("blocks.0")).endswith("[1]")
