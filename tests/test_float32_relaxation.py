"""The exact path's float32 solver and the Gram matrix it hands to the bracket.

Blocks of 2048 neurons or more solve the relaxation through a float32
Cholesky factor, refined in float64; the distance reported is what the
float64 certificate proves, so it must equal the least-squares distance
numpy computes in float64, and the certificate must re-check.
"""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch
from skipsearch import _core

D, M = 64, 2048  # d^2 = 4096 > m: a full-rank Gram matrix


def _block(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    W_up = rng.standard_normal((M, D)) / np.sqrt(D)
    W_down = rng.standard_normal((D, M)) / np.sqrt(M)
    return W_up, W_down


def _numpy_distance(W_up: np.ndarray, W_down: np.ndarray, c: float) -> float:
    """The relaxation distance in float64 by numpy: Gram matrix, solve,
    residual ``||I + c W_down diag(s) W_up||_F / ||I||_F``."""
    G = c * c * (W_down.T @ W_down) * (W_up @ W_up.T)
    h = -c * np.einsum("pi,ip->i", W_down, W_up)
    s = np.linalg.solve(G, h)
    d = W_down.shape[0]
    E = np.eye(d) + c * (W_down * s) @ W_up
    return float(np.linalg.norm(E) / np.sqrt(d))


def test_float32_solve_reports_the_float64_distance_and_a_valid_certificate():
    W_up, W_down = _block(0)
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu", distance=True)
    assert r.verdict == "not_absorbable"
    assert r.argument == "certificate"
    assert r.stats.relaxation_precision == "float32"
    assert r.stats.kernel in ("avx512f", "avx2+fma", "neon", "scalar")
    assert r.stats.gram_rank == M
    want = _numpy_distance(W_up, W_down, 1.0)
    assert r.relaxation_distance == pytest.approx(want, rel=1e-9)
    # The certificate returned is the better of the relaxation's residual
    # and Y = A (over the box [0, 1]^m it may prove more than the distance).
    bound = skipsearch.check_certificate(r.certificate, W_up, W_down, activation="gelu")
    assert bound == pytest.approx(r.distance_bound, rel=1e-12)
    assert bound >= r.relaxation_distance * (1 - 1e-12)
    steps = [name for name, _ in r.stats.timings]
    assert steps[:3] == ["gram", "float32 factor", "solve"]


def test_small_blocks_stay_in_float64():
    rng = np.random.default_rng(1)
    W_up = rng.standard_normal((300, 20))
    W_down = rng.standard_normal((20, 300))
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu", distance=True)
    assert r.stats.relaxation_precision == "float64"
    assert r.relaxation_distance == pytest.approx(_numpy_distance(W_up, W_down, 1.0), rel=1e-9)


def test_verdict_only_runs_no_relaxation():
    W_up, W_down = _block(2)
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu", distance=False)
    assert r.stats.relaxation_precision is None
    assert r.stats.timings == ()


def _search(W_up: np.ndarray, W_down: np.ndarray) -> dict:
    A = np.eye(D)
    return _core.search_flip_set(
        W_up, W_down, A, None, 1.0, 1e-9, "non_proportional", distance=True, keep_gram=True
    )


def test_the_bracket_reuses_the_decisions_gram_matrix_with_the_same_result():
    W_up, W_down = _block(3)
    A = np.eye(D)
    raw = _search(W_up, W_down)
    gram = raw["gram"]
    assert isinstance(gram, _core.GramMatrix)
    assert gram.nbytes == 8 * M * M
    lower = raw["relaxation_distance"]
    with_gram = _core.flip_set_bracket(W_up, W_down, A, 1.0, lower, gram=gram)
    assert gram.nbytes == 0  # taken, not copied
    without = _core.flip_set_bracket(W_up, W_down, A, 1.0, lower)
    assert with_gram["lower"] == without["lower"]
    assert with_gram["upper"] == without["upper"]
    assert np.array_equal(with_gram["best_subset"], without["best_subset"])
    assert with_gram["lower"] >= lower


def test_a_gram_matrix_of_other_weights_is_ignored():
    W_up, W_down = _block(4)
    A = np.eye(D)
    other = _search(*_block(5))["gram"]
    assert other.nbytes == 8 * M * M
    lower = _search(W_up, W_down)["relaxation_distance"]
    given = _core.flip_set_bracket(W_up, W_down, A, 1.0, lower, gram=other)
    fresh = _core.flip_set_bracket(W_up, W_down, A, 1.0, lower)
    assert given["lower"] == fresh["lower"]
    assert given["upper"] == fresh["upper"]
    # The same weights with another flip constant: another Gram matrix.
    mine = _search(W_up, W_down)["gram"]
    doubled = _core.flip_set_bracket(W_up, W_down, A, 2.0, 0.0, gram=mine)
    fresh = _core.flip_set_bracket(W_up, W_down, A, 2.0, 0.0)
    assert (doubled["lower"], doubled["upper"]) == (fresh["lower"], fresh["upper"])
    assert np.array_equal(doubled["best_subset"], fresh["best_subset"])


def test_default_call_keeps_no_gram_matrix_in_the_result():
    W_up, W_down = _block(6)
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu")
    assert r.stats.bracket is not None
    assert not any(isinstance(v, _core.GramMatrix) for v in vars(r).values())


def test_distance_budget_chooses_the_path_not_the_verdict():
    W_up, W_down = _block(7)
    quick = skipsearch.find_absorbing_subset(
        W_up, W_down, activation="gelu", distance_budget=0.0, bracket=False
    )
    full = skipsearch.find_absorbing_subset(
        W_up, W_down, activation="gelu", distance_budget=None, bracket=False
    )
    assert quick.verdict == full.verdict == "not_absorbable"
    assert quick.relaxation_distance is None
    assert quick.distance_bound is not None and quick.distance_bound > 0.5
    assert quick.stats.exact_seconds_estimate is not None
    assert quick.stats.exact_seconds_estimate > 0.0
    assert full.relaxation_distance == pytest.approx(_numpy_distance(W_up, W_down, 1.0), rel=1e-9)
    assert full.stats.exact_seconds_estimate is None
    # distance=True ignores the budget.
    forced = skipsearch.find_absorbing_subset(
        W_up, W_down, activation="gelu", distance=True, distance_budget=0.0, bracket=False
    )
    assert forced.relaxation_distance == full.relaxation_distance


def test_a_hard_block_over_the_budget_is_still_decided():
    # sum_i v_i . u_i = -1.2 d: Y = A proves nothing; the relaxation decides.
    rng = np.random.default_rng(8)
    W_up = rng.standard_normal((M, D)) / np.sqrt(D)
    W_down = rng.standard_normal((D, M)) / np.sqrt(M) - (1.2 * D / M) * W_up.T
    over = skipsearch.find_absorbing_subset(
        W_up, W_down, activation="gelu", distance_budget=0.0, bracket=False
    )
    exact = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu", distance=True)
    assert over.verdict == exact.verdict == "not_absorbable"
    assert over.distance_bound is not None and over.distance_bound > 0.0


@pytest.mark.parametrize(
    ("budget", "error"),
    [(-1.0, ValueError), (float("nan"), ValueError), ("10", TypeError), (True, TypeError)],
)
def test_bad_distance_budget_is_named(budget, error):
    W_up, W_down = _block(9)
    with pytest.raises(error, match="distance_budget"):
        skipsearch.find_absorbing_subset(W_up[:8, :4], W_down[:4, :8], distance_budget=budget)


def test_cli_reads_the_distance_budget():
    from skipsearch.cli import _parser

    args = _parser().parse_args(["scan", "x", "--distance-budget", "none"])
    assert args.distance_budget is None
    args = _parser().parse_args(["scan", "x", "--distance-budget", "12.5"])
    assert args.distance_budget == 12.5
    args = _parser().parse_args(["scan", "x"])
    assert args.distance_budget == skipsearch.absorption.DISTANCE_BUDGET
    with pytest.raises(SystemExit):
        _parser().parse_args(["scan", "x", "--distance-budget", "-3"])


def test_a_distance_the_rounding_swamps_is_none_not_zero():
    # W_up scaled by 1e150: the least-squares distance is scale-invariant
    # (0.896 here), but the rounding allowance of the certificate is far
    # above it, so float64 cannot confirm it: None, never a 0.0 that would
    # say the relaxation reaches -A. The verdict comes from the complete
    # search.
    rng = np.random.default_rng(1)
    W_up = rng.standard_normal((500, 50))
    W_down = rng.standard_normal((50, 500))
    plain = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu", distance=True)
    assert plain.relaxation_distance == pytest.approx(_numpy_distance(W_up, W_down, 1.0), rel=1e-9)
    huge = skipsearch.find_absorbing_subset(
        W_up * 1e150, W_down, activation="gelu", distance=True, time_limit=60
    )
    assert huge.verdict == "not_absorbable"
    assert huge.relaxation_distance is None
