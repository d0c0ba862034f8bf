"""Neurons too large for any flip set, kept out by the triangle inequality.

One weight of ``1e18``-``1e36`` among ordinary ones (an exponent bit flipped
in a stored checkpoint) made every certificate's rounding allowance swamp
its margin, and the search ran until its time limit. A neuron whose term
outweighs the skip and every smaller term together is in no flip set within
the tolerance; the certificate then bounds the flip sets that avoid it.
The truth here comes from exact rationals over every flip set.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
import skipsearch
from skipsearch import rounding


def _huge(seed: int, m: int, d: int, value: float, where: str):
    rng = np.random.default_rng(seed)
    W_up = rng.standard_normal((m, d))
    W_down = rng.standard_normal((d, m))
    if where == "up":
        W_up[3, d - 1] = value
    else:
        W_down[d - 1, 3] = value
    return W_up, W_down


def _exact_least(W_up, W_down, A, subsets) -> Fraction:
    """The least relative squared residual over ``subsets``, exactly."""
    Af = [[Fraction(x) for x in row] for row in A.tolist()]
    norm = sum(x * x for row in Af for x in row)
    best = None
    for S in subsets:
        R = [row[:] for row in Af]
        for i in S:
            for p in range(A.shape[0]):
                for q in range(A.shape[1]):
                    R[p][q] += Fraction(W_down[p, i]) * Fraction(W_up[i, q])
        v = sum(x * x for row in R for x in row) / norm
        best = v if best is None or v < best else best
    return best


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("where", ["up", "down"])
@pytest.mark.parametrize("value", [1e18, 1e30, 1e36])
def test_one_huge_weight_is_decided(activation: str, where: str, value: float) -> None:
    """Before: undecided at the time limit for some seeds (4 of 30 for ReLU
    at 1e36 in W_up); now decided by a certificate at once."""
    for seed in (3, 4, 10):
        W_up, W_down = _huge(seed, 32, 8, value, where)
        r = skipsearch.find_absorbing_subset(W_up, W_down, activation=activation, time_limit=60)
        assert r.verdict == "not_absorbable", r
        assert r.excluded_neurons.tolist() == [3]
        assert r.genericity.dead_neurons.tolist() == []
        assert r.distance_bound > r.tolerance
        # The user's own check, with and without the exclusion.
        bound = skipsearch.check_certificate(
            r.certificate,
            W_up,
            W_down,
            activation=activation,
            excluded=r.excluded_neurons,
            tol=r.tolerance,
        )
        assert bound > r.tolerance


def test_the_bounds_hold_in_exact_arithmetic() -> None:
    """m = 10: every flip set's exact residual against the two bounds."""
    W_up, W_down = _huge(5, 10, 3, 1e20, "up")
    A = np.eye(3)
    r = skipsearch.find_absorbing_subset(W_up, W_down)
    assert r.excluded_neurons.tolist() == [3]
    with_3 = [S for k in range(10) for S in itertools.combinations(range(10), k) if 3 in S]
    without = [S for k in range(10) for S in itertools.combinations(range(10), k) if 3 not in S]
    ex = rounding.exclusion_bound(W_up, W_down, A, 1.0, [3])
    assert ex > 1e18
    assert Fraction(ex) ** 2 <= _exact_least(W_up, W_down, A, with_3)
    assert Fraction(r.distance_bound) ** 2 <= _exact_least(W_up, W_down, A, without)
    assert r.distance_bound <= ex


def test_an_absorbable_block_keeps_its_flip_set() -> None:
    """A planted flip set beside a dominant neuron is still found."""
    rng = np.random.default_rng(2)
    W_up = rng.integers(-3, 4, size=(12, 3)).astype(float)
    W_down = rng.integers(-3, 4, size=(3, 12)).astype(float)
    W_up[W_up[:, 0] == 0, 0] = 1.0
    W_down[0, W_down[0] == 0] = 2.0
    W_up[7] = [2.0**70, 1.0, -1.0]
    S = [0, 4, 9]
    A = -(W_down[:, S] @ W_up[S])
    r = skipsearch.find_absorbing_subset(W_up, W_down, skip=A)
    assert r.verdict == "absorbable", r
    assert r.subset.tolist() == S
    assert r.excluded_neurons.tolist() == [7]
    x = rng.standard_normal((5, 3))
    relu = lambda z: np.maximum(z, 0.0)  # noqa: E731
    want = x @ A.T + relu(x @ W_up.T) @ W_down.T
    got = r.block(x)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())


def test_a_false_exclusion_proves_nothing() -> None:
    """check_certificate re-derives the exclusion: naming an ordinary
    neuron gives 0.0, and bad indices are errors naming the argument."""
    W_up, W_down = _huge(3, 32, 8, 1e36, "up")
    r = skipsearch.find_absorbing_subset(W_up, W_down)
    Y = r.certificate
    assert skipsearch.check_certificate(Y, W_up, W_down, excluded=[3, 5]) == 0.0
    assert skipsearch.check_certificate(Y, W_up, W_down, excluded=[]) > 0.5
    with pytest.raises(ValueError, match="excluded must hold neuron indices"):
        skipsearch.check_certificate(Y, W_up, W_down, excluded=[32])
    with pytest.raises(TypeError, match="excluded must be a 1-D array"):
        skipsearch.check_certificate(Y, W_up, W_down, excluded=[[3]])


def test_ordinary_blocks_exclude_nothing() -> None:
    rng = np.random.default_rng(0)
    r = skipsearch.find_absorbing_subset(rng.standard_normal((40, 8)), rng.standard_normal((8, 40)))
    assert r.excluded_neurons is None
    assert "avoid neurons" not in r.reason
