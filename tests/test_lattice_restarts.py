"""The lattice engine's portfolio: limited-discrepancy restarts taking turns
with the complete depth-first search, which goes on where it stopped. Every
answer re-checked, infeasibility only with a complete search behind it, and
statuses that agree with an independent complete method
(Schroeppel-Shamir)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
import skipsearch
from hypothesis import given, settings
from hypothesis import strategies as st
from skipsearch import _core
from skipsearch._engine import embedding, kernel_search, portfolio, reduction

from tests.conftest import interrupt, needs_lattice

BENCHES = Path(__file__).resolve().parents[1] / "benches"
sys.path.insert(0, str(BENCHES))
from families import market_split
from market_split import DATA, read_instance


def restarts_always(monkeypatch):
    """Send every instance that reaches BKZ to the restarts taking turns with
    the depth-first search, whatever its estimated tree."""
    monkeypatch.setattr(portfolio, "_RESTART_MIN_NODES", 0.0)


@needs_lattice
@pytest.mark.parametrize("name", ["ms_09_050_001", "ms_09_050_002"])
def test_qoblib_ms_09_falls_to_limited_discrepancy(name):
    # 9 x 80 market splits: depth first on the BKZ-20 basis took 30 to 100 s.
    A, b = read_instance(DATA / f"{name}.dat")
    r = skipsearch.subset_sum(A, b, time_limit=120)
    assert r.status == "feasible"
    np.testing.assert_array_equal(A @ r.solution.astype(np.int64), b)
    assert any(step.startswith("estimate:") for step in r.method), r.method
    assert any(step.startswith("limited discrepancy on") for step in r.method), r.method


@needs_lattice
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("seed", range(4))
def test_restarts_agree_with_schroeppel_shamir(monkeypatch, seed, threads):
    # MS(6): 50 columns, within reach of the four-list search, which is
    # complete and shares no code with the lattice.
    restarts_always(monkeypatch)
    A, b = market_split(6, seed)
    truth = _core.schroeppel_shamir(A, b, None, None, 2)
    assert truth["stop"] is None
    r = skipsearch.subset_sum(A, b, threads=threads)
    assert r.status == ("infeasible" if truth["solution"] is None else "feasible")
    if r.solution is not None:
        np.testing.assert_array_equal(A @ r.solution.astype(np.int64), b)
    if r.status == "infeasible":
        # Proved by a search that ran to its end, and the method says which.
        assert r.method[-1].endswith("ran to its end: infeasible"), r.method


@needs_lattice
def test_the_depth_first_turns_prove_infeasibility(monkeypatch):
    # MS(7, 0) is infeasible: the limited-discrepancy restarts cannot end
    # it, the depth-first search does, over several turns (small units, so
    # that it needs more than one).
    restarts_always(monkeypatch)
    monkeypatch.setattr(portfolio, "_RESTART_UNIT", 1 << 20)
    A, b = market_split(7, 0)
    r = skipsearch.subset_sum(A, b, threads=2)
    assert r.status == "infeasible"
    turns = [step for step in r.method if step.startswith("depth-first enumeration (")]
    assert len(turns) == 1 and int(turns[0].split("(")[1].split()[0]) > 1, r.method
    assert r.method[-1] == "depth-first enumeration ran to its end: infeasible"


@needs_lattice
def test_a_small_tree_is_searched_to_its_end_after_one_short_pass():
    # MS(7, 0) estimates below _RESTART_MIN_NODES: one limited-discrepancy
    # pass on the BKZ-20 basis, then a single depth-first turn to the end.
    A, b = market_split(7, 0)
    r = skipsearch.subset_sum(A, b, threads=2)
    assert r.status == "infeasible"
    assert any(step.startswith("limited discrepancy (BKZ-20 basis") for step in r.method)
    assert "depth-first enumeration (to the end)" in r.method, r.method
    assert r.method[-1] == "depth-first enumeration ran to its end: infeasible"


@needs_lattice
def test_one_thread_is_repeatable(monkeypatch):
    restarts_always(monkeypatch)
    A, b = read_instance(DATA / "ms_07_050_001.dat")
    runs = [skipsearch.subset_sum(A, b, threads=1) for _ in range(2)]
    for r in runs:
        assert r.status == "feasible"
        np.testing.assert_array_equal(A @ r.solution.astype(np.int64), b)
    np.testing.assert_array_equal(runs[0].solution, runs[1].solution)
    assert runs[0].nodes == runs[1].nodes and runs[0].method == runs[1].method


@needs_lattice
def test_node_limit_in_the_restarts_is_a_status(monkeypatch):
    restarts_always(monkeypatch)
    A, b = market_split(7, 0)
    r = skipsearch.subset_sum(A, b, node_limit=3_000_000)
    assert r.status == "node_limit" and r.solution is None
    assert r.nodes <= 3_000_000 + 1024 * 2


@needs_lattice
def test_time_limit_in_the_portfolio_is_a_status(monkeypatch):
    restarts_always(monkeypatch)
    A, b = market_split(10, 0)
    r = skipsearch.subset_sum(A, b, time_limit=1.5, threads=2)
    assert r.status == "time_limit" and r.solution is None
    assert r.seconds < 10


def test_knuth_estimate_is_close_to_the_tree_it_estimates():
    # Z^3, radius^2 3, bounds 1 (centres 0, Hoelder never prunes here). The
    # tree, counted by hand: the root; the top vector e_2 alone carries the
    # last coordinate, whose entry must be +-1, so the top level (only one
    # sign of each vector is searched) takes the value 1 only; under it,
    # level 1 takes 1 and -1 (entry 1 is final there, so 0 is cut), and
    # each of those the three values of level 0: 1 + 1 + 2 + 6 = 10 nodes.
    basis = np.eye(3, dtype=np.int64)
    bounds = np.ones(3, dtype=np.int64)
    estimate = _core.estimate_nodes(basis, bounds, 3.0, 20_000)
    assert abs(estimate - 10.0) < 0.05 * 10.0, estimate
    # The same seed every call: repeatable.
    assert _core.estimate_nodes(basis, bounds, 3.0, 20_000) == estimate
    with pytest.raises(ValueError, match="bounds"):
        _core.estimate_nodes(basis, np.ones(2, dtype=np.int64), 3.0)
    with pytest.raises(ValueError, match="radius_sq"):
        _core.estimate_nodes(basis, bounds, float("nan"))


def test_core_inputs_fail_fast():
    basis = np.array([[1, 1, 1], [1, -1, 1]], dtype=np.int64)
    bounds = np.ones(3, dtype=np.int64)
    for bad in (1, "x", object()):
        with pytest.raises(TypeError, match="stop_event"):
            _core.enumerate_bounded(basis, bounds, 1e10, 10, time_limit=30.0, stop_event=bad)
    with pytest.raises(ValueError, match="dives"):
        _core.estimate_nodes(basis, bounds, 3.0, 10**10)
    # A radius beyond what the bounds allow is cut to |c|^2 = 3: with no
    # limit at all, the search ends at once with both +-1 vectors of this
    # lattice, up to sign (a radius of 1e300 ran for minutes before).
    for radius in (2e7, 1e300):
        out = _core.enumerate_bounded(basis, bounds, radius, 10)
        assert out["stop"] is None and out["seconds"] < 5.0
        assert sorted(map(tuple, np.abs(out["solutions"]))) == [(1, 1, 1)] * 2
    # Bounds so large that one level has more values than could be listed
    # as prefixes: the search still runs under its limits (it used to list
    # them all first, for seconds and gigabytes), ends in time, and what it
    # found are vectors of this lattice within the bounds.
    wide = np.full(3, 10**7, dtype=np.int64)
    out = _core.enumerate_bounded(basis, wide, 1e300, 2, time_limit=5.0, node_limit=10**6)
    assert out["stop"] in (None, "node_limit") and out["seconds"] < 5.0
    assert out["nodes"] <= 10**6 + 1024 * 16
    for y in out["solutions"]:
        assert np.all(np.abs(y) <= 10**7) and np.all(y % 2 == 0)
        coefficients = np.linalg.solve(basis[:, :2].T.astype(float), y[:2].astype(float))
        np.testing.assert_array_equal(coefficients @ basis, y)
    # No solution asked for is an error; an empty basis keeps its width.
    with pytest.raises(ValueError, match="max_solutions must be at least 1"):
        _core.enumerate_bounded(basis, bounds, 3.0, 0)
    with pytest.raises(ValueError, match="max_solutions must be at least 1"):
        _core.KernelTree(basis, bounds, 3.0).depth_first(0)
    empty = _core.enumerate_bounded(np.zeros((0, 3), dtype=np.int64), bounds, 3.0)
    assert empty["stop"] is None and empty["solutions"].shape == (0, 3)
    # Thread counts beyond what the options allow are refused, not started.
    for threads in (0, 1025, 10**4):
        with pytest.raises(ValueError, match="threads must be between 1 and 1024"):
            _core.enumerate_bounded(basis, bounds, 3.0, 1, threads=threads)


@needs_lattice
def test_first_lattice_call_may_come_from_a_worker_thread():
    # fpylll's first import installs signal handlers, which only the main
    # thread may do; a fresh process whose first lattice call runs on a
    # worker thread must still get its answer.
    import subprocess
    import textwrap

    script = textwrap.dedent(
        f"""
        import sys, threading
        sys.path.insert(0, {str(BENCHES)!r})
        from families import market_split
        import numpy as np, skipsearch
        A, b = market_split(5, 1)
        out = {{}}
        t = threading.Thread(target=lambda: out.update(r=skipsearch.subset_sum(A, b, time_limit=30)))
        t.start(); t.join()
        r = out["r"]
        assert r.status == "feasible", r
        assert np.array_equal(A @ r.solution.astype(np.int64), b)
        assert any("lattice" in step for step in r.method), r.method
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_kernel_tree_goes_on_where_it_stopped():
    # The even-sum lattice in dimension 10: every +-1 vector is in it, 2^9
    # of them up to sign; a depth-first search in pieces of 2000 nodes finds
    # them all, in the order one uncut search finds them. The first row is
    # made nonzero in every entry (the same lattice), so that no entry is
    # final above the leaves and the tree stays large enough to cut.
    dim = 10
    basis = np.zeros((dim, dim), dtype=np.int64)
    basis[0, 0] = 2
    for j in range(1, dim):
        basis[j, j], basis[j, 0] = 1, -1
    basis[0] += basis[1:].sum(axis=0)
    bounds = np.ones(dim, dtype=np.int64)
    whole = _core.enumerate_bounded(basis, bounds, float(dim), 10_000)
    assert whole["stop"] is None and len(whole["solutions"]) == 2 ** (dim - 1)
    tree = _core.KernelTree(basis, bounds, float(dim))
    assert tree.searched_fraction == 0.0
    pieces = []
    while True:
        out = tree.depth_first(10_000, node_limit=2000, threads=2)
        pieces.append(out)
        if out["stop"] is None:
            break
        assert out["stop"] == "node_limit" and 0.0 <= tree.searched_fraction < 1.0
    assert len(pieces) > 2 and tree.searched_fraction == 1.0
    np.testing.assert_array_equal(pieces[-1]["solutions"], whole["solutions"])
    with pytest.raises(ValueError, match="bounds"):
        _core.KernelTree(basis, np.ones(3, dtype=np.int64), float(dim))
    with pytest.raises(ValueError, match="dependent"):
        _core.KernelTree(np.ones((2, 3), dtype=np.int64), np.ones(3, dtype=np.int64), 3.0)
    with pytest.raises(TypeError, match="stop_event"):
        tree.depth_first(stop_event=object())


@needs_lattice
@pytest.mark.parametrize("block", [0, 20])
def test_closest_vector_form_keeps_the_lattice_and_isolates_the_last_coordinate(block):
    # The kernel basis of ms_08_050_000's embedding, reduced with its
    # homogenising coordinate weighted: the same lattice (each basis an
    # integer combination of the other), one vector with a nonzero last
    # coordinate, +-1, and that vector last.
    from fpylll import LLL, IntegerMatrix

    A, b = read_instance(DATA / "ms_08_050_000.dat")
    k, n = A.shape
    scale = 1 << 10
    rows = [
        [2 * (i == j) for i in range(n)] + [0] + [scale * int(v) for v in A[:, j]] for j in range(n)
    ]
    rows.append([1] * n + [1] + [scale * int(v) for v in b])
    M = IntegerMatrix.from_matrix(rows)
    LLL.reduction(M)
    reduced = [[0] * M.ncols for _ in range(M.nrows)]
    M.to_matrix(reduced)
    kernel = embedding._kernel_rows(reduced, n)
    assert len(kernel) == n + 1 - k
    form = reduction._closest_vector_form(kernel, block, 1024, None, len(kernel))
    assert form.shape == (n + 1 - k, n + 1)
    assert np.count_nonzero(form[:, -1]) == 1 and abs(form[-1, -1]) == 1
    old = np.array(kernel, dtype=object)
    new = form.astype(object)
    for X, Y in ((old, new), (new, old)):
        # Y = C X with C integral: solve in floats, round, check exactly.
        C = np.round(np.linalg.lstsq(X.astype(float).T, Y.astype(float).T, rcond=None)[0].T)
        np.testing.assert_array_equal(C.astype(np.int64).astype(object) @ X, Y)


def qoblib_embedding(name, scale):
    """The embedding basis of a QOBLIB instance (as ``_reduced_kernel``
    builds it, every column once) with its equations scaled by ``scale``."""
    A, b = read_instance(DATA / name)
    k, n = A.shape
    rows = embedding._embedding(A, b, np.ones(n, dtype=np.int64), 1024, scale)
    return rows, n, k


def combination_of(X, Y):
    """Whether every row of ``Y`` is an integer combination of the rows of
    ``X`` (solved in floats, rounded, checked in exact integers)."""
    X, Y = np.array(X, dtype=object), np.array(Y, dtype=object)
    C = np.round(np.linalg.lstsq(X.astype(float).T, Y.astype(float).T, rcond=None)[0].T)
    return np.array_equal(C.astype(np.int64).astype(object) @ X, Y)


@needs_lattice
@pytest.mark.parametrize("name", ["ms_07_050_001.dat", "ms_08_100_002.dat", "ms_09_200_000.dat"])
def test_the_core_lll_reduces_as_fpylll_does(name):
    # The embedding with its equations weighted by 2^23, as the lattice
    # route weights them: the core's LLL returns a basis of the same lattice
    # that fpylll accepts as LLL-reduced, and the same kernel lattice.
    from fpylll import LLL, IntegerMatrix

    rows, n, k = qoblib_embedding(name, 1 << 23)
    reduced, failed = _core.lll_reduce(rows)
    assert failed is None
    M = IntegerMatrix.from_matrix(reduced)
    assert LLL.is_reduced(M, delta=0.98, eta=0.52)
    kernel = embedding._kernel_rows(reduced, n, 1024)
    assert len(kernel) == n + 1 - k
    F = IntegerMatrix.from_matrix(rows)
    LLL.reduction(F)
    theirs = [[0] * F.ncols for _ in range(F.nrows)]
    F.to_matrix(theirs)
    their_kernel = embedding._kernel_rows(theirs, n, 1024)
    assert combination_of(kernel, their_kernel) and combination_of(their_kernel, kernel)
    # Each row of the reduction is an integer combination of the input's
    # (the identity part holds the coefficients) and the input's of it.
    assert combination_of(rows, reduced) and combination_of(reduced, rows)


@pytest.mark.parametrize(
    ("basis", "kwargs", "message"),
    [
        ([[1, 2], [3]], {}, "every row must have the same length"),
        ([[1, 2]], {"delta": 1.0}, "delta: must lie in (0.25, 1)"),
        ([[1, 2]], {"time_limit": -1.0}, "time_limit must be a non-negative number"),
        ([[1, 2]], {"deep": -1}, "deep: must be a nonnegative integer, got -1"),
    ],
)
def test_the_core_lll_names_bad_input(basis, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        _core.lll_reduce(basis, **kwargs)


def test_the_core_lll_reports_dependent_rows_and_huge_entries():
    assert _core.lll_reduce([[1, 2], [2, 4]]) == (None, "the rows are linearly dependent")
    with pytest.raises(OverflowError):
        _core.lll_reduce([[2**130, 1], [1, 1]])
    rows, _, _ = qoblib_embedding("ms_08_100_002.dat", 1 << 23)
    assert _core.lll_reduce(rows, time_limit=0.0) == (None, "time_limit")


def test_without_the_lattice_extra_a_reduction_past_128_bits_is_a_reason(without_lattice):
    # The equation weight is raised by 2^32 at a time until the kernel
    # separates; past the core's 128-bit integers the route ends with a
    # reason (status "incomplete"), never an exception.
    reduced, failed = reduction._lll([[2**130, 1], [1, 1]], None)
    assert reduced is None and failed == "an entry is beyond the core's 128-bit integers"
    assert reduction._stop_of(failed) == "incomplete"


def integer_solution(X, y):
    """Integer ``c`` with ``c @ X == y`` for the rows of ``X`` (independent),
    in exact fractions; None when the rational solution is not integral."""
    from fractions import Fraction

    d, n = len(X), len(X[0])
    # Columns of the system: the transpose of X, augmented with y.
    M = [[Fraction(X[i][t]) for i in range(d)] + [Fraction(y[t])] for t in range(n)]
    row = 0
    pivots = []
    for col in range(d):
        p = next((r for r in range(row, n) if M[r][col] != 0), None)
        if p is None:
            continue
        M[row], M[p] = M[p], M[row]
        for r in range(n):
            if r != row and M[r][col] != 0:
                f = M[r][col] / M[row][col]
                M[r] = [a - f * b for a, b in zip(M[r], M[row])]
        pivots.append(col)
        row += 1
    if any(M[r][d] != 0 for r in range(row, n)):
        return None
    c = [M[i][d] / M[i][col] for i, col in enumerate(pivots)]
    return c if all(v.denominator == 1 for v in c) else None


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda d: st.lists(
            st.lists(st.integers(-(2**40), 2**40), min_size=d + 1, max_size=d + 1),
            min_size=d,
            max_size=d,
        )
    )
)
def test_the_core_lll_keeps_the_lattice_and_certifies_what_it_returns(rows):
    given_rows = [list(r) for r in rows]
    reduced, failed = _core.lll_reduce(rows)
    assert rows == given_rows  # the input is untouched
    if reduced is None:
        # Only honest failures: dependent rows, or floats that could not
        # certify (never a basis of another lattice).
        assert failed in (
            "the rows are linearly dependent",
            "its floats (double, then double-double) could not reduce the basis, or not "
            "certify the result in double precision",
        )
        return
    assert len(reduced) == len(rows)
    for X, Y in ((rows, reduced), (reduced, rows)):
        assert all(integer_solution(X, y) is not None for y in Y)


@needs_lattice
def test_restarts_search_two_bases_at_a_time(monkeypatch):
    # Small units, so that ms_07_200_370 reaches the third restart (8 bases
    # with 2 threads), where two re-randomised bases are searched at once, a
    # thread each; whichever stream finds the solution, it is re-checked.
    restarts_always(monkeypatch)
    monkeypatch.setattr(portfolio, "_RESTART_UNIT", 1 << 16)
    A, b = read_instance(DATA / "ms_07_200_370.dat")
    r = skipsearch.subset_sum(A, b, threads=2)
    assert r.status == "feasible"
    np.testing.assert_array_equal(A @ r.solution.astype(np.int64), b)
    assert any("2 at a time" in step for step in r.method), r.method
    # One thread: one basis at a time, as before.
    r = skipsearch.subset_sum(A, b, threads=1)
    assert r.status == "feasible" and not any("at a time" in step for step in r.method)


def kernel_search_of(A, b, node_limit=None):
    """The kernel basis (closest-vector form, LLL only) of a market split and
    a ``_KernelSearch`` over it, every column once."""
    k, n = A.shape
    ones = np.ones(n, dtype=np.int64)
    bounds = np.append(ones, 1)
    radius_sq = float(n + 1)
    weight, scale = embedding._embedding_weights(radius_sq)
    want = n + 1 - k
    kernel, failed, _ = embedding._reduced_kernel(A, b, ones, (weight, scale), want, None, [])
    assert failed is None and len(kernel) == want
    kernel.sort(key=lambda r: r[-1] != 0)
    basis = np.array(kernel, dtype=np.int64)
    search = kernel_search._KernelSearch(
        bounds=bounds,
        radius_sq=radius_sq,
        decode=lambda y: embedding._decode(y, ones, np.arange(n), A, b),
        start=0.0,
        time_limit=None,
        node_limit=node_limit,
        threads=2,
        seed=portfolio._RESTART_SEED,
        memory=0,
    )
    return basis, search


@needs_lattice
@pytest.mark.parametrize("free_width", [0, 1, portfolio._LDS_FREE_WIDTH, 1 << 20])
@pytest.mark.parametrize("seed", range(3))
def test_streams_agree_with_schroeppel_shamir(seed, free_width):
    # Two streams on the same basis, run to the end: a solution when the
    # complete four-list search has one, else a proof (stop None), whatever
    # top levels spend no discrepancy.
    A, b = market_split(5, seed)
    truth = _core.schroeppel_shamir(A, b, None, None, 2)
    basis, search = kernel_search_of(A, b)
    x, stop, built = search.limited_discrepancy_streams([lambda: basis] * 2, 1 << 40, 1, free_width)
    assert built
    if truth["solution"] is None:
        assert x is None and stop is None
    else:
        assert stop is None
        np.testing.assert_array_equal(A @ x.astype(np.int64), b)
    assert search.nodes > 0


@needs_lattice
def test_streams_keep_the_node_limit_and_report_what_stopped_them():
    A, b = market_split(7, 0)  # infeasible, far beyond these caps
    basis, search = kernel_search_of(A, b, node_limit=100_000)
    x, stop, built = search.limited_discrepancy_streams([lambda: basis] * 2, 1 << 40, 1, 0)
    assert (x, stop, built) == (None, "node_limit", True)
    # Split between the two: within the limit, up to a flush per stream.
    assert search.nodes <= 100_000 + 2 * 1024
    # A basis the deadline kept from being built is not a search.
    basis, search = kernel_search_of(A, b)
    x, stop, built = search.limited_discrepancy_streams([lambda: basis, lambda: None], 1000, 1, 0)
    assert (x, stop, built) == (None, "node_limit", False)

    def broken():
        raise RuntimeError("reduction failed")

    with pytest.raises(RuntimeError, match="reduction failed"):
        search.limited_discrepancy_streams([lambda: basis, broken], 1000, 1, 0)


def test_fpylll_reductions_run_one_at_a_time():
    # fplll crashed the process when two threads reduced at once (the
    # restarts' streams, or a pipeline calling subset_sum from threads):
    # every reduction holds one lock, so their intervals never overlap.
    import threading
    import time

    spans = []

    def sleeping():
        start = time.perf_counter()
        time.sleep(0.05)
        spans.append((start, time.perf_counter()))

    workers = [threading.Thread(target=reduction._reduce, args=(sleeping, None)) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    spans.sort()
    assert len(spans) == 3
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans
    # A deadline that passes while waiting for the lock skips the reduction.
    assert reduction._reduce(sleeping, time.perf_counter() - 1.0) is False
    assert len(spans) == 3


@needs_lattice
@pytest.mark.skipif(sys.platform == "win32", reason="sends SIGINT")
@pytest.mark.parametrize("wait", [1.0, 2.5])
def test_ctrl_c_during_the_streams_raises_keyboard_interrupt(wait):
    # Two bases at a time from the third restart: Ctrl-C while a reduction
    # or the two searches run. With the reductions on the streams' threads
    # this crashed the process (SIGSEGV) or hung it in 16 of 16 runs.
    setup = f"""
        import sys
        sys.path.insert(0, {str(BENCHES)!r})
        from families import market_split
        import skipsearch
        from skipsearch._engine import portfolio
        portfolio._RESTART_MIN_NODES = 0.0
        portfolio._RESTART_UNIT = 1 << 16
        A, b = market_split(10, 0)
    """
    code, out, waited = interrupt(setup, "skipsearch.subset_sum(A, b, threads=2)", wait)
    assert (code, out) == (3, "interrupted")
    assert waited < 10


@needs_lattice
def test_a_vector_that_does_not_decode_proves_nothing():
    # Every vector the core returns decodes to a solution; should one not,
    # the search that stopped at it has proved nothing, so it must not read
    # as "ran to its end" (stop None, a proof of infeasibility).
    A, b = market_split(5, 2)
    assert _core.schroeppel_shamir(A, b, None, None, 2)["solution"] is not None
    basis, search = kernel_search_of(A, b)
    search.decode = lambda y: None
    assert search.limited_discrepancy(basis, 1 << 40) == (None, "incomplete")
    assert search.depth_first(basis, None) == (None, "incomplete")
    x, stop, built = search.limited_discrepancy_streams([lambda: basis] * 2, 1 << 40, 1, 0)
    assert (x, stop, built) == (None, "incomplete", True)
