"""The worked examples of docs/theory.md §8, checked value by value."""

from __future__ import annotations

import numpy as np
import skipsearch
from skipsearch import baseline


def test_one_neuron_relu():
    # x - relu(x) = -relu(-x): S = {0}, and g has u' = -1, v' = -1.
    r = skipsearch.find_absorbing_subset(np.array([[1.0]]), np.array([[-1.0]]))
    assert r.verdict == "absorbable"
    assert r.subset.tolist() == [0]
    assert r.block.W_up.tolist() == [[-1.0]]
    assert r.block.W_down.tolist() == [[-1.0]]
    x = np.linspace(-3, 3, 13)[:, None]
    np.testing.assert_allclose(r.block(x), x - np.maximum(x, 0), atol=1e-15)


def test_two_neurons_identity():
    r = skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2))
    assert r.subset.tolist() == [0, 1]
    x = np.random.default_rng(0).normal(size=(50, 2))
    np.testing.assert_allclose(r.block(x), -np.maximum(-x, 0), atol=1e-15)


def test_third_neuron_alive_and_dead():
    W_up = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    alive = np.array([[-1.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
    r = skipsearch.find_absorbing_subset(W_up, alive)
    assert r.verdict == "absorbable" and r.subset.tolist() == [0, 1]
    assert r.genericity.passed
    dead = alive.copy()
    dead[:, 2] = 0.0
    r = skipsearch.find_absorbing_subset(W_up, dead)
    assert r.verdict == "absorbable" and r.subset.tolist() == [0, 1]
    assert not r.genericity.passed
    assert r.genericity.dead_neurons.tolist() == [2]


def test_split_neurons_singular_gram():
    W_up = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    W_down = np.array([[-1.0, 0.0, -1.0, 0.0], [0.0, -1.0, 0.0, -1.0]]) / 2
    r = skipsearch.find_absorbing_subset(W_up, W_down)
    assert r.verdict == "absorbable"
    assert r.subset.tolist() == [0, 1, 2, 3]
    assert r.stats.gram_rank == 2
    assert "null space" in r.stats.method
    assert not r.genericity.passed
    assert {tuple(p) for p in r.genericity.offending_pairs.tolist()} == {(0, 2), (1, 3)}
    # It is the only flip set: the baseline enumerates all 16.
    b = baseline.find_absorbing_subset(W_up, W_down)
    assert b.subset.tolist() == [0, 1, 2, 3]
    assert skipsearch.max_abs_difference(r.block, W_up, W_down) < 1e-12
