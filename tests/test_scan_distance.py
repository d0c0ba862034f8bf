"""The scan's ``distance`` option and the CLI's ``--distance / --no-distance``:
which distance each row shows, exact or a proven
lower bound, and that it says so.

The plumbing and the output formats are tested against a stand-in for
``find_absorbing_subset`` that takes ``distance=``; the tests on the real
core run once its ``find_absorbing_subset`` has the parameter."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import numpy as np
import pytest
import skipsearch
from skipsearch import cli
from skipsearch._scan import decide as decide_module
from skipsearch.scan import BlockReport, scan

from tests.test_scan import write_checkpoint


@pytest.fixture
def ckpt(tmp_path):
    """Layer 0 generic (not absorbable), layer 1 absorbable (tests.test_scan)."""
    return write_checkpoint(tmp_path / "tiny-bert")


@pytest.fixture
def stand_in(monkeypatch):
    """Replace the core's find_absorbing_subset by one that takes
    ``distance=``: with False it keeps the proven bound and drops the exact
    distance, as the core will. Returns the list of distances it was given
    (``"absent"`` when the keyword was not passed)."""
    real = skipsearch.find_absorbing_subset
    given = []

    def find_absorbing_subset(W_up, W_down, *, distance=None, options=None, **kwargs):
        if options is not None:
            # The scan hands its options over whole.
            distance, options = options.exact_distance, options.replace(distance=None)
        given.append(distance)
        result = real(W_up, W_down, options=options, **kwargs)
        if distance is False and result.relaxation_distance is not None:
            bound = result.distance_bound
            result = dataclasses.replace(
                result,
                relaxation_distance=None,
                distance_bound=result.relaxation_distance * 0.95 if bound is None else bound,
            )
        return result

    monkeypatch.setattr(decide_module, "find_absorbing_subset", find_absorbing_subset)
    return given


def run_cli(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- plumbing and formats ---------------------------------------------------------------------------


@pytest.mark.parametrize("distance", [None, True, False])
def test_scan_passes_distance_on(ckpt, stand_in, distance):
    reports = scan(ckpt, distance=distance, progress=False)
    assert stand_in == [distance, distance]
    generic = reports[0]
    if distance is False:
        assert generic.relaxation_distance is None and generic.distance_bound > 0.01
        assert generic.distance_kind == "bound" and generic.distance == generic.distance_bound
    else:
        assert generic.distance_kind == "exact" and generic.distance == generic.relaxation_distance
    row = generic.to_dict()
    assert row["distance_kind"] == generic.distance_kind and row["distance"] == generic.distance
    assert row["distance_bound"] == generic.distance_bound
    assert json.loads(json.dumps(row, allow_nan=False)) == row


def test_scan_checkpoint_passes_distance_on(ckpt, stand_in):
    skipsearch.scan_checkpoint(ckpt, distance=False, progress=False)
    assert stand_in == [False, False]


@pytest.mark.parametrize("bad", ["no", 0, 1.0])
def test_distance_must_be_a_bool(ckpt, bad):
    with pytest.raises(TypeError, match="distance must be True, False or None"):
        scan(ckpt, distance=bad, progress=False)


def _result(activation, **gate):
    """A real decision on a 4 x 6 block, to carry in a hand-made report."""
    rng = np.random.default_rng(3)
    W_up, W_down = rng.standard_normal((6, 4)), rng.standard_normal((4, 6))
    return skipsearch.find_absorbing_subset(W_up, W_down, activation=activation, **gate)


def test_distance_kind_without_a_distance():
    W_gate = np.random.default_rng(4).standard_normal((6, 4))
    report = BlockReport(
        result=_result("swiglu", W_gate=W_gate),
        model="m",
        family="llama",
        block="mlp",
        layer=0,
        d=4,
        m=6,
        activation="swiglu",
        norm="pre",
        scope="",
        verdict="not_absorbable",
        relaxation_distance=None,
        seconds=0.0,
        reason="",
    )
    assert report.distance_kind is None and report.distance is None
    assert report.to_dict()["distance_kind"] is None
    assert cli.format_table([report]).splitlines()[1].split()[7] == "-"


def test_table_rounds_a_bound_down():
    base = dict(
        model="m",
        family="bert",
        block="layer.0",
        layer=0,
        d=4,
        m=6,
        activation="gelu",
        norm="post",
        scope="",
        verdict="not_absorbable",
        seconds=0.0,
        reason="",
    )
    result = _result("gelu")
    bound = BlockReport(relaxation_distance=None, distance_bound=0.659996, result=result, **base)
    exact = BlockReport(relaxation_distance=0.69, distance_bound=0.66, result=result, **base)
    lines = cli.format_table([bound, exact]).splitlines()
    assert lines[1].split()[7:9] == ["\u2265", "0.6599"]  # a lower bound stays one
    assert lines[2].split()[7] == "0.6900"


def test_cli_no_distance_table(ckpt, stand_in, capsys):
    code, out, err = run_cli(capsys, "scan", str(ckpt), "--no-progress", "--no-distance")
    assert code == 0 and err == ""
    assert stand_in == [False, False]
    lines = out.splitlines()
    assert lines[4].split()[6:8] == ["not_absorbable", "\u2265"]  # under the time limit line
    assert lines[-1].startswith("\u2265: a proven lower bound")
    assert "--distance computes it" in lines[-1]


def test_cli_distance_table(ckpt, stand_in, capsys):
    code, out, err = run_cli(capsys, "scan", str(ckpt), "--no-progress", "--distance")
    assert code == 0 and err == ""
    assert stand_in == [True, True]
    assert "\u2265" not in out
    assert float(out.splitlines()[4].split()[7]) > 0.01  # under the time limit line


def test_cli_default_passes_no_distance(ckpt, stand_in, capsys):
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--no-progress")
    assert code == 0 and stand_in == [None, None] and "\u2265" not in out


def test_cli_bound_mark_falls_back_to_ascii(ckpt, stand_in, capsys, monkeypatch):
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    monkeypatch.setattr("sys.stdout", out)
    assert cli.main(["scan", str(ckpt), "--no-progress", "--no-distance"]) == 0
    out.seek(0)
    text = out.read()
    assert ">= " in text and "\u2265" not in text


def test_cli_json_csv_markdown_say_which_distance(ckpt, stand_in, capsys):
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--json", "--no-distance")
    assert code == 0
    generic = json.loads(out)["blocks"][0]
    assert generic["distance_kind"] == "bound" and generic["relaxation_distance"] is None
    assert generic["distance"] == generic["distance_bound"] > 0.01
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--csv", "--no-distance")
    row = next(csv.DictReader(io.StringIO(out)))
    assert row["distance_kind"] == "bound" and row["relaxation_distance"] == ""
    assert float(row["distance"]) == float(row["distance_bound"])
    code, out, _ = run_cli(capsys, "scan", str(ckpt), "--markdown", "--no-distance")
    lines = out.splitlines()
    assert [c.strip() for c in lines[2].strip("|").split("|")][8].startswith("\u2265 ")
    assert any(line.startswith("- \u2265: a proven lower bound") for line in lines)


def test_cli_distance_flags_exclude_each_other(ckpt, capsys):
    code, out, err = run_cli(capsys, "scan", str(ckpt), "--distance", "--no-distance")
    assert code == 2 and out == "" and "not allowed with" in err


# -- the real core ---------------------------------------------------------------------------------


def test_real_scan_without_distance_reports_the_bound(ckpt):
    exact = scan(ckpt, distance=True, progress=False)
    bound = scan(ckpt, distance=False, progress=False)
    default = scan(ckpt, progress=False)
    assert [r.verdict for r in bound] == [r.verdict for r in exact] == [r.verdict for r in default]
    assert [r.verdict for r in exact] == ["not_absorbable", "absorbable"]
    generic = bound[0]
    assert generic.relaxation_distance is None and generic.distance_kind == "bound"
    assert generic.distance_bound > generic.result.tolerance
    assert exact[0].distance_kind == "exact" and exact[0].relaxation_distance > 0.01
    # A tiny block fits any memory budget: the default is exact.
    assert default[0].distance_kind == "exact"
    assert default[0].relaxation_distance == pytest.approx(exact[0].relaxation_distance, rel=1e-12)


def test_real_cli_no_distance(ckpt, capsys):
    code, out, err = run_cli(capsys, "scan", str(ckpt), "--json", "--no-distance")
    assert code == 0 and err == ""
    blocks = json.loads(out)["blocks"]
    assert [b["verdict"] for b in blocks] == ["not_absorbable", "absorbable"]
    assert blocks[0]["distance_kind"] == "bound"
