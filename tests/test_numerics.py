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


def test_nearly_parallel_neurons_never_give_a_false_proof():
    # Three nearly parallel neurons of very different sizes: the flip set
    # {0, 2} is exact, but float64 cannot resolve the relaxation well
    # enough to rule other sets out, so the answer must not be a proof of
    # impossibility.
    W_up = np.array(
        [
            [-0.615102926235641, -0.615366386673162, 0.4109139101939532],
            [5.0918979619417755, 2.2206606544153114, 4.745731693674595],
            [2.545948978955315, 1.110330327804533, 2.372865842447287],
            [1.2728694232260744, 0.554768829521559, 1.1859680576859595],
        ]
    )
    W_down = np.array(
        [
            [178.0886100148026, 45.828026837420545, 24.43550399489755, 0.001066037244687328],
            [611.2393284560497, -82.95094339289663, -44.229443202424434, -0.001931456227295624],
            [181.97370923407846, 80.82254080243321, 43.0945788602704, 0.0018807638518468033],
        ]
    )
    skip = np.array(
        [
            [47.331278703275025, 82.45826329173141, -131.16125987466518],
            [488.5810053245989, 425.24542911408923, -146.21620751470618],
            [2.2159620000206095, 64.13128604836514, -177.03318258605924],
        ]
    )
    r = find(W_up, W_down, skip=skip, activation="gelu")
    assert r.verdict != "not_absorbable"
    assert baseline.find_absorbing_subset(
        W_up, W_down, skip=skip, activation="gelu"
    ).subset.tolist() == [0, 2]


@pytest.mark.parametrize("a", [1e-200, 1e-100, 1e100, 1e200])
def test_verdicts_do_not_depend_on_the_scale_of_the_weights(a, rng):
    from tests.conftest import planted_block

    kwargs, S, _ = planted_block(rng, 3, 3, 8, 3)
    r = find(kwargs["W_up"] * a, kwargs["W_down"] / a)
    assert r.verdict == "absorbable" and r.subset.tolist() == S.tolist()
    assert r.genericity.passed
    W_up, W_down = rng.standard_normal((6, 3)), rng.standard_normal((3, 6))
    ref = find(W_up, W_down)
    b = np.sqrt(a)
    r = find(W_up * b, W_down * b, skip=a)
    assert r.verdict == "not_absorbable"
    assert r.relaxation_distance == pytest.approx(ref.relaxation_distance, rel=1e-12)
    np.testing.assert_allclose(r.certificate / a, ref.certificate, rtol=1e-9, atol=1e-12)
    assert find(W_up * a, W_down).genericity.offending_pair_count == 0


@pytest.mark.parametrize(
    "backend", [skipsearch.find_absorbing_subset, baseline.find_absorbing_subset]
)
@pytest.mark.parametrize("seed", range(4))
def test_small_relaxation_distance_is_confirmed(backend, seed):
    # A planted block perturbed by 1e-5: the distance (~2e-5) is tiny next
    # to the terms, so a float64 residual is too coarse for its certificate
    # to confirm it. The refinement in extended precision confirms it to the
    # accuracy of lstsq, and it stays a proven lower bound.
    rng = np.random.default_rng(seed)
    d, m = 6, 24
    U = rng.normal(size=(m, d))
    V = rng.normal(size=(d, m))
    M = rng.normal(size=(d, d))
    U[:d], V[:, :d] = M, -np.linalg.inv(M)
    U += 1e-5 * rng.normal(size=U.shape)
    r = backend(U, V, activation="gelu")
    R = np.einsum("pi,iq->ipq", V, U).reshape(m, -1)
    s, *_ = np.linalg.lstsq(R.T, -np.eye(d).ravel(), rcond=None)
    ls = np.linalg.norm(R.T @ s + np.eye(d).ravel()) / np.sqrt(d)
    assert r.verdict == "not_absorbable" and r.argument == "certificate"
    assert r.relaxation_distance == pytest.approx(ls, rel=1e-7)
    assert r.distance_bound >= r.relaxation_distance


def test_subnormal_certificates_and_skips_do_not_overflow():
    # Breaker finding: the power-of-two scaling overflowed for entries below
    # 2^-1022. Exact values: Y = 5e-324 proves 0.5 on A = 2 (R_0 = -1);
    # a skip of 1e-310 against R_0 = -1 proves nothing.
    Wu, Wd = np.array([[1.0]]), np.array([[-1.0]])
    assert skipsearch.check_certificate(np.array([[5e-324]]), Wu, Wd, skip=2.0) == pytest.approx(
        0.5, rel=1e-12
    )
    assert skipsearch.check_certificate(np.array([[1.0]]), Wu, Wd, skip=1e-310) == 0.0


def test_baseline_residual_is_an_upper_bound_below_float64_range():
    # c = 1 + 1e-300 exactly: the residual of S = {0} is 1e-300 relative,
    # whose square underflows; the reported bound must still cover it.
    r = baseline.find_absorbing_subset(
        np.array([[1.0]]), np.array([[-1.0]]), activation="leaky_relu(1e-300)", tol=1e-300
    )
    assert r.verdict == "absorbable" and r.residual >= 1e-300


def test_wide_component_of_a_scalar_block_goes_to_meet_in_the_middle():
    # Breaker finding: d = 1, m = 35, a planted exact flip set; the
    # component has 34 free neurons and interval pruning took minutes.
    rng = np.random.default_rng(7)
    m = 35
    W_up = rng.normal(size=(m, 1))
    W_down = rng.normal(size=(1, m))
    planted = np.arange(0, m, 3)
    A = -(W_down[:, planted] @ W_up[planted])
    r = skipsearch.find_absorbing_subset(W_up, W_down, activation="gelu", skip=A, time_limit=60)
    assert r.verdict == "absorbable", r.reason
    assert "meet in the middle" in r.stats.method
    E = A + W_down[:, r.subset] @ W_up[r.subset]
    assert np.linalg.norm(E) <= r.tolerance * np.linalg.norm(A)


@pytest.mark.parametrize("side", [-1, 1])
def test_meet_in_the_middle_goes_on_past_a_rejected_candidate(side):
    # Breaker finding: on a d = 1 block (meet-in-the-middle route), the
    # first subset in the window lay just outside tol and the search gave
    # up as "unresolved". Every subset in the window is now verified and the
    # search goes on past those provably outside.
    from fractions import Fraction

    rng = np.random.default_rng(11)
    m = 20
    W_up = rng.integers(1, 50, size=(m, 1)) / 3
    W_down = rng.integers(-50, 50, size=(1, m)) / 3
    S = [7, 9, 11, 16, 18, 19]
    A = -(W_down[:, S] @ W_up[S]) + 1e-9
    exact = Fraction(A[0, 0]) + sum(Fraction(W_down[0, i]) * Fraction(W_up[i, 0]) for i in S)
    rho = abs(float(exact / Fraction(A[0, 0])))
    tol = rho * (1 + side * 1e-4)
    r = skipsearch.find_absorbing_subset(W_up, W_down, skip=A, tol=tol, time_limit=60)
    assert r.status == "complete", r.reason
    assert "meet in the middle" in r.stats.method
    if side > 0:
        assert r.verdict == "absorbable"
        E = Fraction(A[0, 0]) + sum(Fraction(W_down[0, i]) * Fraction(W_up[i, 0]) for i in r.subset)
        assert abs(E / Fraction(A[0, 0])) <= Fraction(tol)
    else:
        assert r.verdict != "absorbable" and r.stats.candidates > 0
        assert "meet in the middle" in r.reason
