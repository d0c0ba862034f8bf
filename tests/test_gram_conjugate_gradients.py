"""The relaxation solved by conjugate gradients on the Gram matrix.

From 4096 neurons the exact path first tries Jacobi-preconditioned conjugate
gradients on the Gram matrix (``rust/absorption/gram_conjugate_gradients.rs``)
before any Cholesky factor. The steps only propose the relaxed solution; the
float64 certificate proves what is reported. So the distance must be numpy's
least-squares distance, the certificate must re-check, every flip set tried
here must lie above the bound, and blocks the steps cannot settle (a planted
flip set) must still be decided by the factor.
"""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch

from tests.conftest import planted_block

D, M = 1024, 4096  # m = 4 d, as in transformer blocks


def _block(seed: int, lean: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    W_up = rng.standard_normal((M, D)) / np.sqrt(D)
    W_down = rng.standard_normal((D, M)) / np.sqrt(M) - (lean * D / M) * W_up.T
    return W_up, W_down


def _numpy_distance(W_up: np.ndarray, W_down: np.ndarray) -> float:
    G = (W_down.T @ W_down) * (W_up @ W_up.T)
    h = -np.einsum("pi,ip->i", W_down, W_up)
    s = np.linalg.solve(G, h)
    E = np.eye(D) + (W_down * s) @ W_up
    return float(np.linalg.norm(E) / np.sqrt(D))


def _residual(W_up: np.ndarray, W_down: np.ndarray, subset: np.ndarray) -> float:
    E = np.eye(D) + W_down[:, subset] @ W_up[subset]
    return float(np.linalg.norm(E) / np.sqrt(D))


@pytest.mark.parametrize(
    ("keep_certificate", "bracket", "precision"),
    # A formed certificate that no bracket follows: the steps run on a
    # float32 Gram matrix (the bracket would need the float64 one).
    [(True, None, "float64"), (False, None, "float64"), (True, False, "float32")],
)
def test_the_steps_give_numpys_distance_and_a_certificate_that_holds(
    keep_certificate, bracket, precision
):
    # Leaning towards -I, so that Y = A proves less than the relaxation.
    W_up, W_down = _block(0, lean=1.5)
    r = skipsearch.find_absorbing_subset(
        W_up,
        W_down,
        activation="gelu",
        distance=True,
        keep_certificate=keep_certificate,
        bracket=bracket,
    )
    assert r.verdict == "not_absorbable"
    assert r.argument == "certificate"
    assert "gram conjugate gradients" in r.stats.method
    assert 1 <= r.stats.gram_cg_steps <= 16
    assert r.stats.relaxation_precision == precision
    assert ("float32 gram" in dict(r.stats.timings)) == (precision == "float32")
    assert r.stats.gram_rank is None  # no factor ran
    want = _numpy_distance(W_up, W_down)
    assert r.relaxation_distance == pytest.approx(want, rel=1e-6)
    assert 0 < r.distance_bound <= r.relaxation_distance
    if keep_certificate:
        bound = skipsearch.check_certificate(r.certificate, W_up, W_down, activation="gelu")
        # Both rigorous; they differ by no more than the rounding allowance.
        assert abs(bound - r.distance_bound) <= 2 * r.rounding_bound
        assert bound > 0.5
    rng = np.random.default_rng(1)
    for _ in range(5):
        subset = np.flatnonzero(rng.random(M) < rng.random())
        assert _residual(W_up, W_down, subset) >= r.distance_bound


def test_the_auto_bracket_still_runs_without_a_factor():
    W_up, W_down = _block(2, lean=1.5)
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu")
    assert r.stats.gram_cg_steps >= 1
    assert r.stats.bracket is not None
    lower, upper = r.distance_bracket
    assert lower >= r.distance_bound
    best = r.best_subset
    assert _residual(W_up, W_down, best) <= upper * (1 + 1e-9)


@pytest.mark.parametrize("bracket", [None, False])
def test_a_planted_flip_set_is_left_to_the_factor_and_found(bracket):
    rng = np.random.default_rng(4)
    kwargs, S, _ = planted_block(rng, D, D, M, D + 8)
    r = skipsearch.find_absorbing_subset(
        activation="gelu", distance=True, bracket=bracket, **kwargs
    )
    assert r.verdict == "absorbable"
    assert r.subset.tolist() == S.tolist()
    # The relaxation reaches -A: no bound above the tolerance can follow,
    # so the steps stop and the factor decides.
    assert r.stats.gram_cg_steps == 0
    assert "gram conjugate gradients" not in r.stats.method
    assert r.stats.gram_rank == M
    assert r.stats.relaxation_precision == "float64"
    # Without a bracket the float32 Gram matrix was tried first, and gave way.
    assert ("float32 gram left it open" in dict(r.stats.timings)) == (bracket is False)
    diff = skipsearch.max_abs_difference(r.block, activation="gelu", **kwargs)
    assert diff < 1e-9
