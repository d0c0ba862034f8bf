"""A scan as one table: ScanReports, reports_to_pandas / reports_to_polars,
and the --json document as a DataFrame (document_to_pandas /
document_to_polars)."""

from __future__ import annotations

import json
import pickle
import sys

import pytest
import skipsearch
from skipsearch import cli
from skipsearch._scan.frames import ScanReports, document_rows
from skipsearch.scan import scan

from tests.test_scan import write_checkpoint

NAMES = {"step10": 0, "checkpoint-2": 1, "global_step5": 2}


@pytest.fixture
def series(tmp_path):
    """Three tiny BERT checkpoints (layer 0 generic, layer 1 planted
    absorbable with S = {0, 1, 2, 3}), named out of step order."""
    root = tmp_path / "run"
    for name, seed in NAMES.items():
        write_checkpoint(root / name, seed=seed)
    return root


@pytest.fixture
def reports(series):
    # As the CLI scans (no certificates kept), so its documents compare equal.
    return ScanReports(scan(series, bracket=True, progress=False, keep_certificates=False))


# -- the list ---------------------------------------------------------------------------------------


def test_scan_reports_is_a_plain_list(reports):
    plain = list(reports)
    assert type(plain) is list and isinstance(reports, list) and len(reports) == 6
    assert reports == plain and plain == reports and reports != plain[:5]
    back = pickle.loads(pickle.dumps(reports))
    assert back == reports and isinstance(back, ScanReports)
    assert [r.step for r in back] == [2, 2, 5, 5, 10, 10]
    # Slices, sums and copies stay ScanReports, so they still convert.
    assert isinstance(reports[2:4], ScanReports) and [r.step for r in reports[2:4]] == [5, 5]
    both = reports[:2] + reports[4:]
    assert isinstance(both, ScanReports) and [r.step for r in both] == [2, 2, 10, 10]
    assert isinstance(reports.copy(), ScanReports) and reports.copy() == reports


def test_scan_returns_scan_reports(series):
    got = scan(series, progress=False)
    assert isinstance(got, ScanReports)
    assert got.to_dicts()[0]["model"] == "checkpoint-2"


def test_to_dicts_are_the_json_blocks(reports):
    rows = reports.to_dicts()
    assert rows == [r.to_dict() for r in reports]
    assert [(row["model"], row["layer"], row["verdict"]) for row in rows[:2]] == [
        ("checkpoint-2", 0, "not_absorbable"),
        ("checkpoint-2", 1, "absorbable"),
    ]


def test_exported():
    for name in (
        "ScanReports",
        "reports_to_pandas",
        "reports_to_polars",
        "document_to_pandas",
        "document_to_polars",
    ):
        assert name in skipsearch.__all__ and hasattr(skipsearch, name)


# -- pandas -----------------------------------------------------------------------------------------


def test_pandas_frame(reports):
    pd = pytest.importorskip("pandas")
    df = reports.to_pandas()
    rows = reports.to_dicts()
    assert list(df.columns) == list(rows[0])
    assert df.shape == (6, len(rows[0]))
    assert str(df["layer"].dtype) == "int64" and str(df["d"].dtype) == "int64"
    assert str(df["step"].dtype) == "Int64" and df["step"].tolist() == [2, 2, 5, 5, 10, 10]
    assert str(df["best_subset_size"].dtype) == "Int64"
    assert str(df["relaxation_distance"].dtype) == "float64"
    assert str(df["genericity_passed"].dtype) == "boolean"
    assert df["verdict"].tolist() == ["not_absorbable", "absorbable"] * 3
    # The planted layer's flip set is a list in its cell; the generic one has none.
    assert df.loc[1, "subset"] == [0, 1, 2, 3] and df.loc[0, "subset"] is None
    assert df.loc[0, "shared_with"] == []
    # None is null: the generic block has no residual, and norm is unknown nowhere here.
    assert rows[0]["residual"] is None and pd.isna(df.loc[0, "residual"])
    assert df.loc[1, "residual"] == pytest.approx(rows[1]["residual"])
    for i, row in enumerate(rows):
        for key, want in row.items():
            got = df.loc[i, key]
            if want is None:
                assert not isinstance(got, list) and pd.isna(got), (i, key)
            elif isinstance(want, list):
                assert list(got) == want, (i, key)
            else:
                assert got == want, (i, key)
    # Group by layer across the series: the planted layer is absorbable at every step.
    assert df.groupby("layer")["verdict"].agg(set).to_dict() == {
        0: {"not_absorbable"},
        1: {"absorbable"},
    }


def test_pandas_nullable_columns_without_a_step(tmp_path):
    pd = pytest.importorskip("pandas")
    df = skipsearch.reports_to_pandas(scan(write_checkpoint(tmp_path / "tiny"), progress=False))
    assert str(df["step"].dtype) == "Int64" and df["step"].isna().all()
    assert df["model"].tolist() == ["tiny", "tiny"]
    assert str(df["model"].dtype) == str(pd.Series(["a"]).dtype)  # pandas' own string dtype


def test_pandas_empty_frame_has_the_typed_columns():
    pytest.importorskip("pandas")
    df = ScanReports().to_pandas()
    assert df.shape[0] == 0
    assert list(df.columns)[:5] == ["model", "step", "family", "block", "layer"]
    assert str(df["layer"].dtype) == "int64" and str(df["step"].dtype) == "Int64"
    assert str(df["distance"].dtype) == "float64"


def test_pandas_missing_names_the_extra(reports, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r'pip install "skipsearch\[pandas\]"'):
        reports.to_pandas()
    with pytest.raises(ImportError, match=r'pip install "skipsearch\[pandas\]"'):
        skipsearch.document_to_pandas({"blocks": []})


# -- polars -----------------------------------------------------------------------------------------


def test_polars_frame(reports):
    pl = pytest.importorskip("polars")
    df = reports.to_polars()
    rows = reports.to_dicts()
    assert df.columns == list(rows[0]) and df.height == 6
    schema = df.schema
    assert schema["layer"] == pl.Int64 and schema["step"] == pl.Int64
    assert schema["relaxation_distance"] == pl.Float64
    assert schema["genericity_passed"] == pl.Boolean
    assert schema["verdict"] == pl.String and schema["norm"] == pl.String
    assert schema["subset"] == pl.List(pl.Int64) and schema["shared_with"] == pl.List(pl.String)
    # polars' rows are the JSON rows, null for None, exactly.
    assert df.to_dicts() == rows
    assert df["residual"].null_count() == 3  # the three generic blocks
    absorbable = df.filter(pl.col("verdict") == "absorbable")
    assert absorbable["step"].to_list() == [2, 5, 10]
    assert absorbable["subset"].to_list() == [[0, 1, 2, 3]] * 3


def test_polars_empty_and_missing(monkeypatch):
    pl = pytest.importorskip("polars")
    df = skipsearch.reports_to_polars([])
    assert df.height == 0 and df.schema["step"] == pl.Int64 and df.schema["m"] == pl.Int64
    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(ImportError, match=r'pip install "skipsearch\[polars\]"'):
        ScanReports().to_polars()


def test_bad_input_is_a_type_error():
    with pytest.raises(TypeError, match="sequence of BlockReport"):
        skipsearch.reports_to_pandas("checkpoint-2")
    with pytest.raises(TypeError, match="got int at index 1"):
        skipsearch.reports_to_polars([{"model": "m"}, 3])


# -- the --json document ----------------------------------------------------------------------------


def _document(series, capsys):
    code = cli.main(["scan", str(series), "--json", "--bracket", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    return out


def test_json_document_to_pandas(series, reports, tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    text = _document(series, capsys)
    path = tmp_path / "scan.json"
    path.write_text(text, encoding="utf-8")
    # pandas' own reader does not understand the document (the rows are under "blocks").
    with pytest.raises(ValueError):
        pd.read_json(path)
    from_file = skipsearch.document_to_pandas(path)
    from_dict = skipsearch.document_to_pandas(json.loads(text))
    from_str = skipsearch.document_to_pandas(str(path))
    direct = reports.to_pandas()
    for frame in (from_dict, from_str):
        pd.testing.assert_frame_equal(frame, from_file)
    assert list(from_file.columns) == list(direct.columns)
    assert (from_file.dtypes == direct.dtypes).all()
    keep = [c for c in direct.columns if c != "seconds"]
    pd.testing.assert_frame_equal(from_file[keep], direct[keep])


def test_json_document_to_polars(series, reports, tmp_path, capsys):
    pytest.importorskip("polars")
    doc = json.loads(_document(series, capsys))
    df = skipsearch.document_to_polars(doc)
    assert df.schema == reports.to_polars().schema
    assert df.drop("seconds").to_dicts() == reports.to_polars().drop("seconds").to_dicts()
    assert df["step"].to_list() == [2, 2, 5, 5, 10, 10]


def test_not_a_document(tmp_path):
    with pytest.raises(ValueError, match="no 'blocks' list"):
        document_rows({"schema_version": 3})
    with pytest.raises(ValueError, match="an object with a 'blocks' list"):
        document_rows([1, 2])
    bad = tmp_path / "bad.json"
    bad.write_text('{"blocks": [1]}', encoding="utf-8")
    with pytest.raises(ValueError, match="no 'blocks' list of objects"):
        document_rows(bad)
    with pytest.raises(FileNotFoundError):
        document_rows(tmp_path / "missing.json")


def test_rows_from_older_documents_are_null_where_a_key_is_missing():
    pl = pytest.importorskip("polars")
    pd = pytest.importorskip("pandas")
    doc = {"blocks": [{"model": "a", "layer": 0, "step": 3}, {"model": "b", "layer": 1}]}
    assert skipsearch.document_to_polars(doc)["step"].to_list() == [3, None]
    assert skipsearch.document_to_polars(doc).schema["layer"] == pl.Int64
    frame = skipsearch.document_to_pandas(doc)
    assert frame["layer"].tolist() == [0, 1] and str(frame["layer"].dtype) == "int64"
    assert frame.loc[0, "step"] == 3 and frame["step"].isna().tolist() == [False, True]
    assert pd.isna(frame.loc[1, "step"])
