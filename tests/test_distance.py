"""The ``distance`` option: cheap certificates first (``Y = A``, then
conjugate gradients), the exact Gram path only when asked or needed, and
the memory guard in front of it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg
import skipsearch
from skipsearch import check_certificate

find = skipsearch.find_absorbing_subset


def trained_like(d, m, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, d)) / np.sqrt(d), rng.normal(size=(d, m)) / np.sqrt(m)


def hard(d, m, seed=0):
    """Columns of W_down aligned against the rows of W_up, so that
    sum_i v_i . u_i is about -1.2 d: Y = A proves nothing."""
    rng = np.random.default_rng(seed)
    W_up = rng.normal(size=(m, d)) / np.sqrt(d)
    W_down = -(1.2 * d / m) * W_up.T + rng.normal(size=(d, m)) / np.sqrt(m)
    return W_up, W_down


def exact_distance(W_up, W_down, c=1.0):
    """numpy/scipy: the least-squares distance through the Gram matrix."""
    G = c * c * (W_down.T @ W_down) * (W_up @ W_up.T)
    h = -c * np.einsum("pi,ip->i", W_down, W_up)
    s = scipy.linalg.cho_solve(scipy.linalg.cho_factor(G), h)
    E = np.eye(W_down.shape[0]) + c * W_down @ (s[:, None] * W_up)
    return np.linalg.norm(E) / np.sqrt(W_down.shape[0])


def residual(W_up, W_down, S):
    E = np.eye(W_down.shape[0]) + W_down[:, S] @ W_up[S]
    return np.linalg.norm(E) / np.sqrt(W_down.shape[0])


def test_exact_distance_equals_numpy():
    W_up, W_down = trained_like(96, 384, seed=1)
    r = find(W_up, W_down, activation="gelu", distance=True)
    assert r.verdict == "not_absorbable"
    assert r.relaxation_distance == pytest.approx(exact_distance(W_up, W_down), rel=1e-9)
    assert "relaxation" in r.stats.method


def test_trained_like_block_is_decided_by_y_equals_a():
    W_up, W_down = trained_like(64, 256)
    r = find(W_up, W_down, activation="gelu", distance=False)
    assert r.verdict == "not_absorbable" and r.argument == "certificate"
    assert r.relaxation_distance is None
    assert r.stats.method == ("certificate Y = A",) and r.stats.krylov_steps == 0
    np.testing.assert_array_equal(r.certificate, np.eye(64))
    # The bound holds for flip sets (the empty one is at 1.0) and is
    # re-derived by the independent check.
    rng = np.random.default_rng(3)
    for S in [[], rng.choice(256, 128, replace=False)]:
        assert r.distance_bound <= residual(W_up, W_down, S)
    again = check_certificate(r.certificate, W_up, W_down, activation="gelu")
    assert again == pytest.approx(r.distance_bound, rel=1e-9)
    # Same verdict on the exact path, and it is the default at this size.
    exact = find(W_up, W_down, activation="gelu")
    assert exact.verdict == r.verdict and exact.relaxation_distance is not None


def test_hard_block_needs_conjugate_gradients():
    W_up, W_down = hard(64, 256)
    assert np.einsum("pi,ip->", W_down, W_up) < -1.1 * 64
    r = find(W_up, W_down, activation="gelu", distance=False)
    assert r.verdict == "not_absorbable" and r.argument == "certificate"
    assert r.stats.method == ("certificate Y = A", "conjugate gradients")
    assert 1 <= r.stats.krylov_steps <= 3
    assert r.relaxation_distance is None
    exact = exact_distance(W_up, W_down)
    assert 0.5 * exact < r.distance_bound
    again = check_certificate(r.certificate, W_up, W_down, activation="gelu")
    assert again == pytest.approx(r.distance_bound, rel=1e-9)
    for S in [[], list(range(0, 256, 2))]:
        assert r.distance_bound <= residual(W_up, W_down, S)


def test_absorbable_block_falls_through_to_the_exact_path():
    rng = np.random.default_rng(5)
    d, m = 12, 40
    W_up = rng.normal(size=(m, d))
    W_down = rng.normal(size=(d, m))
    S = np.array([3, 7, 11, 20, 31])
    # Plant: -A = W_down[:, S] W_up[S].
    A = -W_down[:, S] @ W_up[S]
    r = find(W_up, W_down, skip=A, activation="gelu", distance=False)
    assert r.verdict == "absorbable" and r.subset.tolist() == S.tolist()
    assert "relaxation" in r.stats.method


def test_memory_limit_takes_any_positive_number_of_bytes():
    W_up, W_down = trained_like(16, 64)
    for limit in (1e9, np.int64(10**9), 2**200, float("inf")):
        r = find(W_up, W_down, activation="gelu", distance=True, memory_limit=limit)
        assert r.relaxation_distance is not None


def test_memory_guard():
    W_up, W_down = trained_like(32, 128)
    with pytest.raises(MemoryError, match="memory_limit"):
        find(W_up, W_down, activation="gelu", distance=True, memory_limit=1000)
    # The default falls back to the bound when the Gram path does not fit.
    r = find(W_up, W_down, activation="gelu", memory_limit=1000)
    assert r.verdict == "not_absorbable" and r.relaxation_distance is None
    assert r.distance_bound > 0.5
    # And says undecided, naming the limit, when no certificate proves.
    rng = np.random.default_rng(5)
    U, V = rng.normal(size=(40, 12)), rng.normal(size=(12, 40))
    A = -V[:, :5] @ U[:5]
    r = find(U, V, skip=A, activation="gelu", memory_limit=1000)
    assert r.verdict == "undecided" and r.status == "memory_limit"
    assert "memory_limit" in r.reason


@pytest.mark.parametrize(
    "kwargs, error",
    [
        (dict(distance="yes"), TypeError),
        (dict(distance=1), TypeError),
        (dict(memory_limit=-5), ValueError),
        (dict(memory_limit=0), ValueError),
        (dict(memory_limit=float("nan")), ValueError),
        (dict(memory_limit="8GB"), TypeError),
        (dict(memory_limit=True), TypeError),
    ],
)
def test_bad_options(kwargs, error):
    W_up, W_down = trained_like(8, 16)
    with pytest.raises(error, match=r"distance|memory_limit"):
        find(W_up, W_down, **kwargs)


@pytest.mark.parametrize("distance", [True, False])
def test_results_do_not_depend_on_the_thread_count(distance):
    W_up, W_down = hard(48, 400, seed=2)
    one = find(W_up, W_down, activation="gelu", distance=distance, threads=1)
    two = find(W_up, W_down, activation="gelu", distance=distance, threads=2)
    three = find(W_up, W_down, activation="gelu", distance=distance, threads=3)
    for r in (two, three):
        assert r.verdict == one.verdict
        assert r.relaxation_distance == one.relaxation_distance
        assert r.distance_bound == one.distance_bound
        np.testing.assert_array_equal(r.certificate, one.certificate)


def test_exact_path_tries_conjugate_gradients_before_searching():
    # More neurons than d^2: the least-squares distance is 0, so neither the
    # relaxation's Y nor Y = A proves anything, but a conjugate-gradient
    # iterate does (breaker finding: the default used to search for minutes).
    m, d = 300, 12
    rng = np.random.default_rng(0)
    W_up = rng.normal(size=(m, d)) / np.sqrt(d)
    W_down = -W_up.T * 1.2 * d / m + 0.3 * rng.normal(size=(d, m)) / np.sqrt(m)
    for distance in (None, True, False):
        r = find(W_up, W_down, activation="gelu", distance=distance, time_limit=30)
        assert r.verdict == "not_absorbable" and r.status == "complete", distance
        assert r.argument == "certificate" and r.stats.nodes == 0
        assert "conjugate gradients" in r.stats.method
        assert r.distance_bound > 0.05
        again = check_certificate(r.certificate, W_up, W_down, activation="gelu")
        assert again == pytest.approx(r.distance_bound, rel=1e-9)


def test_memory_limit_bounds_the_meet_in_the_middle():
    m = 44
    rng = np.random.default_rng(1)
    U, V = rng.normal(size=(m, 1)), rng.normal(size=(1, m))
    r = find(U, V, memory_limit=16 * m * m, tol=1e-12)
    assert r.verdict == "undecided" and r.status == "memory_limit"


@pytest.mark.skipif(os.name != "posix" or shutil.which("bash") is None, reason="needs ulimit")
def test_default_memory_limit_sees_ulimit():
    # A breaker's case: under `ulimit -v` the default came from MemAvailable
    # alone, and a huge exact path aborted instead of raising MemoryError.
    code = "from skipsearch._validation import default_memory_limit as f; print(f())"
    limit_kib = 3_000_000
    out = subprocess.run(
        ["bash", "-c", f'ulimit -v {limit_kib} && "{sys.executable}" -c "{code}"'],
        capture_output=True,
        text=True,
        check=True,
    )
    assert 0 < int(out.stdout) <= limit_kib * 1024 // 2
