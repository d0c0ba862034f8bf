"""relative_output_error: the cost of a skip-free replacement on data,
checked against the exact linear gap E_S x of the flip construction."""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch

from tests.conftest import planted_block


@pytest.mark.parametrize("activation, c", [("relu", 1.0), ("leaky_relu(0.2)", 1.2), ("gelu", 1.0)])
def test_error_of_any_flip_set_is_the_linear_gap(rng, activation, c):
    d, m, n = 5, 12, 300
    W_up, W_down = rng.standard_normal((m, d)), rng.standard_normal((d, m))
    b_up, b_down = rng.standard_normal(m), rng.standard_normal(d)
    A = rng.standard_normal((d, d))
    S = np.sort(rng.choice(m, size=5, replace=False))
    block = skipsearch.build_skip_free_block(
        W_up, W_down, S, activation=activation, b_up=b_up, b_down=b_down
    )
    X = rng.standard_normal((n, d))
    err = skipsearch.relative_output_error(block, X, W_up, W_down, b_up=b_up, b_down=b_down, skip=A)
    # numpy: A x + f(x) - g_S(x) = E_S x with E_S = A + c W_down[:, S] W_up[S].
    E = A + c * W_down[:, S] @ W_up[S]
    target = skipsearch.residual_block_output(
        X, W_up, W_down, activation=activation, b_up=b_up, b_down=b_down, skip=A
    )
    want = np.linalg.norm(X @ E.T) / np.linalg.norm(target)
    assert want > 0.1 and err == pytest.approx(want, rel=1e-10)


def test_absorbable_block_costs_nothing(rng):
    kwargs, S, _ = planted_block(rng, 6, 6, 40, 8, bias=True)
    r = skipsearch.find_absorbing_subset(**kwargs)
    assert r.verdict == "absorbable"
    X = 3.0 * rng.standard_normal((500, 6))
    assert skipsearch.relative_output_error(r.block, X, **kwargs) < 1e-12
    empty = skipsearch.build_skip_free_block(
        kwargs["W_up"], kwargs["W_down"], [], b_up=kwargs["b_up"], b_down=kwargs["b_down"]
    )
    # S = {} drops the skip outright: the error is that of x against x + f(x).
    err = skipsearch.relative_output_error(empty, X, **kwargs)
    target = skipsearch.residual_block_output(X, **kwargs)
    assert err == pytest.approx(np.linalg.norm(X) / np.linalg.norm(target), rel=1e-12)


def test_bad_arguments(rng):
    W_up, W_down = rng.standard_normal((4, 3)), rng.standard_normal((3, 4))
    block = skipsearch.build_skip_free_block(W_up, W_down, [0, 1])
    X = rng.standard_normal((10, 3))
    with pytest.raises(TypeError, match="block must be a SkipFreeBlock"):
        skipsearch.relative_output_error("block", X, W_up, W_down)
    with pytest.raises(ValueError, match=r"x has shape \(10, 2\), expected \(n, 3\)"):
        skipsearch.relative_output_error(block, X[:, :2], W_up, W_down)
    other = skipsearch.build_skip_free_block(W_up[:, :2], W_down, [0])
    with pytest.raises(ValueError, match="block maps 2 inputs"):
        skipsearch.relative_output_error(other, X, W_up, W_down)
    with pytest.raises(ValueError, match="zero on X"):
        skipsearch.relative_output_error(block, np.zeros((5, 3)), W_up, W_down)
