"""The bracket in the scan and its outputs: the scan's
``bracket`` option and ``--bracket / --no-bracket``, the bracket keys of the
table, JSON, CSV and Markdown, and the band of ``--plot``."""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import json

import numpy as np
import pytest
import skipsearch
from skipsearch import cli
from skipsearch._scan import decide as decide_module
from skipsearch.scan import SCHEMA_VERSION, BlockReport, scan

from tests.test_families import llama, save
from tests.test_pipelines import validator
from tests.test_scan import _layers, write_checkpoint

BRACKET_KEYS = ("bracket_lower", "bracket_upper", "bracket_status", "best_subset_size")


@pytest.fixture
def ckpt(tmp_path):
    """Layer 0 generic (not absorbable), layer 1 absorbable with S = {0, 1, 2, 3}."""
    return write_checkpoint(tmp_path / "tiny-bert")


@pytest.fixture
def given(monkeypatch):
    """Record the ``bracket`` keyword each decision is given (``"absent"``
    when the scan does not pass it), and decide with the real core."""
    real = skipsearch.find_absorbing_subset
    seen = []

    def find_absorbing_subset(W_up, W_down, **kwargs):
        # The scan hands its options over whole: a bracket left at None
        # counts as not passed.
        bracket = kwargs["options"].bracket if "options" in kwargs else kwargs.get("bracket")
        seen.append("absent" if bracket is None else bracket)
        return real(W_up, W_down, **kwargs)

    monkeypatch.setattr(decide_module, "find_absorbing_subset", find_absorbing_subset)
    return seen


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def brute_force(layer: dict) -> tuple[float, list[int]]:
    """The least relative residual ||I + W_down[:, S] W_up[S, :]||_F / ||I||_F
    over all 2^m flip sets of a ReLU layer as the scan reads it (float32),
    and the set that attains it."""
    W_up = layer["up"].astype(np.float32).astype(np.float64)
    W_down = layer["down"].astype(np.float32).astype(np.float64)
    d, m = W_down.shape
    best = (np.inf, [])
    for k in range(m + 1):
        for S in itertools.combinations(range(m), k):
            E = np.eye(d) + W_down[:, list(S)] @ W_up[list(S), :]
            best = min(best, (float(np.linalg.norm(E) / np.sqrt(d)), list(S)))
    return best


# -- the option ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bracket, passed", [(None, "absent"), (True, True), (False, False)])
def test_scan_passes_bracket_on_only_when_given(ckpt, given, bracket, passed):
    scan(ckpt, bracket=bracket, progress=False)
    assert given == [passed, passed]


@pytest.mark.parametrize(
    "flag, passed", [(None, "absent"), ("--bracket", True), ("--no-bracket", False)]
)
def test_cli_flags(ckpt, given, capsys, flag, passed):
    code, _, err = run_cli(capsys, "scan", str(ckpt), "--no-progress", *([flag] if flag else []))
    assert code == 0 and err == "" and given == [passed, passed]


def test_scan_checkpoint_passes_bracket_on(ckpt, given):
    skipsearch.scan_checkpoint(ckpt, bracket=False, progress=False)
    assert given == [False, False]


@pytest.mark.parametrize("bad", ["yes", 1, 0.0])
def test_bracket_must_be_a_bool(ckpt, bad):
    with pytest.raises(TypeError, match="bracket must be True, False or None"):
        scan(ckpt, bracket=bad, progress=False)


def test_cli_bracket_flags_exclude_each_other(ckpt, capsys):
    code, out, err = run_cli(capsys, "scan", str(ckpt), "--bracket", "--no-bracket")
    assert code == 2 and out == "" and "not allowed with" in err


# -- the values ------------------------------------------------------------------------------------


def test_bracket_holds_the_brute_force_optimum(ckpt):
    generic, planted = scan(ckpt, bracket=True, progress=False)
    optimum, best_set = brute_force(_layers()[0])
    lower, upper = generic.distance_bracket
    assert lower <= optimum + 1e-12 and upper >= optimum - 1e-12
    # Six neurons: every implementation proves the optimum.
    assert upper == pytest.approx(optimum, rel=1e-9) and lower == pytest.approx(optimum, rel=1e-6)
    assert generic.best_subset_size == len(best_set)
    assert generic.result.best_subset.tolist() == best_set
    assert generic.bracket_status in ("optimal", None)  # None: a core that does not say
    # The bracket's lower end is at least the relaxation distance.
    assert lower >= generic.relaxation_distance - 1e-12
    lower, upper = planted.distance_bracket
    assert lower == 0.0 and upper < 1e-12 and planted.best_subset_size == 4
    row = generic.to_dict()
    assert (row["bracket_lower"], row["bracket_upper"]) == generic.distance_bracket
    assert row["best_subset_size"] == len(best_set)
    assert row["bracket_status"] == generic.bracket_status
    assert json.loads(json.dumps(row, allow_nan=False)) == row


def test_no_bracket_when_turned_off(ckpt):
    for r in scan(ckpt, bracket=False, progress=False):
        assert r.distance_bracket is None and r.bracket_status is None
        assert r.best_subset_size is None
        assert all(r.to_dict()[k] is None for k in BRACKET_KEYS)
        assert cli.format_table([r]).splitlines()[1].split()[8:10] == ["-", "-"]


def test_gated_blocks_never_get_a_bracket(tmp_path):
    path = save(tmp_path / "llama", *llama(np.random.default_rng(3)))
    reports = scan(path, bracket=True, progress=False)
    assert {r.activation for r in reports} == {"swiglu"}
    for r in reports:
        assert r.verdict == "not_absorbable" and r.distance_bracket is None
        assert all(r.to_dict()[k] is None for k in BRACKET_KEYS)


# -- the formats -----------------------------------------------------------------------------------


def _report(status, bracket, best):
    """A report whose result carries a hand-set bracket."""
    rng = np.random.default_rng(3)
    W_up, W_down = rng.standard_normal((6, 4)), rng.standard_normal((4, 6))
    result = skipsearch.find_absorbing_subset(W_up, W_down, activation="relu", bracket=False)
    result = dataclasses.replace(
        result,
        distance_bracket=bracket,
        best_subset=None if best is None else np.array(best, dtype=np.int64),
        stats=dataclasses.replace(result.stats, bracket=status),
    )
    return BlockReport(
        model="m",
        family="bert",
        block="layer.0",
        layer=0,
        d=4,
        m=6,
        activation="relu",
        norm="post",
        scope="",
        verdict=result.verdict,
        relaxation_distance=result.relaxation_distance,
        seconds=0.0,
        reason="",
        result=result,
    )


def test_table_cells():
    bounds = _report("bounds", (0.512349, 0.731001), [1, 4])
    optimal = _report("optimal", (0.7310049, 0.731005), [2])
    none = _report(None, None, None)
    lines = cli.format_table([bounds, optimal, none]).splitlines()
    assert lines[0].split()[7:12] == ["relaxation", "distance", "bracket", "best", "|S|"]
    # Lower end rounded down, upper end up: the cell still encloses the optimum.
    assert lines[1].split()[8:11] == ["[0.5123,", "0.7311]", "2"]
    assert lines[2].split()[8:11] == ["0.7310", "optimal", "1"]
    assert lines[3].split()[8:10] == ["-", "-"]


def test_csv_and_markdown_columns(ckpt, capsys):
    code, out, err = run_cli(capsys, "scan", str(ckpt), "--csv", "--no-progress", "--bracket")
    assert code == 0 and err == ""
    reader = csv.DictReader(io.StringIO(out))
    assert set(BRACKET_KEYS) <= set(reader.fieldnames)
    generic, planted = list(reader)
    optimum, best_set = brute_force(_layers()[0])
    assert float(generic["bracket_upper"]) == pytest.approx(optimum, rel=1e-9)
    assert int(generic["best_subset_size"]) == len(best_set)
    assert float(planted["bracket_lower"]) == 0.0 and planted["best_subset_size"] == "4"
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--csv", "--no-progress", "--no-bracket")
    for row in csv.DictReader(io.StringIO(out)):
        assert all(row[k] == "" for k in BRACKET_KEYS)
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--markdown", "--no-progress", "--bracket")
    lines = out.splitlines()
    assert "| bracket | best \\|S\\| |" in lines[0]
    cells = [c.strip() for c in lines[3].replace("\\|", "/").strip("|").split("|")]
    assert cells[10] == "4"  # the absorbable layer's best flip set: its four neurons
    assert cells[9] == "0.0000 optimal" or cells[9].startswith("[0.0000, 0.0001]")


def test_json_validates_with_and_without_the_bracket(ckpt, tmp_path, capsys):
    llama_path = save(tmp_path / "llama", *llama(np.random.default_rng(3)))
    for flag in ("--bracket", "--no-bracket"):
        code, out, err = run_cli(
            capsys, "scan", str(ckpt), str(llama_path), "--json", "--no-progress", flag
        )
        assert code == 0 and err == ""
        doc = json.loads(out)
        validator().validate(doc)
        assert doc["schema_version"] == SCHEMA_VERSION
        bracketed = [b["bracket_lower"] is not None for b in doc["blocks"]]
        # The two ReLU layers get one with --bracket; the two SwiGLU layers never do.
        assert bracketed == ([True, True, False, False] if flag == "--bracket" else [False] * 4)


def _bracket_mutations() -> list:
    def upper_missing(block: dict) -> None:
        block["bracket_upper"] = None

    def size_missing(block: dict) -> None:
        block["best_subset_size"] = None

    def status_unknown(block: dict) -> None:
        block["bracket_status"] = "exact"

    def status_without_bracket(block: dict) -> None:
        for key in ("bracket_lower", "bracket_upper", "best_subset_size"):
            block[key] = None
        block["bracket_status"] = "optimal"

    def negative_size(block: dict) -> None:
        block["best_subset_size"] = -1

    def key_missing(block: dict) -> None:
        del block["bracket_lower"]

    return [
        upper_missing,
        size_missing,
        status_unknown,
        status_without_bracket,
        negative_size,
        key_missing,
    ]


@pytest.mark.parametrize("mutate", _bracket_mutations(), ids=lambda f: f.__name__)
def test_schema_rejects_a_wrong_bracket(ckpt, capsys, mutate):
    jsonschema = pytest.importorskip("jsonschema")
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--json", "--no-progress", "--bracket")
    doc = json.loads(out)
    check = validator()
    check.validate(doc)
    mutate(doc["blocks"][0])
    with pytest.raises(jsonschema.ValidationError):
        check.validate(doc)


# -- the plot --------------------------------------------------------------------------------------


def test_plot_draws_the_bracket_as_a_band(tmp_path):
    plt = pytest.importorskip("matplotlib.pyplot")
    from skipsearch.plot import plot_relaxation_distances

    reports = []
    for layer, bracket in enumerate([(0.3, 0.9), (0.35, 0.95), (0.2, 0.8)]):
        r = _report("bounds", bracket, [0, 1])
        reports.append(dataclasses.replace(r, layer=layer, block=f"layer.{layer}"))
    png = tmp_path / "band.png"
    plot_relaxation_distances(reports, png)
    rgb = plt.imread(str(png))[..., :3]
    # The band: matplotlib's first colour (C0) at alpha 0.2 over white.
    c0 = np.array((0.122, 0.467, 0.706))
    band = 1.0 - 0.2 * (1.0 - c0)
    assert np.all(np.abs(rgb - band) < 0.02, axis=-1).sum() > 5000
    # No band without a bracket.
    png = tmp_path / "none.png"
    plot_relaxation_distances([_report(None, None, None)], png)
    rgb = plt.imread(str(png))[..., :3]
    assert np.all(np.abs(rgb - band) < 0.02, axis=-1).sum() < 50
