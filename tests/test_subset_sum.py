"""subset_sum agrees with brute force, every solution re-checks, limits are
statuses, and the result does not depend on threads."""

from __future__ import annotations

import itertools
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import skipsearch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from skipsearch import baseline
from skipsearch._engine import (
    components,
    embedding,
    floats,
    integer_algebra,
    presolve,
    reduction,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))
from families import absorption_int, market_split
from market_split import DATA as QOBLIB
from market_split import read_instance

from tests.conftest import interrupt, needs_lattice


def brute_force(A, b, tol=None):
    """The first solution in binary order, or None: all 2^n subsets at once
    (n <= 20: 2^20 rows)."""
    n = A.shape[1]
    S = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    R = S @ A.T - b
    ok = ~np.any(R, axis=1) if tol is None else np.linalg.norm(R, axis=1) <= tol * np.linalg.norm(b)
    hits = np.flatnonzero(ok)
    return S[hits[0]] if hits.size else None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    k=st.integers(1, 3),
    n=st.integers(1, 20),
    low=st.integers(-20, 0),
    planted=st.booleans(),
    duplicates=st.integers(0, 3),
)
@pytest.mark.parametrize("engine", ["feasibility jump", "Schroeppel-Shamir", "lattice"])
def test_integer_agrees_with_brute_force(engine, seed, k, n, low, planted, duplicates):
    # The feasibility jump runs first; with no moves the exact engines take
    # every instance. Small components go to Schroeppel-Shamir; with its
    # threshold at 0 they take the heuristic-then-lattice path instead.
    components._LISTS_MAX = 0 if engine == "lattice" else 32
    if engine != "feasibility jump":
        presolve._JUMP_MOVES_PER_COLUMN = 0
    rng = np.random.default_rng(seed)
    A = rng.integers(low, 21, size=(k, n))
    for _ in range(duplicates):
        A[:, rng.integers(n)] = A[:, rng.integers(n)]
    b = A @ rng.integers(0, 2, size=n) if planted else rng.integers(-30, 60, size=k)
    try:
        r = skipsearch.subset_sum(A, b)
    finally:
        components._LISTS_MAX = 32
        presolve._JUMP_MOVES_PER_COLUMN = 20
    expected = brute_force(A, b)
    assert (r.status == "feasible") == (expected is not None), (A, b, r)
    assert r.exact
    if (
        r.status == "feasible"
        and engine != "feasibility jump"
        and not r.method[-1].startswith("presolve")
    ):
        assert any(
            step.startswith(engine) or (engine == "lattice" and step == "float heuristic")
            for step in r.method
        ), r.method
    if r.solution is not None:
        np.testing.assert_array_equal(A @ r.solution, b)
        assert set(np.unique(r.solution)) <= {0, 1}


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1), k=st.integers(1, 3), n=st.integers(1, 20), planted=st.booleans()
)
@pytest.mark.parametrize("engine", ["branch and bound", "meet in the middle"])
def test_float_agrees_with_brute_force(engine, seed, k, n, planted):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((k, n))
    b = A @ rng.integers(0, 2, size=n) if planted else rng.standard_normal(k)
    # One branch-and-bound node, then meeting in the middle settles it.
    floats._HEURISTIC_NODES = 1 if engine == "meet in the middle" else 20_000
    try:
        r = skipsearch.subset_sum(A, b)
    finally:
        floats._HEURISTIC_NODES = 20_000
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


def test_presolve_fixes_variables_and_splits_components(monkeypatch):
    monkeypatch.setattr(presolve, "_JUMP_MOVES_PER_COLUMN", 0)
    # Row 0 can only reach 10 with column 0 (fixed to 1) and never with
    # column 1 (fixed to 0); rows 1 and 2 share no column: two components,
    # which the row bounds leave open.
    A = np.array(
        [
            [10, 11, 0, 0, 0, 0, 0, 0],
            [0, 0, 3, 5, 4, 0, 0, 0],
            [0, 0, 0, 0, 0, 7, 2, 5],
        ]
    )
    b = np.array([10, 7, 7])
    r = skipsearch.subset_sum(A, b)
    assert r.status == "feasible" and r.solution[:5].tolist() == [1, 0, 1, 0, 1]
    np.testing.assert_array_equal(A @ r.solution, b)
    assert "presolve: 2 of 8 fixed" in r.method
    assert "presolve: 2 independent components" in r.method
    assert any(step.startswith("Schroeppel-Shamir") for step in r.method)
    # One infeasible component (no subset of 3, 5, 4 sums to 6) makes the
    # whole instance infeasible.
    r = skipsearch.subset_sum(A, np.array([10, 6, 7]))
    assert r.status == "infeasible" and r.solution is None
    # A variable that row bounds force both ways: infeasible at once.
    r = skipsearch.subset_sum(np.array([[5, 1], [5, 1]]), np.array([5, 1]))
    assert r.status == "infeasible" and r.method == (
        "presolve: row bounds fix a variable both ways",
    )


def test_feasibility_jump_recovers_planted_flip_sets():
    # Planted absorption instances: d neurons with W_up = I, W_down = -I.
    # The local search from zero recovers exactly those neurons in d moves,
    # before any presolve or exact engine runs.
    for d, m in ((3, 80), (4, 80)):
        for seed in range(3):
            A, b, W_up, W_down = absorption_int(d, m, seed, True)
            r = skipsearch.subset_sum(A, b)
            assert r.status == "feasible" and r.method == (f"feasibility jump ({d} moves)",)
            S = np.flatnonzero(r.solution)
            np.testing.assert_array_equal(W_up[S], np.eye(d)[np.argmax(W_up[S], axis=1)])
            np.testing.assert_array_equal(W_down[:, S] @ W_up[S], -np.eye(d, dtype=int))
    # The move budget is 20 per column, capped by its work; it never
    # decides infeasibility on its own.
    assert presolve._jump_moves(16, 80) == 1600
    assert presolve._jump_moves(100, 2000) == 20
    A, b = market_split(4, 1)  # infeasible
    r = skipsearch.subset_sum(A, b)
    assert r.status == "infeasible" and r.method[0] == "feasibility jump (600 moves)"
    assert any(step.startswith("Schroeppel-Shamir") for step in r.method)


def test_schroeppel_shamir_is_deterministic_and_bounded():
    from skipsearch import _core

    A, b = market_split(4, 0, planted=True)  # n = 30
    runs = [_core.schroeppel_shamir(A, b, None, None, t) for t in (1, 2, 3)]
    for run in runs[1:]:
        np.testing.assert_array_equal(run["solution"], runs[0]["solution"])
    np.testing.assert_array_equal(A @ runs[0]["solution"], b)
    # Quarter lists of 2^7 or 2^8 entries, not halves of 2^15.
    assert runs[0]["memory_bytes"] < 64 * 1024
    A, b = market_split(4, 1)  # infeasible
    out = _core.schroeppel_shamir(A, b, None, None, None)
    assert out["solution"] is None and out["stop"] is None
    # Every quarter sum and every pair sum of both sides: 2 * 2^15 pairs.
    assert out["nodes"] >= 2 * 2**15
    out = _core.schroeppel_shamir(A, b, None, 10, None)
    assert out["solution"] is None and out["stop"] == "node_limit"
    with pytest.raises(ValueError, match="at most 52 columns"):
        _core.schroeppel_shamir(np.ones((1, 60), dtype=np.int64), np.ones(1, dtype=np.int64))


def test_presolve_proofs():
    # The feasibility jump runs first (20 moves per column) and finds
    # nothing; the presolve proves why.
    r = skipsearch.subset_sum(np.array([[2, 4, 6, 8]]), np.array([9]))
    assert r.status == "infeasible" and r.method == (
        "feasibility jump (80 moves)",
        "presolve: row gcd",
    )
    r = skipsearch.subset_sum(np.array([[1, 2], [3, 4]]), np.array([4, 1]))
    assert r.status == "infeasible" and r.method == (
        "feasibility jump (40 moves)",
        "presolve: row bounds",
    )
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
    for limit in (1, 10_000, 50_000):
        r = skipsearch.subset_sum(A, b, node_limit=limit)
        assert r.status == "node_limit" and r.solution is None
        if any("lattice: LLL" in step for step in r.method):
            # Parallel lattice walkers add their nodes in batches of 1024.
            assert limit <= r.nodes <= limit + 1024 * 2, (limit, r.nodes)
        else:
            # Schroeppel-Shamir (no lattice extra) counts 2^14 per thread,
            # plus the pair list of the residue in hand.
            assert limit <= r.nodes <= limit + 2 * (2**14 + 2**13 * 2**6), (limit, r.nodes)
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


@needs_lattice
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
    # The reason names the step that proved it, here the row gcd.
    assert (
        "exact integer subset-sum engine proves no flip set exists (presolve: row gcd)" in r.reason
    )


@needs_lattice
def test_ctrl_c_interrupts_the_enumeration():
    setup = f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1] / "benches")!r})
        import skipsearch
        from families import market_split
        A, b = market_split(10, 0)  # more than a minute of search
        skipsearch.subset_sum(A[:1, :40], b[:1])  # warm up the imports
    """
    code, out, waited = interrupt(setup, "skipsearch.subset_sum(A, b)", wait=1.0)
    assert (code, out) == (3, "interrupted")
    assert waited < 10


def test_large_integers_are_solved_exactly():
    # Float64 cannot tell 2**41 + 1 from 2**41 + 1 - 1e-8 * ||b||: the exact
    # engine must not accept a near miss.
    r = skipsearch.subset_sum(np.array([[2**41, 3]]), np.array([2**41 + 1]))
    assert r.status == "infeasible" and r.exact
    r = skipsearch.subset_sum(np.array([[2**39, 2**39, 2**39]]), np.array([3 * 2**39 + 1]))
    assert r.status == "infeasible" and r.exact
    rng = np.random.default_rng(1)
    for k, n in ((1, 32), (3, 40)):
        A = rng.integers(-(2**39), 2**39, size=(k, n))
        b = A @ rng.integers(0, 2, n)
        r = skipsearch.subset_sum(A, b, time_limit=60)
        assert r.status == "feasible" and r.exact
        np.testing.assert_array_equal(A @ r.solution.astype(np.int64), b)
    # Integral floats above 2**53 are exact integers too.
    r = skipsearch.subset_sum(np.array([[2.0**55, 1.0]]), np.array([2.0**55]))
    assert r.status == "feasible" and r.solution.tolist() == [1, 0] and r.exact
    with pytest.raises(ValueError, match="below 2\\*\\*62"):
        skipsearch.subset_sum(np.array([[2**61, 2**61]]), np.array([1]))
    # The bound is exact: a row just below 2**62 is taken, at it refused.
    # (|A| + |b| = 2**62 - 3, which float64 sums to 2**62.)
    r = skipsearch.subset_sum([[2**61 - 2, 1]], [2**61 - 2])
    assert (r.status, r.solution.tolist(), r.exact) == ("feasible", [1, 0], True)
    with pytest.raises(ValueError, match="got 4611686018427387904"):
        skipsearch.subset_sum([[2**61 - 2, 1]], [2**61 + 1])
    # Float data beyond int64 are floats at heart (every float64 of 2**53 or
    # more is an integer): the float path, within its tolerance.
    for big in (2.0**62, 2.0**63, 2.0**70):
        r = skipsearch.subset_sum(np.array([[big, -1.0]]), np.array([-1.0]))
        assert (r.status, r.solution.tolist(), r.exact) == ("feasible", [0, 1], False)
    r = skipsearch.subset_sum(np.array([[1e20, 3e20, 7e20]]), np.array([4e20]), tol=1e-6)
    assert (r.status, r.solution.tolist(), r.exact) == ("feasible", [1, 1, 0], False)
    with pytest.raises(ValueError, match="2\\*\\*63 or more"):
        skipsearch.subset_sum(np.array([[2**63]], dtype=np.uint64), np.array([1]))


@needs_lattice
def test_duplicate_columns_are_aggregated_in_the_lattice(monkeypatch):
    # 12 distinct columns, each repeated 1 to 4 times (n = 31): the lattice
    # sees 12 bounded variables; the solution is spread over the copies.
    rng = np.random.default_rng(5)
    distinct = rng.integers(0, 50, size=(3, 12))
    A = np.repeat(distinct, rng.integers(1, 5, size=12), axis=1)
    monkeypatch.setattr(presolve, "_JUMP_MOVES_PER_COLUMN", 0)
    for planted in (True, False):
        b = A @ rng.integers(0, 2, A.shape[1]) if planted else A.sum(axis=1) // 2 + 1
        monkeypatch.setattr(components, "_LISTS_MAX", 0)
        r = skipsearch.subset_sum(A, b)
        assert any("duplicate columns merged" in step for step in r.method), r.method
        if planted:
            assert r.status == "feasible"
            np.testing.assert_array_equal(A @ r.solution, b)
        # Cross-check with Schroeppel-Shamir on the same instance.
        monkeypatch.setattr(components, "_LISTS_MAX", 52)
        other = skipsearch.subset_sum(A, b)
        assert any(
            step.startswith(f"Schroeppel-Shamir (n={A.shape[1]},") for step in other.method
        ), other.method
        assert other.status == r.status, (r, other)


@needs_lattice
def test_lattice_isolates_the_kernel_for_large_entries(monkeypatch):
    # 32-bit entries, 8 rows, 34 columns: with too small a first equation
    # weight (forced here: the real one separates these) the LLL basis holds
    # fewer kernel vectors than the kernel's dimension, and an enumeration
    # over that sublattice could miss solutions. The weight is raised until
    # the kernel separates; Schroeppel-Shamir is the oracle.
    from skipsearch import _core

    monkeypatch.setattr(presolve, "_JUMP_MOVES_PER_COLUMN", 0)
    monkeypatch.setattr(embedding, "_equation_scale", lambda norm_sq: 256)
    rng = np.random.default_rng(0)
    A = rng.integers(-(2**32) // 34, 2**32 // 34, (8, 34))
    s0 = (np.arange(34) < 17).astype(np.int64)
    for b in (A @ s0, A @ s0 + np.eye(8, dtype=np.int64)[0]):
        r = skipsearch.subset_sum(A, b, time_limit=60)
        assert "lattice: equation weight x 2^32, LLL" in r.method, r.method
        oracle = _core.schroeppel_shamir(A, b)
        assert r.status == ("feasible" if oracle["solution"] is not None else "infeasible")
        if r.solution is not None:
            np.testing.assert_array_equal(A @ r.solution.astype(np.int64), b)
    # Rank over the rationals, exact for entries far above float precision.
    assert integer_algebra._rank(np.array([[2**40, 2**41 + 1], [2**41, 2**42 + 2]])) == 1
    assert integer_algebra._rank(np.array([[1, 2, 3], [2, 4, 6], [1, 0, 1]])) == 2


def test_large_duplicated_columns_do_not_overflow():
    # Merging 38 duplicate columns raises the lattice weight; the reduced
    # basis holds integers beyond int64, of which only the kernel is read.
    g = 2**53
    A = np.array([[3 * g] * 20 + [5 * g] * 20])
    r = skipsearch.subset_sum(A, np.array([7 * g]))
    assert r.status == "infeasible" and r.exact  # 3u + 5v = 7 has no solution
    r = skipsearch.subset_sum(A, np.array([8 * g]))
    assert r.status == "feasible" and (A @ r.solution.astype(np.int64)).tolist() == [8 * g]


def test_colliding_fingerprints_are_cheap():
    # Every column a multiple of one vector: subset sums collide in bulk.
    d = np.array([-3881003, 599765, 13241896])
    A = np.outer(d, [3, 5] * 16)
    r = skipsearch.subset_sum(A, 7 * d, time_limit=5)
    assert r.status == "infeasible" and any(m.startswith("Schroeppel-Shamir") for m in r.method)


def test_float_meet_in_the_middle_proves_what_branch_and_bound_cannot(monkeypatch):
    # Float market split, 3 rows, 36 columns, entries in (1/7) Z and a
    # right-hand side off that grid by 0.05: infeasible. The null-space
    # branch and bound does not finish in 20 s here; meeting in the middle
    # on a projection proves it in milliseconds.
    rng = np.random.default_rng(36)
    A = rng.integers(0, 100, (3, 36)) / 7.0
    b = np.floor(A.sum(axis=1) / 2) + 0.05
    r = skipsearch.subset_sum(A, b, time_limit=30)
    assert r.status == "infeasible" and not r.exact
    assert r.method[-1] == "meet in the middle (projection, n=36, 6144 KiB)"
    # Planted: found, and within the tolerance.
    b = A @ (np.arange(36) % 3 == 0)
    r = skipsearch.subset_sum(A, b)
    assert r.status == "feasible"
    assert np.linalg.norm(A @ r.solution - b) <= r.tolerance * np.linalg.norm(b)
    # Beyond 40 columns the float path stays with branch and bound.
    monkeypatch.setattr(floats, "_FLOAT_MITM_MAX", 30)
    r = skipsearch.subset_sum(A, np.floor(A.sum(axis=1) / 2) + 0.05, node_limit=50_000)
    assert r.status == "node_limit" and "meet in the middle" not in " ".join(r.method)


@needs_lattice
def test_degenerate_kernel_vectors_beyond_the_radius_are_dropped(monkeypatch):
    # Three distinct columns with 32-bit entries, repeated: after merging,
    # the kernel lattice has a vector beyond int64. No solution can use it
    # (its exact Gram-Schmidt norm exceeds the radius), so it is dropped and
    # the enumeration finds the planted solution. When the lattice route
    # cannot finish, Schroeppel-Shamir takes over at this size.
    cols = np.array([[-3729969448, 3031720477, 3752432356], [2648324952, -1352658707, 3379170014]])
    order = [
        2,
        0,
        1,
        1,
        2,
        0,
        2,
        2,
        0,
        2,
        0,
        1,
        0,
        2,
        2,
        2,
        2,
        2,
        0,
        2,
        0,
        0,
        0,
        2,
        2,
        2,
        0,
        1,
        1,
        1,
        0,
        2,
        0,
        0,
        0,
    ]
    A = cols[:, order]
    b = np.array([2423323138, 24052987402])
    r = skipsearch.subset_sum(A, b)
    assert r.status == "feasible" and r.method[-1] == "enumeration", r.method
    assert "lattice: 1 basis vectors beyond the radius dropped (exact Gram-Schmidt)" in r.method
    np.testing.assert_array_equal(A @ r.solution.astype(np.int64), b)
    monkeypatch.setattr(
        components, "_lattice", lambda *args: (None, "incomplete", 0, 0, ["lattice: cut"])
    )
    r = skipsearch.subset_sum(A, b)
    assert r.status == "feasible" and r.method[-1].startswith("Schroeppel-Shamir (n=35,"), r.method
    np.testing.assert_array_equal(A @ r.solution.astype(np.int64), b)
    monkeypatch.undo()
    # Beyond what the lattice reduces, the answer is honest: no proof.
    A = np.random.default_rng(0).integers(0, 2**40, (1, 1000))
    r = skipsearch.subset_sum(A, A.sum(axis=1) // 2 + 1, time_limit=30)
    assert r.status == "incomplete" and "beyond the 600 reduced here" in r.method[-1]


def test_schroeppel_shamir_avoids_a_prime_dividing_every_entry():
    # Every entry a multiple of the prime the residues would use (8209 at
    # n = 52) would put all 2^26 left pairs in one list.
    from skipsearch import _core

    rng = np.random.default_rng(0)
    A = rng.integers(0, 100, (3, 52)) * 8209
    s0 = rng.integers(0, 2, 52)
    out = _core.schroeppel_shamir(A, A @ s0, None, None, None)
    np.testing.assert_array_equal(A @ out["solution"].astype(np.int64), A @ s0)
    assert out["memory_bytes"] < 4 << 20


@needs_lattice
def test_time_limit_stops_the_lattice_reduction():
    # LLL of this 90 x 100 system with 30-bit entries takes over ten seconds.
    rng = np.random.default_rng(0)
    A = rng.integers(0, 2**30, (90, 100))
    t = time.perf_counter()
    r = skipsearch.subset_sum(A, A.sum(axis=1) // 2, time_limit=1.0)
    assert r.status == "time_limit" and time.perf_counter() - t < 5


@needs_lattice
def test_tiny_time_limits_never_hang_the_reduction():
    # A cysignals alarm stopped fpylll's LLL at the deadline; one landing
    # inside malloc deadlocked the process (a breaker's loop hung within 10
    # calls). Reductions are no longer interrupted: every call returns.
    script = """
import numpy as np, skipsearch
rng = np.random.default_rng(0)
A = rng.integers(0, 100, (5, 40)); b = A.sum(axis=1) // 2
for i in range(60):
    r = skipsearch.subset_sum(A, b, time_limit=float(rng.uniform(1e-4, 2e-2)), threads=1)
    # Infeasible (a complete search says so in 25 ms): no other answer.
    assert r.status in ("infeasible", "time_limit"), r.status
print("returned", i + 1)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["returned", "60"]


def test_integer_route_respects_a_tolerance_above_integer_resolution():
    # With tol * ||A|| >= 1, flip sets within tol need not be exact integer
    # solutions: the exact engine's "none" would prove nothing. Here one
    # subset is within 5e-6 of -A, so "not_absorbable" would be wrong.
    W_up = np.array(
        [
            [-8, 3, -4],
            [-6, 9, 0],
            [-3, -1, 5],
            [9, 6, 5],
            [-9, -2, 4],
            [2, 4, -1],
            [-3, -4, -7],
            [-7, 0, 0],
        ],
        float,
    )
    W_down = np.array([[-2, -8, 4, 9, 8, 7, -8, -5], [-7, 1, -7, -8, 0, 4, -9, -6]], float) * 1000
    skip = np.array([[-146000, -20000, -134000], [-55000, 7999, -47000]], float)
    S = [0, 1, 3, 4, 5, 6, 7]
    assert np.linalg.norm(W_down[:, S] @ W_up[S] + skip) / np.linalg.norm(skip) < 5e-6
    r = skipsearch.find_absorbing_subset(W_up, W_down, skip=skip, tol=3.5e-4)
    assert r.verdict != "not_absorbable"
    assert not any("exact integer" in step for step in r.stats.method)


def test_without_the_lattice_extra_the_core_lll_decides_from_33_columns(without_lattice):
    # 40 columns: the lattice's share, on the core's LLL without fpylll.
    for planted in (True, False):
        A, b = market_split(5, 3, planted)
        r = skipsearch.subset_sum(A, b)
        assert reduction.LATTICE_CORE in r.method
        assert not any(step.startswith("Schroeppel-Shamir") for step in r.method), r.method
        if planted:
            assert r.status == "feasible"
            np.testing.assert_array_equal(A @ r.solution, b)
        else:
            assert r.status == "infeasible" and r.solution is None


def market_split_beyond_the_lists(seed, planted):
    """7 x 54 market splits: past the 52 columns Schroeppel-Shamir takes
    when the lattice fails, so only the lattice route decides them. Unplanted (b = floor(sum / 2)), seeds 0-2 are
    infeasible, as the depth-first search with fpylll's bases shows too."""
    rng = np.random.default_rng([54, seed])
    A = rng.integers(0, 100, size=(7, 54))
    b = A @ rng.integers(0, 2, 54) if planted else A.sum(axis=1) // 2
    return A, b


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("planted", [True, False])
def test_without_the_lattice_extra_the_core_lll_decides_beyond_52_columns(
    seed, planted, without_lattice
):
    A, b = market_split_beyond_the_lists(seed, planted)
    r = skipsearch.subset_sum(A, b, threads=2)
    assert reduction.LATTICE_CORE in r.method
    reductions = [step for step in r.method if step != reduction.LATTICE_CORE]
    assert not any("BKZ" in step for step in reductions), r.method
    if planted:
        assert r.status == "feasible"
        np.testing.assert_array_equal(A @ r.solution, b)
    else:
        assert r.status == "infeasible" and r.solution is None
        assert r.method[-1] == "depth-first enumeration ran to its end: infeasible"


@needs_lattice
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_core_lll_and_fpylll_agree_on_infeasibility(seed, monkeypatch):
    A, b = market_split_beyond_the_lists(seed, planted=False)
    with_fpylll = skipsearch.subset_sum(A, b)
    monkeypatch.setitem(sys.modules, "fpylll", None)
    with_core = skipsearch.subset_sum(A, b)
    assert with_fpylll.status == with_core.status == "infeasible"
    assert reduction.LATTICE_CORE in with_core.method
    assert reduction.LATTICE_CORE not in with_fpylll.method


def duplicate_heavy(seed):
    """A breaker's family: 2-6 rows of 20-bit entries, 3-7 distinct
    columns, 40-89 columns in all (so many copies of each), and a planted
    solution. Their kernel lattices hold vectors of 2^50 to 2^80 beside
    short ones."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 7))
    distinct = rng.integers(-(2**20), 2**20, size=(k, int(rng.integers(3, 8))))
    A = distinct[:, rng.integers(0, distinct.shape[1], size=int(rng.integers(40, 90)))]
    return A, A @ rng.integers(0, 2, size=A.shape[1])


def has_solution_with_copies(A, b):
    """Exact truth for few distinct columns: meet in the middle over the
    merged counts ``x_j in 0..c_j``, in Python integers."""
    U, counts = np.unique(A, axis=1, return_counts=True)
    n = U.shape[1]

    def sums(cols):
        return {
            tuple(sum(int(U[i, j]) * x for j, x in zip(cols, xs)) for i in range(U.shape[0]))
            for xs in itertools.product(*(range(int(counts[j]) + 1) for j in cols))
        }

    left, right = sums(range(n // 2)), sums(range(n // 2, n))
    return any(tuple(int(t) - v for t, v in zip(b, s)) in right for s in left)


#: Seeds of ``duplicate_heavy`` that ended incomplete before kernel vectors
#: beyond the radius were dropped (with fpylll, or without it, or both).
DUPLICATE_HEAVY_SEEDS = [0, 1, 5, 6, 7, 13, 15, 16, 19, 24, 28, 41, 50, 52, 54, 58, 59]


@pytest.mark.parametrize(
    "lean", [pytest.param(False, marks=needs_lattice, id="fpylll"), pytest.param(True, id="core")]
)
def test_duplicate_heavy_instances_are_settled_exactly(lean, monkeypatch):
    if lean:
        monkeypatch.setitem(sys.modules, "fpylll", None)
    infeasible = 0
    for seed in DUPLICATE_HEAVY_SEEDS:
        A, b = duplicate_heavy(seed)
        for target in (b, b + 1):
            r = skipsearch.subset_sum(A, target, time_limit=60)
            assert r.status in ("feasible", "infeasible"), (seed, r.method)
            if r.status == "feasible":
                np.testing.assert_array_equal(A @ r.solution.astype(np.int64), target)
            else:
                assert target is not b and not has_solution_with_copies(A, target), seed
                infeasible += 1
    assert infeasible >= 5  # the shifted targets are mostly infeasible


def test_without_the_lattice_extra_deep_insertions_end_on_a_sparse_kernel(without_lattice):
    # A breaker's case: 20 x 116, 10% nonzero entries up to 2^40. Unbounded
    # deep insertions on its 84-dimensional kernel basis made over 380,000
    # swaps (28 s on an Intel Xeon, model 167); past 8 d^2 swaps the
    # reduction now goes on as plain LLL, and the planted solution is found
    # in about 5 s there.
    rng = np.random.default_rng(1)
    A = rng.integers(-(2**40), 2**40, size=(20, 116)) * (rng.random((20, 116)) < 0.1)
    b = A @ rng.integers(0, 2, 116)
    r = skipsearch.subset_sum(A, b, time_limit=25)
    assert r.status == "feasible", r.method
    np.testing.assert_array_equal(A @ r.solution.astype(np.int64), b)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 4).flatmap(
        lambda d: st.tuples(
            st.lists(
                st.lists(st.integers(-(2**30), 2**30), min_size=d + 1, max_size=d + 1),
                min_size=d,
                max_size=d,
            ),
            st.lists(st.integers(-2, 2), min_size=d, max_size=d),
        )
    )
)
def test_rows_dropped_beyond_the_radius_are_used_by_no_vector_within_it(case):
    rows, a = case
    d = len(rows)
    G = [[sum(x * y for x, y in zip(u, v)) for v in rows] for u in rows]
    if d and integer_algebra._exact_rank(np.array(rows, dtype=object)) < d:
        return
    # The minors give the exact Gram-Schmidt norms.
    minors = integer_algebra._leading_minors(G)
    star, norms = [], []
    for r in rows:
        v = [Fraction(x) for x in r]
        for s, n in zip(star, norms):
            mu = sum(x * y for x, y in zip(r, s)) / n
            v = [x - mu * y for x, y in zip(v, s)]
        star.append(v)
        norms.append(sum(x * x for x in v))
    assert [Fraction(minors[k + 1], minors[k]) for k in range(d)] == norms
    # A radius reached by one small combination: every combination within
    # it leaves the dropped rows out.
    radius_sq = sum(sum(c * r[t] for c, r in zip(a, rows)) ** 2 for t in range(d + 1))
    kept = len(embedding._within_radius(rows, radius_sq, []))
    for coeffs in itertools.product(range(-3, 4), repeat=d):
        v = [sum(c * r[t] for c, r in zip(coeffs, rows)) for t in range(d + 1)]
        if sum(x * x for x in v) <= radius_sq:
            assert not any(coeffs[kept:]), (coeffs, kept)
    assert not any(a[kept:])


def test_without_the_lattice_extra_qoblib_ms_07_is_solved(without_lattice):
    A, b = read_instance(QOBLIB / "ms_07_050_001.dat")
    r = skipsearch.subset_sum(A, b, threads=2, time_limit=60)
    assert r.status == "feasible"
    np.testing.assert_array_equal(A @ r.solution, b)


def test_float_a_with_a_huge_integral_b_takes_the_float_path():
    # b alone is integral (and beyond 2**62); A is not, so b is float data.
    r = skipsearch.subset_sum(np.array([[0.5, 1e19]]), np.array([1e19]))
    assert r.status == "feasible" and not r.exact
    np.testing.assert_array_equal(r.solution, [0, 1])


def test_schroeppel_shamir_limits_hold_in_one_huge_residue(without_lattice):
    # A breaker's case: the first 26 columns are multiples of the lists'
    # modulus (8209 at 52 columns), so every left pair shares one residue.
    # The lists are the fallback when the lattice cannot be used.
    p = 8209
    rng = np.random.default_rng(0)
    a = p * rng.integers(1, 1000, 52)
    a[-1] = 1
    A = a[None, :]
    b = np.array([p * int(a[:-1].sum() // p) // 2 + 2])
    for time_limit, node_limit, stop in ((0.1, None, "time_limit"), (None, 100_000, "node_limit")):
        start = time.perf_counter()
        x, status, *_ = components._lists(A, b, time_limit, node_limit, None)
        assert status == stop and x is None
        assert time.perf_counter() - start < 5.0
    # Every subset sums to 0 or 1 modulo p, and b does not: the lattice
    # route (the core's LLL here) proves it.
    assert int(b[0]) % p not in (0, 1)
    r = skipsearch.subset_sum(A, b)
    assert r.status == "infeasible" and reduction.LATTICE_CORE in r.method


def test_integer_blocks_with_large_entries_reach_the_exact_engine():
    # A breaker's case: skip entries of about 2e6 once kept the block from
    # the exact integer engine, and the float branch and bound ran on.
    rng = np.random.default_rng(0)
    m = 46
    U = rng.integers(-1000, 1001, (m, 2)).astype(float)
    D = rng.integers(-1000, 1001, (2, m)).astype(float)
    S = np.flatnonzero(rng.random(m) < 0.5)
    planted = -(D[:, S] @ U[S])
    assert np.abs(planted).max() > 2**20
    r = skipsearch.find_absorbing_subset(U, D, skip=planted, time_limit=60)
    assert r.verdict == "absorbable" and r.residual == 0.0
    np.testing.assert_array_equal(D[:, r.subset] @ U[r.subset], -planted)
    off = planted + np.array([[1.0, 0.0], [0.0, 0.0]])
    r = skipsearch.find_absorbing_subset(U, D, skip=off, time_limit=60)
    assert r.verdict == "not_absorbable" and r.argument == "exact_integer", r.reason


@needs_lattice
def test_find_absorbing_subset_reaches_the_lattice_engine_on_market_split_blocks():
    # QOBLIB's ms_07_050_001 as a ReLU block: W_up a column of ones (d_in =
    # 1), W_down the market split's A (d_out = 7, m = 60), skip -b. A flip
    # set S then satisfies W_down[:, S] @ 1 = b, the market split itself.
    A, b = read_instance(QOBLIB / "ms_07_050_001.dat")
    W_up = np.ones((A.shape[1], 1))
    W_down = A.astype(float)
    skip = -b[:, None].astype(float)
    r = skipsearch.find_absorbing_subset(W_up, W_down, skip=skip, time_limit=120)
    assert r.verdict == "absorbable" and r.status == "complete"
    assert any("closest-vector form" in step for step in r.stats.method), r.stats.method
    np.testing.assert_array_equal(A[:, r.subset].sum(axis=1), b)
    # The witness block reproduces A x + f(x) at random inputs.
    x = np.random.default_rng(0).normal(size=(5, 1))
    g = r.block
    want = x @ skip.T + np.maximum(x @ W_up.T, 0) @ W_down.T
    np.testing.assert_allclose(g(x), want, rtol=1e-9, atol=1e-6)


def _rank_fooling_instance(planted: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two rows in the lattice of vectors whose every 2x2 minor is divisible
    by the three primes of the modular rank (entries near 2^52): the rank
    modulo each prime is 1, the rational rank 2."""
    import random

    primes = (2_147_483_647, 2_147_483_629, 2_147_483_587)
    modulus = primes[0] * primes[1] * primes[2]
    rnd = random.Random(1)
    lam = [rnd.randrange(1, p) for p in primes]
    ell = sum(c * (modulus // p) * pow(modulus // p, -1, p) for p, c in zip(primes, lam)) % modulus
    u, v = [1, ell], [0, modulus]

    def dot(a: list[int], b: list[int]) -> int:
        return a[0] * b[0] + a[1] * b[1]

    while True:  # Gauss reduction of the lattice {(x, ell x) mod modulus}
        if dot(u, u) > dot(v, v):
            u, v = v, u
        mu = (2 * dot(u, v) + dot(u, u)) // (2 * dot(u, u))
        if mu == 0:
            break
        v = [v[0] - mu * u[0], v[1] - mu * u[1]]
    rng = random.Random(2)
    coefficients = [(7 * rng.randint(-14, 14), rng.randint(-100, 100)) for _ in range(80)]
    A = np.array([[c1 * u[i] + c2 * v[i] for c1, c2 in coefficients] for i in range(2)])
    x = np.array([rng.randint(0, 1) for _ in range(80)], dtype=np.uint8)
    b = A @ x + (0 if planted else np.array(u))
    return A.astype(np.int64), b.astype(np.int64), x


def test_exact_rank_is_not_fooled_by_the_modular_one():
    from skipsearch._engine.integer_algebra import _modular_rank, _rank

    A, b, _ = _rank_fooling_instance(planted=True)
    M = np.column_stack([A, b])
    assert _modular_rank(M) == 1
    assert _rank(M) == 2 == np.linalg.matrix_rank(M.astype(float))


def test_modular_rank_stops_at_full_rank_and_agrees_with_the_exact_rank(monkeypatch):
    module = integer_algebra
    rng = np.random.default_rng(7)
    for rows, cols in [(6, 51), (9, 81), (5, 3), (4, 4)]:
        M = rng.integers(-50, 50, size=(rows, cols))
        assert module._modular_rank(M) == module._exact_rank(M) == min(rows, cols)
    # A rank-deficient matrix: every prime is tried and none overstates it.
    low = rng.integers(-5, 5, size=(6, 2)) @ rng.integers(-5, 5, size=(2, 40))
    assert module._modular_rank(low) == module._exact_rank(low) == 2
    # Full rank modulo the first prime: the other two are never needed.
    seen = []
    real_mod = np.mod

    def spy(a, p, *args, **kwargs):
        seen.append(p)
        return real_mod(a, p, *args, **kwargs)

    monkeypatch.setattr(module.np, "mod", spy)
    module._modular_rank(rng.integers(-50, 50, size=(6, 51)))
    assert module._RANK_PRIMES[0] in seen
    assert not set(seen) & set(module._RANK_PRIMES[1:])


@needs_lattice
def test_a_planted_solution_is_found_when_the_modular_rank_is_short():
    # Before the exact rank, the lattice expected one kernel vector too many
    # and answered "incomplete".
    A, b, _ = _rank_fooling_instance(planted=True)
    r = skipsearch.subset_sum(A, b, threads=1)
    assert r.status == "feasible"
    assert [int(v) for v in A.astype(object) @ r.solution.astype(object)] == b.tolist()


@needs_lattice
def test_an_enumeration_that_found_the_solution_counts_its_nodes():
    # Listed down to its leaves, the tree was searched while its prefixes
    # were listed: those nodes count (they were reported as 0).
    rng = np.random.default_rng(2)
    W_up, W_down = rng.integers(0, 10, (36, 2)), rng.integers(0, 10, (2, 36))
    S = rng.integers(0, 2, 36).astype(bool)
    A = -(W_down[:, S] @ W_up[S])
    A[0, 0] += 1
    cols = np.einsum("pi,iq->pqi", W_down, W_up).reshape(4, 36)
    r = skipsearch.subset_sum(cols, -A.reshape(-1), threads=1)
    assert r.status == "feasible"
    # The first search on the LLL basis, limited discrepancy, found it.
    assert r.method[-1].startswith("limited discrepancy (LLL basis")
    assert r.nodes > 0


@pytest.mark.parametrize(
    ("A", "b", "name"),
    [
        ([[1, 2]], [2**64], "b"),
        ([[2**70, 5, 7, 9]], [5], "A"),
        ([[-(2**63) - 1, 1]], [1], "A"),
        ([[2**63 + 1, 1]], [2**63 + 2], "A"),
    ],
)
def test_integers_beyond_int64_are_named(A, b, name):
    with pytest.raises(ValueError, match=rf"^{name} has integers of magnitude 2\*\*63 or more"):
        skipsearch.subset_sum(A, b)


@needs_lattice
def test_the_float_heuristic_runs_only_before_a_slow_reduction(monkeypatch):
    # MS(5): fpylll's LLL of its embedding is predicted at about 13 ms, so
    # the lattice comes first; QOBLIB's ms_08 (predicted 0.12 s) keeps the
    # heuristic. The answer does not depend on it.
    A, b = market_split(5, 1)
    predicted = embedding._lll_predicted_seconds(A, b)
    assert 0.005 < predicted < components._HEURISTIC_LLL_SECONDS
    large = read_instance(QOBLIB / "ms_08_050_001.dat")
    assert embedding._lll_predicted_seconds(*large) > 0.1
    # The same prediction as the one that guards fpylll's LLL, on the
    # embedding itself (0/1 columns, none merged here).
    rows = embedding._embedding(
        A,
        b,
        np.ones(A.shape[1], dtype=np.int64),
        embedding._HOMOGENISING_WEIGHT,
        embedding._equation_scale(A.shape[1] + 1 + embedding._HOMOGENISING_WEIGHT**2),
    )
    bits = max(max(max(r), -min(r)).bit_length() for r in rows)
    d, k = len(rows), len(rows[0]) - len(rows)
    assert predicted == reduction._LLL_SECONDS_PER_UNIT * d * d * k * k * bits
    r = skipsearch.subset_sum(A, b, threads=1)
    assert "float heuristic" not in r.method, r.method
    assert r.method[2] == "lattice: LLL (closest-vector form)", r.method
    monkeypatch.setattr(components, "_HEURISTIC_LLL_SECONDS", 0.0)
    r2 = skipsearch.subset_sum(A, b, threads=1)
    assert r2.method[2] == "float heuristic", r2.method
    assert r.status == r2.status == "feasible"
    np.testing.assert_array_equal(r.solution, r2.solution)
    np.testing.assert_array_equal(A @ r.solution.astype(np.int64), b)


def test_the_result_prints_its_solution_under_its_own_name():
    # The printout names the attribute a user reads (`solution`), with the
    # indices of its ones: a newcomer looked for the `ones` it once showed.
    found = skipsearch.subset_sum(np.array([[1, 2, 3, 4]]), np.array([5]))
    assert found.solution.tolist() == [1, 0, 0, 1]
    assert "solution=<4 entries, ones at [0, 3]>" in repr(found)
    none = skipsearch.subset_sum(np.array([[2, 4]]), np.array([3]))
    assert "solution=None" in repr(none) and "ones=" not in repr(none)


def _ms_embedding(k: int, seed: int) -> list[list[int]]:
    A, b = market_split(k, seed)[:2]
    A, _, c = np.unique(A, axis=1, return_inverse=True, return_counts=True)
    radius_sq = float(np.sum(np.append(c, 1).astype(float) ** 2))
    weight, scale = embedding._embedding_weights(radius_sq)
    return embedding._embedding(A, b, c, weight, scale)


@needs_lattice
def test_the_machine_integer_lll_gives_fplll_s_proved_basis():
    # fplll's default LLL runs the same reduction and then proves it; the
    # checked 64-bit run must give its very basis.
    from fpylll import LLL, IntegerMatrix

    for k, seed in ((3, 0), (4, 1), (5, 2), (6, 3)):
        rows = _ms_embedding(k, seed)
        fast = reduction._lll_in_machine_integers(rows)
        proved = IntegerMatrix.from_matrix(rows)
        LLL.reduction(proved)
        expected = [[0] * proved.ncols for _ in range(proved.nrows)]
        proved.to_matrix(expected)
        assert fast == expected, (k, seed)


@needs_lattice
def test_a_basis_not_shown_to_span_the_lattice_is_refused():
    from fpylll import GSO, LLL, IntegerMatrix

    rows = _ms_embedding(4, 0)
    d = len(rows)
    M = IntegerMatrix.from_matrix(rows)
    U, V = IntegerMatrix.identity(d), IntegerMatrix.identity(d)
    LLL.Reduction(GSO.Mat(M, U=U, UinvT=V))()
    R, T, W = ([[0] * m.ncols for _ in range(d)] for m in (M, U, V))
    for m, out in zip((M, U, V), (R, T, W)):
        m.to_matrix(out)
    B = np.array(rows, dtype=np.int64)
    same = reduction._same_lattice
    assert same(B, R, T, W)
    # One entry off: not the transform's image.
    off = [row[:] for row in R]
    off[3][0] += 2
    assert not same(B, off, T, W)
    # A row doubled in both: still the image, but of a sublattice of index 2.
    R2, T2 = [row[:] for row in R], [row[:] for row in T]
    R2[0], T2[0] = [2 * v for v in R2[0]], [2 * v for v in T2[0]]
    assert not same(B, R2, T2, W)
    # True, but with products that might leave int64: not trusted.
    shift = 62 - int(np.abs(B).max()).bit_length() - 2
    wide_R = [[v << shift for v in row] for row in R]
    assert max(abs(v) for row in wide_R for v in row) < 2**63
    assert d * max(abs(v) for row in T for v in row) * (int(np.abs(B).max()) << shift) >= 2**63
    assert not same(B << shift, wide_R, T, W)


@needs_lattice
def test_lll_falls_back_to_the_proved_reduction(monkeypatch):
    rows = _ms_embedding(5, 1)
    before, failed = reduction._lll(rows, None)
    monkeypatch.setattr(reduction, "_same_lattice", lambda *a: False)
    after, failed_after = reduction._lll(rows, None)
    assert failed is None and failed_after is None
    assert after == before and len(after) == len(rows)
    # Entries beyond the machine-integer bound skip the fast run.
    wide = [[v << 50 for v in row] for row in rows]
    assert reduction._lll_in_machine_integers(wide) is None


def test_only_exact_integer_claims_pass_the_lattice_check():
    # Floats would be truncated and unsigned 64-bit entries would wrap
    # before the exact comparison: both are refused, as are wrong shapes.
    same = reduction._same_lattice
    B = np.array([[1, 2], [3, 4]], dtype=np.int64)
    identity = [[1, 0], [0, 1]]
    assert same(B, B.tolist(), identity, identity)
    assert not same(B, [[1.5, 2], [3, 4]], identity, identity)
    assert not same(B, [[2**64 - 1, 2], [3, 4]], identity, identity)
    assert not same(B, B.tolist(), [[1, 0, 0], [0, 1, 0]], identity)
    assert not same(B, [[1, 2]], identity, identity)
