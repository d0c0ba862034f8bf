"""Random generic weights are not absorbable, with a certificate that the
test re-checks independently."""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh", "leaky_relu"])
@pytest.mark.parametrize("seed", range(3))
def test_generic_weights_not_absorbable(activation, seed):
    rng = np.random.default_rng(100 + seed)
    d, m = 6, 24
    W_up, W_down = rng.standard_normal((m, d)), rng.standard_normal((d, m))
    b_up = rng.standard_normal(m)
    r = skipsearch.find_absorbing_subset(W_up, W_down, b_up=b_up, activation=activation)
    assert r.verdict == "not_absorbable"
    assert r.argument == "certificate"
    assert r.genericity.passed
    Y = r.certificate
    assert Y.shape == (d, d)
    # Y is orthogonal to every rank-one term and <Y, T> = ||Y||^2.
    c = r.flip_constant
    inner = c * np.einsum("pi,pq,iq->i", W_down, Y, W_up)
    assert np.max(np.abs(inner)) < 1e-9 * np.linalg.norm(Y)
    assert -np.sum(Y * np.eye(d)) == pytest.approx(np.sum(Y * Y), rel=1e-9)
    bound = skipsearch.check_certificate(Y, W_up, W_down, activation=activation)
    assert bound == pytest.approx(r.relaxation_distance, rel=1e-6)
    assert bound > r.tolerance
    # The distance is the least-squares distance, computed here independently.
    R = c * np.einsum("pi,iq->ipq", W_down, W_up).reshape(m, -1)
    s, *_ = np.linalg.lstsq(R.T, -np.eye(d).ravel(), rcond=None)
    lstsq = np.linalg.norm(R.T @ s + np.eye(d).ravel()) / np.sqrt(d)
    assert r.relaxation_distance == pytest.approx(lstsq, rel=1e-8)


def test_a_wrong_certificate_proves_nothing(rng):
    W_up, W_down = rng.standard_normal((10, 4)), rng.standard_normal((4, 10))
    # Y = -A is not orthogonal to the terms: the bound must fall below the
    # true distance, not above it.
    r = skipsearch.find_absorbing_subset(W_up, W_down)
    bogus = skipsearch.check_certificate(-np.eye(4), W_up, W_down)
    assert bogus <= r.relaxation_distance + 1e-12


def test_certificate_check_is_scale_invariant(rng):
    W_up, W_down = rng.standard_normal((32, 8)), rng.standard_normal((8, 32))
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu")
    for scale in (1e-300, 1e-5, 1e300):
        bound = skipsearch.check_certificate(scale * r.certificate, W_up, W_down, activation="gelu")
        assert bound == pytest.approx(r.relaxation_distance, rel=1e-9)


def test_silu_without_flip_set_is_undecided(rng):
    W_up, W_down = rng.standard_normal((10, 4)), rng.standard_normal((4, 10))
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation="silu")
    assert r.verdict == "undecided"
    assert r.certificate is not None
    assert "only known to be sufficient" in r.reason


def test_proportional_neurons_make_it_undecided(rng):
    W_up, W_down = rng.standard_normal((8, 4)), rng.standard_normal((4, 8))
    W_up[5] = -2.5 * W_up[1]
    r = skipsearch.find_absorbing_subset(W_up, W_down)
    assert r.verdict == "undecided"
    assert r.genericity.offending_pairs.tolist() == [[1, 5]]
    assert "(1, 5)" in r.reason
    # For GELU a proportional (not equal) pair is fine.
    g = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu")
    assert g.verdict == "not_absorbable"
    W_up[5] = -W_up[1]
    g = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu")
    assert g.verdict == "undecided"
