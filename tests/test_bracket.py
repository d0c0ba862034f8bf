"""The distance bracket: a proven (lower, upper) around the best flip set's
relative residual, checked against brute force over every flip set."""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch
from skipsearch import SearchOptions, _core

from tests.conftest import planted_block


def perturbed_block(rng, m, d, c=1.0):
    """A planted flip set, then noise of random size on W_down."""
    U, V = rng.standard_normal((m, d)), rng.standard_normal((d, m))
    S = rng.choice(m, size=min(m, d + int(rng.integers(0, 3))), replace=False)
    V[:, S] = -np.linalg.pinv(U[S]) / c
    V += rng.normal(scale=10 ** rng.uniform(-4, -0.5), size=V.shape)
    return U, V


def optimum(U, V, c=1.0):
    """min over all flip sets of ||I + c V[:, S] U[S]||_F / ||I||_F, by brute force."""
    m, d = U.shape
    R = (c * np.einsum("pi,iq->ipq", V, U)).reshape(m, -1)
    best = np.inf
    for first in range(0, 1 << m, 1 << 14):
        codes = (np.arange(first, min(first + (1 << 14), 1 << m))[:, None] >> np.arange(m)) & 1
        E = codes @ R + np.eye(d).reshape(-1)
        best = min(best, float(np.min(np.einsum("kj,kj->k", E, E))))
    return float(np.sqrt(best / d))


def residual(U, V, subset, c=1.0):
    d = U.shape[1]
    return np.linalg.norm(np.eye(d) + c * V[:, subset] @ U[subset]) / np.sqrt(d)


@pytest.mark.parametrize("activation, c", [("relu", 1.0), ("leaky_relu(0.2)", 1.2)])
def test_small_blocks_get_the_proven_optimum(activation, c):
    rng = np.random.default_rng(12)
    for _ in range(40):
        m, d = int(rng.integers(4, 13)), int(rng.integers(2, 5))
        U, V = perturbed_block(rng, m, d, c)
        r = skipsearch.find_absorbing_subset(U, V, activation=activation)
        lower, upper = r.distance_bracket
        best = optimum(U, V, c)
        # The branch and bound completed: the bracket is the optimum itself.
        assert r.stats.bracket == "optimal"
        assert lower <= best <= upper
        # Equal to rounding: the Gram form's allowance, tiny next to the values.
        assert upper - lower <= 1e-4 * best + 1e-9
        assert residual(U, V, r.best_subset, c) <= upper
        if r.verdict == "not_absorbable":
            assert lower >= (r.relaxation_distance or 0.0)


def test_perturbed_blocks_up_to_sixteen_neurons_are_exact():
    rng = np.random.default_rng(3)
    near = 0
    runs = 60
    for _ in range(runs):
        m, d = int(rng.integers(10, 17)), int(rng.integers(2, 7))
        U, V = perturbed_block(rng, m, d)
        r = skipsearch.find_absorbing_subset(U, V)
        lower, upper = r.distance_bracket
        best = optimum(U, V)
        assert lower <= best <= upper
        assert r.stats.bracket == "optimal", r.stats
        near += upper <= 1.02 * best
    assert near == runs


def test_forty_neurons_are_proved_optimal_with_bracket_true():
    rng = np.random.default_rng(40)
    for _ in range(3):
        U, V = perturbed_block(rng, 40, 8)
        r = skipsearch.find_absorbing_subset(U, V, bracket=True)
        lower, upper = r.distance_bracket
        assert r.stats.bracket == "optimal", r.stats
        assert upper - lower <= 1e-4 * upper  # equal to the rounding allowance
        assert lower <= residual(U, V, r.best_subset) <= upper


def test_wide_blocks_get_a_valid_bracket_from_the_local_search():
    rng = np.random.default_rng(7)
    U, V = perturbed_block(rng, 120, 10)
    r = skipsearch.find_absorbing_subset(U, V)
    lower, upper = r.distance_bracket
    assert r.stats.bracket == "bounds"  # wider than the branch and bound takes
    assert r.verdict == "not_absorbable"
    # The box relaxation is at least as tight as the least-squares one.
    assert lower >= r.relaxation_distance
    assert lower <= residual(U, V, r.best_subset) <= upper < 1.0


def test_a_stopped_branch_and_bound_keeps_a_valid_bracket():
    rng = np.random.default_rng(5)
    U, V = perturbed_block(rng, 14, 3)
    best = optimum(U, V)
    found = _core.flip_set_bracket(U, V, np.eye(3), 1.0, 0.0, None, node_limit=1)
    assert not found["optimal"]
    assert found["lower"] <= best <= found["upper"]
    assert residual(U, V, found["best_subset"]) <= found["upper"]


def test_absorbable_and_zero_skip_brackets(rng):
    kwargs, S, _ = planted_block(rng, 4, 4, 14, 5)
    r = skipsearch.find_absorbing_subset(**kwargs)
    assert r.verdict == "absorbable"
    lower, upper = r.distance_bracket
    assert lower == 0.0 and upper <= r.tolerance
    r = skipsearch.find_absorbing_subset(np.eye(3), np.eye(3), skip=np.zeros((3, 3)))
    assert r.distance_bracket == (0.0, 0.0) and r.best_subset.tolist() == []
    assert r.stats.bracket == "optimal"


def test_bracket_is_on_by_default_and_for_flip_linear_activations_only(rng):
    U, V = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    assert skipsearch.find_absorbing_subset(U, V).distance_bracket is not None
    off = skipsearch.find_absorbing_subset(U, V, bracket=False)
    assert off.distance_bracket is None and off.stats.bracket is None
    gated = skipsearch.find_absorbing_subset(
        U, V, W_gate=rng.standard_normal((6, 3)), activation="swiglu", bracket=True
    )
    assert gated.distance_bracket is None and gated.best_subset is None
    with pytest.raises(TypeError, match="bracket must be True, False or None"):
        skipsearch.find_absorbing_subset(U, V, bracket="yes")


def test_the_output_error_of_the_best_flip_set_matches_its_residual(rng):
    # For isotropic inputs the output error of g_S is ||E_S||_F / ||A x + f(x)||
    # on average: compare it with the bracket's upper end through E_S itself.
    U, V = perturbed_block(rng, 30, 6)
    r = skipsearch.find_absorbing_subset(U, V)
    S = r.best_subset
    block = skipsearch.build_skip_free_block(U, V, S)
    X = rng.standard_normal((2000, 6))
    got = skipsearch.relative_output_error(block, X, U, V)
    E = np.eye(6) + V[:, S] @ U[S]
    want = np.linalg.norm(X @ E.T) / np.linalg.norm(X + np.maximum(X @ U.T, 0) @ V.T)
    assert got == pytest.approx(want, rel=1e-9)


def test_leaky_relu_brackets_use_the_exact_flip_constant():
    # 1 + 0.1 is not a float64: the bracket must use the constant's rounding
    # error too, or its upper end misses a residual made of that error alone.
    from fractions import Fraction

    x = np.array([3.0, 9.0, 3.0, 6.0])
    A = np.zeros((2, 4))
    A[0] = -(1.1 * x)
    A[1, 0] = 5e-324
    r = skipsearch.find_absorbing_subset(
        x[None, :], np.array([[1.0], [0.0]]), activation="leaky_relu(0.1)", skip=A
    )
    assert r.best_subset.tolist() == [0]
    c = 1 + Fraction(0.1)
    E2 = sum((Fraction(A[0, j]) + c * Fraction(x[j])) ** 2 for j in range(4))
    E2 += Fraction(A[1, 0]) ** 2
    A2 = sum(Fraction(a) ** 2 for a in A.flat)
    assert Fraction(r.distance_bracket[1]) ** 2 * A2 >= E2
    assert Fraction(r.distance_bracket[0]) ** 2 * A2 <= E2


def test_overflowing_gram_gives_no_panic():
    big = [[1e155, 0.0], [0.0, 1.0]]
    for kwargs in ({"distance": False}, {"memory_limit": 40, "bracket": True}):
        r = skipsearch.find_absorbing_subset(np.eye(2), big, **kwargs)
        assert r.verdict in ("not_absorbable", "undecided")
        if r.distance_bracket is not None:
            lower, upper = r.distance_bracket
            assert lower <= upper
    found = _core.flip_set_bracket(np.ones((6, 3)), np.ones((3, 6)), 1e-300 * np.eye(3), 1.0)
    assert found["lower"] <= found["upper"] == 1.0


def test_bracket_options_and_limits(rng):
    U, V = perturbed_block(rng, 12, 3)
    assert skipsearch.find_absorbing_subset(U, V, bracket=np.False_).stats.bracket is None
    r = skipsearch.find_absorbing_subset(U, V, bracket=np.True_)
    assert r.stats.bracket == "optimal"
    with pytest.raises(ValueError):
        r.best_subset[0] = 5  # read-only, like the rest of the result
    # No time at all: the trivial bracket, still proven.
    found = _core.flip_set_bracket(U, V, np.eye(3), 1.0, 0.0, None, time_limit=0.0)
    assert not found["optimal"] and found["upper"] == 1.0 and found["lower"] == 0.0
    # A "known" lower bound above what a flip set reaches was not proven: ignored.
    found = _core.flip_set_bracket(U, V, np.eye(3), 1.0, 5.0)
    assert found["lower"] <= found["upper"] < 1.0
    for bad in (float("nan"), -1.0):
        with pytest.raises(ValueError, match="time_limit"):
            _core.flip_set_bracket(U, V, np.eye(3), 1.0, time_limit=bad)


def test_the_automatic_bracket_stays_within_time_limit(rng, monkeypatch):
    # The decision took 0.99 s and left 0.01 s of the limit: the bracket may
    # only take the rest, not its usual 1.5 times the decision.
    import skipsearch.absorption as absorption

    seen = {}
    real = _core.flip_set_bracket

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(absorption._core, "flip_set_bracket", spy)
    U, V = perturbed_block(rng, 12, 3)
    result = skipsearch.find_absorbing_subset(U, V, bracket=False)
    result = absorption.dataclasses.replace(
        result, stats=absorption.dataclasses.replace(result.stats, seconds=0.99)
    )
    w = absorption.Weights(U, V, None, None, None, None)
    act = skipsearch.get_activation("relu")
    absorption._with_bracket(
        result, w, act, SearchOptions(time_limit=0.01), auto=True, memory_limit=1 << 30
    )
    assert seen["time_limit"] == pytest.approx(0.01)
