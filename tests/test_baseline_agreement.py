"""The Rust core agrees with the brute-force baseline on random small
instances, degenerate ones (duplicated, split, dead neurons, integer
weights, m > d^2) included."""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from skipsearch import baseline


def _instance(seed, d, m, planted, duplicates, splits, integer):
    rng = np.random.default_rng(seed)
    if integer:
        W_up = rng.integers(-2, 3, size=(m, d)).astype(float)
        W_down = rng.integers(-2, 3, size=(d, m)).astype(float)
    else:
        W_up = rng.standard_normal((m, d))
        W_down = rng.standard_normal((d, m))
    if planted and m >= d:
        # plant S on the first d neurons: W_up[S] = I, W_down[:, S] = -I
        S = rng.choice(m, size=d, replace=False)
        W_up[S] = np.eye(d)
        W_down[:, S] = -np.eye(d)
    for _ in range(duplicates):
        i, j = rng.choice(m, size=2, replace=False)
        W_up[j] = W_up[i]
        W_down[:, j] = W_down[:, i]
    for _ in range(splits):
        # split neuron i into two halves: append a copy with half the output
        i = int(rng.integers(m))
        W_down[:, i] /= 2
        W_up = np.vstack([W_up, W_up[i]])
        W_down = np.hstack([W_down, W_down[:, i : i + 1]])
    return W_up, W_down


def _agree(W_up, W_down, **kwargs):
    r = skipsearch.find_absorbing_subset(W_up, W_down, **kwargs)
    b = baseline.find_absorbing_subset(W_up, W_down, **kwargs)
    assert r.verdict == b.verdict, (r, b)
    assert (r.subset is None) == (b.subset is None), (r, b)
    if r.subset is not None:
        # Several flip sets may exist; both must verify independently.
        act = skipsearch.get_activation(kwargs.get("activation", "relu"))
        for s in (r.subset, b.subset):
            E = act.flip_constant * W_down[:, s] @ W_up[s] + np.eye(W_down.shape[0])
            assert np.linalg.norm(E) <= r.tolerance * np.sqrt(W_down.shape[0])
    assert r.relaxation_distance == pytest.approx(b.relaxation_distance, abs=1e-7)
    assert r.genericity.passed == b.genericity.passed
    np.testing.assert_array_equal(r.genericity.dead_neurons, b.genericity.dead_neurons)
    assert r.genericity.offending_pair_count == b.genericity.offending_pair_count
    return r, b


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 3),
    m=st.integers(1, 12),
    planted=st.booleans(),
    duplicates=st.integers(0, 3),
    splits=st.integers(0, 2),
    integer=st.booleans(),
    activation=st.sampled_from(["relu", "gelu", "leaky_relu"]),
)
def test_agreement_with_baseline(seed, d, m, planted, duplicates, splits, integer, activation):
    if m < 2:
        duplicates = 0
    W_up, W_down = _instance(seed, d, m, planted, duplicates, splits, integer)
    _agree(W_up, W_down, activation=activation)


def test_planted_with_duplicates_found_by_both():
    W_up, W_down = _instance(7, 3, 10, True, 3, 2, False)
    r, b = _agree(W_up, W_down)
    assert r.verdict in ("absorbable", "undecided")


def test_integer_hard_core_agrees():
    # d = 2, m = 14: 0/1 subset sum in 4 dimensions with small integers.
    for seed in range(20):
        rng = np.random.default_rng(seed)
        W_up = rng.integers(-3, 4, size=(14, 2)).astype(float)
        W_down = rng.integers(-3, 4, size=(2, 14)).astype(float)
        _agree(W_up, W_down)
