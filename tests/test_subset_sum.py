"""subset_sum agrees with brute force, every solution re-checks, limits are
statuses, and the result does not depend on threads."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import skipsearch
from skipsearch import baseline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))
from families import absorption_int, market_split  # noqa: E402
from tests.conftest import interrupt  # noqa: E402


def brute_force(A, b, tol=None):
    n = A.shape[1]
    for bits in itertools.product((0, 1), repeat=n):
        s = np.array(bits)
        r = A @ s - b
        if (tol is None and not np.any(r)) or (
            tol is not None and np.linalg.norm(r) <= tol * np.linalg.norm(b)
        ):
            return s
    return None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 3),
    n=st.integers(1, 14),
    low=st.integers(-20, 0),
    planted=st.booleans(),
    duplicates=st.integers(0, 3),
)
def test_integer_agrees_with_brute_force(seed, k, n, low, planted, duplicates):
    rng = np.random.default_rng(seed)
    A = rng.integers(low, 21, size=(k, n))
    for _ in range(duplicates):
        A[:, rng.integers(n)] = A[:, rng.integers(n)]
    b = A @ rng.integers(0, 2, size=n) if planted else rng.integers(-30, 60, size=k)
    r = skipsearch.subset_sum(A, b)
    expected = brute_force(A, b)
    assert (r.status == "feasible") == (expected is not None), (A, b, r)
    assert r.exact
    if r.solution is not None:
        np.testing.assert_array_equal(A @ r.solution, b)
        assert set(np.unique(r.solution)) <= {0, 1}


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), k=st.integers(1, 3), n=st.integers(1, 12), planted=st.booleans())
def test_float_agrees_with_brute_force(seed, k, n, planted):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((k, n))
    b = A @ rng.integers(0, 2, size=n) if planted else rng.standard_normal(k)
    r = skipsearch.subset_sum(A, b)
    assert not r.exact
    if r.status == "feasible":
        assert np.linalg.norm(A @ r.solution - b) <= r.tolerance * np.linalg.norm(b) + 1e-300
    expected = brute_force(A, b, tol=r.tolerance)
    if r.status in ("feasible", "infeasible"):
        assert (r.status == "feasible") == (expected is not None)


@pytest.mark.parametrize("k", [3, 4, 5])
@pytest.mark.parametrize("seed", range(2))
def test_market_split(k, seed):
    for planted in (False, True):
        A, b = market_split(k, seed, planted)
        r = skipsearch.subset_sum(A, b)
        assert r.status in ("feasible", "infeasible")
        if planted:
            assert r.status == "feasible"
        if r.solution is not None:
            np.testing.assert_array_equal(A @ r.solution, b)


def test_market_split_three_rows_agrees_with_brute_force():
    for seed in range(3):
        A, b = market_split(3, seed)
        r = skipsearch.subset_sum(A, b)
        assert (r.status == "feasible") == (brute_force(A, b) is not None)


def test_presolve_proofs():
    r = skipsearch.subset_sum(np.array([[2, 4, 6]]), np.array([5]))
    assert r.status == "infeasible" and r.method == ("presolve: row gcd",)
    r = skipsearch.subset_sum(np.array([[1, 2], [3, 4]]), np.array([4, 1]))
    assert r.status == "infeasible" and r.method == ("presolve: row bounds",)
    r = skipsearch.subset_sum(np.zeros((2, 3), dtype=int), np.zeros(2, dtype=int))
    assert r.status == "feasible" and r.solution.tolist() == [0, 0, 0]


def test_threads_do_not_change_the_solution():
    A, b = market_split(5, 1, planted=True)
    sols = [skipsearch.subset_sum(A, b, threads=t).solution for t in (1, 2, 3)]
    for s in sols[1:]:
        np.testing.assert_array_equal(s, sols[0])
    A, b = market_split(5, 0)
    runs = [skipsearch.subset_sum(A, b, threads=t) for t in (1, 2)]
    assert runs[0].status == runs[1].status == "infeasible"
    assert runs[0].nodes == runs[1].nodes


def test_limits_are_statuses():
    A, b = market_split(6, 0)
    r = skipsearch.subset_sum(A, b, node_limit=10_000)
    assert r.status == "node_limit" and r.solution is None
    r = skipsearch.subset_sum(A, b, time_limit=0)
    assert r.status == "time_limit"


def test_agrees_with_the_absorption_baseline():
    for seed in range(4):
        for planted in (False, True):
            A, b, W_up, W_down = absorption_int(2, 12, seed, planted)
            r = skipsearch.subset_sum(A, b)
            base = baseline.find_absorbing_subset(W_up.astype(float), W_down.astype(float))
            assert (r.status == "feasible") == (base.subset is not None)


def test_bad_input():
    with pytest.raises(ValueError, match=r"b has shape \(3,\) but A has shape \(2, 4\)"):
        skipsearch.subset_sum(np.ones((2, 4)), np.ones(3))
    with pytest.raises(TypeError, match="A has complex dtype"):
        skipsearch.subset_sum(np.ones((2, 4)) * 1j, np.ones(2))
    with pytest.raises(ValueError, match="b contains NaN"):
        skipsearch.subset_sum(np.ones((1, 2)), np.array([np.nan]))


def test_integer_absorption_blocks_are_solved_exactly():
    # d = 3, m = 60 small integers: the float branch and bound stalls here;
    # the exact integer engine settles it.
    for planted in (False, True):
        A, b, W_up, W_down = absorption_int(3, 60, 0, planted)
        r = skipsearch.find_absorbing_subset(W_up, W_down)
        assert r.status == "complete"
        assert any(step.startswith("exact integer") for step in r.stats.method)
        assert r.verdict == "absorbable"
        E = W_down[:, r.subset] @ W_up[r.subset] + np.eye(3)
        assert not np.any(E)
    # Infeasible for 0/1 but exactly solvable in the reals: every entry of
    # W_down is even, so no flip set reaches -I.
    rng = np.random.default_rng(0)
    W_up = rng.integers(-3, 4, size=(30, 2)).astype(float)
    W_down = 2.0 * rng.integers(-2, 3, size=(2, 30))
    r = skipsearch.find_absorbing_subset(W_up, W_down)
    assert r.subset is None and r.relaxation_distance < 1e-9
    assert "exact integer" in r.stats.method[-1]


def test_ctrl_c_interrupts_the_enumeration():
    setup = f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1] / "benches")!r})
        import skipsearch
        from families import absorption_int
        A, b = absorption_int(4, 80, 0, False)[:2]  # about 10 s of enumeration
        skipsearch.subset_sum(A[:1, :40], b[:1])  # warm up the imports
    """
    code, out, waited = interrupt(setup, "skipsearch.subset_sum(A, b)", wait=1.0)
    assert (code, out) == (3, "interrupted")
    assert waited < 10
