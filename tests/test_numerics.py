"""Regressions from adversarial testing: ill-conditioning, scale and
extreme options never give a wrong verdict or a crash."""

from __future__ import annotations

import numpy as np
import pytest

import skipsearch
from skipsearch import baseline

find = skipsearch.find_absorbing_subset


@pytest.mark.parametrize("eps", [1e-6, 1e-7])
def test_nearly_dependent_neurons_keep_the_exact_flip_set(eps):
    # S = {0, 1} is exact; neuron 3 nearly duplicates a combination, which
    # makes the Gram matrix ill-conditioned (cond ~ 1 / eps^2).
    W_up = np.array([[1, 0], [0, 1], [1, 1], [1, -1 + eps]], float)
    W_down = np.array([[1, 0, 1, 1], [0, 1, 1, -1]], float)
    r = find(W_up, W_down, skip=-1.0, activation="gelu")
    assert r.verdict == "absorbable" and r.subset.tolist() == [0, 1]
    assert baseline.find_absorbing_subset(W_up, W_down, skip=-1.0, activation="gelu").verdict == (
        "absorbable"
    )


def test_flip_set_within_tolerance_is_found_next_to_a_tiny_neuron():
    u2 = np.array([1.0, 1.0]) / np.sqrt(2)
    v2 = 1e-4 * np.array([0.0, 1.0])
    R2 = np.outer(v2, u2)
    A = np.eye(2) + 0.5 * 1.49e-8 * np.sqrt(2) * R2 / np.linalg.norm(R2)
    W_up = np.array([[1.0, 0.0], [0.0, 1.0], u2])
    W_down = np.array([[-1.0, 0.0], [0.0, -1.0], v2]).T
    r = find(W_up, W_down, skip=A)
    assert r.verdict == "absorbable" and r.subset.tolist() == [0, 1]
    assert r.residual <= r.tolerance


@pytest.mark.parametrize("skip", [1e-170, 1e-320])
def test_tiny_skip_is_never_called_zero(skip, rng):
    W_up, W_down = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    r = find(W_up, W_down, skip=skip)
    assert r.verdict != "absorbable"


def test_overflowing_products_are_undecided(rng):
    W_up, W_down = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    r = find(W_up * 1e160, W_down * 1e160, skip=1.0)
    assert r.verdict == "undecided" and r.status == "overflow"


@pytest.mark.parametrize("limit", [1e19, 1e300])
def test_huge_time_limit_means_no_limit(limit, rng):
    W_up, W_down = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    r = find(W_up, W_down, time_limit=limit)
    assert r.verdict == "not_absorbable" and r.status == "complete"


def test_residual_block_output_checks_the_gate(rng):
    W_up, W_down = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match="gated: pass W_gate"):
        skipsearch.residual_block_output(x, W_up, W_down, activation="swiglu")
    with pytest.raises(ValueError, match="not gated, but W_gate was given"):
        skipsearch.residual_block_output(x, W_up, W_down, W_gate=W_up)
    with pytest.raises(TypeError, match="x has complex dtype"):
        skipsearch.residual_block_output(x + 1j, W_up, W_down)
    with pytest.raises(ValueError, match=r"x has shape \(2, 4\), expected \(n, 3\)"):
        skipsearch.residual_block_output(np.ones((2, 4)), W_up, W_down)
