"""The distance bracket: a proven (lower, upper) around the best flip set's
relative residual, checked against brute force over every flip set."""

from __future__ import annotations

import numpy as np
import pytest
import skipsearch
import skipsearch.bracket as bracket_module

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
    codes = (np.arange(1 << m)[:, None] >> np.arange(m)) & 1
    R = (c * np.einsum("pi,iq->ipq", V, U)).reshape(m, -1)
    E = codes @ R + np.eye(d).reshape(-1)
    return float(np.sqrt(np.min(np.einsum("kj,kj->k", E, E)) / d))


@pytest.mark.parametrize("activation, c", [("relu", 1.0), ("leaky_relu(0.2)", 1.2)])
def test_small_blocks_get_the_proven_optimum(activation, c):
    rng = np.random.default_rng(12)
    for _ in range(40):
        m, d = int(rng.integers(4, 13)), int(rng.integers(2, 5))
        U, V = perturbed_block(rng, m, d, c)
        r = skipsearch.find_absorbing_subset(U, V, activation=activation, bracket=True)
        lower, upper = r.distance_bracket
        best = optimum(U, V, c)
        # Every flip set was bracketed: the bracket is the optimum itself.
        assert lower <= best * (1 + 1e-12) and best <= upper * (1 + 1e-12)
        assert upper - lower <= 1e-9 * max(best, 1e-300) + 1e-15
        E = np.eye(d) + c * V[:, r.best_subset] @ U[r.best_subset]
        assert np.linalg.norm(E) / np.sqrt(d) <= upper


def test_local_search_bracket_holds_and_is_near_the_optimum(monkeypatch):
    monkeypatch.setattr(bracket_module, "ENUMERATION_WORK", 0)  # no enumeration
    rng = np.random.default_rng(3)
    near = 0
    runs = 120
    for _ in range(runs):
        m, d = int(rng.integers(10, 17)), int(rng.integers(2, 7))
        U, V = perturbed_block(rng, m, d)
        r = skipsearch.find_absorbing_subset(U, V, bracket=True)
        lower, upper = r.distance_bracket
        best = optimum(U, V)
        assert lower <= best * (1 + 1e-12) <= upper * (1 + 1e-12) + 1e-15
        near += upper <= 1.02 * best
    # Measured 95% on this family; the enumeration covers the small cases.
    assert near >= 0.9 * runs, near


def test_absorbable_and_zero_skip_brackets(rng):
    kwargs, S, _ = planted_block(rng, 4, 4, 14, 5)
    r = skipsearch.find_absorbing_subset(**kwargs, bracket=True)
    assert r.verdict == "absorbable"
    lower, upper = r.distance_bracket
    assert lower == 0.0 and upper <= r.tolerance
    r = skipsearch.find_absorbing_subset(np.eye(3), np.eye(3), skip=np.zeros((3, 3)), bracket=True)
    assert r.distance_bracket == (0.0, 0.0) and r.best_subset.tolist() == []


def test_bracket_is_opt_in_and_for_flip_linear_activations_only(rng):
    U, V = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    assert skipsearch.find_absorbing_subset(U, V).distance_bracket is None
    gated = skipsearch.find_absorbing_subset(
        U, V, W_gate=rng.standard_normal((6, 3)), activation="swiglu", bracket=True
    )
    assert gated.distance_bracket is None and gated.best_subset is None
    with pytest.raises(TypeError, match="bracket must be True or False"):
        skipsearch.find_absorbing_subset(U, V, bracket="yes")
