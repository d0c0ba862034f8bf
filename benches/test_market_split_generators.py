"""The market-split generators and the bench's QOBLIB data and CSV.

Run with ``python -m pytest benches/test_market_split_generators.py -q``
(seconds; brute force on n <= 18 and skipsearch on n <= 30).
"""

from __future__ import annotations

import csv
import math

import market_split as bench
import market_split_generators as gen
import numpy as np
import pytest
import skipsearch

N_SMALL = 18
#: Every 0/1 vector of N_SMALL entries, one a row.
ALL_X = ((np.arange(2**N_SMALL)[:, None] >> np.arange(N_SMALL)) & 1).astype(np.int64)


def count_solutions(A: np.ndarray, b: np.ndarray) -> int:
    return int(((ALL_X @ A.T) - b == 0).all(axis=1).sum())


def test_cd_is_cornuejols_dawande():
    g = gen.cornuejols_dawande(6, 3)
    assert g.A.shape == (6, 50)
    assert g.A.min() >= 0
    assert g.A.max() <= 99
    np.testing.assert_array_equal(g.b, g.A.sum(axis=1) // 2)
    assert g.expected == "unknown"
    assert g.name == "cd_06_050_0100_003"
    np.testing.assert_array_equal(gen.cornuejols_dawande(6, 3).A, g.A)
    assert not np.array_equal(gen.cornuejols_dawande(6, 4).A, g.A)


@pytest.mark.parametrize("kind", ["wide", "long"])
def test_planted_families_hold_their_solution(kind):
    g = gen.adversarial(6, 1, kind)
    n = 50 if kind == "wide" else 75
    D = 1000 if kind == "wide" else gen.threshold_range(6, 75)
    assert g.A.shape == (6, n)
    assert g.A.max() <= D - 1
    assert g.solution is not None
    assert int(g.solution.sum()) == n // 2
    np.testing.assert_array_equal(g.A @ g.solution, g.b)
    assert g.expected == "feasible"


def test_threshold_range_leaves_one_expected_solution():
    # D = 924 at k = 6, n = 75: 2^75 / (924 sqrt(pi 75 / 6))^6 is 1 to 5%.
    assert gen.threshold_range(6, 75) == 924
    assert 2**75 / (924 * math.sqrt(math.pi * 75 / 6)) ** 6 == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize(("k", "D"), [(1, 100), (2, 20)])
def test_expected_solutions_against_brute_force(k, D):
    seeds = range(10)
    found = sum(count_solutions(*_ab(gen.cornuejols_dawande(k, s, N_SMALL, D))) for s in seeds)
    estimate = sum(
        gen.expected_solutions(*_ab(gen.cornuejols_dawande(k, s, N_SMALL, D))) for s in seeds
    )
    assert 0.5 < found / estimate < 2.0


def _ab(g: gen.Generated) -> tuple[np.ndarray, np.ndarray]:
    return g.A, g.b


@pytest.mark.parametrize("p", [2, 3, 7])
def test_parity_certificate(p):
    g = gen.infeasible(3, 5, "parity", n=N_SMALL, D=40, p=p)
    lam = g.certificate["lam"]
    assert g.certificate["p"] == p
    assert np.all((lam @ g.A) % p == 0)
    assert (lam @ g.b) % p != 0
    assert all(math.gcd(*map(int, row)) == 1 for row in g.A)
    assert np.all((g.b >= 0) & (g.b <= g.A.sum(axis=1)))
    assert count_solutions(g.A, g.b) == 0


def test_interval_certificate():
    g = gen.infeasible(3, 2, "interval", n=N_SMALL, D=100)
    top = int(np.maximum(g.A[0] - g.A[1], 0).sum())
    assert g.certificate == {"top": top}
    assert g.b[0] - g.b[1] == top + 1
    assert np.all((g.b >= 0) & (g.b <= g.A.sum(axis=1)))
    assert count_solutions(g.A, g.b) == 0


@pytest.mark.parametrize("family", gen.FAMILIES)
def test_written_file_reads_back(tmp_path, family):
    g = gen.generate(family, 4, 0)
    path = tmp_path / f"{g.name}.dat"
    path.write_text(gen.dat_text(g))
    A, b = bench.read_instance(path)
    np.testing.assert_array_equal(A, g.A)
    np.testing.assert_array_equal(b, g.b)
    assert bench.expected_answer(path) == g.expected


@pytest.mark.parametrize(
    ("family", "status"), [("wide", "solved"), ("parity", "infeasible"), ("interval", "infeasible")]
)
def test_skipsearch_agrees_with_construction(family, status):
    g = gen.generate(family, 4, 0)
    run = bench.run_skipsearch(g.A, g.b, 30.0, g.expected)
    assert run.status == status


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="kind"):
        gen.adversarial(5, 0, "tall")
    with pytest.raises(ValueError, match="p: expected a prime"):
        gen.infeasible(5, 0, "parity", p=4)
    with pytest.raises(ValueError, match="seed"):
        gen.cornuejols_dawande(5, -1)
    with pytest.raises(ValueError, match="--sets"):
        bench.instances(["ms_99"])


def test_qoblib_folder_and_published_times():
    files = bench.instances([""])
    assert len(files) == 156
    assert len(bench.instances(["ms_15"])) == 12
    assert len(bench.instances(["ms_09_200"])) == 4
    A, b = bench.read_instance(bench.DATA / "ms_15_200_003.dat")
    assert A.shape == (15, 140)
    published = bench.load_published()
    assert published["ms_10_200_003"] == {"solvediophant": 33712.0}
    assert published["ms_07_200_500"]["Gurobi"] == 2753.22
    assert published["ms_11_050_002"]["Schroeppel-Shamir (GPU)"] == 54455.52
    assert "ms_12_100_003" not in published


def test_results_row_has_qoblib_columns(tmp_path):
    path = bench.DATA / "ms_03_050_002.dat"
    A, b = bench.read_instance(path)
    run = bench.run_skipsearch(A, b, 10.0)
    args = type("Args", (), {"submitter": "me", "time_limit": 10.0, "lattice": "with fpylll"})()
    row = bench.results_row(path, A, bench.Measured([run], run.status, run.method), args)
    assert tuple(row) == bench.QOBLIB_COLUMNS
    assert row["Problem"] == "ms_03_050_002"
    assert (row["Best Objective Value"], row["# Decision Variables"], row["# Runs"]) == ("0", 20, 1)
    out = tmp_path / "results.csv"
    with out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=bench.QOBLIB_COLUMNS)
        writer.writeheader()
        writer.writerow(row)
    assert out.read_text().splitlines()[0].startswith("Problem,Submitter,Date,Reference,")
    assert skipsearch.__version__ in row["Reference"]
