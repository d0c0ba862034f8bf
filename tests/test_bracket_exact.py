"""The distance bracket never overclaims, checked in exact rational arithmetic.

For every block below the exact oracle (``tests/exact_oracle.py``) enumerates
all flip sets with Python integers, and the tests assert, with no rounding
anywhere:

- ``lower <= min_S ||E_S||_F / ||A||_F`` (the lower end bounds the optimum);
- ``upper >= ||E_S||_F / ||A||_F`` for ``S = best_subset`` (the upper end
  bounds the reported flip set's own residual);
- ``best_subset`` is no worse than the decision's own ``subset``;
- ``"optimal"`` only for a narrow bracket (``upper - lower <= 1e-3 upper +
  1e-12``).

The families are those where the float64 Gram form used to fail: terms far
larger than the skip that cancel exactly (its rounding allowance then swamps
every value), cancelling pairs of size ``2^40`` next to a near miss, and
blocks with two exact decompositions of ``-I`` that float64 cannot tell
apart.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import skipsearch
from skipsearch import _core

from tests.exact_oracle import flip_truth

#: The width below which a bracket may be called optimal (README, "How far
#: from absorbable"): ``upper - lower <= RELATIVE * upper + ABSOLUTE``.
RELATIVE, ABSOLUTE = 1e-3, 1e-12


def unimodular(rng, k):
    """A 2x2 integer matrix ``P`` with ``det P = 1`` and entries below
    ``2^k`` (the first row at least ``2^(k-1)``), and its integer inverse."""
    while True:
        a, b = (int(x) for x in rng.integers(1 << (k - 1), 1 << k, size=2))
        if math.gcd(a, b) == 1:
            break

    def egcd(p, q):
        if q == 0:
            return p, 1, 0
        g, s, t = egcd(q, p % q)
        return g, t, s - (p // q) * t

    _, x, y = egcd(a, b)  # a x + b y = 1, |x| < b, |y| < a
    return [[a, b], [-y, x]], [[x, -b], [y, a]]


def large_integer_absorbable(rng):
    """``A = I`` (2x2) and two neurons whose integer terms, with entries
    from ``2^17`` to ``2^52``, sum to ``-I`` exactly; the other neurons are
    random integers of the same size."""
    k = int(rng.integers(18, 53))
    m = int(rng.integers(5, 10))
    P, Pinv = unimodular(rng, k)
    U, V = np.zeros((m, 2)), np.zeros((2, m))
    S = np.sort(rng.choice(m, size=2, replace=False))
    for r, i in enumerate(S):
        U[i] = P[r]
        V[:, i] = [-Pinv[0][r], -Pinv[1][r]]
    for i in sorted(set(range(m)) - set(S.tolist())):
        U[i] = rng.integers(-(1 << 20), 1 << 20, size=2) * 2.0 ** (k - 20)
        V[:, i] = rng.integers(-8, 9, size=2)
    return U, V, S


def cancelling_near_miss(rng):
    """``A = I`` (2x2). Neurons 0 and 1 are a pair of terms of size ``2^40``
    whose sum is the small ``x z^T``; with neuron 2 they miss ``-A`` by a
    dyadic perturbation near ``1e-3``. Neurons 3.. are small integers."""
    big = 2.0**20
    m = int(rng.integers(6, 11))
    x, z = np.array([1.0, 0.0]), np.array([-1.0, 0.0])
    y = rng.integers(1, 8, size=2).astype(float)
    U, V = np.zeros((m, 2)), np.zeros((2, m))
    V[:, 0], U[0] = big * x, big * y
    V[:, 1], U[1] = -big * x, big * y - z / big  # both exact in float64
    eps = rng.integers(1, 16, size=2) * 2.0**-14
    V[:, 2], U[2] = [0.0, 1.0], [eps[0], -1.0 + eps[1]]
    for i in range(3, m):
        U[i] = rng.integers(-4, 5, size=2)
        V[:, i] = rng.integers(-4, 5, size=2)
    A = np.eye(2)
    A[1, 0] += float(rng.integers(0, 2)) * 2.0**-9
    return U, V, A


def two_decompositions(rng):
    """Standard normal weights (d = 3) in which two disjoint flip sets of
    three neurons each give ``-I`` up to float64 rounding."""
    m = int(rng.integers(8, 13))
    U = rng.standard_normal((m, 3))
    V = rng.standard_normal((3, m))
    S = rng.choice(m, size=6, replace=False)
    for part in (np.sort(S[:3]), np.sort(S[3:])):
        V[:, part] = -np.linalg.inv(U[part])
    return U, V


def check(r, truth):
    """Every claim of ``r``'s bracket against the exact truth; returns the
    exact squared residual of ``best_subset``."""
    lower, upper = r.distance_bracket
    assert 0.0 <= lower <= upper
    best = truth.ratio_sq(r.best_subset.tolist())
    assert Fraction(lower) ** 2 <= truth.min_ratio_sq, (r.distance_bracket, truth.min_ratio_sq)
    assert best <= Fraction(upper) ** 2, (r.best_subset, float(best) ** 0.5, upper)
    if r.subset is not None:
        assert best <= truth.ratio_sq(r.subset.tolist()), (r.subset, r.best_subset)
    if r.stats.bracket == "optimal":
        assert upper - lower <= RELATIVE * upper + ABSOLUTE, r.distance_bracket
    return best


def test_large_cancelling_integer_terms_keep_the_exact_flip_set():
    rng = np.random.default_rng(18)
    for _ in range(12):
        U, V, S = large_integer_absorbable(rng)
        truth = flip_truth(U, V, np.eye(2), 1, 1e-8)
        assert truth.ratio_sq(S.tolist()) == 0
        r = skipsearch.find_absorbing_subset(U, V)
        assert r.verdict == "absorbable" and r.residual == 0.0
        check(r, truth)
        # The decision's exact flip set, with its exact residual 0: the
        # bracket is the optimum itself.
        assert r.best_subset.tolist() == r.subset.tolist()
        assert r.distance_bracket == (0.0, 0.0)
        assert r.stats.bracket == "optimal"


def test_cancelling_pairs_never_give_an_optimal_trivial_bracket():
    rng = np.random.default_rng(40)
    for _ in range(10):
        U, V, A = cancelling_near_miss(rng)
        truth = flip_truth(U, V, A, 1, 1e-8)
        opt = float(truth.min_ratio_sq) ** 0.5
        assert 1e-5 < opt < 3e-3  # a near miss
        r = skipsearch.find_absorbing_subset(U, V, skip=A)
        check(r, truth)
        lower, upper = r.distance_bracket
        if r.stats.bracket == "optimal":
            assert lower <= opt <= upper <= (1 + 2 * RELATIVE) * opt + ABSOLUTE
        else:
            assert upper - lower > RELATIVE * upper + ABSOLUTE


def test_a_worse_flip_set_never_replaces_the_decisions():
    rng = np.random.default_rng(17)
    decided = 0
    for _ in range(40):
        U, V = two_decompositions(rng)
        truth = flip_truth(U, V, np.eye(3), 1, 1e-8)
        r = skipsearch.find_absorbing_subset(U, V)
        assert r.verdict == "absorbable"
        check(r, truth)
        decided += r.subset is not None
        # The decision's residual is an upper end the bracket never exceeds.
        assert r.distance_bracket[1] <= r.residual
    assert decided == 40


def test_perturbed_blocks_are_bracketed_exactly():
    # Ordinary blocks (a planted flip set, then noise): the exact optimum in
    # the bracket, and the upper end above the reported set's exact residual.
    rng = np.random.default_rng(99)
    optimal = 0
    for _ in range(30):
        m, d = int(rng.integers(4, 12)), int(rng.integers(2, 4))
        U, V = rng.standard_normal((m, d)), rng.standard_normal((d, m))
        S = rng.choice(m, size=min(m, d + int(rng.integers(0, 3))), replace=False)
        V[:, S] = -np.linalg.pinv(U[S])
        V += rng.normal(scale=10 ** rng.uniform(-4, -0.5), size=V.shape)
        truth = flip_truth(U, V, np.eye(d), 1, 1e-8)
        r = skipsearch.find_absorbing_subset(U, V)
        check(r, truth)
        optimal += r.stats.bracket == "optimal"
    assert optimal == 30  # the branch and bound completes and is narrow here


def test_the_binding_keeps_a_start_it_cannot_beat():
    rng = np.random.default_rng(3)
    U, V, S = large_integer_absorbable(rng)
    truth = flip_truth(U, V, np.eye(2), 1, 1e-8)
    # Without the start the float64 search cannot see the exact flip set:
    # whatever it reports is proven, and not optimal unless narrow.
    alone = _core.flip_set_bracket(U, V, np.eye(2), 1.0)
    assert truth.ratio_sq(alone["best_subset"].tolist()) <= Fraction(alone["upper"]) ** 2
    assert Fraction(alone["lower"]) ** 2 <= truth.min_ratio_sq
    if alone["optimal"]:
        assert alone["upper"] - alone["lower"] <= RELATIVE * alone["upper"] + ABSOLUTE
    # With it (unsorted, repeated), the exact sums prove its residual 0.
    start = [int(S[1]), int(S[0]), int(S[1])]
    found = _core.flip_set_bracket(U, V, np.eye(2), 1.0, 0.0, start)
    assert found["best_subset"].tolist() == sorted(S.tolist())
    assert (found["lower"], found["upper"], found["optimal"]) == (0.0, 0.0, True)
    # A stated residual for the start is an upper end the bracket keeps.
    found = _core.flip_set_bracket(
        U, V, np.eye(2), 1.0, 0.0, start, time_limit=0.0, start_residual=0.25
    )
    assert found["best_subset"].tolist() == sorted(S.tolist()) and found["upper"] <= 0.25


def test_the_binding_checks_start_and_its_residual():
    U, V = np.eye(3), -np.eye(3)
    with pytest.raises(ValueError, match="start holds neuron 3"):
        _core.flip_set_bracket(U, V, np.eye(3), 1.0, 0.0, [0, 3])
    with pytest.raises(ValueError, match="start_residual"):
        _core.flip_set_bracket(U, V, np.eye(3), 1.0, start_residual=0.0)
    for bad in (-1.0, float("nan")):
        with pytest.raises(ValueError, match="start_residual"):
            _core.flip_set_bracket(U, V, np.eye(3), 1.0, 0.0, [0], start_residual=bad)
