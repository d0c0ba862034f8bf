"""relative_output_error of a flip block is evaluated from the exact gap
delta - E_S x, not as the difference of two float64 outputs: checked against
the block's function evaluated in exact rationals."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import skipsearch

from tests.test_witness_exact import cancelling_block, exact_matmul, exact_relu_block, fr


def exact_ratio(block, X, W_up, W_down, b_up, b_down, A, slope=Fraction(0)):
    """||g(X) - (A X + f(X))||_F / ||A X + f(X)||_F with g and f in Fractions."""
    gu, gb, gd, gbd = fr(block.W_up), fr(block.b_up), fr(block.W_down), fr(block.b_down)
    Wu, bu, Wd, bd, Af = fr(W_up), fr(b_up), fr(W_down), fr(b_down), fr(A)
    num = den = Fraction(0)
    for x in fr(X):
        g = exact_relu_block(gu, gb, gd, gbd, x, slope)
        f = exact_relu_block(Wu, bu, Wd, bd, x, slope)
        for j in range(len(f)):
            target = f[j] + sum(Af[j, k] * x[k] for k in range(len(x)))
            num += (g[j] - target) ** 2
            den += target**2
    return num, den


def test_cancelling_pairs_with_zero_gap_cost_exactly_nothing():
    mismatched_by_plain_float = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        W_up, W_down, b_up = cancelling_block(rng, 5, 2, 50)
        # Biases on a coarse grid: b_down' is then a float64 and the gap is 0.
        b_up = np.round(b_up * 2.0**20) * 2.0**-20
        m = W_up.shape[0]
        assert (exact_matmul(fr(W_down), fr(W_up)) == -np.eye(5, dtype=object)).all()
        S = np.arange(m)
        block = skipsearch.build_skip_free_block(W_up, W_down, S, b_up=b_up)
        X = 3.0 * rng.standard_normal((40, 5))
        num, _ = exact_ratio(block, X[:5], W_up, W_down, b_up, np.zeros(5), np.eye(5))
        assert num == 0
        err = skipsearch.relative_output_error(block, X, W_up, W_down, b_up=b_up)
        assert err == 0.0
        want = skipsearch.residual_block_output(X, W_up, W_down, b_up=b_up)
        plain = np.linalg.norm(block(X) - want) / np.linalg.norm(want)
        mismatched_by_plain_float += plain > 1e-3
    assert mismatched_by_plain_float == 3  # the float64 difference is far off 0


@pytest.mark.parametrize("slope", [0.0, 0.2])
def test_planted_gap_matches_exact_rationals(slope):
    """Pairs at 2^25 (float64 output errors near 2^-28), a planted gap
    E_S = 2^-16 in one entry, and a nonzero bias gap from rounding b_down'.
    The exact truth evaluates both blocks' functions in Fractions."""
    activation = "relu" if slope == 0.0 else f"leaky_relu({slope})"
    c = Fraction(1) + Fraction(slope)
    rng = np.random.default_rng(4)
    d, e = 4, 25
    W_up, W_down, b_up = cancelling_block(rng, d, 2, e)
    # W_down W_up = -I exactly; the skip is c I (rounded to float64 for
    # LeakyReLU's c = 1 + 0.2, which is not one) plus 2^-16 in entry (1, 2).
    assert (exact_matmul(fr(W_down), fr(W_up)) == -np.eye(d, dtype=object)).all()
    A = float(c) * np.eye(d)
    A[1, 2] = 2.0**-16
    b_down = rng.standard_normal(d)
    S = np.arange(W_up.shape[0])
    kwargs = dict(activation=activation, b_up=b_up, b_down=b_down, skip=A)
    block = skipsearch.build_skip_free_block(
        W_up, W_down, S, activation=activation, b_up=b_up, b_down=b_down
    )
    X = 2.0 * rng.standard_normal((12, d))
    num, den = exact_ratio(block, X, W_up, W_down, b_up, b_down, A, Fraction(slope))
    truth = math.sqrt(float(num / den))
    got = skipsearch.relative_output_error(block, X, W_up, W_down, **kwargs)
    assert truth > 1e-6
    assert got == pytest.approx(truth, rel=1e-7)
    want = skipsearch.residual_block_output(X, W_up, W_down, **kwargs)
    plain = np.linalg.norm(block(X) - want) / np.linalg.norm(want)
    assert abs(plain - truth) > 1e-5 * truth  # the float64 difference misses it


def test_a_hand_built_block_with_other_weights_takes_the_float_path(rng):
    W_up, W_down = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    block = skipsearch.build_skip_free_block(W_up, W_down, [0, 2])
    other = skipsearch.SkipFreeBlock(
        W_up=block.W_up.copy(),
        b_up=block.b_up,
        W_down=block.W_down * 2.0,
        b_down=block.b_down,
        activation=block.activation,
    )
    X = rng.standard_normal((20, 3))
    want = skipsearch.residual_block_output(X, W_up, W_down)
    got = skipsearch.relative_output_error(other, X, W_up, W_down)
    assert got == np.linalg.norm(other(X) - want) / np.linalg.norm(want)
    # A different activation than the block's: the flip identity does not hold.
    got = skipsearch.relative_output_error(block, X, W_up, W_down, activation="gelu")
    want = skipsearch.residual_block_output(X, W_up, W_down, activation="gelu")
    assert got == np.linalg.norm(block(X) - want) / np.linalg.norm(want)


@pytest.mark.parametrize(
    "activation, c", [("relu", Fraction(1)), ("leaky_relu(0.2)", Fraction(1) + Fraction(0.2))]
)
def test_gap_matrix_is_the_nearest_float_of_the_exact_one(activation, c):
    """E_S = A + c W_down[:, S] W_up[S, :] and delta, as the output error
    uses them, against Fractions: on cancelling pairs, wide exponent spans
    and full float64 mantissas."""
    from skipsearch._validation import Weights
    from skipsearch.activations import get_activation
    from skipsearch.construction import _flip_gap

    rng = np.random.default_rng(9)
    for _ in range(6):
        W_up, W_down, b_up = cancelling_block(rng, 3, 2, 45)
        W_up = W_up * 2.0 ** rng.integers(-40, 40, W_up.shape)
        A = rng.standard_normal((3, 3))
        b_down = rng.standard_normal(3)
        S = np.sort(rng.choice(W_up.shape[0], size=7, replace=False))
        block = skipsearch.build_skip_free_block(
            W_up, W_down, S, activation=activation, b_up=b_up, b_down=b_down
        )
        w = Weights(W_up, W_down, b_up, b_down, None, A)
        E, delta = _flip_gap(block, get_activation(activation), w)
        Wd, Wu = fr(W_down), fr(W_up)
        for j in range(3):
            for k in range(3):
                exact = Fraction(A[j, k]) + c * sum(Wd[j, i] * Wu[i, k] for i in S)
                assert E[j, k] == float(exact)
            exact_b = Fraction(b_down[j]) + c * sum(Wd[j, i] * Fraction(b_up[i]) for i in S)
            assert delta[j] == float(Fraction(block.b_down[j]) - exact_b)
