"""Checkpoint series: a directory of step-named
checkpoints is scanned in step order, every row carries its ``step`` (table,
JSON, CSV, Markdown), and ``--plot`` draws each layer against the step."""

from __future__ import annotations

import csv
import io
import json
import re
import warnings

import numpy as np
import pytest
import skipsearch
from skipsearch import cli
from skipsearch._scan.locate import checkpoint_step, expand_paths
from skipsearch.scan import SCHEMA_VERSION, CheckpointError, describe_checkpoint, scan

from tests.test_pipelines import _generic_without_config, validator
from tests.test_scan import write_checkpoint

#: Checkpoint folder names, shuffled, and the order of their steps.
NAMES = {"step10": 0, "checkpoint-2": 1, "global_step5": 2}
ORDER = ["checkpoint-2", "global_step5", "step10"]


@pytest.fixture
def series(tmp_path):
    """Three tiny BERT checkpoints (layer 0 generic, layer 1 absorbable),
    each with weights of its own, named out of order."""
    root = tmp_path / "run"
    for name, seed in NAMES.items():
        write_checkpoint(root / name, seed=seed)
    return root


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- step names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, step",
    [
        ("checkpoint-2000", 2000),
        ("step1000", 1000),
        ("global_step500", 500),
        ("step_1000", 1000),
        ("step-7", 7),
        ("Checkpoint-7", 7),
        ("GLOBAL_STEP3", 3),
        ("step000042", 42),
        ("checkpoint-0", 0),
    ],
)
def test_step_names(name, step):
    assert checkpoint_step(name) == step


@pytest.mark.parametrize(
    "name", ["final", "checkpoint", "step", "step10a", "my-step10", "checkpoint-1e3", "run-3"]
)
def test_names_without_a_step(name):
    assert checkpoint_step(name) is None


# -- the series ------------------------------------------------------------------------------------


def test_series_is_scanned_in_step_order(series):
    assert [p.name for p in expand_paths(series)] == ORDER
    reports = scan(series, progress=False)
    assert [(r.model, r.step, r.layer) for r in reports] == [
        ("checkpoint-2", 2, 0),
        ("checkpoint-2", 2, 1),
        ("global_step5", 5, 0),
        ("global_step5", 5, 1),
        ("step10", 10, 0),
        ("step10", 10, 1),
    ]
    assert [r.verdict for r in reports] == ["not_absorbable", "absorbable"] * 3
    assert [r.to_dict()["step"] for r in reports] == [2, 2, 5, 5, 10, 10]
    # Each checkpoint has weights of its own: three different distances of layer 0.
    distances = [r.relaxation_distance for r in reports if r.layer == 0]
    assert len(set(distances)) == 3 and all(d > 0.01 for d in distances)
    assert describe_checkpoint(series / "step10").step == 10


def test_steps_are_ordered_numerically_not_by_name(tmp_path):
    for name in ("checkpoint-1000", "checkpoint-200", "checkpoint-30"):
        write_checkpoint(tmp_path / "run" / name)
    reports = scan(tmp_path / "run", progress=False)
    assert [r.step for r in reports] == [30, 30, 200, 200, 1000, 1000]


def test_a_checkpoint_without_a_step_name_has_no_step(tmp_path):
    reports = scan(write_checkpoint(tmp_path / "tiny-bert"), progress=False)
    assert [r.step for r in reports] == [None, None]
    assert reports[0].to_dict()["step"] is None
    assert describe_checkpoint(tmp_path / "tiny-bert").step is None


def test_a_directory_of_models_keeps_name_order_and_no_step(tmp_path):
    write_checkpoint(tmp_path / "zoo" / "b")
    write_checkpoint(tmp_path / "zoo" / "a")
    reports = scan(tmp_path / "zoo", progress=False)
    assert [(r.model, r.step) for r in reports] == [("a", None)] * 2 + [("b", None)] * 2


def test_explicit_paths_keep_their_order_and_their_steps(series):
    reports = scan([series / "step10", series / "checkpoint-2"], progress=False)
    assert [r.step for r in reports] == [10, 10, 2, 2]
    # Through the .safetensors file, the step comes from its folder.
    reports = scan(series / "global_step5" / "model.safetensors", progress=False)
    assert [r.step for r in reports] == [5, 5]


def test_series_of_generic_checkpoints_without_config(tmp_path):
    for name in ("step3", "step1"):
        _generic_without_config(tmp_path / "run" / name)
    layout = skipsearch.Layout(
        up="*blocks.{i}.ffn.w_in.weight", down="*blocks.{i}.ffn.w_out.weight", activation="gelu"
    )
    reports = scan(tmp_path / "run", layout=layout, progress=False)
    assert [(r.model, r.step, r.layer) for r in reports] == [
        ("step1", 1, 0),
        ("step1", 1, 1),
        ("step3", 3, 0),
        ("step3", 3, 1),
    ]


def test_mixed_names_are_an_error_naming_the_directory(series, capsys):
    write_checkpoint(series / "final")
    with pytest.raises(CheckpointError) as info:
        scan(series, progress=False)
    message = str(info.value)
    assert str(series) in message and "final" in message
    assert "checkpoint-<step>" in message and "global_step<step>" in message
    code, out, err = run_cli(capsys, "scan", str(series), "--no-progress")
    assert code == 2 and out == ""
    assert err.startswith("skipsearch: error: ") and err.count("\n") == 1 and "final" in err


def test_two_checkpoints_of_one_step_are_an_error(series):
    write_checkpoint(series / "checkpoint-5")
    with pytest.raises(CheckpointError, match=r"global_step5 and checkpoint-5|checkpoint-5 and"):
        scan(series, progress=False)


def test_a_checkpoint_with_step_folders_is_one_checkpoint(series, capsys):
    # A Trainer output folder: the final model at the top, checkpoint-<step>/ inside.
    write_checkpoint(series, seed=7)
    with pytest.warns(skipsearch.CheckpointSeriesWarning, match="checkpoint-2") as record:
        reports = scan(series, progress=False)
    assert len(record) == 1 and "pass those subdirectories" in str(record[0].message)
    assert [(r.model, r.step) for r in reports] == [("run", None), ("run", None)]
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, out, err = run_cli(capsys, "scan", str(series), "--no-progress", "--csv")
    assert code == 0
    assert err.count("skipsearch: warning: ") == 1 and "scanned as one checkpoint" in err
    assert len(list(csv.DictReader(io.StringIO(out)))) == 2


def test_warning_class_is_exported():
    assert "CheckpointSeriesWarning" in skipsearch.__all__
    assert issubclass(skipsearch.CheckpointSeriesWarning, skipsearch.SkipsearchWarning)


# -- outputs ---------------------------------------------------------------------------------------


def test_cli_table_names_the_step(series, capsys):
    # One table by step (tests/test_cli_series_table.py has its cells) ...
    code, out, err = run_cli(capsys, "scan", str(series), "--no-progress")
    assert code == 0 and err == ""
    assert "model: " not in out
    steps = [line.split()[0] for line in out.splitlines() if line[:4].strip().isdigit()]
    assert steps == ["2", "5", "10"]
    assert out.splitlines()[-1].startswith("6 FFN blocks: 3 absorbable, 3 not absorbable")
    # ... and with -v the table of each checkpoint, headed by its step, above it.
    code, out, _ = run_cli(capsys, "scan", str(series), "--no-progress", "-v")
    heads = [line for line in out.splitlines() if line.startswith("model: ")]
    assert [h.split(" (")[1].split(",")[0] for h in heads] == ["step 2", "step 5", "step 10"]
    assert heads[0].startswith("model: checkpoint-2 (step 2, bert, 2 FFN blocks")
    assert out.splitlines()[-1].startswith("6 FFN blocks: 3 absorbable, 3 not absorbable")


def test_cli_json_of_a_series_validates(series, capsys):
    code, out, err = run_cli(capsys, "scan", str(series), "--json", "--no-progress")
    assert code == 0 and err == ""
    doc = json.loads(out)
    validator().validate(doc)
    assert doc["schema_version"] == SCHEMA_VERSION
    assert [(m["name"], m["step"]) for m in doc["models"]] == [
        ("checkpoint-2", 2),
        ("global_step5", 5),
        ("step10", 10),
    ]
    assert [b["step"] for b in doc["blocks"]] == [2, 2, 5, 5, 10, 10]
    expected = [r.to_dict() for r in scan(series, progress=False, keep_certificates=False)]
    for got, want in zip(doc["blocks"], expected):
        got.pop("seconds"), want.pop("seconds")
        assert got == want


def test_schema_rejects_a_bad_step(series, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    code, out, _ = run_cli(capsys, "scan", str(series), "--json", "--no-progress")
    doc = json.loads(out)
    for bad in ("2", -1, 2.5):
        broken = json.loads(out)
        broken["blocks"][0]["step"] = bad
        with pytest.raises(jsonschema.ValidationError):
            validator().validate(broken)
    del doc["models"][0]["step"]
    with pytest.raises(jsonschema.ValidationError):
        validator().validate(doc)


def test_cli_csv_has_the_step_column(series, tmp_path, capsys):
    code, out, err = run_cli(capsys, "scan", str(series), "--csv", "--no-progress")
    assert code == 0 and err == ""
    reader = csv.DictReader(io.StringIO(out))
    assert reader.fieldnames[:3] == ["model", "step", "family"]
    rows = list(reader)
    assert [(r["model"], r["step"], r["layer"]) for r in rows] == [
        ("checkpoint-2", "2", "0"),
        ("checkpoint-2", "2", "1"),
        ("global_step5", "5", "0"),
        ("global_step5", "5", "1"),
        ("step10", "10", "0"),
        ("step10", "10", "1"),
    ]
    code, out, _ = run_cli(
        capsys, "scan", str(write_checkpoint(tmp_path / "tiny")), "--csv", "--no-progress"
    )
    assert [r["step"] for r in csv.DictReader(io.StringIO(out))] == ["", ""]


def test_cli_markdown_has_the_step_column(series, capsys):
    code, out, err = run_cli(capsys, "scan", str(series), "--markdown", "--no-progress")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("| model | step | block | layer |")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:8]]
    assert [(r[0], r[1], r[3]) for r in rows] == [
        ("checkpoint-2", "2", "0"),
        ("checkpoint-2", "2", "1"),
        ("global_step5", "5", "0"),
        ("global_step5", "5", "1"),
        ("step10", "10", "0"),
        ("step10", "10", "1"),
    ]
    # Every row has a cell per column; escaped pipes (the header's "best \|S\|") are text.
    columns = re.split(r"(?<!\\)\|", lines[0].strip("|"))
    assert "best \\|S\\|" in [c.strip() for c in columns]
    assert all(len(re.split(r"(?<!\\)\|", line.strip("|"))) == len(columns) for line in lines[2:8])
    assert any(line.startswith("- **step10** (step 10, bert") for line in lines)


# -- the plot --------------------------------------------------------------------------------------


def test_cli_plot_of_a_series(series, tmp_path, capsys, monkeypatch):
    plt = pytest.importorskip("matplotlib.pyplot")
    from skipsearch import plot

    drawn = []
    real = plot.plot_training_series

    def recording(reports, path):
        drawn.append([r.step for r in reports])
        real(reports, path)

    monkeypatch.setattr(plot, "plot_training_series", recording)
    png = tmp_path / "series.png"
    code, out, err = run_cli(capsys, "scan", str(series), "--no-progress", "--plot", str(png))
    assert code == 0 and err == f"plot: {png}\n" and "plot:" not in out
    assert drawn == [[2, 2, 5, 5, 10, 10]]
    image = plt.imread(str(png))
    assert image.shape[0] >= 400 and image.shape[1] >= 700
    # One line per layer: matplotlib's first two colours (C0 blue, C1 orange).
    rgb = image[..., :3]
    for colour in ((0.122, 0.467, 0.706), (1.0, 0.498, 0.055)):
        close = np.all(np.abs(rgb - np.array(colour)) < 0.03, axis=-1)
        assert close.sum() > 50, colour
    assert 0.5 < np.mean(np.all(rgb > 0.95, axis=-1)) < 0.99


def test_one_checkpoint_gets_the_layer_plot(series, tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib.pyplot")
    from skipsearch import plot

    monkeypatch.setattr(plot, "plot_training_series", lambda *a: pytest.fail("series plot"))
    png = tmp_path / "one.png"
    code, _, err = run_cli(
        capsys, "scan", str(series / "step10"), "--no-progress", "--plot", str(png)
    )
    assert code == 0 and err == f"plot: {png}\n" and png.stat().st_size > 10_000


def test_series_plot_errors(series, tmp_path):
    pytest.importorskip("matplotlib.pyplot")
    from skipsearch.plot import plot_training_series

    with pytest.raises(ValueError, match="empty"):
        plot_training_series([], tmp_path / "x.png")
    plain = scan(write_checkpoint(tmp_path / "tiny"), progress=False)
    with pytest.raises(ValueError, match="no report has a training step"):
        plot_training_series(plain, tmp_path / "x.png")
    # Rows without a step are left out, and the file is still written.
    png = tmp_path / "mixed.png"
    plot_training_series(scan(series, progress=False) + plain, png)
    assert png.stat().st_size > 10_000


def test_log_step_axis_only_for_geometric_steps():
    from skipsearch.plot import _log_steps

    pythia_early = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000]
    assert _log_steps(pythia_early)
    assert not _log_steps(list(range(0, 10_001, 500)))  # Trainer: every 500 steps
    assert not _log_steps([2, 5, 10])  # too few, too narrow


def test_training_run_example(tmp_path, capsys):
    """examples/training_run.py runs end to end on a short run."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "training_run.py"
    spec = importlib.util.spec_from_file_location("training_run", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    png = tmp_path / "run.png"
    argv = ["--out", str(tmp_path / "run"), "--plot", str(png), "--steps", "40", "--every", "20"]
    assert module.main(argv) == 0
    out = capsys.readouterr().out
    assert "scanned 9 blocks of 3 checkpoints" in out
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "checkpoint-0",
        "checkpoint-20",
        "checkpoint-40",
    ]
    reports = scan(tmp_path / "run", layout=module.LAYOUT, bracket=False, progress=False)
    assert [r.step for r in reports] == [0, 0, 0, 20, 20, 20, 40, 40, 40]
    assert {(r.d, r.m, r.activation) for r in reports} == {(16, 64, "relu")}
    if importlib.util.find_spec("matplotlib") is not None:
        assert png.stat().st_size > 10_000 and f"plot: {png}" in out


def test_an_empty_step_folder_is_named_and_left_out(series, capsys):
    # An interrupted save: step-named, but no config.json or weights yet.
    (series / "checkpoint-20").mkdir()
    with pytest.warns(skipsearch.CheckpointSeriesWarning, match="checkpoint-20") as record:
        reports = scan(series, progress=False)
    assert len(record) == 1 and "left out of the series" in str(record[0].message)
    assert sorted({r.step for r in reports}) == [2, 5, 10]
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        code, _, err = run_cli(capsys, "scan", str(series), "--no-progress", "--csv")
    assert code == 0 and err.count("skipsearch: warning: ") == 1 and "checkpoint-20" in err
