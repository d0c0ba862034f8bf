"""Verdicts do not change when a block is rescaled by exact powers of two.

``c W_down[:, S] W_up[S, :] = -A`` holds for the block exactly when it holds
for the block with the flip constant, ``W_up`` or ``W_down`` multiplied by
``2^k`` and the skip by the same ``2^k`` (or ``W_up`` by ``2^k`` and
``W_down`` by ``2^-k``): every product changes by the same power of two and
every relative residual is unchanged, exactly. So verdicts, witnesses,
brackets and certificates must not change either, at any ``k`` that keeps
every entry a normal float64. The truth comes from exact rationals: every
flip set's residual, summed in :class:`fractions.Fraction`.

(Found by a red team: with a flip constant near ``2^±540`` the core said
``undecided (overflow)``, and a relative dead-neuron test made a neuron's
status depend on another neuron's size.)
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import skipsearch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from skipsearch import baseline

#: Every transformation multiplies the residual c W_down[:, S] W_up[S] + A by
#: 2^k: (flip constant, W_up, W_down, skip) exponents for a given k.
MOVES = {
    "flip_constant": lambda k: (k, 0, 0, k),
    "W_up": lambda k: (0, k, 0, k),
    "W_down": lambda k: (0, 0, k, k),
    "W_up_against_W_down": lambda k: (0, k, -k, 0),
    # A residual multiplier 2^k with W_down stored at 2^-k: scales cancel.
    "flip_constant_against_W_down": lambda k: (k, 0, -k, 0),
    "everything": lambda k: (k, k, k, 3 * k),
}


def _dyadic(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Small dyadic numbers (exact in float64 at every scale used here)."""
    return rng.integers(-64, 65, size=shape) / 16.0


def _block(seed: int, planted: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    m, d = int(rng.integers(3, 7)), int(rng.integers(1, 4))
    W_up = _dyadic(rng, (m, d))
    W_down = _dyadic(rng, (d, m))
    W_up[W_up[:, 0] == 0, 0] = 0.5  # no zero rows in the base block
    W_down[0, W_down[0] == 0] = -0.25
    if planted:
        S = rng.permutation(m)[: int(rng.integers(1, m))]
        A = -(W_down[:, S] @ W_up[S, :])
        if not A.any():
            A[0, 0] = 1.0
    else:
        A = _dyadic(rng, (d, d))
        A[0, 0] = 3.0
    return W_up, W_down, A


def _truth(W_up: np.ndarray, W_down: np.ndarray, A: np.ndarray) -> tuple[Fraction, set]:
    """The least relative squared residual over all flip sets (c = 1), and
    the flip sets that reach it, in exact rationals."""
    m = W_up.shape[0]
    Af = [[Fraction(x) for x in row] for row in A.tolist()]
    terms = [
        [[Fraction(v) * Fraction(u) for u in W_up[i].tolist()] for v in W_down[:, i].tolist()]
        for i in range(m)
    ]
    norm = sum(x * x for row in Af for x in row)
    best, where = None, set()
    for bits in itertools.product((0, 1), repeat=m):
        R = [row[:] for row in Af]
        for i in (i for i in range(m) if bits[i]):
            for p, row in enumerate(terms[i]):
                for q, x in enumerate(row):
                    R[p][q] += x
        v = sum(x * x for row in R for x in row) / norm
        if best is None or v < best:
            best, where = v, {tuple(i for i in range(m) if bits[i])}
        elif v == best:
            where.add(tuple(i for i in range(m) if bits[i]))
    return best, where


def _scaled(W_up, W_down, A, move: str, k: int):
    kc, ku, kd, ks = MOVES[move](k)
    act = "relu" if kc == 0 else skipsearch.scaled_activation("relu", math.ldexp(1.0, kc))
    return np.ldexp(W_up, ku), np.ldexp(W_down, kd), np.ldexp(A, ks), act


def _in_range(W_up, W_down, A, move: str, k: int) -> bool:
    """Whether every scaled entry (and the flip constant) stays a normal
    float64, so that the scaled block is exactly the rescaled one."""
    for x, e in zip((np.ones(1), W_up, W_down, A), MOVES[move](k)):
        nz = np.abs(x[x != 0])
        with np.errstate(over="ignore", under="ignore"):
            y = np.ldexp(nz, e)
        if nz.size and (np.min(y) < np.finfo(np.float64).tiny or not np.isfinite(y).all()):
            return False
    return True


def _check(r, truth_best: Fraction, truth_sets: set, tol: float) -> None:
    """The result agrees with the exact truth."""
    absorbable = truth_best <= Fraction(tol) ** 2
    if absorbable:
        assert r.verdict == "absorbable", r
        assert tuple(r.subset.tolist()) in truth_sets, (r.subset, truth_sets)
    elif r.genericity.passed:
        assert r.verdict == "not_absorbable", r
    else:
        # No flip set, but the theorem's hypotheses fail (parallel rows).
        assert r.verdict == "undecided", r
    if r.distance_bracket is not None:
        lo, hi = r.distance_bracket
        assert Fraction(lo) ** 2 <= truth_best <= Fraction(hi) ** 2, (
            r.distance_bracket,
            truth_best,
        )
    if r.distance_bound is not None:
        assert Fraction(r.distance_bound) ** 2 <= truth_best, (r.distance_bound, truth_best)


EXPONENTS = [0, 1, -3, 60, -70, 200, -300, 511, -512, 540, -540, 700, -900, 1000, -1000]


@pytest.mark.parametrize("move", sorted(MOVES))
@pytest.mark.parametrize("planted", [True, False])
def test_power_of_two_rescaling_changes_nothing(move: str, planted: bool) -> None:
    W_up, W_down, A = _block(7 + planted, planted)
    best, sets = _truth(W_up, W_down, A)
    ref = skipsearch.find_absorbing_subset(W_up, W_down, skip=A, bracket=True)
    _check(ref, best, sets, ref.tolerance)
    seen = 0
    for k in EXPONENTS:
        if not _in_range(W_up, W_down, A, move, k):
            continue
        seen += 1
        u, v, a, act = _scaled(W_up, W_down, A, move, k)
        r = skipsearch.find_absorbing_subset(u, v, activation=act, skip=a, bracket=True)
        _check(r, best, sets, ref.tolerance)
        assert r.verdict == ref.verdict, (k, r)
        assert r.argument == ref.argument, (k, r)
        assert (r.subset is None) == (ref.subset is None)
        if r.subset is not None:
            assert r.subset.tolist() == ref.subset.tolist()
        assert r.best_subset.tolist() == ref.best_subset.tolist(), k
        assert r.stats.bracket == ref.stats.bracket, k
        assert r.genericity.dead_neurons.tolist() == [], k
        b = baseline.find_absorbing_subset(u, v, activation=act, skip=a)
        assert b.verdict == r.verdict, (k, b)
        if r.certificate is not None:
            bound = skipsearch.check_certificate(r.certificate, u, v, activation=act, skip=a)
            assert bound > 0 and Fraction(bound) ** 2 <= best, (k, bound)
        if r.verdict == "absorbable":
            # The witness block is the rescaled block's own, and exact.
            assert r.block is not None
    assert seen >= (6 if move == "everything" else 8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    planted=st.booleans(),
    move=st.sampled_from(sorted(MOVES)),
    k=st.integers(-1021, 1023),
)
def test_rescaling_at_any_exponent(seed: int, planted: bool, move: str, k: int) -> None:
    W_up, W_down, A = _block(seed, planted)
    if move == "everything":
        k //= 3
    if not _in_range(W_up, W_down, A, move, k):
        k = k // 2 if _in_range(W_up, W_down, A, move, k // 2) else 0
    best, sets = _truth(W_up, W_down, A)
    ref = skipsearch.find_absorbing_subset(W_up, W_down, skip=A, bracket=True)
    u, v, a, act = _scaled(W_up, W_down, A, move, k)
    r = skipsearch.find_absorbing_subset(u, v, activation=act, skip=a, bracket=True)
    _check(r, best, sets, ref.tolerance)
    assert (r.verdict, r.argument) == (ref.verdict, ref.argument), (k, r)
    assert r.best_subset.tolist() == ref.best_subset.tolist(), k
    b = baseline.find_absorbing_subset(u, v, activation=act, skip=a)
    assert b.verdict == r.verdict, (k, b)


def test_a_large_neuron_leaves_the_others_alive() -> None:
    """One W_down column 10x (or 2^500x) larger than the rest marked most
    other neurons dead at a bf16 tolerance, turning a provable
    not_absorbable into undecided: a nonzero neuron is alive whatever the
    others' size."""
    rng = np.random.default_rng(3)
    m, d = 64, 16
    W_up = rng.standard_normal((m, d))
    W_down = rng.standard_normal((d, m))
    ref = skipsearch.find_absorbing_subset(W_up, W_down, tol=2.0**-3.5)
    for factor in (10.0, 2.0**500):
        big = W_down.copy()
        big[:, 5] *= factor
        r = skipsearch.find_absorbing_subset(W_up, big, tol=2.0**-3.5)
        assert r.genericity.dead_neurons.tolist() == []
        assert r.verdict == ref.verdict == "not_absorbable", r
        b = baseline.find_absorbing_subset(W_up[:20], big[:, :20], skip=np.eye(d), tol=2.0**-3.5)
        assert b.genericity.dead_neurons.tolist() == []
    zero = W_down.copy()
    zero[:, [3, 9]] = 0.0
    r = skipsearch.find_absorbing_subset(W_up, zero, tol=2.0**-3.5)
    assert r.genericity.dead_neurons.tolist() == [3, 9]


def test_a_neuron_of_subnormals_is_alive() -> None:
    """A row of subnormal entries squares to zero but is not zero."""
    W_up = np.array([[1.0, 0.0], [0.0, 1.0], [2.0**-1070, 2.0**-1072]])
    W_down = np.array([[1.0, 0.5, 1.0], [0.25, 1.0, -1.0]])
    for fn in (skipsearch.find_absorbing_subset, baseline.find_absorbing_subset):
        r = fn(W_up, W_down)
        assert r.genericity.dead_neurons.tolist() == [], fn


@pytest.mark.parametrize("value", [Fraction(1, 3), "decimal"])
def test_decimal_and_fraction_entries_are_value_errors(value) -> None:
    """Fractions and Decimals in an array are read as the exact values they
    are: a ValueError naming the argument and the entry when float64 cannot
    hold one, and the block decided when it can."""
    from decimal import Decimal

    inexact = Decimal("0.1") if value == "decimal" else value
    exact = Decimal("0.5") if value == "decimal" else Fraction(1, 2)
    with pytest.raises(ValueError, match=r"W_up\[1, 0\]=.*float64 cannot hold it exactly"):
        skipsearch.find_absorbing_subset([[1.0, 0.0], [inexact, 1.0]], -np.eye(2))
    with pytest.raises(ValueError, match=r"skip\[0, 1\]="):
        skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2), skip=[[1, inexact], [0, 1]])
    with pytest.raises(ValueError, match=r"^skip="):
        skipsearch.find_absorbing_subset(np.eye(2), -np.eye(2), skip=inexact)
    r = skipsearch.find_absorbing_subset([[exact, 0], [0, exact]], -np.eye(2), skip=exact)
    assert r.verdict == "absorbable" and r.subset.tolist() == [0, 1]


def test_underflow_amplified_by_huge_factors_proves_nothing() -> None:
    """A red team's block: u = (2^500, 2^-500), v = (-2^-500, -2^500), the
    flip constant 2^-800 and A = 2^-799, exactly absorbed by S = {0, 1}.
    W_down's spread kept c from being balanced to 1; Y u_1 underflowed to 0
    and was then multiplied by 2^1023 c, and Y = A "proved" 0.5. Every
    such block must come back absorbable (with the exact set) or undecided."""
    seen = set()
    for e in (200, 300, 500, 511):
        for kc in (0, -300, -600, -800):
            for ku in (0, -500, 200):
                U = np.ldexp(np.array([[1.0], [1.0]]), [[e + ku], [-e + ku]])
                V = np.ldexp(np.array([[-1.0, -1.0]]), [[-e, e]])
                A = np.ldexp(np.array([[2.0]]), kc + ku)
                if not _in_range(U, V, A, "W_up", 0) or not np.isfinite(U).all():
                    continue
                if np.abs(np.concatenate([U.ravel(), V.ravel(), A.ravel()])).min() < 2.0**-1022:
                    continue
                act = skipsearch.scaled_activation("relu", 2.0**kc) if kc else "relu"
                r = skipsearch.find_absorbing_subset(U, V, skip=A, activation=act, bracket=True)
                seen.add(r.verdict)
                assert r.verdict in ("absorbable", "undecided"), (e, kc, ku, r)
                if r.verdict == "absorbable":
                    assert r.subset.tolist() == [0, 1]
                if r.distance_bound is not None:
                    assert r.distance_bound == 0.0, (e, kc, ku, r.distance_bound)
                if r.distance_bracket is not None:
                    assert r.distance_bracket[0] == 0.0
    assert "absorbable" in seen


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("scale", [2.0**-600, 2.0**-1000, 2.0**-1070, 2.0**600, 2.0**1000])
def test_rows_at_extreme_scales_are_compared(activation: str, scale: float) -> None:
    """Rows whose square norm underflows (or overflows) were skipped by the
    pair test: proportional rows in d = 1 (an absorbable block) and exact
    duplicates passed the genericity check, and not_absorbable was claimed."""
    V = np.array([[0.3, 0.7, 0.1], [0.2, -0.4, 0.9]])
    row = np.array([3.0, 5.0]) * scale
    for sign in (1.0, -1.0):
        for b_up in (None, np.array([scale, sign * scale, 0.0])):
            U = np.array([row, sign * row, [1.0, -1.0]])
            r = skipsearch.find_absorbing_subset(U, V, activation=activation, b_up=b_up)
            assert not r.genericity.passed, (sign, b_up, r)
            assert [0, 1] in r.genericity.offending_pairs.tolist()
            assert r.verdict != "not_absorbable"
            b = baseline.find_absorbing_subset(U, V, activation=activation, b_up=b_up)
            assert [0, 1] in b.genericity.offending_pairs.tolist()
    # Proportional (not equal) rows, one huge and one tiny, in d = 1: the
    # block is absorbable by a width-2 skip-free block, never provably not.
    U = np.array([[2.0**500], [2.0**-500]])
    r = skipsearch.find_absorbing_subset(U, np.array([[0.3, 0.7]]))
    assert r.genericity.offending_pairs.tolist() == [[0, 1]]
    assert r.verdict != "not_absorbable"


@pytest.mark.parametrize("move", ["flip_constant", "W_down"])
def test_check_certificate_at_the_ends_of_the_range(move: str) -> None:
    """check_certificate balances the block as the decision does: with the
    flip constant or W_down at 2^1021 it confirmed nothing (0.0)."""
    W_up, W_down, A = _block(0, False)
    ref = skipsearch.find_absorbing_subset(W_up, W_down, skip=A)
    assert ref.verdict == "not_absorbable" and ref.certificate is not None
    for k in (1021, -1000):
        assert _in_range(W_up, W_down, A, move, k)
        u, v, a, act = _scaled(W_up, W_down, A, move, k)
        r = skipsearch.find_absorbing_subset(u, v, activation=act, skip=a)
        assert r.verdict == ref.verdict and r.certificate is not None
        bound = skipsearch.check_certificate(
            r.certificate, u, v, activation=act, skip=a, tol=r.tolerance
        )
        assert bound > r.tolerance, (k, bound)


def test_neurons_of_opposite_scales_are_balanced_one_by_one() -> None:
    """Rows of 2^275 and 2^-231 beside columns of the inverse size (each
    term of order 2^40): W_up and W_down each span 2^500, and with the flip
    constant at 2^-900 the core said undecided (overflow) where the block is
    absorbed exactly. Each neuron's row and column are balanced against
    each other (the term c v_i u_i^T unchanged), at every k."""
    e = np.array([0, 128, 275, -231, -214])
    U = np.ldexp(np.array([[1.0], [1.5], [1.25], [-1.0], [0.75]]), e[:, None])
    V = np.ldexp(np.array([[1.0, -1.0, 0.5, 1.0, 1.0], [0.5, 1.0, 1.0, -1.5, 1.0]]), 40 - e)
    S = [0, 1, 2, 3, 4]
    A = -(V[:, S] @ U[S])
    for k in (0, -300, -600, -900, -1021, 300, 900):
        act = skipsearch.scaled_activation("relu", 2.0**k) if k else "relu"
        r = skipsearch.find_absorbing_subset(U, V, skip=np.ldexp(A, k), activation=act)
        assert r.verdict == "absorbable", (k, r)
        assert r.subset.tolist() == S


def test_per_neuron_balancing_leaves_the_genericity_rows_alone() -> None:
    """Two equal rows of W_up whose columns differ in scale: balanced one by
    one they would differ, yet the GELU check (rows distinct up to sign)
    must still see them equal."""
    U = np.array([[2.0**300, 3 * 2.0**300], [2.0**300, 3 * 2.0**300], [1.0, -1.0]])
    V = np.array([[2.0**-300, 2.0**-500, 0.5], [-(2.0**-301), 2.0**-499, 1.0]])
    for act in ("gelu", "relu"):
        r = skipsearch.find_absorbing_subset(U, V, activation=act)
        assert [0, 1] in r.genericity.offending_pairs.tolist(), (act, r)
        assert r.verdict != "not_absorbable"


def test_check_certificate_counts_underflow_times_the_flip_constant() -> None:
    """A red team's block, absorbed exactly by S = {0, 1}: W_down (Y W_up^T)
    underflowed to 0 on the block as given and was then multiplied by
    c = 2^858, and check_certificate(Y = A) returned a bound near 1."""
    act = skipsearch.scaled_activation("relu", 2.0**858)
    U = np.ldexp(np.eye(2), -576)
    V = np.ldexp(np.eye(2), -586)
    A = -np.ldexp(np.eye(2), 858 - 576 - 586)
    assert skipsearch.check_certificate(A, U, V, activation=act, skip=A) == 0.0
    assert skipsearch.check_certificate(A, U, V, activation=act, skip=A, tol=1.5e-8) == 0.0
    r = skipsearch.find_absorbing_subset(U, V, skip=A, activation=act)
    assert r.verdict == "absorbable" and r.subset.tolist() == [0, 1]


def test_a_flip_constant_w_down_cannot_take_goes_to_their_product() -> None:
    """c = 2^-600 with W_down at 2^-1010 (no exact room below) stayed near
    2^-538, c^2 underflowed in the Gram matrix, and the bracket came out
    [0, 1.5e-323] "optimal" against an exact best of 0.2538. c and W_down
    are balanced as their product now: the same bracket as at scale 1."""
    U0 = np.array([[-0.5, 0.25], [1.75, 1.0]])
    V0 = np.array([[1.25, -2.75]])
    A0 = np.array([[6.0, 1.0]])
    act = skipsearch.scaled_activation("relu", 2.0**-600)
    U, V, A = np.ldexp(U0, 1000), np.ldexp(V0, -1010), np.ldexp(A0, -610)
    best, _ = _truth(U0, V0, A0)
    ref = skipsearch.find_absorbing_subset(U0, V0, skip=A0, bracket=True)
    r = skipsearch.find_absorbing_subset(U, V, skip=A, activation=act, bracket=True)
    lo, hi = r.distance_bracket
    assert Fraction(lo) ** 2 <= best <= Fraction(hi) ** 2
    assert r.distance_bracket == ref.distance_bracket
    assert r.best_subset.tolist() == ref.best_subset.tolist() == [0, 1]


def test_the_baseline_never_raises_on_terms_beyond_the_range() -> None:
    """W_down at 2^600 with a skip at 2^-600: the terms overflow even
    balanced, and the baseline's least squares raised LinAlgError (or a
    NaN Fraction); it answers undecided (overflow), as the core does."""
    U = np.array([[-0.0, 2.402499714219721e-145], [8.008332380732404e-146, 2.4e-145], [2.0, 5.0]])
    b = np.array([0.0, 0.0, 0.5])
    for s in (-600, 600):
        V = np.ldexp(np.array([[1.0, 2.0, -1.0], [0.5, -1.0, 3.0]]), s)
        for sa in (-600, 600):
            A = np.array([[0.3, 0.7], [1.1, -0.4]]) * 2.0**sa
            r = baseline.find_absorbing_subset(U, V, skip=A, b_up=b)
            core = skipsearch.find_absorbing_subset(U, V, skip=A, b_up=b)
            assert r.verdict in ("undecided", core.verdict), (s, sa, r)
            if core.verdict != "undecided":
                assert r.verdict == core.verdict


@pytest.mark.parametrize("side", ["column", "row"])
@pytest.mark.parametrize("k", [-1000, -659, 659, 1000])
def test_a_dead_neurons_other_side_at_any_exponent_changes_nothing(side: str, k: int) -> None:
    """Neuron 1 has a zero row (or a zero column): its term is 0 whatever its
    other side holds. That side at 2^659 set W_down's scale and overflowed
    the Gram matrix (inf * 0): absorbable became undecided (a breaker
    helper's find)."""
    W_up, W_down = np.array([[1.0], [0.0]]), np.array([[-1.0, 1.0]])
    if side == "row":
        W_up, W_down = np.array([[1.0], [1.0]]), np.array([[-1.0, 0.0]])
    ref = skipsearch.find_absorbing_subset(W_up, W_down)
    assert (ref.verdict, ref.subset.tolist()) == ("absorbable", [0])
    if side == "column":
        W_down = W_down.copy()
        W_down[0, 1] = 2.0**k
    else:
        W_up = W_up.copy()
        W_up[1, 0] = 2.0**k
    r = skipsearch.find_absorbing_subset(W_up, W_down)
    assert (r.verdict, r.status, r.subset.tolist()) == ("absorbable", "complete", [0])
