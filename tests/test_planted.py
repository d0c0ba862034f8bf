"""Planted flip sets are recovered exactly, and the built block equals
A x + f(x) numerically."""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch

from tests.conftest import planted_block

CASES = [
    # activation, c, skip kind, bias
    ("relu", 1.0, "identity", False),
    ("relu", 1.0, "identity", True),
    ("relu", 1.0, "invertible", False),
    ("relu", 1.0, "invertible", True),
    ("gelu", 1.0, "identity", False),
    ("gelu", 1.0, "invertible", True),
    ("gelu_new", 1.0, "identity", True),
    ("leaky_relu", 1.01, "identity", True),
    ("silu", 1.0, "invertible", False),
]


@pytest.mark.parametrize("activation,c,skip_kind,bias", CASES)
@pytest.mark.parametrize("seed", range(3))
def test_planted_subset_recovered(activation, c, skip_kind, bias, seed):
    rng = np.random.default_rng(seed)
    d, m = 5, 14
    k = int(rng.integers(d, d + 4))
    skip = None if skip_kind == "identity" else rng.standard_normal((d, d))
    kwargs, S, _ = planted_block(rng, d, d, m, k, c=c, skip=skip, bias=bias)
    r = skipsearch.find_absorbing_subset(activation=activation, **kwargs)
    assert r.verdict == "absorbable", r
    assert r.subset.tolist() == S.tolist()
    assert r.residual < 1e-12
    assert r.argument == "flip_construction"
    diff = skipsearch.max_abs_difference(r.block, activation=activation, **kwargs)
    assert diff < 1e-9


def test_custom_leaky_slope_and_scalar_skip(rng):
    act = skipsearch.leaky_relu(0.2)
    kwargs, S, _ = planted_block(rng, 4, 4, 10, 5, c=1.2, skip=0.5 * np.eye(4))
    kwargs["skip"] = 0.5
    r = skipsearch.find_absorbing_subset(activation=act, **kwargs)
    assert r.subset.tolist() == S.tolist()
    assert r.flip_constant == pytest.approx(1.2)
    assert skipsearch.max_abs_difference(r.block, activation=act, **kwargs) < 1e-9


def test_rectangular_skip(rng):
    A = rng.standard_normal((3, 5))
    kwargs, S, _ = planted_block(rng, 5, 3, 12, 6, skip=A, bias=True)
    r = skipsearch.find_absorbing_subset(**kwargs)
    assert r.subset.tolist() == S.tolist()
    assert skipsearch.max_abs_difference(r.block, **kwargs) < 1e-9


def test_float32_planted_block_is_still_found(rng):
    kwargs, S, _ = planted_block(rng, 6, 6, 20, 8, bias=True)
    f32 = {k: v.astype(np.float32) for k, v in kwargs.items()}
    r = skipsearch.find_absorbing_subset(activation="gelu", **f32)
    assert r.verdict == "absorbable"
    assert r.subset.tolist() == S.tolist()
    assert r.tolerance == pytest.approx(np.sqrt(np.finfo(np.float32).eps))
    assert r.residual < r.tolerance


def test_wider_than_d_squared_goes_through_null_space(rng):
    # m > d^2: the Gram matrix is singular even for random weights.
    kwargs, S, _ = planted_block(rng, 2, 2, 7, 2)
    r = skipsearch.find_absorbing_subset(**kwargs)
    assert r.verdict == "absorbable"
    assert r.residual < 1e-12
    assert r.stats.gram_rank == 4
    assert "branch and bound" in r.stats.method
    assert skipsearch.max_abs_difference(r.block, **kwargs) < 1e-9


def test_real_sized_planted_block(rng):
    kwargs, S, _ = planted_block(rng, 32, 32, 128, 40)
    r = skipsearch.find_absorbing_subset(activation="gelu", **kwargs)
    assert r.subset.tolist() == S.tolist()
    assert skipsearch.max_abs_difference(r.block, activation="gelu", **kwargs) < 1e-9


def test_slope_given_as_a_string_and_block_activation_default(rng):
    kwargs, S, _ = planted_block(rng, 3, 3, 8, 4, c=1.2, bias=True)
    r = skipsearch.find_absorbing_subset(activation="leaky_relu(0.2)", **kwargs)
    assert r.activation == "leaky_relu(0.2)" and r.subset.tolist() == S.tolist()
    # max_abs_difference takes the activation from the block by default ...
    assert skipsearch.max_abs_difference(r.block, **kwargs) < 1e-9
    # ... and an explicit wrong one shows the mismatch.
    assert skipsearch.max_abs_difference(r.block, activation="relu", **kwargs) > 1e-3
    assert not np.signbit(r.block.b_up[r.block.b_up == 0]).any()
